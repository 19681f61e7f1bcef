"""Unsigned interval reasoning over Z3 bit-vector terms: the solver's cheap
first pass.

Most branch conditions of GPU kernels compare an index built from special
registers and constants (``%tid.x < 2000``, ``%laneid + 1 != 0``) whose
truth follows from the ISA ranges alone (``%tid.x < %ntid.x <= 1024``). An
interval per subterm decides them without bit-blasting anything: a sound
over-approximation of each term's unsigned range, computed bottom-up, and a
comparison decided when the ranges do not overlap. Anything not understood
is the full range, so an answer is only given when it is certain.
"""

from __future__ import annotations

import z3

__all__ = ["SPECIAL_BOUNDS", "decide", "interval"]

# Inclusive upper bounds of special registers (their ISA ranges) and of the
# executor's iteration counters.
SPECIAL_BOUNDS: dict[str, int] = {
    "%tid.x": 1023,
    "%tid.y": 1023,
    "%tid.z": 63,
    "%ntid.x": 1024,
    "%ntid.y": 1024,
    "%ntid.z": 64,
    "%ctaid.x": 0x7FFFFFFE,
    "%ctaid.y": 0xFFFE,
    "%ctaid.z": 0xFFFE,
    "%nctaid.x": 0x7FFFFFFF,
    "%nctaid.y": 0xFFFF,
    "%nctaid.z": 0xFFFF,
    "%laneid": 31,
}
_LOWER: dict[str, int] = {f"%{n}.{d}": 1 for n in ("ntid", "nctaid") for d in "xyz"}
_ITER_BOUND = (1 << 62) - 1


def interval(e: z3.ExprRef, memo: dict[int, tuple[int, int]] | None = None) -> tuple[int, int]:
    """An over-approximation ``(lo, hi)`` of the unsigned values of ``e``."""
    memo = {} if memo is None else memo
    key = e.get_id()
    hit = memo.get(key)
    if hit is not None:
        return hit
    out = _interval(e, memo)
    memo[key] = out
    return out


def _interval(e: z3.ExprRef, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    width = e.size()
    top = (1 << width) - 1
    full = (0, top)
    if z3.is_bv_value(e):
        v = e.as_long()
        return v, v
    if z3.is_const(e):
        name = e.decl().name()
        if name in SPECIAL_BOUNDS:
            return _LOWER.get(name, 0), min(top, SPECIAL_BOUNDS[name])
        if name.startswith("iter_"):
            return 0, min(top, _ITER_BOUND)
        return full
    kind = e.decl().kind()
    args = e.children()
    if kind == z3.Z3_OP_BADD:
        lo = hi = 0
        for a in args:
            alo, ahi = interval(a, memo)
            lo, hi = lo + alo, hi + ahi
        return (lo, hi) if hi <= top else full
    if kind == z3.Z3_OP_BMUL:
        lo = hi = 1
        for a in args:
            alo, ahi = interval(a, memo)
            lo, hi = lo * alo, hi * ahi
        return (lo, hi) if hi <= top else full
    if kind == z3.Z3_OP_ZERO_EXT:
        return interval(args[0], memo)
    if kind == z3.Z3_OP_SIGN_EXT:
        lo, hi = interval(args[0], memo)
        sign = 1 << (args[0].size() - 1)
        return (lo, hi) if hi < sign else full
    if kind == z3.Z3_OP_EXTRACT:
        _high, low = e.params()
        lo, hi = interval(args[0], memo)
        if low == 0 and hi <= top:
            return lo, hi
        return full
    if kind == z3.Z3_OP_BUDIV and z3.is_bv_value(args[1]) and args[1].as_long() > 0:
        lo, hi = interval(args[0], memo)
        d = args[1].as_long()
        return lo // d, hi // d
    if kind == z3.Z3_OP_BUREM and z3.is_bv_value(args[1]) and args[1].as_long() > 0:
        return 0, min(interval(args[0], memo)[1], args[1].as_long() - 1)
    if kind == z3.Z3_OP_BAND:
        return 0, min(interval(a, memo)[1] for a in args)
    if kind == z3.Z3_OP_BLSHR and z3.is_bv_value(args[1]):
        lo, hi = interval(args[0], memo)
        s = args[1].as_long()
        return lo >> s, hi >> s
    return full


def decide(cond: z3.BoolRef, memo: dict[int, tuple[int, int]] | None = None) -> bool | None:
    """True or False when the intervals of ``cond``'s operands settle it for
    every value of its symbols; None when they do not."""
    memo = {} if memo is None else memo
    if z3.is_not(cond):
        inner = decide(cond.arg(0), memo)
        return None if inner is None else not inner
    if z3.is_and(cond) or z3.is_or(cond):
        parts = [decide(c, memo) for c in cond.children()]
        if z3.is_and(cond):
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    if not z3.is_app(cond) or cond.num_args() != 2:
        return None
    a, b = cond.children()
    if not z3.is_bv(a):
        return None
    kind = cond.decl().kind()
    (alo, ahi), (blo, bhi) = interval(a, memo), interval(b, memo)
    if kind in (z3.Z3_OP_SLEQ, z3.Z3_OP_SLT, z3.Z3_OP_SGEQ, z3.Z3_OP_SGT):
        sign = 1 << (a.size() - 1)
        if ahi >= sign or bhi >= sign:
            return None  # signed order equals unsigned order only for non-negative values
        kind = {
            z3.Z3_OP_SLEQ: z3.Z3_OP_ULEQ,
            z3.Z3_OP_SLT: z3.Z3_OP_ULT,
            z3.Z3_OP_SGEQ: z3.Z3_OP_UGEQ,
            z3.Z3_OP_SGT: z3.Z3_OP_UGT,
        }[kind]
    if kind == z3.Z3_OP_ULEQ:
        return True if ahi <= blo else (False if alo > bhi else None)
    if kind == z3.Z3_OP_ULT:
        return True if ahi < blo else (False if alo >= bhi else None)
    if kind == z3.Z3_OP_UGEQ:
        return True if alo >= bhi else (False if ahi < blo else None)
    if kind == z3.Z3_OP_UGT:
        return True if alo > bhi else (False if ahi <= blo else None)
    if kind == z3.Z3_OP_EQ:
        if ahi < blo or bhi < alo:
            return False
        return True if alo == ahi == blo == bhi else None
    if kind == z3.Z3_OP_DISTINCT:
        if ahi < blo or bhi < alo:
            return True
        return False if alo == ahi == blo == bhi else None
    return None
