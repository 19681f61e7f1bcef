"""The unseen kernels on a GPU: each rewrite against its original, and the interpreter against both.

``tests/fixtures/unseen_kernels.cu`` holds CUDA in shapes the synthesis was
not tuned on (`tests/test_synthesis_unseen.py` checks them on the CPU). This
runs the same launches on a GPU, in two steps because the GPU machine need
not have ptxasw's dependencies:

    PYTHONPATH=. python benchmarks/gpu_unseen.py prepare --dir DIR   # here: nvcc, ptxasw
    python benchmarks/gpu_unseen.py run --dir DIR --json OUT.json    # there: CuPy

``prepare`` compiles the kernels (``--build``, repeatable: nvcc -O3 for
sm_90 by default, nvcc -G for sm_75, clang-19 at -O3/-O1/-O0 for sm_80),
rewrites them with every proven shuffle kept (and the rounding ptxas gives
the original: `ptxasw.synth.pinning`), and writes both PTX files,
each launch's inputs and the interpreter's outputs to DIR/BUILD. ``run`` launches the original and the
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
# The builds `tests/test_synthesis_unseen.py` names (kept here: `run` needs no ptxasw).
BUILD_NAMES = ("sm_90", "sm_75-G", "clang-O3", "clang-O1", "clang-O0", "clang-O0g")


def prepare(directory: Path, builds: list[str]) -> int:
    """Per build, write the PTX pair, the inputs and the interpreter's outputs
    to ``directory/BUILD``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.test_synthesis_unseen import KERNELS, build_ptx, rewrite

    for build in builds:
        place = directory / build
        place.mkdir(parents=True, exist_ok=True)
        original = build_ptx(build, place)
        if original is None:
            print(f"{build}: compiler not installed, skipped")
            continue
        versions = rewrite(original)
        (place / "original.ptx").write_text(original)
        (place / "rewritten.ptx").write_text(versions.rewritten)
        shuffles = versions.shuffles
        cases: list[dict[str, Any]] = []
        for name, (make, launches) in KERNELS.items():
            if name not in shuffles:
                continue  # not in this build (clang's go without cuda_fp16.h)
            for c, (grid, block) in enumerate(launches):
                args = make(np.random.default_rng(11))
                pins = versions.pins[name]
                cases.append(_prepare_case(place, (original, pins), name, c, (grid, block), args))
        (place / "cases.json").write_text(json.dumps({"build": build, "shuffles": shuffles, "cases": cases}))
        total = sum(shuffles.values())
        print(f"{build}: {len(cases)} launches of {len(shuffles)} kernels, {total} shuffles, in {place}")
    return 0


def _prepare_case(
    place: Path,
    original: tuple[str, list[Any]],
    name: str,
    c: int,
    shape: tuple[tuple[int, ...], tuple[int, ...]],
    args: list[Any],
) -> dict[str, Any]:
    """Save launch ``c`` of kernel ``name``: its arguments and the interpreter's outputs."""
    grid, block = shape
    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.pinning import pin_like

    spec: list[list[Any]] = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            np.save(place / f"{name}_{c}_{k}.npy", a)
            spec.append(["array", f"{name}_{c}_{k}.npy"])
        else:
            dtype = a.dtype.name if isinstance(a, np.generic) else "int32"
            spec.append(["scalar", dtype, int(a)])
    # The interpreter runs the original with the rounding ptxas gives it written out.
    text, pins = original
    module = parse_ptx(text, "original.ptx")
    pin_like(module, name, pins)
    result = launch(module, name, grid, block, args)
    reference = []
    for k, buffer in enumerate(result.buffers):
        if buffer is not None:
            np.save(place / f"{name}_{c}_{k}.interp.npy", buffer)
            reference.append([k, f"{name}_{c}_{k}.interp.npy"])
    return {"kernel": name, "grid": list(grid), "block": list(block), "args": spec, "interpreter": reference}


def run(directory: Path, out: Path | None) -> int:
    """Launch both versions on the GPU and compare; non-zero when a race-free kernel differs."""
    import cupy as cp

    rows: list[dict[str, Any]] = []
    for place in sorted(p.parent for p in directory.glob("*/cases.json")):
        rows += _run_build(cp, place)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    bad = [r for r in rows if not r["racy"] and not (r["rewrite_equal"] and r["interpreter_equal"])]
    print(f"{device}: {len(rows)} launches")
    head = f"{'build':<9} {'kernel':<16} {'launch':<22} {'shuffles':>8}"
    print(f"{head}  rewrite=original  original=interpreter")
    for r in rows:
        launch_text = f"{r['grid']}x{r['block']}"
        note = "  (racy)" if r["racy"] else ""
        row = f"{r['build']:<9} {r['kernel']:<16} {launch_text:<22} {r['shuffles']:>8}"
        print(f"{row}  {r['rewrite_equal']!s:<16}  {r['interpreter_equal']!s}{note}")
    shuffles = {(r["build"], r["kernel"]): r["shuffles"] for r in rows}  # per kernel, not per launch
    print(f"race-free launches that differ: {len(bad)} ({sum(shuffles.values())} shuffles in the rewrites)")
    if out is not None:
        summary = {
            "device": device,
            "builds": sorted({r["build"] for r in rows}),
            "launches": len(rows),
            "shuffles": sum(shuffles.values()),
            "race_free_differing": len(bad),
        }
        out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 1 if bad else 0


def _run_build(cp: Any, place: Path) -> list[dict[str, Any]]:
    """The rows of one build's launches (see `run`)."""
    plan = json.loads((place / "cases.json").read_text())
    modules = {v: cp.RawModule(path=str(place / f"{v}.ptx")) for v in ("original", "rewritten")}
    rows = []
    for case in plan["cases"]:
        outputs: dict[str, dict[int, bytes]] = {}
        for version, module in modules.items():
            args: list[Any] = []
            arrays: dict[int, Any] = {}
            for k, a in enumerate(case["args"]):
                if a[0] == "array":
                    arrays[k] = cp.asarray(np.load(place / a[1]))
                    args.append(arrays[k])
                else:
                    args.append(getattr(np, a[1])(a[2]))
            module.get_function(case["kernel"])(tuple(case["grid"]), tuple(case["block"]), tuple(args))
            cp.cuda.runtime.deviceSynchronize()
            outputs[version] = {k: cp.asnumpy(v).tobytes() for k, v in arrays.items()}
        interpreter = {k: np.load(place / f).tobytes() for k, f in case["interpreter"]}
        rows.append(
            {
                "build": plan["build"],
                "kernel": case["kernel"],
                "grid": case["grid"],
                "block": case["block"],
                "shuffles": plan["shuffles"].get(case["kernel"], 0),
                "racy": case["kernel"] in RACY,
                "rewrite_equal": outputs["original"] == outputs["rewritten"],
                "interpreter_equal": all(outputs["original"][k] == v for k, v in interpreter.items()),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="compile, rewrite and run the interpreter (needs nvcc, ptxasw)")
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument(
        "--build",
        action="append",
        choices=sorted(BUILD_NAMES),
        help="a build of tests/test_synthesis_unseen.py (repeatable; default sm_90)",
    )
    r = sub.add_parser("run", help="run both versions on the GPU (needs CuPy)")
    r.add_argument("--dir", type=Path, required=True)
    r.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if args.step == "prepare":
        return prepare(args.dir, args.build or ["sm_90"])
    out = args.json
    if out is not None and os.environ.get("OUT") and not out.is_absolute():
        out = Path(os.environ["OUT"]) / out
    return run(args.dir, out)


if __name__ == "__main__":
    sys.exit(main())
