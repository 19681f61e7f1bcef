"""Local search answers the questions that 64-bit products make hard.

A grid-stride loop puts ``rank * size`` (a 64-bit product of two unknowns)
into the path condition, and Z3's incremental core then ended most later
questions undecided after its whole effort (grid_sync_sum: 6 undecided of
49 solver calls, 1.1-1.7 s). Now the typical-size tries of such questions
are asked with their values folded in, and `local_search.local_model`
looks for a model where they found none; the analyses are the same, with
fewer questions left undecided.
"""

from __future__ import annotations

import pytest
import z3

from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import Budget, analyze_kernel
from ptxasw.emulator.symbolic.local_search import local_model
from ptxasw.parser import parse_file


def _grid_rank_zero() -> tuple[list[z3.BoolRef], dict[str, z3.BitVecRef]]:
    """The context of ``if (grid.thread_rank() == 0)`` after a grid-stride
    loop, as nvcc writes it: 64-bit products of the launch's unknowns."""
    names = "%tid.x %ntid.x %ctaid.x %nctaid.x n"
    tid, ntid, ctaid, nctaid, n = z3.BitVecs(names, 32)
    wide = lambda v: z3.ZeroExt(32, v)  # noqa: E731
    rank = wide(ntid) * wide(ctaid) + wide(tid)
    size = wide(ntid) * wide(nctaid)
    context = [
        z3.UGE(ntid, 1),
        z3.ULE(ntid, 1024),
        z3.ULT(tid, ntid),
        z3.UGE(nctaid, 1),
        z3.ULE(nctaid, 2**31 - 1),
        z3.ULT(ctaid, nctaid),
        z3.ULE(wide(n), rank + size),  # the loop ran out
        rank == 0,
    ]
    return context, {"tid": tid, "ntid": ntid, "ctaid": ctaid, "nctaid": nctaid, "n": n}


def test_a_model_is_found_under_64_bit_products_and_checked() -> None:
    context, v = _grid_rank_zero()
    query = [z3.UGE(v["nctaid"], 4), z3.UGE(v["ntid"], 64)]
    model = local_model([*context, *query])
    assert model is not None
    for f in [*context, *query]:
        assert z3.is_true(model.eval(f, model_completion=True))


def test_no_model_for_an_unsat_query_and_nothing_printed(capfd: pytest.CaptureFixture[str]) -> None:
    """Local search cannot prove unsat: it answers None, and the statistics
    Z3's search prints to the process's standard error never show."""
    context, v = _grid_rank_zero()
    assert local_model([*context, v["tid"] == 5]) is None  # rank 0 has tid 0
    assert local_model([*context, v["nctaid"] == 4]) is not None
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_flat_block_keeps_the_typical_block_within_the_isa_limit() -> None:
    """The 64-try of a folded question fixes a 32x32x1 block, not 32x32x32
    (32,768 threads, which refutes every question about the three)."""
    solver = executor._Solver(200, executor.Stats(), 1e18, 10.0)
    x, y, z = (z3.BitVec(f"%ntid.{d}", 32) for d in "xyz")
    product = [x * y * z]

    def fixed(fixes: list[z3.BoolRef]) -> dict[str, int]:
        return {f.arg(0).decl().name(): f.arg(1).as_long() for f in fixes}

    assert fixed(solver._typical_sizes(product, 64)) == {"%ntid.x": 32, "%ntid.y": 32, "%ntid.z": 32}
    flat = fixed(solver._typical_sizes(product, 64, flat_block=True))
    assert flat == {"%ntid.x": 32, "%ntid.y": 32, "%ntid.z": 1}


def _corpus_kernel(corpus, source: str, kernel: str):  # type: ignore[no-untyped-def]
    files = [f for f in corpus if f.source_path.name == source and "-G" not in f.flags]
    if not files:
        pytest.skip(f"{source} is not in this corpus")
    module = parse_file(files[0].ptx_path)
    (name,) = [k.name for k in module.kernels if kernel in k.name]
    return module, name


def _shape(result: executor.KernelAnalysis) -> tuple:  # type: ignore[type-arg]
    return (result.status, len(result.flows), result.counts())


def test_grid_sync_sum_leaves_no_question_undecided(corpus, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """cooperative_groups' grid sync after a grid-stride loop: every solver
    question is decided (6 were undecided before local search and folded
    tries), and the analysis is the one made without local search."""
    module, name = _corpus_kernel(corpus, "coop_groups.cu", "grid_sync_sum")
    result = analyze_kernel(module, name, Budget())
    assert result.complete
    assert result.stats.solver_unknown == 0
    monkeypatch.setattr(executor, "local_model", lambda formulas: None)
    without = analyze_kernel(module, name, Budget())
    assert _shape(without) == _shape(result)


def test_local_search_decides_what_the_solver_left_open(corpus, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """An ADI y sweep (2-D grid, 64-bit plane offsets): local search finds
    the model of the one question the solver leaves undecided, and the
    analysis is otherwise the same."""
    module, name = _corpus_kernel(corpus, "adi_solver.cu", "adi_y_sweep")
    found: list[bool] = []
    real_search = executor.local_model

    def spy(formulas):  # type: ignore[no-untyped-def]
        model = real_search(formulas)
        found.append(model is not None)
        return model

    monkeypatch.setattr(executor, "local_model", spy)
    result = analyze_kernel(module, name, Budget())
    assert any(found)
    monkeypatch.setattr(executor, "local_model", lambda formulas: None)
    without = analyze_kernel(module, name, Budget())
    assert without.stats.solver_unknown > result.stats.solver_unknown
    assert _shape(without) == _shape(result)
