"""On a GPU machine: the drop-in ptxas end to end, checked by running the code.

Usage (repo root, a machine with nvcc, a GPU and CuPy):
    PYTHONPATH=. python benchmarks/gpu_dropin.py [--json] [--out FILE]

The GPU image has no `lark`: download its wheel here into `.whl/` (git-ignored,
`pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl lark`),
carry `.whl` and install it there with `pip install --no-index --target /tmp/site`
before running with `PYTHONPATH=/tmp/site:.`.

For the bundled example (examples/jacobi.cu) it
1. builds a shadow toolkit (`ptxasw toolkit create`) and compiles the kernel
   to a cubin through it, with PTXASW_LOG proving that the wrapper ran and its
   pipeline succeeded (status "ok", not a fall-back);
2. compiles the same source with the plain toolkit and compares the cubins;
3. runs both cubins on the GPU (CuPy) on random inputs of an odd size and
   compares them with a NumPy reference and with ptxasw's CPU interpreter
   running the same PTX on the same inputs: the interpreter must match the
   GPU bit for bit, which is what CI relies on when it has no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "examples" / "jacobi.cu"
KERNEL = "_Z8jacobi2dPKfPfii"
NX, NY = 333, 177
BLOCK = (32, 8, 1)


def reference(grid: np.ndarray) -> np.ndarray:
    """The Jacobi sweep in NumPy, with the kernel's order of float operations."""
    out = np.zeros_like(grid)
    c = grid[1:-1, 1:-1]
    s = (((c + grid[1:-1, :-2]) + grid[1:-1, 2:]) + grid[:-2, 1:-1]) + grid[2:, 1:-1]
    out[1:-1, 1:-1] = np.float32(0.2) * s
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))


def build(nvcc: str, work: Path, name: str, env: dict[str, str], kind: str) -> Path:
    out = work / f"{name}.{kind}"
    cmd = [nvcc, "-arch=sm_90", "-O3", f"-{kind}", str(SOURCE), "-o", str(out)]
    subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    return out


def run_gpu(cubin: Path, grid: np.ndarray) -> np.ndarray:
    import cupy as cp

    module = cp.RawModule(path=str(cubin))
    kernel = module.get_function(KERNEL)
    src = cp.asarray(grid)
    dst = cp.zeros_like(src)
    blocks = ((NX + BLOCK[0] - 1) // BLOCK[0], (NY + BLOCK[1] - 1) // BLOCK[1], 1)
    kernel(blocks, BLOCK, (src, dst, np.int32(NX), np.int32(NY)))
    cp.cuda.runtime.deviceSynchronize()
    return cp.asnumpy(dst)


def run_interpreter(ptx: Path, grid: np.ndarray) -> np.ndarray:
    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.parser import parse_file

    out = np.zeros_like(grid)
    blocks = ((NX + BLOCK[0] - 1) // BLOCK[0], (NY + BLOCK[1] - 1) // BLOCK[1], 1)
    launch(parse_file(ptx), KERNEL, blocks, BLOCK, [grid.copy(), out, np.int32(NX), np.int32(NY)])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("gpu_dropin: error: nvcc not found", file=sys.stderr)
        return 2
    import cupy as cp

    from ptxasw.driver.toolkit import create_shadow_toolkit

    rng = np.random.default_rng(7)
    grid = rng.standard_normal((NY, NX)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="ptxasw-gpu-") as tmp:
        work = Path(tmp)
        shadow = create_shadow_toolkit(work / "shadow", None)
        log = work / "log.jsonl"
        env = {**os.environ, "PTXASW_LOG": str(log), "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))}
        wrapped = build(str(shadow / "bin" / "nvcc"), work, "wrapped", env, "cubin")
        plain = build(nvcc, work, "plain", dict(os.environ), "cubin")
        ptx = build(nvcc, work, "plain", dict(os.environ), "ptx")
        records = [json.loads(line) for line in log.read_text().splitlines()]
        identical = wrapped.read_bytes() == plain.read_bytes()
        gpu_wrapped = run_gpu(wrapped, grid)
        gpu_plain = run_gpu(plain, grid)
        cpu = run_interpreter(ptx, grid)
    expected = reference(grid)
    result = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "wrapper_runs": len(records),
        "wrapper_status": sorted({r["status"] for r in records}),
        "wrapper_passes": [p["name"] for p in records[-1]["inputs"][0]["passes"]] if records else [],
        "cubins_identical": identical,
        "gpu_wrapped_equals_gpu_plain": bool(
            np.array_equal(gpu_wrapped.view(np.uint32), gpu_plain.view(np.uint32))
        ),
        "gpu_equals_numpy_reference": bool(np.array_equal(gpu_plain, expected)),
        "interpreter_equals_gpu_bitwise": bool(
            np.array_equal(cpu.view(np.uint32), gpu_plain.view(np.uint32))
        ),
        "size": [NX, NY],
    }
    text = json.dumps(result, indent=2)
    if ns.out:
        ns.out.write_text(text + "\n")
    print(text)
    ok = (
        result["wrapper_status"] == ["ok"]
        and result["gpu_wrapped_equals_gpu_plain"]
        and result["gpu_equals_numpy_reference"]
        and result["interpreter_equals_gpu_bitwise"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
