"""The symbolic executor's solver shortcuts give the answers Z3 gives.

`affine.disjoint_by_stride` (disjoint addresses by congruence),
`independence.connected` (the part of a context a query depends on) and the
executor's use of them with `executor.FAST_PATHS`: every shortcut answer is
checked against Z3 on the full question, and a corpus kernel analysed with
and without the shortcuts gives the same flows, accesses and alias marks
with fewer solver calls (counted, never timed).
"""

from __future__ import annotations

import random

import pytest
import z3

from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.affine import congruence, disjoint_by_stride
from ptxasw.emulator.symbolic.executor import Budget, analyze_kernel
from ptxasw.emulator.symbolic.independence import Symbols, connected
from ptxasw.parser import parse_ptx as parse

# --------------------------------------------------------------------------
# Disjointness by stride


def _overlap(d: z3.BitVecRef, na: int, nb: int) -> z3.BoolRef:
    """``[a, a+na)`` and ``[b, b+nb)`` overlap, for ``d = a - b``."""
    return z3.ULT(d + (na - 1), na + nb - 1)


def test_stride_examples() -> None:
    i, j = z3.BitVecs("i j", 64)
    # a[2i+1] and a[2j] of 4-byte elements: 8i+4 - 8j never in (-4, 4).
    assert disjoint_by_stride(z3.simplify(8 * i + 4 - 8 * j), 4, 4)
    # 8-byte accesses 4 bytes apart on an 8-byte grid overlap.
    assert not disjoint_by_stride(z3.simplify(8 * i + 4 - 8 * j), 8, 8)
    # A stack slot at -40 against 8*iter: same grid, same residue: may overlap.
    assert not disjoint_by_stride(z3.simplify(-40 - 8 * i), 8, 8)
    # An unknown term of stride 1 gives no residue.
    assert congruence(z3.simplify(8 * i + j))[1] == 0
    # concat(x, 0b100) is x*8 + 4.
    x = z3.BitVec("x", 61)
    d = z3.Concat(x, z3.BitVecVal(4, 3))
    assert congruence(d) == (4, 3)
    assert disjoint_by_stride(d, 4, 4)


def test_stride_answers_agree_with_z3() -> None:
    """Random sums of scaled symbols: whenever the stride test says disjoint,
    Z3 proves the overlap impossible; it also says so for some of them."""
    rng = random.Random(6)
    syms = z3.BitVecs("p q r", 64)
    proved = 0
    for _ in range(300):
        d = z3.BitVecVal(rng.randrange(-64, 64), 64)
        for s in rng.sample(syms, rng.randint(1, 3)):
            d = d + rng.choice([4, 8, 12, 16, 24, 40, -8, -16, 200]) * s
        d = z3.simplify(d)
        na, nb = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8])
        if disjoint_by_stride(d, na, nb):
            proved += 1
            solver = z3.Solver()
            solver.add(_overlap(d, na, nb))
            assert solver.check() == z3.unsat, (d, na, nb)
    assert proved >= 30


# --------------------------------------------------------------------------
# Constraint independence


def test_connected_follows_shared_symbols() -> None:
    a, b, c, e = z3.BitVecs("a b c e", 32)
    f = z3.Function("load_f", z3.BitVecSort(32), z3.BitVecSort(32))
    context = [z3.ULT(a, b), z3.ULT(b, 10), z3.ULT(c, 5), f(e) == 3, z3.ULT(e, 7)]
    sym = Symbols()
    assert connected(sym, [a == 4], context) == context[:2]
    assert connected(sym, [c == 1], context) == [context[2]]
    # A function symbol links its applications, whatever the arguments.
    assert connected(sym, [f(a) == 1], context) == [*context[:2], f(e) == 3, context[4]]
    assert connected(sym, [z3.BitVecVal(1, 32) == 1], context) == []


def test_symbol_sets_name_constants_functions_and_points() -> None:
    """`of` names every uninterpreted constant and function of a term (a
    numeral or a quantifier adds nothing); `refined` names a read at a
    constant offset of a base as a point of its own, and remembers what the
    read names when points merge again."""
    x, y = z3.BitVecs("x y", 32)
    frame = z3.BitVec("&frame", 64)
    load = z3.Function("load_local_32", z3.BitVecSort(64), z3.BitVecSort(32))
    g = z3.Function("g", z3.BitVecSort(32), z3.BitVecSort(32))
    term = z3.And(g(x) + 3 == load(frame + 8), z3.ForAll([y], y != 7))
    sym = Symbols()
    assert sym.of(term) == {"g", "x", "load_local_32", "&frame"}
    assert sym.of(z3.BitVecVal(5, 32) + 1 == 6) == frozenset()
    (point,) = sym.refined(term) - {"g", "x"}
    assert point.startswith("load_local_32[") and point.endswith("+8]")
    assert sym.read_symbols[point] == {"load_local_32", "&frame"}
    # A read at a computed address is the function and what the address names.
    assert sym.refined(load(frame + z3.ZeroExt(32, x)) == 0) == {"load_local_32", "&frame", "x"}


