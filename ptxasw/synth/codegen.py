"""Emitting the shuffles the detection chose (PTXASW paper, section 5.2).

For a load B that lane ``laneid + N`` already loaded as A::

    ld.global.f32 %fA, [...];        // A, unchanged
    mov.f32 %swsrc0, %fA;            // A's value, kept for the shuffles
    ...
    activemask.b32 %swm0;            // B's place
    setp.ne.b32 %swinc0, %swm0, -1;  // an incomplete warp: everyone loads
    setp.lt.u32 %swoor0, %swright, N;// no thread N to the right in this warp and row
    or.pred %swp0, %swinc0, %swoor0;
    shfl.sync.down.b32 %fB, %swsrc0, N, 31, %swm0;
    @%swp0 ld.global.f32 %fB, [...];  // B, kept for the corner cases

Where a block (a statement list) has few shuffles (`EARLY_FALLBACKS`), the
corner lanes' load comes before the shuffle, into its own register, and a
predicated ``mov`` puts it in place after: it waits for nothing while the
shuffle waits for A's value, so the two memory latencies overlap, and the
loads after the shuffle are raised above it (`ptxasw.synth.schedule`;
ptxas moves no load across ``shfl.sync``). Written the paper's way (the
load after the shuffle, into the shuffle's register) the load waits for
the shuffle: on an H100, GCC's OpenACC Jacobi (blocks of one warp, little
latency to hide behind) ran at 0.43-0.59 of the original that way, 0.92-0.98
with both. Blocks of many shuffles keep the paper's order (see
`EARLY_FALLBACKS`).

``.up`` with ``-N`` for N < 0; a plain ``mov`` for N == 0. 64-bit values
travel as two 32-bit shuffles, 16-bit ones (halves, shorts, bytes loaded
into ``%rs``) packed into one. No branch is added: one predicate per shuffle,
as the paper does, so the code stays straight-line for ``ptxas``.

Beyond the paper: the room to the right (``%swright``) and left
(``%swleft``) is computed once at the kernel's entry as the smaller of what
the warp and the block's row leave: ``min(31 - laneid, ntid.x - 1 - tid.x)``.
When ``%ntid.x`` is not a multiple of 32 a warp spans rows, and lane
``laneid + N`` may hold the thread at the start of the next row; the row
term sends those lanes to the load. With ``.reqntid`` whose x is a multiple
of 32 the row term is implied and left out.

A predicated load (``@%g ld``, as Triton writes every masked load) keeps
its predicate: the shuffle runs in every lane (``shfl.sync`` is collective),
into a fresh register, the fallback load only where both the corner case
and ``%g`` hold (a lane whose predicate is false must not touch its
address), and ``@%g mov`` puts the value where the load put it, leaving
the register as it was elsewhere::

    shfl.sync.down.b32 %swv0, %swsrc0, N, 31, %swm0;
    and.pred %swq0, %swp0, %g;
    @%swq0 ld.global.b32 %swv0, [...];
    @%g mov.b32 %rB, %swv0;

A load inside a branch that only some paths from its source take (a
bounds check around each halo element: ``if (i > 0) v = x[i - 1]``) has its
corner test and shuffle hoisted to the end of the nearest block above it
that every path from the source passes, into fresh registers. Where the
load is alone under that block's branch (its side of it, nothing before it
writing what it reads or touching memory), the fallback load goes there
too, under the corner test and the branch's condition, and the branch
keeps one ``mov`` per register, which ptxas predicates: the code is
straight-line again. Otherwise the branch keeps the ``mov`` and the
fallback load. ``shfl.sync`` then runs where the warp has not split, and
ptxas need not reconverge it around each halo element. On an H100
(`benchmarks/vector_halo.py`'s bounds-checked float4/double2 boxes):
0.78-0.91 of the original with everything in the branch, 0.99-1.07 with
the shuffle above it, 1.03-1.27 with the fallback load above it as well.
The price: the shuffle also runs on the paths that skip the load, which
costs where the branch is rarely taken; the branches of bounds checks are
taken by all but the edge lanes. A float4 box whose halo is read under a
test of the data (``--sets gated``, H100, L2 / DRAM) gains 1.14 / 1.19
with the shuffles above the branch where every thread reads it (1.05 /
1.21 in it), 1.11 / 1.13 where half do (0.90 / 1.04 in it), and loses
where 0.13 % do: 0.92 / 1.00 (0.89 / 0.99 in it). The cost model leaves
such loads to ``ptxasw tune`` (`ptxasw.analysis.gating`).

A vector load (``ld.global.v2``) takes each register from the source's
register the detection matched to it (a mov or a shuffle each), behind one
corner test, and its fallback is the vector load itself. A source copy is
made per register of a vector source that serves.

Modes ``noload`` and ``nocorner`` are the paper's ablations (no fallback
load; shuffle only). They give wrong values at warp edges and exist for
measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxasw import ir
from ptxasw.analysis.cfg import CFG, build_cfg
from ptxasw.ir import isa
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.synth.detect import LoadVerdict, Status, load_registers
from ptxasw.synth.schedule import loads_first

__all__ = ["EARLY_FALLBACKS", "Site", "emit_shuffles"]

# Statement lists with at most this many shuffles get their fallback loads
# ahead of the shuffles and the loads that follow raised above them
# (`ptxasw.synth.schedule`): there the corner lanes' latency overlaps the
# source's. In an unrolled stencil's one long block, ptxas then raises every
# fallback load to the top and keeps all their values live (the suite's
# tricubic: 32 registers -> 80, 0.77 -> 0.47 of the original on an H200);
# kernels of 1-6 sites gained (divergence 0.83 -> 0.99, laplacian 0.85 ->
# 0.95, GCC's OpenACC Jacobi 0.59 -> 0.96).
EARLY_FALLBACKS = 8


@dataclass(frozen=True)
class _Hoist:
    """Where a shuffle runs above its load's branch: before ``branch``; and
    ``runs``, the guard under which the branch leads to the load, where the
    fallback load may run there too (else None: it stays in the branch)."""

    branch: ir.Instruction
    runs: ir.Guard | None


@dataclass
class Site:
    """One rewritten load: after ``last`` runs, ``dsts`` hold its values (one
    register per element); ``sources`` are the registers they came from (the
    copies of A's)."""

    verdict: LoadVerdict
    last: ir.Instruction
    dsts: tuple[ir.Register, ...]
    sources: tuple[ir.Register, ...]


def emit_shuffles(
    builder: FunctionBuilder, verdicts: list[LoadVerdict], mode: str = "normal", rows_whole: bool = False
) -> list[Site]:
    """Rewrite the chosen loads of ``builder``'s function (edits in place).

    ``rows_whole``: ``%ntid.x`` is known to be a multiple of 32 (``.reqntid``).
    The verdicts' instructions must be the function's own.
    """
    chosen = [v for v in verdicts if v.rewritten and v.in_kernel]
    if not chosen:
        return []
    if mode != "nocorner":
        builder.require_ptx("activemask")
    gen = _Generator(builder, mode, rows_whole, build_cfg(builder.fn))
    gen.early = _early_fallbacks(builder, chosen)
    gen.prologue({v.delta for v in chosen if v.delta})
    sites = [gen.site(v) for v in chosen]
    loads_first(builder, gen.starts)
    return sites


def _early_fallbacks(builder: FunctionBuilder, chosen: list[LoadVerdict]) -> set[int]:
    """``id()`` of the shuffled loads whose statement list holds at most
    `EARLY_FALLBACKS` shuffles: theirs go first."""
    by_list: dict[int, list[int]] = {}
    for v in chosen:
        if v.status is Status.SHUFFLE:
            by_list.setdefault(id(builder.position(v.load).body), []).append(id(v.load))
    return {load for loads in by_list.values() if len(loads) <= EARLY_FALLBACKS for load in loads}


class _Generator:
    def __init__(self, b: FunctionBuilder, mode: str, rows_whole: bool, cfg: CFG) -> None:
        """``cfg``: the function's before any edit (where to hoist a shuffle)."""
        self.b = b
        self.mode = mode
        self.rows_whole = rows_whole
        self.cfg = cfg
        self.sources: dict[tuple[int, int], ir.Register] = {}
        self.right: ir.Register | None = None
        self.left: ir.Register | None = None
        self.starts: list[ir.Instruction] = []  # each shuffle's first instruction at its load (`schedule`)
        self.early: set[int] = set()  # loads whose fallback goes first (`_early_fallbacks`)

    # ---- once per kernel ----------------------------------------------------------------------
    def prologue(self, deltas: set[int]) -> None:
        """The room to the right and left of each thread, at the kernel's entry."""
        if self.mode == "nocorner" or not deltas:
            return
        b = self.b
        code: list[ir.Instruction] = []
        lane = b.fresh(".u32", "lane")
        code.append(b.mov(lane, ir.Register("%laneid")))
        tid = ntid = None
        if not self.rows_whole:
            tid, ntid = b.fresh(".u32", "tid"), b.fresh(".u32", "ntid")
            code += [b.mov(tid, ir.Register("%tid", "x")), b.mov(ntid, ir.Register("%ntid", "x"))]
        if any(d > 0 for d in deltas):
            self.right = b.fresh(".u32", "right")
            code.append(b.sub(self.right, 31, lane, ".u32"))
            if tid is not None and ntid is not None:
                row = b.fresh(".u32", "row")
                code += [
                    b.sub(row, ntid, tid, ".u32"),
                    b.sub(row, row, 1, ".u32"),
                    b.instruction("min", [".u32"], [self.right, self.right, row]),
                ]
        if any(d < 0 for d in deltas):
            self.left = b.fresh(".u32", "left")
            if tid is not None:
                code.append(b.instruction("min", [".u32"], [self.left, lane, tid]))
            else:
                code.append(b.mov(self.left, lane))
        b.insert_before(_entry_anchor(b.fn), code)

    # ---- per load -----------------------------------------------------------------------------
    def source(self, load: ir.Instruction, element: int) -> ir.Register:
        """The copy of ``load``'s value (its register ``element``) made right
        after it (one per source register that serves)."""
        key = (id(load), element)
        reg = self.sources.get(key)
        if reg is None:
            dst = _dsts(load)[element]
            typ = self.b.declared_type(dst)
            assert typ is not None, f"{dst.name} has no declared type"
            reg = self.b.fresh(typ, "src")
            self.b.insert_after(load, self.b.mov(reg, dst))
            self.sources[key] = reg
        return reg

    def site(self, v: LoadVerdict) -> Site:
        assert v.source is not None and v.delta is not None
        b, load, delta = self.b, v.load, v.delta
        srcs, dsts = tuple(self.source(v.source, e) for e in v.elements), _dsts(load)
        assert len(srcs) == len(dsts), "one source register per register of the load"
        if load.guard is not None:
            return self._guarded_site(v, srcs, dsts, load.guard)
        if v.status is Status.REUSE:
            movs = [b.mov(dst, src) for dst, src in zip(dsts, srcs, strict=True)]
            b.replace(load, movs)
            return Site(v, movs[-1], dsts, srcs)
        fallback, mask, code = self._corner_test(delta)
        hoist = self._hoist_point(v.source, load)
        loads = fallback is not None and self.mode == "normal"
        if hoist is not None and hoist.runs is not None and loads:
            assert fallback is not None
            return self._raised_site(v, srcs, dsts, fallback, mask, code, hoist)
        if hoist is None and loads and id(load) in self.early:
            assert fallback is not None
            # The fallback load first, into its own registers: it waits for
            # no shuffle (which waits for the source load), so the corner
            # lanes' memory latency overlaps the source's instead of
            # following it, and the address is read before dst changes.
            loaded, merge = self._fallback_apart(dsts, load, fallback)
            code += loaded
            code += self._shuffles(dsts, srcs, delta, mask)
            code += merge
            b.replace(load, code)
            self.starts.append(code[0])
            return Site(v, code[-1], dsts, srcs)
        # The fallback load reads its address after the shuffle wrote dst:
        # shuffle into temporaries when a dst is part of the address, or
        # when the shuffle runs above the load's branch (dst must keep its
        # value on the paths that skip the load).
        clash = loads and any(_address_uses(load, d) for d in dsts)
        apart = clash or hoist is not None
        targets = self._fresh_like(dsts, "shv") if apart else dsts
        code += self._shuffles(targets, srcs, delta, mask)
        if hoist is not None:
            b.insert_before(hoist.branch, code)
            code = []
        if apart and not clash:
            code += [b.mov(d, t) for d, t in zip(dsts, targets, strict=True)]
        if loads:
            assert fallback is not None
            code.append(b.copy(load, guard=ir.Guard(fallback)))
            if clash:
                not_loaded = ir.Guard(fallback, negated=True)
                code += [b.mov(d, t, guard=not_loaded) for d, t in zip(dsts, targets, strict=True)]
        b.replace(load, code)
        return Site(v, code[-1], dsts, srcs)

    def _raised_site(
        self,
        v: LoadVerdict,
        srcs: tuple[ir.Register, ...],
        dsts: tuple[ir.Register, ...],
        fallback: ir.Register,
        mask: ir.Operand | int,
        code: list[ir.Instruction],
        hoist: _Hoist,
    ) -> Site:
        """A load alone under one branch (module docstring): the shuffle and
        the fallback load, under the branch's condition, run above the
        branch, into fresh registers; the branch keeps only the ``mov``s,
        which ptxas predicates, so the code is straight-line again."""
        b, load = self.b, v.load
        assert v.delta is not None and hoist.runs is not None
        values = self._fresh_like(dsts, "shv")
        code += self._shuffles_and_fallback(values, srcs, v.delta, mask, load, fallback, hoist.runs)
        b.insert_before(hoist.branch, code)
        movs = [b.mov(d, value) for d, value in zip(dsts, values, strict=True)]
        b.replace(load, movs)
        return Site(v, movs[-1], dsts, srcs)

    def _hoist_point(self, source: ir.Instruction | None, load: ir.Instruction) -> _Hoist | None:
        """Where ``load``'s shuffle runs when ``load``'s block is not one
        that every path from ``source`` passes: before the branch ending the
        nearest block above it (in the dominator tree) that is (module
        docstring); None where the shuffle stays at the load: its block is
        such a block, the blocks differ in their loops, or that block ends
        in no branch."""
        cfg = self.cfg
        if source is None:
            return None
        try:
            here, start = cfg.block_of(load), cfg.block_of(source)
        except KeyError:
            return None
        if cfg.post_dominates(here, start) or not cfg.dominates(start, here):
            return None
        above = cfg.idom.get(here)
        while above is not None and not cfg.post_dominates(above, start):
            above = cfg.idom.get(above)
        if above is None or cfg.loop_of(above) != cfg.loop_of(here):
            return None
        branch = cfg.blocks[above].terminator
        if branch is None or branch.opcode != "bra":
            return None
        return _Hoist(branch, self._runs_under(above, here, branch, load))

    def _runs_under(
        self, above: int, here: int, branch: ir.Instruction, load: ir.Instruction
    ) -> ir.Guard | None:
        """The guard under which ``branch`` leads to ``load``, where the load
        may run there as well: its block is the branch's own side (no other
        way in), and nothing before it in the block writes a register it
        reads or touches memory. None otherwise."""
        cfg = self.cfg
        guard, block = branch.guard, cfg.blocks[above]
        if guard is None or load.guard is not None or cfg.predecessors(here) != [above]:
            return None
        if block.fallthrough == here and here not in block.targets:
            runs = ir.Guard(guard.predicate, negated=not guard.negated)
        elif block.targets == (here,) and block.fallthrough != here:
            runs = guard
        else:
            return None
        reads = {r.name for r in isa.uses(load)}
        for inst in cfg.blocks[here].instructions:
            if inst is load:
                return runs
            if isa.memory_effect(inst) != isa.MemoryEffect.NONE or isa.is_call(inst):
                return None
            if any(r.name in reads for r in isa.defs(inst)):
                return None
        return None

    def _guarded_site(
        self,
        v: LoadVerdict,
        srcs: tuple[ir.Register, ...],
        dsts: tuple[ir.Register, ...],
        guard: ir.Guard,
    ) -> Site:
        """A predicated load: the values are made in fresh registers in every
        lane and moved into ``dsts`` under the load's own guard (module docstring)."""
        b, load = self.b, v.load
        assert v.delta is not None
        values = self._fresh_like(dsts, "val")
        code: list[ir.Instruction] = []
        if v.status is Status.REUSE:
            code += [b.mov(value, src) for value, src in zip(values, srcs, strict=True)]
        else:
            fallback, mask, code = self._corner_test(v.delta)
            if fallback is not None and self.mode == "normal":
                code += self._shuffles_and_fallback(values, srcs, v.delta, mask, load, fallback, guard)
            else:
                code += self._shuffles(values, srcs, v.delta, mask)
        last = code[-1]
        code += [b.mov(dst, value, guard=guard) for dst, value in zip(dsts, values, strict=True)]
        b.replace(load, code)
        if v.status is not Status.REUSE and id(load) in self.early:
            self.starts.append(code[0])
        return Site(v, last, values, srcs)

    def _shuffles_and_fallback(
        self,
        values: tuple[ir.Register, ...],
        srcs: tuple[ir.Register, ...],
        delta: int,
        mask: ir.Operand | int,
        load: ir.Instruction,
        fallback: ir.Register,
        guard: ir.Guard,
    ) -> list[ir.Instruction]:
        """The shuffles into ``values`` and ``load``'s fallback into them
        where ``fallback`` and ``guard`` hold (a lane for which ``guard``, the
        load's own predicate or its branch's condition, is false must not
        touch the address): the fallback first where the load's statement
        list has few sites (`EARLY_FALLBACKS`), else after the shuffles."""
        code, both = self._fallback_guard(fallback, guard)
        if id(load) in self.early:
            loaded, merge = self._fallback_apart(values, load, both)
            return [*code, *loaded, *self._shuffles(values, srcs, delta, mask), *merge]
        into = _with_registers(load.operands[0], values)
        late = self.b.copy(load, operands=[into, *load.operands[1:]], guard=ir.Guard(both))
        return [*self._shuffles(values, srcs, delta, mask), *code, late]

    def _fallback_guard(
        self, fallback: ir.Register, guard: ir.Guard
    ) -> tuple[list[ir.Instruction], ir.Register]:
        """A predicate of ``fallback`` and ``guard`` both, and its code."""
        b = self.b
        code: list[ir.Instruction] = []
        runs = guard.predicate
        if guard.negated:
            runs = b.fresh_pred("g")
            code.append(b.instruction("not", [".pred"], [runs, guard.predicate]))
        both = b.fresh_pred("q")
        code.append(b.instruction("and", [".pred"], [both, fallback, runs]))
        return code, both

    def _fallback_apart(
        self, values: tuple[ir.Register, ...], load: ir.Instruction, where: ir.Register
    ) -> tuple[list[ir.Instruction], list[ir.Instruction]]:
        """``load`` into fresh registers where ``where`` holds, and the
        ``mov``s that put them into ``values`` there; the shuffles go between
        the two: the load waits for no shuffle (which waits for the source
        load), so the two latencies overlap."""
        b = self.b
        loaded = self._fresh_like(values, "fb")
        into = _with_registers(load.operands[0], loaded)
        code = [b.copy(load, operands=[into, *load.operands[1:]], guard=ir.Guard(where))]
        merge = [b.mov(v, f, guard=ir.Guard(where)) for v, f in zip(values, loaded, strict=True)]
        return code, merge

    def _corner_test(self, delta: int) -> tuple[ir.Register | None, ir.Operand | int, list[ir.Instruction]]:
        """The predicate of the lanes that load for themselves (an incomplete
        warp, or no lane ``laneid + N`` in this warp and row), the shuffle's
        member mask (the active lanes) and their code; in mode ``nocorner``
        no predicate, the full mask and no code."""
        b = self.b
        if self.mode == "nocorner":
            return None, 0xFFFFFFFF, []
        active, incomplete, edge = b.fresh(".b32", "m"), b.fresh_pred("inc"), b.fresh_pred("oor")
        fallback = b.fresh_pred("p")
        room = self.right if delta > 0 else self.left
        assert room is not None
        code = [
            b.activemask(active),
            b.setp("ne", incomplete, active, -1, ".b32"),
            b.setp("lt", edge, room, abs(delta), ".u32"),
            b.instruction("or", [".pred"], [fallback, incomplete, edge]),
        ]
        return fallback, active, code

    def _fresh_like(self, regs: tuple[ir.Register, ...], hint: str) -> tuple[ir.Register, ...]:
        """A fresh register of each of ``regs``' types (``.b32`` where one has none)."""
        return tuple(self.b.fresh(self.b.declared_type(r) or ".b32", hint) for r in regs)

    def _shuffles(
        self, dsts: tuple[ir.Register, ...], srcs: tuple[ir.Register, ...], delta: int, mask: ir.Operand | int
    ) -> list[ir.Instruction]:
        """Each of ``srcs`` shuffled into the ``dsts`` beside it."""
        code: list[ir.Instruction] = []
        for dst, src in zip(dsts, srcs, strict=True):
            code += self._shuffle(dst, src, delta, mask)
        return code

    def _shuffle(
        self, dst: ir.Register, src: ir.Register, delta: int, mask: ir.Operand | int
    ) -> list[ir.Instruction]:
        b = self.b
        direction, clamp = ("down", 31) if delta > 0 else ("up", 0)
        typ = b.declared_type(dst) or ".b32"
        if _bits(typ) == 32:
            return [b.shfl_sync(direction, dst, src, abs(delta), clamp, mask)]
        if _bits(typ) == 16:
            # Packed with itself into 32 bits (any 16-bit register type
            # packs: .b16, .u16, .f16) and unpacked after the shuffle.
            wide, shuffled, spare = b.fresh(".b32", "w"), b.fresh(".b32", "sw"), b.fresh(".b16", "sp")
            return [
                b.instruction("mov", [".b32"], [wide, ir.VectorOperand((src, src))]),
                b.shfl_sync(direction, shuffled, wide, abs(delta), clamp, mask),
                b.instruction("mov", [".b32"], [ir.VectorOperand((dst, spare)), shuffled]),
            ]
        lo, hi, slo, shi = (b.fresh(".b32", n) for n in ("lo", "hi", "slo", "shi"))
        return [
            b.instruction("mov", [".b64"], [ir.VectorOperand((lo, hi)), src]),
            b.shfl_sync(direction, slo, lo, abs(delta), clamp, mask),
            b.shfl_sync(direction, shi, hi, abs(delta), clamp, mask),
            b.instruction("mov", [".b64"], [dst, ir.VectorOperand((slo, shi))]),
        ]


def _dsts(load: ir.Instruction) -> tuple[ir.Register, ...]:
    dsts = load_registers(load)
    assert dsts, "a chosen load writes registers"
    return dsts


def _with_registers(destination: ir.Operand, regs: tuple[ir.Register, ...]) -> ir.Operand:
    """A load's destination operand with its registers replaced by ``regs``
    in order (a vector's sinks stay where they are)."""
    if not isinstance(destination, ir.VectorOperand):
        return regs[0]
    fresh = iter(regs)
    return ir.VectorOperand(tuple(e if isinstance(e, ir.Sink) else next(fresh) for e in destination.elements))


def _bits(typ: str) -> int:
    from ptxasw.ir import isa

    return isa.type_bits(typ) or 32


def _address_uses(load: ir.Instruction, reg: ir.Register) -> bool:
    address = load.operands[1] if len(load.operands) > 1 else None
    return isinstance(address, ir.Address) and isinstance(address.base, ir.Register) and address.base == reg


def _entry_anchor(fn: ir.Function) -> ir.Statement:
    """The body's first instruction. Code put before it runs on entry, after
    any label above it (``-G`` opens with ``$L__func_begin0``), so the blocks
    stay as they were; if a loop branches back to that label, the prologue is
    recomputed each time round, to the same values."""
    assert fn.body is not None
    for inst in fn.instructions():
        return inst
    raise ValueError(f"{fn.name} has an empty body")
