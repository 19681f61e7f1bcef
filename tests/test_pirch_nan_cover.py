"""Which ``.f64`` results a speculated run leaves untested, and the bits that gives.

A reordered block (`ptxasw.pirch_bridge.schedule`) is lifted speculated: one
NaN test per piece instead of a test and a branch per operation, and
`_Lifter._nan_covered` drops the test of a result whose every reader is a
later IEEE operation of the same run that turns a NaN operand into a NaN
result in the same lane. These tests pin that rule down instruction by
instruction (a reader that is a move, a shuffle, a compare, a min, a guarded
or directed-rounding operation, or in another block keeps the test) and check
the lifted kernel's bits against the interpreter's when the chains meet NaN
payloads, infinities and zeros, with the default scheduling budget and with one
small enough to reorder the block.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge import lift as lift_module
from ptxasw.pirch_bridge.lift import _Lifter, lift_kernel
from tests.test_pirch_lift import compare, floats

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry chains(.param .u64 p_in, .param .u64 p_out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    .reg .f64 %fd<40>;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    setp.lt.u32 %p1, %r1, 5;
    ld.global.nc.f64 %fd1, [%rd4];
    ld.global.nc.f64 %fd2, [%rd4+256];
    ld.global.nc.f64 %fd3, [%rd4+512];
    ld.global.nc.f64 %fd4, [%rd4+768];
"""

# One straight-line run between the loads and the stores; the comment says whether
# the result's own test may go (its readers propagate a NaN lane for lane).
BODY = """
    fma.rn.f64 %fd5, %fd1, %fd2, %fd3;
    fma.rn.f64 %fd6, %fd1, %fd4, %fd5;
    mul.rn.f64 %fd7, %fd6, %fd2;
    add.rn.f64 %fd8, %fd7, %fd3;
    sub.rn.f64 %fd9, %fd8, %fd4;
    div.rn.f64 %fd10, %fd9, %fd2;
    sqrt.rn.f64 %fd11, %fd10;
    fma.rn.f64 %fd12, %fd11, %fd1, %fd4;
    mul.rn.f64 %fd13, %fd1, %fd3;
    mov.b64 %rd6, %fd13;
    mul.rn.f64 %fd14, %fd2, %fd3;
    min.f64 %fd15, %fd14, %fd1;
    mul.rn.f64 %fd16, %fd3, %fd4;
    mov.b64 {%r2, %r3}, %fd16;
    shfl.sync.down.b32 %r4, %r2, 1, 31, -1;
    shfl.sync.down.b32 %r5, %r3, 1, 31, -1;
    mov.b64 %fd17, {%r4, %r5};
    mul.rn.f64 %fd18, %fd1, %fd1;
    @%p1 add.rn.f64 %fd19, %fd18, %fd2;
    mul.rn.f64 %fd20, %fd2, %fd2;
    add.rz.f64 %fd21, %fd20, %fd3;
    mul.rn.f64 %fd22, %fd4, %fd4;
    setp.lt.f64 %p2, %fd22, %fd1;
    selp.f64 %fd23, %fd1, %fd2, %p2;
    mul.rn.f64 %fd24, %fd3, %fd3;
    neg.f64 %fd25, %fd24;
    add.rn.f64 %fd26, %fd1, %fd2;
    add.rn.f64 %fd27, %fd26, %fd26;
"""

TAIL = """
    st.global.f64 [%rd5], %fd12;
    st.global.u64 [%rd5+256], %rd6;
    st.global.f64 [%rd5+512], %fd15;
    st.global.f64 [%rd5+768], %fd17;
    st.global.f64 [%rd5+1024], %fd19;
    st.global.f64 [%rd5+1280], %fd21;
    st.global.f64 [%rd5+1536], %fd23;
    st.global.f64 [%rd5+1792], %fd25;
    st.global.f64 [%rd5+2048], %fd27;
    ret;
}
"""

