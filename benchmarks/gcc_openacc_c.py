"""GCC's OpenACC C stencils over arrays at file scope on a GPU: the rewrite against the original.

``tests/corpus/gcc/acc_jacobi.c`` (a gang loop over rows, a vector loop over
columns, ``double``) and ``tests/corpus/gcc/acc_lap3d.c`` (a ``collapse(2)``
gang loop over planes and rows, a vector loop along the row, ``float``) are
OpenACC's usual stencils over ``static`` arrays. GCC keeps the arrays'
addresses in lane 0 across the gang loop and broadcasts them at the top of
every iteration; `ptxasw` makes the Jacobi's ``u[j][i+1]`` a shuffle of
``u[j][i-1]`` (N = +2) and the Laplacian's ``u[k][j][i±1]`` shuffles of
``u[k][j][i]``. The sizes are compiled in, so ``prepare`` (here:
``gcc-12 -fopenacc`` and ``ptxasw rewrite``) builds one PTX per kernel and
shape, and ``run`` (there: CuPy) launches each as libgomp does: blocks of
(vector 32, one worker), one parameter, the argument block, whose two slots
hold the input's and the output's device addresses.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

GCC_DIR = REPO / "tests" / "corpus" / "gcc"


def _jacobi(u: np.ndarray) -> np.ndarray:
    out = np.full(u.shape, -7.0, u.dtype)
    out[1:-1, 1:-1] = 0.25 * (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1])
    return out


def _lap3d(u: np.ndarray) -> np.ndarray:
    out = np.full(u.shape, -7.0, u.dtype)
    inner = (slice(1, -1),) * 3
    out[inner] = (
        u[1:-1, 1:-1, :-2]
        + u[1:-1, 1:-1, 2:]
        + u[1:-1, :-2, 1:-1]
        + u[1:-1, 2:, 1:-1]
        + u[:-2, 1:-1, 1:-1]
        + u[2:, 1:-1, 1:-1]
        - 6 * u[inner]
    )
    return out


@dataclass(frozen=True)
class Kernel:
    """One C source: its kernel, the ``-D`` names of its sizes (fastest
    first), the shapes it is built at, the gang counts each runs with (the
    timed ones apart), its element type, NumPy's result and its tolerance."""

    source: str
    symbol: str
    sizes: tuple[str, ...]
    shapes: dict[str, tuple[int, ...]]
    gangs: dict[str, list[int]]
    timed: dict[str, list[int]]
    dtype: type
    reference: Callable[[np.ndarray], np.ndarray]
    tolerance: float


KERNELS = {
    "jacobi": Kernel(
        "acc_jacobi.c",
        "jacobi$_omp_fn$0",
        ("NX", "NY"),
        {"small": (70, 9), "l2": (1024, 512), "dram": (8192, 2048)},
        {"small": [1, 2, 3, 7], "l2": [5, 510], "dram": [2046, 256]},
        {"l2": [510], "dram": [2046, 256]},
        np.float64,
        _jacobi,
        1e-12,
    ),
    "lap3d": Kernel(
        "acc_lap3d.c",
        "lap3d$_omp_fn$0",
        ("NX", "NY", "NZ"),
        {"small": (70, 6, 5), "l2": (256, 128, 64), "dram": (512, 512, 256)},
        {"small": [1, 2, 5], "l2": [7812], "dram": [129540, 2048]},
        {"l2": [7812], "dram": [129540, 2048]},
        np.float32,
        _lap3d,
        1e-5,
    ),
}


def prepare(directory: Path) -> int:
    """Each kernel's offload PTX per shape (gcc-12) and its ``ptxasw rewrite``."""
    from tests.corpus.gcc import _capturing_tools, _compile

    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, kernel in KERNELS.items():
            for shape_name, shape in kernel.shapes.items():
                original = directory / f"{name}.{shape_name}.original.ptx"
                defines = tuple(f"-D{d}={n}" for d, n in zip(kernel.sizes, shape, strict=True))
                _compile(
                    "gcc-12",
                    GCC_DIR / kernel.source,
                    "-fopenacc",
                    _capturing_tools(work),
                    original,
                    work,
                    defines=defines,
                )
                rewritten = directory / f"{name}.{shape_name}.rewritten.ptx"
                cmd = [sys.executable, "-m", "ptxasw", "rewrite", str(original), "-o", str(rewritten)]
                if subprocess.run(cmd, check=False).returncode != 0:
                    return 1
                if "shfl.sync.down" not in rewritten.read_text():
                    print(f"{name} {shape_name}: the rewrite has no shuffle", file=sys.stderr)
                    return 1
    return 0


def run(directory: Path, runs: int = 51, reps: int = 50) -> dict[str, Any]:
    import cupy as cp

    rows: list[dict[str, Any]] = []
    for name, kernel in KERNELS.items():
        for shape_name, shape in kernel.shapes.items():
            paths = {"original": "original", "original_again": "original", "rewritten": "rewritten"}
            modules = {
                v: cp.RawModule(path=str(directory / f"{name}.{shape_name}.{p}.ptx"))
                for v, p in paths.items()
            }
            kernels = {v: m.get_function(kernel.symbol) for v, m in modules.items()}
            host = np.random.default_rng(shape[0]).standard_normal(shape[::-1]).astype(kernel.dtype)
            expected = kernel.reference(host)
            u = cp.asarray(host)
            for gangs in kernel.gangs[shape_name]:
                outputs = {v: cp.full(host.shape, -7.0, kernel.dtype) for v in kernels}
                blocks = {
                    v: cp.asarray(np.array([u.data.ptr, out.data.ptr], np.uint64))
                    for v, out in outputs.items()
                }
                args = {v: (np.uint64(block.data.ptr),) for v, block in blocks.items()}
                calls = {
                    v: lambda k=k, a=args[v], g=gangs: k((g,), (32, 1, 1), a) for v, k in kernels.items()
                }
                for go in calls.values():
                    go()
                cp.cuda.Device().synchronize()
                original, rewritten = outputs["original"], outputs["rewritten"]
                bits = cp.uint64 if kernel.dtype == np.float64 else cp.uint32
                got = cp.asnumpy(original)
                row: dict[str, Any] = {
                    "kernel": f"{name} (C, file-scope arrays)",
                    "shape": list(shape),
                    "gangs": gangs,
                    "equal": bool(cp.array_equal(original.view(bits), rewritten.view(bits))),
                    "max_error_vs_numpy": float(
                        np.abs(got - expected).max() / max(1.0, np.abs(expected).max())
                    ),
                    "tolerance": kernel.tolerance,
                }
                if gangs in kernel.timed.get(shape_name, []):
                    row |= steps.timing(cp, calls, runs, reps)
                rows.append(row)
                print(json.dumps(row), flush=True)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    symbols = [k.symbol for k in KERNELS.values()]
    return {"device": device, "kernels": symbols, "runs": runs, "launches_per_sample": reps, "rows": rows}


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
    return 0 if all(r["equal"] and r["max_error_vs_numpy"] < r["tolerance"] for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
