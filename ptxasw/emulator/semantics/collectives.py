"""Warp collectives, atomic read-modify-write arithmetic and ``bar.red``, once, over the Domain.

``shfl``, ``vote``, ``match``, ``redux``, ``elect`` and ``activemask`` read
other lanes; the instruction semantics hand them to `Machine.warp`, and every
machine (the concrete interpreter, the symbolic executor, later the lifter)
answers with `warp_collective` here. What "another lane" means is the
domain's business, through its lane primitives (`Domain.lane_index`,
`lane_read`, `lane_ballot`, `lane_match`, `lane_reduce`): a gather over the
32 lanes of a NumPy warp, or a substitution of the source lane's thread ids
in a Z3 expression. So the symbolic result of ``shfl.sync.down`` *is* the
shuffled value in the source lane, which is what shuffle synthesis proves
its rewrites with.

The machine supplies one fact the domain cannot know: ``active``, the 32-bit
mask of lanes executing the instruction (the interpreter's active mask; for
the symbolic executor the lanes that exist in a converged warp).

`atomic_update` is the ``new = f(old, b, c)`` of ``atom``/``red`` on bit
patterns; the interpreter applies it lane by lane in increasing lane order,
the symbolic executor to one symbolic thread. `bar_reduce` combines the
warps of a CTA for ``bar.red``.

A form not modelled raises ``NotImplementedError`` with the reason; the
semantics turn it into an unknown value (or, in strict mode, an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ptxasw import ir
from ptxasw.emulator.semantics import domain as dm
from ptxasw.emulator.semantics.domain import Domain, FpOp
from ptxasw.ir import isa

V = TypeVar("V")

__all__ = [
    "atomic_supported",
    "atomic_update",
    "bar_reduce",
    "elect",
    "match",
    "redux",
    "shuffle",
    "vote",
    "warp_collective",
]


def warp_collective(
    d: Domain[V], inst: ir.Instruction, operands: list[V], cond: V | None, active: V
) -> list[V]:
    """The results of a warp-collective instruction (not ``bar.warp.sync``).

    ``operands`` are its source operands in PTX order, ``cond`` its guard
    (None: unguarded), ``active`` the lanes executing it. Lanes whose guard
    is false do not take part; ``vote``/``match``/``redux``/``elect`` also
    leave out lanes their member mask does not name.
    """
    opcode, mods = inst.opcode, inst.modifiers
    if opcode == "shfl":
        mode = next((m for m in (".up", ".down", ".bfly", ".idx") if m in mods), ".idx")
        return list(shuffle(d, mode, operands[0], operands[1], operands[2]))
    if opcode == "activemask":
        return [active]
    part = active if cond is None else d.lane_ballot(cond, active)
    if opcode == "elect":
        return list(elect(d, d.and_(part, operands[0]) if operands else part))
    member = d.and_(part, operands[1]) if len(operands) > 1 else part
    if opcode == "vote":
        mode = next((m for m in (".ballot", ".all", ".any") if m in mods), ".uni")
        return [vote(d, mode, operands[0], member)]
    if opcode == "match":
        return list(match(d, ".all" in mods, operands[0], member))
    if opcode == "redux":
        ptx_type = isa.instruction_type(inst)
        if ptx_type not in (".u32", ".s32", ".b32"):
            raise NotImplementedError("floating-point redux is not modelled")
        op = next((m[1:] for m in mods if m[1:] in ("add", "min", "max", "and", "or", "xor")), None)
        if op is None:
            raise NotImplementedError(f"{inst.mnemonic} names no reduction")
        return [redux(d, op, ptx_type == ".s32", operands[0], member)]
    raise NotImplementedError(f"warp operation {opcode} is not modelled")


# ---- shfl ------------------------------------------------------------------------------------


def shuffle(d: Domain[V], mode: str, a: V, b: V, c: V) -> tuple[V, V]:
    """``shfl.sync`` (``mode``: ``.up .down .bfly .idx``): ``(value, in-range predicate)``.

    ``c`` packs the clamp value (bits 0-4) and the segment mask (bits 8-12):
    a lane reads within its segment, up to the clamp lane. Out of range, a
    lane keeps its own ``a`` and the predicate is 0. The member mask is not
    consulted: lanes read their source as it is (what the interpreter has
    always done; a source outside the mask is undefined in PTX).
    """
    k = lambda v: d.const(v, 32)  # noqa: E731
    lane = d.lane_index()
    b5 = d.and_(b, k(31))
    clamp = d.and_(c, k(31))
    seg = d.and_(d.lshr(c, k(8)), k(31))
    not_seg = d.and_(d.not_(seg), k(31))
    max_lane = d.or_(d.and_(lane, seg), d.and_(clamp, not_seg))
    if mode == ".up":
        # Signed: lane - b below 0 is out of range.
        src = d.sub(lane, b5)
        ok = dm.sge(d, src, max_lane)
    elif mode == ".down":
        src = d.add(lane, b5)
        ok = dm.ule(d, src, max_lane)
    elif mode == ".bfly":
        src = d.xor(lane, b5)
        ok = dm.ule(d, src, max_lane)
    else:
        src = d.or_(d.and_(lane, seg), d.and_(b5, not_seg))
        ok = dm.ule(d, src, max_lane)
    # In range, src is a lane (0..31); out of range the read is not used.
    return d.ite(ok, d.lane_read(a, src), a), ok


# ---- vote, match, redux, elect --------------------------------------------------------------


def vote(d: Domain[V], mode: str, pred: V, member: V) -> V:
    """``vote.sync`` over the lanes in ``member``: ``.ballot`` gives the 32-bit
    mask of lanes whose predicate is 1, ``.all .any .uni`` a predicate."""
    ballot = d.lane_ballot(pred, member)
    if mode == ".ballot":
        return ballot
    zero = d.const(0, 32)
    if mode == ".all":
        return d.eq(ballot, member)
    if mode == ".any":
        return dm.ne(d, ballot, zero)
    return d.or_(d.eq(ballot, zero), d.eq(ballot, member))  # .uni


def match(d: Domain[V], all_: bool, value: V, member: V) -> tuple[V, V]:
    """``match.any.sync``: the lanes of ``member`` holding this lane's value
    (predicate 0, the form has none); ``match.all.sync``: ``member`` if all of
    them hold the same value, else 0, and that as the predicate."""
    same = d.lane_match(value, member)
    if not all_:
        return same, d.const(0, 1)
    everyone = d.eq(same, member)
    return d.ite(everyone, member, d.const(0, 32)), everyone


def redux(d: Domain[V], op: str, signed: bool, value: V, member: V) -> V:
    """``redux.sync`` (``add min max and or xor``) over the lanes in ``member``."""
    if op in ("min", "max"):
        op = ("s" if signed else "u") + op
    return d.lane_reduce(op, value, member)


def elect(d: Domain[V], member: V) -> tuple[V, V]:
    """``elect.sync``: the lowest lane of ``member`` (0 when empty) and whether it is this lane."""
    k = lambda v: d.const(v, 32)  # noqa: E731
    lowest = d.and_(member, d.neg(member))
    empty = d.eq(member, k(0))
    leader = d.ite(empty, k(0), d.popc(d.sub(lowest, k(1))))
    is_leader = d.and_(d.not_(empty), d.eq(d.lane_index(), leader))
    return leader, is_leader


# ---- bar.red ---------------------------------------------------------------------------------


def bar_reduce(d: Domain[V], mode: str, warps: Sequence[tuple[V, V]]) -> V:
    """``bar.red`` over the warps of a CTA: ``warps`` holds, per warp, the
    ballot of its predicate and the lanes that took part.

    ``.popc``: the number of 1 predicates (32 bits); ``.and``: whether all
    were 1; ``.or``: whether any was (1 bit).
    """
    if mode == ".popc":
        total = d.const(0, 32)
        for ballot, _ in warps:
            total = d.add(total, d.popc(ballot))
        return total
    result = d.const(1 if mode == ".and" else 0, 1)
    for ballot, part in warps:
        if mode == ".and":
            result = d.and_(result, d.eq(ballot, part))
        else:
            result = d.or_(result, dm.ne(d, ballot, d.const(0, 32)))
    return result


# ---- atomics ---------------------------------------------------------------------------------

_HALF_ADD: dict[str, str] = {".f16x2": ".f16", ".bf16x2": ".bf16"}
_FLOAT_ADD = frozenset({".f32", ".f64", ".f16", ".bf16", ".f16x2", ".bf16x2"})
_INT_OPS = frozenset({"add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas"})


def _is_float(ptx_type: str) -> bool:
    return ptx_type.startswith((".f", ".bf"))


def atomic_supported(op: str, ptx_type: str) -> bool:
    """Whether `atomic_update` models ``op`` on ``ptx_type``."""
    if _is_float(ptx_type):
        return op in ("exch", "cas") or (op == "add" and ptx_type in _FLOAT_ADD)
    return op in _INT_OPS


def atomic_update(d: Domain[V], op: str, ptx_type: str, old: V, b: V, c: V) -> V:
    """``new = f(old, b, c)`` of ``atom``/``red`` on bit patterns of equal width.

    ``op``: ``add inc dec min max and or xor exch cas`` (``c`` only matters
    for ``cas``: compare ``b``, swap in ``c``). ``min``/``max`` are signed for
    ``.s`` types. Float additions round to nearest; ``.f32`` flushes subnormal
    inputs and results, as ``atom.add.f32`` does. NaN results follow what an
    H200 leaves in memory: the canonical NaN (``0x7fffffff``, ``0x7fff``) after
    ``.f32``/``.f16``/``.bf16`` adds, and for ``.f64`` the NaN operand
    unchanged, signalling or not; with two NaN operands the one in memory is
    kept (not measured).
    """
    if not atomic_supported(op, ptx_type):
        raise NotImplementedError(f"atomic {op} on {ptx_type} is not modelled")
    width = d.width(old)
    if op == "add":
        return _atomic_add(d, ptx_type, old, b) if _is_float(ptx_type) else d.add(old, b)
    if op == "inc":
        return d.ite(dm.uge(d, old, b), d.const(0, width), d.add(old, d.const(1, width)))
    if op == "dec":
        wraps = d.or_(d.eq(old, d.const(0, width)), dm.ugt(d, old, b))
        return d.ite(wraps, b, d.sub(old, d.const(1, width)))
    if op in ("min", "max"):
        less = d.slt(b, old) if ptx_type.startswith(".s") else d.ult(b, old)
        return d.ite(less, b, old) if op == "min" else d.ite(less, old, b)
    if op == "and":
        return d.and_(old, b)
    if op == "or":
        return d.or_(old, b)
    if op == "xor":
        return d.xor(old, b)
    if op == "exch":
        return b
    return d.ite(d.eq(old, b), c, old)  # cas


def _atomic_add(d: Domain[V], ptx_type: str, old: V, b: V) -> V:
    half = _HALF_ADD.get(ptx_type)
    if half is not None:
        hi = _atomic_add(d, half, d.extract(old, 31, 16), d.extract(b, 31, 16))
        return d.concat(hi, _atomic_add(d, half, d.extract(old, 15, 0), d.extract(b, 15, 0)))
    ftz = ptx_type == ".f32"
    total = d.fp(FpOp("add", ptx_type, rounding=".rn", ftz=ftz), old, b)
    if ptx_type != ".f64":
        return total
    return d.ite(_is_nan64(d, old), old, d.ite(_is_nan64(d, b), b, total))


def _is_nan64(d: Domain[V], bits: V) -> V:
    exponent = d.const(0x7FF0000000000000, 64)
    mantissa = d.const(0x000FFFFFFFFFFFFF, 64)
    all_ones = d.eq(d.and_(bits, exponent), exponent)
    return d.and_(all_ones, dm.ne(d, d.and_(bits, mantissa), d.const(0, 64)))
