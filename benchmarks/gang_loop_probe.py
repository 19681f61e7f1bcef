"""Does a warp that computes row after row make the Laplacian's exact shuffles pay?

GCC's OpenACC 3-D Laplacians gain 3-32 % on an H100 from the exact rewrite
(``u[i-1]`` and ``u[i+1]`` shuffles of ``u[i]``), the kernel suite's nvcc
Laplacian loses 4-8 %, and ``load_shape_probe.py`` showed that neither GCC's
generic loads nor its blocks of one warp are the difference. What is left is
the shape of GCC's loops: a gang loop hands each block row after row, and the
warp walks along its row 32 points at a time. This builds one CUDA source with
nvcc (``prepare``, here) in three shapes of the same 7-point stencil, rewrites
it with ``ptxasw rewrite`` (every proven shuffle kept), and runs original and
rewrite side by side (``run``, on the GPU machine with CuPy):

``point``  one point a thread (the suite's shape), blocks of 32x8 or 32x1;
``gang``   GCC's shape: ``for (row = block; row < rows; row += gangs)``, then
           ``for (i = 1 + lane; i < nx - 1; i += 32)``, which nvcc unrolls 4x;
``gang1``  the same with the vector loop kept rolled (``#pragma unroll 1``),
           as GCC emits it at -O2;
``gang1b`` ``gang1`` with the seven loads into locals before the sum and an
           empty ``asm volatile`` memory clobber between.

Each at an L2-resident and a DRAM-bound size, and again with a row length
that is not a multiple of 32 (every row then starts at another offset of a
128-byte line, as in GCC's Fortran fixture). Each rewrite is checked bit for
bit against its original, the original against NumPy.

    python benchmarks/gang_loop_probe.py prepare --dir DIR
    python benchmarks/gang_loop_probe.py run --dir DIR [--json OUT]

Measured on an H100 (``results/gang_loop_probe_h100.json``, 2026-11-28; 48
launches, every rewrite bit-equal, every original within 4e-6 of NumPy),
rewrite over original at the L2 / DRAM sizes (odd rows alike):

* ``point``: 0.97-1.00 (32x8 blocks 0.969-0.997, 32x1 0.999-1.000): the
  suite's result again;
* ``gang1`` in blocks of one warp: **1.03-1.28** (DRAM 1.15-1.22); in blocks of
  eight warps 0.99-1.05. ``gang1b``: 1.32-1.65 in one warp, 0.97-1.08 in eight;
* ``gang`` (nvcc's 4x unrolled loop): **0.63-0.90**, and its original is the
  fastest of all (0.36 ms against ``gang1``'s 0.66 at DRAM, 2,048 gangs). nvcc
  peels the remainder first, so lanes whose trip counts differ are out of step
  in the unrolled body: ptxasw rightly refuses those loads ("divergent flow"),
  and only the peeled iterations' 6 of 49 loads become shuffles.

So the gang loop is the difference, but not through the shuffles' own cost.
In ``gang1``'s SASS (``cuobjdump -sass``) ptxas issues four of the original's
seven loads, then an add that waits for them, then the other three: two load
latencies an iteration, in a loop a warp runs through one point at a time.
It splits them even where the PTX holds all seven loads before the first add
(``gang1b``). In the rewrite, two loads fewer, all the loads issue in one
batch. The gain is ptxas's schedule of the rolled loop, which a per-load cost
model cannot see: a rolled float loop with both x-neighbours shuffled gains
here and in GCC's Laplacians (1.03-1.32), while GCC's double Jacobis (one
shuffle, 0.91-0.98) and its Laplacian with one of the two shuffled (0.82-0.86,
H200) lose. The default therefore still leaves these loads; ``ptxasw tune``
(or ``PTXASW_PROFIT=always`` where a measurement says so) takes them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

SOURCE = r"""
#define ARGS const float *__restrict__ u, float *__restrict__ w, int nx, int ny, int nz
#define STENCIL(c) (u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz] - 6.0f * u[c])

extern "C" __global__ void point(ARGS) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int j = blockIdx.y * blockDim.y + threadIdx.y + 1;
    int k = blockIdx.z + 1;
    if (i >= nx - 1 || j >= ny - 1 || k >= nz - 1) return;
    long sy = nx, sz = (long)nx * ny;
    long c = ((long)k * ny + j) * nx + i;
    w[c] = STENCIL(c);
}

extern "C" __global__ void gang(ARGS) {
    int rows = (ny - 2) * (nz - 2);
    long sy = nx, sz = (long)nx * ny;
    for (int r = blockIdx.x * blockDim.y + threadIdx.y; r < rows; r += gridDim.x * blockDim.y) {
        long row = ((long)(r / (ny - 2) + 1) * ny + r % (ny - 2) + 1) * nx;
        for (int i = threadIdx.x + 1; i < nx - 1; i += 32) {
            long c = row + i;
            w[c] = STENCIL(c);
        }
    }
}

extern "C" __global__ void gang1(ARGS) {
    int rows = (ny - 2) * (nz - 2);
    long sy = nx, sz = (long)nx * ny;
    for (int r = blockIdx.x * blockDim.y + threadIdx.y; r < rows; r += gridDim.x * blockDim.y) {
        long row = ((long)(r / (ny - 2) + 1) * ny + r % (ny - 2) + 1) * nx;
#pragma unroll 1
        for (int i = threadIdx.x + 1; i < nx - 1; i += 32) {
            long c = row + i;
            w[c] = STENCIL(c);
        }
    }
}

