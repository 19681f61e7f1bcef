"""What the PIRCH lifter accepts and refuses, measured on real compiler output.

Usage:
    python benchmarks/lift_coverage.py [PTX...] [--json OUT] [--max-instructions N]

Without files, every PTX file of the corpus cache (``$PTXASW_CORPUS_CACHE``,
built by ``python -m tests.corpus.build``) except the generated multi-MB
ones. Every kernel is lifted (``lift_kernel``; its ``.reqntid`` block, else
one warp of 32 threads) and compiled to nothing: only the lifting counts.
Per opcode (``ptxasw.ir.isa`` name with its modifiers' family, e.g.
``shfl.sync``) the table says in how many lifted kernels it occurs, and the
refusals are grouped by their one-line reason, so the closing note of issue 8
can list what the lifter accepts and what it refuses from code nobody wrote
for it. The lifter refuses exactly (strict mode): a refused kernel is never
lifted into wrong code, so a refusal here is a missing feature, not a bug.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxasw import ir  # noqa: E402
from ptxasw.errors import PtxError  # noqa: E402
from ptxasw.parser import parse_file  # noqa: E402
from ptxasw.pirch_bridge.lift import lift_kernel  # noqa: E402

SKIP = re.compile(r"^many_kernels_|^gen_large")


def corpus_files() -> list[Path]:
    root = Path(os.environ.get("PTXASW_CORPUS_CACHE") or Path.home() / ".cache" / "ptxasw" / "corpus")
    return sorted(p for p in root.glob("*.ptx") if not SKIP.match(p.name))


def opcode_family(inst: ir.Instruction) -> str:
    """``shfl.sync`` for ``shfl.sync.idx.b32``: the opcode and its leading modifier."""
    opcode = inst.opcode
    mods = [m for m in inst.modifiers if not re.match(r"^\.[subf]\d+$|^\.pred$", m)]
    return opcode + (mods[0] if opcode in ("shfl", "vote", "bar", "match", "redux") and mods else "")


def reason_of(exc: Exception) -> str:
    """The refusal without its position, numbers and names: groups like reasons."""
    text = str(exc).splitlines()[0]
    text = re.sub(r"^.*?:\d+:\d+: ", "", text)
    text = re.sub(r"%\w+", "%reg", text)
    return re.sub(r"\b\d+\b", "N", text)[:140]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--max-instructions", type=int, default=4000, help="skip larger kernels")
    opts = ap.parse_args()
    files = opts.files or corpus_files()
    accepted: collections.Counter[str] = collections.Counter()
    seen: collections.Counter[str] = collections.Counter()
    refused: collections.Counter[str] = collections.Counter()
    refused_by_opcode: collections.Counter[str] = collections.Counter()
    kernels = lifted = skipped = 0
    started = time.perf_counter()
    for path in files:
        try:
            module = parse_file(path)
        except PtxError:
            continue
        for fn in module.kernels:
            if fn.body is None:
                continue
            families = {opcode_family(i) for i in fn.instructions()}
            if sum(1 for _ in fn.instructions()) > opts.max_instructions:
                skipped += 1
                continue
            kernels += 1
            seen.update(families)
            shaped = any(
                isinstance(d, ir.PerfDirective) and d.name in (".reqntid", ".maxntid") for d in fn.directives
            )
            block = None if shaped else (32, 1, 1)
            try:
                lift_kernel(module, fn.name, block=block)
            except (PtxError, ValueError, NotImplementedError) as exc:
                refused[reason_of(exc)] += 1
                opcode = re.match(r"^.*?: (?:error: )?([a-z][\w.]*)", str(exc))
                refused_by_opcode[opcode.group(1) if opcode else "?"] += 1
                continue
            except Exception as exc:  # a lifter bug: count it apart, loudly
                refused[f"INTERNAL {type(exc).__name__}: {str(exc)[:100]}"] += 1
                continue
            lifted += 1
            accepted.update(families)
    seconds = time.perf_counter() - started
    result = {
        "files": len(files),
        "kernels": kernels,
        "lifted": lifted,
        "skipped_large": skipped,
        "seconds": seconds,
        "accepted_opcodes": dict(sorted(accepted.items())),
        "never_lifted_opcodes": sorted(set(seen) - set(accepted)),
        "refusals": dict(refused.most_common()),
    }
    print(f"{lifted} of {kernels} kernels lifted from {len(files)} files", end=" ")
    print(f"({skipped} larger skipped), {seconds:.0f} s")
    print("accepted:", " ".join(f"{k}({v})" for k, v in sorted(accepted.items())))
    print("seen only in refused kernels:", " ".join(result["never_lifted_opcodes"]))
    print("refusals:")
    for reason, count in refused.most_common(40):
        print(f"  {count:4}  {reason}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
