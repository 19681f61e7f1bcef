"""The analysis-time fast paths of the symbolic executor agree with the full solver.

- `affine.overlap_condition` / `affine.equal_condition`: the overlap of two
  accesses restated on the low bits of the scaled difference; proved
  equivalent to the plain comparison by Z3 on random linear differences
  (Hypothesis), and cheap where the plain form is not (resource units,
  never seconds).
- `_Incremental.add_base`: base facts that arrive while scopes are pushed
  stay asserted after any pop; random scope walks answer as a fresh solver
  does.
- `_Solver._typical_sizes`: a loaded divisor or factor is fixed in the
  under-approximation, so a branch on ``n / nthreads`` (GCC OpenMP's loop
  chunk) gets its model there, and the answer is Z3's.
"""

from __future__ import annotations

import time

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.affine import equal_condition, overlap_condition

# --------------------------------------------------------------------------
# Overlap restated on the scaled difference


def _plain_overlap(d: z3.BitVecRef, na: int, nb: int) -> z3.BoolRef:
    return z3.ULT(d + (na - 1), na + nb - 1)


def _equivalent(f: z3.BoolRef, g: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Xor(f, g))
    return solver.check() == z3.unsat


_COEFFICIENTS = st.sampled_from([1, 2, 3, 4, 5, 8, 12, 16, 24, 40, 64, 200, -8, -40, -16, 1 << 10])


@settings(max_examples=40, deadline=None)
@given(
    width=st.sampled_from([8, 12]),
    c0=st.integers(-300, 300),
    terms=st.lists(st.tuples(st.integers(0, 2), _COEFFICIENTS, st.booleans()), min_size=1, max_size=3),
    na=st.sampled_from([1, 2, 4, 8, 16]),
    nb=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_overlap_condition_is_the_overlap(
    width: int, c0: int, terms: list[tuple[int, int, bool]], na: int, nb: int
) -> None:
    """Whatever the residue and the window, the restated formula has the
    models of ``d + (na-1) <u na + nb - 1``. A product of two symbols is one
    term, as the simplifier leaves it. The reduction does not depend on the
    width; narrow vectors keep Z3's equivalence proofs (multiplications
    both sides) quick, the 64-bit case is `test_overlap_condition_examples`."""
    syms = z3.BitVecs("p q r", width)
    d = z3.BitVecVal(c0, width)
    for index, k, product in terms:
        s = syms[index]
        d = d + k * (s * syms[(index + 1) % 3] if product and width == 8 else s)
    d = z3.simplify(d)
    assert _equivalent(overlap_condition(d, na, nb), _plain_overlap(d, na, nb)), (d, na, nb)
    assert _equivalent(equal_condition(d), d == 0), d


def test_overlap_condition_examples() -> None:
    a, b = z3.BitVecs("a b", 64)
    # Two stack slots 40*a and 40*b (8 bytes): only d == 0 meets, which is
    # an equation on the low 61 bits of 5*(a - b).
    d = z3.simplify(40 * a - 40 * b)
    f = overlap_condition(d, 8, 8)
    assert z3.is_eq(f) and f.arg(0).size() == 61
    # No congruent value in the window: never (disjoint_by_stride's case).
    assert z3.is_false(overlap_condition(z3.simplify(8 * a + 4 - 8 * b), 4, 4))
    # Stride 1: the plain comparison stays.
    assert z3.is_app_of(overlap_condition(z3.simplify(a - b), 8, 8), z3.Z3_OP_ULT)
    # Too many congruent values (a 2-byte grid under 16-byte accesses): plain.
    assert z3.is_app_of(overlap_condition(z3.simplify(2 * a - 2 * b), 16, 16), z3.Z3_OP_ULT)


def _check_within(formulas: list[z3.BoolRef], limit: int) -> z3.CheckSatResult:
    solver = z3.Solver()
    solver.set("random_seed", 0)
    solver.set("rlimit", limit)  # resource units for this check (deterministic, unlike time)
    solver.push()  # incremental mode, as the executor's solvers run
    solver.add(*formulas)
    return solver.check()


def test_restated_overlap_is_cheap_where_the_comparison_is_not() -> None:
    """The NPB BT (GCC OpenMP) case: two iterations of a stack array of
    40-byte rows, whose 32-bit counters differ. Z3 refutes the restated
    overlap within a twentieth of the executor's per-query limit; the plain
    comparison is not refuted within it."""
    i, j, k = z3.BitVecs("i j k", 64)
    context = [
        z3.ULT(i, 1 << 62),
        z3.ULT(j, 1 << 62),
        z3.ULT(k, 1 << 62),
        z3.Extract(31, 0, k) == 3 - z3.Extract(31, 0, i),
        z3.Extract(31, 0, j) != z3.Extract(31, 0, i),
    ]
    d = z3.simplify(40 * i - 40 * j)
    small = executor.RLIMIT_PER_MS * 10
    assert _check_within([*context, overlap_condition(d, 8, 8)], small) == z3.unsat
    assert _check_within([*context, _plain_overlap(d, 8, 8)], small) == z3.unknown


# --------------------------------------------------------------------------
# Base facts added while scopes are pushed

_X = z3.BitVecs("x0 x1 x2", 8)
_FACTS = [
    z3.ULT(_X[0], 100),
    z3.UGT(_X[1], 3),
    _X[2] != _X[0],
    z3.ULT(_X[0] + _X[1], 50),
    _X[2] == 7,
    z3.UGT(_X[0], 40),
    _X[1] == _X[0] + 1,
]

_STEP = st.one_of(
    st.tuples(st.just("base"), st.integers(0, len(_FACTS) - 1)),
    st.tuples(st.just("check"), st.lists(st.integers(0, len(_FACTS) - 1), max_size=4), st.integers(0, 6)),
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=12))
def test_incremental_base_facts_survive_pops(steps: list[tuple]) -> None:  # type: ignore[type-arg]
    """Random walks of path conditions (prefix-sharing, as depth-first
    exploration makes them) with base facts arriving in between: every
    check answers as a fresh solver over base facts, path and query."""
    inc = executor._Incremental()
    base: list[z3.BoolRef] = []
    for step in steps:
        if step[0] == "base":
            fact = _FACTS[step[1]]
            inc.add_base([fact])
            base.append(fact)
            continue
        _, path, query = step
        pc = [_FACTS[i] for i in path]
        extra = [_FACTS[query]]
        result, _ = inc.check(pc, extra, 10_000, 10_000_000)
        fresh = z3.Solver()
        fresh.add(*base, *pc, *extra)
        assert result == fresh.check(), (base, pc, extra)


