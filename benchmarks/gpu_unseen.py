"""The unseen kernels on a GPU: each rewrite against its original, and the interpreter against both.

``tests/fixtures/unseen_kernels.cu`` holds CUDA in shapes the synthesis was
not tuned on (`tests/test_synthesis_unseen.py` checks them on the CPU). This
runs the same launches on a GPU, in two steps because the GPU machine need
not have ptxasw's dependencies:

    PYTHONPATH=. python benchmarks/gpu_unseen.py prepare --dir DIR   # here: nvcc, ptxasw
    python benchmarks/gpu_unseen.py run --dir DIR --json OUT.json    # there: CuPy

``prepare`` compiles the kernels for sm_90 (``nvcc -O3``), rewrites them with
every proven shuffle kept, and writes both PTX files, each launch's inputs
and the interpreter's outputs to DIR. ``run`` launches the original and the
rewrite on the same inputs and compares the outputs bit for bit with each
other and with the interpreter's. A kernel with a data race between threads
(``store_between``: an in-place update read back by the neighbour) may
differ from run to run and from the interpreter's lock-step order; it has
no shuffles, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

# Kernels whose threads race on memory: their outputs are not a function of the inputs.
RACY = frozenset({"store_between"})


def prepare(directory: Path) -> int:
    """Write the PTX pair, the inputs and the interpreter's outputs to ``directory``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.kernels import suite
    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass
    from tests.test_synthesis_unseen import KERNELS, SOURCE

    directory.mkdir(parents=True, exist_ok=True)
    original = suite.compile_ptx(SOURCE, arch="sm_90").read_text()
    module = parse_ptx(original, "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20))
    synthesis.run(module)
    (directory / "original.ptx").write_text(original)
    (directory / "rewritten.ptx").write_text(print_module(module))
    shuffles = {p.kernel: len(p.chosen) for p in synthesis.plans}
    cases: list[dict[str, Any]] = []
    for name, (make, launches) in KERNELS.items():
        for c, (grid, block) in enumerate(launches):
            args = make(np.random.default_rng(11))
            spec: list[list[Any]] = []
            for k, a in enumerate(args):
                if isinstance(a, np.ndarray):
                    np.save(directory / f"{name}_{c}_{k}.npy", a)
                    spec.append(["array", f"{name}_{c}_{k}.npy"])
                else:
                    dtype = a.dtype.name if isinstance(a, np.generic) else "int32"
                    spec.append(["scalar", dtype, int(a)])
            result = launch(parse_ptx(original, "original.ptx"), name, grid, block, args)
            reference = []
            for k, buffer in enumerate(result.buffers):
                if buffer is not None:
                    np.save(directory / f"{name}_{c}_{k}.interp.npy", buffer)
                    reference.append([k, f"{name}_{c}_{k}.interp.npy"])
            launch_of = {"kernel": name, "grid": list(grid), "block": list(block)}
            cases.append({**launch_of, "args": spec, "interpreter": reference})
    (directory / "cases.json").write_text(json.dumps({"shuffles": shuffles, "cases": cases}))
    total = sum(shuffles.values())
    print(f"{len(cases)} launches of {len(KERNELS)} kernels, {total} shuffles, in {directory}")
    return 0


def run(directory: Path, out: Path | None) -> int:
    """Launch both versions on the GPU and compare; non-zero when a race-free kernel differs."""
    import cupy as cp

    plan = json.loads((directory / "cases.json").read_text())
    modules = {v: cp.RawModule(path=str(directory / f"{v}.ptx")) for v in ("original", "rewritten")}
    rows = []
    for case in plan["cases"]:
        outputs: dict[str, dict[int, bytes]] = {}
        for version, module in modules.items():
            args: list[Any] = []
            arrays: dict[int, Any] = {}
            for k, a in enumerate(case["args"]):
                if a[0] == "array":
                    arrays[k] = cp.asarray(np.load(directory / a[1]))
                    args.append(arrays[k])
                else:
                    args.append(getattr(np, a[1])(a[2]))
            module.get_function(case["kernel"])(tuple(case["grid"]), tuple(case["block"]), tuple(args))
            cp.cuda.runtime.deviceSynchronize()
            outputs[version] = {k: cp.asnumpy(v).tobytes() for k, v in arrays.items()}
        interpreter = {k: np.load(directory / f).tobytes() for k, f in case["interpreter"]}
        rows.append(
            {
                "kernel": case["kernel"],
                "grid": case["grid"],
                "block": case["block"],
                "shuffles": plan["shuffles"].get(case["kernel"], 0),
                "racy": case["kernel"] in RACY,
                "rewrite_equal": outputs["original"] == outputs["rewritten"],
                "interpreter_equal": all(outputs["original"][k] == v for k, v in interpreter.items()),
            }
        )
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    bad = [r for r in rows if not r["racy"] and not (r["rewrite_equal"] and r["interpreter_equal"])]
    print(f"{device}: {len(rows)} launches")
    print(f"{'kernel':<16} {'launch':<22} {'shuffles':>8}  rewrite=original  original=interpreter")
    for r in rows:
        launch_text = f"{r['grid']}x{r['block']}"
        note = "  (racy)" if r["racy"] else ""
        print(
            f"{r['kernel']:<16} {launch_text:<22} {r['shuffles']:>8}  {r['rewrite_equal']!s:<16}  "
            f"{r['interpreter_equal']!s}{note}"
        )
    print(f"race-free launches that differ: {len(bad)}")
    if out is not None:
        summary = {"device": device, "launches": len(rows), "race_free_differing": len(bad)}
        out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="compile, rewrite and run the interpreter (needs nvcc, ptxasw)")
    p.add_argument("--dir", type=Path, required=True)
    r = sub.add_parser("run", help="run both versions on the GPU (needs CuPy)")
    r.add_argument("--dir", type=Path, required=True)
    r.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if args.step == "prepare":
        return prepare(args.dir)
    out = args.json
    if out is not None and os.environ.get("OUT") and not out.is_absolute():
        out = Path(os.environ["OUT"]) / out
    return run(args.dir, out)


if __name__ == "__main__":
    sys.exit(main())
