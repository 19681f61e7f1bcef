"""The symbolic executor: traces, flows, loops, memory and budgets.

Hand-written PTX pins down one behaviour per test; nvcc's output of the small
stencils in ``tests/kernels/sym_stencils.cu`` checks the same properties on
what a real compiler prints (skipped without nvcc). Address relations are
checked with the solver, not by comparing printed text: "these two loads are
4 bytes apart" means ``addr_j - addr_i == 4`` holds for every thread.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import z3
from click.testing import CliRunner

from ptxasw import ir
from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import Access, Budget, KernelAnalysis, analyze_kernel, analyze_module
from ptxasw.parser.frontend import parse_ptx

pytest.importorskip("ptxasw.emulator.semantics.instructions")

KERNELS = Path(__file__).resolve().parent / "kernels"

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"


def module(body: str) -> ir.Module:
    return parse_ptx(HEADER + body, "<test>")


def analyze(body: str, kernel: str, budget: Budget | None = None) -> KernelAnalysis:
    return analyze_kernel(module(body), kernel, budget)


def global_loads(flow_trace: list[Access]) -> list[Access]:
    return [a for a in flow_trace if a.kind == "ld" and a.space == ".global"]


def always(formula: z3.BoolRef, *facts: z3.BoolRef) -> bool:
    """``formula`` holds for every value of its symbols (given ``facts``)."""
    solver = z3.Solver()
    solver.set("timeout", 5000)
    solver.add(*facts, z3.Not(formula))
    return solver.check() == z3.unsat


def contains(expr: z3.ExprRef, sub: z3.ExprRef) -> bool:
    """Whether ``sub`` is a subterm of ``expr``."""
    stack, seen = [expr], set()
    while stack:
        node = stack.pop()
        if node.eq(sub):
            return True
        if node.get_id() not in seen:
            seen.add(node.get_id())
            stack.extend(node.children())
    return False


def distance(a: Access, b: Access) -> int | None:
    """The constant ``addr(b) - addr(a)``, if it is one for every thread."""
    assert a.address is not None and b.address is not None
    diff = z3.simplify(b.address - a.address)
    if not z3.is_bv_value(diff):
        return None
    value = diff.as_long()
    return value - (1 << diff.size()) if value >> (diff.size() - 1) else value


# --------------------------------------------------------------------------
# Hand-written kernels

STENCIL_1D = """
.visible .entry stencil3(.param .u64 in, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<6>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.s32 %rd4, %r5, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5+-4];
    ld.global.f32 %f2, [%rd5];
    ld.global.f32 %f3, [%rd5+4];
    add.f32 %f4, %f1, %f2;
    add.f32 %f5, %f4, %f3;
    cvta.to.global.u64 %rd6, %rd2;
    add.s64 %rd7, %rd6, %rd4;
    st.global.f32 [%rd7], %f5;
    ret;
}
"""


def test_1d_stencil_loads_differ_by_constants() -> None:
    result = analyze(STENCIL_1D, "stencil3")
    assert result.complete and len(result.flows) == 1
    flow = result.flows[0]
    loads = global_loads(flow.trace)
    assert len(loads) == 3
    for i, a in enumerate(loads):
        for j, b in enumerate(loads):
            assert a.address is not None and b.address is not None
            assert always(b.address - a.address == 4 * (j - i)), (i, j)
    # What a shuffle detector asks: is load j of thread t load i of thread t+(j-i)?
    tid = z3.BitVec("%tid.x", 32)
    a0, a2 = loads[0].address, loads[2].address
    assert a0 is not None and a2 is not None
    shifted = z3.substitute(a0, (tid, tid + 2))
    ctaid, ntid = z3.BitVec("%ctaid.x", 32), z3.BitVec("%ntid.x", 32)
    wide = z3.ZeroExt(32, ctaid) * z3.ZeroExt(32, ntid) + z3.ZeroExt(32, tid) + 2
    # ... for a neighbour in the block, and an index without signed overflow
    # (C's undefined behaviour, which nvcc's sign extension relies on).
    facts = [*result.assumptions, z3.ULT(tid + 2, ntid), z3.ULT(wide, 1 << 31)]
    assert always(shifted == a2, *facts)
    # Addresses read like the paper's Listing 5: parameter loads and %tid.x.
    text = result.show(loads[0].address)  # type: ignore[arg-type]
    assert "load(param_in)" in text and "%tid.x" in text
    stores = flow.stores
    assert len(stores) == 1 and stores[0].space == ".global"
    # The stored value is the float sum of the three loaded values.
    assert stores[0].value is not None
    assert all(a.value is not None and contains(stores[0].value, a.value) for a in loads)
    assert [a.source for a in flow.trace] == [None] * len(flow.trace)
    assert flow.trace[3].inst.opcode == "ld" and flow.trace[3].inst.loc.line > 0


DIVERGENT = """
.visible .entry diverge(.param .u64 in, .param .u64 out, .param .u32 k)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [k];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra TAKEN;
    ld.global.u32 %r3, [%rd4+4];
    bra.uni JOIN;
