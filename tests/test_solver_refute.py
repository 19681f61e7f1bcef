"""`Prover.refuted`: a counterexample found by evaluating one block's threads.

A collapsed loop (OpenMP's ``collapse(2)``) divides the linear index into a
row and a column: lane ``laneid + 1`` loads the next element except where
the row wraps. With the grid's products in the terms the solver used to
spend its whole effort and answer "unknown" ("solver gave up"); `refuted`
finds the wrapping thread by evaluation. It may only ever say "does not
hold" where that is true: a refuted pair keeps its load, but a wrong
refutation of a true equality would lose a shuffle, and the checks here
pin both directions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import z3

from ptxasw.synth.solver import Prover, shift_thread

FIXTURES = Path(__file__).parent / "fixtures"

TID = z3.BitVec("%tid.x", 32)
NTID = z3.BitVec("%ntid.x", 32)
CTAID = z3.BitVec("%ctaid.x", 32)
NCTAID = z3.BitVec("%nctaid.x", 32)
BASE = z3.BitVec("param_0", 64)
NX = z3.BitVec("param_1", 32)  # the inner extent of the collapsed loop
PITCH = z3.BitVec("param_2", 32)  # the array's row length
LOAD = z3.Function("load_global_32@1", z3.BitVecSort(64), z3.BitVecSort(32))


def geometry() -> list[z3.BoolRef]:
    """What the executor states of every launch, and sizes a kernel's guard gives."""
    return [
        z3.UGE(NCTAID, 1),
        z3.ULT(CTAID, NCTAID),
        z3.UGE(NTID, 1),
        z3.ULE(NTID, 1024),
        z3.ULT(TID, NTID),
        z3.UGE(NX, 3),
        z3.ULE(NX, 4096),
        z3.UGE(PITCH, NX + 2),
        z3.ULE(PITCH, 8192),
        z3.ULT(CTAID, 1 << 16),
    ]


def collapsed(thread_offset: int = 0) -> z3.BitVecRef:
    """``u[(1 + k / nx) * pitch + 1 + k % nx]``, k the linear thread index (plus an offset)."""
    k = CTAID * NTID + TID + thread_offset
    row, column = z3.UDiv(k, NX), z3.URem(k, NX)
    index = (1 + row) * PITCH + 1 + column
    return LOAD(BASE + 4 * z3.ZeroExt(32, index))


def in_range(k_offset: int = 0) -> z3.BoolRef:
    """The loop's bound: the thread's (and its neighbour's) iteration exists."""
    k = CTAID * NTID + TID + k_offset
    return z3.ULT(k, NX * 100)


def test_a_collapsed_loop_row_wrap_is_refuted() -> None:
    """Lane + 1 loads the next column except at the end of a row: the claim
    that it always does is refuted, and fast (no solver effort spent)."""
    prover = Prover(200)
    hypotheses = [*geometry(), in_range(), in_range(1), z3.ULT(TID + 1, NTID)]
    shifted = shift_thread(collapsed(), 1)
    right_neighbour = LOAD(collapsed().arg(0) + 4)
    assert prover.refuted(hypotheses, shifted == right_neighbour)
    # The same question with one row wide enough for every thread is true (no
    # wrap when the row holds the whole grid): nothing may be refuted there.
    wide = [*hypotheses, z3.UGE(NX, z3.ZeroExt(0, NCTAID) * NTID), z3.ULE(NCTAID, 4), z3.ULE(NTID, 64)]
    assert not prover.refuted(wide, shifted == right_neighbour)


def test_an_equality_that_holds_is_never_refuted() -> None:
    """Row pitch times row plus column, the neighbour one column on: equal
    for every thread of the row; products of unknowns in every term."""
    prover = Prover(200)
    j = CTAID  # one block per row
    address = BASE + 4 * z3.ZeroExt(32, j * PITCH + TID)
    hypotheses = [*geometry(), z3.ULT(TID + 1, NTID), z3.ULT(TID + 1, PITCH)]
    claim = shift_thread(LOAD(address), 1) == LOAD(address + 4)
    assert not prover.refuted(hypotheses, claim)
    assert prover.equal(hypotheses, shift_thread(LOAD(address), 1), LOAD(address + 4))[0]


def test_refuted_agrees_with_the_solver_where_the_solver_decides() -> None:
    """With constant sizes the solver decides the collapsed claim itself:
    the two answers agree (does not hold)."""
    prover = Prover(3000)
    k = CTAID * 128 + TID
    index = (1 + z3.UDiv(k, 56)) * 58 + 1 + z3.URem(k, 56)
    value = LOAD(BASE + 4 * z3.ZeroExt(32, index))
    hypotheses = [z3.ULT(TID, 127), z3.ULT(CTAID, 64), NTID == 128]
    claim = shift_thread(value, 1) == LOAD(value.arg(0) + 4)
    assert prover.proves(hypotheses, claim) is False
    assert prover.refuted(hypotheses, claim)


