"""Unsigned interval reasoning over Z3 bit-vector terms: the solver's cheap
first pass.

Most branch conditions of GPU kernels compare an index built from special
registers and constants (``%tid.x < 2000``, ``%laneid + 1 != 0``) whose
truth follows from the ISA ranges alone (``%tid.x < %ntid.x <= 1024``). An
interval per subterm decides them without bit-blasting anything: a sound
over-approximation of each term's unsigned range, computed bottom-up, and a
comparison decided when the ranges do not overlap. Anything not understood
is the full range, so an answer is only given when it is certain.

`normalize_extensions` uses the same intervals to write extended indices
alike, so that differences of addresses into one array fold to constants.
"""

from __future__ import annotations

import z3

from ptxasw.emulator.symbolic import raw

__all__ = ["SPECIAL_BOUNDS", "decide", "extension", "interval", "normalize_extensions"]

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
# The rewriter turns divisions by a non-zero constant into their ``_i`` forms.
_UDIV = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I)
_UREM = (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I)


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
        high, low = e.params()
        lo, hi = interval(args[0], memo)
        if hi >> (high + 1) == 0:
            # No bit above the slice is ever set: the slice is ``x >> low``,
            # which keeps the order (``Extract(31, 11, %tid.x)`` is 0, as the
            # rewriter writes ``%tid.x < 2048``).
            return lo >> low, hi >> low
        return full
    if kind == z3.Z3_OP_CONCAT and len(args) == 2 and _is_zero(args[0]):
        return interval(args[1], memo)  # a zero extension, as the rewriter writes it
    if kind in _UDIV and z3.is_bv_value(args[1]) and args[1].as_long() > 0:
        lo, hi = interval(args[0], memo)
        d = args[1].as_long()
        return lo // d, hi // d
    if kind in _UREM and z3.is_bv_value(args[1]) and args[1].as_long() > 0:
        return 0, min(interval(args[0], memo)[1], args[1].as_long() - 1)
    if kind == z3.Z3_OP_BAND:
        return 0, min(interval(a, memo)[1] for a in args)
    if kind == z3.Z3_OP_BLSHR and z3.is_bv_value(args[1]):
        lo, hi = interval(args[0], memo)
        s = args[1].as_long()
        return lo >> s, hi >> s
    return full


def decide(
    cond: z3.BoolRef,
    memo: dict[int, tuple[int, int]] | None = None,
    decisions: dict[int, tuple[z3.BoolRef, bool | None]] | None = None,
) -> bool | None:
    """True or False when the intervals of ``cond``'s operands settle it for
    every value of its symbols; None when they do not.

    ``decisions``: answers by formula id, shared between calls, each kept
    with a formula that holds it alive (the guards of if-converted code are
    And/Or trees that share most of their subformulas from one access to
    the next). The Boolean structure is walked on the raw AST (`raw`); only
    the comparisons at its leaves are wrapped for `interval`."""
    memo = {} if memo is None else memo
    decisions = {} if decisions is None else decisions
    ctx = cond.ctx.ref()

    def walk(ast: object) -> bool | None:
        key = raw.ast_id(ctx, ast)
        hit = decisions.get(key)
        if hit is not None:
            return hit[1]
        kind = raw.operator(ctx, ast)
        result: bool | None
        if kind == z3.Z3_OP_NOT:
            inner = walk(raw.app_arg(ctx, ast, 0))
            result = None if inner is None else not inner
        elif kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            parts = [walk(arg) for arg in raw.args(ctx, ast)]
            if kind == z3.Z3_OP_AND:
                result = False if False in parts else (True if all(p is True for p in parts) else None)
            else:
                result = True if True in parts else (False if all(p is False for p in parts) else None)
        else:
            result = _decide_comparison(z3.z3._to_expr_ref(ast, cond.ctx), memo)
        decisions[key] = (cond, result)
        return result

    return walk(cond.as_ast())


def _decide_comparison(cond: z3.BoolRef, memo: dict[int, tuple[int, int]]) -> bool | None:
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


def normalize_extensions(e: z3.ExprRef, memo: dict[int, tuple[int, int]] | None = None) -> z3.ExprRef:
    """``e`` with its extensions moved where the intervals allow, equal to
    ``e`` for every value of its symbols.

    Why: an address is a sum of extended indices, and two addresses of one
    array extend them differently (GCC's OpenACC code computes ``a[j+1]``
    with ``sext(1 + j)`` beside ``zext(j)`` for ``a[j]``). Their difference
    is then no constant term, and deciding that the ranges are apart
    bit-blasts the divisions inside the indices (40-230 ms a question in
    npb_bt's solve routines). With the intervals, a sign extension of a
    value below the sign bit is a zero extension, and a zero extension of a
    sum, or of a product by a constant, that cannot wrap is the sum or
    product of the extensions; the difference then simplifies to a constant.
    """
    memo = {} if memo is None else memo
    done: dict[int, z3.ExprRef] = {}

    def walk(t: z3.ExprRef) -> z3.ExprRef:
        key = t.get_id()
        hit = done.get(key)
        if hit is None:
            hit = done[key] = rewrite(t)
        return hit

    def rewrite(t: z3.ExprRef) -> z3.ExprRef:
        if not z3.is_app(t) or t.num_args() == 0:
            return t
        extended = extension(t)
        if extended is not None:
            inner, signed = extended
            added = t.size() - inner.size()
            if signed and interval(inner, memo)[1] >= 1 << (inner.size() - 1):
                return z3.SignExt(added, walk(inner))
            return widen(walk(inner), added)
        kind = t.decl().kind()
        if not z3.is_bv(t) or kind not in (z3.Z3_OP_BADD, z3.Z3_OP_BMUL):
            return t
        args = [walk(a) for a in t.children()]
        if all(a.eq(b) for a, b in zip(args, t.children(), strict=True)):
            return t
        return z3.Sum(args) if kind == z3.Z3_OP_BADD else z3.Product(args)

    def widen(t: z3.ExprRef, added: int) -> z3.ExprRef:
        """``ZeroExt(added, t)``, distributed over sums and over products by
        a constant that cannot wrap at ``t``'s width."""
        top = (1 << t.size()) - 1
        if z3.is_bv_value(t):
            return z3.BitVecVal(t.as_long(), t.size() + added)
        kind = t.decl().kind() if z3.is_app(t) else None
        args = t.children() if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BMUL) else []
        if kind == z3.Z3_OP_BADD and sum(interval(a, memo)[1] for a in args) <= top:
            return z3.Sum([widen(a, added) for a in args])
        scaled = kind == z3.Z3_OP_BMUL and len(args) == 2 and z3.is_bv_value(args[0])
        if scaled and args[0].as_long() * interval(args[1], memo)[1] <= top:
            return widen(args[0], added) * widen(args[1], added)
        return z3.ZeroExt(added, t)

    return walk(e)


def extension(e: z3.ExprRef) -> tuple[z3.ExprRef, bool] | None:
    """The operand of ``e`` where ``e`` extends it, and whether by its sign;
    Z3's rewriter writes a zero extension as a concatenation under zeros."""
    if not z3.is_app(e):
        return None
    kind = e.decl().kind()
    if kind in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT) and e.num_args() == 1:
        return e.arg(0), kind == z3.Z3_OP_SIGN_EXT
    if kind == z3.Z3_OP_CONCAT and e.num_args() == 2 and _is_zero(e.arg(0)):
        return e.arg(1), False
    return None


def _is_zero(e: z3.ExprRef) -> bool:
    return z3.is_bv_value(e) and e.as_long() == 0
