"""The speed references of borG's batched kernels: plain C (gcc + OpenMP) and OpenCL C (PoCL).

Both take the CUDA kernel's arguments, as `suite.Kernel.make_args` makes
them, and update the output arrays in place, so the benchmark checks every
version against the same NumPy reference before it times anything.

* `CReference`: ``ref_c/KERNEL.c`` built with ``gcc -O3 -march=native
  -fopenmp`` for one precision and WG_SIZE (cached by content, like the PTX),
  loaded with ctypes; ``run`` returns the seconds the C code measured itself.
* `OpenCLReference`: ``ref_opencl/borg.cl`` on the first OpenCL device (PoCL
  here) through pyopencl; ``run`` copies fresh inputs into device buffers
  (untimed) and times the kernel from enqueue to completion. PoCL reads
  ``POCL_MAX_PTHREAD_COUNT`` when the platform is first opened: set it
  (`set_pocl_threads`) before anything touches OpenCL to give it as many
  threads as the others.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import time
from functools import cache
from pathlib import Path

import numpy as np

from benchmarks.pirch.suite import HERE, Args, Kernel, cache_dir

C_DIR = HERE / "ref_c"
OPENCL_SOURCE = HERE / "ref_opencl" / "borg.cl"
GCC_FLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared")
C_TYPES = {"float32": "float", "float64": "double"}


class ReferenceUnavailable(RuntimeError):
    """A reference cannot be built or run here (no gcc, no OpenCL platform)."""


def _ctype(value: object) -> object:
    if isinstance(value, np.ndarray):
        return ctypes.c_void_p(value.ctypes.data)
    return {
        np.dtype(np.float32): ctypes.c_float,
        np.dtype(np.float64): ctypes.c_double,
        np.dtype(np.int32): ctypes.c_int32,
        np.dtype(np.uint32): ctypes.c_uint32,
    }[np.asarray(value).dtype](value)


# --------------------------------------------------------------------------
# gcc


def build_c(kernel: Kernel, wg: int) -> Path:
    """The shared object of ``ref_c/BASE.c`` for the kernel's precision and ``wg`` (cached)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ReferenceUnavailable("gcc not found")
    source = C_DIR / f"{kernel.base}.c"
    flags = [*GCC_FLAGS, f"-DREAL={C_TYPES[kernel.dtype.name]}", f"-DWG_SIZE={wg}"]
    digest = hashlib.sha256(source.read_bytes() + (C_DIR / "ref.h").read_bytes() + " ".join(flags).encode())
    out = cache_dir() / f"ref_c-{kernel.name}-wg{wg}-{digest.hexdigest()[:16]}.so"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run(
            [gcc, *flags, str(source), "-o", str(tmp), "-lm"], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise ReferenceUnavailable(f"gcc failed on {source.name}:\n{proc.stderr}")
        tmp.replace(out)
    return out


class CReference:
    """``double run(long batch, <kernel arguments>, int threads)`` of one built C reference."""

    def __init__(self, kernel: Kernel, wg: int) -> None:
        self.kernel, self.wg = kernel, wg
        self._run = ctypes.CDLL(str(build_c(kernel, wg))).run
        self._run.restype = ctypes.c_double

    def run(self, args: Args, threads: int) -> float:
        """Process the batch in place on ``args``; the seconds the C code measured."""
        batch = next(a.shape[0] for a in args if isinstance(a, np.ndarray))
        return float(self._run(ctypes.c_long(batch), *map(_ctype, args), ctypes.c_int(threads)))


# --------------------------------------------------------------------------
# OpenCL


def set_pocl_threads(threads: int) -> None:
    """Give PoCL's pthread device ``threads`` threads (only before OpenCL is first used)."""
    os.environ["POCL_MAX_PTHREAD_COUNT"] = str(threads)


@cache
def _context() -> tuple[object, object]:
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise ReferenceUnavailable("pyopencl is not installed") from exc
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as exc:
        raise ReferenceUnavailable(f"no OpenCL platform: {exc}") from exc
    if not devices:
        raise ReferenceUnavailable("no OpenCL device")
    context = cl.Context([devices[0]])
    return context, cl.CommandQueue(context)


def opencl_device() -> str:
    context, _ = _context()
    return context.devices[0].name  # type: ignore[attr-defined]


@cache
def _program(real: str, wg: int) -> object:
    import pyopencl as cl

    context, _ = _context()
    return cl.Program(context, OPENCL_SOURCE.read_text()).build(options=f"-DREAL={real} -DWG_SIZE={wg}")


class OpenCLReference:
    """One kernel of ``borg.cl`` for one precision and WG_SIZE, with device buffers for one batch."""

    def __init__(self, kernel: Kernel, wg: int) -> None:
        self.context, self.queue = _context()  # ReferenceUnavailable without pyopencl or a platform
        import pyopencl as cl

        self.cl = cl
        self.kernel, self.wg = kernel, wg
        self._kernel = getattr(_program(C_TYPES[kernel.dtype.name], wg), kernel.base)
        self._buffers: list[tuple[object, object]] = []  # (pristine, working) per array argument
        self._args: Args = []

    def load(self, args: Args) -> None:
        """Copy the batch's arrays to the device (once; `run` starts from these every time)."""
        cl = self.cl
        self._args = args
        self._buffers = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
                pristine = cl.Buffer(self.context, flags, hostbuf=arg)
                working = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=arg.nbytes)
                self._buffers.append((pristine, working))

    def run(self) -> float:
        """Launch over the loaded batch from fresh inputs; the seconds from enqueue to completion."""
        cl = self.cl
        for (pristine, working), arr in zip(self._buffers, self._arrays(), strict=True):
            cl.enqueue_copy(self.queue, working, pristine, byte_count=arr.nbytes)
        self.queue.finish()
        values = []
        buffers = iter(self._buffers)
        for arg in self._args:
            values.append(next(buffers)[1] if isinstance(arg, np.ndarray) else arg)
        batch = self._arrays()[0].shape[0]
        start = time.perf_counter()
        self._kernel(self.queue, (batch * self.wg,), (self.wg,), *values)
        self.queue.finish()
        return time.perf_counter() - start

    def outputs(self) -> list[np.ndarray]:
        """The output arguments after the last `run`."""
        positions = [i for i, a in enumerate(self._args) if isinstance(a, np.ndarray)]
        results = []
        for index in self.kernel.outputs:
            out = np.empty_like(self._args[index])
            self.cl.enqueue_copy(self.queue, out, self._buffers[positions.index(index)][1])
            results.append(out)
        self.queue.finish()
        return results

    def _arrays(self) -> list[np.ndarray]:
        return [a for a in self._args if isinstance(a, np.ndarray)]
