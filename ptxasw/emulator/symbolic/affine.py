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
"""

from __future__ import annotations

import z3

__all__ = ["congruence", "disjoint_by_stride"]


def _twos(k: int, width: int) -> int:
    """The exponent of the largest power of two dividing ``k`` modulo ``2^width``."""
    k %= 1 << width
    if k == 0:
        return width
    return (k & -k).bit_length() - 1


def congruence(d: z3.BitVecRef) -> tuple[int, int]:
    """``(c0, e)`` with ``d ≡ c0 (mod 2^e)`` for every value of its symbols."""
    width = d.size()
    terms = d.children() if z3.is_app_of(d, z3.Z3_OP_BADD) else [d]
    c0 = 0
    e = width
    for t in terms:
        if z3.is_bv_value(t):
            c0 += t.as_long()
            continue
        if z3.is_app_of(t, z3.Z3_OP_BMUL):
            k = 1
            for f in t.children():
                if z3.is_bv_value(f):
                    k *= f.as_long()
            e = min(e, _twos(k, width))
            continue
        if z3.is_app_of(t, z3.Z3_OP_CONCAT):
            # ``concat(hi, low)`` with a constant ``low`` of ``n`` bits is
            # ``hi * 2^n + low``: low bits fixed, the rest a multiple of 2^n.
            low = t.children()[-1]
            if z3.is_bv_value(low):
                c0 += low.as_long()
                e = min(e, low.size())
                continue
        e = 0  # any value
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
