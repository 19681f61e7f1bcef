"""Warp collectives and atomics, written once over the Domain (`semantics/collectives.py`).

- Agreement: every collective computed by the NumPy domain over a warp and
  by the Z3 domain for one symbolic thread, whose result is then evaluated
  lane by lane with that lane's thread ids substituted, gives the same bits,
  on random data, for a block shape that is known (``.reqntid``) and for one
  that is not (warps that straddle rows, a partial last warp).
- Proof: the symbolic executor proves ``shfl.sync.down`` of ``a[tid.x]``
  equal to the load of ``a[tid.x+1]`` in lanes 0..30 and out of range in lane 31.
- ``%laneid`` tied to ``%tid`` and the block shape; strict mode.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import z3

from ptxasw import ir
from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.semantics import collectives as col
from ptxasw.emulator.symbolic.domain import SymbolicDomain
from ptxasw.emulator.symbolic.lanes import LaneModel
from tests.test_symbolic_domain import _instruction

CONCRETE1 = ConcreteDomain(1)
Pair = tuple[Bits, Bits]

# (block shape, warp index, whether the shape is known to the symbolic side)
SHAPES = [
    ((64, 1, 1), 1, True),  # rows of whole warps: lane l is tid.x = 32 + l
    ((8, 4, 2), 1, False),  # a warp spans four rows of 8
    ((12, 5, 1), 1, False),  # a warp straddles rows unevenly
    ((40, 1, 1), 1, False),  # the last warp has 8 lanes
    ((40, 1, 1), 1, True),
]


class Warp:
    """One warp of a block on both sides: thread ids per lane, and values.

    A concrete value is a pair of arrays that differ only in the lanes past
    the end of a partial warp (random fillings of registers no thread owns);
    a lane's result is compared only where both agree, i.e. where it does not
    depend on a lane that does not exist (reading one is undefined in PTX).
    """

    def __init__(self, block: tuple[int, int, int], warp: int, known: bool, seed: int) -> None:
        self.block = block
        self.rng = random.Random(seed)
        nx, ny, nz = block
        size = nx * ny * nz
        self.linear = [warp * 32 + lane for lane in range(32)]
        self.exists = [t < size for t in self.linear]
        self.tids = [(t % nx, t // nx % ny, t // (nx * ny)) for t in self.linear]
        self.c = ConcreteDomain(32)
        self.s = SymbolicDomain(lanes=LaneModel(block if known else None, expand=True))
        self.active = sum(1 << lane for lane in range(32) if self.exists[lane])

    def value(self, width: int, distinct: int = 0) -> tuple[Pair, z3.BitVecRef]:
        """Random per-lane data: a hash of the linear thread id with random
        constants (``distinct`` > 0: only that many different values)."""
        a, b, k, e = (self.rng.getrandbits(32) | 1 for _ in range(4))
        shift = self.rng.randrange(24)

        def mix(t: z3.BitVecRef) -> z3.BitVecRef:
            h = (t * a + b) ^ z3.LShR(t * k + e, shift)
            h = z3.URem(h, distinct) if distinct else h
            return z3.Extract(width - 1, 0, h) if width < 32 else h

        expr = mix(self.s.lanes.linear())
        values = [z3.simplify(mix(z3.BitVecVal(t, 32))).as_long() for t in self.linear]
        other = [v if e else self.rng.getrandbits(width) for v, e in zip(values, self.exists, strict=True)]
        return (self.c.from_ints(values, width), self.c.from_ints(other, width)), expr

    def uniform(self, value: int, width: int) -> tuple[Pair, z3.BitVecRef]:
        c = self.c.const(value, width)
        return (c, c), self.s.const(value, width)

    def per_lane(self, expr: z3.ExprRef) -> list[int]:
        """The symbolic result evaluated in each lane (dead lanes: 0, never compared)."""
        out: list[int] = []
        for lane in range(32):
            if not self.exists[lane]:
                out.append(0)
                continue
            pairs = [(z3.BitVec("%laneid", 32), z3.BitVecVal(lane, 32))]
            for sel, t, n in zip("xyz", self.tids[lane], self.block, strict=True):
                pairs.append((z3.BitVec(f"%tid.{sel}", 32), z3.BitVecVal(t, 32)))
                pairs.append((z3.BitVec(f"%ntid.{sel}", 32), z3.BitVecVal(n, 32)))
            value = z3.simplify(z3.substitute(expr, *pairs))
            assert z3.is_bv_value(value), f"unbound variables in {value}"
            out.append(value.as_long())
        return out

    def agree(self, concrete: Pair, symbolic: z3.ExprRef, what: str) -> int:
        """Compare lane by lane; returns how many lanes were compared."""
        a, b = (self.c.to_ints(x) for x in concrete)
        got = self.per_lane(symbolic)
        keep = [e and x == y for e, x, y in zip(self.exists, a, b, strict=True)]
        assert [g for g, k in zip(got, keep, strict=True) if k] == [
            x for x, k in zip(a, keep, strict=True) if k
        ], what
        return sum(keep)

    def both(self, fn: Callable[..., Any], *args: tuple[Pair, z3.ExprRef] | Any) -> tuple[Any, Any]:
        """``fn(domain, *args)`` on the two concrete fillings and on the symbolic side."""
        conc = [fn(self.c, *(x[0][i] if isinstance(x, tuple) else x for x in args)) for i in (0, 1)]
        sym = fn(self.s, *(x[1] if isinstance(x, tuple) else x for x in args))
        return conc, sym

    def check(self, fn: Callable[..., Any], *args: Any, what: str) -> None:
        """Run ``fn`` on both sides and compare each result (one value or a tuple)."""
        (ca, cb), sym = self.both(fn, *args)
        if not isinstance(sym, tuple):
            ca, cb, sym = (ca,), (cb,), (sym,)
        for x, y, z in zip(ca, cb, sym, strict=True):
            self.agree((x, y), z, what)


@pytest.mark.parametrize(("block", "warp", "known"), SHAPES)
def test_lane_primitives_agree(block: tuple[int, int, int], warp: int, known: bool) -> None:
    w = Warp(block, warp, known, seed=1)
    active, _ = w.uniform(w.active, 32)
    # The lanes that exist: the symbolic side's active mask of a converged warp.
    w.agree(active, w.s.lanes.existing(), "existing lanes")
    w.agree((w.c.lane_index(), w.c.lane_index()), w.s.lane_index(), "lane index")
    for _ in range(2):
        v = w.value(32)
        src = w.uniform(w.rng.randrange(32), 32)
        w.check(lambda d, x, y: d.lane_read(x, y), v, src, what="read")
        member = w.uniform(w.rng.getrandbits(32) & w.active, 32)
        w.check(lambda d, x, m: d.lane_ballot(x, m), w.value(1), member, what="ballot")
        w.check(lambda d, x, m: d.lane_match(x, m), w.value(32, distinct=3), member, what="match")
        for op in ("add", "and", "or", "xor", "smin", "smax", "umin", "umax"):
            w.check(lambda d, x, m, op=op: d.lane_reduce(op, x, m), v, member, what=op)


@pytest.mark.parametrize(("block", "warp", "known"), SHAPES)
def test_collectives_agree(block: tuple[int, int, int], warp: int, known: bool) -> None:
    w = Warp(block, warp, known, seed=2)
    compared = 0
    for trial in range(3):
        v = w.value(32)
        # b per lane (shfl reads it per lane) or uniform; c of random clamp and segment.
        b = w.value(32, distinct=40) if trial % 2 else w.uniform(trial * 3, 32)
        c = w.uniform(w.rng.choice([0x1F, 0x0, 0x1C07, 0x1807, 0x1F00, w.rng.getrandbits(13)]), 32)
        for mode in (".up", ".down", ".bfly", ".idx"):
            (ca, cb), (sv, sok) = w.both(lambda d, x, y, z, mode=mode: col.shuffle(d, mode, x, y, z), v, b, c)
            compared += w.agree((ca[0], cb[0]), sv, f"shfl{mode}")
            w.agree((ca[1], cb[1]), sok, f"shfl{mode} predicate")
        member = w.uniform((w.rng.getrandbits(32) | 1) & w.active, 32)
        pred = w.value(1)
        for mode in (".ballot", ".all", ".any", ".uni"):
            w.check(lambda d, p, m, mode=mode: col.vote(d, mode, p, m), pred, member, what=f"vote{mode}")
        w.check(lambda d, p, m: col.vote(d, ".all", p, m), w.uniform(1, 1), member, what="vote.all unanimous")
        few = w.value(32, distinct=1 + trial)
        for all_ in (False, True):
            w.check(lambda d, x, m, a=all_: col.match(d, a, x, m), few, member, what=f"match all={all_}")
        sgn = trial % 2 == 0  # min/max signed on one trial, unsigned on the other
        for op, signed in (("add", 0), ("and", 0), ("or", 0), ("xor", 0), ("min", sgn), ("max", sgn)):
            w.check(lambda d, x, m, o=op, s=signed: col.redux(d, o, s, x, m), v, member, what=f"redux.{op}")
        w.check(col.elect, member, what="elect")
    assert compared > 0


def test_collectives_dispatch_through_instructions() -> None:
    """`warp_collective` reads the instruction's form; guards drop lanes on both sides."""
    w = Warp((64, 1, 1), 0, True, seed=3)
    v, p, full = w.value(32), w.value(1), w.uniform(0xFFFFFFFF, 32)
    cases = [
        ("shfl.sync.bfly.b32 %r1|%p1, %r2, 3, 31, -1;", [v, w.uniform(3, 32), w.uniform(31, 32)]),
        ("vote.sync.ballot.b32 %r1, %p2, -1;", [p, full]),
        ("vote.sync.any.pred %p1, %p2, -1;", [p, full]),
        ("match.all.sync.b32 %r1|%p1, %r2, -1;", [v, full]),
        ("redux.sync.max.s32 %r1, %r2, -1;", [v, full]),
        ("elect.sync %r1|%p1, -1;", [full]),
        ("activemask.b32 %r1;", []),
    ]
    for text, ops in cases:
        inst = _instruction(text)
        for guard in (None, w.value(1)):

            def run(d: Any, *args: Any, inst: ir.Instruction = inst, n: int = len(ops)) -> tuple[Any, ...]:
                # args: the operands, the guard (when there is one), the active lanes
                cond = args[n] if len(args) == n + 2 else None
                return tuple(col.warp_collective(d, inst, list(args[:n]), cond, args[-1]))

            w.check(run, *ops, *([guard] if guard else []), full, what=text)
    c = w.c
    full_c = c.const(0xFFFFFFFF, 32)
    with pytest.raises(NotImplementedError, match="floating-point redux"):
        col.warp_collective(
            c, _instruction("redux.sync.min.f32 %r1, %r2, -1;"), [full_c, full_c], None, full_c
        )


