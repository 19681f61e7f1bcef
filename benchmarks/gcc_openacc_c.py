"""GCC's OpenACC C stencil over arrays at file scope on a GPU: the rewrite against the original.

``tests/corpus/gcc/acc_jacobi.c`` is OpenACC's usual 2-D stencil (a gang
loop over rows, a vector loop over columns) over ``static double u[NY][NX],
v[NY][NX]``. GCC keeps the arrays' addresses in lane 0 across the gang loop
and broadcasts them at the top of every iteration; `ptxasw` makes
``u[j][i+1]`` a shuffle of ``u[j][i-1]`` (N = +2). The sizes are compiled
in, so ``prepare`` (here: ``gcc-12 -fopenacc`` and ``ptxasw rewrite``)
builds one PTX per shape, and ``run`` (there: CuPy) launches each as libgomp
does: blocks of (vector 32, one worker), one parameter, the argument block,
whose two slots hold ``u``'s and ``v``'s device addresses.

    python benchmarks/gcc_openacc_c.py prepare --dir DIR
    python benchmarks/gcc_openacc_c.py run --dir DIR [--json OUT]

``run`` checks every shape and gang count bit for bit against the original
and against NumPy, and times the larger shapes (CUDA events around 50
launches a sample, median of 51 samples, the variants interleaved, the
original loaded twice for the A/A noise floor).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

SOURCE = REPO / "tests" / "corpus" / "gcc" / "acc_jacobi.c"
KERNEL = "jacobi$_omp_fn$0"
# shape name -> (NX, NY), and the gang counts each runs with (timed: the last ones).
SHAPES = {"small": (70, 9), "l2": (1024, 512), "dram": (8192, 2048)}
GANGS = {"small": [1, 2, 3, 7], "l2": [5, 510], "dram": [2046, 256]}
TIMED = {"l2": [510], "dram": [2046, 256]}


def prepare(directory: Path) -> int:
    """Each shape's offload PTX (gcc-12) and its ``ptxasw rewrite``."""
    from tests.corpus.gcc import _capturing_tools, _compile

    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, (nx, ny) in SHAPES.items():
            original = directory / f"{name}.original.ptx"
            defines = (f"-DNX={nx}", f"-DNY={ny}")
            _compile("gcc-12", SOURCE, "-fopenacc", _capturing_tools(work), original, work, defines=defines)
            rewritten = directory / f"{name}.rewritten.ptx"
            cmd = [sys.executable, "-m", "ptxasw", "rewrite", str(original), "-o", str(rewritten)]
            if subprocess.run(cmd, check=False).returncode != 0:
                return 1
            if "shfl.sync.down" not in rewritten.read_text():
                print(f"{name}: the rewrite has no shuffle", file=sys.stderr)
                return 1
    return 0


def run(directory: Path, runs: int = 51, reps: int = 50) -> dict[str, Any]:
    import cupy as cp

    rows: list[dict[str, Any]] = []
    for name, (nx, ny) in SHAPES.items():
        paths = {"original": "original", "original_again": "original", "rewritten": "rewritten"}
        modules = {v: cp.RawModule(path=str(directory / f"{name}.{p}.ptx")) for v, p in paths.items()}
        kernels = {v: m.get_function(KERNEL) for v, m in modules.items()}
        host = np.random.default_rng(nx).standard_normal((ny, nx))
        u = cp.asarray(host)
        expected = np.full((ny, nx), -7.0)
        expected[1:-1, 1:-1] = 0.25 * (host[1:-1, :-2] + host[1:-1, 2:] + host[:-2, 1:-1] + host[2:, 1:-1])
        for gangs in GANGS[name]:
            outputs = {v: cp.full((ny, nx), -7.0) for v in kernels}
            blocks = {
                v: cp.asarray(np.array([u.data.ptr, out.data.ptr], np.uint64)) for v, out in outputs.items()
            }
            args = {v: (np.uint64(block.data.ptr),) for v, block in blocks.items()}
            calls = {v: lambda k=k, a=args[v], g=gangs: k((g,), (32, 1, 1), a) for v, k in kernels.items()}
            for go in calls.values():
                go()
            cp.cuda.Device().synchronize()
            original, rewritten = outputs["original"], outputs["rewritten"]
            row: dict[str, Any] = {
                "kernel": "jacobi (C, file-scope arrays)",
                "nx": nx,
                "ny": ny,
                "gangs": gangs,
                "equal": bool(cp.array_equal(original.view(cp.uint64), rewritten.view(cp.uint64))),
                "max_error_vs_numpy": float(np.abs(cp.asnumpy(original) - expected).max()),
            }
            if gangs in TIMED.get(name, []):
                row |= steps.timing(cp, calls, runs, reps)
            rows.append(row)
            print(json.dumps(row), flush=True)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {"device": device, "kernel": KERNEL, "runs": runs, "launches_per_sample": reps, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="run: write the results here")
    args = parser.parse_args()
    if args.step == "prepare":
        return prepare(args.dir)
    data = run(args.dir)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0 if all(r["equal"] and r["max_error_vs_numpy"] < 1e-12 for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
