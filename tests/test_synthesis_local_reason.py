"""Why a generic load is not shuffled: the report names a thread's own stack.

GCC's private arrays (NPB BT's ``lhs`` blocks), ``-O0`` and ``-G`` builds
load through generic addresses of a ``.local`` frame (``cvta.local``). Such
memory is each thread's own, so no other lane's load of it can serve: the
report now says so instead of "generic address not shown to be global
memory", which reads as if the analysis had merely fallen short.
"""

from __future__ import annotations

from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

SOURCE = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 in, .param .u64 out)
{
    .local .align 16 .b8 frame[256];
    .reg .b32 %r<4>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    ld.global.f32 %f5, [%rd4+4];
    cvta.local.u64 %rd5, frame;
    st.f32 [%rd5], %f1;
    st.f32 [%rd5+4], %f1;
    ld.f32 %f2, [%rd5];
    ld.f32 %f3, [%rd5+4];
    add.f32 %f4, %f2, %f3;
    add.f32 %f6, %f4, %f5;
    add.s64 %rd6, %rd2, %rd3;
    st.global.f32 [%rd6], %f6;
    ret;
}
"""


def test_a_generic_load_of_the_local_frame_names_it() -> None:
    module = parse_ptx(SOURCE, "local.ptx")
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    synthesis.run(module)
    (plan,) = synthesis.plans
    reasons = {v.load.loc.line if v.load.loc else None: v.reason for v in plan.verdicts}
    local = [r for r in reasons.values() if r and ".local" in r]
    assert local == ["unsupported access (generic address of .local memory: each thread's own)"] * 2
    # The global neighbour one element on is still a shuffle of the first load.
    assert [v.delta for v in plan.chosen] == [1]
