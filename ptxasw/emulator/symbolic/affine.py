"""Affine normal form of address differences: disjointness without a solver.

Two accesses ``[a, a+na)`` and ``[b, b+nb)`` overlap exactly when
``d = a - b`` (modulo ``2^w``) lies in ``(-na, nb)``. Z3's simplifier puts
``d`` in a sum-of-products form ``c0 + k1*t1 + ... + kn*tn`` (the ``ti``
anything: symbols, loads, sign extensions, products). Every term ``ki*ti``
is a multiple of the largest power of two dividing ``ki``, and powers of
two divide ``2^w``, so ``d ≡ c0`` modulo ``g``, the smallest of them,
whatever the ``ti`` are. When no value of ``(-na, nb)`` is ``≡ c0 (mod g)``
the accesses never overlap: ``8*i + 4`` and ``8*j`` with 4-byte accesses,
the next element of an array of structures, a store ``8*iter`` bytes
below a stack slot at an odd multiple of 4.

When a few values of the window are congruent, `overlap_condition` states
the same question without the window: ``d = c0 + 2^e*X`` meets ``v`` exactly
when the low ``w - e`` bits of ``X`` are ``(v - c0) / 2^e``. Z3 bit-blasts
``40*i - 40*j + 7 <u 15`` into carry chains it may not refute in a second,
while ``extract(60, 0, 5*i - 5*j) == 0`` is a few propagations: the same
set of models, a far cheaper proof.
"""

from __future__ import annotations

import z3

from ptxasw.emulator.symbolic import raw

__all__ = ["congruence", "disjoint_by_stride", "equal_condition", "overlap_condition"]


def _twos(k: int, width: int) -> int:
    """The exponent of the largest power of two dividing ``k`` modulo ``2^width``."""
    k %= 1 << width
    if k == 0:
        return width
    return (k & -k).bit_length() - 1


def congruence(d: z3.BitVecRef) -> tuple[int, int]:
    """``(c0, e)`` with ``d ≡ c0 (mod 2^e)`` for every value of its symbols.

    Read off the raw AST (`raw`): the executor asks it for every store
    against every earlier access, and building a Python object per subterm
    cost more than the arithmetic."""
    ctx = d.ctx.ref()
    width = d.size()
    ast = d.as_ast()
    terms = raw.args(ctx, ast) if raw.operator(ctx, ast) == z3.Z3_OP_BADD else [ast]
    c0 = 0
    e = width
    for t in terms:
        value = raw.numeral(ctx, t)
        if value is not None:
            c0 += value
            continue
        kind = raw.operator(ctx, t)
        if kind == z3.Z3_OP_BMUL:
            k = 1
            for f in raw.args(ctx, t):
                factor = raw.numeral(ctx, f)
                if factor is not None:
                    k *= factor
            e = min(e, _twos(k, width))
            continue
        if kind == z3.Z3_OP_CONCAT:
            # ``concat(hi, low)`` with a constant ``low`` of ``n`` bits is
            # ``hi * 2^n + low``: low bits fixed, the rest a multiple of 2^n.
            low = raw.args(ctx, t)[-1]
            value = raw.numeral(ctx, low)
            if value is not None:
                c0 += value
                e = min(e, int(raw.bv_size(ctx, raw.sort(ctx, low))))
                continue
        return 0, 0  # any value
    return c0 % (1 << width), e


def disjoint_by_stride(d: z3.BitVecRef, na: int, nb: int) -> bool:
    """Whether ``d = a - b`` provably keeps ``[a, a+na)`` and ``[b, b+nb)``
    apart: no value of ``(-na, nb)`` is congruent to ``d``'s constant part."""
    c0, e = congruence(d)
    if e == 0:
        return False
    g = 1 << e
    lo = -(na - 1)
    first = lo + (c0 - lo) % g  # the smallest value >= lo congruent to c0
    return first > nb - 1


# At most this many congruent window values become equalities; more stay one comparison.
_MAX_EQUALITIES = 4


def _scaled_sum(d: z3.BitVecRef, e: int) -> tuple[int, z3.BitVecRef] | None:
    """``(c0, X)`` with ``d = c0 + 2^e * X`` (modulo ``2^w``) when every
    non-constant term of ``d`` is a constant multiple of ``2^e`` times a
    term; None for other shapes (a ``concat`` with constant low bits)."""
    width = d.size()
    terms = d.children() if z3.is_app_of(d, z3.Z3_OP_BADD) else [d]
    c0 = 0
    parts: list[z3.BitVecRef] = []
    for t in terms:
        if z3.is_bv_value(t):
            c0 += t.as_long()
            continue
        if not z3.is_app_of(t, z3.Z3_OP_BMUL):
            return None
        k = 1
        rest: list[z3.BitVecRef] = []
        for f in t.children():
            if z3.is_bv_value(f):
                k *= f.as_long()
            else:
                rest.append(f)
        k %= 1 << width
        if _twos(k, width) < e or not rest:
            return None
        product = rest[0]
        for f in rest[1:]:
            product = product * f
        parts.append(product if k >> e == 1 else z3.BitVecVal(k >> e, width) * product)
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return c0 % (1 << width), total


def _reduced(d: z3.BitVecRef, na: int, nb: int) -> z3.BoolRef | None:
    """The overlap of `overlap_condition` as equations on the scaled
    difference, or None when ``d`` does not reduce."""
    width = d.size()
    c0, e = congruence(d)
    if e == 0 or e >= width:
        return None
    g = 1 << e
    lo = -(na - 1)
    first = lo + (c0 - lo) % g
    values = list(range(first, nb, g))
    if not values:
        return z3.BoolVal(False)
    if len(values) > _MAX_EQUALITIES:
        return None
    split = _scaled_sum(d, e)
    if split is None:
        return None
    c0, x = split
    low = z3.Extract(width - e - 1, 0, x)
    mask = (1 << (width - e)) - 1
    eqs = [low == ((((v - c0) % (1 << width)) >> e) & mask) for v in values]
    return eqs[0] if len(eqs) == 1 else z3.Or(*eqs)


def overlap_condition(d: z3.BitVecRef, na: int, nb: int) -> z3.BoolRef:
    """A formula equivalent to "``[a, a+na)`` and ``[b, b+nb)`` overlap",
    with ``d = a - b`` simplified: ``d mod 2^w`` in ``(-na, nb)``.

    When ``d ≡ c0 (mod 2^e)`` (`congruence`) and at most a few values of the
    window share that residue, it is the disjunction of ``d == v`` over
    them, each written as an equation on the low ``w - e`` bits of ``X``
    (``d = c0 + 2^e*X``): no multiplication by ``2^e``, no comparison.
    Otherwise (or for shapes `_scaled_sum` does not take) the one unsigned
    comparison ``d + (na-1) <u na + nb - 1``.
    """
    reduced = _reduced(d, na, nb)
    return z3.ULT(d + (na - 1), na + nb - 1) if reduced is None else reduced


def equal_condition(d: z3.BitVecRef) -> z3.BoolRef:
    """A formula equivalent to ``d == 0`` (two addresses equal), by the same
    reduction as `overlap_condition`."""
    reduced = _reduced(d, 1, 1)
    return d == 0 if reduced is None else reduced
