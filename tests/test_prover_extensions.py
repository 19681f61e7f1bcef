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

from ptxasw.synth.solver import Prover, exact_extensions

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