def test_opaque_collectives_are_consistent() -> None:
    """Without expansion (the executor's default) a ballot, match or reduction
    is an uninterpreted function: equal inputs, equal terms; nothing more."""
    d = SymbolicDomain(lanes=LaneModel())
    tid = z3.BitVec("%tid.x", 32)
    pred = z3.If(z3.ULT(tid, 5), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
    full = d.const(0xFFFFFFFF, 32)
    assert d.lane_ballot(pred, full).eq(d.lane_ballot(pred, full))
    assert not d.lane_ballot(pred, full).eq(d.lane_ballot(pred, d.const(1, 32)))
    assert d.lane_reduce("add", tid, full).eq(d.lane_reduce("add", tid, full))
    assert not d.lane_reduce("add", tid, full).eq(d.lane_reduce("xor", tid, full))
    assert "lane_match32" in str(d.lane_match(tid, full))
    with pytest.raises(NotImplementedError):
        d.lane_reduce("mul", tid, full)


def test_opaque_read_of_per_thread_unknowns() -> None:
    """A per-thread unknown cannot be moved by substitution: in another lane
    it is an opaque function of the unknown and the lane, the same for the
    same inputs; the thread ids around it move. A value past the size limit
    becomes one opaque read as a whole (a reduction's sums stay small)."""
    d = SymbolicDomain(lanes=LaneModel((64, 1, 1)))
    unknown = d.fresh("undef.%r1", 32)
    tid = z3.BitVec("%tid.x", 32)
    lane = z3.BitVec("%laneid", 32)
    one = d.const(1, 32)
    moved = d.lane_read(unknown + tid, one)
    read = z3.Function("lane_read32", z3.BitVecSort(32), z3.BitVecSort(32), z3.BitVecSort(32))
    assert z3.simplify(moved - (read(unknown, one) + tid - lane + 1)).eq(z3.BitVecVal(0, 32))
    assert d.lane_read(unknown + tid, one).eq(moved)
    big = unknown
    for k in range(600):
        big = big * (tid + k)
    assert str(d.lane_read(big, one)).startswith("lane_read32(")
    uniform = z3.BitVec("param_n", 32) * 3
    assert d.lane_read(uniform, one).eq(uniform)  # the same in every lane
    assert z3.simplify(d.lane_read(tid * 4, one) - (tid - z3.BitVec("%laneid", 32) + 1) * 4).eq(
        z3.BitVecVal(0, 32)
    )


# ---- atomics ---------------------------------------------------------------------------------


ATOMIC_FORMS = (
    [
        (op, t)
        for op in ("add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas")
        for t in (".u32", ".s32", ".u64", ".s64", ".b32")
    ]
    + [("add", t) for t in (".f32", ".f64", ".f16", ".bf16", ".f16x2", ".bf16x2")]
    + [("cas", ".b64")]
)


@pytest.mark.parametrize(("op", "ptx_type"), ATOMIC_FORMS)
def test_atomic_update_agrees(op: str, ptx_type: str) -> None:
    """The symbolic update, evaluated, equals the concrete one (floats through
    `SymbolicDomain.evaluate`, which computes the opaque adds concretely)."""
    rng = random.Random(hash((op, ptx_type)) & 0xFFFF)
    bits = 16 if ptx_type in (".f16", ".bf16") else 64 if ptx_type[-2:] == "64" else 32
    specials = [
        0,
        1,
        (1 << bits) - 1,
        1 << (bits - 1),
        0x7FC00123,
        0x7F800000,
        0xFF800000,
        0x7C00,
        0x7FF4000000000001,
    ]
    c = ConcreteDomain(1)
    s = SymbolicDomain()
    old, b, x = (z3.BitVec(n, bits) for n in ("old", "b", "c"))
    expr = col.atomic_update(s, op, ptx_type, old, b, x)
    for _ in range(40):
        vals = [rng.choice(specials) if rng.random() < 0.3 else rng.getrandbits(bits) for _ in range(3)]
        vals = [v & ((1 << bits) - 1) for v in vals]
        if op == "cas" and rng.random() < 0.5:
            vals[1] = vals[0]
        want = c.to_ints(col.atomic_update(c, op, ptx_type, *(c.const(v, bits) for v in vals)))[0]
        got = s.evaluate(expr, dict(zip(("old", "b", "c"), vals, strict=True)), c)
        assert got == want, (op, ptx_type, [hex(v) for v in vals])


def test_atomic_rounds_keep_lane_order() -> None:
    from ptxasw.emulator.concrete.atomics import lane_order_rounds

    rounds = lane_order_rounds(["a", "b", "a", "c", "a", "b"])
    assert [r.tolist() for r in rounds] == [[0, 1, 3], [2, 5], [4]]
    assert lane_order_rounds([]) == []


@pytest.mark.parametrize("op", ["add", "and", "or", "xor", "min", "max", "inc", "cas", "exch"])
@pytest.mark.parametrize("ptx_type", [".u32", ".s32", ".u64"])
def test_apply_in_lane_order_is_the_sequential_order(op: str, ptx_type: str) -> None:
    """Rounds and prefix scans give every lane the old value of a plain loop over the lanes."""
    from ptxasw.emulator.concrete.atomics import apply_in_lane_order, atomic_function, atomic_words, scannable

    nbytes = 8 if ptx_type.endswith("64") else 4
    update = atomic_words(op, ptx_type, nbytes)
    one = atomic_function(op, ptx_type, nbytes)
    assert update is not None and one is not None
    rng = random.Random(hash((op, ptx_type)) & 0xFFFF)
    for words in (1, 3, 32):
        word = np.array([rng.randrange(words) for _ in range(32)], dtype=np.int64)
        init = np.array([rng.getrandbits(nbytes * 8) for _ in range(words)], dtype=np.uint64)
        b = np.array([rng.getrandbits(nbytes * 8) for _ in range(32)], dtype=np.uint64)
        c = np.array([rng.getrandbits(nbytes * 8) for _ in range(32)], dtype=np.uint64)
        if op == "cas":
            b[::3] = init[word[::3]]
        memory = [int(v) for v in init]
        want_olds = []
        for i in range(32):
            want_olds.append(memory[word[i]])
            memory[word[i]] = one(memory[word[i]], int(b[i]), int(c[i]))
        olds, finals = apply_in_lane_order(update, scannable(op, ptx_type), init, word, b, c)
        assert olds.tolist() == want_olds and finals.tolist() == memory, words


def test_bar_reduce() -> None:
    c = ConcreteDomain(32)
    warps = [(c.const(0b1011, 32), c.const(0b1111, 32)), (c.const(0xFFFF, 32), c.const(0xFFFF, 32))]
    assert c.to_ints(col.bar_reduce(c, ".popc", warps))[0] == 19
    assert c.to_ints(col.bar_reduce(c, ".and", warps))[0] == 0
    assert c.to_ints(col.bar_reduce(c, ".or", warps))[0] == 1
    full = [(c.const(0xF, 32), c.const(0xF, 32))]
    assert c.to_ints(col.bar_reduce(c, ".and", full))[0] == 1
    assert c.to_ints(col.bar_reduce(c, ".or", [(c.const(0, 32), c.const(0xF, 32))]))[0] == 0


# ---- the symbolic executor ---------------------------------------------------------------------

SHUFFLE_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry shift(.param .u64 shift_param_0, .param .u64 shift_param_1){shape}
{{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [shift_param_0];
    ld.param.u64 %rd2, [shift_param_1];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r2, [%rd4];
    ld.global.u32 %r3, [%rd4+4];
    shfl.sync.down.b32 %r4|%p1, %r2, 1, 31, -1;
    selp.u32 %r5, 1, 0, %p1;
    mov.u32 %r6, %laneid;
    mov.u32 %r7, %ntid.x;
    mul.wide.u32 %rd5, %r1, 16;
    add.s64 %rd6, %rd2, %rd5;
    st.global.v4.u32 [%rd6], {{%r4, %r3, %r5, %r6}};
    st.global.u32 [%rd6+16], %r7;
    ret;
}}
"""


def _analyse(shape: str, strict: bool = False) -> tuple[dict[int, z3.BitVecRef], z3.Solver]:
    """The stored values by offset from the row's start, and a solver holding the executor's axioms."""
    from ptxasw.emulator.symbolic.executor import SymbolicExecutor
    from ptxasw.parser import parse_ptx

    module = parse_ptx(SHUFFLE_KERNEL.format(shape=shape), "shift.ptx")
    ex = SymbolicExecutor(module, module.kernels[0], strict=strict)
    result = ex.run()
    (flow,) = result.flows
    stores = [a for a in flow.trace if a.kind == "st"]
    base = stores[0].address
    values = {z3.simplify(s.address - base).as_long(): s.value for s in stores}
    solver = z3.Solver()
    solver.add(*ex.solver.axioms, *ex.solver.pending)
    return values, solver


def _proves(solver: z3.Solver, claim: z3.BoolRef, *assuming: z3.BoolRef) -> bool:
    solver.push()
    solver.add(*assuming, z3.Not(claim))
    answer = solver.check()
    solver.pop()
    assert answer != z3.unknown
    return answer == z3.unsat


LANE = z3.BitVec("%laneid", 32)
TID = {s: z3.BitVec(f"%tid.{s}", 32) for s in "xyz"}
NTID = {s: z3.BitVec(f"%ntid.{s}", 32) for s in "xyz"}


def test_shfl_down_is_the_neighbours_load_with_reqntid() -> None:
    """With ``.reqntid 64``: the shuffled ``a[tid.x]`` is ``a[tid.x+1]`` in lanes
    0..30 (Z3 proves it), and in lane 31 the predicate is false."""
    values, solver = _analyse("\n.reqntid 64, 1, 1")
    shuffled, direct, pred = values[0], values[4], values[8]
    assert _proves(solver, shuffled == direct, z3.ULT(LANE, 31))
    assert _proves(solver, pred == 1, z3.ULT(LANE, 31))
    assert _proves(solver, pred == 0, LANE == 31)
    assert not _proves(solver, shuffled == direct, LANE == 31)  # lane 31 keeps a[tid.x]
    # the block shape is constant, and %laneid is %tid.x % 32
    assert z3.simplify(values[16]).eq(z3.BitVecVal(64, 32))
    assert _proves(solver, values[12] == z3.URem(TID["x"], 32))


def test_laneid_with_unknown_block_shape() -> None:
    """Without ``.reqntid`` a warp may straddle rows: ``%laneid`` is the linear
    id mod 32, not ``%tid.x`` mod 32, and the neighbour lane's thread need not
    be ``tid.x + 1``; the executor claims exactly that much."""
    values, solver = _analyse("")
    lane = values[12]
    linear = TID["x"] + NTID["x"] * (TID["y"] + NTID["y"] * TID["z"])
    assert _proves(solver, lane == z3.URem(linear, 32))
    assert not _proves(solver, lane == z3.URem(TID["x"], 32))
    shuffled, direct = values[0], values[4]
    assert not _proves(solver, shuffled == direct, z3.ULT(LANE, 31))
    # a row that is a whole number of warps brings the rewrite back
    assert _proves(solver, shuffled == direct, z3.ULT(LANE, 31), NTID["x"] == 96)


def test_maxntid_bounds_the_block() -> None:
    values, solver = _analyse("\n.maxntid 128, 1, 1")
    assert _proves(solver, z3.ULE(values[16], 128))
    assert not _proves(solver, z3.ULE(values[16], 64))


STRICT_KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [k_param_0];
    mov.u32 %r1, %tid.x;
    redux.sync.min.f32 %r2, %r1, -1;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def test_strict_mode_raises_with_the_location() -> None:
    from ptxasw.emulator.symbolic.executor import SymbolicExecutor
    from ptxasw.errors import PtxError, UnsupportedInstruction
    from ptxasw.parser import parse_ptx

    module = parse_ptx(STRICT_KERNEL, "strict.ptx")
    lenient = SymbolicExecutor(module, module.kernels[0]).run()
    assert lenient.flows  # a fresh value and a note, as before
    with pytest.raises(UnsupportedInstruction) as info:
        SymbolicExecutor(module, module.kernels[0], strict=True).run()
    err = info.value
    assert isinstance(err, PtxError) and err.opcode.startswith("redux")
    assert str(err).startswith("strict.ptx:10:5: unsupported instruction redux.sync.min.f32")
    assert "floating-point redux" in str(err)


def test_strict_interpreter_raises_with_the_location() -> None:
    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.errors import UnsupportedInstruction
    from ptxasw.parser import parse_ptx

    module = parse_ptx(STRICT_KERNEL, "strict.ptx")
    out = np.zeros(1, dtype=np.uint32)
    lenient = launch(module, "k", 1, 32, [out])
    assert any("strict.ptx:10:5" in w and "its results are zero" in w for w in lenient.warnings)
    with pytest.raises(UnsupportedInstruction, match=r"^strict.ptx:10:5: unsupported instruction redux"):
        launch(module, "k", 1, 32, [out], strict=True)
