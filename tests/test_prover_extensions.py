"""Extended indices that the prover must see through, with the assumption each needs.

A 2-D stencil's row ``j + r`` is computed in 32 bits from ``%ctaid.y`` and
extended before the pitch multiplies it; clang zero-extends an index it
knows is not negative (``4 * i - 2`` under ``i >= 1``), which PTX writes with
the constant ``0xfffffffe``. `ptxasw.synth.solver.Prover.equal` answers these
without the solver: the first exactly (``%ctaid.y`` < 65535, so ``1 +
%ctaid.y`` cannot wrap), the second under the stated no-wrap assumption.
"""

from __future__ import annotations

import z3

from ptxasw.synth.solver import Prover, _rejoined, exact_extensions

TID = z3.BitVec("%tid.x", 32)
CTAID_Y = z3.BitVec("%ctaid.y", 32)
PITCH = z3.BitVec("param_3", 32)
N = z3.BitVec("param_2", 32)


def _wide(e: z3.ExprRef) -> z3.ExprRef:
    return z3.SignExt(32, e)


def test_a_row_number_extended_before_the_pitch_multiplies_it_is_the_row_plus_one() -> None:
    """``sext(1 + %ctaid.y) * pitch == sext(%ctaid.y) * pitch + pitch`` for
    every value: no assumption, no solver."""
    below = _wide(1 + CTAID_Y) * _wide(PITCH)
    row = _wide(CTAID_Y) * _wide(PITCH) + _wide(PITCH)
    assert Prover(200).equal([], below, row) == (True, False)
    (moved, _), changed = exact_extensions([below, row])
    assert changed and not z3.eq(moved, below)


def test_an_unbounded_value_extended_is_not_moved() -> None:
    """``1 + n`` for a parameter ``n`` may wrap (n = 2^31 - 1): the sums differ there."""
    below = _wide(1 + N) * _wide(PITCH)
    row = _wide(N) * _wide(PITCH) + _wide(PITCH)
    assert exact_extensions([below, row])[1] is False
    assert Prover(200).equal([], below, row)[0] is not True


def test_a_zero_extended_index_with_a_negative_constant_needs_only_no_wrap() -> None:
    """clang's ``zext(4 * tid - 2)`` (the rewriter's ``Concat(0, ...)``,
    ``-2`` as ``0xfffffffe``) is ``4 * sext(tid) - 2`` where the index does
    not wrap: the assumption is reported, and the answer is true."""
    index = z3.simplify(z3.ZeroExt(32, 4 * TID + z3.BitVecVal(0xFFFFFFFE, 32)))
    assert z3.is_app_of(index, z3.Z3_OP_CONCAT)
    assert Prover(200).equal([], index, 4 * _wide(TID) - 2) == (True, True)


def test_a_zero_extension_is_not_a_sign_extension_without_the_assumption() -> None:
    """Without the assumption the two differ (``tid = 0``): the answer then
    needs it, it is never true outright."""
    index = z3.ZeroExt(32, 4 * TID + z3.BitVecVal(0xFFFFFFFE, 32))
    holds, needs_no_wrap = Prover(200).equal([], index, 4 * _wide(TID) - 2)
    assert holds is True and needs_no_wrap
    assert Prover(200).proves([], index == 4 * _wide(TID) - 2) is False


ITER = z3.BitVec("iter_$L__BB1_5", 64)
NTID = z3.BitVec("%ntid.x", 32)
NCTAID = z3.BitVec("%nctaid.x", 32)
OUTER = z3.BitVec("iter_$L__BB1_3", 64)


