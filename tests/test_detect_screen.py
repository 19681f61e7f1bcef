"""Detection's first analysis merges flows; the proof's flows are taken path by path.

A kernel with k forward branches around global loads has 2^k paths. Taken
one by one they exhaust the analysis budget (CUB 3.0's scan and radix-sort
kernels did: 10 s each, every load "analysis budget"); merged where they
meet they are a handful of flows. Detection decides on the merged flows,
and where that leaves a load to rewrite, the proof needs flows that pair
with the rewrite's path by path: the kernel is analysed again without
merging (unless the merged run merged nothing).
"""

from __future__ import annotations

import pytest

from ptxasw.emulator.symbolic.executor import Budget, SymbolicExecutor
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options, Status, detect_kernel
from ptxasw.synth.prove import PROVED
from ptxasw.synth.synthesize import plan_kernel

_HEADER = """.version 8.0
.target sm_80
.address_size 64
"""


def _branchy(diamonds: int) -> str:
    """``diamonds`` branches in a row, each around a load through a pointer
    the thread loaded (no neighbour for any of them)."""
    body = []
    for i in range(diamonds):
        body.append(
            f"""	and.b32 	%r{10 + i}, %r2, {1 << i};
	setp.eq.s32 	%p{i + 1}, %r{10 + i}, 0;
	@%p{i + 1} bra 	$L__skip{i};
	ld.global.u32 	%r{30 + i}, [%rd11+{4 * i}];
	add.s32 	%r3, %r3, %r{30 + i};
$L__skip{i}:"""
        )
    return (
        _HEADER
        + """
.visible .entry branchy(.param .u64 branchy_flags, .param .u64 branchy_ptrs, .param .u64 branchy_out)
{
	.reg .pred 	%p<16>;
	.reg .b32 	%r<64>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [branchy_flags];
	ld.param.u64 	%rd2, [branchy_ptrs];
	ld.param.u64 	%rd3, [branchy_out];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd8, %rd4, %rd7;
	ld.global.u32 	%r2, [%rd8];
	mul.wide.u32 	%rd9, %r1, 8;
	add.s64 	%rd10, %rd5, %rd9;
	ld.global.u64 	%rd11, [%rd10];
	mov.u32 	%r3, 0;
"""
        + "\n".join(body)
        + """
	add.s64 	%rd12, %rd6, %rd7;
	st.global.u32 	[%rd12], %r3;
	ret;
}
"""
    )


# One branch around a load, then x[t] and x[t + 1]: the second is a shuffle.
JOINED = (
    _HEADER
    + """
.visible .entry joined(.param .u64 joined_a, .param .u64 joined_flags, .param .u64 joined_out)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .f32 	%f<8>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [joined_a];
	ld.param.u64 	%rd2, [joined_flags];
	ld.param.u64 	%rd3, [joined_out];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd8, %rd5, %rd7;
	ld.global.u32 	%r2, [%rd8];
	mov.f32 	%f1, 0f00000000;
	setp.eq.s32 	%p1, %r2, 0;
	@%p1 bra 	$L__join;
	ld.global.f32 	%f1, [%rd8+4096];
$L__join:
	add.s64 	%rd9, %rd4, %rd7;
	ld.global.f32 	%f2, [%rd9];
	ld.global.f32 	%f3, [%rd9+4];
	add.f32 	%f4, %f2, %f3;
	add.f32 	%f5, %f4, %f1;
	add.s64 	%rd10, %rd6, %rd7;
	st.global.f32 	[%rd10], %f5;
	ret;
}
"""
)


def test_branches_in_a_row_are_decided_within_the_path_budget() -> None:
    """2^10 paths against a budget of 64 flows: path by path the analysis
    stops early; merged it completes, and every load gets its own reason."""
    module = parse_ptx(_branchy(10), "branchy.ptx")
    fn = module.function("branchy")
    path_by_path = SymbolicExecutor(
        module, fn, Budget(max_paths=64), merge=False, guard_visible_memory=False
    ).run()
    assert not path_by_path.complete
    plan = detect_kernel(module, fn, Options(max_paths=64))
    assert plan.analysis.complete
    assert len(plan.verdicts) == 12
    assert all(v.status is Status.BLOCKED for v in plan.verdicts)
    assert {v.reason for v in plan.verdicts} == {"no neighbour", "non-constant delta"}


def test_a_rewrite_is_proved_on_flows_taken_path_by_path() -> None:
    """The branch joins before the loads: the merged run joins the two
    sides, detection finds the shuffle on it, and the plan (whose flows the
    proof pairs with the rewrite's) comes from a run that joined nothing."""
    module = parse_ptx(JOINED, "joined.ptx")
    fn = module.function("joined")
    merged = SymbolicExecutor(module, fn, Budget(), merge=True, guard_visible_memory=False).run()
    assert merged.stats.joined > 0
    plan = plan_kernel(module, fn, Options(rounding="ptx"))
    assert plan.analysis.stats.joined == 0 and plan.analysis.stats.merged == 0
    assert len(plan.analysis.flows) == 2
    shuffled = [v for v in plan.verdicts if v.status is Status.SHUFFLE]
    assert [(v.delta, v.proof) for v in shuffled] == [(1, PROVED)]


def test_thrust_and_cub_kernels_are_decided_whole(corpus) -> None:  # type: ignore[no-untyped-def]
    """CUB 3.0's scan, radix-sort and reduction kernels (look-back loops,
    branches around every tile): taken path by path, eight of the 24 ran
    out of 10 s with their loads undecided; merged, every one completes well
    inside the path budget. The time budget here is generous so that the
    outcome does not depend on the machine's speed."""
    from ptxasw.parser import parse_file

    files = [f for f in corpus if f.source_path.name == "thrust_cub.cu" and f.arch == "sm_90"]
    if not files:
        pytest.skip("thrust_cub.cu is not in this corpus")
    module = parse_file(files[0].ptx_path)
    assert len(module.kernels) >= 20
    for fn in module.kernels:
        plan = detect_kernel(module, fn, Options(time_s=300))
        assert plan.analysis.complete, (fn.name, plan.analysis.reason)
        assert not any("analysis budget" in (v.reason or "") for v in plan.verdicts), fn.name
