"""Divisions that only a known handful of lanes run are lifted on scalars.

`_FloatEmitter.on_running_lanes`: under ``if (lane == k) x = x / p`` (LDU's pivot
row, unrolled per ``k``) a vector division costs a whole register's division
for one lane. These tests check that such divisions become scalar ``fdiv``s,
that divisions most lanes run stay vector ones, and that either way the bits
(NaN payloads, infinities, zeros, subnormals) are the interpreter's.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge.lift import lift_kernel
from tests.test_pirch_lift import compare, floats

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry pivot(.param .u64 p_x, .param .u64 p_y)
{
    .reg .pred %p<4>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<8>;
    .reg .f32 %f<8>;
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.s32 %r3, %r2, %ntid.x, %r1;
    mul.wide.u32 %rd3, %r3, 8;
    add.s64 %rd4, %rd1, %rd3;
    mul.wide.u32 %rd5, %r3, 4;
    add.s64 %rd6, %rd2, %rd5;
    ld.global.f64 %fd1, [%rd4];
    ld.global.f32 %f1, [%rd6];
    mov.b64 {%r2, %r3}, %fd1;
    shfl.sync.idx.b32 %r2, %r2, 3, 31, -1;
    shfl.sync.idx.b32 %r3, %r3, 3, 31, -1;
    mov.b64 %fd2, {%r2, %r3};
    mov.b32 %r2, %f1;
    shfl.sync.idx.b32 %r2, %r2, 3, 31, -1;
    mov.b32 %f2, %r2;
    setp.ne.s32 %p1, %r1, 3;
    @%p1 bra $L_rest;
    div.rn.f64 %fd1, %fd1, %fd2;
    div.rn.f32 %f1, %f1, %f2;
$L_rest:
    setp.lt.u32 %p2, %r1, 3;
    @%p2 bra $L_done;
    div.rn.f64 %fd1, %fd1, %fd2;
$L_done:
    st.global.f64 [%rd4], %fd1;
    st.global.f32 [%rd6], %f1;
    ret;
}
"""


@pytest.mark.parametrize(("wg", "pack"), [(32, 1), (32, 3), (8, 1)])
def test_one_lanes_division_is_scalar_and_exact(wg: int, pack: int) -> None:
    module = parse_ptx(PTX, "pivot.ptx")
    lifted = lift_kernel(module, "pivot", wg_pack=pack, block=(wg, 1, 1))
    text = lifted.ir_text
    assert "fdiv double" in text  # lane 3's division, on scalars
    assert "fdiv float" in text
    assert f"fdiv <{wg * pack} x double>" in text  # lanes 3.. (most of them): one vector division
    rng = np.random.default_rng(wg + pack)
    grid = 5
    for special in (0.0, 0.3):
        x = floats(rng, grid * wg, np.float64, special)
        y = floats(rng, grid * wg, np.float32, special)
        compare(module, "pivot", grid, wg, pack, [x, y])
        compare(module, "pivot", grid, wg, pack, [x, y], engine="avx512")
