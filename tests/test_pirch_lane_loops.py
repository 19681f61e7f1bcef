"""Lane loops (`ptxasw.pirch_bridge.lane_loops`): long lane-wise runs as loops over lane groups.

The host back ends (llvm, avx512) compile `LiftedKernel.for_host`, which runs a
run of lane-wise instructions once per native-width group of lanes. These
tests lower the thresholds so that small kernels take that form, and check:
where it applies and where not (InfReg-IR and VE keep the plain form; a kernel
below the thresholds is lifted once), and the bits against the interpreter for
a kernel whose run holds every kind of value the rewrite treats apart: a
broadcast of a loaded register and of a computed value, masks from compares,
integer lanes, a register read before the run writes it, values read after the
run and by a later loop, on NaN payloads, infinities and zeros; and the evidence
kernels (when nvcc is there) at 16 and 32 lanes.
"""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir as ll

from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge import lane_loops
from ptxasw.pirch_bridge.backends import emit
from ptxasw.pirch_bridge.lift import lift_kernel
from tests.test_pirch_lift import compare, floats

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry lanes(.param .u64 p_in, .param .u64 p_out)
{
    .reg .pred %p<6>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .f64 %fd<40>;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.nc.f64 %fd1, [%rd4];
    ld.global.nc.f64 %fd2, [%rd4+256];
    ld.global.nc.f64 %fd3, [%rd4+512];
    ld.global.nc.f64 %fd4, [%rd4+768];
    mov.b64 {%r2, %r3}, %fd1;
    shfl.sync.idx.b32 %r4, %r2, 3, 31, -1;
    shfl.sync.idx.b32 %r5, %r3, 3, 31, -1;
    mov.b64 %fd5, {%r4, %r5};
    fma.rn.f64 %fd6, %fd5, %fd2, %fd3;
    fma.rn.f64 %fd7, %fd5, %fd4, %fd6;
    mul.rn.f64 %fd8, %fd7, %fd2;
    add.rn.f64 %fd9, %fd8, %fd1;
    mov.b64 {%r6, %r7}, %fd9;
    shfl.sync.idx.b32 %r8, %r6, 5, 31, -1;
    shfl.sync.idx.b32 %r9, %r7, 5, 31, -1;
    mov.b64 %fd10, {%r8, %r9};
    sub.rn.f64 %fd11, %fd9, %fd10;
    setp.lt.f64 %p1, %fd11, %fd3;
    selp.f64 %fd12, %fd11, %fd4, %p1;
    add.s32 %r10, %r1, %r2;
    mul.lo.s32 %r11, %r10, 3;
    cvt.rn.f64.s32 %fd13, %r11;
    fma.rn.f64 %fd14, %fd13, %fd12, %fd11;
    mov.f64 %fd3, %fd14;
    div.rn.f64 %fd15, %fd14, %fd2;
    sqrt.rn.f64 %fd16, %fd15;
    neg.f64 %fd17, %fd16;
    mul.rn.f64 %fd18, %fd17, %fd5;
    fma.rn.f64 %fd19, %fd18, %fd18, %fd6;
    abs.f64 %fd20, %fd19;
    mov.u32 %r12, 0;
$L_loop:
    add.rn.f64 %fd3, %fd3, %fd17;
    add.s32 %r12, %r12, 1;
    setp.lt.u32 %p2, %r12, 3;
    @%p2 bra $L_loop;
    st.global.f64 [%rd5], %fd3;
    st.global.f64 [%rd5+256], %fd12;
    st.global.f64 [%rd5+512], %fd20;
    st.global.u32 [%rd5+768], %r11;
    st.global.f64 [%rd5+1024], %fd10;
    ret;
}
"""


@pytest.fixture
def low_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loop every run of a few instructions, whatever the code it saves."""
    monkeypatch.setattr(lane_loops, "_MIN_RUN", 2)
    monkeypatch.setattr(lane_loops, "_MIN_SAVED", 1)


def _lifted(block: int = 32, pack: int = 1):
    module = parse_ptx(PTX, "lanes.ptx")
    return module, lift_kernel(module, "lanes", wg_pack=pack, block=(block, 1, 1))


def test_host_form_has_loops_and_the_others_not(low_thresholds: None) -> None:
    _, lifted = _lifted()
    assert lifted.loops_pay
    host = lifted.for_host()
    assert host is not lifted and host.lane_loops
    assert lifted.for_host() is host  # lifted again once
    text = host.ir_text
    assert ".lanes" in text and "<8 x double>" in text  # 32 lanes of .f64: 4 groups of 8
    assert "icmp ult i32" in text
    assert ".lanes" not in lifted.ir_text
    assert ".lanes" not in str(emit(lifted, "infreg"))
    assert ".lanes" in str(emit(lifted, "llvm"))
    assert host.registers == lifted.registers and host.param_layout == lifted.param_layout


