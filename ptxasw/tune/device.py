"""The GPU that ``ptxasw tune`` measures on, behind a protocol small enough to fake.

A `Device` loads a cubin, runs a kernel once on fresh copies of the inputs
(for the bit-for-bit check) and times several kernels interleaved. The real
one is `CupyDevice`; CuPy is an optional dependency (the ``gpu`` extra),
imported only here and only when a GPU is asked for, so that everything else
of ptxasw, CI included, runs without it.

How the time is taken, and why:

* a sample is ``reps`` back-to-back launches between two CUDA events, with
  ``reps`` chosen so that a sample lasts at least `MIN_SAMPLE_MS`: launch
  overhead and the events' resolution (about half a microsecond) then do not
  count, even for kernels that run for microseconds;
* the launches of a sample are captured once as a CUDA graph where the
  driver allows it (plain launches otherwise), so the CPU's launch rate does
  not limit short kernels;
* the variants are sampled round-robin, one sample of each per round, so
  clock and temperature drift hit them alike; the verdict uses the median.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = ["MIN_SAMPLE_MS", "CupyDevice", "Device", "DeviceError", "open_gpu"]

#: A timed sample lasts at least this long (see the module doc).
MIN_SAMPLE_MS = 0.5
MAX_REPS = 256

Value = np.ndarray | np.generic
Dims = tuple[int, int, int]


class DeviceError(Exception):
    """No usable GPU (no CuPy, no device, a launch that failed): one line for the user."""


class Device(Protocol):
    """What ``ptxasw tune`` needs of a GPU."""

    name: str

    def load(self, cubin: Path, symbol: str) -> Any:
        """The kernel ``symbol`` of the cubin at ``cubin``, ready to launch."""
        ...

    def run(self, kernel: Any, grid: Dims, block: Dims, args: Sequence[Value]) -> list[np.ndarray | None]:
        """One launch on fresh device copies of ``args``; each array argument as
        it is afterwards (None for scalars)."""
        ...

    def time(
        self,
        kernels: Mapping[str, Any],
        grid: Dims,
        block: Dims,
        args: Sequence[Value],
        runs: int,
        warmup: int,
    ) -> dict[str, list[float]]:
        """Milliseconds per launch of each kernel: ``runs`` samples, taken
        interleaved after ``warmup`` untimed ones."""
        ...


def open_gpu() -> CupyDevice:
    """The first CUDA device through CuPy; `DeviceError` when there is none."""
    try:
        import cupy
    except ImportError:
        raise DeviceError(
            "ptxasw tune needs CuPy to run kernels on the GPU (pip install 'ptxasw[gpu]')"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver, among others
        raise DeviceError(f"no CUDA device: {_one_line(exc)}") from None
    if count < 1:
        raise DeviceError("no CUDA device")
    return CupyDevice(cupy)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class CupyDevice:
    """A GPU through CuPy: modules from cubin files, samples timed with CUDA events."""

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        # Everything on one stream: every step is ordered after the one before.
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.timing = "cuda-graph"
        self._modules: list[Any] = []

    def load(self, cubin: Path, symbol: str) -> Any:
        try:
            module = self.cp.RawModule(path=str(cubin))
            kernel = module.get_function(symbol)
        except Exception as exc:
            raise DeviceError(f"{cubin}: cannot load {symbol}: {_one_line(exc)}") from None
        self._modules.append(module)  # the kernel is valid only while its module lives
        return kernel

    def _upload(self, args: Sequence[Value]) -> list[Any]:
        with self.stream:
            dev = [self.cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        self.stream.synchronize()
        return dev

    def _launch(self, kernel: Any, grid: Dims, block: Dims, dev: Sequence[Any]) -> None:
        with self.stream:
            kernel(grid, block, tuple(dev))

    def run(self, kernel: Any, grid: Dims, block: Dims, args: Sequence[Value]) -> list[np.ndarray | None]:
        dev = self._upload(args)
        try:
            self._launch(kernel, grid, block, dev)
            self.stream.synchronize()
            return [
                self.cp.asnumpy(d, stream=self.stream) if isinstance(d, self.cp.ndarray) else None
                for d in dev
            ]
        except Exception as exc:
            raise DeviceError(f"launch failed: {_one_line(exc)}") from None
        finally:
            del dev
            self.cp.get_default_memory_pool().free_all_blocks()

    def time(
        self,
        kernels: Mapping[str, Any],
        grid: Dims,
        block: Dims,
        args: Sequence[Value],
        runs: int,
        warmup: int,
    ) -> dict[str, list[float]]:
        dev = self._upload(args)
        try:
            single = {name: self._batch(k, grid, block, dev, 1) for name, k in kernels.items()}
            for enqueue in single.values():  # module load, caches, clocks
                for _ in range(max(1, warmup)):
                    self._elapsed(enqueue)
            fastest = min(self._elapsed(e) for e in single.values())
            reps = max(1, min(MAX_REPS, math.ceil(MIN_SAMPLE_MS / max(fastest, 1e-4))))
            batches = {name: self._batch(k, grid, block, dev, reps) for name, k in kernels.items()}
            for _ in range(max(1, warmup)):
                for enqueue in batches.values():
                    self._elapsed(enqueue)
            samples: dict[str, list[float]] = {name: [] for name in kernels}
            for _ in range(runs):
                for name, enqueue in batches.items():
                    samples[name].append(self._elapsed(enqueue) / reps)
            return samples
        except DeviceError:
            raise
        except Exception as exc:
            raise DeviceError(f"timing failed: {_one_line(exc)}") from None
        finally:
            del dev
            self.cp.get_default_memory_pool().free_all_blocks()

    def _batch(
        self, kernel: Any, grid: Dims, block: Dims, dev: Sequence[Any], reps: int
    ) -> Callable[[], None]:
        """Something that enqueues ``reps`` launches: a CUDA graph when capture works."""
        stream = self.stream
        if self.timing == "cuda-graph":
            try:
                stream.begin_capture()
                try:
                    for _ in range(reps):
                        self._launch(kernel, grid, block, dev)
                finally:
                    graph = stream.end_capture()
                return lambda: graph.launch(stream)
            except Exception:  # capture unsupported: time plain launches instead
                self.timing = "launches"
                self.cp.cuda.runtime.deviceSynchronize()

        def enqueue() -> None:
            for _ in range(reps):
                self._launch(kernel, grid, block, dev)

        return enqueue

    def _elapsed(self, enqueue: Callable[[], None]) -> float:
        start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record(self.stream)
        enqueue()
        stop.record(self.stream)
        stop.synchronize()
        return float(self.cp.cuda.get_elapsed_time(start, stop))