extern "C" __global__ void gang1b(ARGS) {
    int rows = (ny - 2) * (nz - 2);
    long sy = nx, sz = (long)nx * ny;
    for (int r = blockIdx.x * blockDim.y + threadIdx.y; r < rows; r += gridDim.x * blockDim.y) {
        long row = ((long)(r / (ny - 2) + 1) * ny + r % (ny - 2) + 1) * nx;
#pragma unroll 1
        for (int i = threadIdx.x + 1; i < nx - 1; i += 32) {
            long c = row + i;
            float a = u[c - 1], b = u[c + 1], d = u[c - sy], e = u[c + sy], f = u[c - sz], g = u[c + sz];
            float h = u[c];
            asm volatile("" ::: "memory");
            w[c] = a + b + d + e + f + g - 6.0f * h;
        }
    }
}
"""

SHAPES = {
    "l2": (256, 128, 64),
    "l2_odd": (253, 128, 64),
    "dram": (512, 512, 256),
    "dram_odd": (509, 512, 256),
}


def launches(kernel: str, nx: int, ny: int, nz: int) -> list[tuple[tuple[int, ...], tuple[int, int, int]]]:
    """(grid, block) pairs each kernel runs with: the suite's blocks for
    ``point``; for the gang loops one row a block of one warp, 2,048 blocks of
    one warp, and blocks of eight warps (a warp a row) covering every row once."""
    if kernel == "point":
        return [(((nx - 2 + 31) // 32, -(-(ny - 2) // by), nz - 2), (32, by, 1)) for by in (8, 1)]
    rows = (ny - 2) * (nz - 2)
    return [((rows,), (32, 1, 1)), ((2048,), (32, 1, 1)), ((-(-rows // 8),), (32, 8, 1))]


def laplacian(u: np.ndarray) -> np.ndarray:
    out = np.zeros_like(u)
    c = u[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = (
        u[1:-1, 1:-1, :-2]
        + u[1:-1, 1:-1, 2:]
        + u[1:-1, :-2, 1:-1]
        + u[1:-1, 2:, 1:-1]
        + u[:-2, 1:-1, 1:-1]
        + u[2:, 1:-1, 1:-1]
        - 6.0 * c
    )
    return out


def prepare(directory: Path) -> int:
    """nvcc's PTX of `SOURCE` for sm_90 and its ``ptxasw rewrite`` (every proven shuffle)."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "gang_loop.cu"
    source.write_text(SOURCE)
    original, rewritten = directory / "original.ptx", directory / "rewritten.ptx"
    subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(source), "-o", str(original)], check=True)
    cmd = [sys.executable, "-m", "ptxasw", "rewrite", str(original), "-o", str(rewritten)]
    cmd += ["--rounding", "ptxas"]
    return subprocess.run(cmd, check=False).returncode


def run(directory: Path, runs: int = 31, reps: int = 20) -> dict[str, Any]:
    import cupy as cp

    paths = {"original": "original", "original_again": "original", "rewritten": "rewritten"}
    modules = {v: cp.RawModule(path=str(directory / f"{p}.ptx")) for v, p in paths.items()}
    rows: list[dict[str, Any]] = []
    for size, (nx, ny, nz) in SHAPES.items():
        host = np.random.default_rng(nx).standard_normal((nz, ny, nx)).astype(np.float32)
        expected = laplacian(host)
        u = cp.asarray(host)
        for name in ("point", "gang", "gang1", "gang1b"):
            kernels = {v: m.get_function(name) for v, m in modules.items()}
            for grid, block in launches(name, nx, ny, nz):
                outputs = {v: cp.zeros(host.shape, cp.float32) for v in kernels}
                args = {v: (u, out, np.int32(nx), np.int32(ny), np.int32(nz)) for v, out in outputs.items()}
                calls = {v: lambda k=k, a=args[v], g=grid, b=block: k(g, b, a) for v, k in kernels.items()}
                for go in calls.values():
                    go()
                cp.cuda.Device().synchronize()
                got = cp.asnumpy(outputs["original"])
                row: dict[str, Any] = {
                    "kernel": name,
                    "size": size,
                    "shape": [nx, ny, nz],
                    "grid": list(grid),
                    "block": list(block),
                    "equal": bool(
                        cp.array_equal(
                            outputs["original"].view(cp.uint32), outputs["rewritten"].view(cp.uint32)
                        )
                    ),
                    "max_error_vs_numpy": float(np.abs(got - expected).max()),
                }
                row |= steps.timing(cp, calls, runs, reps)
                rows.append(row)
                print(json.dumps(row), flush=True)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {"device": device, "runs": runs, "launches_per_sample": reps, "rows": rows}


def table(data: dict[str, Any]) -> str:
    lines = [
        f"{data['device']}: rewrite / original (A/A), every output bit-equal: "
        f"{all(r['equal'] for r in data['rows'])}"
    ]
    for r in data["rows"]:
        lines.append(
            f"{r['kernel']:6} {r['size']:8} grid {r['grid']} block {r['block']}: "
            f"{r['speedup']:.3f} ({r['a_a']:.3f}) {r['ms_original']:.4f} ms"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="run: write the results here")
    args = parser.parse_args()
    if args.step == "prepare":
        return prepare(args.dir)
    data = run(args.dir)
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    ok = all(r["equal"] and r["max_error_vs_numpy"] < 1e-4 for r in data["rows"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
