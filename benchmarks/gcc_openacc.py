"""GCC's OpenACC offload stencil on a GPU: the rewrite against the original, exact and timed.

``tests/fixtures/acc_fortran_gcc12.ptx`` is the PTX gfortran-12 writes for
``tests/corpus/gcc/acc_fortran.f90`` (``-O2 -fopenacc -foffload=nvptx-none``);
`tests/test_synthesis_gcc_openacc.py` checks its rewrite in the interpreter.
This runs its ``smooth1d`` (``y(i) = x(i-1)/4 + x(i)/2 + x(i+1)/4``, both
neighbours shuffles of ``x(i)``), original and rewritten, on the same inputs,
as libgomp launches it: blocks of (vector 32, one worker), one parameter,
the offload argument block, whose slots hold the addresses of ``x``'s and
``y``'s addresses and of the loop's last index. In two steps, because the
GPU machine need not have ptxasw's dependencies:

    python benchmarks/gcc_openacc.py prepare --dir DIR            # here: ptxasw
    python benchmarks/gcc_openacc.py run --dir DIR [--json OUT]   # there: CuPy

The driver compiles both PTX texts (GCC's target is sm_30). ``run`` checks
small odd sizes and gang counts for exactness, then times L2-resident and
DRAM-bound sizes with one element a lane and with fewer gangs (GCC's gang
loop), CUDA events around 50 launches a sample, median of 51 samples, the
variants interleaved and the original loaded twice (A/A).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "acc_fortran_gcc12.ptx"
KERNEL = "__stencils_MOD_smooth1d$_omp_fn$0"
OURS = "rewritten"
# (elements, gangs): exactness first, then timed sizes.
EXACT = [(100, 1), (77, 2), (300, 3), (33, 1), (1000, 5)]
TIMED = [(1 << 20, 1 << 15), (1 << 22, 1 << 17), (1 << 22, 1 << 12), (1 << 26, 1 << 21), (1 << 26, 1 << 14)]


def prepare(directory: Path) -> int:
    """The original and ``ptxasw rewrite``'s PTX, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "original.ptx").write_text(FIXTURE.read_text())
    cmd = [sys.executable, "-m", "ptxasw", "rewrite", str(FIXTURE), "-o", str(directory / "rewritten.ptx")]
    return subprocess.run(cmd, check=False).returncode


def run(directory: Path, runs: int = 51, reps: int = 50) -> dict[str, Any]:
    import cupy as cp

    paths = {"original": "original.ptx", "original_again": "original.ptx", "rewritten": "rewritten.ptx"}
    kernels = {v: cp.RawModule(path=str(directory / p)).get_function(KERNEL) for v, p in paths.items()}
    rows: list[dict[str, Any]] = []
    for n, gangs in EXACT + TIMED:
        x = cp.asarray(np.random.default_rng(n).standard_normal(n).astype(np.float32))
        outputs = {v: cp.zeros(n, cp.float32) for v in kernels}
        blocks = {}
        for variant, y in outputs.items():
            homes = cp.zeros(3, cp.uint64)  # x's address, y's address, n - 1
            homes[0], homes[1], homes[2] = x.data.ptr, y.data.ptr, n - 1
            block = cp.zeros(8, cp.uint64)  # the argument block: [ar0+8], [ar0+24], [ar0+32]
            block[1], block[3], block[4] = homes.data.ptr, homes.data.ptr + 8, homes.data.ptr + 16
            blocks[variant] = (homes, block)
        for variant, kernel in kernels.items():
            kernel((gangs,), (32, 1, 1), (np.uint64(blocks[variant][1].data.ptr),))
        cp.cuda.Device().synchronize()
        host = cp.asnumpy(x)
        expected = np.zeros(n, np.float32)
        expected[1:-1] = 0.25 * host[:-2] + 0.5 * host[1:-1] + 0.25 * host[2:]
        row: dict[str, Any] = {
            "elements": n,
            "gangs": gangs,
            "equal": bool(
                cp.array_equal(outputs["original"].view(cp.uint32), outputs["rewritten"].view(cp.uint32))
            ),
            "max_error_vs_numpy": float(np.abs(cp.asnumpy(outputs["original"]) - expected).max()),
        }
        if (n, gangs) in TIMED:
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            samples: dict[str, list[float]] = {v: [] for v in kernels}
            for _ in range(runs):
                for variant, kernel in kernels.items():
                    arg = (np.uint64(blocks[variant][1].data.ptr),)
                    start.record()
                    for _ in range(reps):
                        kernel((gangs,), (32, 1, 1), arg)
                    stop.record()
                    stop.synchronize()
                    samples[variant].append(cp.cuda.get_elapsed_time(start, stop) / reps)
            ms = {v: float(np.median(s)) for v, s in samples.items()}
            row |= {f"ms_{v}": t for v, t in ms.items()}
            row["speedup"] = ms["original"] / ms["rewritten"]
            row["a_a"] = ms["original"] / ms["original_again"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {"device": name, "kernel": KERNEL, "runs": runs, "launches_per_sample": reps, "rows": rows}


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
    return 0 if all(row["equal"] and row["max_error_vs_numpy"] < 1e-5 for row in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