TAKEN:
    ld.global.u32 %r3, [%rd4];
JOIN:
    st.global.u32 [%rd5], %r3;
    ret;
}
"""


def test_divergent_branch_yields_two_flows(monkeypatch: pytest.MonkeyPatch) -> None:
    """As branches (if-conversion off), the two sides are two flows."""
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    result = analyze(DIVERGENT, "diverge")
    assert result.complete
    assert len(result.flows) == 2
    assert {f.end for f in result.flows} == {"ret"}
    tid = z3.BitVec("%tid.x", 32)
    k = z3.BitVec("param_k", 32)
    conditions = [z3.And(*f.condition) for f in result.flows]
    # One flow assumes tid.x < k, the other tid.x >= k.
    assert any(always(c == z3.ULT(tid, k)) for c in conditions)
    assert any(always(c == z3.UGE(tid, k)) for c in conditions)
    # Each flow has its own load, 4 bytes apart, and stores what it loaded.
    offsets = []
    for flow in result.flows:
        (load,) = global_loads(flow.trace)
        (store,) = flow.stores
        assert store.value is not None and load.value is not None
        assert store.value.eq(load.value)
        offsets.append(load)
    assert abs(distance(offsets[0], offsets[1]) or 0) == 4
    # The forked flow shares the prefix: its parent and fork point are recorded.
    child = result.flows[1]
    assert child.parent == 0 and 0 < child.fork_index <= len(child.trace)


def test_divergent_loads_if_converted_run_guarded_on_one_flow() -> None:
    """If-converted (the default), both loads run on one flow, each guarded
    by its side's condition, and the store takes the one that ran: [in+4*tid]
    where tid < k, [in+4*tid+4] elsewhere."""
    result = analyze(DIVERGENT, "diverge")
    (flow,) = result.flows
    first, second = global_loads(flow.trace)
    near, far = (first, second) if distance(first, second) == 4 else (second, first)
    assert distance(near, far) == 4
    assert near.guard is not None and far.guard is not None
    (store,) = flow.stores
    assert store.value is not None and near.value is not None and far.value is not None
    tid, k = z3.BitVec("%tid.x", 32), z3.BitVec("param_k", 32)
    assert always(near.guard == z3.ULT(tid, k)) and always(far.guard == z3.UGE(tid, k))
    assert always(z3.Implies(z3.ULT(tid, k), store.value == near.value))
    assert always(z3.Implies(z3.UGE(tid, k), store.value == far.value))


IMPOSSIBLE_BRANCH = """
.visible .entry pruned(.param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %laneid;
    setp.gt.u32 %p1, %r1, 1024;
    @%p1 bra NEVER;
    setp.ge.u32 %p2, %r2, 32;
    @%p2 bra NEVER;
    st.global.u32 [%rd1], %r1;
    ret;
NEVER:
    st.global.u32 [%rd1], 7;
    ret;
}
"""


def test_special_register_ranges_prune_impossible_paths() -> None:
    result = analyze(IMPOSSIBLE_BRANCH, "pruned")
    assert result.complete
    assert len(result.flows) == 1
    assert result.stats.pruned == 2
    (store,) = result.flows[0].stores
    assert store.value is not None and "%tid.x" in str(store.value)


MERGE = """
.visible .entry merge(.param .u64 out, .param .u32 k)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    mov.u32 %r2, %tid.x;
    mov.u32 %r9, 0;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra SKIP;
    add.u32 %r9, %r9, 1;
