"""Joining the flows of a fork where its sides meet (state merging).

As branches (if-conversion off), each side of a fork runs as its own flow;
joined, the sides continue as one flow whose registers are ``If(side, a, b)``.
What must hold: the joined flows compute, on every input, what the separate
paths computed (checked with Z3 against the path-by-path run on random
branch regions), their number grows with the branches rather than with the
paths, and sides that store stay apart.
"""

from __future__ import annotations

import random

import pytest
import z3

from ptxasw import ir
from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import Access, Flow, KernelAnalysis, SymbolicExecutor, analyze_kernel
from ptxasw.parser.frontend import parse_ptx
from tests.test_ifconvert import SEQUENCE, module, random_body
from tests.test_symbolic_exec import LOOP

DIAMOND_LOADS = """
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $T;
    ld.global.u32 %r3, [%rd4+4];
    bra.uni $J;
$T:
    ld.global.u32 %r3, [%rd4+8];
$J:
    add.u32 %r3, %r3, 1;"""

TRIANGLE_STORE = """
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $J;
    st.global.u32 [%rd4+4], %r2;
$J:
    ld.global.u32 %r3, [%rd4+4];
    add.u32 %r3, %r3, 1;"""

TRIANGLE_ATOMIC = """
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $J;
    atom.global.add.u32 %r3, [%rd4+4], %r2;
$J:
    add.u32 %r3, %r3, 1;"""

TRIANGLE_BARRIER = """
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $J;
    bar.sync 0;
$J:
    add.u32 %r3, %r3, 1;"""


@pytest.fixture(autouse=True)
def branches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every region stays a branch, so that the forks are the executor's."""
    monkeypatch.setattr(executor, "IF_CONVERT", False)


def paths(mod: ir.Module, kernel: str = "k") -> KernelAnalysis:
    """Every path its own flow: no joins, no memoisation."""
    return SymbolicExecutor(mod, mod.function(kernel), merge=False).run()


class _Forgetful(dict):  # type: ignore[type-arg]
    """A memo that never recalls: flows join but are not memoised, so every
    flow that ends stands for the paths its condition says."""

    def get(self, key: object, default: object = None) -> object:
        return default


def joined_only(mod: ir.Module, kernel: str = "k") -> KernelAnalysis:
    run = SymbolicExecutor(mod, mod.function(kernel))
    run.memo = _Forgetful()
    return run.run()


def test_a_diamond_of_loads_joins_into_one_flow() -> None:
    """Both sides load: the joined flow keeps both loads, each guarded by its
    side's condition, drops the branch from its path condition, and stores
    the value of whichever load ran."""
    result = analyze_kernel(module(DIAMOND_LOADS), "k")
    assert result.complete and result.stats.joined == 1
    ends = sorted(f.end for f in result.flows)
    assert ends == ["merged", "merged", "ret"]
    (joined,) = [f for f in result.flows if f.end == "ret"]
    assert all(result.flows[f.merged_into].end == "ret" for f in result.flows if f.end == "merged")
    assert sorted(joined.joined_from) == sorted(f.id for f in result.flows if f.end == "merged")
    assert f"flow {joined.id} [ret, joined from flows" in result.format()
    assert joined.condition == ()
    side_loads = [a for a in joined.loads if a.space == ".global" and a.guard is not None]
    assert len(side_loads) == 2
    a, b = (x.guard for x in side_loads)
    assert a is not None and b is not None
    assert z3.Solver().check(z3.And(a, b)) == z3.unsat  # the sides exclude each other
    (store,) = joined.stores
    assert store.value is not None
    for access in side_loads:
        assert access.value is not None and access.guard is not None
        solver = z3.Solver()
        solver.add(*result.assumptions, access.guard, store.value != access.value + 1)
        assert solver.check() == z3.unsat