def test_connected_slices_answer_as_the_whole() -> None:
    """Random satisfiable contexts: the query with its connected conjuncts is
    sat exactly when it is with the whole context."""
    rng = random.Random(4)
    xs = z3.BitVecs("x0 x1 x2 x3 x4 x5", 8)
    sym = Symbols()
    checked = 0
    for _ in range(200):
        context = []
        for _ in range(rng.randint(1, 5)):
            u, v = rng.sample(xs, 2)
            op = rng.choice([z3.ULT, lambda s, t: s + t == rng.randrange(256), lambda s, t: s != t])
            context.append(op(u, v) if rng.random() < 0.7 else z3.ULT(u, rng.randrange(1, 256)))
        whole = z3.Solver()
        whole.add(*context)
        if whole.check() != z3.sat:
            continue  # the executor only asks under satisfiable path conditions
        u, v = rng.sample(xs, 2)
        query = [rng.choice([u == v + 1, z3.ULT(u, 3), u * v == 6])]
        part = z3.Solver()
        part.add(*connected(sym, query, context), *query)
        whole.add(*query)
        assert part.check() == whole.check()
        checked += 1
    assert checked >= 100


# --------------------------------------------------------------------------
# The executor with and without the shortcuts

_SWEEP = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry sweep(.param .u64 a, .param .u64 b, .param .u32 n, .param .u32 m)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<16>;
    .local .align 8 .b8 buf[256];

    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r9, [m];
    mov.u32 %r2, %tid.x;
    mov.u32 %r6, %tid.y;
    mov.u32 %r7, %ctaid.x;
    mov.u32 %r8, %ntid.y;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    setp.ge.u32 %p3, %r6, %r9;
    @%p3 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.u32 %rd4, %r2, 16;
    add.s64 %rd5, %rd3, %rd4;
    mov.u64 %rd6, buf;
    mul.wide.u32 %rd7, %r2, 8;
    add.s64 %rd8, %rd6, %rd7;
    ld.local.u32 %r4, [%rd6+4];
    st.local.u32 [%rd8], %r2;
    ld.local.u32 %r5, [%rd6+4];
    st.local.u32 [%rd8+16], %r5;
    ld.local.u32 %r10, [%rd6+12];
    add.u32 %r3, %r4, %r10;
    setp.eq.u32 %p2, %r1, 77;
    @%p2 bra SKIP;
    st.global.u32 [%rd5], %r3;
SKIP:
    ld.global.u32 %r11, [%rd5+8];
    cvta.to.global.u64 %rd9, %rd2;
    st.global.u32 [%rd9], %r11;
DONE:
    ret;
}
"""


def _shape(result: executor.KernelAnalysis) -> list[tuple[object, ...]]:
    """What an analysis found, as comparable data."""
    out = []
    for flow in result.flows:
        trace = [
            (a.kind, a.space, a.nbytes, None if a.address is None else a.address.sexpr(), a.version)
            for a in flow.trace
        ]
        values = [None if a.value is None else a.value.sexpr() for a in flow.trace]
        condition = [c.sexpr() for c in flow.condition]
        out.append((flow.end, condition, trace, values, sorted(flow.may_alias_store.items())))
    return out


def _analyse(module, name: str, fast: bool, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(executor, "FAST_PATHS", fast)
    return analyze_kernel(module, name, Budget(time_s=60))


def test_kernel_answers_unchanged_with_fewer_solver_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # In shared memory: loads of a thread's own (.local) memory are compared
    # without the solver either way.
    module = parse(_SWEEP.replace(".local", ".shared"))
    slow = _analyse(module, "sweep", False, monkeypatch)
    fast = _analyse(module, "sweep", True, monkeypatch)
    assert slow.complete and fast.complete
    assert fast.stats.solver_unknown == slow.stats.solver_unknown == 0
    assert _shape(fast) == _shape(slow)
    assert fast.stats.solver_calls < slow.stats.solver_calls


Answers = list[tuple[object, ...]]


def _record_shortcuts(monkeypatch: pytest.MonkeyPatch) -> tuple[Answers, Answers]:
    """Wrap the executor's shortcuts; return (stride answers, sliced answers)."""
    strides: Answers = []
    slices: Answers = []

    def stride(d, na, nb):  # type: ignore[no-untyped-def]
        answer = disjoint_by_stride(d, na, nb)
        strides.append((d, na, nb, answer))
        return answer

    real_check = executor._Solver.check

    def check(self, pc, extra):  # type: ignore[no-untyped-def]
        answer = real_check(self, pc, extra)
        context = connected(self.symbols, extra, [*self.axioms, *pc])
        if len(context) < len(self.axioms) + len(pc):
            slices.append(([*self.axioms, *pc], list(extra), answer))
        return answer

    monkeypatch.setattr(executor, "disjoint_by_stride", stride)
    monkeypatch.setattr(executor._Solver, "check", check)
    return strides, slices