SKIP:
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def test_flows_reaching_a_block_in_the_same_state_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memoisation (paper, 4.2): after the diamond only dead registers differ.
    (If-converted, the diamond would not fork at all: the test keeps the branch.)"""
    from ptxasw.emulator.symbolic import executor

    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    result = analyze(MERGE, "merge")
    assert result.complete and result.stats.merged == 1
    ends = sorted(f.end for f in result.flows)
    assert ends == ["merged", "ret"]
    merged = next(f for f in result.flows if f.end == "merged")
    assert merged.merged_into is not None and result.flows[merged.merged_into].end == "ret"
    assert not merged.stores  # its store is the other flow's


MEMO_THEN_BRANCH = """
.visible .entry memo_branch(.param .u64 out, .param .u32 k)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    mov.u32 %r2, %tid.x;
    mov.u32 %r9, 0;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra SKIP;
    add.u32 %r9, %r9, 1;
SKIP:
    setp.lt.u32 %p2, %r2, %r1;
    @%p2 bra SMALL;
    st.global.u32 [%rd1], 1;
    ret;
SMALL:
    st.global.u32 [%rd1], 2;
    ret;
}
"""


def test_memoisation_never_drops_a_path_the_continuation_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the diamond the two flows are in the same state, but the branch
    that follows is decided by the condition that forked them: the flow
    where %tid.x >= k stores 1, the one where it is below stores 2. A memo
    that stopped the second flow there and kept the first's continuation
    lost the store of 2 (the trace of a TMA kernel analysed only thread 0
    so). Only a continuation with no branch left, or one the stopped flow's
    condition implies, is shared."""
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    result = analyze(MEMO_THEN_BRANCH, "memo_branch")
    assert result.complete
    stored = {str(a.value) for f in result.flows for a in f.stores}
    assert stored == {"1", "2"}
    assert result.stats.merged == 0


LOOP = """
.visible .entry strided(.param .u64 in, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<6>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r3, 0;
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra DONE;
LOOP:
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd4+4];
    add.f32 %f1, %f1, %f2;
    add.f32 %f1, %f1, %f3;
    add.s64 %rd4, %rd4, 512;
    add.s32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r1;
    @%p2 bra LOOP;
DONE:
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f1;
    ret;
}
"""


def test_loop_induction_variable_shows_its_stride() -> None:
    result = analyze(LOOP, "strided")
    assert result.complete
    in_loop = [a for f in result.flows for a in global_loads(f.trace) if a.loops]
    assert in_loop, "the loop body's loads are traced"
    first = in_loop[0]
    (counter,) = first.loops
    assert counter == "iter_LOOP"  # named after the loop: a flow enters it once
    iteration = z3.BitVec(counter, 64)
    assert first.address is not None
    # One more iteration moves the address by the constant stride.
    step = z3.substitute(first.address, (iteration, iteration + 1)) - first.address
    assert always(step == 512)
    # The two loads of one iteration stay 4 bytes apart.
    second = next(a for a in in_loop if a.index == first.index + 1)
    assert distance(first, second) == 4
    # Flows end at the back edge ("loop") or leave the loop, where the flow
    # that left it and the one that skipped it join and return as one.
    ends = sorted(f.end for f in result.flows)
    assert ends == ["loop", "merged", "merged", "ret"]
    assert result.stats.loop_entries == 1
    # After the loop the counter is init + iter: its exit test mentions the symbol.
    exits = [f for f in result.flows if f.end == "ret" and any(a.loops for a in f.trace)]
    assert exits and any(counter in str(c) for c in exits[0].condition)