def test_a_side_that_stores_joins_with_its_store_guarded() -> None:
    """The store stays in the joined trace under its side's condition, and
    the load after the join reads the stored value exactly when that side
    ran, the memory before otherwise."""
    result = analyze_kernel(module(TRIANGLE_STORE), "k")
    assert result.complete and result.stats.joined == 1
    (joined,) = [f for f in result.flows if f.end == "ret"]
    side_store, final_store = joined.stores
    assert side_store.guard is not None and final_store.guard is None
    load = next(a for a in joined.loads if a.index > side_store.index)
    assert load.value is not None and final_store.value is not None
    r2 = next(a for a in joined.loads if a.space == ".global").value
    assert r2 is not None
    assert side_store.address is not None
    memory = z3.Function("load_global_32", z3.BitVecSort(64), z3.BitVecSort(32))  # memory at entry
    for guard, expected in ((side_store.guard, r2), (z3.Not(side_store.guard), memory(side_store.address))):
        solver = z3.Solver()
        solver.add(*result.assumptions, guard, load.value != expected)
        assert solver.check() == z3.unsat
    # The side's store is 4 bytes past the first load: it overwrites no load.
    assert joined.trace.index(side_store) not in joined.may_alias_store.values()


def test_a_side_with_an_atomic_joins_with_it_guarded() -> None:
    """The atomic's old value reaches the store only on its side."""
    result = analyze_kernel(module(TRIANGLE_ATOMIC), "k")
    assert result.complete and result.stats.joined == 1
    (joined,) = [f for f in result.flows if f.end == "ret"]
    (atomic,) = [a for a in joined.trace if a.kind == "atom"]
    (store,) = [a for a in joined.stores if a.guard is None]
    assert atomic.guard is not None and atomic.value is not None and store.value is not None
    for guard, expected in ((atomic.guard, atomic.value + 1), (z3.Not(atomic.guard), z3.BitVecVal(8, 32))):
        solver = z3.Solver()
        solver.add(*result.assumptions, guard, store.value != expected)
        assert solver.check() == z3.unsat


def test_a_side_with_a_barrier_keeps_its_own_flow() -> None:
    result = analyze_kernel(module(TRIANGLE_BARRIER), "k")
    assert result.complete and result.stats.joined == 0


def test_branches_in_a_row_make_flows_in_proportion() -> None:
    """Six branches: 2^6 paths; joined, a side and a join per branch, and
    the first flow."""
    result = analyze_kernel(module(SEQUENCE), "k")
    assert result.complete and result.stats.joined == 6
    assert len(result.flows) == 2 * 6 + 1
    assert [f.end for f in result.flows].count("ret") == 1


def _effective_stores(flow: Flow, facts: list[z3.BoolRef]) -> list[Access]:
    """The stores of ``flow`` that run under ``facts``: a joined flow keeps
    each side's stores under that side's condition."""
    kept = []
    for store in flow.stores:
        if store.guard is None:
            kept.append(store)
            continue
        runs, skips = z3.Solver(), z3.Solver()
        runs.add(*facts, z3.Not(store.guard))
        skips.add(*facts, store.guard)
        if runs.check() == z3.unsat:
            kept.append(store)
        else:
            assert skips.check() == z3.unsat, "a store whose side the path does not decide"
    return kept


def _equivalent(separate: KernelAnalysis, joined: KernelAnalysis) -> None:
    """Every path of ``separate`` is covered by the joined flows that end,
    and wherever a path and a joined flow both hold, they stored the same
    values at the same addresses."""
    facts = [*separate.assumptions, *joined.assumptions]
    ended = [f for f in joined.flows if f.end == "ret"]
    for path in separate.flows:
        if path.end == "loop":
            continue  # back at a loop header: one abstract iteration, the same in both
        assert path.end == "ret"
        solver = z3.Solver()
        solver.add(*facts, *path.condition, z3.Not(z3.Or(*(z3.And(*f.condition) for f in ended))))
        assert solver.check() == z3.unsat, "a path no joined flow covers"
        for flow in ended:
            both = [*facts, *path.condition, *flow.condition]
            solver = z3.Solver()
            solver.add(*both)
            if solver.check() == z3.unsat:
                continue
            stores = _effective_stores(flow, both)
            assert len(path.stores) == len(stores)
            for mine, theirs in zip(path.stores, stores, strict=True):
                assert mine.value is not None and theirs.value is not None
                solver = z3.Solver()
                solver.add(*both, z3.Or(mine.value != theirs.value, mine.address != theirs.address))
                assert solver.check() == z3.unsat


