"""The fast variant of a lifted kernel: NaNs gathered until the first side effect.

`_Lifter._emit(fast=True)`: before anything is written, fenced or trapped, the
``.f64`` results' NaN lanes are only gathered; at the first side effect a work
group that met a NaN returns 1 and the range function runs the exact variant
from the start. These tests pin down where the gathering stops
(`_before_side_effects`: a side effect in a loop dirties its header), that a
kernel without ``.f64`` arithmetic gets no fast variant, and that the bits are
the interpreter's when NaNs come before the first store, after it, or never.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge.lift import _Lifter, lift_kernel
from tests.test_pirch_lift import compare, floats

# Arithmetic, a store, more arithmetic in a loop that stores, a last store.
PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry twice(.param .u64 p_x, .param .u64 p_y, .param .u32 p_n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f64 %fd<12>;
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    ld.param.u32 %r5, [p_n];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f64 %fd1, [%rd4];
    ld.global.f64 %fd2, [%rd4+256];
    mul.rn.f64 %fd3, %fd1, %fd2;
    add.rn.f64 %fd4, %fd3, %fd1;
    st.global.f64 [%rd5], %fd4;
    sub.rn.f64 %fd5, %fd2, %fd1;
    mov.u32 %r2, 0;
$L_loop:
    setp.ge.u32 %p1, %r2, %r5;
    @%p1 bra $L_done;
    fma.rn.f64 %fd5, %fd5, %fd2, %fd1;
    st.global.f64 [%rd5+256], %fd5;
    add.u32 %r2, %r2, 1;
    bra.uni $L_loop;
$L_done:
    div.rn.f64 %fd6, %fd5, %fd4;
    st.global.f64 [%rd5+512], %fd6;
    ret;
}
"""


def _clean_opcodes(text: str) -> list[str]:
    module = parse_ptx(text, "twice.ptx")
    lifter = _Lifter(module, module.functions[0], (32, 1, 1), 1)
    clean = lifter._before_side_effects()
    return [inst.opcode for inst in lifter.cfg.instructions if id(inst) in clean]


def test_gathering_stops_at_the_first_side_effect() -> None:
    ops = _clean_opcodes(PTX)
    assert ops[-3:] == ["mul", "add", "st"]  # up to and with the first store, nothing after it
    assert "sub" not in ops and "fma" not in ops and "div" not in ops


def test_a_store_in_a_loop_dirties_the_loop() -> None:
    """With the first store moved into the loop, the loop's header is reached again after
    it: only the instructions before the loop and the loop's first pass up to the store are
    clean, and nothing after the loop."""
    text = PTX.replace("    st.global.f64 [%rd5], %fd4;\n", "")
    ops = _clean_opcodes(text)
    assert "sub" in ops  # before the loop
    assert "fma" not in ops and "div" not in ops  # the header is reached from the store's block


def test_only_kernels_with_f64_arithmetic_before_a_side_effect_get_one() -> None:
    """... and only up to 16 lanes (`_FAST_BITS`: at 32 it lost to the per-result tests)."""
    module = parse_ptx(PTX, "twice.ptx")
    assert 'i32 @"twice.fast"' in lift_kernel(module, "twice", block=(8, 1, 1), wg_pack=2).ir_text
    assert ".fast" not in lift_kernel(module, "twice", block=(32, 1, 1)).ir_text
    f32 = PTX.replace(".f64", ".f32").replace("%fd", "%f").replace("%r1, 8;", "%r1, 4;")
    module = parse_ptx(f32, "twice32.ptx")
    assert ".fast" not in lift_kernel(module, "twice", block=(8, 1, 1), wg_pack=2).ir_text


@pytest.mark.parametrize(("wg", "pack"), [(8, 1), (8, 2), (4, 3), (16, 1)])
@pytest.mark.parametrize("special", [0.0, 0.05, 0.5])
def test_fast_variant_gives_the_interpreters_bits(wg: int, pack: int, special: float) -> None:
    """NaNs met before the first store (the work group is run again, exactly), after it
    (the fast variant's own exact tests) or never; trip counts 0 and 3; a grid of 5
    blocks, so a last pack is partial (the masked variants)."""
    module = parse_ptx(PTX, "twice.ptx")
    assert ".fast" in lift_kernel(module, "twice", block=(wg, 1, 1), wg_pack=pack).ir_text
    rng = np.random.default_rng(int(special * 100) + pack + wg)
    for trips in (0, 3):
        x = floats(rng, 64 * 4, np.float64, special)
        y = np.zeros(96 * 4, np.float64)
        compare(module, "twice", 5, wg, pack, [x, y, np.uint32(trips)])
        compare(module, "twice", 5, wg, pack, [x, y, np.uint32(trips)], engine="avx512")