def test_below_the_thresholds_the_kernel_is_lifted_once() -> None:
    _, lifted = _lifted()
    assert not lifted.loops_pay
    assert lifted.for_host() is lifted


def test_eight_lanes_of_f64_are_not_looped(low_thresholds: None) -> None:
    """One group would be the whole vector: nothing to loop."""
    _, lifted = _lifted(block=8)
    assert not lifted.loops_pay


@pytest.mark.parametrize("engine", ["llvm", "avx512"])
@pytest.mark.parametrize(("block", "pack"), [(32, 1), (16, 1), (8, 3)])
@pytest.mark.parametrize("special", [0.0, 0.3])
def test_looped_kernel_gives_the_interpreters_bits(
    low_thresholds: None, engine: str, block: int, pack: int, special: float
) -> None:
    """4, 2 and 3 groups of 8 lanes (the last pack partial at 3 CTAs of 8 for a grid of 4)."""
    module = parse_ptx(PTX, "lanes.ptx")
    grid = 4 if pack > 1 else 1
    lifted = lift_kernel(module, "lanes", wg_pack=pack, block=(block, 1, 1))
    assert ".lanes" in lifted.for_host().ir_text
    rng = np.random.default_rng(block * 10 + pack + int(special * 100))
    for _ in range(2):
        x = floats(rng, 4 * 32 * grid, np.float64, special)
        out = np.zeros(5 * 32 * grid, np.float64)
        compare(module, "lanes", grid, block, pack, [x, out], engine=engine)


# No guarded branch: no masked variant, whose masked writes read every register's old value.
PTX_UNIFORM = PTX.replace(
    """    mov.u32 %r12, 0;
$L_loop:
    add.rn.f64 %fd3, %fd3, %fd17;
    add.s32 %r12, %r12, 1;
    setp.lt.u32 %p2, %r12, 3;
    @%p2 bra $L_loop;
""",
    """    bra.uni $L_next;
$L_next:
    add.rn.f64 %fd3, %fd3, %fd17;
""",
)


def _stored_registers(lifted) -> set[str]:
    """Registers the loops store slices of (the GEP's base is the register's alloca, cast)."""
    names = set()
    for fn in lifted.module.functions:
        for blk in fn.blocks:
            if not blk.name.endswith(".lanes"):
                continue
            for inst in blk.instructions:
                if inst.opname == "store" and inst.operands[1].opname == "getelementptr":
                    base = inst.operands[1].operands[0].operands[0]
                    if isinstance(base, ll.AllocaInstr) and base.name[:1] in "rf":
                        names.add(base.name)
    return names


def test_only_registers_read_after_the_run_are_stored(low_thresholds: None) -> None:
    """%fd3 and %fd17 (read by the next block), %fd10, %fd12, %fd20 and %r11 (stored to memory after
    the run) are left by the run slice by slice; %fd11, %fd13-%fd16, %fd18 and %fd19, read only inside
    it, are not (nvcc's registers are mostly such)."""
    module = parse_ptx(PTX_UNIFORM, "lanes.ptx")
    lifted = lift_kernel(module, "lanes", wg_pack=1, block=(32, 1, 1))
    stored = _stored_registers(lifted.for_host())
    assert {"fd3", "fd12", "fd17", "fd20", "r11"} <= stored
    assert not stored & {"fd11", "fd13", "fd14", "fd15", "fd16", "fd18", "fd19"}
    rng = np.random.default_rng(5)
    x = floats(rng, 4 * 32, np.float64, 0.2)
    compare(module, "lanes", 1, 32, 1, [x, np.zeros(5 * 32, np.float64)])


# --------------------------------------------------------------------------
# The evidence kernels, bit for bit, when nvcc can build them


def _suite_cases() -> list[tuple[str, int, int]]:
    return [("gemm_f64", 8, 2), ("gemm_f32", 8, 2), ("trsv_f64", 8, 2), ("ldu_f32", 8, 4), ("gema_f64", 8, 2)]


@pytest.mark.parametrize("engine", ["llvm", "avx512"])
@pytest.mark.parametrize(("name", "wg", "pack"), _suite_cases())
def test_evidence_kernels_looped(low_thresholds: None, engine: str, name: str, wg: int, pack: int) -> None:
    from benchmarks.pirch import suite

    if not suite.have_nvcc():
        pytest.skip("nvcc not found on PATH: the kernels need it")
    from tests.test_pirch_kernels import check_lifted

    module = suite.load_module(suite.KERNELS[name].source)
    lifted = lift_kernel(module, suite.KERNELS[name].symbol(wg), wg_size=wg, wg_pack=pack)
    assert ".lanes" in lifted.for_host().ir_text
    check_lifted(name, wg, 5, 17, pack=pack, engine=engine)