def test_hypotheses_about_loaded_values() -> None:
    """A load the same in every thread (an argument block's slot, a
    descriptor's stride) takes the model's value; a thread's own load is
    unknown, so under a hypothesis on one nothing is refuted."""
    prover = Prover(200)
    base = [*geometry(), in_range(), in_range(1), z3.ULT(TID + 1, NTID)]
    claim = shift_thread(collapsed(), 1) == LOAD(collapsed().arg(0) + 4)
    uniform = z3.UGT(LOAD(BASE), 0)
    assert prover.refuted([*base, uniform], claim)
    own = z3.UGT(LOAD(BASE + 4 * z3.ZeroExt(32, TID)), 0)
    assert not prover.refuted([*base, own], claim)


def test_decide_leaves_open_what_differs_between_threads() -> None:
    """A proof splits at the lane model's conditions; one that holds in
    some threads and not in others is seen so by evaluation (no solving),
    and one the hypotheses decide is still decided."""
    prover = Prover(200)
    hypotheses = [*geometry(), in_range(), in_range(1)]
    wraps = z3.URem(CTAID * NTID + TID, NX) == NX - 1
    assert prover._splits(hypotheses, wraps)
    assert prover.decide(hypotheses, wraps) is None
    assert prover.decide(hypotheses, z3.ULT(TID, NTID)) is True


def test_unsatisfiable_hypotheses_refute_nothing() -> None:
    prover = Prover(200)
    hypotheses = [*geometry(), z3.ULT(NTID, 1)]
    claim = shift_thread(collapsed(), 1) == LOAD(collapsed().arg(0) + 4)
    assert not prover.refuted(hypotheses, claim)


@pytest.fixture(scope="module")
def openmp_report() -> dict:
    """``ptxasw analyze`` on clang's OpenMP offload (LTO) fixture."""
    from click.testing import CliRunner

    from ptxasw.cli import main

    result = CliRunner().invoke(
        main, ["analyze", "--json", "--rounding", "ptx", str(FIXTURES / "omp_offload_lto_sm80.ptx")]
    )
    assert result.exit_code == 0, result.output
    import json

    return {k["name"]: k for k in json.loads(result.output)["kernels"]}


def test_clang_collapse2_jacobi_loads_get_the_true_reason(openmp_report: dict) -> None:
    """``collapse(2)`` Jacobi: the column neighbours differ where a row
    wraps, which the report now says ("non-constant delta") instead of
    "solver gave up"; the 1-D stencil's two shuffles are still proven."""
    jacobi = next(k for name, k in openmp_report.items() if "jacobi2d" in name)
    reasons = [load["reason"] for load in jacobi["loads_detail"]]
    assert "solver gave up" not in reasons
    assert reasons.count("non-constant delta") == 3
    assert jacobi["status"] == "complete"
    stencil = next(k for name, k in openmp_report.items() if "stencil1d" in name)
    assert stencil["shuffles"] == 2


def test_a_row_of_a_2d_block_inside_a_product_is_evaluated() -> None:
    """A block's row (``%tid.y``) inside the row-pitch product: the
    plausible launch has one thread along y, so its ``%tid.y`` is 0 (it
    was taken for a size, and no launch fitted ``%tid.y < %ntid.y``)."""
    tid_y, ntid_y = z3.BitVec("%tid.y", 32), z3.BitVec("%ntid.y", 32)
    row = tid_y + CTAID * ntid_y

    def element(column: z3.BitVecRef) -> z3.BitVecRef:
        return LOAD(BASE + 4 * z3.ZeroExt(32, row * PITCH + column))

    hypotheses = [*geometry(), z3.UGE(ntid_y, 1), z3.ULE(ntid_y, 1024), z3.ULT(tid_y, ntid_y)]
    prover = Prover(200)
    # Lane + 1's element is the next one, not the one after.
    assert prover.refuted(hypotheses, shift_thread(element(TID), 1) == element(TID + 2))
    assert not prover.refuted(hypotheses, shift_thread(element(TID), 1) == element(TID + 1))


def test_elements_of_an_array_whose_address_was_loaded() -> None:
    """GCC's arrays hang off a pointer read from the argument block, which
    no hypothesis names: two elements are ``load(2120 + p)`` and
    ``load(4264 + p)``, apart whatever ``p`` is (NPB BT's ``rhs_eta``: the
    solver gave up on its collapsed loop's division)."""
    block = z3.BitVec("param_%in_ar0", 64)
    pointer = z3.Function("load_generic_64", z3.BitVecSort(64), z3.BitVecSort(64))(block + 16)
    load = z3.Function("load_generic_64@2", z3.BitVecSort(64), z3.BitVecSort(64))

    def element(row: z3.BitVecRef, column: z3.BitVecRef) -> z3.BitVecRef:
        return load(pointer + 8 * z3.ZeroExt(32, column) + 96 * z3.ZeroExt(32, row))

    k = CTAID * NTID + TID
    hypotheses = [*geometry(), in_range(), in_range(1), z3.ULT(TID + 1, NTID)]
    prover = Prover(200)
    # Lane + 1 holds the next column of the row except where a row of NX wraps.
    lane_on = shift_thread(element(z3.UDiv(k, NX), z3.URem(k, NX)), 1)
    assert prover.refuted(hypotheses, lane_on == element(z3.UDiv(k, NX), z3.URem(k, NX) + 1))
    assert not prover.refuted(hypotheses, lane_on == element(z3.UDiv(k + 1, NX), z3.URem(k + 1, NX)))