STORE_LOAD = """
.visible .entry forward(.param .u64 p, .param .u64 q)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [q];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    add.s32 %r2, %r1, 17;
    st.global.u32 [%rd4], %r2;
    ld.global.u32 %r3, [%rd4];
    st.global.u32 [%rd4+4], %r3;
    ld.global.u32 %r4, [%rd4+4];
    mov.b64 %rd5, {%r2, %r4};
    st.global.u64 [%rd4+16], %rd5;
    ld.global.u32 %r5, [%rd4+20];
    ld.global.u32 %r6, [%rd2];
    st.global.u32 [%rd4+8], %r6;
    ret;
}
"""


def test_load_after_store_to_the_same_address_returns_the_stored_value() -> None:
    result = analyze(STORE_LOAD, "forward")
    (flow,) = result.flows
    tid = z3.BitVec("%tid.x", 32)
    loads = global_loads(flow.trace)
    stored = z3.simplify(tid + 17)
    # ld [p+8t] after st [p+8t] <- t+17
    assert loads[0].value is not None and always(loads[0].value == stored)
    # ... through a second store at +4, and the high half of a 64-bit store.
    assert loads[1].value is not None and always(loads[1].value == stored)
    assert loads[2].value is not None and always(loads[2].value == stored)
    # A load of an unrelated pointer is an uninterpreted memory read.
    assert loads[3].value is not None and "load_global_32" in str(loads[3].value)


INVALIDATE = """
.visible .entry alias(.param .u64 p, .param .u64 q)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [q];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    ld.global.u32 %r3, [%rd4+8];
    st.global.u32 [%rd4+4], %r1;
    ld.global.u32 %r4, [%rd4];
    st.global.u32 [%rd5], %r1;
    ld.global.u32 %r5, [%rd4];
    ld.global.u32 %r6, [%rd4+8];
    ld.global.nc.u32 %r7, [%rd4+12];
    st.global.u32 [%rd5+4], %r1;
    ret;
}
"""


def test_a_store_that_may_alias_invalidates_earlier_loads() -> None:
    result = analyze(INVALIDATE, "alias")
    (flow,) = result.flows
    trace = flow.trace
    idx = {(a.kind, a.inst.loc.line): i for i, a in enumerate(trace)}
    loads = [i for i, a in enumerate(trace) if a.kind == "ld" and a.space == ".global"]
    stores = [i for i, a in enumerate(trace) if a.kind == "st"]
    ld_p0, ld_p8, ld_p0_again, ld_p0_third, ld_p8_again, ld_nc = loads
    st_p4, st_q, _ = stores
    assert idx  # the trace is indexable by instruction line
    # st [p+4] provably misses [p] and [p+8]: nothing invalidated, reload equal.
    assert ld_p0 not in flow.may_alias_store or flow.may_alias_store[ld_p0] != st_p4
    assert trace[ld_p0_again].value is not None and trace[ld_p0].value is not None
    assert trace[ld_p0_again].value.eq(trace[ld_p0].value)
    # st [q] may alias everything of p: earlier loads are invalidated ...
    assert flow.may_alias_store[ld_p0] == st_q
    assert flow.may_alias_store[ld_p8] == st_q
    assert flow.may_alias_store[ld_p0_again] == st_q
    # ... and a reload is a new unknown, not provably equal to the old value.
    old, new = trace[ld_p0].value, trace[ld_p0_third].value
    assert old is not None and new is not None
    assert not always(old == new)
    assert trace[ld_p0_third].version == st_q + 0 or trace[ld_p0_third].version > 0
    assert not always(trace[ld_p8].value == trace[ld_p8_again].value)  # type: ignore[operator]
    # Read-only (.nc) memory is never invalidated by a store.
    assert trace[ld_nc].readonly and ld_nc not in flow.may_alias_store


