"""A long campaign of random masked-load kernels: every rewrite against its original.

`tests/test_synthesis_masked_property.py` draws 30 kernels of Triton's
masked-load shape in CI; this runs as many as asked, on all cores. Each case
is a kernel of 2-5 predicated taps ``x[e + o]`` under ``e + a >= 0`` and
``e + b < n`` (plain or negated), 1, 2 or 4 elements per thread (half the
power-of-two blocks with the index as Triton writes it, a bit field of
``tid.x``), rewritten
with every proven shuffle and reuse kept, then launched in the reference
interpreter at a block size that may split warps and rows, against the
original, at seven values of ``n`` (below zero, zero, one, around the
middle, at and past the end). A case is wrong when one output bit differs.

    python benchmarks/masked_campaign.py --cases 2000 --seed 1 [--workers 16] [--budget S] [--json]
    python benchmarks/masked_campaign.py --cases 2000 --seed 1 --branches 0.5

``--branches F``: a share F of the cases puts each masked load in a branch
around it (as nvcc writes a bounds check) after an unmasked tap, where the
shuffle runs above the branch (`ptxasw.synth.codegen`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def run_case(seed: int, case: int, branches: float = 0.0) -> dict[str, Any]:
    import numpy as np

    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass
    from tests.test_synthesis_masked_property import PAD, Tap, kernel_text

    rng = random.Random(seed * 1_000_003 + case)
    taps = [
        Tap(
            rng.randint(-3, 3), rng.choice([None, rng.randint(-3, 3)]), rng.randint(-3, 3), rng.random() < 0.5
        )
        for _ in range(rng.randint(2, 5))
    ]
    per_thread, block, grid = rng.choice([1, 2, 4]), rng.choice([8, 16, 32, 48, 64, 96]), rng.randint(1, 3)
    # Half the power-of-two blocks get Triton's bit-field index (for exactly that block).
    bitfield = block in (8, 16, 32, 64) and rng.random() < 0.5
    # Drawn apart, so that a seed's other draws do not depend on --branches.
    branched = random.Random(seed * 7_919 + case).random() < branches
    if branched:  # an unmasked tap first, that the masked ones in branches may take
        taps.insert(0, Tap(rng.randint(-3, 3), None, None, False))
    text = kernel_text(taps, per_thread, block if bitfield else None, branches=branched)
    out: dict[str, Any] = {
        "case": case,
        "bitfield": bitfield,
        "branches": branched,
        "reuses": 0,
        "shuffles": 0,
        "wrong": [],
        "error": None,
    }
    try:
        module = parse_ptx(text, "masked.ptx")
        synthesis = ShuffleSynthesisPass(Options())
        synthesis.run(module)
        for plan in synthesis.plans:
            for v in plan.chosen:
                out["reuses" if v.delta == 0 else "shuffles"] += 1
        rewritten = print_module(module)
        elements = grid * block * per_thread
        x = np.random.default_rng(case).standard_normal(elements + 2 * PAD + 4).astype(np.float32)
        for n in sorted({-3, 0, 1, elements // 2 + rng.randint(-5, 5), elements - 1, elements, elements + 3}):
            outputs = []
            for source in (text, rewritten):
                z = np.zeros(elements, np.float32)
                launch(
                    parse_ptx(source, "k.ptx"), "masked", grid, block, [x.copy(), z, np.int32(n)], strict=True
                )
                outputs.append(z)
            if not np.array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32)):
                out["wrong"].append({"n": n, "block": block, "grid": grid, "per_thread": per_thread})
    except Exception as exc:  # a crash is a finding, reported with the case
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _run(seed_case_branches: tuple[int, int, float]) -> dict[str, Any]:
    return run_case(*seed_case_branches)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=multiprocessing.cpu_count())
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--budget", type=float, default=float("inf"), help="stop after this many seconds")
    parser.add_argument(
        "--branches", type=float, default=0.0, help="share of cases with masked loads in branches"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    results: list[dict[str, Any]] = []
    with multiprocessing.Pool(args.workers) as pool:
        for result in pool.imap_unordered(_run, [(args.seed, k, args.branches) for k in range(args.cases)]):
            results.append(result)
            if time.perf_counter() - start > args.budget:
                pool.terminate()  # what ran is reported, as partial
                break
    findings = [r for r in results if r["wrong"] or r["error"]]
    done = len(results)
    summary = {
        "cases": done,
        "seed": args.seed,
        "rewritten_cases": sum(1 for r in results if r["reuses"] or r["shuffles"]),
        "bitfield_cases": sum(1 for r in results if r["bitfield"]),
        "bitfield_shuffles": sum(r["shuffles"] for r in results if r["bitfield"]),
        "branch_cases": sum(1 for r in results if r["branches"]),
        "branch_sites": sum(r["reuses"] + r["shuffles"] for r in results if r["branches"]),
        "reuses": sum(r["reuses"] for r in results),
        "shuffles": sum(r["shuffles"] for r in results),
        "wrong_cases": sum(1 for r in results if r["wrong"]),
        "errors": sum(1 for r in results if r["error"]),
        "findings": findings[:20],
        "seconds": round(time.perf_counter() - start, 1),
        "status": "complete" if done == args.cases else f"partial: {done} of {args.cases} cases in --budget",
    }
    if args.json:
        print(json.dumps(summary))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"masked-load campaign, seed {args.seed}")
        for col in ("cases", "rewritten", "reuses", "shuffles", "wrong", "errors", "seconds"):
            table.add_column(col, justify="right")
        table.add_row(
            *map(
                str,
                (
                    summary["cases"],
                    summary["rewritten_cases"],
                    summary["reuses"],
                    summary["shuffles"],
                    summary["wrong_cases"],
                    summary["errors"],
                    summary["seconds"],
                ),
            )
        )
        Console().print(table)
        print(summary["status"])
        for f in findings[:20]:
            print(f"case {f['case']}: {f['error'] or f['wrong']}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