def test_an_openmp_loop_index_sign_extended_by_shifts_is_the_64_bit_index_without_wrap() -> None:
    """clang's OpenMP loop (the device runtime inlined at link time) walks
    ``x[i]`` with ``(i << 32) >> 30`` stepped by ``ntid << 32``, and ``x[i -
    1]`` with a 64-bit pointer stepped by ``4 * ntid``: the domain reads the
    shifts as ``4 * sext(i)`` (32-bit ``i``, the counts truncated), and the
    prover widens that sum, counts included, and the grid's stride ``128 *
    nctaid``, under the no-wrap assumption. Without it the two differ (a
    count of 2^31)."""
    from ptxasw.emulator.symbolic.domain import SymbolicDomain

    dom = SymbolicDomain()
    start = 1 + TID + 128 * z3.BitVec("%ctaid.x", 32)
    unit = z3.BitVecVal(1 << 32, 64)
    # (zext(start) << 32) + ITER * (zext(ntid) << 32) + OUTER * (zext(128 * nctaid) << 32), then >> 30.
    shifted = dom.add(
        dom.add(dom.shl(z3.ZeroExt(32, start), z3.BitVecVal(32, 64)), ITER * (z3.ZeroExt(32, NTID) * unit)),
        OUTER * (z3.ZeroExt(32, 128 * NCTAID) * unit),
    )
    index = dom.ashr(shifted, z3.BitVecVal(30, 64))
    assert z3.is_app_of(index, z3.Z3_OP_BMUL) and not z3.is_app_of(index, z3.Z3_OP_BASHR)
    # The rule is exact (on a sum whose products the solver need not bit-blast).
    high = z3.BitVec("k", 64)
    simple = dom.add(dom.shl(z3.ZeroExt(32, start), z3.BitVecVal(32, 64)), high * unit)
    for amount in (32, 30, 29, 3):
        rewritten = dom.ashr(simple, z3.BitVecVal(amount, 64))
        assert not z3.is_app_of(rewritten, z3.Z3_OP_BASHR) and _valid(rewritten == simple >> amount)
    pointer = 4 * ITER * z3.ZeroExt(32, NTID) + 4 * OUTER * z3.ZeroExt(32, 128 * NCTAID)
    pointer = pointer + 4 * z3.ZeroExt(32, start)
    holds, needs_no_wrap = Prover(500).equal([], index, pointer)
    assert holds is True and needs_no_wrap
    # Without the assumption they differ: a count of 2^31 wraps the 32-bit
    # index. Shown at that point (whether the solver finds one within its
    # effort depends on what the process asked it before), and never claimed.
    wrapping = [(ITER, z3.BitVecVal(1 << 31, 64)), (OUTER, z3.BitVecVal(0, 64)), (NTID, z3.BitVecVal(1, 32))]
    wrapping += [(TID, z3.BitVecVal(0, 32)), (z3.BitVec("%ctaid.x", 32), z3.BitVecVal(0, 32))]
    assert z3.is_false(z3.simplify(z3.substitute(index == pointer, *wrapping)))
    assert Prover(500).proves([], index == pointer) is not True


def _valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.set("timeout", 20_000)
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def test_a_value_put_back_together_from_its_halves_is_the_value() -> None:
    """``Concat(Extract(63, 32, 2*s), 2*Extract(31, 0, s))`` is ``2*s`` (the
    executor writes a loop step's 64-bit products so), and two sides that
    differ only by that are equal as terms, without the solver (gfortran's
    lap3d: the solver's answer there depended on Z3's operand order)."""
    s, t = z3.BitVec("stride", 64), z3.BitVec("t", 64)
    halves = z3.Concat(z3.Extract(63, 32, 2 * s), 2 * z3.Extract(31, 0, s))
    assert _rejoined(halves).eq(2 * s)
    assert _rejoined(t + 4 * halves).eq(t + 4 * (2 * s))
    other = z3.Concat(z3.Extract(63, 32, 2 * s), 3 * z3.Extract(31, 0, s))
    assert _rejoined(other).eq(other)
    prover = Prover(50)
    assert prover.equal([], t + 4 * halves - 4 * s, t + 4 * s) == (True, False)
    assert prover.calls == 0