def _agree_with_full_z3(strides, slices) -> int:  # type: ignore[no-untyped-def]
    """Check every shortcut answer against Z3 on the whole question; the
    number of answers Z3 could confirm."""
    confirmed = 0
    for d, na, nb, answer in strides:
        if answer:
            solver = z3.Solver()
            solver.add(_overlap(d, na, nb))
            assert solver.check() == z3.unsat
            confirmed += 1
    for context, extra, answer in slices:
        if answer is None:
            continue
        solver = z3.Solver()
        solver.set("timeout", 5000)
        solver.add(*context, *extra)
        full = solver.check()
        if full != z3.unknown:
            assert (full == z3.sat) == answer, (extra, answer)
            confirmed += 1
    return confirmed


def test_shortcut_answers_agree_with_full_z3(monkeypatch: pytest.MonkeyPatch) -> None:
    strides, slices = _record_shortcuts(monkeypatch)
    monkeypatch.setattr(executor, "FAST_PATHS", True)
    result = analyze_kernel(parse(_SWEEP), "sweep", Budget(time_s=60))
    assert result.complete
    assert any(answer for *_, answer in strides), "the stride test never fired"
    assert slices, "no query was sliced"
    assert _agree_with_full_z3(strides, slices) >= len(slices) // 2


def test_corpus_kernel_shortcuts_agree(corpus, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """An NPB-like ADI sweep compiled by nvcc: same analysis both ways, and
    the sliced answers agree with Z3 on the whole question."""
    from ptxasw.parser import parse_file

    files = [f for f in corpus if f.source_path.name == "adi_solver.cu" and "-G" not in f.flags]
    if not files:
        pytest.skip("adi_solver.cu is not in this corpus")
    module = parse_file(files[0].ptx_path)
    (name,) = [k.name for k in module.kernels if "penta_x_forward" in k.name]
    slow = _analyse(module, name, False, monkeypatch)
    strides, slices = _record_shortcuts(monkeypatch)
    fast = _analyse(module, name, True, monkeypatch)
    assert slow.complete and fast.complete
    assert _shape(fast) == _shape(slow)
    assert fast.stats.solver_calls <= slow.stats.solver_calls
    assert slices
    _agree_with_full_z3(strides, slices)


def test_a_free_predicate_literal_joins_no_slice() -> None:
    """``setp.lt.f64(x, y)`` on its own (no other conjunct names the
    function) is satisfiable beside anything: it is left out, and it does not
    bridge the symbols of its arguments to the query."""
    a, b, c = z3.BitVecs("a b c", 32)
    lt = z3.Function("setp.lt.f64", z3.BitVecSort(32), z3.BitVecSort(32), z3.BoolSort())
    gt = z3.Function("setp.gt.f64", z3.BitVecSort(32), z3.BitVecSort(32), z3.BoolSort())
    context = [z3.ULT(a, 10), lt(a, b), z3.ULT(b, 3), z3.Not(gt(c, c))]
    sym = Symbols()

    def same(xs: list[z3.BoolRef], ys: list[z3.BoolRef]) -> bool:
        return len(xs) == len(ys) and all(x.eq(y) for x, y in zip(xs, ys, strict=True))

    assert same(connected(sym, [a == 4], context), [context[0]])
    # Named twice, the function links its applications again.
    twice = [*context, lt(b, c)]
    assert same(connected(sym, [a == 4], twice), [*context[:3], twice[4]])
    # Named by the query, the literal is part of the question.
    assert same(connected(sym, [lt(c, a)], context), context[:3])


def test_slices_with_predicate_literals_answer_as_the_whole() -> None:
    """Random satisfiable contexts with uninterpreted predicate literals
    (once or several times, negated or not): the slice answers as the
    whole context does."""
    rng = random.Random(7)
    xs = z3.BitVecs("y0 y1 y2 y3 y4", 8)
    preds = [z3.Function(f"setp.p{k}", z3.BitVecSort(8), z3.BitVecSort(8), z3.BoolSort()) for k in range(3)]
    sym = Symbols()
    checked = 0
    for _ in range(300):
        context: list[z3.BoolRef] = []
        for _ in range(rng.randint(1, 6)):
            u, v = rng.sample(xs, 2)
            if rng.random() < 0.5:
                lit = rng.choice(preds)(u, v)
                context.append(z3.Not(lit) if rng.random() < 0.5 else lit)
            else:
                context.append(rng.choice([z3.ULT(u, v), u + v == rng.randrange(256), u != v]))
        whole = z3.Solver()
        whole.add(*context)
        if whole.check() != z3.sat:
            continue
        u, v = rng.sample(xs, 2)
        query = [rng.choice([u == v + 1, z3.ULT(u, 3), preds[0](u, v), z3.Not(preds[1](v, v))])]
        part = z3.Solver()
        part.add(*connected(sym, query, context), *query)
        whole.add(*query)
        assert part.check() == whole.check(), (context, query)
        checked += 1
    assert checked >= 150


# --------------------------------------------------------------------------
# Under-approximations: which unknowns are fixed, and to what


def _fixed(fixes: list[z3.BoolRef]) -> dict[str, int]:
    """``{name: value}`` of equalities ``x == v`` (either side)."""
    out: dict[str, int] = {}
    for f in fixes:
        lhs, rhs = f.children()
        if z3.is_bv_value(lhs):
            lhs, rhs = rhs, lhs
        out[lhs.decl().name() if z3.is_const(lhs) else f"load:{lhs.arg(0)}"] = rhs.as_long()
    return out


def test_typical_sizes_fix_every_leaf_and_keep_indices_below_counts() -> None:
    """GCC's static schedule: ``chunk = (hi - lo) / nthreads`` and
    ``start = tid * chunk``. Every unknown below the non-linear terms is
    fixed (both loaded bounds, not only the divisor), a thread number
    marked as an index gets 0 (fixing it to the count's size would
    contradict ``tid < nthreads``), and ``%tid`` stays free."""
    solver = executor._Solver(200, executor.Stats(), 1e18, 10.0)
    load = z3.Function("load_global_32", z3.BitVecSort(64), z3.BitVecSort(32))
    lo, hi = load(z3.BitVecVal(0, 64)), load(z3.BitVecVal(4, 64))
    nthreads, tid, ptx_tid = z3.BitVecs("omp_get_num_threads!1 omp_get_thread_num!2 %tid.x", 32)
    solver.typical_index(tid)
    chunk = (hi - lo) / nthreads
    start = tid * chunk + ptx_tid * chunk
    nonlinear = [chunk, tid * chunk, ptx_tid * chunk]
    assert _fixed(solver._typical_sizes(nonlinear, 64)) == {
        "omp_get_num_threads!1": 64,
        "omp_get_thread_num!2": 0,
        "load:0": 64,
        "load:4": 64,
    }
    assert _fixed(solver._typical_sizes(nonlinear, 1))["omp_get_thread_num!2"] == 0
    # Each set of fixes leaves a query that is an under-approximation:
    # with every fix, the start is linear in %tid.x alone.
    s = z3.Solver()
    s.add(*solver._typical_sizes(nonlinear, 64), z3.ULT(tid, nthreads), start == 0)
    assert s.check() == z3.sat
    # Without a cached model there is nothing to take values from.
    assert solver._typical_sizes(nonlinear, None) == []


def test_a_query_refuted_at_every_typical_size_gets_less_final_effort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``x * y == 7``: no model with both factors 64 or both 1, so the final
    check runs at `REFUTED_EFFORT` of its effort; it still finds the model
    (the answer is unchanged, only the effort spent on a likely-unsat query)."""
    efforts: list[int] = []
    real_check = executor._Incremental.check

    def spy(self, pc, extra, timeout_ms, rlimit):  # type: ignore[no-untyped-def]
        efforts.append(rlimit)
        return real_check(self, pc, extra, timeout_ms, rlimit)

    monkeypatch.setattr(executor._Incremental, "check", spy)
    solver = executor._Solver(200, executor.Stats(), 1e18, 10.0)
    x, y = z3.BitVecs("a b", 32)
    assert solver.check([z3.ULT(x, 100)], [x * y == 7]) is True
    assert efforts[-1] == int(solver.rlimit // 2 * executor.REFUTED_EFFORT)
    # A query with a model at a typical size never reaches the final check.
    efforts.clear()
    assert solver.check([z3.ULT(x, 100)], [x * y == 64 * 64]) is True
    assert efforts[-1] == solver.rlimit // 8