# --------------------------------------------------------------------------
# Loaded divisors fixed in the under-approximation


def _gomp_chunk_query() -> tuple[list[z3.BoolRef], z3.BoolRef, z3.ExprRef]:
    """``chunk = n / nthreads`` with ``nthreads`` loaded from memory (the
    team size, as GCC's offload code reads it) and the branch
    ``tid * chunk < n``."""
    load = z3.Function("load_generic_32", z3.BitVecSort(64), z3.BitVecSort(32))
    team = load(z3.BitVec("param_omp_data", 64))
    n, tid = z3.BitVec("param_n", 32), z3.BitVec("%tid.x", 32)
    chunk = z3.If(team == 0, z3.BitVecVal(-1, 32), n / team)
    pc = [team != 0, z3.ULT(tid, 1024), n > 0]
    return pc, z3.ULT(tid * chunk + chunk, n), team


def test_loaded_divisor_is_fixed_and_the_answer_is_z3s() -> None:
    pc, query, team = _gomp_chunk_query()
    stats = executor.Stats()
    solver = executor._Solver(200, stats, deadline=time.perf_counter() + 60.0, budget_s=60.0)
    solver.fast = True
    solver._abstracted(query)
    fixes = solver._typical_sizes(solver._nonlinear_pairs([query]), 64)
    assert any(team.eq(f.arg(0)) for f in fixes), fixes
    answer = solver.check(pc, [query])
    full = z3.Solver()
    full.add(*pc, query)
    assert answer is True and full.check() == z3.sat
    assert stats.cheap_answers >= 1  # the model came from the under-approximation
    # The other side of the branch: also satisfiable, also Z3's answer.
    assert solver.check(pc, [z3.Not(query)]) is True


# --------------------------------------------------------------------------
# The interval memo never outlives its terms


def _subterm_ids(formulas: list[z3.BoolRef]) -> set[int]:
    out: set[int] = set()
    stack: list[z3.ExprRef] = list(formulas)
    while stack:
        e = stack.pop()
        if e.get_id() in out:
            continue
        out.add(e.get_id())
        if z3.is_app(e):
            stack.extend(e.children())
    return out