def solver_questions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The formulas the analysis asks its solver about (filled as it runs)."""
    from ptxasw.emulator.symbolic import executor

    asked: list[str] = []
    check = executor._Solver.check_rewritten

    def spy(self: executor._Solver, pc: object, extra: list[z3.BoolRef], form: object) -> bool | None:
        asked.extend(str(e) for e in extra)
        return check(self, pc, extra, form)  # type: ignore[arg-type]

    monkeypatch.setattr(executor._Solver, "check_rewritten", spy)
    return asked


LOCAL_FRAME = """
.visible .entry frame(.param .u64 p, .param .u32 n, .param .u32 m)
{
    .local .align 8 .b8 %frame_ar[800];
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<20>;
    .reg .f64 %fd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r9, [n];
    ld.param.u32 %r8, [m];
    cvta.local.u64 %rd2, %frame_ar;
    mul.wide.u32 %rd7, %r8, 8;
    add.s64 %rd8, %rd2, %rd7;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
$L1:
    mul.wide.u32 %rd3, %r2, 8;
    add.s64 %rd4, %rd2, %rd3;
    ld.f64 %fd1, [%rd4+400];
    ld.f64 %fd2, [%rd8];
    add.f64 %fd3, %fd1, %fd2;
    st.f64 [%rd4+8], %fd3;
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r9;
    @%p1 bra $L1;
    mul.wide.u32 %rd5, %r1, 8;
    add.s64 %rd6, %rd1, %rd5;
    st.global.f64 [%rd6], %fd3;
    ret;
}
"""


def test_thread_private_loads_are_invalidated_without_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load of the thread's own stack (GCC's ``%frame_ar`` through a generic
    address) is never a shuffle source: a store the cheap rules cannot place
    is taken to overwrite it (sound), with no solver call. ``[frame + 8m]``
    against the store to ``[frame + 8i + 8]`` would need one (``m`` is a
    parameter): marked; ``[frame + 8i + 400]`` is 392 bytes off the store in
    the same iteration: disjoint, no solver."""
    asked = solver_questions(monkeypatch)
    result = analyze(LOCAL_FRAME, "frame")
    assert result.status == "complete"
    assert asked and not any("frame_ar" in q for q in asked)  # the loop exit is asked, no address
    for flow in result.flows:
        trace = flow.trace
        stores = [i for i, a in enumerate(trace) if a.kind == "st" and a.space == "generic"]
        loads = [i for i, a in enumerate(trace) if a.kind == "ld" and a.space == "generic"]
        near, far = loads  # [frame + 8i + 400], [frame + 8m]
        assert flow.may_alias_store.get(far) == stores[0]
        assert flow.may_alias_store.get(near) != stores[0]


