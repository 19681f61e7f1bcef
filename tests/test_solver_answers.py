"""Questions not asked, and answers that stay the same.

An undecided question is not followed by its companion: a branch side the
solver cannot decide makes both sides feasible without asking the other, and
two addresses it cannot tell apart from equal may overlap without asking
whether they can.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import z3

from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import Budget, analyze_kernel
from ptxasw.emulator.symbolic.independence import Symbols
from ptxasw.parser import parse_file


def _openmp_kernel(gcc_corpus, prefix: str):  # type: ignore[no-untyped-def]
    files = [f for f in gcc_corpus if f.source_path.name == "omp_target.c"]
    if not files:
        pytest.skip("gcc-12 with nvptx offloading is not installed")
    module = parse_file(files[0].ptx_path)
    (name,) = [k.name for k in module.kernels if k.name == prefix]
    return module, name


def test_an_undecided_branch_condition_is_not_asked_again_negated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A side the solver cannot decide is taken as feasible; its negation
    (never refuted where the first side was undecided) is not asked."""
    from ptxasw.parser import parse_ptx
    from tests.test_solver_fastpaths import _SWEEP

    calls: list[int] = []  # solver questions per branch decision that asked any
    real_sides = executor.SymbolicExecutor._sides

    def undecided(self, pc, extra):  # type: ignore[no-untyped-def]
        calls[-1] += 1
        return None

    def sides(self, st, cond):  # type: ignore[no-untyped-def]
        calls.append(0)
        answer = real_sides(self, st, cond)
        if not calls[-1]:
            calls.pop()
        else:
            assert answer == (True, True)
        return answer

    monkeypatch.setattr(executor._Solver, "check", undecided)
    monkeypatch.setattr(executor.SymbolicExecutor, "_sides", sides)
    result = analyze_kernel(parse_ptx(_SWEEP), "sweep", Budget(time_s=60))
    assert result.stats.forks > 0
    assert calls and set(calls) == {1}