def test_interval_memo_keys_stay_alive() -> None:
    """The solver memoises intervals by Z3 id; Z3 reuses the id of a term
    nobody holds, and a stale interval would decide a later, different
    term (a branch side pruned that is feasible). Queries answered by
    intervals alone and queries restated for the solver (whose original
    form is stored nowhere else) must keep their terms alive."""
    stats = executor.Stats()
    solver = executor._Solver(200, stats, deadline=time.perf_counter() + 60.0, budget_s=60.0)
    tid = z3.BitVec("%tid.x", 32)
    n = z3.BitVec("param_n", 32)
    for k in range(40):
        # Decided by intervals (%tid.x < 1024 by the ISA ranges) and dropped.
        assert solver.check([], [z3.ULT(tid + k, 5000)]) is True
        d = z3.simplify(40 * z3.ZeroExt(32, n + k) - 40 * z3.ZeroExt(32, n))
        solver.check_rewritten([], [z3.ULT(d + 7, 15)], [overlap_condition(d, 8, 8)])
    kept = [formula for formula, _ in solver._decisions.values()]
    assert set(solver._ranges) <= _subterm_ids(kept)
    assert set(solver._decisions) <= _subterm_ids(kept)


def test_guards_decided_once_per_formula() -> None:
    """If-converted guards are And/Or trees that share subformulas from one
    access to the next: each subformula is decided once (`decided` keeps
    the answers), and the answers are those of a fresh `decide`."""
    from ptxasw.emulator.symbolic.intervals import decide

    stats = executor.Stats()
    solver = executor._Solver(200, stats, deadline=time.perf_counter() + 60.0, budget_s=60.0)
    tid = z3.BitVec("%tid.x", 32)
    n = z3.BitVec("param_n", 32)
    chain: z3.BoolRef = z3.ULT(tid, n)
    answers = []
    for k in range(30):
        chain = z3.And(chain, z3.Or(z3.ULT(tid, n + k), z3.UGE(tid, 2000 + k)))
        answers.append((solver.decided(chain), decide(chain)))
    assert all(ours == fresh for ours, fresh in answers)
    assert solver.decided(z3.And(chain, z3.UGE(tid, 5000))) is False
    assert len(solver._decisions) < 4 * 32  # each level's new subformulas only


# --------------------------------------------------------------------------
# Register arithmetic a sibling flow already ran on the same inputs

FORKED_MATH = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .v2 .b32 %v<2>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r3, [%rd4];
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra $SMALL;
    st.global.u32 [%rd2], %r3;
    bra $JOIN;
$SMALL:
    st.global.u32 [%rd2+4], %r1;
$JOIN:
    mul.lo.u32 %r4, %r3, %r3;
    add.u32 %r5, %r4, %r1;
    setp.gt.u32 %p2, %r5, 100;
    @%p2 add.u32 %r5, %r5, 7;
    mov.v2.b32 %v1, {%r4, %r5};
    xor.b32 %r6, %r5, %r2;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r6;
    ret;
}
"""


def _trace_text(result: executor.KernelAnalysis) -> list[str]:
    return [
        f"{f.condition} {[(a.kind, str(a.address), str(a.value), str(a.guard)) for a in f.trace]}"
        for f in result.flows
    ]


def test_sibling_flows_reuse_register_arithmetic(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Both flows of the store branch run the code after the join on the same
    terms: the second takes what the first computed (`_step`), and the
    traces are the same as when every flow computes everything. A vector
    register's write, which the semantics makes per element, is not taken."""
    from ptxasw.parser.frontend import parse_ptx

    module = parse_ptx(FORKED_MATH, "forked.ptx")
    monkeypatch.setattr(executor, "IF_CONVERT", False)  # two flows, as the branch forks them
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    calls: list[str] = []
    run = executor.SymbolicExecutor._execute

    def counted(self: executor.SymbolicExecutor, inst) -> None:  # type: ignore[no-untyped-def]
        calls.append(inst.opcode)
        run(self, inst)

    monkeypatch.setattr(executor.SymbolicExecutor, "_execute", counted)
    reused = executor.analyze_kernel(module, "k")
    shared_calls = list(calls)
    calls.clear()
    monkeypatch.setattr(executor.SymbolicExecutor, "_pure_registers", lambda self, inst: None)
    every = executor.analyze_kernel(module, "k")
    assert len(reused.flows) == len(every.flows) == 2
    assert _trace_text(reused) == _trace_text(every)
    for opcode in ("mul", "add", "setp", "xor"):
        assert shared_calls.count(opcode) < calls.count(opcode), opcode
    assert shared_calls.count("mov") == calls.count("mov")  # the vector write and %tid.x