def test_a_store_the_semantics_cannot_emulate_makes_the_kernel_partial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An internal error while emulating a store must not drop the write
    silently (a later load would look unchanged and could be shuffled): the
    memory is clobbered and the kernel is partial, naming the store."""
    from ptxasw.emulator.symbolic.executor import SymbolicExecutor

    def broken(self: SymbolicExecutor, *args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(SymbolicExecutor, "store", broken)
    result = analyze(INVALIDATE, "alias")
    assert result.status == "partial"
    assert result.reason is not None and "not emulated" in result.reason and "boom" in result.reason
    (flow,) = result.flows
    loads = [a for a in flow.trace if a.kind == "ld" and a.space == ".global"]
    first, reload = loads[0], loads[2]  # [p] before and after st [p+4]
    assert first.value is not None and reload.value is not None
    assert not always(first.value == reload.value)


OMP_QUERIES = """
.extern .func (.param .b32 %value_out) omp_get_num_teams;
.extern .func (.param .b32 %value_out) omp_get_team_num;
.visible .entry teams(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    {
        .param .b32 %value_in;
        call (%value_in), omp_get_num_teams;
        ld.param.u32 %r1, [%value_in];
    }
    {
        .param .b32 %value_in;
        call (%value_in), omp_get_team_num;
        ld.param.u32 %r2, [%value_in];
    }
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
$DONE:
    ret;
}
"""


def test_runtime_calls_through_one_return_slot_give_their_own_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """GCC reads ``omp_get_num_teams()`` and ``omp_get_team_num()`` through
    ``.param %value_in`` slots of one name: each call's result is a value of
    its own (they were one, so ``team >= teams`` always held and the store
    was never reached), in the OpenMP ranges (teams >= 1), and a team
    number is below the team count: the ``team >= teams`` side is pruned
    (kept a branch here: if-converted, the store would run guarded)."""
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    result = analyze(OMP_QUERIES, "teams")
    assert len(result.flows) == 1 and result.stats.pruned == 1
    stores = [a for flow in result.flows for a in flow.trace if a.kind == "st"]
    assert stores, "the store under team < teams is reachable"
    (store,) = {id(a.inst): a for a in stores}.values()
    assert store.value is not None and "omp_get_num_teams" in str(store.value)
    teams = store.value
    assert always(z3.UGE(teams, 1), *result.assumptions)


FP_BRANCH = """
.visible .entry fp(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    setp.lt.f32 %p1, %f1, 0f00000000;
    @%p1 bra $NEG;
    st.global.f32 [%rd3], %f1;
    ret;
$NEG:
    neg.f32 %f2, %f1;
    st.global.f32 [%rd3], %f2;
    ret;
}
"""


def test_a_branch_on_a_free_comparison_forks_without_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """``setp.lt.f32`` of a loaded value is an uninterpreted predicate no
    earlier condition names: both sides are feasible, no solver needed."""
    asked = solver_questions(monkeypatch)
    result = analyze(FP_BRANCH, "fp")
    assert result.status == "complete" and len(result.flows) == 2
    assert not any("setp" in q for q in asked)


def test_tiny_time_budget_gives_a_partial_analysis() -> None:
    result = analyze(LOOP, "strided", Budget(time_s=1e-6))
    assert result.status == "partial"
    assert result.reason is not None and "time" in result.reason
    assert result.flows and all(f.end != "running" for f in result.flows)


def test_path_budget_gives_a_partial_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "IF_CONVERT", False)  # the two sides as two flows
    result = analyze(DIVERGENT, "diverge", Budget(max_paths=1))
    assert result.status == "partial"
    assert result.reason is not None and "path" in result.reason
    assert len(result.flows) == 1 and result.stats.dropped == 1


def test_module_analysis_and_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "IF_CONVERT", False)  # "diverge" forks
    results = analyze_module(module(STENCIL_1D + DIVERGENT))
    assert [r.kernel for r in results] == ["stencil3", "diverge"]
    doc = json.loads(json.dumps([r.to_json() for r in results]))
    first = doc[0]
    assert first["status"] == "complete" and first["loads"] == 3 and first["stores"] == 1
    access = next(a for a in first["flows"][0]["accesses"] if a["space"] == ".global")
    assert access["address"].startswith("-0x4 + ") and "(bvadd" in access["address_smt"]
    assert access["instruction"].startswith("ld.global.f32")
    assert set(first["stats"]) >= {"paths", "solver_calls", "seconds"}
    text = results[1].format()
    assert "flow 1" in text and "forked from flow 0" in text and "LD.global.32" in text


# --------------------------------------------------------------------------
# The command line


def test_trace_command_text_and_json(tmp_path: Path) -> None:
    from ptxasw.cli.trace import trace_command

    ptx = tmp_path / "k.ptx"
    ptx.write_text(HEADER + STENCIL_1D + DIVERGENT)
    runner = CliRunner()
    out = runner.invoke(trace_command, [str(ptx), "--kernel", "stencil3", "--space", "global"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("kernel stencil3: complete")
    assert out.output.count("LD.global.32") == 3 and "LD.param" not in out.output
    out = runner.invoke(trace_command, [str(ptx), "--json", "--time-budget", "5"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [k["kernel"] for k in doc["kernels"]] == ["stencil3", "diverge"]


def test_trace_command_errors_are_one_line(tmp_path: Path) -> None:
    from ptxasw.cli.trace import trace_command

    bad = tmp_path / "bad.ptx"
    bad.write_text(HEADER + ".visible .entry k( {\n")
    runner = CliRunner()
    for args in ([str(bad)], [str(tmp_path / "missing.ptx")]):
        out = runner.invoke(trace_command, args)
        assert out.exit_code == 1
        assert out.output.count("\n") == 1 and out.output.startswith("ptxasw: error: ")
    good = tmp_path / "good.ptx"
    good.write_text(HEADER + STENCIL_1D)
    out = runner.invoke(trace_command, [str(good), "--kernel", "nope"])
    assert out.exit_code == 1 and "no kernel named nope" in out.output


# --------------------------------------------------------------------------
# nvcc output


@pytest.fixture(scope="module")
def nvcc_module(tmp_path_factory: pytest.TempPathFactory) -> ir.Module:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found on PATH")
    out = tmp_path_factory.mktemp("sym") / "sym_stencils.ptx"
    subprocess.run(
        [
            "nvcc",
            "--ptx",
            "-O3",
            "-arch=sm_80",
            "-lineinfo",
            str(KERNELS / "sym_stencils.cu"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return parse_ptx(out.read_text(), str(out))


def test_nvcc_stencil_loads_are_neighbours(nvcc_module: ir.Module) -> None:
    result = analyze_kernel(nvcc_module, "sym_stencil1d")
    assert result.complete
    flows = [f for f in result.flows if global_loads(f.trace)]
    assert len(flows) == 1
    loads = global_loads(flows[0].trace)
    assert len(loads) == 3
    dist = sorted(distance(loads[0], b) for b in loads)  # type: ignore[type-var]
    assert dist in ([-4, 0, 4], [0, 4, 8], [-8, -4, 0])
    # The two ends of the trace name the source line of the stencil.
    assert all(a.source is not None and a.source.startswith("sym_stencils.cu:") for a in loads)
    # The out-of-range flow loads nothing from global memory.
    assert len(result.flows) == 2


def test_nvcc_divergent_kernel_has_two_flows(nvcc_module: ir.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    result = analyze_kernel(nvcc_module, "sym_divergent")
    assert result.complete
    with_loads = [f for f in result.flows if global_loads(f.trace)]
    assert len(with_loads) == 2
    a, b = (global_loads(f.trace)[0] for f in with_loads)
    assert abs(distance(a, b) or 0) == 4


def test_nvcc_divergent_kernel_if_converted_is_one_flow(nvcc_module: ir.Module) -> None:
    result = analyze_kernel(nvcc_module, "sym_divergent")
    assert result.complete
    (flow,) = [f for f in result.flows if global_loads(f.trace)]
    a, b = global_loads(flow.trace)
    assert abs(distance(a, b) or 0) == 4
    assert a.guard is not None and b.guard is not None


def test_nvcc_loop_has_a_constant_stride(nvcc_module: ir.Module) -> None:
    result = analyze_kernel(nvcc_module, "sym_colsum")
    assert result.complete
    in_loop = [a for f in result.flows for a in global_loads(f.trace) if a.loops]
    assert len({a.index for a in in_loop}) == 2
    load = in_loop[0]
    iteration = z3.BitVec(load.loops[-1], 64)
    assert load.address is not None
    step = z3.simplify(z3.substitute(load.address, (iteration, iteration + 1)) - load.address)
    assert z3.is_bv_value(step) and step.as_long() == 1024
