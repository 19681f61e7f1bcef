"""Interval reasoning (`ptxasw.emulator.symbolic.intervals`): the ranges of
the rewriter's own forms, and extensions moved without changing a value.

The rewriter writes a division by a constant as ``bvudiv_i`` and a zero
extension as ``Concat(0, x)``; both must keep their ranges. Two addresses
of one array whose indices are extended two ways (``zext(j)`` beside
``sext(1 + j)``, as GCC's OpenACC code computes neighbouring rows) must
differ by a constant once normalised, and normalising must never change a
value (random terms, checked by Z3).
"""

from __future__ import annotations

import random

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw.emulator.symbolic.domain import simplify
from ptxasw.emulator.symbolic.intervals import decide, interval, normalize_extensions

TID = z3.BitVec("%tid.x", 32)
ITER = z3.BitVec("iter_L", 64)


def test_divisions_by_constants_keep_their_ranges_after_the_rewriter() -> None:
    index = TID + 32 * z3.Extract(31, 0, ITER)
    quotient = simplify(z3.UDiv(index, 10))
    remainder = simplify(z3.URem(index, 10))
    assert quotient.decl().kind() == z3.Z3_OP_BUDIV_I  # the rewriter's form
    assert interval(quotient) == (0, (2**32 - 1) // 10)
    assert interval(remainder) == (0, 9)
    widened = simplify(z3.ZeroExt(32, remainder))
    assert widened.decl().kind() == z3.Z3_OP_CONCAT
    assert interval(widened) == (0, 9)
    assert decide(z3.ULT(widened, 10)) is True


def test_slices_of_small_values_keep_their_ranges() -> None:
    """The rewriter writes ``%tid.x >= 2000`` as a test of the high bits and
    of the low slice; both slices of ``%tid.x <= 1023`` have known ranges, so
    the comparison is decided (a store guarded by it never runs)."""
    beyond = simplify(z3.UGE(TID, 2000))
    assert "Extract" in str(beyond)
    assert decide(beyond) is False
    assert interval(z3.Extract(9, 2, TID)) == (0, 255)
    assert interval(z3.Extract(31, 11, TID)) == (0, 0)
    wide = z3.BitVec("w", 32)  # no range: a slice of it is anything
    assert interval(z3.Extract(15, 4, wide)) == (0, 2**12 - 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**16 - 1), st.integers(0, 2**16 - 1), st.integers(0, 15), st.integers(0, 15))
def test_slice_ranges_hold_for_every_value(a: int, b: int, i: int, j: int) -> None:
    lo, hi = min(a, b), max(a, b)
    low, high = min(i, j), max(i, j)
    x = z3.BitVec("x", 16)
    memo = {x.get_id(): (lo, hi)}
    rlo, rhi = interval(z3.Extract(high, low, x), memo)
    for v in {lo, hi, (lo + hi) // 2}:
        sliced = (v >> low) & ((1 << (high - low + 1)) - 1)
        assert rlo <= sliced <= rhi


def test_indices_extended_two_ways_differ_by_a_constant() -> None:
    """``u[j][k]`` against ``u[j+1][k+1]`` with ``j, k = i / 10, i % 10``."""
    index = TID + 32 * z3.Extract(31, 0, ITER)
    j, k = z3.UDiv(index, 10), z3.URem(index, 10)
    here = 5760 * z3.ZeroExt(32, j) + 40 * z3.ZeroExt(32, k)
    there = 5760 * z3.SignExt(32, 1 + j) + 40 * z3.SignExt(32, 1 + k)
    diff = simplify(here - there)
    assert not z3.is_bv_value(diff)
    normal = simplify(normalize_extensions(diff))
    assert z3.is_bv_value(normal) and normal.as_long() == 2**64 - 5800


def test_a_sign_extension_that_may_be_negative_stays() -> None:
    x = z3.BitVec("x", 32)
    e = z3.SignExt(32, x + 1)
    assert normalize_extensions(e).eq(e)


def _random_term(rng: random.Random) -> z3.BitVecRef:
    """A term of 8-bit symbols and constants, divided, added and scaled,
    extended to 16 and then 24 bits and combined again."""
    leaves8 = [z3.BitVec("a", 8), z3.BitVec("b", 8)]

    def narrow(depth: int) -> z3.BitVecRef:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(leaves8) if rng.random() < 0.8 else z3.BitVecVal(rng.randrange(256), 8)
        op = rng.choice(["add", "mul", "udiv", "urem"])
        a = narrow(depth - 1)
        if op == "add":
            return a + narrow(depth - 1)
        c = z3.BitVecVal(rng.randrange(1, 40), 8)
        return {"mul": a * c, "udiv": z3.UDiv(a, c), "urem": z3.URem(a, c)}[op]

    def wide(width: int, depth: int) -> z3.BitVecRef:
        inner = narrow(3) if width == 16 else wide(16, depth)
        grown = (
            z3.ZeroExt(width - inner.size(), inner)
            if rng.random() < 0.5
            else z3.SignExt(width - inner.size(), inner)
        )
        if depth and rng.random() < 0.6:
            other = wide(width, depth - 1)
            return grown * rng.randrange(1, 300) + other if rng.random() < 0.5 else grown - other
        return grown

    return wide(24, 2)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_normalising_never_changes_a_value(seed: int) -> None:
    term = _random_term(random.Random(seed))
    for form in (term, simplify(term)):
        normal = normalize_extensions(form)
        solver = z3.Solver()
        solver.add(normal != form)
        assert solver.check() == z3.unsat, (form, normal)