def test_addresses_undecided_equal_may_overlap_without_another_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_relation` asks whether two addresses can differ; undecided, it
    answers ``may`` without the overlap question."""
    import z3 as _z3

    from ptxasw.parser import parse_ptx
    from tests.test_solver_fastpaths import _SWEEP

    module = parse_ptx(_SWEEP)
    ex = executor.SymbolicExecutor(module, module.kernels[0], Budget(time_s=60))
    asked: list[object] = []

    def undecided(self, pc, extra, solver_form):  # type: ignore[no-untyped-def]
        asked.append(extra)
        return None

    monkeypatch.setattr(executor._Solver, "check_rewritten", undecided)
    monkeypatch.setattr(ex, "_depends_on_pointer", lambda e: False)
    i, j = _z3.BitVecs("i j", 64)
    state = executor._State(None, 0, {}, (), [], [], set())  # type: ignore[arg-type]
    assert ex._relation(state, i * j, 4, j * 3 + 1, 4) == "may"
    assert len(asked) == 1


_FRAME = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry frame(.param .u64 out, .param .u32 i, .param .u32 j)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<10>;
    .local .align 8 .b8 buf[256];

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [i];
    ld.param.u32 %r2, [j];
    mov.u64 %rd2, buf;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    mul.wide.u32 %rd5, %r2, 8;
    add.s64 %rd6, %rd2, %rd5;
    st.local.u32 [%rd4], %r1;
    ld.local.u32 %r3, [%rd6];
    cvta.to.global.u64 %rd7, %rd1;
    st.global.u32 [%rd7], %r3;
    ret;
}
"""


def _questions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The queries the executor's solver is asked from now on (answered as usual)."""
    asked: list[object] = []
    real = executor._Solver.check_rewritten

    def check_rewritten(self, pc, extra, solver_form):  # type: ignore[no-untyped-def]
        asked.append(extra)
        return real(self, pc, extra, solver_form)

    monkeypatch.setattr(executor._Solver, "check_rewritten", check_rewritten)
    return asked


def test_a_load_of_the_threads_own_memory_asks_no_solver_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """``buf[j]`` after a store to ``buf[i]`` (``.local``): may overlap,
    decided without the solver, so the load reads a fresh value."""
    from ptxasw.parser import parse_ptx

    asked = _questions(monkeypatch)
    result = analyze_kernel(parse_ptx(_FRAME), "frame", Budget(time_s=60))
    assert result.complete
    (flow,) = result.flows
    (local_load,) = [a for a in flow.trace if a.kind == "ld" and a.space == ".local"]
    assert z3.is_app(local_load.value) and local_load.value.decl().name().startswith("load_local")
    assert not asked


_SOFT_STACK = r"""
.version 7.0
.target sm_80
.address_size 64
.extern .shared .u64 __nvptx_stacks[32];

.visible .entry stack(.param .u64 out, .param .u32 i, .param .u32 j)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [i];
    ld.param.u32 %r2, [j];
    mov.u32 %r4, %tid.y;
    mul.wide.u32 %rd8, %r4, 8;
    mov.u64 %rd9, __nvptx_stacks;
    add.u64 %rd10, %rd9, %rd8;
    ld.shared.u64 %rd2, [%rd10];
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    mul.wide.u32 %rd5, %r2, 8;
    add.s64 %rd6, %rd2, %rd5;
    st.u32 [%rd4+-64], %r1;
    ld.u32 %r3, [%rd6+-64];
    cvta.to.global.u64 %rd7, %rd1;
    st.global.u32 [%rd7], %r3;
    ret;
}
"""


def test_a_load_from_gccs_soft_stack_asks_no_solver_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """GCC's OpenMP offload code keeps a region's temporaries on its soft
    stack (a pointer loaded from ``__nvptx_stacks[warp]``): ``[sp + 8*j]``
    after a store to ``[sp + 8*i]`` may overlap, decided without the
    solver; the same offset still forwards the stored value."""
    from ptxasw.parser import parse_ptx

    asked = _questions(monkeypatch)
    result = analyze_kernel(parse_ptx(_SOFT_STACK), "stack", Budget(time_s=60))
    assert result.complete
    (flow,) = result.flows
    (stack_load,) = [a for a in flow.trace if a.kind == "ld" and a.space == "generic"]
    assert z3.is_app(stack_load.value) and stack_load.value.decl().name().startswith("load_generic")
    assert not asked
    same = analyze_kernel(parse_ptx(_SOFT_STACK.replace("[%rd6+-64]", "[%rd4+-64]")), "stack", Budget())
    (flow,) = same.flows
    (stack_load,) = [a for a in flow.trace if a.kind == "ld" and a.space == "generic"]
    assert stack_load.value.eq(z3.BitVec("param_i", 32))


def test_a_read_no_context_names_does_not_tie_its_address() -> None:
    """``f(x) > 5`` under ``x == 3``: ``f`` is named nowhere else, so the
    read is a free value and ``x == 3`` is not part of the question; with
    ``f(3) == 0`` in the context it is, through ``f``."""
    from ptxasw.emulator.symbolic.independence import connected

    x, y = z3.BitVecs("x y", 8)
    f = z3.Function("load_global_8@1", z3.BitVecSort(8), z3.BitVecSort(8))
    symbols = Symbols()
    assert connected(symbols, [z3.UGT(f(x), 5)], [x == 3, z3.ULT(y, 2)]) == []
    context = [x == 3, f(z3.BitVecVal(3, 8)) == 0, z3.ULT(y, 2)]
    assert [c.sexpr() for c in connected(symbols, [z3.UGT(f(x), 5)], context)] == [
        context[0].sexpr(),
        context[1].sexpr(),
    ]
    # Two reads of one function compare their addresses: x is tied.
    assert connected(symbols, [f(x) != f(y)], [x == y]) != []


def _slices_answer_as_whole(
    seed: int, pool: Callable[[int], list[z3.BitVecRef]], width: int, context_size: int, trials: int
) -> tuple[int, int]:
    """Random satisfiable contexts of up to ``context_size`` comparisons and
    one-comparison questions over the terms of ``pool(trial)`` and constants
    of ``width`` bits: the question with its connected part (`connected`)
    has the answer of the question with the whole context. Returns how many
    questions were checked and how many parts were smaller than the whole."""
    import random

    from ptxasw.emulator.symbolic.independence import connected

    rng = random.Random(seed)
    ops = [z3.ULT, lambda a, b: a == b, lambda a, b: a != b]

    def formula(terms: list[z3.BitVecRef]) -> z3.BoolRef:
        other = rng.choice([*terms, z3.BitVecVal(rng.randrange(1 << width), width)])
        return rng.choice(ops)(rng.choice(terms), other)

    checked = smaller = 0
    for trial in range(trials):
        terms = pool(trial)
        context = [formula(terms) for _ in range(rng.randint(1, context_size))]
        whole = z3.Solver()
        whole.add(*context)
        if whole.check() != z3.sat:
            continue
        query = [formula(terms)]
        part = connected(Symbols(), query, context)
        smaller += len(part) < len(context)
        full = z3.Solver()
        full.add(*context, *query)
        sliced = z3.Solver()
        sliced.add(*part, *query)
        assert full.check() == sliced.check(), (query, context, part)
        checked += 1
    return checked, smaller


def test_slices_with_free_reads_answer_as_the_whole() -> None:
    """Random questions and satisfiable contexts over two symbols and two
    memory functions: the query with its connected part has the answer of
    the query with the whole context."""
    x, y, z_ = z3.BitVecs("x y z", 6)
    fs = [z3.Function(f"load_global_6@{k}", z3.BitVecSort(6), z3.BitVecSort(6)) for k in (1, 2)]
    atoms = [x, y, z_, fs[0](x), fs[0](y), fs[1](x + 1), fs[1](z_)]
    checked, _ = _slices_answer_as_whole(11, lambda _trial: atoms, 6, 4, 400)
    assert checked > 200


def test_reads_at_two_offsets_of_a_variable_are_apart() -> None:
    """``f(&v + 4) == f(&v + 8)`` needs the conditions on those two places
    only, not one on ``f(&v)`` nor one on ``&v`` itself (no offset meets
    another, wherever ``&v`` is); a read of ``f`` at another address, or
    at an offset of another variable, ties them all again."""
    from ptxasw.emulator.symbolic.independence import connected

    v, x = z3.BitVecs("&v x", 8)
    f = z3.Function("load_generic_8@1", z3.BitVecSort(8), z3.BitVecSort(8))
    query = [f(v + 4) == f(v + 8)]
    context = [z3.ULT(f(v), 3), z3.ULT(f(v + 4), 9), z3.ULT(f(v + 12), 5), v == x]
    assert connected(Symbols(), query, context) == [context[1]]
    w = z3.BitVec("&w", 8)
    for tie in (z3.ULT(f(x), 1), z3.ULT(f(w + 1), 1)):
        assert len(connected(Symbols(), query, [*context, tie])) == 5, tie


def test_reads_at_two_offsets_of_a_soft_stack_frame_are_apart() -> None:
    """The same for GCC's OpenMP frame, a loaded stack pointer plus a
    constant: reads at two offsets of it are two places; a read at an
    offset of another pointer could meet them."""
    from ptxasw.emulator.symbolic.independence import connected

    t = z3.BitVec("%tid.y", 64)
    stacks = z3.BitVec("&__nvptx_stacks", 64)
    sp = z3.Function("load_shared_64@2", z3.BitVecSort(64), z3.BitVecSort(64))(stacks + 8 * t)
    f = z3.Function("load_generic_32@7", z3.BitVecSort(64), z3.BitVecSort(32))
    query = [f(sp + 456) == f(sp + 480)]
    context = [z3.ULT(f(sp + 456), 9), z3.ULT(f(sp + 500), 4), z3.ULT(t, 8)]
    assert connected(Symbols(), query, context) == [context[0]]
    other = z3.BitVec("param_0", 64)
    tie = z3.ULT(f(other + 8), 1)
    assert len(connected(Symbols(), query, [*context, tie])) == 4


def test_slices_with_reads_at_constant_offsets_answer_as_the_whole() -> None:
    """Random questions and satisfiable contexts with reads at constant
    offsets of a variable, at other addresses, and the variable itself:
    the sliced query has the answer of the whole."""
    v, x, y = z3.BitVecs("&v x y", 4)
    w = z3.BitVec("&w", 4)
    fs = [z3.Function(f"load_generic_4@{k}", z3.BitVecSort(4), z3.BitVecSort(4)) for k in (1, 2)]
    points = [fs[0](v), fs[0](v + 1), fs[0](v + 2), fs[1](v + 1), fs[1](v + 3), fs[0](w), fs[1](w + 1)]
    others = [x, y, fs[0](x), v, w + 2]

    def pool(trial: int) -> list[z3.BitVecRef]:
        # Most trials read at points only; some also read elsewhere or name a base.
        return points if trial % 3 else [*points, *others]

    checked, tied = _slices_answer_as_whole(12, pool, 4, 5, 600)
    assert checked > 300 and tied > 50


def test_a_gcc_openmp_analysis_is_the_same_under_any_string_hash_seed(gcc_corpus) -> None:  # type: ignore[no-untyped-def]
    """Python randomises string hashes per process; whatever iterates a set
    of names must not decide the order Z3's terms are made in (their ids
    order the simplifier's arguments), or two runs of the drop-in on one
    file ask the solver different questions."""
    import json
    import os
    import subprocess
    import sys

    _, name = _openmp_kernel(gcc_corpus, "main$_omp_fn$4")
    (path,) = [f.ptx_path for f in gcc_corpus if f.source_path.name == "omp_target.c"]
    script = (
        "import json, sys; from ptxasw.parser import parse_file; "
        "from ptxasw.emulator.symbolic.executor import Budget, analyze_kernel; "
        "r = analyze_kernel(parse_file(sys.argv[1]), sys.argv[2], Budget(time_s=60)); "
        "print(json.dumps([r.stats.solver_calls, r.stats.solver_unknown, "
        "len(r.flows)]))"
    )
    runs = []
    for seed in ("0", "1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, str(path), name],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1] == runs[2], runs