def test_a_flow_that_ran_a_loop_joins_the_one_that_skipped_it() -> None:
    """``if (n) loop; store``: the flow leaving the loop (its sum a value of
    the iteration symbol) and the flow that skipped it meet after the loop
    and store ``If(ran, sum, 0)``: what each path stored."""
    mod = parse_ptx(LOOP, "loop.ptx")
    joined = joined_only(mod, "strided")
    assert joined.complete and joined.stats.joined == 1
    (ended,) = [f for f in joined.flows if f.end == "ret"]
    (store,) = ended.stores
    assert store.value is not None and "iter_LOOP" in str(store.value)
    _equivalent(paths(mod, "strided"), joined)


@pytest.mark.parametrize("seed", range(16))
def test_joined_flows_store_what_every_path_stored(seed: int) -> None:
    """Random triangles and diamonds, some with GCC's out-of-line sides and
    early exits: the joins change how the paths are grouped, never what
    they compute."""
    rng = random.Random(seed)
    tail: list[str] | None = [] if seed % 2 else None
    mod = module(random_body(rng, rng.randint(2, 5), tail), "\n".join(tail or []))
    joined = joined_only(mod)
    separate = paths(mod)
    assert joined.complete and separate.complete
    assert joined.stats.joined >= 1
    _equivalent(separate, joined)


def test_a_joined_flows_memory_events_are_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The side's store is in the joined memory guarded and under a new id:
    the memo keys memory states by their last event's id, and the side's
    flow held the same store unguarded."""
    seen: list[tuple[list[int], list[int], list[bool]]] = []
    join = SymbolicExecutor._join

    def recording(self, a, b, target):  # type: ignore[no-untyped-def]
        joined = join(self, a, b, target)
        if joined is not None:
            sides = [e.id for e in (*a.mem, *b.mem)]
            seen.append((sides, [e.id for e in joined.mem], [e.guard is not None for e in joined.mem]))
        return joined

    monkeypatch.setattr(SymbolicExecutor, "_join", recording)
    result = analyze_kernel(module(TRIANGLE_STORE), "k")
    assert result.stats.joined == 1
    ((sides, ids, guarded),) = seen
    assert ids and guarded[-1] and ids[-1] not in sides


READ_BEFORE_WRITE = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry join_widths(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;

    mov.u32 %r1, %tid.x;
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra $W;
    ld.shared.u32 %r2, [%r3];
    bra.uni $J;
$W:
    WRITE
    mov.u32 %r2, 1;
$J:
    add.s32 %r2, %r2, READ;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def test_a_register_read_first_as_a_wider_address_joins_its_declared_width() -> None:
    """A ``.b32`` register read before any write as a shared address (64
    bits wide there) on one side, and written on the other: its unknown
    value has the register's 32 bits, so the sides join (found by fuzzing:
    the join asked Z3 for an ``If`` of a 64- and a 32-bit value, and trace
    ended in an internal error on PTX that ptxas assembles)."""
    text = READ_BEFORE_WRITE.replace("WRITE", "mov.u32 %r3, 7;").replace("READ", "%r3")
    result = analyze_kernel(parse_ptx(text), "join_widths")
    assert result.complete
    (store,) = [a for a in result.flows[-1].trace if a.kind == "st"]
    thread0 = z3.simplify(z3.substitute(store.value, (z3.BitVec("%tid.x", 32), z3.BitVecVal(0, 32))))
    assert thread0.eq(z3.BitVecVal(8, 32))  # 7 + 1 on the side that wrote
    assert "undef.%r3#0" in str(store.value)


def test_sides_holding_a_register_at_two_widths_stay_apart() -> None:
    """PTX that writes a ``.b32`` register with a 64-bit value (which ptxas
    refuses): the sides are not joined, and the analysis ends normally."""
    text = READ_BEFORE_WRITE.replace("WRITE", "mov.b64 %r3, %rd1;").replace("READ", "%r3")
    result = analyze_kernel(parse_ptx(text), "join_widths")
    assert result.complete
    assert not any(flow.end == "merged" for flow in result.flows)