PTX = HEAD + BODY + TAIL
# The lifter refuses directed rounding of ``.f64`` adds: run ``abs`` (not tested) instead.
PTX_RUN = PTX.replace("add.rz.f64 %fd21, %fd20, %fd3;", "abs.f64 %fd21, %fd20;")
# Results whose test goes: each is read only by later propagating operations of the run.
COVERED = {"%fd5", "%fd6", "%fd7", "%fd8", "%fd9", "%fd10", "%fd11", "%fd26"}
# Results that keep it, and why (the reader that does not propagate lane for lane).
TESTED = {
    "%fd12": "stored",
    "%fd13": "read by a move",
    "%fd14": "read by min (NaN-ignoring)",
    "%fd16": "read through a shuffle (another lane)",
    "%fd18": "read by a guarded add",
    "%fd19": "guarded itself",
    "%fd20": "read by a directed-rounding add",
    "%fd22": "read by a compare",
    "%fd24": "read by neg (not a tested operation)",
    "%fd27": "stored",
}


def _lifter(text: str) -> tuple[_Lifter, list]:
    module = parse_ptx(text, "chains.ptx")
    fn = module.functions[0]
    lifter = _Lifter(module, fn, (32, 1, 1), 1)
    body = [inst for bb in lifter.cfg.blocks for inst in bb.instructions]
    run = [inst for inst in body if lift_module._pure(inst)]
    return lifter, run


def test_covered_results_are_the_ones_whose_readers_propagate_nan() -> None:
    lifter, run = _lifter(PTX)
    run = run[run.index(next(i for i in run if i.opcode == "fma")) :]
    covered = lifter._nan_covered(run)
    names = {run[p].operands[0].name for p in covered}
    assert names == COVERED
    for name, why in TESTED.items():
        assert name not in names, f"{name} ({why}) lost its NaN test"
    # The last reader's position bounds the piece: %fd26's two reads are one instruction.
    where = {run[p].operands[0].name: q for p, q in covered.items()}
    assert run[where["%fd5"]].operands[0].name == "%fd6"
    assert run[where["%fd26"]].operands[0].name == "%fd27"


def test_a_reader_outside_the_run_keeps_the_test() -> None:
    """A result also read after the run (here by the store's block) is not covered, even
    when its readers inside the run propagate."""
    text = PTX.replace("st.global.f64 [%rd5+2048], %fd27;", "st.global.f64 [%rd5+2048], %fd26;")
    lifter, run = _lifter(text)
    names = {run[p].operands[0].name for p in lifter._nan_covered(run)}
    assert "%fd26" not in names
    assert {"%fd5", "%fd11"} <= names


def test_a_register_written_twice_keeps_the_test() -> None:
    last = "add.rn.f64 %fd27, %fd26, %fd26;"
    text = PTX.replace(last, f"{last}\n    mov.f64 %fd5, %fd27;")
    lifter, run = _lifter(text)
    names = {run[p].operands[0].name for p in lifter._nan_covered(run)}
    assert "%fd5" not in names


@pytest.mark.parametrize("reorder", [False, True])
@pytest.mark.parametrize("special", [0.0, 0.05, 0.4])
def test_speculated_chains_give_the_interpreters_bits(
    monkeypatch: pytest.MonkeyPatch, reorder: bool, special: float
) -> None:
    """Lifted with the block reordered (a budget of one register, so `schedule` reorders
    and the run is speculated with the covered tests dropped) or in nvcc's order with
    speculation forced, the kernel gives the interpreter's bits, NaN payloads included."""
    if reorder:
        monkeypatch.setattr(lift_module, "_VECTOR_BITS", 512)
    else:
        monkeypatch.setattr(lift_module, "_SPECULATE", True)
    module = parse_ptx(PTX_RUN, "chains.ptx")
    lifted = lift_kernel(module, "chains", wg_pack=1, block=(32, 1, 1))
    assert "fcmp ord" in lifted.ir_text  # speculated: ordered tests of pairs of results
    rng = np.random.default_rng(int(special * 1000) + reorder)
    for _ in range(3):
        x = floats(rng, 4 * 32, np.float64, special)
        if special:
            x[rng.random(x.size) < special / 2] = 0.0  # 0 * inf: the default NaN
        out = np.zeros(9 * 32, np.float64)
        compare(module, "chains", 1, 32, 1, [x, out])
        compare(module, "chains", 1, 32, 1, [x, out], engine="avx512")
