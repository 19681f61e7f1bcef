"""GCC's OpenACC offload stencil on a GPU: the rewrite against the original, exact and timed.

``tests/fixtures/acc_fortran_gcc12.ptx`` is the PTX gfortran-12 writes for
``tests/corpus/gcc/acc_fortran.f90`` (``-O2 -fopenacc -foffload=nvptx-none``);
`tests/test_synthesis_gcc_openacc.py` checks its rewrite in the interpreter.
This runs its ``smooth1d`` (``y(i) = x(i-1)/4 + x(i)/2 + x(i+1)/4``, both
neighbours shuffles of ``x(i)``) and ``jacobi2d`` (a gang loop over ``j``, a
vector loop over ``i``: ``u(i+1, j)`` a shuffle of ``u(i-1, j)``) and ``lap3d``
(assumed-shape arrays, strides from the descriptors: ``u(i-1, j, k)`` and
``u(i+1, j, k)`` shuffles of ``u(i, j, k)``), original and rewritten, on the same inputs,
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

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "acc_fortran_gcc12.ptx"
KERNEL = "__stencils_MOD_smooth1d$_omp_fn$0"
JACOBI = "__stencils_MOD_jacobi2d$_omp_fn$0"
# (nx, ny, gangs): exactness first, then L2-resident and DRAM-bound sizes.
JACOBI_EXACT = [(40, 7, 1), (70, 5, 3), (1000, 37, 4)]
JACOBI_TIMED = [(1024, 512, 510), (8192, 2048, 2046), (8192, 2048, 256)]
# (elements, gangs): exactness first, then timed sizes.
EXACT = [(100, 1), (77, 2), (300, 3), (33, 1), (1000, 5)]
TIMED = [(1 << 20, 1 << 15), (1 << 22, 1 << 17), (1 << 22, 1 << 12), (1 << 26, 1 << 21), (1 << 26, 1 << 14)]


def _launches(
    cp: Any, kernels: dict[str, Any], homes: dict[str, dict[int, int]], gangs: int
) -> tuple[dict, list]:
    """Per variant, a call launching its kernel as libgomp does (``gangs``
    blocks of (32, 1, 1), one parameter: the argument block), and the device
    arrays to keep alive while the calls run. ``homes[variant]`` maps each
    slot of the argument block (its byte offset) to the value whose home's
    address the slot holds."""
    calls, keep = {}, []
    for variant, slots in homes.items():
        values = cp.asarray(np.array(list(slots.values()), np.int64))
        block = cp.zeros(max(slots) // 8 + 1, cp.uint64)
        for k, offset in enumerate(slots):
            block[offset // 8] = values.data.ptr + 8 * k
        keep.append((values, block))
        arg = (np.uint64(block.data.ptr),)
        calls[variant] = lambda k=kernels[variant], a=arg, g=gangs: k((g,), (32, 1, 1), a)
    return calls, keep


def _jacobi(cp: Any, modules: dict[str, Any], runs: int, reps: int) -> list[dict[str, Any]]:
    """``jacobi2d``: its argument block's homes hold ``u``'s and ``v``'s
    addresses, ``ny - 1``, each array's offset and column stride and ``nx``
    (`tests/test_synthesis_gcc_openacc.py`)."""
    kernels = {v: m.get_function(JACOBI) for v, m in modules.items()}
    rows = []
    for nx, ny, gangs in JACOBI_EXACT + JACOBI_TIMED:
        host = np.random.default_rng(nx * ny).standard_normal((nx, ny))
        u = cp.asarray(host.ravel(order="F"))
        outputs = {v: cp.zeros(nx * ny, cp.float64) for v in kernels}
        slots = (8, 24, 32, 40, 48, 56, 64, 72)
        homes = {
            variant: dict(
                zip(slots, (u.data.ptr, v.data.ptr, ny - 1, -(1 + nx), nx, -(1 + nx), nx, nx), strict=True)
            )
            for variant, v in outputs.items()
        }
        calls, _keep = _launches(cp, kernels, homes, gangs)
        for go in calls.values():
            go()
        cp.cuda.Device().synchronize()
        expected = np.zeros((nx, ny))
        expected[1:-1, 1:-1] = 0.25 * (host[:-2, 1:-1] + host[2:, 1:-1] + host[1:-1, :-2] + host[1:-1, 2:])
        got = cp.asnumpy(outputs["original"]).reshape((nx, ny), order="F")
        same = bool(cp.array_equal(outputs["original"].view(cp.uint64), outputs["rewritten"].view(cp.uint64)))
        row: dict[str, Any] = {
            "kernel": "jacobi2d",
            "nx": nx,
            "ny": ny,
            "gangs": gangs,
            "equal": same,
            "max_error_vs_numpy": float(np.abs(got - expected).max()),
        }
        if (nx, ny, gangs) in JACOBI_TIMED:
            row |= steps.timing(cp, calls, runs, reps)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


LAP3D = "__stencils_MOD_lap3d$_omp_fn$0"
# (nx, ny, nz, step of u along dimension 1, gangs): exactness first, then timed sizes.
LAP3D_EXACT = [(37, 5, 4, 1, 1), (37, 5, 4, 2, 3), (130, 20, 9, 3, 17)]
LAP3D_TIMED = [(256, 128, 64, 1, 7812), (1024, 512, 128, 1, 64260), (1024, 512, 128, 1, 2048)]


def _lap3d(cp: Any, modules: dict[str, Any], runs: int, reps: int) -> list[dict[str, Any]]:
    """``lap3d`` over assumed-shape arrays: its argument block as GCC's host
    code fills it (`tests/test_synthesis_gcc_openacc.py`): the homes of
    ``u``'s and ``w``'s data addresses, the collapsed gang loops' bounds,
    each array's offset and strides and ``size(u, 1)``; ``u`` a section of
    every ``step``-th element along dimension 1 in the exact runs."""
    kernels = {v: m.get_function(LAP3D) for v, m in modules.items()}
    rows = []
    for nx, ny, nz, step, gangs in LAP3D_EXACT + LAP3D_TIMED:
        host = np.random.default_rng(nx + ny + nz + step).standard_normal((nx, ny, nz)).astype(np.float32)
        whole = np.zeros((nx * step, ny, nz), np.float32, order="F")
        whole[::step] = host
        u = cp.asarray(whole.ravel(order="F"))
        us, ws = (step, step * nx, step * nx * ny), (1, nx, nx * ny)
        outputs = {v: cp.full(nx * ny * nz, -7.0, cp.float32) for v in kernels}
        slots = (8, 24, 32, 40, 48, 56, 64, 72, 80, 88, 104, 120, 128)
        sizes = (ny - 1, nz - 1, -sum(ws), ws[2], ws[1], ws[0], -sum(us), us[2], us[1], us[0], nx)
        homes = {
            variant: dict(zip(slots, (u.data.ptr, w.data.ptr, *sizes), strict=True))
            for variant, w in outputs.items()
        }
        calls, _keep = _launches(cp, kernels, homes, gangs)
        for go in calls.values():
            go()
        cp.cuda.Device().synchronize()
        expected = np.full((nx, ny, nz), -7.0, np.float32)
        inner = (slice(1, -1),) * 3
        expected[inner] = (
            (host[:-2, 1:-1, 1:-1] + host[2:, 1:-1, 1:-1] + host[1:-1, :-2, 1:-1] + host[1:-1, 2:, 1:-1])
            + (host[1:-1, 1:-1, :-2] + host[1:-1, 1:-1, 2:])
            - 6 * host[inner]
        )
        got = cp.asnumpy(outputs["original"]).reshape((nx, ny, nz), order="F")
        same = bool(cp.array_equal(outputs["original"].view(cp.uint32), outputs["rewritten"].view(cp.uint32)))
        row: dict[str, Any] = {
            "kernel": "lap3d",
            "shape": [nx, ny, nz],
            "step": step,
            "gangs": gangs,
            "equal": same,
            "max_error_vs_numpy": float(np.abs(got - expected).max() / max(1.0, np.abs(expected).max())),
        }
        if (nx, ny, nz, step, gangs) in LAP3D_TIMED:
            row |= steps.timing(cp, calls, runs, reps)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def run(directory: Path, runs: int = 51, reps: int = 50) -> dict[str, Any]:
    import cupy as cp

    paths = {"original": "original.ptx", "original_again": "original.ptx", "rewritten": "rewritten.ptx"}
    modules = {v: cp.RawModule(path=str(directory / p)) for v, p in paths.items()}
    kernels = {v: m.get_function(KERNEL) for v, m in modules.items()}
    rows: list[dict[str, Any]] = []
    for n, gangs in EXACT + TIMED:
        x = cp.asarray(np.random.default_rng(n).standard_normal(n).astype(np.float32))
        outputs = {v: cp.zeros(n, cp.float32) for v in kernels}
        # the argument block: [ar0+8], [ar0+24], [ar0+32] hold the homes of x's and y's addresses and n - 1
        homes = {v: {8: x.data.ptr, 24: y.data.ptr, 32: n - 1} for v, y in outputs.items()}
        calls, _keep = _launches(cp, kernels, homes, gangs)
        for go in calls.values():
            go()
        cp.cuda.Device().synchronize()
        host = cp.asnumpy(x)
        expected = np.zeros(n, np.float32)
        expected[1:-1] = 0.25 * host[:-2] + 0.5 * host[1:-1] + 0.25 * host[2:]
        row: dict[str, Any] = {
            "kernel": "smooth1d",
            "elements": n,
            "gangs": gangs,
            "equal": bool(
                cp.array_equal(outputs["original"].view(cp.uint32), outputs["rewritten"].view(cp.uint32))
            ),
            "max_error_vs_numpy": float(np.abs(cp.asnumpy(outputs["original"]) - expected).max()),
        }
        if (n, gangs) in TIMED:
            row |= steps.timing(cp, calls, runs, reps)
        rows.append(row)
        print(json.dumps(row), flush=True)
    rows += _jacobi(cp, modules, runs, reps)
    rows += _lap3d(cp, modules, runs, reps)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {
        "device": name,
        "kernels": [KERNEL, JACOBI, LAP3D],
        "runs": runs,
        "launches_per_sample": reps,
        "rows": rows,
    }


def main() -> int:
    return steps.main(
        __doc__.splitlines()[0], FIXTURE, run, lambda row: row["equal"] and row["max_error_vs_numpy"] < 1e-5
    )


if __name__ == "__main__":
    sys.exit(main())
