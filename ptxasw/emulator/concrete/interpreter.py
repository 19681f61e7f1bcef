"""The concrete reference interpreter: run a PTX kernel for a whole grid on the CPU.

`launch` does what a CUDA launch does, on NumPy buffers: array arguments are
copied into a simulated global memory and back, scalars are passed by their
PTX parameter type, and every CTA of the grid runs to completion. The tests
compare what comes back with NumPy references, so this file is where "the
PTX means what we think it means" is checked without a GPU.

Execution model
---------------
* **Warps.** A CTA's threads are cut into warps of 32 lanes in thread-index
  order (x fastest); the last warp may be partial and its missing lanes never
  run. A warp executes one instruction for all its active lanes at once: the
  instruction semantics (`Semantics`, shared with the symbolic executor) run
  over `ConcreteDomain` values, one ``uint64`` per lane.
* **Divergence.** Each call frame of a warp has a SIMT reconvergence stack of
  ``(pc, mask, reconvergence pc)`` entries. A guarded ``bra`` whose lanes
  disagree parks the current entry at the branch block's immediate
  post-dominator (`CFG.reconvergence_point`) and pushes one entry per side;
  an entry is popped when it reaches its reconvergence pc or runs out of
  lanes. ``brx.idx`` and calls through function pointers split the same way
  per distinct target. ``ret``/``exit`` retire lanes (from every entry, so they
  never come back at a join). Loops need nothing special: lanes that leave
  early wait at the loop's post-dominator for the others. As ptxas does, a
  ``bra`` to a block that starts with ``ret``/``exit`` retires its lanes on
  the spot, and post-dominators are then computed without those edges, so
  an early ``return`` inside a loop does not keep the other lanes apart
  after the loop (``__activemask()`` there agrees with an H200).
* **CTAs and barriers.** CTAs run one after another, so threads of different
  CTAs can only communicate through atomics (as CUDA guarantees anyway).
  Within a CTA, warps are scheduled round-robin, each for a time slice
  (``quantum`` warp-instructions) or until it reaches ``bar.sync``; a barrier
  releases once every warp that still has live lanes arrived (or the thread
  count of ``bar.sync a, b``). Arrival is per warp (the pre-Volta rule): a
  barrier inside code where the warp is diverged counts the warp when its
  first path gets there.
* **Calls.** ``call`` of a ``.func`` in the module pushes a frame: fresh
  registers, its own ``.param`` space (the caller's ``param0``... bytes copied
  into the callee's parameters, ``func_retval0`` copied back into the caller's
  ``retval0``), and a local depot on the thread's local stack, so recursion
  works. ``vprintf`` is captured (`LaunchResult.printf`), ``__assertfail``
  raises `EmulationError`, ``malloc``/``free`` use the global heap.
* **Memory.** See `ptxasw.emulator.concrete.memory` for the address windows: a generic
  address names its space, ``cvta`` adds or removes the window base and
  ``isspacep`` tests it (the semantics call the machine's `convert_address`
  and `in_space` hooks for them: only the executor knows the address map). Every access is bounds- and
  alignment-checked; a fault raises `EmulationError` at the instruction's
  ``file:line:col``. Shared memory is zeroed for each CTA, local memory too.
* **Warp-collective and atomic operations** implement `Machine.warp` and
  `Machine.atomic`. Atomics execute lane by lane in increasing lane order and
  warp by warp in scheduling order, which makes every run deterministic (float
  atomics included).
* **What is not modelled** (texture, surface, tensor-core and asynchronous
  bulk instructions...) is reported once per instruction in
  `LaunchResult.warnings`, and its results are zeros. Registers read before
  any write are zero too.
* **Budget.** ``max_steps`` bounds the warp-instructions of a launch, so a
  kernel that never terminates fails with "step budget exceeded" instead of
  hanging.

Speed: one `WarpMachine` (and one `Semantics`) serves every warp of a launch
and is re-bound to the warp being run, so whatever the semantics caches per
instruction is shared; the CFG and the decoded form of each instruction are
computed once per function (`Program`), and a launch of the same module object
reuses them.

This module is the executor: the launch, the CTA scheduler and barriers, the
SIMT stacks, calls, and the `WarpMachine` the semantics run on. What it runs
is prepared elsewhere: `ptxasw.emulator.concrete.program` (variable layout, function
addresses) and `ptxasw.emulator.concrete.decode` (each function's code); the
warp-collective operations and the atomics' arithmetic are in
`ptxasw.emulator.semantics.collectives` (shared with the symbolic executor),
atomics' lane order in `ptxasw.emulator.concrete.atomics` and ``printf`` in
`ptxasw.emulator.concrete.printf`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.atomics import WordUpdate, apply_in_lane_order, atomic_words, scannable
from ptxasw.emulator.concrete.decode import (
    BAR_ARRIVE,
    BAR_RED,
    BRA,
    BRA_RET,
    BRX,
    CALL,
    CTARANK,
    EXEC,
    EXIT,
    MAPA,
    NOP,
    RET,
    TRAP,
    UNSUPPORTED,
    Call,
    DecodedFunction,
    Op,
    intern,
)
from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.concrete.encoding import encode_scalar
from ptxasw.emulator.concrete.lanes import (
    FULL_MASK,
    LANE_IDS,
    LANE_INTS,
    LANES,
    lane_bits,
    mask_array,
    to_mask,
    uniform,
    width_mask,
)
from ptxasw.emulator.concrete.memory import (
    GENERIC_BASE,
    LOCAL_STRIDE,
    LOCAL_WINDOW,
    SPACE_WINDOW,
    WINDOW_SHIFT,
    FlatMemory,
    GlobalMemory,
    LaneMemory,
    dtype_for,
    fault,
    window_of,
)
from ptxasw.emulator.concrete.printf import FORMAT_RE, PrintfRecord, format_printf, printf_arg_bytes
from ptxasw.emulator.concrete.program import Program, global_name
from ptxasw.emulator.semantics.collectives import bar_reduce, warp_collective
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.errors import EmulationError, PtxError, UnsupportedInstruction
from ptxasw.ir import isa
from ptxasw.ir.layout import bits_of, normalize_space, round_up

__all__ = [
    "EmulationError",
    "LaunchResult",
    "PrintfRecord",
    "Program",
    "WarpMachine",
    "launch",
]

DEFAULT_MAX_STEPS = 50_000_000
DEFAULT_QUANTUM = 20_000
MAX_CALL_DEPTH = 2048
MAX_LOCAL_BYTES = 1 << 30  # local memory of all threads of a CTA together

_U64_MAX = (1 << 64) - 1


# --------------------------------------------------------------------------
# Results


@dataclass
class LaunchResult:
    """What a launch produced.

    ``buffers`` is parallel to the launch's ``args``: the final contents of
    each array argument (same dtype and shape), None for scalars. (Writable
    array arguments are also updated in place.) ``printf`` holds one string
    per device ``printf`` call in execution order (warps in scheduling order,
    lanes in lane order), with one trailing newline removed. ``globals`` holds
    the final bytes of the module's ``.global`` variables. ``steps`` counts
    warp-instructions.
    """

    buffers: list[np.ndarray | None]
    printf: list[str] = field(default_factory=list)
    printf_records: list[PrintfRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    globals: dict[str, np.ndarray] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------
# Run-time state


class _Entry:
    """One SIMT stack entry: lanes ``mask`` run from ``pc`` until ``rpc``."""

    __slots__ = ("mask", "pc", "rpc")

    def __init__(self, pc: int, mask: int, rpc: int) -> None:
        self.pc = pc
        self.mask = mask
        self.rpc = rpc


class _Frame:
    """One activation of a function in one warp."""

    __slots__ = (
        "call_op",
        "code",
        "info",
        "local_base",
        "local_top",
        "param",
        "regs",
        "returned",
        "stack",
        "sym_cache",
    )

    def __init__(self, info: DecodedFunction, mask: int, local_base: int, call_op: Op | None) -> None:
        self.info = info
        self.code = info.code
        self.regs: dict[str, Bits] = {}
        self.stack = [_Entry(0, mask, -1)]
        self.param = LaneMemory(LANES, info.param_size, ".param")
        self.local_base = local_base
        self.local_top = local_base + info.local_size
        self.returned = 0
        self.call_op = call_op
        self.sym_cache: dict[tuple[str, int], Bits] = {}


class _Warp:
    """A warp of a CTA: its frames (call stack), live lanes and special registers."""

    __slots__ = ("bar_red", "done", "frames", "full", "index", "live", "rows", "specials", "waiting")

    def __init__(self, index: int, nlanes: int) -> None:
        self.index = index
        self.full = (1 << nlanes) - 1
        self.live = self.full
        self.frames: list[_Frame] = []
        self.specials: dict[tuple[str, str | None], Bits] = {}
        self.rows = np.arange(index * LANES, (index + 1) * LANES, dtype=np.int64)
        self.waiting: object | None = None
        self.done = False
        self.bar_red: tuple[Op, int, int] | None = None


@dataclass(slots=True)
class _Cta:
    ctaid: tuple[int, int, int]
    shared: FlatMemory
    local: LaneMemory
    warps: list[_Warp]
    waiting: dict[object, list[_Warp]] = field(default_factory=dict)
    arrived: dict[object, int] = field(default_factory=dict)
    expected: dict[object, int] = field(default_factory=dict)


# --------------------------------------------------------------------------
# The machine the semantics run on


class WarpMachine:
    """`Machine` over `ConcreteDomain`: the state of the warp being run.

    One instance serves a whole launch; the interpreter binds it to a warp
    (and frame) before running it, so ``regs`` and the active mask are those
    of that warp. Register writes only change active lanes; memory operations
    only touch lanes that are active and whose guard holds.
    """

    def __init__(self, launch: _Launch) -> None:
        self.dom = ConcreteDomain(LANES)
        self.launch = launch
        self.current: _Warp | None = None
        self.frame: _Frame | None = None
        self.regs: dict[str, Bits] = {}
        self.mask = 0
        self.full = FULL_MASK
        self.active = mask_array(0)
        self.inst: ir.Instruction | None = None

    # ---- binding -------------------------------------------------------------

    def bind(self, warp: _Warp) -> None:
        self.current = warp
        self.full = warp.full
        self.bind_frame(warp.frames[-1])

    def bind_frame(self, frame: _Frame) -> None:
        self.frame = frame
        self.regs = frame.regs

    def set_mask(self, mask: int) -> None:
        self.mask = mask
        self.active = mask_array(mask)

    # ---- registers ---------------------------------------------------------------

    def read(self, reg: ir.Register, width: int) -> Bits:
        value = self.regs.get(reg.name)
        if value is None or reg.selector is not None:
            value = self._read_other(reg, width)
        if value.width != width:
            if value.width > width:
                return Bits(value.data & np.uint64(width_mask(width)), width)
            return Bits(value.data, width)
        return value

    def _read_other(self, reg: ir.Register, width: int) -> Bits:
        assert self.current is not None
        special = self.current.specials.get((reg.name, reg.selector))
        if special is not None:
            return special
        if reg.name in _CLOCKS:
            return self.launch.clock(reg.name)
        if reg.selector is not None:
            value = self.regs.get(f"{reg.name}.{reg.selector}")
            if value is not None:
                return value
        elif reg.name in self.regs:
            return self.regs[reg.name]
        return Bits(np.zeros(LANES, dtype=np.uint64), width)

    def write(self, reg: ir.Register, value: Bits) -> None:
        key = reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"
        if self.mask == self.full:
            self.regs[key] = value
            return
        old = self.regs.get(key)
        if old is None:
            old_data = np.zeros(LANES, dtype=np.uint64)
        else:
            old_data = old.data
            if old.width > value.width:
                old_data = old_data & np.uint64(width_mask(value.width))
        self.regs[key] = Bits(np.where(self.active, value.data, old_data), value.width)

    def write_under(self, reg: ir.Register, value: Bits, mask: int) -> None:
        """Write only the lanes of ``mask`` (a subset of the active lanes)."""
        saved = self.mask
        if mask != saved:
            self.set_mask(mask)
        try:
            self.write(reg, value)
        finally:
            if mask != saved:
                self.set_mask(saved)

    # ---- symbols --------------------------------------------------------------------

    def symbol_address(self, name: str, width: int) -> Bits:
        frame = self.frame
        assert frame is not None
        key = (name, width)
        value = frame.sym_cache.get(key)
        if value is None:
            address = self.launch.resolve_symbol(frame, name, self.inst)
            value = frame.sym_cache[key] = self.dom.const(address & width_mask(width), width)
        return value

    # ---- memory -------------------------------------------------------------------------

    def _lanes(self, cond: Bits | None) -> tuple[np.ndarray | None, np.ndarray]:
        """(bool selection or None for all 32 lanes, lane indexes) of an access."""
        if cond is None:
            if self.mask == FULL_MASK:
                return None, LANE_INTS
            sel = self.active
        else:
            sel = self.active & (cond.data != 0)
        return sel, np.flatnonzero(sel)

    def load(self, inst: ir.Instruction, space: str, address: Bits, nbytes: int, cond: Bits | None) -> Bits:
        sel, lanes = self._lanes(cond)
        if nbytes not in (1, 2, 4, 8) or normalize_space(space) not in _DATA_SPACES:
            self.unknown(inst, f"{nbytes}-byte accesses to {space} are not modelled")
            return Bits(np.zeros(LANES, dtype=np.uint64), nbytes * 8)
        if lanes.size == 0:
            return Bits(np.zeros(LANES, dtype=np.uint64), nbytes * 8)
        addrs = address.data if sel is None else address.data[sel]
        values = self.launch.gather(inst, space, addrs, lanes, nbytes)
        if sel is None:
            return Bits(values, nbytes * 8)
        out = np.zeros(LANES, dtype=np.uint64)
        out[sel] = values
        return Bits(out, nbytes * 8)

    def store(
        self, inst: ir.Instruction, space: str, address: Bits, value: Bits, nbytes: int, cond: Bits | None
    ) -> None:
        sel, lanes = self._lanes(cond)
        if nbytes not in (1, 2, 4, 8) or normalize_space(space) not in _DATA_SPACES:
            self.unknown(inst, f"{nbytes}-byte accesses to {space} are not modelled")
            return
        if lanes.size == 0:
            return
        addrs = address.data if sel is None else address.data[sel]
        values = value.data if sel is None else value.data[sel]
        self.launch.scatter(inst, space, addrs, lanes, values, nbytes)

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: Bits,
        operands: list[Bits],
        nbytes: int,
        cond: Bits | None,
    ) -> Bits:
        _, lanes = self._lanes(cond)
        out = np.zeros(LANES, dtype=np.uint64)
        if lanes.size == 0:
            return Bits(out, nbytes * 8)
        ptx_type = isa.instruction_type(inst) or f".b{nbytes * 8}"
        fn = atomic_words(op, ptx_type, nbytes)
        if fn is None:
            self.unknown(inst, f"atomic {op} on {ptx_type} is not modelled")
            return Bits(out, nbytes * 8)
        addrs = address.data[lanes]
        b = operands[0].data[lanes] if operands else np.zeros(lanes.size, dtype=np.uint64)
        c = operands[1].data[lanes] if len(operands) > 1 else b
        olds = self.launch.atomic(inst, space, addrs, lanes, nbytes, fn, scannable(op, ptx_type), b, c)
        out[lanes] = olds
        return Bits(out, nbytes * 8)

    # ---- the address map (hooks the semantics call for cvta and isspacep) ----------------

    def convert_address(self, inst: ir.Instruction, space: str, value: Bits, to_generic: bool) -> Bits:
        """``cvta``: add (to generic) or remove (``.to``) the space's window base;
        see `ptxasw.emulator.concrete.memory`. Local addresses also select the thread."""
        space = normalize_space(space)
        a = value.data
        with np.errstate(all="ignore"):
            if space == ".local":
                assert self.current is not None
                if to_generic:
                    rows = self.current.rows.astype(np.uint64)
                    r = np.uint64(LOCAL_WINDOW) + rows * np.uint64(LOCAL_STRIDE) + a
                else:
                    r = (a - np.uint64(LOCAL_WINDOW)) % np.uint64(LOCAL_STRIDE)
            else:
                base = np.uint64(GENERIC_BASE.get(space, 0))
                r = a + base if to_generic else a - base
        return Bits(r & np.uint64(width_mask(value.width)), value.width)

    def in_space(self, inst: ir.Instruction, space: str, address: Bits) -> Bits:
        """``isspacep``: whether a generic address lies in the space's window."""
        window = SPACE_WINDOW.get(normalize_space(space), -1)
        hit = (address.data >> np.uint64(WINDOW_SHIFT)) == np.uint64(max(window, 0))
        if window < 0:
            hit = np.zeros(LANES, dtype=bool)
        return Bits(hit.astype(np.uint64), 1)

    # ---- the other lanes --------------------------------------------------------------

    def warp(self, inst: ir.Instruction, operands: list[Bits], cond: Bits | None) -> list[Bits]:
        return warp_collective(self.dom, inst, operands, cond, lane_bits(self.mask, 32))

    def barrier(self, inst: ir.Instruction, cond: Bits | None) -> None:
        """CTA barriers are run by the interpreter itself (they suspend the
        warp); what reaches here is ``bar.warp.sync``, a no-op for a warp that
        runs its active lanes in lockstep."""

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        self.launch.warn(inst, reason)


