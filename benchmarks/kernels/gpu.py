"""The suite's host driver on a real GPU (CuPy), and a check that the CPU oracle agrees with it.

Usage (repo root, on a machine with a GPU, nvcc, ptxas and CuPy; the GPU
image lacks lark and z3, install the wheels from ``.whl/`` first, see
``benchmarks/gpu_dropin.py``)::

    PYTHONPATH=/tmp/site:. python -m benchmarks.kernels.gpu [--json OUT] [KERNEL...]

For every suite kernel it assembles the sm_90 ``-O3`` PTX with the real
``ptxas`` and then

1. runs every CI launch (`suite.small_shapes`) on the GPU and in the concrete
   interpreter on the same inputs: assembled with ``ptxas --fmad=false`` the
   outputs must be equal bit for bit, which is what CI (no GPU) relies on when
   it compares rewritten with original PTX; the default build (ptxas may fuse
   a PTX ``mul`` and ``add`` into an FMA) must match the NumPy reference, and
   whether it is also bit-exact is recorded;
2. runs a medium odd size with every natural block shape on the GPU and checks
   the NumPy reference (within the kernel's tolerance).

The functions here (`device_args`, `launch`, `run`) are the host driver the
GPU benchmarks share: the same arguments `suite.make_args` gives the CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.kernels import suite

MEDIUM = {1: (1001, 257), 2: (333, 177), 3: (133, 37, 29)}


def assemble(ptx: Path, arch: str = "sm_90", out_dir: Path | None = None, fmad: bool = True) -> Path:
    """A cubin of ``ptx`` from the real ``ptxas`` (what a CUDA build would load).

    ``fmad=False`` passes ``--fmad=false``: ptxas may otherwise contract a PTX
    ``mul`` and a dependent ``add`` (both without a rounding modifier) into one
    FMA, which PTX allows and the interpreter, executing the PTX as written,
    does not do; only without contraction is the GPU bit-exact with it.
    """
    folder = out_dir or Path(tempfile.mkdtemp(prefix="ptxasw-suite-"))
    out = folder / f"{ptx.stem}{'' if fmad else '-nofma'}.cubin"
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise FileNotFoundError("ptxas not found on PATH")
    cmd = [ptxas, f"-arch={arch}", *([] if fmad else ["--fmad=false"]), str(ptx), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def device_args(kernel: str | suite.Kernel, host_args: suite.Args) -> list:
    """Launch arguments on the GPU: arrays copied to device memory, scalars as their NumPy type."""
    import cupy as cp

    return [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args]


def launch(
    module, kernel: str | suite.Kernel, shape: suite.Shape, block: Sequence[int], dev_args: list
) -> None:
    """One launch of a suite kernel from a loaded ``cupy.RawModule`` (asynchronous)."""
    k = suite.get(kernel)
    block3 = tuple((*block, 1, 1)[:3])
    fn = module.get_function(k.symbol)
    fn(k.grid(shape, block3), block3, tuple(dev_args))


def run(
    cubin_or_ptx: str | Path,
    kernel: str | suite.Kernel,
    shape: suite.Shape,
    block: Sequence[int],
    seed: int = 0,
) -> dict[int, np.ndarray]:
    """`suite.run_kernel` on the GPU: the same seeded inputs, the output arrays back on the host."""
    import cupy as cp

    k = suite.get(kernel)
    module = cp.RawModule(path=str(cubin_or_ptx))
    dev = device_args(k, suite.launch_args(k, shape, seed))
    launch(module, k, shape, block, dev)
    cp.cuda.runtime.deviceSynchronize()
    return {i: cp.asnumpy(dev[i]) for i in k.outputs}


def time_launch(
    module,
    kernel: suite.Kernel,
    shape: suite.Shape,
    block: Sequence[int],
    dev_args: list,
    runs: int = 31,
    warmup: int = 5,
) -> float:
    """Median milliseconds of one launch, from CUDA events around each of ``runs`` launches after warm-up."""
    import cupy as cp

    for _ in range(warmup):
        launch(module, kernel, shape, block, dev_args)
    times = []
    for _ in range(runs):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch(module, kernel, shape, block, dev_args)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def time_sizes(k: suite.Kernel, cubin: Path) -> dict[str, dict]:
    """The natural block at the L2-resident and the DRAM-bound size: median time, array bytes per second."""
    import cupy as cp

    module = cp.RawModule(path=str(cubin))
    result = {}
    for label, shape in suite.gpu_shapes(k).items():
        host = suite.launch_args(k, shape, 0)
        dev = device_args(k, host)
        del host
        ms = time_launch(module, k, shape, k.blocks[0], dev)
        nbytes = sum(a.nbytes for a in dev if isinstance(a, cp.ndarray))
        result[label] = {"shape": shape, "block": k.blocks[0], "median_ms": ms, "gb_s": nbytes / ms / 1e6}
        del dev
        cp.get_default_memory_pool().free_all_blocks()
    return result


def check_kernel(k: suite.Kernel, cubin: Path, cubin_nofma: Path, ptx: Path) -> dict:
    """GPU against interpreter (bit for bit without ptxas's FMA contraction, CI launches; with it,
    within tolerance) and against NumPy (medium size, natural blocks, the default build)."""
    row: dict = {"kernel": k.name, "bitwise": [], "contracted_bitwise": [], "reference": []}
    started = time.perf_counter()
    for seed, case in enumerate(suite.small_shapes(k)):
        cpu = suite.run_kernel(ptx, k, case.shape, case.block, seed)
        gpu = run(cubin_nofma, k, case.shape, case.block, seed)
        row["bitwise"].append({"shape": case.shape, "block": case.block, "differ": suite.same_bits(gpu, cpu)})
        gpu = run(cubin, k, case.shape, case.block, seed)
        row["contracted_bitwise"].append(not suite.same_bits(gpu, cpu))
        problems = k.check(gpu, k.reference(suite.launch_args(k, case.shape, seed)))
        row["reference"].append({"shape": case.shape, "block": case.block, "problems": problems})
    shape = MEDIUM[k.ndim] if k.name not in ("matmul",) else (333, 177, 61)
    for seed, block in enumerate(k.blocks):
        gpu = run(cubin, k, shape, block, 100 + seed)
        problems = k.check(gpu, k.reference(suite.launch_args(k, shape, 100 + seed)))
        row["reference"].append({"shape": shape, "block": block, "problems": problems})
    row["ok"] = all(not c["differ"] for c in row["bitwise"]) and all(
        not c["problems"] for c in row["reference"]
    )
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The kernel suite on the GPU against the CPU interpreter")
    parser.add_argument("kernels", nargs="*", help="kernel names (default: all)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--time", action="store_true", help="also time the natural block at suite.gpu_shapes")
    opts = parser.parse_args(argv)
    unknown = [n for n in opts.kernels if n not in suite.KERNELS]
    if unknown:
        parser.error(f"no suite kernel {unknown[0]!r} (known: {', '.join(suite.KERNELS)})")
    import cupy as cp

    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    names = opts.kernels or list(suite.KERNELS)
    ptx = suite.compile_many((n, "sm_90", False) for n in names)
    work = Path(tempfile.mkdtemp(prefix="ptxasw-suite-"))
    rows = []
    for name in names:
        k = suite.KERNELS[name]
        path = ptx[(name, "sm_90", False)]
        cubins = assemble(path, out_dir=work), assemble(path, out_dir=work, fmad=False)
        row = check_kernel(k, *cubins, path)
        rows.append(row)
        bad = [c for c in row["bitwise"] if c["differ"]] + [c for c in row["reference"] if c["problems"]]
        fused = "equal" if all(row["contracted_bitwise"]) else "differs (FMA contraction)"
        status = "ok" if row["ok"] else "FAIL"
        print(f"{name:<14} {status} {row['seconds']:6.2f}s default ptxas vs interpreter: {fused} {bad or ''}")
        if opts.time:
            row["timing"] = time_sizes(k, cubins[0])
            for label, t in row["timing"].items():
                where = f"{label:<4} {t['shape']} block {t['block']}"
                print(f"    {where}: {t['median_ms']:.4f} ms, {t['gb_s']:.0f} GB/s")
    result = {"device": device, "rows": rows, "ok": all(r["ok"] for r in rows)}
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps(result, indent=2) + "\n")
    ok = sum(r["ok"] for r in rows)
    print(f"{device}: {ok}/{len(rows)} kernels: GPU == interpreter bit for bit, GPU ~ NumPy")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
