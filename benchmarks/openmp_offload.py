"""clang's OpenMP offload stencil on a GPU: the rewrite against the original, exact and timed.

``tests/fixtures/omp_offload_lto_sm80.ptx`` is the PTX that the link step of
``clang -fopenmp --offload-arch=sm_80 -O2 -foffload-lto`` hands to ptxas
(the device runtime inlined); `tests/test_synthesis_openmp.py` checks its
rewrite in the interpreter. This runs the ``teams distribute parallel for``
1-D stencil (``y[i] = x[i-1]/4 + x[i]/2 + x[i+1]/4``), original and rewritten
(both neighbours shuffles of ``x[i - 1]``, every proven shuffle kept as
``ptxasw rewrite`` keeps them), on the same inputs, in two steps because the
GPU machine need not have ptxasw's dependencies:

    python benchmarks/openmp_offload.py prepare --dir DIR            # here: ptxasw
    python benchmarks/openmp_offload.py run --dir DIR [--json OUT]   # there: CuPy

``run`` launches with the runtime's SPMD shape (blocks of 128, or smaller:
the kernel's ``.maxntid``), small odd sizes and grids that leave threads idle
for exactness, then L2-resident and DRAM-bound sizes with one element a
thread and with a grid-stride loop (a quarter or less of the blocks), each
timed with CUDA events (50 launches a sample, median of 51 samples, the
variants interleaved, the original loaded twice for an A/A figure).

Measured on an H200 (``results/openmp_offload_h200.json``; A/A within
0.4 %): every output bit-equal to the original's (and to NumPy's), and the
exact shuffles lose as `ptxasw.synth.cost` predicts for scalar loads: 0.98
and 0.99 with one element a thread (1M and 4M elements), 0.86 DRAM-bound
(64M), 0.73 and 0.80 in the grid-stride loops (4M and 64M). The drop-in's
default (the cost model) leaves these loads alone; ``PTXASW_PROFIT=always``
and ``ptxasw rewrite`` take them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "omp_offload_lto_sm80.ptx"
KERNEL = "__omp_offloading_fe00_5101a3_stencil1d_l14"
# (elements, blocks, threads a block): exactness first, then timed sizes.
EXACT = [(150, 2, 128), (77, 3, 64), (200, 2, 96)]
TIMED = [
    (1 << 20, 8192, 128),
    (1 << 22, 32768, 128),
    (1 << 22, 1024, 128),
    (1 << 26, 65536, 128),
    (1 << 26, 4096, 128),
]


def run(directory: Path, runs: int = 51, reps: int = 50) -> dict[str, Any]:
    import cupy as cp

    paths = {"original": "original.ptx", "original_again": "original.ptx", "rewritten": "rewritten.ptx"}
    kernels = {v: cp.RawModule(path=str(directory / p)).get_function(KERNEL) for v, p in paths.items()}
    dynamic = cp.zeros(8, cp.uint8)  # the runtime's dynamic pointer (param 0)
    rows: list[dict[str, Any]] = []
    for n, grid, block in EXACT + TIMED:
        x = cp.asarray(np.random.default_rng(n).standard_normal(n).astype(np.float32))
        outputs: dict[str, Any] = {}
        for variant, kernel in kernels.items():
            outputs[variant] = cp.zeros(n, cp.float32)
            kernel((grid,), (block,), (dynamic, np.uint64(n), outputs[variant], x))
        cp.cuda.Device().synchronize()
        host = cp.asnumpy(x)
        expected = np.zeros(n, np.float32)
        expected[1:-1] = 0.25 * host[:-2] + 0.5 * host[1:-1] + 0.25 * host[2:]
        row: dict[str, Any] = {
            "elements": n,
            "grid": grid,
            "block": block,
            "equal": bool(cp.array_equal(outputs["original"], outputs["rewritten"])),
            "max_error_vs_numpy": float(np.abs(cp.asnumpy(outputs["original"]) - expected).max()),
        }
        if (n, grid, block) in TIMED:
            args = {v: (dynamic, np.uint64(n), outputs[v], x) for v in kernels}
            calls = {v: lambda k=k, a=args[v], g=grid, b=block: k((g,), (b,), a) for v, k in kernels.items()}
            row |= steps.timing(cp, calls, runs, reps)
        rows.append(row)
        print(json.dumps(row), flush=True)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {"device": name, "kernel": KERNEL, "runs": runs, "launches_per_sample": reps, "rows": rows}


def main() -> int:
    return steps.main(__doc__.splitlines()[0], FIXTURE, run, lambda row: row["equal"])


if __name__ == "__main__":
    sys.exit(main())