_DATA_SPACES = frozenset({".global", ".shared", ".local", ".const", ".param", "generic", ""})
_CLOCKS = frozenset({"%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"})


# --------------------------------------------------------------------------
# One launch


class _Launch:
    """The state of one kernel launch and the scheduler that drives it."""

    def __init__(
        self,
        program: Program,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        max_steps: int,
        quantum: int,
        strict: bool = False,
    ) -> None:
        self.program = program
        self.strict = strict
        self.grid = grid
        self.block = block
        self.shared_bytes = shared_bytes
        self.max_steps = max_steps
        self.quantum = quantum
        self.steps = 0
        self.gmem = GlobalMemory()
        self.const = program.const_image
        self.machine = WarpMachine(self)
        self.sem = Semantics(self.machine)
        self.warnings: list[str] = []
        self._warned: set[int] = set()
        self.printf: list[PrintfRecord] = []
        self.cta: _Cta | None = None
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = -(-self.nthreads // LANES)
        # Dynamic shared memory follows the static variables (aligned for the
        # extern arrays that all alias it).
        self.shared_size = program.dynamic_shared_base + shared_bytes
        self.specials = self._launch_specials()
        self._globals_ready()

    def _globals_ready(self) -> None:
        for key, var in self.program.global_order:
            address = self.gmem.allocate(max(var.size, 1), global_name(key), var.align)
            assert address == self.program.global_address[key]
            if var.init is not None:
                self.gmem.write(address, self.program.initial_bytes(var))

    # ---- diagnostics ---------------------------------------------------------

    def warn(self, inst: ir.Instruction, reason: str) -> None:
        """An instruction not modelled: its results are zeros and a warning
        says so, or, ``strict``, the launch stops with `UnsupportedInstruction`."""
        if self.strict:
            raise UnsupportedInstruction(inst.mnemonic, reason, inst.loc)
        if id(inst) not in self._warned:
            self._warned.add(id(inst))
            self.warnings.append(f"{inst.loc}: {inst.mnemonic}: {reason}; its results are zero")

    def error(self, message: str) -> EmulationError:
        return fault(self.machine.inst, message)

    def clock(self, name: str) -> Bits:
        """Clocks read the warp-instruction count (monotonic, deterministic)."""
        ticks = self.steps * 4
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            ticks = self.steps * 1000
        if name.endswith("_hi"):
            return lane_bits(ticks >> 32, 32)
        if name in ("%clock64", "%globaltimer"):
            return lane_bits(ticks & _U64_MAX, 64)
        return lane_bits(ticks, 32)

    # ---- symbols -------------------------------------------------------------------

    def resolve_symbol(self, frame: _Frame, name: str, inst: ir.Instruction | None) -> int:
        found = frame.info.symbols.get(name)
        if found is not None:
            _, value, relative = found
            return value + frame.local_base if relative else value
        module = self.program.module_symbol(name)
        if module is not None:
            return module[1]
        raise EmulationError(f"unknown symbol '{name}'", inst.loc if inst else None)

    # ---- memory ---------------------------------------------------------------------

    def _locate(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> list[tuple[np.ndarray | None, np.ndarray, np.ndarray]]:
        """``[(selection or None, typed view, indexes)]`` for an access; a
        generic access to several spaces gives one entry per space."""
        space = normalize_space(space)
        if space == "generic" or space == "":
            windows = window_of(addrs)
            first = int(windows[0])
            if (windows == first).all():
                return [(None, *self._locate_window(inst, first, addrs, lanes, nbytes))]
            out = []
            for w in np.unique(windows):
                sel = windows == w
                out.append((sel, *self._locate_window(inst, int(w), addrs[sel], lanes[sel], nbytes)))
            return out
        return [(None, *self._locate_space(inst, space, addrs, lanes, nbytes, 0))]

    def _locate_window(
        self, inst: ir.Instruction, window: int, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        base = window << WINDOW_SHIFT
        if window == 1:
            return self.gmem.locate(addrs, nbytes, inst)
        if window == 2:
            return self._locate_space(inst, ".shared", addrs - np.uint64(base), lanes, nbytes, base)
        if window == 3:
            assert self.cta is not None
            rel = addrs - np.uint64(LOCAL_WINDOW)
            rows = (rel // np.uint64(LOCAL_STRIDE)).astype(np.int64)
            offs = rel % np.uint64(LOCAL_STRIDE)
            if (rows >= self.cta.local.rows).any():
                bad = int(addrs[int(np.argmax(rows >= self.cta.local.rows))])
                raise fault(inst, f"generic address {bad:#x} is in the local window of no thread of this CTA")
            return self.cta.local.locate(rows, offs, nbytes, inst, addrs)
        if window == 4:
            return self._locate_space(inst, ".const", addrs - np.uint64(base), lanes, nbytes, base)
        if window == 5:
            return self._locate_space(inst, ".param", addrs - np.uint64(base), lanes, nbytes, base)
        bad = int(addrs[0])
        what = "a null pointer" if bad < 4096 else "not in any state space"
        raise fault(inst, f"generic address {bad:#x} is {what} (dangling or uninitialised pointer?)")

    def _locate_space(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int, window: int
    ) -> tuple[np.ndarray, np.ndarray]:
        if space == ".global":
            return self.gmem.locate(addrs, nbytes, inst)
        if space == ".shared":
            assert self.cta is not None
            return self.cta.shared.locate(addrs, nbytes, inst, window)
        if space == ".local":
            assert self.cta is not None and self.machine.current is not None
            rows = self.machine.current.rows[lanes]
            shown = addrs if window else None
            return self.cta.local.locate(rows, addrs, nbytes, inst, shown)
        if space == ".const":
            return self.const.locate(addrs, nbytes, inst, window)
        if space == ".param":
            frame = self.machine.frame
            assert frame is not None
            return frame.param.locate(lanes, addrs, nbytes, inst, addrs + np.uint64(window))
        raise fault(inst, f"accesses to {space} memory are not modelled")

    def gather(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> np.ndarray:
        parts = self._locate(inst, space, addrs, lanes, nbytes)
        if len(parts) == 1:
            _, view, idx = parts[0]
            return view[idx].astype(np.uint64)
        out = np.zeros(addrs.size, dtype=np.uint64)
        for sel, view, idx in parts:
            out[sel] = view[idx]
        return out

    def scatter(
        self,
        inst: ir.Instruction,
        space: str,
        addrs: np.ndarray,
        lanes: np.ndarray,
        values: np.ndarray,
        nbytes: int,
    ) -> None:
        space = normalize_space(space)
        to_const = space == ".const" or (
            space == "generic" and bool((window_of(addrs) == SPACE_WINDOW[".const"]).any())
        )
        if to_const:
            raise fault(inst, "store to constant memory")
        dtype = dtype_for(nbytes)
        for sel, view, idx in self._locate(inst, space, addrs, lanes, nbytes):
            view[idx] = (values if sel is None else values[sel]).astype(dtype)

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        addrs: np.ndarray,
        lanes: np.ndarray,
        nbytes: int,
        fn: WordUpdate,
        scan: bool,
        b: np.ndarray,
        c: np.ndarray,
    ) -> np.ndarray:
        parts = self._locate(inst, space, addrs, lanes, nbytes)
        views: list[np.ndarray] = [parts[0][1]] * addrs.size
        idxs = np.zeros(addrs.size, dtype=np.int64)
        for sel, view, idx in parts:
            if sel is None:
                idxs[:] = idx
            else:
                for pos, k in zip(np.flatnonzero(sel), idx, strict=True):
                    views[pos] = view
                    idxs[pos] = k
        # The distinct words, in order of first use, and which one each lane updates.
        mask = np.uint64(width_mask(nbytes * 8))
        words: dict[tuple[int, int], int] = {}
        keys = [(id(views[i]), int(idxs[i])) for i in range(addrs.size)]
        word = np.array([words.setdefault(key, len(words)) for key in keys], dtype=np.int64)
        first = np.array([int(np.flatnonzero(word == w)[0]) for w in range(len(words))], dtype=np.int64)
        init = np.array([int(views[i][idxs[i]]) for i in first], dtype=np.uint64) & mask
        olds, finals = apply_in_lane_order(fn, scan, init, word, b & mask, c & mask)
        for w, i in enumerate(first):
            views[i][idxs[i]] = int(finals[w] & mask)
        return olds

    def read_bytes(self, lane: int, address: int, n: int) -> bytes:
        """Host-side read through a generic address (printf arguments)."""
        if n == 0:
            return b""
        addrs = np.uint64(address) + np.arange(n, dtype=np.uint64)
        lanes = np.full(n, lane, dtype=np.int64)
        assert self.machine.inst is not None
        return bytes(self.gather(self.machine.inst, "generic", addrs, lanes, 1).astype(np.uint8))

    def read_string(self, lane: int, address: int) -> str:
        if address >> WINDOW_SHIFT == 1:
            raw = self.gmem.read_cstring(address)
        else:
            chunks = bytearray()
            while len(chunks) < 4096:
                byte = self.read_bytes(lane, address + len(chunks), 1)
                if byte == b"\0":
                    break
                chunks += byte
            raw = bytes(chunks)
        return raw.decode("utf-8", errors="replace")

    # ---- values of operands (for the instructions run here) -----------------------------

    def value(self, op: ir.Operand, width: int) -> Bits:
        m = self.machine
        if isinstance(op, ir.Register):
            return m.read(op, width)
        if isinstance(op, ir.Negated):
            v = m.read(op.operand, 1)
            return Bits(v.data ^ np.uint64(1), 1)
        if isinstance(op, ir.IntImm):
            return m.dom.const(op.value, width)
        if isinstance(op, ir.Symbol):
            return m.symbol_address(op.name, width)
        return self.sem.operand(op, width)

    def guard_mask(self, inst: ir.Instruction, mask: int) -> int:
        guard = inst.guard
        if guard is None:
            return mask
        bits = to_mask(self.machine.read(guard.predicate, 1).data)
        if guard.negated:
            bits = ~bits & FULL_MASK
        return bits & mask

    # ---- the grid --------------------------------------------------------------------

    def run(self, kernel: DecodedFunction, params: bytes) -> None:
        gx, gy, gz = self.grid
        for cz, cy, cx in product(range(gz), range(gy), range(gx)):
            self._run_cta((cx, cy, cz), kernel, params)

    def _launch_specials(self) -> dict[tuple[str, str | None], Bits]:
        """Special registers with the same value in every warp of the launch."""
        sp: dict[tuple[str, str | None], Bits] = {}
        for sel, value in zip("xyz", self.block, strict=True):
            sp[("%ntid", sel)] = lane_bits(value, 32)
        for sel, value in zip("xyz", self.grid, strict=True):
            sp[("%nctaid", sel)] = lane_bits(value, 32)
            sp[("%nclusterid", sel)] = lane_bits(value, 32)
            sp[("%cluster_ctaid", sel)] = lane_bits(0, 32)
            sp[("%cluster_nctaid", sel)] = lane_bits(1, 32)
        lane = LANE_IDS
        one = np.uint64(1)
        u32 = np.uint64(0xFFFFFFFF)
        eq = one << lane
        sp[("%laneid", None)] = Bits(lane.copy(), 32)
        sp[("%lanemask_eq", None)] = Bits(eq, 32)
        sp[("%lanemask_lt", None)] = Bits(eq - one, 32)
        sp[("%lanemask_le", None)] = Bits((eq << one) - one, 32)
        sp[("%lanemask_gt", None)] = Bits(~((eq << one) - one) & u32, 32)
        sp[("%lanemask_ge", None)] = Bits(~(eq - one) & u32, 32)
        sp[("%nwarpid", None)] = lane_bits(64, 32)
        sp[("%smid", None)] = lane_bits(0, 32)
        sp[("%nsmid", None)] = lane_bits(1, 32)
        sp[("%gridid", None)] = lane_bits(1, 64)
        sp[("%dynamic_smem_size", None)] = lane_bits(self.shared_bytes, 32)
        sp[("%total_smem_size", None)] = lane_bits(self.shared_size, 32)
        sp[("%aggr_smem_size", None)] = lane_bits(self.shared_size, 32)
        sp[("%cluster_ctarank", None)] = lane_bits(0, 32)
        sp[("%cluster_nctarank", None)] = lane_bits(1, 32)
        sp[("%is_explicit_cluster", None)] = lane_bits(0, 1)
        for i in range(32):
            sp[(f"%envreg{i}", None)] = lane_bits(0, 32)
        return sp

    def _new_warp(self, index: int, cta_specials: dict[tuple[str, str | None], Bits]) -> _Warp:
        bx, by, _ = self.block
        nlanes = min(LANES, self.nthreads - index * LANES)
        w = _Warp(index, nlanes)
        t = np.arange(index * LANES, (index + 1) * LANES, dtype=np.uint64)
        sp = w.specials = dict(cta_specials)
        u32 = np.uint64(0xFFFFFFFF)
        sp[("%tid", "x")] = Bits(t % np.uint64(bx) & u32, 32)
        sp[("%tid", "y")] = Bits((t // np.uint64(bx)) % np.uint64(by) & u32, 32)
        sp[("%tid", "z")] = Bits(t // np.uint64(bx * by) & u32, 32)
        sp[("%warpid", None)] = lane_bits(index, 32)
        return w

    def _run_cta(self, ctaid: tuple[int, int, int], kernel: DecodedFunction, params: bytes) -> None:
        local_size = self.program.module_local_size + kernel.local_size
        cta = _Cta(
            ctaid,
            FlatMemory(self.shared_size, ".shared"),
            LaneMemory(self.nwarps * LANES, max(local_size, 8), ".local"),
            [],
        )
        self.cta = cta
        raw = np.frombuffer(params, dtype=np.uint8)
        specials = dict(self.specials)
        for sel, value in zip("xyz", ctaid, strict=True):
            specials[("%ctaid", sel)] = lane_bits(value, 32)
            specials[("%clusterid", sel)] = lane_bits(value, 32)
        for index in range(self.nwarps):
            w = self._new_warp(index, specials)
            frame = _Frame(kernel, w.full, self.program.module_local_size, None)
            frame.param.data[:, : raw.size] = raw
            w.frames.append(frame)
            cta.warps.append(w)
        warps = cta.warps
        while True:
            ran = False
            for w in warps:
                if w.done or w.waiting is not None:
                    continue
                ran = True
                budget = self.max_steps - self.steps
                self.steps += self._run_warp(w, min(self.quantum, budget))
                if self.steps >= self.max_steps and not w.done:
                    raise self.error(
                        f"step budget exceeded ({self.max_steps} warp-instructions): an endless loop, "
                        "or raise max_steps"
                    )
            if all(w.done for w in warps):
                break
            released = self._release_barriers(cta)
            if not ran and not released:
                self._deadlock(cta)

    def _release_barriers(self, cta: _Cta) -> bool:
        released = False
        live = sum(1 for w in cta.warps if not w.done)
        for bid in list(cta.waiting):
            waiting = cta.waiting[bid]
            expected = cta.expected.get(bid) or live
            if len(waiting) + cta.arrived.get(bid, 0) < expected:
                continue
            self._finish_reductions(waiting)
            for w in waiting:
                w.waiting = None
            del cta.waiting[bid]
            cta.arrived.pop(bid, None)
            cta.expected.pop(bid, None)
            released = True
        return released

    def _finish_reductions(self, warps: list[_Warp]) -> None:
        reds = [w for w in warps if w.bar_red is not None]
        if not reds:
            return
        m = self.machine
        ballots = [(lane_bits(w.bar_red[2], 32), lane_bits(w.bar_red[1], 32)) for w in reds]  # type: ignore[index]
        results: dict[str, Bits] = {}
        for w in reds:
            op, mask, _ = w.bar_red  # type: ignore[misc]
            inst = op.inst
            dest = inst.operands[0]
            mode = next((x for x in (".popc", ".and") if x in inst.modifiers), ".or")
            if mode not in results:
                results[mode] = bar_reduce(m.dom, mode, ballots)
            value = results[mode]
            m.bind(w)
            m.set_mask(mask)
            if isinstance(dest, ir.Register):
                m.write(dest, value)
            w.bar_red = None

    def _deadlock(self, cta: _Cta) -> None:
        for bid, waiting in cta.waiting.items():
            w = waiting[0]
            inst = w.frames[-1].code[w.frames[-1].stack[-1].pc - 1].inst
            expected = cta.expected.get(bid) or sum(1 for x in cta.warps if not x.done)
            raise fault(
                inst,
                f"barrier {bid} can never complete: {len(waiting)} of {expected} warps "
                f"of CTA {cta.ctaid} arrived and the others are blocked elsewhere",
            )
        raise EmulationError(f"CTA {cta.ctaid}: no warp can make progress")

    # ---- running a warp -----------------------------------------------------------

    def _run_warp(self, w: _Warp, limit: int) -> int:
        """Run ``w`` for up to ``limit`` instructions; stops early when the warp
        finishes or waits at a barrier. Returns the instructions executed."""
        m = self.machine
        m.bind(w)
        execute = self.sem.execute
        frames = w.frames
        steps = 0
        while steps < limit:
            frame = frames[-1]
            stack = frame.stack
            if not stack:
                if len(frames) == 1:
                    w.done = True
                    break
                self._return(w)
                continue
            top = stack[-1]
            pc = top.pc
            mask = top.mask
            if mask == 0 or pc == top.rpc:
                stack.pop()
                continue
            code = frame.code
            if pc >= len(code):  # fell off the end: an implicit ret
                self._retire(w, mask, exit_=len(frames) == 1)
                continue
            op = code[pc]
            if mask != m.mask:
                m.set_mask(mask)
            m.inst = op.inst
            steps += 1
            kind = op.kind
            if kind == EXEC:
                execute(op.inst)
                top.pc = pc + 1
            elif kind == BRA:
                if op.inst.guard is None:
                    top.pc = op.target
                else:
                    taken = self.guard_mask(op.inst, mask)
                    if taken == mask:
                        top.pc = op.target
                    elif taken == 0 or op.target == pc + 1:
                        top.pc = pc + 1
                    else:
                        self._diverge(stack, top, [(op.target, taken), (pc + 1, mask & ~taken)], op.rpc)
            elif self._control(w, frame, top, op, pc, mask):
                break
        return steps

    def _diverge(self, stack: list[_Entry], top: _Entry, paths: list[tuple[int, int]], rpc: int) -> None:
        """Split ``top`` into ``paths`` that meet again at ``rpc``; the path
        listed last runs first."""
        if rpc == top.rpc:
            stack.pop()
        else:
            top.pc = rpc
        for pc, mask in paths:
            if mask:
                stack.append(_Entry(pc, mask, rpc))

    def _retire(self, w: _Warp, mask: int, exit_: bool) -> None:
        """Lanes leave the current function (``ret``) or the kernel (``exit``)."""
        if exit_:
            w.live &= ~mask
            for frame in w.frames:
                for entry in frame.stack:
                    entry.mask &= ~mask
        else:
            frame = w.frames[-1]
            frame.returned |= mask
            for entry in frame.stack:
                entry.mask &= ~mask

    def _control(self, w: _Warp, frame: _Frame, top: _Entry, op: Op, pc: int, mask: int) -> bool:
        """Everything but plain instructions and ``bra``; True when the warp
        must stop running (it waits at a barrier)."""
        kind = op.kind
        inst = op.inst
        if kind in (RET, EXIT):
            lanes = self.guard_mask(inst, mask)
            top.pc = pc + 1
            self._retire(w, lanes, exit_=kind == EXIT or len(w.frames) == 1)
            return False
        if kind == BRA_RET:  # a branch to a ret/exit: its lanes leave here
            lanes = self.guard_mask(inst, mask)
            top.pc = pc + 1
            self._retire(w, lanes, exit_=op.exits or len(w.frames) == 1)
            return False
        if kind == NOP:
            top.pc = pc + 1
            return False
        if kind == CALL:
            self._call(w, frame, top, op, pc, mask)
            return False
        if kind == BRX:
            self._brx(frame.stack, top, op, pc, mask)
            return False
        if kind in (MAPA, CTARANK):
            self._cluster_op(op, mask)
            top.pc = pc + 1
            return False
        if kind == UNSUPPORTED:
            self._unsupported(frame, op, mask)
            top.pc = pc + 1
            return False
        if kind == TRAP:
            if self.guard_mask(inst, mask):
                raise EmulationError(f"trap executed (CTA {self.cta.ctaid if self.cta else ''})", inst.loc)
            top.pc = pc + 1
            return False
        # barriers
        top.pc = pc + 1
        if self.guard_mask(inst, mask) == 0:
            return False
        assert self.cta is not None
        cta = self.cta
        ops = inst.operands
        if kind == BAR_RED:
            bid: object = self._scalar(ops[1], mask)
            count = self._scalar(ops[2], mask) if len(ops) > 3 else 0
            pred = to_mask(self.value(ops[-1], 1).data) & mask
            w.bar_red = (op, mask, pred)
        elif inst.opcode == "barrier.cluster":
            bid, count = "cluster", 0
        else:
            bid = self._scalar(ops[0], mask) if ops else 0
            count = self._scalar(ops[1], mask) if len(ops) > 1 else 0
        if count:
            cta.expected[bid] = -(-count // LANES)
        if kind == BAR_ARRIVE:
            cta.arrived[bid] = cta.arrived.get(bid, 0) + 1
            return False
        w.waiting = bid
        cta.waiting.setdefault(bid, []).append(w)
        return True

    def _scalar(self, op: ir.Operand, mask: int) -> int:
        """An operand that must be warp-uniform (barrier ids and counts)."""
        return uniform(self.value(op, 32), mask)

    def _brx(self, stack: list[_Entry], top: _Entry, op: Op, pc: int, mask: int) -> None:
        """``brx.idx``: one path per distinct target (plus the fall-through of
        lanes whose guard is false), all meeting at the block's post-dominator."""
        inst = op.inst
        lanes = self.guard_mask(inst, mask)
        groups: dict[int, int] = {}
        if lanes != mask:
            groups[pc + 1] = mask & ~lanes
        if lanes:
            index = self.value(inst.operands[0], 32).data
            for lane in range(LANES):
                if lanes >> lane & 1:
                    i = int(index[lane])
                    if i >= len(op.targets):
                        raise EmulationError(
                            f"brx.idx: index {i} (lane {lane}) is outside the {len(op.targets)}-entry "
                            ".branchtargets list",
                            inst.loc,
                        )
                    target = op.targets[i]
                    groups[target] = groups.get(target, 0) | 1 << lane
        if len(groups) == 1:
            top.pc = next(iter(groups))
            return
        self._diverge(stack, top, sorted(groups.items(), reverse=True), op.rpc)

    def _cluster_op(self, op: Op, mask: int) -> None:
        """``mapa``/``getctarank`` in a cluster of one CTA: every shared::cluster
        address is this CTA's own, of rank 0."""
        inst = op.inst
        lanes = self.guard_mask(inst, mask)
        dest = inst.operands[0]
        if lanes == 0 or not isinstance(dest, ir.Register):
            return
        result = lane_bits(0, 32) if op.kind == CTARANK else self.value(inst.operands[1], op.width)
        self.machine.write_under(dest, result, lanes)

    def _unsupported(self, frame: _Frame, op: Op, mask: int) -> None:
        inst = op.inst
        self.warn(inst, "not supported by the semantics")
        lanes = self.guard_mask(inst, mask)
        if lanes == 0:
            return
        for reg, ptx_type in isa.typed_defs(inst):
            t = ptx_type or frame.info.reg_types.get(reg.name)
            width = 1 if t == ".pred" else bits_of(t)
            self.machine.write_under(reg, lane_bits(0, width), lanes)

    # ---- calls -------------------------------------------------------------------------

    def _call(self, w: _Warp, frame: _Frame, top: _Entry, op: Op, pc: int, mask: int) -> None:
        inst = op.inst
        call = op.call
        assert call is not None
        lanes = self.guard_mask(inst, mask)
        if lanes != mask:
            if lanes:
                self._diverge(frame.stack, top, [(pc + 1, mask & ~lanes), (pc, lanes)], pc + 1)
            else:
                top.pc = pc + 1
            return
        if isinstance(call.callee, ir.Symbol):
            name = call.callee.name
        else:
            targets = self.value(call.callee, 64).data
            groups: dict[int, int] = {}
            for lane in range(LANES):
                if mask >> lane & 1:
                    t = int(targets[lane])
                    groups[t] = groups.get(t, 0) | 1 << lane
            if len(groups) > 1:  # a divergent indirect call: one call per target
                top.pc = pc + 1
                for _, group in sorted(groups.items(), reverse=True):
                    frame.stack.append(_Entry(pc, group, pc + 1))
                return
            address = next(iter(groups))
            found = self.program.function_at(address)
            if found is None:
                raise EmulationError(f"call through {address:#x}, which is not a function address", inst.loc)
            name = found
        fn = self.program.functions.get(name)
        if fn is None:
            raise EmulationError(f"call to unknown function {name}", inst.loc)
        if fn.body is None:
            self._builtin(w, frame, op, name, mask)
            top.pc = pc + 1
            return
        if len(w.frames) >= MAX_CALL_DEPTH:
            raise EmulationError(f"call depth exceeds {MAX_CALL_DEPTH} (runaway recursion?)", inst.loc)
        info = self.program.decoded(name, self.sem)
        callee = _Frame(info, mask, round_up(frame.local_top, 16), op)
        assert self.cta is not None
        if callee.local_top > LOCAL_STRIDE or callee.local_top * self.cta.local.rows > MAX_LOCAL_BYTES:
            raise EmulationError(
                f"local memory stack overflow at call depth {len(w.frames)} (recursion too deep?)", inst.loc
            )
        self.cta.local.grow(callee.local_top)
        self._pass_arguments(frame, callee, call, fn, inst)
        w.frames.append(callee)
        self.machine.bind_frame(callee)

    def _pass_arguments(
        self, caller: _Frame, callee: _Frame, call: Call, fn: ir.Function, inst: ir.Instruction
    ) -> None:
        if len(call.args) != len(fn.params):
            raise EmulationError(
                f"call of {fn.name} passes {len(call.args)} arguments; it takes {len(fn.params)}", inst.loc
            )
        for arg, spec in zip(call.args, fn.params, strict=True):
            if spec.space == ".param":
                dst, size = callee.info.param_layout[spec.name]
                if isinstance(arg, ir.Symbol) and arg.name in caller.info.param_layout:
                    src, src_size = caller.info.param_layout[arg.name]
                    n = min(size, src_size)
                    callee.param.data[:, dst : dst + n] = caller.param.data[:, src : src + n]
                else:
                    value = self.value(arg, bits_of(spec.type, 32))
                    n = min(size, 8)
                    callee.param.data[:, dst : dst + n] = _lane_bytes(value.data)[:, :n]
            else:
                width = 1 if spec.type == ".pred" else bits_of(spec.type)
                if isinstance(arg, ir.Symbol) and arg.name in caller.info.param_layout:
                    src, src_size = caller.info.param_layout[arg.name]
                    value = _param_value(caller.param, src, min(width // 8 or 1, src_size, 8), width)
                else:
                    value = self.value(arg, width)
                callee.regs[intern(spec.name)] = value

    def _return(self, w: _Warp) -> None:
        """The callee's lanes all returned (or exited): pop its frame."""
        callee = w.frames.pop()
        caller = w.frames[-1]
        self.machine.bind_frame(caller)
        op = callee.call_op
        assert op is not None and op.call is not None
        lanes = callee.returned & w.live
        if caller.stack:
            caller.stack[-1].pc += 1
        if not lanes:
            return
        sel = np.flatnonzero(mask_array(lanes))
        fn = callee.info.fn
        for ret, spec in zip(op.call.returns, fn.returns or [], strict=False):
            if spec.space == ".param":
                src, size = callee.info.param_layout[spec.name]
                if isinstance(ret, ir.Symbol) and ret.name in caller.info.param_layout:
                    dst, dst_size = caller.info.param_layout[ret.name]
                    n = min(size, dst_size)
                    caller.param.data[sel, dst : dst + n] = callee.param.data[sel, src : src + n]
                elif isinstance(ret, ir.Register):
                    value = _param_value(callee.param, src, min(size, 8), bits_of(spec.type))
                    self.machine.write_under(ret, value, lanes)
            elif isinstance(ret, ir.Register):
                width = 1 if spec.type == ".pred" else bits_of(spec.type)
                value = callee.regs.get(intern(spec.name)) or lane_bits(0, width)
                self.machine.write_under(ret, value, lanes)

    # ---- functions the module declares but does not define ------------------------------

    def _builtin(self, w: _Warp, frame: _Frame, op: Op, name: str, mask: int) -> None:
        call = op.call
        assert call is not None
        inst = op.inst
        lanes = [lane for lane in range(LANES) if mask >> lane & 1]

        def arg(i: int, lane: int, size: int = 8) -> int:
            a = call.args[i]
            if isinstance(a, ir.Symbol) and a.name in frame.info.param_layout:
                off, n = frame.info.param_layout[a.name]
                raw = frame.param.data[lane, off : off + min(n, size)]
                return int.from_bytes(raw.tobytes(), "little")
            return int(self.value(a, size * 8).data[lane])

        results: dict[int, int] = {}
        if name == "vprintf":
            cta = self.cta
            assert cta is not None
            for lane in lanes:
                fmt = self.read_string(lane, arg(0, lane))
                args_ptr = arg(1, lane)
                nbytes = printf_arg_bytes(fmt)
                raw = self.read_bytes(lane, args_ptr, nbytes) if args_ptr and nbytes else b""
                text = format_printf(fmt, raw, lambda p, lane=lane: self.read_string(lane, p))
                tid = self._tid(w, lane)
                self.printf.append(PrintfRecord(fmt, raw, text, cta.ctaid, tid))
                results[lane] = len(FORMAT_RE.findall(fmt))
        elif name == "__assertfail":
            lane = lanes[0]
            message = self.read_string(lane, arg(0, lane))
            file = self.read_string(lane, arg(1, lane))
            line = arg(2, lane, 4)
            func = self.read_string(lane, arg(3, lane))
            assert self.cta is not None
            raise EmulationError(
                f"device assertion failed: {file}:{line}: {func}: Assertion `{message}` failed "
                f"(block {self.cta.ctaid}, thread {self._tid(w, lane)})",
                inst.loc,
            )
        elif name == "malloc":
            for lane in lanes:
                size = arg(0, lane)
                results[lane] = self.gmem.allocate(max(size, 1), f"malloc({size})", 16) if size else 0
        elif name == "free":
            pass
        else:
            raise EmulationError(f"call to {name}, which the module declares but does not define", inst.loc)
        if not call.returns or not results:
            return
        ret = call.returns[0]
        values = np.zeros(LANES, dtype=np.uint64)
        for lane, v in results.items():
            values[lane] = v & _U64_MAX
        if isinstance(ret, ir.Symbol) and ret.name in frame.info.param_layout:
            off, size = frame.info.param_layout[ret.name]
            n = min(size, 8)
            rows = np.array(lanes, dtype=np.int64)
            frame.param.data[rows, off : off + n] = _lane_bytes(values)[rows, :n]
        elif isinstance(ret, ir.Register):
            self.machine.write_under(ret, Bits(values, 64 if name == "malloc" else 32), mask)

    def _tid(self, w: _Warp, lane: int) -> tuple[int, int, int]:
        t = w.index * LANES + lane
        bx, by, _ = self.block
        return (t % bx, (t // bx) % by, t // (bx * by))


def _param_value(param: LaneMemory, offset: int, nbytes: int, width: int) -> Bits:
    """The first ``nbytes`` (at most 8) of every lane's ``.param`` bytes at
    ``offset``, as a value of ``width`` bits."""
    raw = np.zeros((LANES, 8), dtype=np.uint8)
    raw[:, :nbytes] = param.data[:, offset : offset + nbytes]
    return Bits(raw.view("<u8").reshape(LANES) & np.uint64(width_mask(width)), width)


def _lane_bytes(values: np.ndarray) -> np.ndarray:
    """Every lane's 64-bit value as its 8 little-endian bytes, a ``(LANES, 8)`` array."""
    return values.astype("<u8").view(np.uint8).reshape(LANES, 8)


# --------------------------------------------------------------------------
# Entry point


_PROGRAMS: dict[int, tuple[ir.Module, Program]] = {}


def _program_for(module: ir.Module) -> Program:
    """The cached Program of a module object (kept alive with it, so the id is unique)."""
    hit = _PROGRAMS.get(id(module))
    if hit is not None and hit[0] is module:
        return hit[1]
    program = Program(module)
    if len(_PROGRAMS) >= 16:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[id(module)] = (module, program)
    return program


def _dims(value: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    dims = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(dims) <= 3:
        raise PtxError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    dims = [int(d) for d in dims] + [1] * (3 - len(dims))
    if any(d < 1 for d in dims):
        raise PtxError(f"{what} dimensions must be positive, got {tuple(dims)}")
    return dims[0], dims[1], dims[2]


def _check_launch(fn: ir.Function, block: tuple[int, int, int], nthreads: int) -> None:
    if nthreads > 1024:
        raise PtxError(f"block {block} has {nthreads} threads; at most 1024 per block")
    if block[2] > 64:
        raise PtxError(f"block z dimension {block[2]} exceeds 64")
    for d in fn.directives:
        if isinstance(d, ir.PerfDirective) and d.values:
            want = tuple(d.values) + (1,) * (3 - len(d.values))
            if d.name == ".reqntid" and want != block:
                raise PtxError(f"kernel {fn.name} requires block {want} (.reqntid), got {block}", d.loc)
            if d.name == ".maxntid" and nthreads > want[0] * want[1] * want[2]:
                raise PtxError(
                    f"kernel {fn.name} allows at most {want[0] * want[1] * want[2]} threads per block "
                    f"(.maxntid), got {nthreads}",
                    d.loc,
                )


def _encode_params(
    fn: ir.Function, args: Sequence[object], gmem: GlobalMemory, layout: dict[str, tuple[int, int]], size: int
) -> tuple[bytes, list[tuple[int, np.ndarray, int]]]:
    """The kernel's parameter bytes; array arguments are uploaded to global memory."""
    if len(args) != len(fn.params):
        raise PtxError(f"kernel {fn.name} takes {len(fn.params)} parameters, got {len(args)} arguments")
    raw = bytearray(size)
    uploads: list[tuple[int, np.ndarray, int]] = []
    uploaded: dict[int, int] = {}
    for i, (spec, arg) in enumerate(zip(fn.params, args, strict=True)):
        off, psize = layout[spec.name]
        if isinstance(arg, np.ndarray) and id(arg) in uploaded:  # the same buffer twice: aliases
            encoded = uploaded[id(arg)].to_bytes(8, "little")
            uploads.append((i, arg, uploaded[id(arg)]))
        elif isinstance(arg, np.ndarray):
            if psize != 8:
                raise PtxError(
                    f"parameter {i} ({spec.name}, {spec.type}) is not a 64-bit pointer, got an array"
                )
            data = np.ascontiguousarray(arg)
            address = gmem.allocate(max(data.nbytes, 1), f"arg{i} ({spec.name})", 256)
            gmem.write(address, data.reshape(-1).view(np.uint8))
            uploads.append((i, arg, address))
            uploaded[id(arg)] = address
            encoded = address.to_bytes(8, "little")
        elif isinstance(arg, (bytes, bytearray, np.void)):
            encoded = bytes(arg)
            if len(encoded) != psize:
                raise PtxError(f"parameter {i} ({spec.name}) is {psize} bytes, got {len(encoded)}")
        elif (
            isinstance(arg, np.generic)
            and arg.dtype.itemsize == psize
            and spec.type.startswith((".f", ".bf")) == (arg.dtype.kind == "f")
        ):
            encoded = arg.tobytes()
        elif isinstance(arg, (bool, int, float, np.generic)):
            value = arg.item() if isinstance(arg, np.generic) else arg
            if isinstance(value, float) and not spec.type.startswith((".f", ".bf")):
                raise PtxError(f"parameter {i} ({spec.name}) is {spec.type}; got the float {value}")
            encoded = encode_scalar(value, spec.type)[:psize].ljust(psize, b"\0")
        else:
            raise PtxError(f"parameter {i} ({spec.name}): unsupported argument type {type(arg).__name__}")
        raw[off : off + len(encoded)] = encoded
    return bytes(raw), uploads


def launch(
    module: ir.Module | Program,
    kernel: str,
    grid: Sequence[int] | int,
    block: Sequence[int] | int,
    args: Sequence[np.ndarray | int | float | np.generic | bytes],
    shared_bytes: int = 0,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    quantum: int = DEFAULT_QUANTUM,
    strict: bool = False,
) -> LaunchResult:
    """Run ``kernel`` over ``grid`` x ``block`` threads and return what it wrote.

    ``args`` follow the kernel's parameters: NumPy arrays become device
    buffers (pointers), Python/NumPy scalars are encoded as the parameter's
    PTX type, ``bytes`` fill an aggregate (``.b8 p[N]``) parameter verbatim.
    Array arguments are updated in place when writable and returned in
    `LaunchResult.buffers`. ``shared_bytes`` is the dynamic shared memory
    (``extern __shared__``). Faults raise `EmulationError`; bad launch
    parameters raise `PtxError`. ``strict``: an instruction the interpreter
    cannot model raises `UnsupportedInstruction` instead of giving zeros
    and a warning.
    """
    program = module if isinstance(module, Program) else _program_for(module)
    fn = program.functions.get(kernel)
    if fn is None or not fn.is_kernel or fn.body is None:
        kernels = ", ".join(k.name for k in program.module.kernels) or "none"
        raise PtxError(f"no kernel named {kernel!r} in {program.path} (kernels: {kernels})")
    g = _dims(grid, "grid")
    b = _dims(block, "block")
    nthreads = b[0] * b[1] * b[2]
    _check_launch(fn, b, nthreads)
    if shared_bytes < 0:
        raise PtxError("shared_bytes must not be negative")
    started = time.perf_counter()
    state = _Launch(program, g, b, shared_bytes, max_steps, quantum, strict)
    info = program.decoded(kernel, state.sem)
    params, uploads = _encode_params(fn, args, state.gmem, info.param_layout, info.param_size)
    state.run(info, params)
    buffers: list[np.ndarray | None] = [None] * len(args)
    for i, arr, address in uploads:
        raw = state.gmem.read(address, arr.nbytes)
        result = raw.view(arr.dtype).reshape(arr.shape).copy()
        buffers[i] = result
        if arr.flags.writeable:
            arr[...] = result
    glob: dict[str, np.ndarray] = {}
    for key, var in program.global_order:
        glob[global_name(key)] = state.gmem.read(program.global_address[key], var.size)
    records = state.printf
    lines = [r.text[:-1] if r.text.endswith("\n") else r.text for r in records]
    return LaunchResult(
        buffers=buffers,
        printf=lines,
        printf_records=records,
        warnings=state.warnings,
        globals=glob,
        steps=state.steps,
        seconds=time.perf_counter() - started,
    )
