"""Run lifted kernels on the host: compile (cached), encode arguments, launch a grid.

`launch_lifted` mirrors the interpreter's `launch`: array arguments become
device buffers (here: host copies whose addresses the kernel receives) that
are copied back into writable arrays and returned in ``buffers``; scalars
are encoded as the parameter's PTX type; ``bytes`` fill aggregate
parameters. So one test or one ``ptxasw run --engine`` compares the two
engines with the same arguments.

The grid is cut into chunks of ``WG_PACK`` blocks along x (times every
y and z); the chunks are split evenly between ``threads`` host threads, each
making one ctypes call into the lifted ``KERNEL.range`` function (ctypes
releases the GIL, so the threads run in parallel), each with its own shared
memory window.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.encoding import encode_scalar
from ptxasw.errors import EmulationError, PtxError
from ptxasw.pirch_bridge.jit import compile_ir
from ptxasw.pirch_bridge.lift import TRAP_FLAG, LiftedKernel, choose_kernel, lift_kernel, register_pressure

__all__ = [
    "ENGINES",
    "LiftedLaunch",
    "Loaded",
    "compile_lifted",
    "default_pack",
    "launch_lifted",
    "run_lifted",
]

#: ``ptxasw run --engine`` names of the lifted engines, and the back end that builds each.
ENGINES = ("llvm", "avx512", "ve-emulated")

_RANGE_FN = ctypes.CFUNCTYPE(
    None,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint32,
    ctypes.c_uint64,
    ctypes.c_uint64,
    ctypes.c_uint32,
    ctypes.c_uint32,
    ctypes.c_uint32,
)


@dataclass
class LiftedLaunch:
    """What a launch of a lifted kernel produced (as `LaunchResult` for the interpreter)."""

    buffers: list[np.ndarray | None]
    seconds: float = 0.0
    compile_seconds: float = 0.0
    kernel_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    printf: list[str] = field(default_factory=list)


class Loaded(Protocol):
    """A lifted kernel compiled and loaded into this process, whatever built it.

    The entry ``KERNEL.range`` has the signature of `_RANGE_FN`; module
    variables (``.global``/``.const`` with initial values) are found by name
    so each launch can reset them."""

    def address(self, name: str) -> int: ...

    def global_address(self, name: str) -> int: ...


def compile_lifted(lifted: LiftedKernel, engine: str = "llvm") -> Loaded:
    """The lifted kernel built by ``engine`` (`ENGINES`) for this host, cached by content."""
    if engine == "llvm":
        return compile_ir(lifted.for_host().ir_text)
    if engine == "avx512":
        from ptxasw.pirch_bridge.backends.avx512 import load

        return load(lifted.for_host())
    if engine == "ve-emulated":
        from ptxasw.pirch_bridge.backends.ve import load_emulated

        return load_emulated(lifted)
    raise PtxError(f"unknown engine {engine!r} (use one of {', '.join(ENGINES)})")


def _dims(value: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    dims = [value] if isinstance(value, int) else [int(v) for v in value]
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise PtxError(f"{what} must have 1 to 3 positive dimensions, got {value!r}")
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


def _encode(
    lifted: LiftedKernel, args: Sequence[object], inplace: bool = False
) -> tuple[bytearray, list[tuple[int, np.ndarray, np.ndarray]]]:
    """The parameter bytes; arrays are copied to buffers the kernel gets the address of
    (``inplace``: writable C-contiguous arrays are used as they are)."""
    fn = lifted.kernel
    if len(args) != len(fn.params):
        raise PtxError(f"kernel {fn.name} takes {len(fn.params)} parameters, got {len(args)} arguments")
    raw = bytearray(lifted.param_size)
    copies: list[tuple[int, np.ndarray, np.ndarray]] = []
    by_id: dict[int, np.ndarray] = {}
    for i, (spec, arg) in enumerate(zip(fn.params, args, strict=True)):
        off, size = lifted.param_layout[spec.name]
        if isinstance(arg, np.ndarray):
            if size != 8:
                raise PtxError(
                    f"parameter {i} ({spec.name}, {spec.type}) is not a 64-bit pointer, got an array"
                )
            buf = by_id.get(id(arg))
            if buf is None and inplace and _usable_in_place(arg):
                buf = by_id[id(arg)] = arg
            elif buf is None:  # the same array twice: one buffer, as the interpreter aliases it
                buf = by_id[id(arg)] = np.array(arg, copy=True, order="C")
            copies.append((i, arg, buf))
            encoded = int(buf.ctypes.data).to_bytes(8, "little")
        elif isinstance(arg, (bytes, bytearray, np.void)):
            encoded = bytes(arg)
            if len(encoded) != size:
                raise PtxError(f"parameter {i} ({spec.name}) is {size} bytes, got {len(encoded)}")
        elif (
            isinstance(arg, np.generic)
            and arg.dtype.itemsize == size
            and _is_float(spec) == (arg.dtype.kind == "f")
        ):
            encoded = arg.tobytes()
        elif isinstance(arg, (bool, int, float, np.generic)):
            value = arg.item() if isinstance(arg, np.generic) else arg
            if isinstance(value, float) and not _is_float(spec):
                raise PtxError(f"parameter {i} ({spec.name}) is {spec.type}; got the float {value}")
            encoded = encode_scalar(value, spec.type)[:size].ljust(size, b"\0")
        else:
            raise PtxError(f"parameter {i} ({spec.name}): unsupported argument type {type(arg).__name__}")
        raw[off : off + len(encoded)] = encoded
    return raw, copies


def _raise_if_trapped(lifted: LiftedKernel, compiled: Loaded) -> None:
    """A ``trap`` ran: the launch fails as the interpreter's does (the outputs are
    whatever the threads wrote before it)."""
    if not lifted.traps:
        return
    number = ctypes.c_uint32.from_address(compiled.global_address(TRAP_FLAG)).value
    if number:
        raise EmulationError("trap executed", lifted.traps[number - 1])


def _usable_in_place(arr: np.ndarray) -> bool:
    """Whether the kernel may work on ``arr``'s own memory: the layout it assumes, and
    writable (a read-only array may be a mapped file the kernel must not write)."""
    flags = arr.flags
    return bool(flags.c_contiguous and flags.aligned and flags.writeable and arr.dtype.isnative)


def _is_float(spec: ir.ParamSpec) -> bool:
    return spec.type.startswith((".f", ".bf"))


def launch_lifted(
    lifted: LiftedKernel,
    grid: Sequence[int] | int,
    block: Sequence[int] | int,
    args: Sequence[object],
    shared_bytes: int = 0,
    *,
    threads: int | None = None,
    engine: str = "llvm",
    inplace: bool = False,
) -> LiftedLaunch:
    """Run a lifted kernel over ``grid`` blocks of ``block`` (its `LiftedKernel.block`) threads,
    built by ``engine`` (`ENGINES`).

    By default every array is copied in and out, as the interpreter does, so
    the two engines compare on equal terms. ``inplace=True`` is how a program
    uses a native kernel: writable C-contiguous arrays are the kernel's memory
    (no copies; ``buffers`` holds the arrays themselves), others are copied."""
    g = _dims(grid, "grid")
    blk = _dims(block, "block")
    if blk != lifted.block:
        raise PtxError(f"kernel {lifted.function} was lifted for blocks of {lifted.block} threads, got {blk}")
    if shared_bytes and not lifted.dynamic_shared:
        shared_bytes = 0  # the interpreter also accepts dynamic shared memory nobody declares
    if engine in ("llvm", "avx512"):
        lifted = lifted.for_host()  # what they compile: its traps and variables, too
    started = time.perf_counter()
    compiled = compile_lifted(lifted, engine)
    compiled_at = time.perf_counter()
    raw, copies = _encode(lifted, args, inplace)
    params = (ctypes.c_uint8 * max(len(raw), 1)).from_buffer(raw)
    stride = (lifted.shared_size + shared_bytes + 15) // 16 * 16
    pack = lifted.wg_pack
    chunks = -(-g[0] // pack) * g[1] * g[2]
    nthreads = max(1, min(threads or os.cpu_count() or 1, chunks))
    fn = _RANGE_FN(compiled.address(f"{lifted.function}.range"))
    for name, data in lifted.variables.items():  # every launch starts from the initial values
        ctypes.memmove(compiled.global_address(name), data, len(data))
    windows = [np.zeros(max(stride * pack, 16), dtype=np.uint8) for _ in range(nthreads)]
    bounds = [chunks * t // nthreads for t in range(nthreads + 1)]

    def work(t: int) -> None:
        p = ctypes.addressof(params)
        fn(p, windows[t].ctypes.data, stride, bounds[t], bounds[t + 1], g[0], g[1], g[2])

    kernel_start = time.perf_counter()
    if nthreads == 1:
        work(0)
    else:
        with ThreadPoolExecutor(nthreads) as pool:
            list(pool.map(work, range(nthreads)))
    kernel_end = time.perf_counter()
    _raise_if_trapped(lifted, compiled)
    buffers: list[np.ndarray | None] = [None] * len(args)
    for i, arr, buf in copies:
        buffers[i] = buf  # our private copy (or, in place, the array itself)
        if buf is not arr and arr.flags.writeable:
            arr[...] = buf
    done = time.perf_counter()
    return LiftedLaunch(
        buffers=buffers,
        seconds=done - compiled_at,
        compile_seconds=compiled_at - started,
        kernel_seconds=kernel_end - kernel_start,
    )


def default_pack(module: ir.Module, kernel: str, block: Sequence[int] | int) -> int:
    """Blocks per call that fill one 512-bit vector with the kernel's floats: 16
    lanes, or 8 when it computes in ``.f64`` (more lanes only add register
    pressure: a batched kernel keeps whole rows in registers). An ``.f64`` kernel
    whose blocks keep few registers live (`register_pressure` at most
    `_ROOMY` at 16 lanes) gets 16 lanes: two vectors per operation amortise its
    branches and per-operation NaN tests (ldu and trsv at WG 8 run 1.1-1.6x faster;
    gemm, whose rows fill the registers, and gema do not gain)."""
    blk = _dims(block, "block")
    threads = blk[0] * blk[1] * blk[2]
    fn = choose_kernel(module, kernel)
    wide = any(decl.type == ".f64" for decl in fn.declarations(".reg"))
    pack = max(1, (8 if wide else 16) // threads)
    roomy = (
        wide
        and pack * threads * 2 <= 16
        and not any(i.opcode == "call" for i in fn.instructions())  # inlined calls: not estimated
        and register_pressure(module, kernel, blk, pack * 2) <= _ROOMY
    )
    return pack * 2 if roomy else pack


_ROOMY = 28
"""512-bit registers a kernel may keep live (an upper bound) and still get 16 ``.f64`` lanes."""


def run_lifted(
    module: ir.Module,
    kernel: str,
    grid: Sequence[int] | int,
    block: Sequence[int] | int,
    args: Sequence[object],
    shared_bytes: int = 0,
    *,
    wg_pack: int | None = None,
    threads: int | None = None,
    engine: str = "llvm",
    inplace: bool = False,
) -> LiftedLaunch:
    """Lift ``kernel`` for the launch's block shape and run it with ``engine``
    (the ``ptxasw run --engine`` path); ``wg_pack`` defaults to `default_pack`."""
    blk = _dims(block, "block")
    pack = wg_pack if wg_pack is not None else default_pack(module, kernel, blk)
    lifted = lift_kernel(module, kernel, wg_pack=pack, block=blk)
    return launch_lifted(
        lifted, grid, blk, args, shared_bytes, threads=threads, engine=engine, inplace=inplace
    )
