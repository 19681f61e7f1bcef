"""Where the shuffles' headroom comes from: registers and occupancy, measured.

Why: on the H100 the paper's ablation ``noload`` (shuffles, no corner loads,
wrong at warp edges) gains most on the DRAM-bound application stencils
(seismic_rhs 1.40, hypterm 1.23 in ``results/gpu_speedup_h100.md``), and
those are the kernels whose register count it lowers (72 -> 64), which
lets another block onto each SM. The exact rewrite (``normal``) raises the
count instead (hypterm 72 -> 96). Two questions, both about exact code:

* does the original itself gain as much when ptxas is held to ``noload``'s
  register count (``-maxrregcount``)? Then that part of the headroom is
  occupancy, not shuffles;
* does ``normal`` lose less when it is held to the original's count?

Per kernel of a ``gpu_speedup.py --prepare`` folder, the variants

``original``          as in gpu_speedup;
``original@R``        the original, ``-maxrregcount=R`` with ``R`` = noload's
                      registers (where fewer than the original's);
``normal``            the proven rewrite;
``normal@R``          the rewrite held to the original's registers (where it
                      uses more);
``noload``            the headroom, for reference (wrong at warp edges);

every exact one checked bit for bit against ``original`` on the GPU, timed
as gpu_speedup times (interleaved CUDA-graph samples, median), at the
L2-resident and the DRAM-bound size; ``ptxas -v`` gives registers and spills.

    python benchmarks/register_cap.py --run benchmarks/results/gpu_prep --json OUT.json [KERNEL...]

Default kernels: the wide stencils (`suite.WIDE_STENCILS`, with their f64 twins).
Results: ``results/register_cap_h100.json`` and ``results/register_cap_h200.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import gpu_speedup as gs  # noqa: E402
from benchmarks.kernels import suite  # noqa: E402

EXACT = ("original", "original@R", "normal", "normal@R")


def variants(entry: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Variant name -> (prepared variant whose PTX it assembles, ptxas options)."""
    regs = {v: entry["variants"][v]["registers"] for v in gs.VARIANTS}
    out: dict[str, tuple[str, tuple[str, ...]]] = {"original": ("original", ())}
    if regs["noload"] < regs["original"]:
        out["original@R"] = ("original", (f"-maxrregcount={regs['noload']}",))
    out["normal"] = ("normal", ())
    if regs["normal"] > regs["original"]:
        out["normal@R"] = ("normal", (f"-maxrregcount={regs['original']}",))
    out["noload"] = ("noload", ())
    return out


def measure(backend: Any, folder: Path, entry: dict[str, Any], runs: int, quick: bool) -> list[dict]:
    k = suite.get(entry["kernel"])
    plan = variants(entry)
    loaded = {
        name: backend.load(folder / entry["variants"][base]["ptx"], k.symbol, options=opts)
        for name, (base, opts) in plan.items()
    }
    rows = []
    for seed, (label, (shape, block)) in enumerate(gs.launch_sizes(k, backend.name, quick).items()):
        block3 = (*block, 1, 1)[:3]
        grid = k.grid(shape, block3)
        args = backend.upload(suite.launch_args(k, shape, seed))
        pristine = backend.snapshot(args, k.outputs)
        backend.launch(loaded["original"][0], grid, block3, args)
        expected = backend.snapshot(args, k.outputs)
        differ = {}
        for name, (fn, _) in loaded.items():
            backend.restore(args, pristine)
            backend.launch(fn, grid, block3, args)
            differ[name] = sum(backend.differing(args[i], expected[i]) for i in k.outputs)
        del expected
        timing = backend.time({n: fn for n, (fn, _) in loaded.items()}, grid, block3, args, runs)
        del args, pristine
        backend.release()
        base = timing["original"]["ms"]
        for name, (_, res) in loaded.items():
            ms = timing[name]["ms"]
            rows.append(
                {
                    "kernel": k.name,
                    "variant": name,
                    "options": list(plan[name][1]),
                    "size": label,
                    "ms": timing[name]["ms"],
                    "iqr_ms": timing[name]["iqr_ms"],
                    "speedup_vs_original": round(base / ms, 4) if ms else None,
                    "exact": differ[name] == 0,
                    "differing_elements": differ[name],
                    "registers": res.registers if res else None,
                    "spill_bytes": (res.spill_stores + res.spill_loads) if res else None,
                }
            )
    return rows


