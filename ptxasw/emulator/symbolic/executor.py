"""The symbolic executor: one symbolic thread per kernel, memory traces per flow.

This is sections 4.1-4.3 of the PTXASW paper over the shared instruction
semantics (`ptxasw.emulator.semantics.instructions`) and the Z3 domain
(`ptxasw.emulator.symbolic.domain`); `SymbolicExecutor` is the `Machine` the
semantics run on.

- **Registers** hold Z3 bit-vector expressions. Special registers (``%tid.x``,
  ``%ntid.y``, ``%laneid``...) are symbols constrained by their ISA ranges
  (``%tid.x < %ntid.x <= 1024``, ``%ntid.x * %ntid.y * %ntid.z <= 1024``,
  ``%laneid < 32``, ``%lanemask_lt == (1 << %laneid) - 1``...); a register's
  facts enter the solver when it is first read, so kernels that never read
  ``%ntid.z`` never pay for the multiplication.
- **Kernel parameters** (``ld.param`` of an entry parameter) are constants
  named ``param_<name>`` (``param_0`` for nvcc's ``<kernel>_param_0``),
  printed ``load(param_0)`` as in the paper's Listing 5.
- **Memory** is a list of store events per flow. A load walks it backwards:
  a store to a provably equal address (solver, under the path condition)
  gives its value (or the bytes of it the load reads); a provably disjoint
  one is skipped; anything else that may overwrite the location ends the
  walk. The load then returns an uninterpreted function of the address,
  ``load_global_32(addr)``, versioned by that blocking event
  (``load_global_32@7``), so two loads are equal exactly when nothing may
  have changed the location in between. A store also marks every earlier
  load of the flow it may overwrite (``Flow.may_alias_store``); read-only loads
  (``ld.global.nc``, ``ldu``, ``ld.const``) are never invalidated. Barriers,
  calls and loops that store clobber what they may change.
- **Paths**: a branch whose condition the solver cannot decide under the
  path condition forks the flow; each side records its assumption and sees
  the guard predicate as a constant afterwards (paper, 4.2). Infeasible sides
  are pruned. ``ret``/``exit``/``trap`` end a flow. Short branch regions that
  only compute registers are if-converted first (`ptxasw.analysis.ifconvert`):
  they run guarded on one flow, their values meeting as ``If(p, a, b)``.
- **Runtime calls** of known effect give each result a fresh value (OpenMP
  queries within their ranges; one team count per kernel).
- **Calls** to functions of the module are inlined before the analysis
  (`ptxasw.analysis.inline`: fresh registers per call site, ``.param``
  arguments bound to the caller's slots, depth 4, GCC's libgomp entry points
  followed to the outlined region); their accesses name the callee's
  instructions. A call left in place (indirect, recursive, too deep, no body)
  makes the kernel ``partial`` with the reason, except runtime functions of
  known effect (``vprintf``, libm...).
- **Loops** (natural loops of `ptxasw.analysis.cfg`) run one abstract
  iteration: on entry, every register the loop writes becomes a value of a
  fresh iteration symbol ``iter_<header>#n`` (64 bits, non-negative). An
  induction variable (its one definition runs on every iteration and closes
  a chain of copies and adds of loop-invariant steps back to its own header
  value: ``r += 4``, ``p1 = p0 + 8; p2 = p1 + 8; p0 = p2``, ``-G``'s
  ``mov r5, r6; add r6, r5, 1``) becomes ``init + step*iter``, so strides
  stay visible in addresses; other
  registers that the loop only adds to become ``init + loop_<header>#n.<reg>``
  (the paper's clipped initial value), the rest fresh values. A flow ends
  when it comes back to the header; flows that leave continue after it.
- **Joins**: the flows of a fork meet again at the branch's immediate
  post-dominator and go on as one flow (``Flow.merged_into``), its
  registers ``If(side, a, b)`` and its path condition the sides' common
  prefix; each side's loads and stores stay in its trace and memory,
  guarded by the side's condition. This is what if-conversion does for
  short regions, done on the flows for any region: calls, loops and several
  exits included. Sides with barriers stay apart, and so do flows that
  meet only at a ``ret``.
- **Memoisation**: a flow that enters a block with the same live registers,
  memory and loop context as an earlier flow stops (``merged``), when the
  earlier flow's exploration from there holds for it: no branch is left to
  decide, or the earlier flow's path condition is part of its own.
- **Solver**: cheapest first. Unsigned intervals of the terms
  (`ptxasw.emulator.symbolic.intervals`: ``%tid.x < 2000`` holds by the ISA
  ranges), a cache of recent models, the query with the factors of its
  products (parameters, loaded team sizes) fixed to typical sizes (a model
  is final: most queries are satisfiable), the query alone without its path
  condition (address questions mostly need no context), the query with
  non-linear terms abstracted (unsat is final), and only then Z3 on the
  real query, each with a deterministic resource limit. Address overlaps
  go to Z3 restated on the scaled difference (`affine.overlap_condition`:
  the same models, a proof Z3 finds in propagations rather than carry
  chains). A branch condition left undecided is not asked again negated
  (both sides are feasible), nor addresses undecided equal whether they
  overlap (they may). ``Stats.cheap_answers`` counts what the cheap
  steps settled.
- **Budgets**: wall time, flows, steps and per-query solver effort. When one
  runs out the kernel is ``partial`` with the reason, and everything found
  so far is returned; nothing here can hang.

Public API: `analyze_kernel`, `analyze_module`, `Budget`, `KernelAnalysis`
(with ``to_json()`` and ``format()``), `Flow`, `Access`, `Stats`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import z3

from ptxasw import ir
from ptxasw.analysis.cfg import CFG, Loop, build_cfg, is_special_register
from ptxasw.analysis.ifconvert import Converted, if_convert
from ptxasw.analysis.inline import DEFAULT_MAX_DEPTH, call_site, inline_calls
from ptxasw.emulator.semantics.collectives import (
    atomic_supported,
    atomic_update,
    bar_reduce,
    warp_collective,
)
from ptxasw.emulator.symbolic import raw
from ptxasw.emulator.symbolic.affine import disjoint_by_stride, equal_condition, overlap_condition
from ptxasw.emulator.symbolic.domain import SymbolicDomain, as_bool, bv_width, const_value, remember, simplify
from ptxasw.emulator.symbolic.independence import Symbols, connected, free_literal
from ptxasw.emulator.symbolic.intervals import decide, normalize_extensions
from ptxasw.emulator.symbolic.lanes import LaneModel
from ptxasw.emulator.symbolic.local_search import local_model
from ptxasw.errors import UnsupportedInstruction
from ptxasw.ir import isa
from ptxasw.ir.builder import register_types
from ptxasw.ir.layout import var_of

if TYPE_CHECKING:
    from ptxasw.emulator.symbolic.snapshot import Snapshot

__all__ = [
    "RLIMIT_PER_MS",
    "Access",
    "Budget",
    "Flow",
    "KernelAnalysis",
    "Observation",
    "Stats",
    "SymbolicExecutor",
    "analyze_kernel",
    "analyze_module",
]

BV = z3.BitVecRef

# --------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Budget:
    """Limits of one kernel's analysis; exceeding any makes it ``partial``.

    ``time_s``: wall-clock seconds for the kernel. ``max_paths``: flows
    (forks beyond it follow one side only). ``solver_timeout_ms``: the effort
    per solver query (an undecided query is treated conservatively: both
    branch sides feasible, addresses may alias). It is enforced as a Z3
    resource limit of `RLIMIT_PER_MS` units per millisecond, calibrated on
    the 2-core development machine, so that answers do not depend on how
    busy the machine is; a wall-clock cap of five times the timeout is the
    safety net. ``max_steps``: instructions executed over all flows.
    """

    time_s: float = 10.0
    max_paths: int = 256
    solver_timeout_ms: int = 200
    max_steps: int = 200_000


# How deep calls are inlined; deeper calls make the kernel ``partial``.
CALL_DEPTH = DEFAULT_MAX_DEPTH

# Runtime functions whose effects are known and touch no memory that the
# kernel's loads read: ``vprintf`` reads its argument buffer, ``__assertfail``
# stops the program, ``malloc``/``free`` hand out or take back fresh memory.
# libgomp's queries of the team and thread numbers (GCC OpenMP offload) and
# newlib's maths functions that GCC's offload code calls (pure on the device:
# no errno) read no user memory either.
_LIBM = (
    *("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh"),
    *("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "hypot"),
    *("fabs", "floor", "ceil", "round", "trunc", "fmod", "fmin", "fmax", "fdim", "copysign", "erf"),
)
_KNOWN_CALLS = frozenset(
    {
        "vprintf",
        "__assertfail",
        "malloc",
        "free",
        "omp_get_num_threads",
        "omp_get_thread_num",
        "omp_get_num_teams",
        "omp_get_team_num",
        "GOMP_teams4",
        *_LIBM,
        *(f + "f" for f in _LIBM),
    }
)

# Ranges of the OpenMP queries GCC's nvptx offload code calls (libgomp's
# nvptx port: a team is one CUDA block, at most 1024 threads; teams are
# blocks of a 1-D grid).
_OMP_RESULTS = {
    "omp_get_num_threads": (1, 1024),
    "omp_get_thread_num": (0, 1023),
    "omp_get_num_teams": (1, (1 << 31) - 1),
    "omp_get_team_num": (0, (1 << 31) - 2),
}
# Those that number threads or teams (below a count, typically 0).
_OMP_INDICES = frozenset({"omp_get_thread_num", "omp_get_team_num"})

# If-convert short register-only branch regions before the analysis
# (`ptxasw.analysis.ifconvert`); off, every such branch forks.
IF_CONVERT = True

# Terminators that decide nothing when unguarded.
_PLAIN_JUMPS = frozenset({"bra", "ret", "exit", "trap"})

# Join the flows of a fork where its sides meet again (`SymbolicExecutor`'s
# joins); off, each side runs to the end on its own.
JOIN_FLOWS = True

# The share of the final check's effort that a query gets when every
# under-approximation was refuted: no model at typical sizes is a strong hint
# that the query is unsat, and a proof Z3 does not find at a quarter of the
# effort it mostly does not find at all (GCC's chunk-bound queries on team
# and thread counts). Undecided is sound: both branch sides, may alias.
REFUTED_EFFORT = 0.25

# Z3 resource units per millisecond of solving on the development machine
# (measured: ~1.2 million units per 200 ms of bit-vector work).
RLIMIT_PER_MS = 6000

# The solver's exact shortcuts (`_Solver`: the connected part of the context,
# answers cached per query and context, loads fixed in the under-approximation;
# `_relation`: disjointness by stride). Off, every question goes through the
# older steps; tests compare both ways.
FAST_PATHS = True
# A query goes to the sliced solvers when its connected context has at most
# this many conjuncts: Z3 answers those in a millisecond, while a larger
# slice costs the model a full-context query would leave in the cache.
_SMALL_SLICE = 6


@dataclass(frozen=True, slots=True, eq=False)
class Access:
    """One memory event of a flow, in execution order.

    ``kind``: ``ld``, ``st``, ``atom`` or ``bar`` (a barrier: other threads'
    stores become visible; no address). ``space``: ``.global``, ``.shared``,
    ``.local``, ``.const``, ``.param`` or ``generic``. ``address`` is
    simplified; ``value`` is the loaded, stored or (atom) old value.
    ``guard`` is the instruction's guard when not known to hold.
    ``conditions`` is how many conjuncts of the flow's path condition held
    when the access ran (a prefix: path conditions only grow). ``loops``
    names the iteration symbols of the abstracted loops around it, innermost
    last (empty: straight-line code). ``version`` is the memory version a load
    read (0: memory as at kernel entry; -1: a kernel parameter; else the
    event that may have changed it). ``readonly``: a load of memory nothing
    writes while the kernel runs (``ld.global.nc``, ``ldu``, ``ld.const``),
    so no store of this thread or barrier invalidates it. ``source``: the
    CUDA/Fortran position from ``.loc``, if any. ``operands``: what an
    ``atom`` combines with the old value (its ``b``, and ``c`` for ``cas``),
    which is what it writes: the old value is whatever the other threads left,
    a fresh unknown of each run. ``memory``: the space the access reaches,
    ``space`` itself or, for a generic one, the space its address shows
    (`SymbolicExecutor._memory_space`: a thread's own stack, say).
    """

    kind: str
    space: str | None
    nbytes: int
    address: BV | None
    value: BV | None
    inst: ir.Instruction
    index: int
    block: int
    guard: z3.BoolRef | None
    conditions: int
    loops: tuple[str, ...]
    version: int
    source: str | None
    readonly: bool = False
    operands: tuple[BV, ...] = ()
    memory: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Observation:
    """Register values right after a watched instruction ran on a flow
    (`SymbolicExecutor`'s ``watch``): what a proof about a rewrite compares.
    ``conditions`` is the length of the path condition then, as for `Access`;
    ``trace_length`` how many accesses the flow had recorded. ``stand_ins``:
    the opaque values the first registers were given from there on, when the
    executor was asked to abstract watched values."""

    inst: ir.Instruction
    values: tuple[BV, ...]
    conditions: int
    trace_length: int
    stand_ins: tuple[BV, ...] = ()


@dataclass(eq=False)
class Flow:
    """One explored path: its accesses and path condition.

    A flow forked from ``parent`` shares the parent's first ``fork_index``
    accesses (they are repeated in ``trace``); a flow that continues two
    joined flows (``joined_from``) shares them with the first of the two.
    ``may_alias_store`` maps the trace index of a load to the trace index of
    the first later store (or atomic, or barrier) of this flow that may
    overwrite it. ``end``: ``ret``, ``exit``,
    ``trap``, ``fell-off`` (past the last instruction), ``loop`` (back at a
    loop header: one abstract iteration done), ``merged`` (at block
    ``end_block``, flow ``merged_into`` goes on for it: joined with the other
    side of a fork, or memoised in the same state), ``cycle`` (an irreducible cycle),
    ``budget`` (stopped by a budget). ``observations``: the values of the
    watched registers after each watched instruction, in execution order.
    """

    id: int
    parent: int | None = None
    fork_index: int = 0
    condition: tuple[z3.BoolRef, ...] = ()
    trace: list[Access] = field(default_factory=list)
    may_alias_store: dict[int, int] = field(default_factory=dict)
    blocks: list[int] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    end: str = "running"
    end_block: int | None = None
    merged_into: int | None = None
    joined_from: tuple[int, ...] = ()  # the flows this one continues (see `SymbolicExecutor._join`)

    @property
    def loads(self) -> list[Access]:
        return [a for a in self.trace if a.kind == "ld"]

    @property
    def stores(self) -> list[Access]:
        return [a for a in self.trace if a.kind == "st"]


@dataclass
class Stats:
    """Counters of one kernel's analysis."""

    instructions: int = 0
    blocks: int = 0
    loops: int = 0
    paths: int = 0
    forks: int = 0
    pruned: int = 0
    merged: int = 0
    joined: int = 0
    dropped: int = 0
    loop_entries: int = 0
    steps: int = 0
    solver_calls: int = 0
    solver_unknown: int = 0
    solver_seconds: float = 0.0
    model_hits: int = 0
    cheap_answers: int = 0  # queries answered by intervals, a cached model or a simpler query
    seconds: float = 0.0


@dataclass
class KernelAnalysis:
    """The analysis of one kernel: flows with their traces, and how it went."""

    kernel: str
    flows: list[Flow]
    status: str  # "complete" | "partial"
    reason: str | None
    stats: Stats
    unknown: list[tuple[str, str, str]] = field(default_factory=list)  # (ptx loc, mnemonic, why)
    names: dict[str, str] = field(default_factory=dict)  # symbol -> display name
    # Facts true in every flow (special-register ranges, iteration counts >= 0):
    # what a later query about these traces (shuffle detection) should assume.
    assumptions: list[z3.BoolRef] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def show(self, e: z3.ExprRef) -> str:
        """An expression as printed in traces (parameters as ``load(param_0)``)."""
        from ptxasw.emulator.symbolic.render import show

        return show(self, e)

    def counts(self) -> tuple[int, int]:
        """Distinct load and store instructions seen over all flows (reads of
        kernel parameters are not counted as loads)."""
        loads = {a.index for f in self.flows for a in f.trace if a.kind == "ld" and a.version >= 0}
        stores = {a.index for f in self.flows for a in f.trace if a.kind in ("st", "atom")}
        return len(loads), len(stores)

    def to_json(
        self, spaces: Iterable[str] | None = None, snapshot: Snapshot | None = None
    ) -> dict[str, Any]:
        """A JSON-able dict: expressions both pretty and as SMT-LIB terms
        (`render.to_json`). ``snapshot``: terms read for kernels printed
        before (`snapshot.shared`)."""
        from ptxasw.emulator.symbolic.render import to_json

        return to_json(self, spaces, snapshot)

    def format(
        self, spaces: Iterable[str] | None = None, shared: bool = False, snapshot: Snapshot | None = None
    ) -> str:
        """The human form, close to the paper's Listing 5 (`render.format_analysis`)."""
        from ptxasw.emulator.symbolic.render import format_analysis

        return format_analysis(self, spaces, shared, snapshot)


# --------------------------------------------------------------------------
# Internal state


@dataclass(frozen=True, slots=True, eq=False)
class _MemEvent:
    """A store to ``space`` (exact address) or a clobber (anything); either
    may change what loads of ``spaces`` read, but for a load whose address
    reaches another space than the store's (`_apart`)."""

    id: int
    kind: str  # "store" | "clobber"
    spaces: frozenset[str]
    space: str | None = None
    address: BV | None = None
    nbytes: int = 0
    value: BV | None = None
    guard: z3.BoolRef | None = None
    memory: str | None = None  # the space its address reaches (`SymbolicExecutor._memory_space`)


@dataclass(eq=False)
class _LoopCtx:
    loop: Loop
    iter: BV
    name: str


@dataclass(eq=False)
class _State:
    flow: Flow
    block: int
    env: dict[tuple[str, str | None], BV]
    pc: tuple[z3.BoolRef, ...]
    mem: list[_MemEvent]
    loops: list[_LoopCtx]
    visited: set[int]
    pending: int | None = None  # an edge to follow when the flow resumes
    undefined: dict[tuple[str, str | None], int] = field(default_factory=dict)  # reads before a write
    # The joins this flow will meet, innermost last: (block, fork number).
    joins: tuple[tuple[int, int], ...] = ()

    def fork(self, flow: Flow) -> _State:
        return _State(
            flow,
            self.block,
            dict(self.env),
            self.pc,
            list(self.mem),
            list(self.loops),
            set(self.visited),
            undefined=dict(self.undefined),
            joins=self.joins,
        )


class _DiffForms:
    """The `affine` forms of one address difference ``diff`` for accesses
    of ``na`` and ``nb`` bytes, each computed when first asked."""

    __slots__ = ("_equal", "_overlap", "_stride", "diff", "na", "nb")

    def __init__(self, diff: BV, na: int, nb: int) -> None:
        self.diff, self.na, self.nb = diff, na, nb
        self._stride: bool | None = None
        self._equal: z3.BoolRef | None = None
        self._overlap: z3.BoolRef | None = None

    def stride_disjoint(self) -> bool:
        if self._stride is None:
            self._stride = disjoint_by_stride(self.diff, self.na, self.nb)
        return self._stride

    def equal(self) -> z3.BoolRef:
        if self._equal is None:
            self._equal = equal_condition(self.diff)
        return self._equal

    def overlap(self) -> z3.BoolRef:
        if self._overlap is None:
            self._overlap = overlap_condition(self.diff, self.na, self.nb)
        return self._overlap


@dataclass(frozen=True, eq=False)
class _OpenRelation:
    """Two addresses whose difference ``diff`` is no constant: what
    `SymbolicExecutor._relation` asks the solver under a path condition,
    unless ``cheap`` (the stride forms already keep them apart)."""

    a: BV
    b: BV
    diff: BV
    na: int
    nb: int
    cheap: bool


@dataclass
class _LoopInfo:
    """What entering a loop needs, computed once per loop."""

    label: str  # unique among the kernel's loops: the name of its symbols
    written: set[str]
    # reg -> the signed loop-invariant steps added to it per iteration
    induction: dict[str, tuple[tuple[int, ir.Operand], ...]]
    additive: set[str]
    clobbers: frozenset[str]
    iteration: BV  # ``iter_<label>``: one symbol per loop (a flow enters a loop at most once)
    # regs whose every write in the loop is lane 0's value broadcast to the warp (GCC's OpenACC)
    broadcast: frozenset[str] = frozenset()


class _BudgetExceeded(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# The register the semantics keep the carry flag of add.cc/addc in.
_CARRY = "%__cc"

# Which spaces a store (or clobber) of one space may change.
_ALIASES = {
    ".global": frozenset({".global", "generic"}),
    ".shared": frozenset({".shared", "generic"}),
    ".local": frozenset({".local", "generic"}),
    ".param": frozenset({".param", "generic"}),
    ".const": frozenset({".const", "generic"}),
    "generic": frozenset({".global", ".shared", ".local", ".param", "generic"}),
}
_ALL_WRITABLE = frozenset({".global", ".shared", ".local", ".param", "generic"})

# (name, selector) of special registers with ISA ranges; the rest are free symbols.
_DIMS = ("x", "y", "z")
_SPECIAL_64 = {"%clock64", "%globaltimer", "%gridid"}
_VOLATILE = {"%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}


def _apart(memory: str | None, other: str | None) -> bool:
    """Whether accesses that reach these two spaces (`SymbolicExecutor._memory_space`)
    cannot touch the same byte: both known, and not the same."""
    return memory is not None and other is not None and "generic" not in (memory, other) and memory != other


def _normalize_space(space: str | None) -> str:
    if space is None or space == "generic":
        return "generic"
    base = space.split("::")[0]
    return base if base in _ALIASES else "generic"


# --------------------------------------------------------------------------
# Solver with a cache of models and scopes that follow the path condition


class _Incremental:
    """One incremental Z3 solver whose push scopes mirror a path condition.

    Depth-first exploration shares prefixes, so switching flows pops and
    pushes a few scopes instead of rebuilding the solver; facts true in
    every flow (register ranges) sit below all scopes.
    """

    def __init__(self, flat: bool = False) -> None:
        """``flat``: contexts share no prefixes (slices of a path condition),
        so each check asserts its context in one scope of its own: a Z3 push
        costs more than asserting a few formulas again."""
        self.solver = z3.Solver()
        self.solver.set("random_seed", 0)
        self.scopes: list[z3.BoolRef] = []
        self.flat = flat
        # Base facts asserted inside a scope: (fact, depth). A pop below the
        # depth asserts the fact again where the pop lands; at depth 0 it
        # is at the base for good.
        self.floating: list[tuple[z3.BoolRef, int]] = []

    def add_base(self, facts: Sequence[z3.BoolRef]) -> None:
        """Facts true under every scope. Asserted where the solver stands
        rather than below the scopes: popping every scope and pushing the
        path condition again makes Z3 internalise it again, which cost more
        than the checks on kernels that enter many loops (each loop entry
        brings an iteration range)."""
        self.solver.add(*facts)
        depth = len(self.scopes)
        if depth:
            self.floating.extend((f, depth) for f in facts)

    def sync(self, pc: Sequence[z3.BoolRef]) -> None:
        common = 0
        for a, b in zip(self.scopes, pc, strict=False):
            if a is not b and not a.eq(b):
                break
            common += 1
        drop = len(self.scopes) - common
        if drop:
            self.solver.pop(drop)
            del self.scopes[common:]
            if self.floating:
                lost = [f for f, depth in self.floating if depth > common]
                if lost:
                    self.solver.add(*lost)
                    kept = [(f, min(depth, common)) for f, depth in self.floating]
                    self.floating = [(f, depth) for f, depth in kept if depth > 0]
        for c in pc[common:]:
            self.solver.push()
            self.solver.add(c)
            self.scopes.append(c)

    def check(
        self, pc: Sequence[z3.BoolRef], extra: Sequence[z3.BoolRef], timeout_ms: int, rlimit: int
    ) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
        """The answer, and a model when it is sat (taken before the pop).
        ``rlimit`` bounds this check's work; ``timeout_ms`` its wall time."""
        if self.flat:
            extra = [*pc, *extra]
        else:
            self.sync(pc)
        self.solver.set("timeout", timeout_ms)
        self.solver.set("rlimit", rlimit)
        self.solver.push()
        try:
            self.solver.add(*extra)
            result = self.solver.check()
            return result, (self.solver.model() if result == z3.sat else None)
        finally:
            self.solver.pop()


_EnvKey = tuple[str, Any]  # a register's name and selector, as `_State.env` is keyed


def _is_load(e: z3.ExprRef) -> bool:
    """Whether ``e`` is a memory read (an application of a ``load_*`` function)."""
    return (
        z3.is_app_of(e, z3.Z3_OP_UNINTERPRETED)
        and e.num_args() > 0
        and z3.is_bv(e)
        and e.decl().name().startswith("load_")
    )


class _Model:
    """A model kept for answering later queries without the solver."""

    __slots__ = ("checked", "memo", "model", "ok")

    def __init__(self, model: z3.ModelRef) -> None:
        self.model = model
        self.memo: dict[int, tuple[z3.ExprRef, bool]] = {}
        self.checked = 0  # axioms evaluated so far
        self.ok = True  # all of them hold

    def holds(self, f: z3.ExprRef) -> bool:
        key = f.get_id()
        hit = self.memo.get(key)
        if hit is None:
            hit = (f, z3.is_true(self.model.eval(f, model_completion=True)))
            self.memo[key] = hit
        return hit[1]


_NONLINEAR = (
    z3.Z3_OP_BUDIV,
    z3.Z3_OP_BUDIV_I,
    z3.Z3_OP_BSDIV,
    z3.Z3_OP_BSDIV_I,
    z3.Z3_OP_BUREM,
    z3.Z3_OP_BUREM_I,
    z3.Z3_OP_BSREM,
    z3.Z3_OP_BSREM_I,
    z3.Z3_OP_BSMOD,
    z3.Z3_OP_BSMOD_I,
    z3.Z3_OP_BSHL,
    z3.Z3_OP_BLSHR,
    z3.Z3_OP_BASHR,
)


class _Solver:
    """Z3 queries under a path condition, answered as cheaply as possible.

    1. A cache of recent models: a query one of them satisfies is sat
       (most "can this branch go both ways" questions).
    2. With `FAST_PATHS`, the query with the factors of its non-linear
       terms fixed to typical sizes (an under-approximation: a model is
       one of the real query), before any over-approximation: a query
       that has a model is never refuted by one, and most have one. Where
       the query holds a 64-bit product of unknowns (a grid-stride loop),
       the fixed values are folded in on a solver of their own
       (`_fixed_check`), and local search (`local_search.local_model`)
       looks for a model where no typical size gave one.
    3. The query with every non-linear term (a product of two unknowns, a
       division or shift by an unknown) replaced by a variable of its own:
       an over-approximation, so unsat there is unsat for real. Products of
       thread and block indices with parameters are what makes bit-blasting
       slow, and proofs of disjoint addresses rarely need them.
    4. The real query, with the timeout.

    With `FAST_PATHS`, each query is first cut down to the conjuncts of the
    axioms and path condition it shares symbols with (`independence`): the
    path condition is taken to be satisfiable, so the rest cannot change the
    answer. Such sliced queries run on solvers of their own (no axioms at
    the base) and their answers are kept per (query, slice): sibling flows
    ask the same address questions under the same relevant conditions.
    """

    def __init__(self, timeout_ms: int, stats: Stats, deadline: float, budget_s: float) -> None:
        self.fast = FAST_PATHS
        self.real = _Incremental()
        self.abstract = _Incremental()
        self.sliced_real = _Incremental(flat=True)
        self.sliced_abstract = _Incremental(flat=True)
        self.symbols = Symbols()
        # (query ids, context ids) -> (the formulas, kept alive, and the answer)
        self._answers: dict[tuple[tuple[int, ...], ...], tuple[list[z3.BoolRef], bool | None]] = {}
        self.timeout_ms = timeout_ms
        self.rlimit = max(1, timeout_ms * RLIMIT_PER_MS)
        self.budget_s = budget_s
        self.stats = stats
        self.deadline = deadline
        self.axioms: list[z3.BoolRef] = []
        self.pending: list[z3.BoolRef] = []
        self.models: list[_Model] = []
        self._abs_vars: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self._abs_cache: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self._abs_nodes: dict[int, list[z3.ExprRef]] = {}  # formula id -> the terms replaced in it
        # Interval memo by term id, and `decided`'s answers by formula id;
        # every formula decided is kept with its answer, so no id in either
        # can be reused by a later term (an early answer or a restated query
        # is not kept anywhere else).
        self._ranges: dict[int, tuple[int, int]] = {}
        self._decisions: dict[int, tuple[z3.BoolRef, bool | None]] = {}
        self.bare = z3.Solver()  # for queries without their context
        self.bare.set("random_seed", 0)
        self.index_symbols: set[str] = set()  # see `typical_index`
        self._children: dict[int, tuple[z3.ExprRef, list[z3.ExprRef]]] = {}

    def assume(self, axiom: z3.BoolRef) -> None:
        """A fact true in every flow (a register range); added at the base."""
        self.pending.append(axiom)

    def _flush(self) -> None:
        if not self.pending:
            return
        self.real.add_base(self.pending)
        self.abstract.add_base([self._abstracted(a) for a in self.pending])
        self.axioms.extend(self.pending)
        self.pending = []

    def _abstracted(self, f: z3.ExprRef) -> z3.ExprRef:
        """``f`` with its maximal non-linear subterms replaced by variables
        (the same subterm always by the same variable)."""
        key = f.get_id()
        hit = self._abs_cache.get(key)
        if hit is not None:
            return hit[1]
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        seen: set[int] = set()
        ctx = f.ctx.ref()
        stack = [f.as_ast()]
        while stack:  # on the raw AST (`raw`): wrappers only for the terms replaced
            node = stack.pop()
            nid = raw.ast_id(ctx, node)
            if nid in seen or raw.ast_kind(ctx, node) != z3.Z3_APP_AST:
                continue
            seen.add(nid)
            kids = raw.args(ctx, node)
            kind = raw.operator(ctx, node)
            if kind == z3.Z3_OP_BMUL:
                nonlinear = sum(1 for k in kids if not raw.is_numeral(ctx, k)) >= 2
            else:
                nonlinear = kind in _NONLINEAR and not raw.is_numeral(ctx, kids[1])
            if nonlinear:
                var = self._abs_vars.get(nid)
                if var is None:
                    term = z3.z3._to_expr_ref(node, f.ctx)
                    var = (term, z3.BitVec(f"nl!{len(self._abs_vars)}", term.size()))
                    self._abs_vars[nid] = var
                pairs.append(var)
                continue
            stack.extend(kids)
        out = z3.substitute(f, *pairs) if pairs else f
        self._abs_cache[key] = (f, out)
        self._abs_nodes[key] = [node for node, _ in pairs]
        return out

    def _unsat_alone(self, formulas: Sequence[z3.BoolRef]) -> bool:
        """Whether ``formulas`` (non-linear terms abstracted) are unsat on
        their own, without the path condition or the axioms: dropping
        constraints over-approximates, so unsat is final. Address questions
        are mostly of this kind (``8*sext(x+1)`` and ``8*sext(x)`` never
        overlap, whatever ``x`` is) and tiny without their context."""
        self.bare.set("rlimit", max(1, self.rlimit // 20))
        self.bare.push()
        try:
            self.bare.add(*formulas)
            return self.bare.check() == z3.unsat
        finally:
            self.bare.pop()

    def _nonlinear_pairs(self, formulas: Sequence[z3.BoolRef]) -> list[z3.ExprRef]:
        """The non-linear subterms that `_abstracted` replaced in ``formulas``."""
        out: list[z3.ExprRef] = []
        for f in formulas:
            out.extend(self._abs_nodes.get(f.get_id(), ()))
        return out

    def _typical_sizes(
        self, nonlinear: Sequence[z3.ExprRef], size: int | None, flat_block: bool = False
    ) -> list[z3.BoolRef]:
        """Equalities fixing the unknowns under ``nonlinear`` terms to
        ``size`` (block dimensions to 32, or 1 when ``size`` is 1; an
        index registered with `typical_index` to 0, so that it stays below
        the count it indexes), or with ``size`` None to their values in the
        latest cached model (a model of the path so far: its parameters
        usually fit the next branch too). Every unknown leaf is fixed, not
        only a product's direct factors: GCC's chunk bounds divide a
        difference of two loaded bounds by the team size, and fixing only
        the divisor leaves a 32-bit divider to bit-blast. Any added equality
        keeps the query an under-approximation.

        ``flat_block``: a block of 32x32x1 rather than 32x32x32, which breaks
        the ISA's limit of 1,024 threads and so refutes every query that
        multiplies the three. Only for tries asked with the values folded
        in (`_fixed_check`): beside the incremental solver's multipliers a
        consistent block turned Z3's quick refutations into undecided
        answers."""
        fixes: dict[str, z3.BoolRef] = {}
        model = self.models[0].model if size is None and self.models else None
        if size is None and model is None:
            return []
        for leaf in self._unknown_leaves(nonlinear):
            if z3.is_const(leaf):
                name = leaf.decl().name()
                if name.startswith(("%tid", "%ctaid", "%laneid", "iter_")):
                    continue  # indices the addresses are linear in
            elif self.fast:
                # A loaded factor, divisor or dividend (GCC OpenMP's team size
                # ``chunk = n / nthreads`` reads it from memory).
                name = f"load#{leaf.get_id()}"
            else:
                continue
            if size is None:
                value = model.eval(leaf, model_completion=True)
            elif name in self.index_symbols:
                value = z3.BitVecVal(0, leaf.size())
            elif flat_block and name == "%ntid.z":
                value = 1
            else:
                value = min(32, size) if name.startswith("%ntid") else size
            fixes.setdefault(name, leaf == value)
        return list(fixes.values())

    def typical_index(self, symbol: z3.ExprRef) -> None:
        """Mark ``symbol`` as an index below some count (an OpenMP thread or
        team number): `_typical_sizes` fixes it to 0 rather than to the
        count's typical size, which would break ``index < count``."""
        self.index_symbols.add(symbol.decl().name())

    def _unknown_leaves(self, nonlinear: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
        """The symbols and loads that ``nonlinear`` terms are built from,
        reached through their arithmetic (not into load addresses)."""
        out: list[z3.ExprRef] = []
        seen: set[int] = set()
        stack = list(nonlinear)
        while stack:
            node = stack.pop()
            key = node.get_id()
            if key in seen or z3.is_bv_value(node):
                continue
            seen.add(key)
            if z3.is_const(node) or _is_load(node):
                out.append(node)
            elif z3.is_app(node):
                stack.extend(self._kids(node))
        return out

    def _kids(self, e: z3.ExprRef) -> list[z3.ExprRef]:
        """``e.children()``, memoised by id (the term is kept with them)."""
        hit = self._children.get(e.get_id())
        if hit is None:
            hit = (e, e.children())
            self._children[e.get_id()] = hit
        return hit[1]

    def _cached(self, formulas: Sequence[z3.BoolRef]) -> bool:
        """Whether a recent model satisfies the axioms and ``formulas``.

        Each model remembers what it made of every formula it evaluated (the
        formula is kept with the answer, so its id cannot be reused) and how
        many axioms it was checked against; path conditions repeat from query
        to query, so most evaluations are dictionary hits.
        """
        axioms = self.axioms + self.pending
        for i, entry in enumerate(self.models):
            if entry.checked < len(axioms):
                entry.ok = entry.ok and all(entry.holds(f) for f in axioms[entry.checked :])
                entry.checked = len(axioms)
            if entry.ok and all(entry.holds(f) for f in formulas):
                if i:
                    self.models.insert(0, self.models.pop(i))
                return True
        return False

    def _satisfies(self, formulas: Sequence[z3.BoolRef]) -> bool:
        """Whether a recent model satisfies ``formulas`` (a query with the
        connected part of its context, axioms included: no other check)."""
        for i, entry in enumerate(self.models):
            if all(entry.holds(f) for f in formulas):
                if i:
                    self.models.insert(0, self.models.pop(i))
                return True
        return False

    def _timeout(self) -> int:
        """The wall-clock cap of the next check: the safety net behind the
        resource limit, never past the kernel's deadline."""
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            raise _BudgetExceeded(f"time budget of {self.budget_s:g} s exceeded")
        return max(1, min(5 * self.timeout_ms, int(remaining * 1000)))

    def decided(self, formula: z3.BoolRef) -> bool | None:
        """What the ranges of ``formula``'s terms alone make of it
        (`intervals.decide`): always true, always false, or None."""
        return decide(formula, self._ranges, self._decisions)

    def check(self, pc: Sequence[z3.BoolRef], extra: Sequence[z3.BoolRef]) -> bool | None:
        """Is ``pc ∧ extra`` (with the axioms) satisfiable? None: unknown.

        ``pc`` is a path condition being explored, so taken to be satisfiable:
        when the ranges of ``extra``'s terms alone decide it (`intervals`),
        that is the answer without a solver.
        """
        return self.check_rewritten(pc, extra, None)

    def check_rewritten(
        self,
        pc: Sequence[z3.BoolRef],
        extra: Sequence[z3.BoolRef],
        solver_form: Sequence[z3.BoolRef] | None,
    ) -> bool | None:
        """`check`, with ``solver_form`` (when given) formulas equivalent to
        ``extra`` that the solver steps ask instead: the same models, a
        cheaper proof (`affine.overlap_condition`). The interval pass reads
        ``extra``, whose comparisons it understands."""
        decided = [self.decided(c) for c in extra]
        if False in decided:
            self.stats.cheap_answers += 1
            return False
        if all(d is True for d in decided):
            self.stats.cheap_answers += 1
            return True
        if solver_form is not None:
            extra = solver_form
        if not self.fast and self._cached([*pc, *extra]):
            self.stats.model_hits += 1
            self.stats.cheap_answers += 1
            return True
        self._flush()
        real, abstract, context = self.real, self.abstract, pc
        if self.fast:
            # Only the connected part matters: it is the key of the answer
            # (sibling flows differ in conditions the query does not
            # mention), a cached model need only satisfy it (a model of a
            # sibling flow or of an earlier slice will do), and a small one
            # runs on solvers without the axioms at their base (they are in
            # the slice where needed).
            part = connected(self.symbols, extra, [*self.axioms, *pc])
            key = (tuple(c.get_id() for c in extra), tuple(c.get_id() for c in part))
            known = self._answers.get(key)
            if known is not None:
                self.stats.cheap_answers += 1
                return known[1]
            if self._satisfies([*part, *extra]):
                self.stats.model_hits += 1
                self.stats.cheap_answers += 1
                self._answers[key] = ([*extra, *part], True)
                return True
            if len(part) <= _SMALL_SLICE < len(self.axioms) + len(pc):
                real, abstract, context = self.sliced_real, self.sliced_abstract, part
        start = time.perf_counter()
        try:
            answer = self._solve(real, abstract, context, extra, keep_models=real is self.real)
        finally:
            self.stats.solver_seconds += time.perf_counter() - start
        if self.fast:
            self._answers[key] = ([*extra, *part], answer)
        return answer

    def _solve(
        self,
        real: _Incremental,
        abstract: _Incremental,
        pc: Sequence[z3.BoolRef],
        extra: Sequence[z3.BoolRef],
        keep_models: bool,
    ) -> bool | None:
        """The solver steps of `check` on ``real``/``abstract`` (whose base
        facts ``pc`` is asked on top of). ``keep_models``: models found are
        models of everything (not of a slice) and go to the cache."""
        apc = [self._abstracted(c) for c in pc]  # also records the non-linear terms for `_nonlinear_pairs`
        aextra = [self._abstracted(c) for c in extra]
        pairs = self._nonlinear_pairs([*pc, *extra])
        # Under-approximations first: most queries are satisfiable (a branch
        # that can go both ways, addresses that may meet), and a model of the
        # query with its factors fixed settles them; the over-approximations
        # below can only prove unsat.
        wide = None
        if self.fast and any(term.size() > 32 for term in pairs):
            wide = [*self.axioms, *pc, *extra] if real is self.real else [*pc, *extra]
        typical = None
        if pairs and self.fast:
            typical = self._under_approximations(real, pc, extra, pairs, keep_models, wide)
            if typical:
                return True
        # Local search finds a model in a few milliseconds where there is one,
        # and spends its whole cap (~0.2 s) where there is none. Where every
        # typical try was refuted the query is mostly unsat (CUB's 64-bit
        # tile offsets: 29 of 39 searches found nothing), so the cheap
        # over-approximations go first there.
        if wide is not None and typical is not False and self._local_model(wide, keep_models):
            return True
        if pc and not real.flat:  # a slice is already about as small
            self.stats.solver_calls += 1
            if self._unsat_alone(aextra):
                self.stats.cheap_answers += 1
                return False
        if pairs:
            self.stats.solver_calls += 1
            if abstract.check(apc, aextra, self._timeout(), self.rlimit // 4)[0] == z3.unsat:
                self.stats.cheap_answers += 1
                return False
            if not self.fast and self._under_approximations(real, pc, extra, pairs, keep_models):
                return True
            self.stats.solver_calls += 1
        if wide is not None and typical is False and self._local_model(wide, keep_models):
            return True
        # A non-linear query that the cheaper forms left open gets half the
        # effort: with the under- and over-approximations before it, the whole
        # question still costs about one `rlimit`, and what is still open here
        # (a division by a team size, a product of two unknowns) mostly ends
        # undecided at any effort; undecided is sound (both sides, may alias).
        effort = self.rlimit // 2 if pairs else self.rlimit
        if typical is False:
            effort = max(1, int(effort * REFUTED_EFFORT))
        result, model = real.check(pc, extra, self._timeout(), effort)
        if model is not None:
            self._keep(model, keep_models)
            return True
        if result == z3.unsat:
            return False
        self.stats.solver_unknown += 1
        return None

    def _local_model(self, wide: Sequence[z3.BoolRef], keep_models: bool) -> bool:
        """Whether local search (`local_model`) found a model of ``wide``."""
        self.stats.solver_calls += 1
        model = local_model(wide)
        if model is None:
            return False
        self.stats.cheap_answers += 1
        self._keep(model, keep_models)
        return True

    def _under_approximations(
        self,
        real: _Incremental,
        pc: Sequence[z3.BoolRef],
        extra: Sequence[z3.BoolRef],
        pairs: Sequence[z3.ExprRef],
        keep_models: bool,
        wide: Sequence[z3.BoolRef] | None = None,
    ) -> bool | None:
        """Whether the query with the factors of its products fixed to
        typical sizes (`_typical_sizes`) has a model: the query made linear,
        and a model of it is one of the real query (kept when ``keep_models``).
        True: a model was found; False: every try was refuted; None: some
        try was undecided, or there was nothing to fix.

        ``wide``: the whole query (context included) when it holds a 64-bit
        product of unknowns; its tries are then asked with the fixed values
        put in (`_fixed_check`), not beside the multipliers."""
        refuted = 0
        tried = 0
        for size in (None, 64, 1) if self.fast else (64, 1):
            fixes = self._typical_sizes(pairs, size, flat_block=wide is not None)
            if not fixes and (size is None or self.fast):
                continue  # nothing fixed: the real query, asked below with its full effort
            self.stats.solver_calls += 1
            tried += 1
            if wide is not None:
                result, model = self._fixed_check(wide, fixes)
            else:
                result, model = real.check(pc, [*extra, *fixes], self._timeout(), self.rlimit // 8)
            if model is not None:
                self.stats.cheap_answers += 1
                self._keep(model, keep_models)
                return True
            refuted += result == z3.unsat
        return False if tried and refuted == tried else None

    def _fixed_check(
        self, formulas: Sequence[z3.BoolRef], fixes: Sequence[z3.BoolRef]
    ) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
        """``formulas`` with the values of ``fixes`` (``leaf == value``)
        substituted and folded, on a solver of their own. Beside an
        incremental solver's 64-bit multipliers, a try whose fixes make the
        products constant still cost 40-300 ms (the core bit-blasts the
        multiplier before it propagates the constants); folded first, most
        are decided by simplification alone. The fixes are asserted too, so
        that a model gives the fixed leaves their values."""
        values = [
            (fix.arg(1), fix.arg(0)) if z3.is_bv_value(fix.arg(0)) else (fix.arg(0), fix.arg(1))
            for fix in fixes
        ]
        folded = [simplify(z3.substitute(f, *values)) for f in formulas]
        if any(z3.is_false(f) for f in folded):
            return z3.unsat, None
        solver = z3.Solver()
        solver.set("random_seed", 0)
        solver.set("timeout", self._timeout())
        solver.set("rlimit", self.rlimit // 8)
        solver.add(*[f for f in folded if not z3.is_true(f)], *fixes)
        result = solver.check()
        return result, (solver.model() if result == z3.sat else None)

    def _keep(self, model: z3.ModelRef, keep: bool) -> None:
        if keep:
            self.models.insert(0, _Model(model))
            del self.models[6:]


# --------------------------------------------------------------------------
# The executor (and the symbolic Machine)


class SymbolicExecutor:
    """Explores one kernel; also the `Machine` the semantics run against.

    The semantics object is created once; the executor points ``self.state``
    at the flow being run before executing its instructions.
    """

    def __init__(
        self,
        module: ir.Module,
        fn: ir.Function,
        budget: Budget | None = None,
        strict: bool = False,
        *,
        merge: bool = True,
        watch: dict[int, tuple[ir.Register, ...]] | None = None,
        stand_ins: dict[int, int] | None = None,
        guard_visible_memory: bool = True,
    ) -> None:
        """``strict``: an instruction the semantics cannot model raises
        `UnsupportedInstruction` (with its ``file:line:col``) instead of
        giving its results fresh values; for the lifter, which must never
        compute with a made-up value.

        ``merge``: stop a flow that reaches a block in the same state as an
        earlier one (memoisation). A proof that pairs the flows of two
        versions of a kernel turns it off, so that every path is its own flow
        with its own path condition. ``watch``: ``id()`` of module
        instructions -> registers whose values are recorded after the
        instruction runs (`Flow.observations`). ``stand_ins``: per watched
        instruction, how many of its registers, from the first, then
        continue as fresh opaque values (its ``stand_ins``: a rewritten
        vector load has several), so that later terms are built over symbols a proof
        can put the original value for, rather than over the rewritten code's
        term, which the simplifier may have reshaped around.
        ``guard_visible_memory``: if-conversion may take regions with
        global or generic loads and stores (`ifconvert`). The synthesis
        turns it off: it places shuffles where loads were, and its proof
        pairs the original's flows with the rewrite's, whose shuffles stay
        branches."""
        from ptxasw.emulator.semantics.instructions import Semantics  # written alongside; imported late

        self.module = module
        self.fn = fn
        self._register_types: dict[str, str | None] | None = None  # see `_declared_width`
        self.budget = budget or Budget()
        self.strict = strict
        # .reqntid (or GCC's offload map) fixes the block shape: %ntid are
        # constants, lanes map to %tid exactly.
        self.block_shape = _perf_shape(fn, ".reqntid") or module.index().launch_blocks.get(fn.name)
        self.max_block = _perf_shape(fn, ".maxntid")
        self.dom = SymbolicDomain(lanes=LaneModel(self.block_shape))
        # Callees are pasted in at their call sites; calls that could not be
        # (indirect, recursive, too deep, no body) are remembered with why.
        inlined = inline_calls(module, fn, CALL_DEPTH)
        self.not_followed = inlined.skipped
        self.origin = inlined.origin
        # Forward-branching code that only computes (and reads memory) runs
        # guarded on one flow (`ifconvert`): k branches in a row no longer
        # make 2^k flows.
        watched = frozenset(
            id(inst)
            for inst in (inlined.function.instructions() if watch else ())
            if id(inlined.origin.get(id(inst), inst)) in watch
        )
        converted = (
            if_convert(inlined.function, visible_memory=guard_visible_memory, keep=watched)
            if IF_CONVERT
            else Converted(inlined.function)
        )
        for copy, source in converted.origin.items():
            self.origin[copy] = inlined.origin.get(id(source), source)
        self.cfg: CFG = build_cfg(converted.function)
        self.stats = Stats(
            instructions=len(self.cfg.instructions), blocks=len(self.cfg.blocks), loops=len(self.cfg.loops)
        )
        self.start = time.perf_counter()
        self.deadline = self.start + self.budget.time_s
        self.solver = _Solver(self.budget.solver_timeout_ms, self.stats, self.deadline, self.budget.time_s)
        self.semantics = Semantics(self)
        self.state: _State | None = None
        self.inst_index = 0
        self.flows: list[Flow] = []
        self._unknown: dict[int, tuple[str, str, str]] = {}
        self._spaces: dict[str, str] | None = None  # variable -> state space (isspacep)
        self.names: dict[str, str] = {}
        self.specials: dict[str, BV] = {}
        self.symbols: dict[str, str] = {}  # "&name" constant -> symbol name
        self.params = self._kernel_params()
        self.param_names = {display for display, _ in self.params.values()}
        self._param_bits = {display: 8 * size for display, size in self.params.values()}
        # `_split_symbol` and `_symbol_term` of addresses, by term id (the term
        # kept alive with its answer): a store compares its address with every
        # earlier load's, thousands of times in GCC's -O0 frame code.
        self._splits: dict[int, tuple[BV, tuple[str | None, int]]] = {}
        self._bases: dict[int, tuple[BV, str | None]] = {}
        self._stack_rooted: dict[int, tuple[BV, bool]] = {}
        # Per generic address, the space it reaches (`_memory_space`): asked by
        # the trace, the lookup and the store of one access.
        self._memories: dict[int, tuple[BV, str]] = {}
        # Address differences' pure forms (`affine`), by (difference id, sizes):
        # sibling flows compare the same addresses (GCC's -O3 npb_bt y_solve:
        # 6,722 comparisons of 1,296 differences).
        self._diff_forms: dict[tuple[int, int, int], tuple[BV, _DiffForms]] = {}
        # `_term_relation` by (address ids, sizes, precise), the terms kept alive.
        self._relations: dict[tuple[int, int, int, int, bool], tuple[Any, str | int | _OpenRelation]] = {}
        self._omp_teams: BV | None = None  # omp_get_num_teams(), one value per kernel
        self.sources = self._source_positions()
        self.loop_infos: dict[int, _LoopInfo] = {}
        self.loop_by_header = {loop.header: loop for loop in self.cfg.loops}
        self.memo: dict[tuple[Any, ...], tuple[int, list[BV], tuple[z3.BoolRef, ...]]] = {}
        self._unbranching: dict[int, bool] = {}  # `_covered`: blocks from which no path branches
        # Joins (`_open_join`): (work-list length at the fork, fork number) of
        # forks whose flows are not all done, innermost last; the flows
        # waiting at each fork's join.
        self._open: list[tuple[int, int]] = []
        self._waiting: dict[int, list[_State]] = {}
        self._join_numbers = 0
        # `_step`: (instruction, input ids) -> (the inputs, kept alive; what it wrote),
        # and per instruction the env keys it reads and writes (None: not pure).
        self._steps: dict[tuple[int, ...], tuple[list[BV], list[tuple[_EnvKey, BV]]]] = {}
        self._pure: dict[int, tuple[list[_EnvKey], list[_EnvKey]] | None] = {}
        self._written: list[_EnvKey] | None = None  # the keys `write` sets, while `_step` records
        self.counter = 0
        self.loop_entries = 0
        self.partial: str | None = None
        self._load_funcs: dict[tuple[str, int, int, int], z3.FuncDeclRef] = {}
        self._load_bits: dict[str, int] = {}  # load function name -> value width
        self.merge = merge
        self.watch = watch or {}
        self.stand_ins = stand_ins or {}

    # ---- setup -------------------------------------------------------------

    def _kernel_params(self) -> dict[str, tuple[str, int]]:
        """Entry parameter name -> (display name, size in bytes)."""
        out = {}
        prefix = f"{self.fn.name}_param_"
        for p in self.fn.params:
            short = p.name[len(prefix) :] if p.name.startswith(prefix) else p.name
            bits = isa.type_bits(p.type) or 8
            count = {".v2": 2, ".v4": 4, ".v8": 8}.get(p.vector or "", 1)
            for dim in p.array:
                count *= dim or 1
            out[p.name] = (f"param_{short}", max(1, bits // 8) * count)
        return out

    def _source_positions(self) -> dict[int, str]:
        """Instruction identity -> ``file:line`` of the ``.loc`` before it."""
        files = {index: os.path.basename(path) for index, path in self.module.index().files.items()}
        out: dict[int, str] = {}
        current: str | None = None
        for stmt in self.cfg.statements:
            if isinstance(stmt, ir.LocDirective):
                current = f"{files.get(stmt.file, f'file{stmt.file}')}:{stmt.line}"
            elif isinstance(stmt, ir.Instruction) and current is not None:
                out[id(stmt)] = current
        return out

    # ---- the Machine protocol ----------------------------------------------

    def read(self, reg: ir.Register, width: int) -> BV:
        """A register resized to ``width`` (zero-extended or truncated)."""
        if is_special_register(reg.name):
            value = self._special(reg)
        else:
            st = self._st()
            key = (reg.name, reg.selector)
            value = st.env.get(key)
            if value is None:
                # Read before any write on this flow: the register's unknown
                # initial value. Named by the register and how many such reads
                # of it the flow made (not fresh): the same read in the
                # rewritten kernel's run gives the same term, so a value it
                # masks (``p && undef`` where p is false) matches the original.
                count = st.undefined.get(key, 0)
                st.undefined[key] = count + 1
                value = z3.BitVec(f"undef.{_reg_text(reg)}#{count}", self._declared_width(reg, width))
                st.env[key] = value
        return _resize(self.dom, value, width)

    def _declared_width(self, reg: ir.Register, width: int) -> int:
        """The bits ``reg`` is declared with (``width``, the reader's, when
        the declaration does not say). An unknown initial value has the
        register's own width: a 32-bit register read first as a 64-bit
        shared address, and written later on another path, must join that
        path's 32-bit value."""
        if reg.selector is not None:
            return width
        if self._register_types is None:
            self._register_types = register_types(self.fn)
        return isa.type_bits(self._register_types.get(reg.name)) or width

    def write(self, reg: ir.Register, value: BV) -> None:
        if is_special_register(reg.name):
            return  # read-only; ptxas would refuse the PTX
        key = (reg.name, reg.selector)
        self._st().env[key] = value
        if self._written is not None:
            self._written.append(key)

    def symbol_address(self, name: str, width: int) -> BV:
        if name == "WARP_SZ":
            return self.dom.const(32, width)
        text = f"&{name}"
        self.symbols[text] = name
        param = self.params.get(name)
        if param is not None:
            self.names[text] = f"&{param[0]}"
        return z3.BitVec(text, width)

    def load(self, inst: ir.Instruction, space: str, address: BV, nbytes: int, cond: BV | None) -> BV:
        st = self._st()
        space = _normalize_space(space)
        guard = self._guard(cond)
        if guard is not None and z3.is_false(guard):
            return self.dom.fresh("unread", 8 * nbytes)
        address = simplify(address)
        if space == ".param":
            value = self._param_value(address, nbytes)
            if value is not None:
                # Version -1: a kernel parameter, constant for the whole launch.
                self._record(st, "ld", space, nbytes, address, value, inst, guard, -1)
                return value
            if self._call_slot(address):
                # Argument passing of an inlined call: forwarded, not traced.
                return self._lookup(st, space, address, nbytes)[0]
        readonly = space == ".const" or inst.opcode == "ldu" or inst.has(".nc")
        if readonly:
            # Memory that no one writes during the launch: stores in between
            # cannot have changed it (they would be a data race ptxas may assume away).
            value, version = self._initial(space, address, nbytes, 0), 0
        else:
            value, version = self._lookup(st, space, address, nbytes)
        self._record(st, "ld", space, nbytes, address, value, inst, guard, version, readonly)
        return value

    def store(
        self, inst: ir.Instruction, space: str, address: BV, value: BV, nbytes: int, cond: BV | None
    ) -> None:
        st = self._st()
        space = _normalize_space(space)
        guard = self._guard(cond)
        if guard is not None and z3.is_false(guard):
            return
        address = simplify(address)
        value = _resize(self.dom, value, 8 * nbytes)
        if space == ".param" and self._call_slot(address):
            # Argument passing of an inlined call: a store only the callee reads.
            event_id, spaces = self._new_event_id(), _ALIASES[space]
            st.mem.append(_MemEvent(event_id, "store", spaces, space, address, nbytes, value, guard))
            return
        index = self._record(st, "st", space, nbytes, address, value, inst, guard, 0)
        self._write_memory(st, space, address, nbytes, value, guard, index)

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: BV,
        operands: list[BV],
        nbytes: int,
        cond: BV | None,
    ) -> BV:
        st = self._st()
        space = _normalize_space(space)
        guard = self._guard(cond)
        old = self.dom.fresh(f"atom.{op}", 8 * nbytes)
        if guard is not None and z3.is_false(guard):
            return old
        address = simplify(address)
        written = tuple(operands)
        index = self._record(st, "atom", space, nbytes, address, old, inst, guard, 0, operands=written)
        # The old value is whatever the other threads left (fresh); what this
        # thread then stores is the shared read-modify-write of it. A later
        # plain load of the word would race with other threads' atomics, which
        # the memory model leaves undefined, so this thread's view is enough.
        ptx_type = isa.instruction_type(inst) or f".b{8 * nbytes}"
        if atomic_supported(op, ptx_type) and all(self.dom.width(v) == 8 * nbytes for v in operands):
            b = operands[0]
            new = atomic_update(self.dom, op, ptx_type, old, b, operands[1] if len(operands) > 1 else b)
        else:
            self.unknown(inst, f"atomic {op} on {ptx_type} is not modelled")
            new = self.dom.fresh(f"atom.{op}.new", 8 * nbytes)
        self._write_memory(st, space, address, nbytes, new, guard, index)
        return old

    def warp(self, inst: ir.Instruction, operands: list[BV], cond: BV | None) -> list[BV]:
        """The shared collectives over the lane model: a value in another lane
        is the expression with that lane's thread ids (`LaneModel`). The warp
        is taken as converged: its active lanes are those that exist. A
        ``.sync`` form names its lanes in its member mask, which PTX requires
        to be active, so there the active mask adds nothing and is left out
        (all ones) to keep the terms small."""
        self._sym("%laneid")  # its tie to %tid enters the solver
        synced = inst.has(".sync") and inst.opcode != "activemask"
        active = self.dom.const(0xFFFFFFFF, 32) if synced else self.dom.lanes.existing()
        return warp_collective(self.dom, inst, operands, cond, active)

    def barrier(self, inst: ir.Instruction, cond: BV | None) -> None:
        st = self._st()
        if inst.opcode == "bar.warp.sync":
            return  # orders the warp's own accesses; other lanes' stores are not ours to see
        # Other threads' stores to shared and global memory become visible.
        index = self._record(st, "bar", None, 0, None, None, inst, self._guard(cond), 0)
        spaces = frozenset({".shared", ".global", "generic"})
        self._clobber(st, spaces, index)

    def convert_address(self, inst: ir.Instruction, space: str, value: BV, to_generic: bool) -> BV:
        """``cvta`` (an optional hook of the semantics): the identity. Generic
        and space-specific addresses of one object are the same number here,
        as for global memory on the GPU; which space is meant is the access's."""
        return value

    def in_space(self, inst: ir.Instruction, space: str, address: BV) -> BV:
        """``isspacep`` (an optional hook). The address of a declared variable
        (``&name + c``) is in its variable's space and no other: 1 or 0. Any
        other address (a pointer loaded or passed in) may be anywhere: an
        unknown bit, reported (strict mode: an error)."""
        base, _ = self._split(simplify(address))
        declared = None if base is None else self._space_of(self.symbols.get(base, base[1:]))
        if declared is None:
            self.unknown(inst, "isspacep of an address not based on a declared variable")
            return self.dom.fresh(f"isspacep{space}", 1)
        return self.dom.const(int(_normalize_space(declared) == _normalize_space(space.split("::")[0])), 1)

    def _space_of(self, name: str) -> str | None:
        """The state space of the variable ``name`` the kernel may name (module,
        body, callees, parameters), or None. A counted declaration
        (``.param.u64 %P<2>``) is matched by prefix, not expanded."""
        if self._spaces is None:
            fn = self.cfg.function  # with its callees' variables
            decls = list(self.module.index().variables)
            stack = [fn.body.body] if fn.body is not None else []
            while stack:
                for stmt in stack.pop():
                    if isinstance(stmt, ir.VarDecl):
                        decls.append(stmt)
                    elif isinstance(stmt, ir.Block):
                        stack.append(stmt.body)
            self._spaces = {p.name: p.space for p in fn.params}
            self._counted_spaces: list[tuple[str, int, str]] = []
            self._bytes: dict[str, int | None] = {}
            for decl in decls:
                for v in decl.names:
                    if v.count is None:
                        self._spaces[v.name] = decl.space
                        var = var_of(decl, v)
                        self._bytes[v.name] = None if var.unsized else var.size
                    else:
                        self._counted_spaces.append((v.name, v.count, decl.space))
        space = self._spaces.get(name)
        if space is not None:
            return space
        for prefix, count, space in self._counted_spaces:
            digits = name[len(prefix) :]
            numeral = digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0")
            if name.startswith(prefix) and numeral and int(digits) < count:
                return space
        return None

    def _declared_bytes(self, name: str) -> int | None:
        """The size of the variable ``name`` the kernel declares (as the
        interpreter lays it out), or None when unknown."""
        self._space_of(name)  # reads the declarations once
        return self._bytes.get(name)

    def cta_reduce(self, inst: ir.Instruction, mode: str, pred: BV, cond: BV | None) -> BV:
        """``bar.red`` (an optional hook): `bar_reduce` over the CTA's warps.

        One symbolic thread cannot enumerate the other threads' predicates,
        so a warp's ballot is opaque: ``cta_ballot(p, warp)``, with ``p`` this
        thread's predicate (and guard) with its thread ids replaced by ids
        common to all threads. The result is the same term in every thread
        and flow for the same predicate, and claims what `bar_reduce` does
        over the warps a known block shape (``.reqntid``) has; without one,
        ``bar_red_<mode>(p, guard)``, opaque.
        """
        d = self.dom
        took_part = d.const(1, 1) if cond is None else cond
        lanes = d.lanes
        ids = [lanes.tid(s) for s in _DIMS] + [lanes.laneid]
        pairs = [(t, z3.BitVec(f"%cta.{t.decl().name()[1:]}", 32)) for t in ids if not z3.is_bv_value(t)]
        p = z3.substitute(simplify(d.and_(pred, took_part)), *pairs)
        part = z3.substitute(simplify(took_part), *pairs)
        if self.block_shape is None:
            width = 32 if mode == ".popc" else 1
            fn = z3.Function(f"bar_red_{mode[1:]}", z3.BitVecSort(1), z3.BitVecSort(1), z3.BitVecSort(width))
            return fn(p, part)  # type: ignore[return-value]
        ballot = z3.Function("cta_ballot", z3.BitVecSort(1), z3.BitVecSort(32), z3.BitVecSort(32))
        nwarps = -(-_product(self.block_shape) // 32)
        warps = [(ballot(p, w), ballot(part, w)) for w in range(nwarps)]
        return simplify(bar_reduce(d, mode, warps))  # type: ignore[arg-type]

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        if self.strict:
            raise UnsupportedInstruction(inst.mnemonic, reason, inst.loc)
        key = self.inst_index
        if key not in self._unknown:
            self._unknown[key] = (str(inst.loc), inst.mnemonic, reason)

    # ---- helpers of the machine ---------------------------------------------

    def _st(self) -> _State:
        assert self.state is not None, "no flow is running"
        return self.state

    def _guard(self, cond: BV | None) -> z3.BoolRef | None:
        """A memory access's guard: None when it always holds, ``False``
        when it never does (by the ranges of its terms: an access
        if-converted under a bounds check the ranges decide, which a
        branch would have pruned), else the condition."""
        if cond is None:
            return None
        g = simplify(as_bool(cond))
        if z3.is_true(g):
            return None
        if z3.is_false(g):
            return g
        decided = self.solver.decided(g)
        if decided is None:
            return g
        self.stats.cheap_answers += 1
        return None if decided else z3.BoolVal(False, g.ctx)

    def _special(self, reg: ir.Register) -> BV:
        text = _reg_text(reg)
        if reg.name in _VOLATILE:
            return self.dom.fresh(text, 64 if reg.name in _SPECIAL_64 else 32)
        value = self.specials.get(text)
        if value is None:
            lanes = self.dom.lanes
            if self.block_shape is not None and reg.name in ("%ntid", "%tid") and reg.selector in _DIMS:
                # A known block shape: %ntid are constants, a dimension of 1 has %tid 0.
                known = lanes.ntid(reg.selector) if reg.name == "%ntid" else lanes.tid(reg.selector)
                if z3.is_bv_value(known):
                    self.specials[text] = known
                    return known
            value = z3.BitVec(text, 64 if reg.name in _SPECIAL_64 else 32)
            self.specials[text] = value
            for axiom in self._special_axioms(reg.name, reg.selector, value):
                self.solver.assume(axiom)
        return value

    def _sym(self, name: str, sel: str | None = None) -> BV:
        return self._special(ir.Register(name, sel))

    def _special_axioms(self, name: str, sel: str | None, v: BV) -> list[z3.BoolRef]:
        """The ISA ranges of a special register, in terms of the others."""
        if name == "%ntid" and sel in _DIMS:
            # .maxntid bounds the number of threads (the product of its values).
            most = 1024 if self.max_block is None else min(1024, _product(self.max_block))
            out = [z3.UGE(v, 1), z3.ULE(v, min(64, most) if sel == "z" else most)]
            if sel in ("y", "z"):
                # The block has at most 1024 threads; each factor <= 1024 keeps
                # the 32-bit product exact.
                x, y, z = (self.specials.get(f"%ntid.{d}") for d in _DIMS)
                if sel == "y":
                    y = v
                else:
                    z = v
                x = x if x is not None else self._sym("%ntid", "x")
                if y is not None and z is not None:
                    out.append(z3.ULE(x * y * z, most))
                elif y is not None:
                    out.append(z3.ULE(x * y, most))
                elif z is not None:
                    out.append(z3.ULE(x * z, most))
            return out
        if name == "%tid" and sel in _DIMS:
            return [z3.ULT(v, self._sym("%ntid", sel))]
        if name == "%nctaid" and sel in _DIMS:
            return [z3.UGE(v, 1), z3.ULE(v, 0x7FFFFFFF if sel == "x" else 0xFFFF)]
        if name == "%ctaid" and sel in _DIMS:
            return [z3.ULT(v, self._sym("%nctaid", sel))]
        if name == "%laneid":
            # Lanes are numbered along the linear thread id (x fastest); with
            # %ntid.x a known multiple of 32 that is %tid.x % 32.
            lanes = self.dom.lanes
            for dim in ("x",) if lanes.rows_whole else _DIMS:
                self._sym("%tid", dim)
                self._sym("%ntid", dim)
            return [z3.ULT(v, 32), v == lanes.lane_of_thread()]
        if name == "%warpid":
            return [z3.ULT(v, self._sym("%nwarpid"))]
        if name == "%nwarpid":
            return [z3.UGE(v, 1), z3.ULE(v, 64)]
        if name.startswith("%lanemask_"):
            lane = self._sym("%laneid")
            one = z3.BitVecVal(1, 32)
            eq = one << lane
            lt = eq - 1
            le = (eq << 1) - 1
            defs = {"eq": eq, "lt": lt, "le": le, "gt": ~le, "ge": ~lt}
            return [v == defs[name.removeprefix("%lanemask_")]]
        pairs = {
            "%cluster_ctaid": "%cluster_nctaid",
            "%clusterid": "%nclusterid",
        }
        if name in pairs and sel in _DIMS:
            return [z3.ULT(v, self._sym(pairs[name], sel))]
        if name == "%cluster_ctarank":
            return [z3.ULT(v, self._sym("%cluster_nctarank"))]
        if (name in ("%cluster_nctaid", "%nclusterid") and sel in _DIMS) or name == "%cluster_nctarank":
            return [z3.UGE(v, 1)]
        return []

    def _param_value(self, address: BV, nbytes: int) -> BV | None:
        """The value of a kernel parameter read with ``ld.param``, or None
        when the address is not an entry parameter (call parameters)."""
        base, offset = self._split(address)
        if base is None:
            return None
        name = self.symbols.get(base)
        if name is None or name not in self.params:
            return None
        display, size = self.params[name]
        if offset == 0 and nbytes == size:
            sym = z3.BitVec(display, 8 * size)
            self.names[display] = f"load({display})"
            return sym
        if offset >= 0 and offset + nbytes <= size and size <= 64:
            whole = z3.BitVec(display, 8 * size)
            self.names[display] = f"load({display})"
            return simplify(z3.Extract(8 * (offset + nbytes) - 1, 8 * offset, whole))
        part = f"{display}+{offset}"
        self.names[part] = f"load({part})"
        return z3.BitVec(part, 8 * nbytes)

    def _call_slot(self, address: BV) -> bool:
        """Whether ``address`` is in a ``.param`` variable declared for a
        call (argument or return value), not an entry parameter."""
        base, _ = self._split(address)
        return base is not None and self.symbols.get(base) not in self.params

    def _load_func(self, space: str, bits: int, version: int, awidth: int) -> z3.FuncDeclRef:
        key = (space, bits, version, awidth)
        fn = self._load_funcs.get(key)
        if fn is None:
            name = f"load_{space.lstrip('.')}_{bits}" + (f"@{version}" if version else "")
            if awidth != 64:
                name += f"_a{awidth}"
            fn = z3.Function(name, z3.BitVecSort(awidth), z3.BitVecSort(bits))
            self._load_funcs[key] = fn
            self._load_bits[name] = bits
        return fn

    def _lookup(self, st: _State, space: str, address: BV, nbytes: int) -> tuple[BV, int]:
        """The value at ``address``: forwarded from a store, or the memory
        function of the version the location was last possibly changed at."""
        memory = self._memory_space(space, address)
        for k in range(len(st.mem) - 1, -1, -1):
            ev = st.mem[k]
            if space not in ev.spaces or _apart(memory, ev.memory):
                continue
            if ev.kind == "clobber" or ev.space != space:
                # Addresses of different spaces are not comparable: a blocker.
                return self._initial(space, address, nbytes, ev.id), ev.id
            assert ev.address is not None and ev.value is not None
            precise = not self._solver_free(space, address)
            rel = self._relation(st, address, nbytes, ev.address, ev.nbytes, precise)
            if rel == "disjoint":
                continue
            if isinstance(rel, int) and rel >= 0 and rel + nbytes <= ev.nbytes:
                # The load reads bytes rel..rel+nbytes of the stored value.
                value = self.dom.extract(ev.value, 8 * (rel + nbytes) - 1, 8 * rel)
                if ev.guard is None:
                    return value, ev.id
                # A guarded store may not have happened: look further back.
                older, _ = self._lookup_before(st, k, space, address, nbytes)
                return simplify(z3.If(ev.guard, value, older)), ev.id
            return self._initial(space, address, nbytes, ev.id), ev.id
        return self._initial(space, address, nbytes, 0), 0

    def _lookup_before(self, st: _State, k: int, space: str, address: BV, nbytes: int) -> tuple[BV, int]:
        saved = st.mem
        st.mem = saved[:k]
        try:
            return self._lookup(st, space, address, nbytes)
        finally:
            st.mem = saved

    def _initial(self, space: str, address: BV, nbytes: int, version: int) -> BV:
        fn = self._load_func(space, 8 * nbytes, version, address.size())
        return fn(address)  # type: ignore[return-value]

    def _memory_space(self, space: str, address: BV) -> str:
        """The space a generic access reaches where its address says
        (otherwise ``space`` itself): a declared variable's (clang's ``-O0``
        stack ``%SP``, ``cvta.local`` of its depot; GCC's ``%frame_ar``), or
        global memory for a kernel's pointer parameter, as the analysis takes
        everywhere (CUDA passes a kernel no other space's address). So a
        store to the thread's own stack overwrites no global element loaded
        before it, and a store through a pointer parameter no stack slot (a
        pointer spilled there is still the parameter when reloaded): clang's
        ``-O0`` builds lost most of their shuffles to such stores."""
        if space != "generic":
            return space
        return remember(self._memories, address.get_id(), address, lambda: self._generic_reaches(address))

    def _generic_reaches(self, address: BV) -> str:
        """`_memory_space` of a generic address, computed."""
        base = self._base_term(address)
        if base is not None:
            declared = self._space_of(self.symbols.get(base, base[1:]))
            return _normalize_space(declared) if declared is not None else "generic"
        for term in _summands(address):
            if z3.is_const(term) and term.size() == 64 and term.decl().name() in self.param_names:
                return ".global"
        return "generic"

    def _thread_private(self, space: str | None, address: BV) -> bool:
        """Whether a load of ``address`` in ``space`` reads a thread's own
        memory (``.local``, or a generic address rooted in a ``.local``
        variable such as GCC's ``%frame_ar``): no other lane can share its
        value, so it is never the source of a shuffle."""
        if space == ".local":
            return True
        if space != "generic":
            return False
        base = self._base_term(address)
        return base is not None and self._space_of(base[1:]) == ".local"

    def _solver_free(self, space: str | None, address: BV) -> bool:
        """Whether accesses at ``address`` compare addresses without the
        solver (`_relation` not ``precise``: equal offsets still forward,
        strides still prove apart, the rest may overlap; only values get
        less precise): a thread's own memory, or GCC's soft stack. No load
        there is a shuffle candidate, and proofs that two slots indexed by
        loop counters are apart cost most of GCC's npb_bt solve routines
        (-O3 OpenACC y_solve 3.5-4.8 -> 1.7 s, -O3 OpenMP 8.0 -> 3.1 s;
        shuffles over the corpus, the suite and GCC's -O0..-O3 output:
        unchanged)."""
        return self._thread_private(space, address) or self._soft_stack(address)

    def _soft_stack(self, address: BV) -> bool:
        """Whether ``address`` is rooted in GCC's soft stack (OpenMP offload's
        ``-msoft-stack``: a stack pointer loaded from ``__nvptx_stacks[warp]``
        in shared memory, where GCC keeps the temporaries of a region)."""

        def rooted() -> bool:
            return any(
                _is_load(t) and self._base_term(t.arg(0)) == "&__nvptx_stacks" for t in _summands(address)
            )

        return remember(self._stack_rooted, address.get_id(), address, rooted)

    def _split(self, address: BV) -> tuple[str | None, int]:
        """`_split_symbol`, memoised."""
        return remember(self._splits, address.get_id(), address, lambda: _split_symbol(address))

    def _base_term(self, address: BV) -> str | None:
        """`_symbol_term`, memoised."""
        return remember(self._bases, address.get_id(), address, lambda: _symbol_term(address))

    def _relation(self, st: _State, a: BV, na: int, b: BV, nb: int, precise: bool = True) -> str | int:
        """``disjoint``, ``may`` (overlap possible) or the constant byte
        offset ``a - b`` when it is one (under the path condition).

        Not ``precise``: only the answers that need no solver; ``may``
        otherwise (sound: the caller only learns less). For loads of a
        thread's own memory, whose invalidation only annotates the trace,
        the solver's proofs of disjoint stack slots in nested loops cost
        most of the analysis of GCC's offload code.

        What the terms alone decide is kept per pair of addresses
        (`_term_relation`): sibling flows run the same stores against the
        same loads, and only the solver's part depends on the path."""
        key = (a.get_id(), na, b.get_id(), nb, precise)
        relation = remember(self._relations, key, (a, b), lambda: self._term_relation(a, na, b, nb, precise))
        if not isinstance(relation, _OpenRelation):
            return relation
        if relation.cheap:
            self.solver.stats.cheap_answers += 1
            return "disjoint"
        return self._solved_relation(st, relation)

    def _term_relation(self, a: BV, na: int, b: BV, nb: int, precise: bool) -> str | int | _OpenRelation:
        """The part of `_relation` that reads only the two terms: the answer,
        or what the solver is to be asked (`_OpenRelation`)."""
        if a.size() != b.size():
            w = max(a.size(), b.size())
            a, b = _resize(self.dom, a, w), _resize(self.dom, b, w)
        base_a, _ = self._split(a)
        base_b, _ = self._split(b)
        if base_a is not None and base_b is not None and base_a != base_b:
            return "disjoint"  # two declared variables (call .param slots...): distinct objects
        diff = simplify(a - b)
        d = const_value(diff)
        if d is not None:
            return _offset_relation(d, a.size(), na, nb)
        if not precise:
            return "disjoint" if self._forms(diff, na, nb).stride_disjoint() else "may"
        if self._depends_on_pointer(diff):
            # The distance moves with a pointer nothing constrains (two
            # parameters, a loaded pointer): overlap is possible, equality
            # unprovable; no need to ask the solver.
            return "may"
        # Indices extended two ways (``zext(j)`` beside ``sext(1 + j)``)
        # cancel once the intervals have put them alike: asked only here,
        # before the solver would be, as the walk costs more than the
        # cheaper answers above.
        diff = simplify(normalize_extensions(diff))
        d = const_value(diff)
        if d is not None:
            return _offset_relation(d, a.size(), na, nb)
        # ``a - b`` always c0 modulo a power of two that keeps the byte
        # ranges apart (`affine`): disjoint with no solver.
        cheap = self.solver.fast and self._forms(diff, na, nb).stride_disjoint()
        return _OpenRelation(a, b, diff, na, nb, cheap)

    def _solved_relation(self, st: _State, rel: _OpenRelation) -> str | int:
        """`_relation` of two addresses whose difference is not a constant
        term: asked of the solver under the path condition."""
        fast = self.solver.fast
        forms = self._forms(rel.diff, rel.na, rel.nb) if fast else None
        differ = [z3.Not(forms.equal())] if forms is not None else None
        can_differ = self.solver.check_rewritten(st.pc, [rel.a != rel.b], differ)
        if can_differ is False:
            return _offset_relation(0, rel.a.size(), rel.na, rel.nb)  # equal under the path condition
        if can_differ is None:
            # Addresses the solver cannot tell apart from equal were
            # never proved disjoint either (over the corpus and the
            # offload outputs: 8 of 8 overlaps sat or undecided, at
            # 20-80 ms a question: 32-bit index products sign-extended).
            return "may"
        # [a, a+na) and [b, b+nb) overlap iff (a - b) mod 2^w lies in
        # [0, nb) or (2^w - na, 2^w): one unsigned comparison on the
        # already simplified difference.
        overlap = z3.ULT(rel.diff + (rel.na - 1), rel.na + rel.nb - 1)
        cheaper = [forms.overlap()] if forms is not None else None
        if self.solver.check_rewritten(st.pc, [overlap], cheaper) is False:
            return "disjoint"
        return "may"

    def _forms(self, diff: BV, na: int, nb: int) -> _DiffForms:
        return remember(self._diff_forms, (diff.get_id(), na, nb), diff, lambda: _DiffForms(diff, na, nb))

    def _depends_on_pointer(self, e: BV) -> bool:
        """Whether ``e`` mentions a free pointer-sized base: a kernel
        parameter of the width of ``e`` or wider, a variable's address, or a
        loaded value of that width. Read off the symbols of ``e`` (memoised
        per subterm for the slicing anyway) rather than by a walk of its own."""
        width = e.size()
        for name in self.solver.symbols.of(e):
            if name.startswith("&"):
                return True
            bits = self._param_bits.get(name) or self._load_bits.get(name)
            if bits is not None and bits >= width:
                return True
        return False

    def _record(
        self,
        st: _State,
        kind: str,
        space: str | None,
        nbytes: int,
        address: BV | None,
        value: BV | None,
        inst: ir.Instruction,
        guard: z3.BoolRef | None,
        version: int,
        readonly: bool = False,
        operands: tuple[BV, ...] = (),
    ) -> int:
        flow = st.flow
        flow.trace.append(
            Access(
                kind=kind,
                space=space,
                nbytes=nbytes,
                address=address,
                value=value,
                inst=self.origin.get(id(inst), inst),  # the module's instruction, not an inlined copy
                index=self.inst_index,
                block=st.block,
                guard=guard,
                conditions=len(st.pc),
                loops=tuple(ctx.name for ctx in st.loops),
                version=version,
                source=self.sources.get(id(inst)),
                readonly=readonly,
                operands=operands,
                memory=None if space is None or address is None else self._memory_space(space, address),
            )
        )
        return len(flow.trace) - 1

    def _new_event_id(self) -> int:
        self.counter += 1
        return self.counter

    def _write_memory(
        self,
        st: _State,
        space: str,
        address: BV,
        nbytes: int,
        value: BV,
        guard: z3.BoolRef | None,
        index: int,
    ) -> None:
        spaces = _ALIASES[space]
        memory = self._memory_space(space, address)
        # Earlier loads this store may overwrite are no longer valid sources.
        flow = st.flow
        for i, a in enumerate(flow.trace[:index]):
            if a.kind != "ld" or a.version < 0 or a.readonly or a.space not in spaces:
                continue
            if i in flow.may_alias_store:
                continue
            assert a.address is not None
            if _apart(memory, a.memory):
                continue  # the load's address reaches another space than the store's
            if a.space != space:
                flow.may_alias_store[i] = index
                continue
            precise = not self._solver_free(a.space, a.address)
            if self._relation(st, a.address, a.nbytes, address, nbytes, precise) != "disjoint":
                flow.may_alias_store[i] = index
        event = _MemEvent(self._new_event_id(), "store", spaces, space, address, nbytes, value, guard, memory)
        st.mem.append(event)

    def _clobber(self, st: _State, spaces: frozenset[str], index: int | None) -> None:
        flow = st.flow
        if index is not None:
            for i, a in enumerate(flow.trace[:index]):
                if (
                    a.kind == "ld"
                    and a.version >= 0
                    and not a.readonly
                    and i not in flow.may_alias_store
                    and a.space in spaces
                ):
                    flow.may_alias_store[i] = index
        st.mem.append(_MemEvent(self._new_event_id(), "clobber", spaces))

    # ---- exploration ---------------------------------------------------------

    def run(self) -> KernelAnalysis:
        entry = _State(Flow(0), self.cfg.entry, {}, (), [], [], set())
        self.flows.append(entry.flow)
        work = [entry]
        try:
            loop = self.loop_by_header.get(self.cfg.entry)
            if loop is not None:  # the body starts with a loop: no edge enters it
                self.state = entry
                self._enter_loop(entry, loop)
            while True:
                self._release_joins(work)
                if not work:
                    break
                st = work.pop()
                self._run_flow(st, work)
        except _BudgetExceeded as exc:
            self.partial = exc.reason
            if self.state is not None and self.state.flow.end == "running":
                self._finish(self.state, "budget")
            for st in [*work, *(w for waiting in self._waiting.values() for w in waiting)]:
                self._finish(st, "budget")
        self.stats.paths = len(self.flows)
        self.stats.loop_entries = self.loop_entries
        self.stats.seconds = time.perf_counter() - self.start
        for flow in self.flows:
            if flow.end == "running":
                flow.end = "budget"
        return KernelAnalysis(
            kernel=self.fn.name,
            flows=self.flows,
            status="partial" if self.partial else "complete",
            reason=self.partial,
            stats=self.stats,
            unknown=[self._unknown[k] for k in sorted(self._unknown)],
            names=dict(self.names),
            assumptions=[*self.solver.axioms, *self.solver.pending],
        )

    def _check_budget(self) -> None:
        if time.perf_counter() > self.deadline:
            raise _BudgetExceeded(f"time budget of {self.budget.time_s:g} s exceeded")
        if self.stats.steps > self.budget.max_steps:
            raise _BudgetExceeded(f"step budget of {self.budget.max_steps} instructions exceeded")

    def _finish(self, st: _State, end: str, merged_into: int | None = None) -> None:
        flow = st.flow
        flow.end = end
        flow.end_block = st.block
        flow.condition = st.pc
        flow.merged_into = merged_into

    def _run_flow(self, st: _State, work: list[_State]) -> None:
        """Run one flow until it ends, pushing the flows it forks on ``work``."""
        self.state = st
        cfg = self.cfg
        if st.pending is not None:
            target, st.pending = st.pending, None
            if not self._follow(st, target):
                return
        while True:
            self._check_budget()
            if st.block == cfg.exit:
                self._finish(st, "fell-off")
                return
            if st.block in st.visited:
                self._finish(st, "cycle")
                return
            if self.merge:
                key, values = self._memo_key(st)
                seen = self.memo.get(key)
                if seen is not None and self._covered(st, seen[2]):
                    self.stats.merged += 1
                    self._finish(st, "merged", seen[0])
                    return
                # The values stay referenced so that their Z3 ids are not reused.
                self.memo.setdefault(key, (st.flow.id, values, st.pc))
            st.visited.add(st.block)
            st.flow.blocks.append(st.block)
            block = cfg.blocks[st.block]
            term = block.terminator
            body = block.instructions[:-1] if term is not None else block.instructions
            for offset, inst in enumerate(body):
                self.inst_index = block.start + offset
                self.stats.steps += 1
                if offset & 0xFF == 0xFF:
                    self._check_budget()
                if inst.opcode == "call":
                    self._call(st, inst)
                else:
                    self._step(st, inst)
                if self.watch:
                    self._observe(st, inst)
            if term is None:
                if not self._follow(st, block.fallthrough if block.fallthrough is not None else cfg.exit):
                    return
                continue
            self.inst_index = block.stop - 1
            self.stats.steps += 1
            nxt = self._terminator(st, block, term, work)
            if nxt is None or not self._follow(st, nxt):
                return

    def _step(self, st: _State, inst: ir.Instruction) -> None:
        """`_execute`, or, for register arithmetic run before on the same
        input terms (by another flow: flows forked at a branch mostly run
        code that does not depend on it), what it wrote then. Z3 builds the
        same terms for the same inputs; rebuilding and simplifying them was
        most of the work of kernels of many flows (a math library's slow
        paths: 198 flows of ~320 instructions)."""
        if id(inst) not in self._pure:
            self._pure[id(inst)] = self._pure_registers(inst)
        registers = self._pure[id(inst)]
        if registers is None:
            self._execute(inst)
            return
        reads, writes = registers
        inputs = [st.env.get(key) for key in reads]
        if any(value is None for value in inputs):
            self._execute(inst)  # an undefined read: named per flow (`read`)
            return
        key = (id(inst), *(value.get_id() for value in inputs))  # type: ignore[union-attr]
        hit = self._steps.get(key)
        if hit is None:
            self._written = []
            try:
                self._execute(inst)
                written = self._written
            finally:
                self._written = None
            if set(written) == set(writes):  # else it wrote where the table does not say (a vector register)
                self._steps[key] = (inputs, [(k, st.env[k]) for k in writes])  # type: ignore[misc]
            return
        for k, value in hit[1]:
            st.env[k] = value

    def _pure_registers(self, inst: ir.Instruction) -> tuple[list[_EnvKey], list[_EnvKey]] | None:
        """The env keys ``inst`` reads and writes when its result is a
        function of those registers alone (no memory, special register,
        carry flag, symbol or watch); else None. A guarded instruction also
        reads what it writes (the old value stays where the guard is false)."""
        if isa.memory_effect(inst) != isa.MemoryEffect.NONE:
            return None
        if isa.writes_carry(inst) or isa.reads_carry(inst):
            return None
        if not isa.computes_registers(inst):
            return None
        if any(isinstance(op, ir.Symbol) for op in inst.operands):
            return None
        if id(self.origin.get(id(inst), inst)) in self.watch:
            return None
        uses, defs = isa.uses(inst), isa.defs(inst)
        if not defs or any(is_special_register(reg.name) for reg in uses):
            return None
        reads = [(reg.name, reg.selector) for reg in uses]
        writes = [(reg.name, reg.selector) for reg in defs]
        if inst.guard is not None:
            reads += writes
        return reads, writes

    def _execute(self, inst: ir.Instruction) -> None:
        """One non-control-flow instruction, through the shared semantics."""
        try:
            self.semantics.execute(inst)
        except (_BudgetExceeded, UnsupportedInstruction):
            raise
        except Exception as exc:  # a semantics gap must not stop the analysis
            reason = f"{type(exc).__name__}: {exc}"
            self.unknown(inst, reason)
            self._havoc_defs(inst)
            if isa.is_store(inst) or isa.is_atomic(inst) or inst.opcode in ("bar", "barrier"):
                # Its write is not in the trace: whatever it may change is
                # unknown from here on, and the stores it made are missing.
                self._clobber(self._st(), _ALL_WRITABLE, None)
                self.partial = self.partial or f"{inst.mnemonic} at {inst.loc} not emulated ({reason})"

    def _observe(self, st: _State, inst: ir.Instruction) -> None:
        """Record the watched registers of ``inst`` (see ``watch``)."""
        module_inst = self.origin.get(id(inst), inst)
        regs = self.watch.get(id(module_inst))
        if regs is None:
            return
        values = []
        for reg in regs:
            value = st.env.get((reg.name, reg.selector))
            values.append(value if value is not None else self.dom.fresh(f"undef.{_reg_text(reg)}", 32))
        stand_ins = []
        for reg, value in zip(regs[: self.stand_ins.get(id(module_inst), 0)], values, strict=False):
            stand_in = self._stand_in(f"site.{_reg_text(reg)}", self.dom.width(value))
            st.env[(reg.name, reg.selector)] = stand_in
            stand_ins.append(stand_in)
        flow = st.flow
        flow.observations.append(
            Observation(module_inst, tuple(values), len(st.pc), len(flow.trace), tuple(stand_ins))
        )

    def _stand_in(self, name: str, width: int) -> BV:
        """A value the proof will name later: a fresh function of the
        thread's ids (and lane), so that another lane's copy of it (a
        shuffle of a value built on it) is that lane's, as the lane model
        moves thread ids, rather than an opaque per-thread unknown."""
        unique = self.dom.fresh(name, width).decl().name()
        ids = [self._sym("%tid", d) for d in ("x", "y", "z")] + [self._sym("%laneid")]
        fn = z3.Function(unique + "()", *[z3.BitVecSort(32)] * len(ids), z3.BitVecSort(width))
        return fn(*ids)  # type: ignore[return-value]

    def _havoc_defs(self, inst: ir.Instruction) -> None:
        for reg, typ in isa.typed_defs(inst):
            width = 1 if typ == ".pred" else (isa.type_bits(typ) or 32)
            self.write(reg, self.dom.fresh(f"unknown.{reg.name}", width))

    def _call(self, st: _State, inst: ir.Instruction) -> None:
        """A call the inliner left in place (direct calls to functions of the
        module are inlined before the analysis starts). Its results become
        unknown. A runtime function of known effect (`_KNOWN_CALLS`) changes
        no memory a load here reads; any other callee may write everything
        writable, and the kernel is ``partial``: loads it makes are missing."""
        site = call_site(inst)
        if site.name in _KNOWN_CALLS and isinstance(site.callee, ir.Symbol):
            self._havoc_defs(inst)
            self._known_result(st, site)
            return
        skipped = self.not_followed.get(id(inst))
        callee, why = (skipped.callee, skipped.reason) if skipped is not None else (site.name, "not inlined")
        reason = f"call to {callee} not followed: {why}"
        self.unknown(inst, reason)
        self.partial = self.partial or reason
        self._havoc_defs(inst)
        self._clobber(st, _ALL_WRITABLE, None)

    def _known_result(self, st: _State, site: Any) -> None:
        """Each result of a runtime call a fresh value, stored to its return
        parameter where the caller's ``ld.param`` reads it. Without the
        store, two calls returning through one ``.param`` slot (GCC's
        ``%value_in`` for ``omp_get_num_teams`` then ``omp_get_team_num``)
        read one value: team number equal to team count.

        OpenMP queries (`_OMP_RESULTS`) also get their ranges: GCC's offload
        code divides the iteration space by them, and a divisor that may be
        zero or negative makes every branch on the chunk bounds a hard query.
        A slot of unknown or large size is clobbered instead."""
        for ret in site.returns:
            if not isinstance(ret, ir.Symbol):
                continue
            address = self.symbol_address(ret.name, 64)
            nbytes = self._declared_bytes(ret.name)
            if nbytes is None or nbytes > 8:
                self._clobber(st, frozenset({".param"}), None)
                continue
            bounds = _OMP_RESULTS.get(site.name)
            if bounds is not None and nbytes == 4:
                value = self._omp_result(site.name, bounds)
            else:
                value = self.dom.fresh(site.name, 8 * nbytes)
            spaces = _ALIASES[".param"]
            st.mem.append(_MemEvent(self._new_event_id(), "store", spaces, ".param", address, nbytes, value))

    def _omp_result(self, name: str, bounds: tuple[int, int]) -> BV:
        """The value of an OpenMP query in its range. The team count is one
        value for the whole target region (one symbol for every call); a
        team number is fresh per call (libgomp may run several teams one
        after the other in a block) but always below the team count."""
        if name == "omp_get_num_teams" and self._omp_teams is not None:
            return self._omp_teams
        if name == "omp_get_num_teams":
            value = self._omp_teams = z3.BitVec("omp_get_num_teams", 32)
        else:
            value = self.dom.fresh(name, 32)
            if name in _OMP_INDICES:
                self.solver.typical_index(value)
        self.solver.assume(z3.And(z3.UGE(value, bounds[0]), z3.ULE(value, bounds[1])))
        if name == "omp_get_team_num":
            self.solver.assume(
                z3.ULT(value, self._omp_result("omp_get_num_teams", _OMP_RESULTS["omp_get_num_teams"]))
            )
        return value

    def _covered(self, st: _State, earlier_pc: tuple[z3.BoolRef, ...]) -> bool:
        """Whether the flow that reached ``st``'s block in the same state under
        ``earlier_pc`` explored what ``st`` would: its branch decisions were
        taken under its own path condition, so they hold for ``st`` only when
        that condition is implied (every conjunct of it is one of ``st``'s),
        or when no branch is left to decide from the block on."""
        if self._unbranching_from(st.block):
            return True
        mine = {c.get_id() for c in st.pc}
        return all(c.get_id() in mine for c in earlier_pc)

    def _unbranching_from(self, block: int) -> bool:
        """No conditional branch, return or loop on any path from ``block``
        (walked, not recursed: straight runs of blocks can be long)."""
        known = self._unbranching.get(block)
        if known is not None:
            return known
        cfg = self.cfg
        answer = True
        seen: set[int] = set()
        stack = [block]
        while stack and answer:
            b = stack.pop()
            if b in seen or b == cfg.exit:
                continue
            seen.add(b)
            here = cfg.blocks[b]
            term = here.terminator
            decides = term is not None and (term.guard is not None or term.opcode not in _PLAIN_JUMPS)
            if decides or b in self.loop_by_header:
                answer = False  # a branch (guarded, or brx.idx) or a loop to decide
            stack.extend(here.targets)
            if here.fallthrough is not None:
                stack.append(here.fallthrough)
        self._unbranching[block] = answer
        return answer

    def _memo_key(self, st: _State) -> tuple[tuple[Any, ...], list[BV]]:
        """What makes two flows entering a block behave alike from there on:
        the live registers' values (by Z3 id: equal terms are one AST), the
        memory state and the loop context. Also the values themselves."""
        live = self.cfg.live_in(st.block)
        values = [v for k, v in st.env.items() if k[0] in live]
        env = tuple(sorted((k[0], k[1] or "", v.get_id()) for k, v in st.env.items() if k[0] in live))
        mem = st.mem[-1].id if st.mem else 0
        loops = tuple(ctx.name for ctx in st.loops)
        return (st.block, env, mem, loops), values

    def _terminator(self, st: _State, block: Any, term: ir.Instruction, work: list[_State]) -> int | None:
        """Handle ``bra``/``brx.idx``/``ret``/``exit``/``trap``; the next block
        of ``st``, or None when the flow ended."""
        if isa.is_return(term):
            cond = self._branch_guard(term)
            if cond is None:
                self._finish(st, term.opcode)
                return None
            # A guarded ret/exit: the flow where it fires ends here.
            return self._two_way(st, term, cond, self.cfg.exit, block.fallthrough, work)
        if term.opcode == "bra":
            cond = self._branch_guard(term)
            target = block.targets[0]
            if cond is None:
                return int(target)
            return self._two_way(st, term, cond, target, block.fallthrough, work)
        return self._indirect(st, block, term, work)

    def _branch_guard(self, term: ir.Instruction) -> z3.BoolRef | None:
        if term.guard is None:
            return None
        try:
            value = self.semantics.branch_condition(term)
        except Exception as exc:
            self.unknown(term, f"{type(exc).__name__}: {exc}")
            value = None
            if term.guard is not None:
                value = self.read(term.guard.predicate, 1)
                if term.guard.negated:
                    value = self.dom.not_(value)
        if value is None:
            return None
        return simplify(as_bool(value))

    def _fork(self, st: _State, cond: z3.BoolRef, target: int | None) -> _State:
        """A new flow from ``st`` that assumes ``cond`` and resumes at the
        edge to ``target`` (None: the caller finishes it)."""
        parent = st.flow
        flow = Flow(len(self.flows), parent=parent.id, fork_index=len(parent.trace), trace=list(parent.trace))
        flow.may_alias_store = dict(parent.may_alias_store)
        flow.blocks = list(parent.blocks)
        flow.observations = list(parent.observations)
        self.flows.append(flow)
        self.stats.forks += 1
        child = st.fork(flow)
        child.pc = (*st.pc, cond)
        child.pending = target
        return child

    def _over_path_budget(self) -> bool:
        if len(self.flows) < self.budget.max_paths:
            return False
        self.partial = self.partial or f"path budget of {self.budget.max_paths} flows exceeded"
        self.stats.dropped += 1
        return True

    def _two_way(
        self,
        st: _State,
        term: ir.Instruction,
        cond: z3.BoolRef,
        taken: int,
        fallthrough: int | None,
        work: list[_State],
    ) -> int | None:
        """A guarded ``bra`` (or ``ret``/``exit``): fork when both sides are
        feasible under the path condition, else follow the one that is."""
        ends = isa.is_return(term)
        not_taken = fallthrough if fallthrough is not None else self.cfg.exit
        can_take, can_skip = self._sides(st, cond)
        if can_take and can_skip and self._over_path_budget():
            can_take = False  # follow the fall-through only
        if can_take and can_skip:
            child = self._fork(st, cond, None if ends else taken)
            self._fix_guard(child, term, True)
            if ends:
                self._finish(child, term.opcode)
            else:
                self._open_join(st, child, work)
                work.append(child)
            st.pc = (*st.pc, simplify(z3.Not(cond)))
            self._fix_guard(st, term, False)
            return not_taken
        if not can_take and not can_skip:
            # Only with an inconsistent path condition (the solver gave up
            # earlier): nothing sound to continue with.
            self._finish(st, "infeasible")
            return None
        self.stats.pruned += 1
        self._fix_guard(st, term, can_take)
        if not can_take:
            return not_taken
        if ends:
            self._finish(st, term.opcode)
            return None
        return taken

    def _sides(self, st: _State, cond: z3.BoolRef) -> tuple[bool, bool]:
        """Whether the condition can be true, and whether it can be false."""
        if z3.is_true(cond):
            return True, False
        if z3.is_false(cond):
            return False, True
        # Decided by an earlier branch on the same condition (the rewriter
        # makes equal conditions one term): no solver needed.
        negated = simplify(z3.Not(cond))
        for known in st.pc:
            if known.eq(cond):
                return True, False
            if known.eq(negated):
                return False, True
        if self._free_choice(st, cond):
            self.stats.cheap_answers += 1
            return True, True
        first = self.solver.check(st.pc, [cond])
        if first is False:
            return False, True
        if first is None:
            # Undecided is taken as feasible, and a condition the solver
            # could not decide was never refuted in its negation over the
            # corpus and the offload outputs (48 of 48 sat or undecided),
            # at 10-40 ms a question: GCC's chunk bounds.
            return True, True
        second = self.solver.check(st.pc, [z3.Not(cond)])
        if second is False:
            return True, False
        return True, True

    def _free_choice(self, st: _State, cond: z3.BoolRef) -> bool:
        """Whether ``cond`` is (the negation of) an uninterpreted predicate
        applied once, whose function the path condition and the axioms never
        mention (a floating-point comparison ``setp.lt.f64(x, y)`` of loaded
        values): its value at that point is free, so both sides are feasible
        whenever the path condition is, with no solver call. The solver
        would say the same after slicing in every conjunct the arguments
        share a symbol with."""
        name = free_literal(cond)
        if name is None:
            return False
        atom = cond
        while z3.is_not(atom):
            atom = atom.arg(0)
        others = (*atom.children(), *st.pc, *self.solver.axioms, *self.solver.pending)
        return not any(name in self.solver.symbols.of(c) for c in others)

    def _fix_guard(self, st: _State, term: ir.Instruction, taken: bool) -> None:
        """After a branch on ``@%p``, ``%p`` is a known constant on each side."""
        guard = term.guard
        if guard is None or is_special_register(guard.predicate.name):
            return
        value = taken != guard.negated
        st.env[(guard.predicate.name, guard.predicate.selector)] = self.dom.const(int(value), 1)

    def _indirect(self, st: _State, block: Any, term: ir.Instruction, work: list[_State]) -> int | None:
        """``brx.idx %r, table``: one flow per feasible table entry."""
        index_op = term.operands[0]
        index = self.read(index_op, 32) if isinstance(index_op, ir.Register) else None
        guard = self._branch_guard(term)
        options: list[tuple[z3.BoolRef, int]] = []
        for k, target in enumerate(block.targets):
            c = z3.BoolVal(True) if index is None else simplify(index == k)
            if guard is not None:
                c = z3.And(guard, c)
            options.append((c, target))
        if guard is not None and block.fallthrough is not None:
            options.append((z3.Not(guard), block.fallthrough))
        feasible = []
        for c, target in options:
            c = simplify(c)
            if z3.is_false(c):
                continue
            if z3.is_true(c) or self.solver.check(st.pc, [c]) is not False:
                feasible.append((c, target))
        if not feasible:
            self._finish(st, "infeasible")
            return None
        for c, target in feasible[1:]:
            if self._over_path_budget():
                continue
            work.append(self._fork(st, c, target))
        c, target = feasible[0]
        if not z3.is_true(c):
            st.pc = (*st.pc, c)
        return target

    # ---- joins -----------------------------------------------------------------
    #
    # The sides of a fork meet again at the branch block's immediate
    # post-dominator. Flows are explored depth first, so every flow that
    # descends from a fork has run by the time the work list is back at the
    # length it had when the fork pushed its child: flows arriving at the join
    # wait there until then, and those that can be joined continue as one flow
    # whose registers are ``If(side condition, a, b)`` and whose path
    # condition is the two sides' disjunction (their common prefix when the
    # sides are a branch and its negation). This is state merging: k branch
    # regions in a row that if-conversion could not take (they hold calls,
    # loops, memory accesses or several exits) no longer make 2^k flows.

    def _open_join(self, st: _State, child: _State, work: list[_State]) -> None:
        """Give ``st`` and the ``child`` it forked at its block the join where
        they meet, before the child goes on ``work``."""
        if not JOIN_FLOWS or not self.merge or self.watch:
            return
        join = self.cfg.ipdom.get(st.block)
        if join is None or join == self.cfg.exit or self._returns(join):
            return
        self._join_numbers += 1
        key = self._join_numbers
        self._open.append((len(work), key))
        self._waiting[key] = []
        entry = (join, key)
        st.joins = child.joins = (*st.joins, entry)

    def _returns(self, block: int) -> bool:
        """Whether ``block`` starts with an unguarded ``ret``/``exit``: nothing
        runs after a join there, so the sides may as well end apart, each
        with its plain path condition (a bounds check around the whole body)."""
        first = self.cfg.blocks[block].instructions
        return bool(first) and isa.is_return(first[0]) and first[0].guard is None

    def _release_joins(self, work: list[_State]) -> None:
        """Let the flows waiting at joins whose forks are fully explored go on."""
        while self._open and self._open[-1][0] >= len(work):
            _, key = self._open.pop()
            work.extend(reversed(self._waiting.pop(key)))

    def _follow(self, st: _State, target: int) -> bool:
        """Take the edge to ``target``: leave the loops it leaves, then wait
        there when it is the flow's next join (a flow that ran a loop meets
        one that skipped it in the same loop context), else `_goto`. Whether
        the flow goes on now."""
        while st.loops and target not in st.loops[-1].loop.body:
            st.loops.pop()
        while st.joins and st.joins[-1][0] == target:
            key = st.joins[-1][1]
            st.joins = st.joins[:-1]
            waiting = self._waiting.get(key)
            if waiting is None:
                continue  # released: every flow of that fork has arrived or ended
            st.pending = target
            for k, other in enumerate(waiting):
                joined = self._join(other, st, target)
                if joined is not None:
                    waiting[k] = joined
                    return False
            waiting.append(st)
            return False
        self._goto(st, target)
        return st.flow.end == "running"

    def _join(self, a: _State, b: _State, target: int) -> _State | None:
        """One state for ``a`` and ``b`` arriving at ``target``, or None when
        they cannot be joined. What each side did since the fork stays in
        the joined flow under its side's condition: its loads and stores as
        guarded accesses, its stores as guarded memory events (a later load
        reads ``If(side, stored, older)``; an atomic is a load and a store),
        a clobber as it is (it may have changed memory: true of the join
        too). Arguments passed to inlined calls are dropped: only the callee
        read them. A barrier (which every thread of the block must reach)
        and another loop context keep the sides apart."""
        if a.joins != b.joins or [c.name for c in a.loops] != [c.name for c in b.loops]:
            return None
        pc = _common_prefix(a.pc, b.pc)
        side_a, side_b = a.pc[len(pc) :], b.pc[len(pc) :]
        if not side_a or not side_b:
            return None
        shared = len(_common_prefix(a.flow.trace, b.flow.trace))
        added_a, added_b = a.flow.trace[shared:], b.flow.trace[shared:]
        if any(x.kind == "bar" for x in (*added_a, *added_b)):
            return None
        live = self.cfg.live_in(target)
        keys = {k for k in (*a.env, *b.env) if k[0] in live}
        if any(k not in a.env or k not in b.env for k in keys):
            return None
        if any(a.env[k].size() != b.env[k].size() for k in keys):
            return None  # a register of two widths (PTX that ptxas may refuse): kept apart
        cond_a, cond_b, joined_pc = _side_conditions(side_a, side_b)
        env: dict[_EnvKey, BV] = {}
        for k in keys:
            x, y = a.env[k], b.env[k]
            env[k] = x if x.eq(y) else simplify(z3.If(cond_a, x, y))
        common = len(_common_prefix(a.mem, b.mem))
        mem = a.mem[:common]
        for side, cond in ((a, cond_a), (b, cond_b)):
            since = [e for e in side.mem[common:] if not self._call_argument(e)]
            mem.extend(_guarded_event(e, cond, self._new_event_id()) for e in since)
        trace = a.flow.trace[:shared]
        trace.extend(_guarded_access(x, cond_a, len(pc)) for x in added_a)
        trace.extend(_guarded_access(x, cond_b, len(pc)) for x in added_b)
        flow = Flow(len(self.flows), parent=a.flow.id, fork_index=shared, trace=trace)
        flow.joined_from = (a.flow.id, b.flow.id)
        flow.may_alias_store = _joined_marks(a.flow, b.flow, shared, len(added_a))
        flow.blocks = list(a.flow.blocks)
        self.flows.append(flow)
        for side in (a, b):
            self._finish(side, "merged", flow.id)
            side.flow.end_block = target
        self.stats.joined += 1
        undefined = dict(a.undefined)
        for k, n in b.undefined.items():
            undefined[k] = max(n, undefined.get(k, 0))
        return _State(
            flow,
            a.block,
            env,
            (*pc, *joined_pc),
            mem,
            list(a.loops),
            a.visited | b.visited,
            pending=target,
            undefined=undefined,
            joins=a.joins,
        )

    def _call_argument(self, event: _MemEvent) -> bool:
        """A store of an inlined call's argument or result: only the callee
        (or the call site) reads it, inside the region it was made in."""
        return (
            event.kind == "store"
            and event.space == ".param"
            and event.address is not None
            and self._call_slot(event.address)
        )

    # ---- loops -----------------------------------------------------------------

    def _goto(self, st: _State, target: int) -> None:
        """Follow an edge whose left loops `_follow` has dropped: stop at a
        back edge, abstract a loop being entered."""
        loop = self.loop_by_header.get(target)
        if loop is not None:
            if any(ctx.loop is loop for ctx in st.loops):
                st.block = target
                self._finish(st, "loop")
                return
            self._enter_loop(st, loop)
        st.block = target

    def _loop_info(self, loop: Loop) -> _LoopInfo:
        info = self.loop_infos.get(loop.header)
        if info is not None:
            return info
        cfg = self.cfg
        header = cfg.blocks[loop.header]
        label = header.label or f"B{loop.header}"
        if any(other.label == label for other in self.loop_infos.values()):
            label = f"{label}@B{loop.header}"
        defs: dict[str, list[tuple[ir.Instruction, int, int]]] = {}
        clobbers: set[str] = set()
        for b in loop.body:
            for k, inst in enumerate(cfg.blocks[b].instructions):
                for reg in isa.defs(inst):
                    defs.setdefault(reg.name, []).append((inst, b, k))
                if isa.writes_carry(inst):  # the implicit carry flag is a register too
                    defs.setdefault(_CARRY, []).append((inst, b, k))
                if inst.opcode == "call":
                    if call_site(inst).name not in _KNOWN_CALLS:
                        clobbers |= _ALL_WRITABLE
                elif isa.is_store(inst) or isa.is_atomic(inst):
                    clobbers |= _ALIASES[_normalize_space(isa.state_space(inst))]
                elif inst.opcode in ("bar", "barrier"):
                    clobbers |= {".shared", ".global", "generic"}
        additive = {name for name, ds in defs.items() if all(_is_int_addsub(inst) for inst, _, _ in ds)}
        induction = _induction_variables(cfg, loop, defs)
        iteration = z3.BitVec(f"iter_{label}", 64)
        # Iteration counts are non-negative and far from wrapping.
        self.solver.assume(z3.ULT(iteration, z3.BitVecVal(1 << 62, 64)))
        broadcast = _lane_zero_broadcasts(cfg, loop, defs)
        info = _LoopInfo(label, set(defs), induction, additive, frozenset(clobbers), iteration, broadcast)
        self.loop_infos[loop.header] = info
        return info

    def _enter_loop(self, st: _State, loop: Loop) -> None:
        """Abstract ``loop`` on entry: one iteration of unknown number, its
        induction variables in terms of it, the other registers it writes
        unknown, the memory it may write clobbered.

        The symbols are named after the loop alone, not after the entry: a
        flow enters a loop at most once (coming back to the header ends it),
        so the name is unique on every flow, and sibling flows that enter a
        loop alike build the same terms. Their questions, address relations
        and states are then the same and answered once (GCC's npb_bt solve
        routines enter their nine loops 73 times on 162 flows)."""
        info = self._loop_info(loop)
        self.loop_entries += 1
        name = info.label
        it = info.iteration
        old = st.env
        new_env = {k: v for k, v in old.items() if k[0] not in info.written}
        written: dict[str, list[tuple[str, str | None]]] = {}
        for k in old:
            if k[0] in info.written:
                written.setdefault(k[0], []).append(k)
        for reg_name in sorted(written):
            keys = written[reg_name]
            ind = info.induction.get(reg_name)
            for key in keys:
                init = old[key]
                w = init.size()
                if ind is not None and key[1] is None:
                    step = self._step_value(ind, w)
                    if step is not None:
                        count = self.dom.extract(it, w - 1, 0) if w <= 64 else self.dom.zext(it, w)
                        new_env[key] = simplify(self.dom.add(init, self.dom.mul(step, count)))
                        continue
                if reg_name in info.broadcast and key[1] is None:
                    # Lane 0's value from the first broadcast on (`_lane_zero_broadcasts`).
                    lane_zero = self.dom.lanes.read(init, z3.BitVecVal(0, 32))
                    new_env[key] = simplify(z3.If(it == 0, init, lane_zero))
                    continue
                var = z3.BitVec(f"loop_{name}.{_reg_text(ir.Register(*key))}", w)
                if reg_name in info.additive and w > 1:
                    new_env[key] = self.dom.add(init, var)
                else:
                    new_env[key] = var
        st.env = new_env
        if info.clobbers:
            self._clobber(st, info.clobbers, None)
        st.loops.append(_LoopCtx(loop, it, f"iter_{name}"))

    def _step_value(self, steps: tuple[tuple[int, ir.Operand], ...], width: int) -> BV | None:
        """The sum of an induction variable's signed steps, at ``width`` bits
        (read on loop entry: the steps are loop-invariant)."""
        total: BV | None = None
        for sign, op in steps:
            value = self._operand_value(op, width)
            if value is None:
                return None
            if total is None:
                total = value if sign > 0 else self.dom.neg(value)
            else:
                total = self.dom.add(total, value) if sign > 0 else self.dom.sub(total, value)
        return total

    def _operand_value(self, op: ir.Operand, width: int) -> BV | None:
        if isinstance(op, ir.IntImm):
            return self.dom.const(op.value, width)
        if isinstance(op, ir.Register):
            return self.read(op, width)
        return None


# --------------------------------------------------------------------------
# Small helpers


_T = TypeVar("_T")


def _common_prefix(a: Sequence[_T], b: Sequence[_T]) -> Sequence[_T]:
    """The leading items ``a`` and ``b`` share (the same objects: forked
    flows copy their parent's lists)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y:
            break
        n += 1
    return a[:n]


def _and_guard(cond: z3.BoolRef, guard: z3.BoolRef | None) -> z3.BoolRef:
    return cond if guard is None else simplify(z3.And(cond, guard))


def _guarded_access(access: Access, cond: z3.BoolRef, conditions: int) -> Access:
    """A side's access in a joined flow: under its side's condition, and
    holding only the ``conditions`` path conjuncts the sides share."""
    return dataclasses.replace(
        access, guard=_and_guard(cond, access.guard), conditions=min(access.conditions, conditions)
    )


def _guarded_event(event: _MemEvent, cond: z3.BoolRef, new_id: int) -> _MemEvent:
    """A side's memory event in a joined flow: a store happened under its
    side's condition; a clobber stays one (memory may have changed). Under
    an id of its own: the memo takes the last event's id for the memory
    state, and the side's flow had the event unguarded."""
    if event.kind != "store":
        return dataclasses.replace(event, id=new_id)
    return dataclasses.replace(event, id=new_id, guard=_and_guard(cond, event.guard))


def _joined_marks(a: Flow, b: Flow, shared: int, added_a: int) -> dict[int, int]:
    """`Flow.may_alias_store` of a joined flow: the first ``shared`` accesses
    are common, then side a's, then side b's (indices moved by ``added_a``).
    A load keeps the first store that may overwrite it."""
    marks = dict(a.may_alias_store)
    for load, store in b.may_alias_store.items():
        load = load if load < shared else load + added_a
        store = store if store < shared else store + added_a
        if store < marks.get(load, store + 1):
            marks[load] = store
    return marks


def _side_conditions(
    side_a: Sequence[z3.BoolRef], side_b: Sequence[z3.BoolRef]
) -> tuple[z3.BoolRef, z3.BoolRef, tuple[z3.BoolRef, ...]]:
    """For two flows whose path conditions go on from a common prefix with
    ``side_a`` and ``side_b``: the condition of each side, and what the joined
    flow adds to the prefix (nothing when the sides are one branch condition
    and its negation, as at a plain fork; else their disjunction: one side's
    own fork lost a flow to a ``ret``)."""
    cond_a = side_a[0] if len(side_a) == 1 else z3.And(*side_a)
    cond_b = side_b[0] if len(side_b) == 1 else z3.And(*side_b)
    single = len(side_a) == 1 and len(side_b) == 1
    if single and (cond_b.eq(simplify(z3.Not(cond_a))) or cond_a.eq(simplify(z3.Not(cond_b)))):
        return cond_a, cond_b, ()
    either = simplify(z3.Or(cond_a, cond_b))
    return cond_a, cond_b, (() if z3.is_true(either) else (either,))


def _offset_relation(d: int, width: int, na: int, nb: int) -> str | int:
    """`SymbolicExecutor._relation` of accesses of ``na`` and ``nb`` bytes
    whose addresses differ by the constant ``d`` (modulo ``2**width``):
    ``disjoint``, or the signed offset."""
    if d >= nb and (1 << width) - d >= na:
        return "disjoint"
    return d if d < (1 << (width - 1)) else d - (1 << width)


def _perf_shape(fn: ir.Function, directive: str) -> tuple[int, int, int] | None:
    """The block shape a ``.reqntid``/``.maxntid`` directive names (missing dimensions are 1)."""
    for d in fn.directives:
        if isinstance(d, ir.PerfDirective) and d.name == directive and d.values:
            x, y, z = (*d.values, 1, 1)[:3]
            return (x, y, z)
    return None


def _product(shape: tuple[int, int, int]) -> int:
    return shape[0] * shape[1] * shape[2]


def _reg_text(reg: ir.Register) -> str:
    return reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"


def _resize(dom: SymbolicDomain, value: BV, bits: int) -> BV:
    w = bv_width(value)
    if w == bits:
        return value
    if w > bits:
        return dom.extract(value, bits - 1, 0)
    return dom.zext(value, bits)


def _summands(address: BV) -> list[BV]:
    """The terms of the sum ``address`` (itself when it is no sum)."""
    return address.children() if z3.is_app_of(address, z3.Z3_OP_BADD) else [address]


def _symbol_term(address: BV) -> str | None:
    """The ``&name`` among the terms of the sum ``address`` (``&name + ...``),
    or None: where a simplified address keeps its variable."""
    for term in _summands(address):
        if z3.is_const(term) and not z3.is_bv_value(term):
            name = term.decl().name()
            if name.startswith("&"):
                return name
    return None


def _split_symbol(address: BV) -> tuple[str | None, int]:
    """``&name + c`` -> ("&name", c); anything else -> (None, 0)."""
    if z3.is_const(address) and not z3.is_bv_value(address):
        name = address.decl().name()
        return (name, 0) if name.startswith("&") else (None, 0)
    if z3.is_app_of(address, z3.Z3_OP_BADD) and address.num_args() == 2:
        a, b = address.children()
        if z3.is_bv_value(a):
            a, b = b, a
        if z3.is_bv_value(b) and z3.is_const(a) and a.decl().name().startswith("&"):
            value = b.as_long()
            if value >> (b.size() - 1):
                value -= 1 << b.size()
            return a.decl().name(), value
    return None, 0


def _is_int_addsub(inst: ir.Instruction) -> bool:
    if inst.opcode not in ("add", "sub"):
        return False
    t = isa.instruction_type(inst)
    return t is not None and t[1] in "usb" and not any(m in (".cc", ".sat") for m in inst.modifiers)


def _invariant(op: ir.Operand, defs: dict[str, list[Any]]) -> bool:
    if isinstance(op, ir.IntImm):
        return True
    if isinstance(op, ir.Register):
        if is_special_register(op.name):
            return op.name not in _VOLATILE
        return op.name not in defs
    return False


def _copy_or_step(
    inst: ir.Instruction, defs: dict[str, Any]
) -> tuple[ir.Register, int, ir.Operand | None] | None:
    """``inst`` as ``dst = src + sign*step`` when it is an integer add/sub of
    a loop-invariant step, or a copy (``mov``, or ``cvt`` between integer
    types of one width: the bits do not change); step None for a copy.
    Returns (src, sign, step), or None for anything else."""
    if inst.guard is not None or len(inst.operands) < 2:
        return None
    dst = inst.operands[0]
    if not isinstance(dst, ir.Register) or dst.selector is not None:
        return None
    if inst.opcode == "mov" and len(inst.operands) == 2:
        src = inst.operands[1]
        t = isa.instruction_type(inst)
        if isinstance(src, ir.Register) and src.selector is None and t is not None and t[1] in "usb":
            return src, 1, None
        return None
    if inst.opcode == "cvt" and len(inst.operands) == 2:
        types = isa.instruction_types(inst)
        src = inst.operands[1]
        if (
            len(types) == 2
            and all(t[1] in "usb" for t in types)
            and isa.type_bits(types[0]) == isa.type_bits(types[1])
            and not any(m in (".sat",) for m in inst.modifiers)
            and isinstance(src, ir.Register)
            and src.selector is None
        ):
            return src, 1, None
        return None
    if not _is_int_addsub(inst) or len(inst.operands) != 3:
        return None
    _, x, y = inst.operands
    sign = 1 if inst.opcode == "add" else -1
    if isinstance(x, ir.Register) and x.selector is None and x.name in defs and _invariant(y, defs):
        return x, sign, y
    if (
        inst.opcode == "add"
        and isinstance(y, ir.Register)
        and y.selector is None
        and y.name in defs
        and _invariant(x, defs)
    ):
        return y, 1, x
    return None


def _lane_zero_broadcasts(
    cfg: CFG, loop: Loop, defs: dict[str, list[tuple[ir.Instruction, int, int]]]
) -> frozenset[str]:
    """Registers the loop writes only with lane 0's value of themselves,
    broadcast to the whole warp, on every iteration.

    GCC's OpenACC code keeps a value a vector loop needs (a base pointer, a
    row offset) in lane 0 of each row across the gang loop, and broadcasts it
    at the top of each iteration: ``shfl.sync.idx.b32 r, r, 0, 31, -1``, or
    for 64 bits ``mov.b64 {lo, hi}, r``, one such shuffle per half, ``mov.b64
    r, {lo, hi}``. Lane 0 writes its own value back, so lane 0's value never
    changes, and from the first broadcast on every lane holds it: at the
    header, the entry value on the first iteration and lane 0's entry value
    after. Summarised as an unknown loop value instead, a broadcast base
    pointer lost where it came from, and no load through it was shown to
    read global memory (GCC's C stencils over static arrays). The broadcast
    must run on every iteration (its block dominates every latch), or a lane
    might still hold its own entry value later."""
    every_iteration = {b for b in loop.body if all(cfg.dominates(b, latch) for latch in loop.latches)}
    found = set()
    for name, ds in defs.items():
        if all(_broadcasts_itself(cfg, inst, b, k, name) for inst, b, k in ds) and any(
            b in every_iteration for _, b, _ in ds
        ):
            found.add(name)
    return frozenset(found)


def _broadcasts_itself(cfg: CFG, inst: ir.Instruction, block: int, k: int, name: str) -> bool:
    """Whether ``inst`` (position ``k`` of ``block``) writes register ``name``
    with lane 0's value of ``name``: one full-warp ``shfl.sync.idx`` from lane
    0 of itself, or the 64-bit register packed from two such shuffles of its
    own unpacked halves, all in the block."""
    if inst.guard is not None:
        return False
    if _lane_zero_shuffle(inst, name):
        return True
    ops = inst.operands
    if inst.opcode != "mov" or len(ops) != 2 or not isinstance(ops[1], ir.VectorOperand):
        return False
    halves = ops[1].elements
    if not isinstance(ops[0], ir.Register) or ops[0].name != name or len(halves) != 2:
        return False
    body = cfg.blocks[block].instructions
    written = _last_definition(body, k, ir.Register(name))
    unpacks = set()
    for half in halves:
        if not isinstance(half, ir.Register):
            return False
        shuffle = _last_definition(body, k, half)
        if shuffle is None or not _lane_zero_shuffle(body[shuffle], half.name):
            return False
        unpack = _last_definition(body, shuffle, half)
        if unpack is None or (written is not None and written > unpack):
            return False
        unpacked = body[unpack]
        if unpacked.opcode != "mov" or unpacked.guard is not None:
            return False
        if unpacked.operands != (ops[1], ir.Register(name)):  # mov.b64 {lo, hi}, name
            return False
        unpacks.add(unpack)
    return len(unpacks) == 1


def _lane_zero_shuffle(inst: ir.Instruction, name: str) -> bool:
    """``shfl.sync.idx.b32 name, name, 0, 31, 0xffffffff``, unguarded."""
    if inst.opcode != "shfl" or ".idx" not in inst.modifiers or inst.guard is not None:
        return False
    ops = inst.operands
    if len(ops) != 5 or ops[0] != ir.Register(name) or ops[1] != ir.Register(name):
        return False
    lane, clamp, mask = ops[2:]
    return (
        isinstance(lane, ir.IntImm)
        and lane.value == 0
        and isinstance(clamp, ir.IntImm)
        and clamp.value == 31
        and isinstance(mask, ir.IntImm)
        and mask.value & 0xFFFFFFFF == 0xFFFFFFFF
    )


def _last_definition(body: Sequence[ir.Instruction], before: int, reg: ir.Register) -> int | None:
    """The position of the last write of ``reg`` in ``body`` before ``before``, or None."""
    for k in range(before - 1, -1, -1):
        if reg in isa.defs(body[k]):
            return k
    return None


def _induction_variables(
    cfg: CFG, loop: Loop, defs: dict[str, list[tuple[ir.Instruction, int, int]]]
) -> dict[str, tuple[tuple[int, ir.Operand], ...]]:
    """Registers whose value at the loop header is ``init + step*iter``.

    A register qualifies when its one definition in the loop runs on every
    iteration and follows a chain of copies and adds of loop-invariant steps
    that starts from its own value at the header: ``r = r + 4``, but also
    ``p1 = p0 + 8; p2 = p1 + 8; p0 = p2`` (unrolled pointer bumps) and
    ``mov r5, r6; add r6, r5, 1`` (a ``-G`` counter kept through a copy). A
    source defined earlier in the same iteration is followed to its own
    definition; one defined later (or not at all before this point) is read
    as it was at the header. The step is the sum along the chain; every link
    must have one width, so the sum wraps like the registers do.
    """
    every_iteration = {b for b in loop.body if all(cfg.dominates(b, latch) for latch in loop.latches)}
    links: dict[str, tuple[ir.Register, int, ir.Operand | None, int, tuple[int, int]]] = {}
    for name, ds in defs.items():
        if len(ds) != 1:
            continue
        inst, b, k = ds[0]
        if b not in every_iteration:
            continue
        link = _copy_or_step(inst, defs)
        if link is None:
            continue
        types = isa.instruction_types(inst)
        width = (isa.type_bits(types[0]) or 0) if types else 0
        if width:
            links[name] = (*link, width, (b, k))

    def before(a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Whether position ``a`` runs before ``b`` within one iteration (both
        are on every iteration's path, so one dominates the other)."""
        return a[1] < b[1] if a[0] == b[0] else cfg.dominates(a[0], b[0])

    out: dict[str, tuple[tuple[int, ir.Operand], ...]] = {}
    for name, (_, _, _, width, _) in links.items():
        steps: list[tuple[int, ir.Operand]] = []
        current = name
        for _ in range(len(links)):
            src, sign, step, w, pos = links[current]
            if w != width:
                break
            if step is not None:
                steps.append((sign, step))
            src_link = links.get(src.name)
            if src_link is not None and src.name != current and before(src_link[4], pos):
                current = src.name  # redefined earlier in this iteration: follow it
                continue
            if src.name != name and src.name in defs and src_link is None:
                break  # defined in the loop by something else than a copy or a step
            if src.name == name and steps:
                out[name] = tuple(steps)
            break
    return out


# --------------------------------------------------------------------------
# Entry points


def analyze_kernel(
    module: ir.Module, kernel_name: str, budget: Budget | None = None, *, strict: bool = False
) -> KernelAnalysis:
    """Emulate one kernel symbolically and return its flows and traces.

    Raises KeyError when the module has no kernel of that name; with
    ``strict``, `UnsupportedInstruction` at the first instruction that
    would otherwise become an unknown value.
    """
    fn = next((f for f in module.kernels if f.name == kernel_name), None)
    if fn is None:
        raise KeyError(kernel_name)
    return SymbolicExecutor(module, fn, budget, strict).run()


def analyze_module(module: ir.Module, budget: Budget | None = None) -> list[KernelAnalysis]:
    """`analyze_kernel` for every kernel (``.entry`` with a body) of the module.

    All results at once; `ptxasw.emulator.symbolic.batch.iter_analyses` yields
    them one by one (and keeps to an overall deadline) for large modules.
    """
    return [SymbolicExecutor(module, fn, budget).run() for fn in module.kernels]