def geomeans(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per size and variant, the geometric mean speed-up over the kernels that
    have the variant (a kernel without it counts as 1.0 for the ``@R`` ones: the
    cap would not apply there)."""
    out: dict[str, dict[str, float]] = {}
    kernels = sorted({r["kernel"] for r in rows})
    for size in sorted({r["size"] for r in rows}):
        out[size] = {}
        for variant in ("original@R", "normal", "normal@R", "noload"):
            values = []
            for kernel in kernels:
                by = {r["variant"]: r for r in rows if r["kernel"] == kernel and r["size"] == size}
                row = by.get(variant) or by.get(variant.split("@")[0])
                if row is not None and row["speedup_vs_original"]:
                    values.append(row["speedup_vs_original"])
            if values:
                out[size][variant] = round(math.exp(sum(map(math.log, values)) / len(values)), 4)
    return out


def table(rows: list[dict]) -> str:
    header = "| kernel | size | variant | registers | spills B | speed-up | exact |"
    lines = [header, "|---|---|---|---|---|---|---|"]
    for r in rows:
        exact = "yes" if r["exact"] else f"no ({r['differing_elements']})"
        lines.append(
            f"| {r['kernel']} | {r['size']} | {r['variant']} | {r['registers']} | {r['spill_bytes']} "
            f"| {r['speedup_vs_original']:.3f} | {exact} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, metavar="DIR", help="a gpu_speedup --prepare folder")
    ap.add_argument(
        "kernels", nargs="*", help="kernel names (default: the wide stencils and their f64 twins)"
    )
    ap.add_argument("--runs", type=int, default=31, help="timed samples per variant (median)")
    ap.add_argument("--quick", action="store_true", help="the L2 size only")
    ap.add_argument("--json", type=Path, default=None, help="write the rows and geometric means here")
    ap.add_argument(
        "--backend",
        choices=("cupy", "interp"),
        default="cupy",
        help="interp: a dry run on the CPU (no timing)",
    )
    ns = ap.parse_args(argv)
    try:
        manifest = gs.load_manifest(ns.run, ns.kernels)
    except gs.BenchError as exc:
        print(f"register_cap: {exc}", file=sys.stderr)
        return 2
    wanted = set(ns.kernels) or {
        e["kernel"] for e in manifest["kernels"] if e["kernel"].removesuffix("_f64") in suite.WIDE_STENCILS
    }
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ptxasw-regcap-") as work:
        backend = gs.CupyBackend(Path(work)) if ns.backend == "cupy" else gs.InterpBackend()
        rows: list[dict] = []
        started = time.perf_counter()
        for entry in manifest["kernels"]:
            if entry["kernel"] not in wanted:
                continue
            try:
                got = measure(backend, ns.run, entry, ns.runs, ns.quick or ns.backend == "interp")
            except Exception as exc:  # one kernel's failure must not cost the others' results
                print(f"register_cap: {entry['kernel']}: {type(exc).__name__}: {exc}", file=sys.stderr)
                backend.release()
                continue
            rows += got
            for r in got:
                print(
                    f"{r['kernel']:14s} {r['size']:5s} {r['variant']:11s} regs {r['registers']} "
                    f"spill {r['spill_bytes']} x{r['speedup_vs_original']:.3f} exact {r['exact']}",
                    flush=True,
                )
        result = {
            "device": backend.device(),
            "ptxas": gs.ptxas_version(),
            "runs": ns.runs,
            "seconds": round(time.perf_counter() - started, 1),
            "geomeans": geomeans(rows),
            "rows": rows,
        }
    print(table(rows))
    print(json.dumps(result["geomeans"], indent=1))
    if ns.json:
        ns.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
