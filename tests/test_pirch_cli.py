"""``ptxasw lift`` and ``ptxasw run --engine llvm``: outputs, and refusals as one located line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ptxasw.cli import main
from ptxasw.errors import UnsupportedInstruction
from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge.lift import lift_kernel

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

# Lane i writes the sum of x over lanes i..7 of its group (shfl.down in a uniform loop),
# after a loop whose trip count is the lane's own x (masked until the last lane leaves).
WARP_SUM = (
    HEADER
    + """
.visible .entry warpsum(.param .u64 x, .param .u64 y)
.reqntid 8, 1, 1
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    shl.b32 %r3, %r2, 3;
    add.s32 %r4, %r3, %r1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    and.b32 %r6, %r5, 7;
    mov.u32 %r7, 0;
    mov.u32 %r8, 0;
$count:
    setp.ge.u32 %p1, %r8, %r6;
    @%p1 bra $counted;
    add.s32 %r7, %r7, %r5;
    add.s32 %r8, %r8, 1;
    bra $count;
$counted:
    mov.u32 %r9, 1;
$sum:
    shfl.sync.down.b32 %r10|%p2, %r7, %r9, 6175, 255;
    @%p2 add.s32 %r7, %r7, %r10;
    shl.b32 %r9, %r9, 1;
    setp.lt.u32 %p3, %r9, 8;
    @%p3 bra $sum;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r7;
    ret;
}
"""
)

UNSUPPORTED = (
    HEADER
    + """
.visible .entry stamp(.param .u64 c)
.reqntid 32, 1, 1
{
    .reg .b32 %r<4>;
    .reg .b16 %rs<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [c];
    atom.global.add.f16 %rs1, [%rd1], %rs1;
    ret;
}
"""
)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "warpsum.ptx").write_text(WARP_SUM)
    (tmp_path / "unsupported.ptx").write_text(UNSUPPORTED)
    x = np.arange(40, dtype=np.uint32) * 2654435761 % 1000
    np.save(tmp_path / "x.npy", x.astype(np.uint32))
    return tmp_path


def test_run_engines_agree(files: Path) -> None:
    runner = CliRunner()
    outs = {}
    for engine in ("interp", "llvm"):
        out = files / engine
        args = ["run", str(files / "warpsum.ptx"), "--grid", "5", "--block", "8", "--engine", engine]
        args += ["--arg", str(files / "x.npy"), "--arg", "zeros:u32:40@out", "-o", str(out)]
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        outs[engine] = np.load(out / "arg1.npy")
    np.testing.assert_array_equal(outs["llvm"], outs["interp"])
    x = np.load(files / "x.npy").astype(np.int64).reshape(5, 8)
    counted = (x * (x & 7)).astype(np.uint32)
    want = np.array([[counted[g, i:].sum() for i in range(8)] for g in range(5)], dtype=np.uint32)
    np.testing.assert_array_equal(outs["llvm"].reshape(5, 8), want)


def test_infreg_is_valid_llvm_with_pirch_metadata(files: Path) -> None:
    out = files / "warpsum.ll"
    result = CliRunner().invoke(
        main, ["lift", str(files / "warpsum.ptx"), "--target", "infreg", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert '!"wi.ix"' in text and '!"wg.size"' in text and "!pirch.reg" in text
    assert "shufflevector" in text  # the shuffle's lanes are constants
    opt = shutil.which("opt")
    if opt is None:
        pytest.skip("LLVM's opt is not installed")
    check = subprocess.run(
        [opt, "-verify", str(out), "-S", "-o", "/dev/null"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_llvm_target_emits_host_code(files: Path) -> None:
    runner = CliRunner()
    asm = runner.invoke(main, ["lift", str(files / "warpsum.ptx"), "--target", "llvm", "--emit", "asm"])
    assert asm.exit_code == 0, asm.output
    assert "warpsum" in asm.output
    obj = files / "warpsum.o"
    args = ["lift", str(files / "warpsum.ptx"), "--target", "llvm", "--emit", "obj", "-o", str(obj)]
    assert runner.invoke(main, args).exit_code == 0
    assert obj.read_bytes()[:4] == b"\x7fELF"


def test_unsupported_instruction_is_one_located_line(files: Path) -> None:
    result = CliRunner().invoke(main, ["lift", str(files / "unsupported.ptx")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    want = (
        f"{files / 'unsupported.ptx'}:12:5: unsupported instruction atom.global.add.f16: atomic add on .f16"
    )
    assert want in lines[0]


def test_strict_refusals_name_the_instruction() -> None:
    module = parse_ptx(UNSUPPORTED, "unsupported.ptx")
    with pytest.raises(UnsupportedInstruction) as info:
        lift_kernel(module)
    assert info.value.opcode == "atom.global.add.f16"
    clock = parse_ptx(
        UNSUPPORTED.replace("atom.global.add.f16 %rs1, [%rd1], %rs1;", "mov.u32 %r1, %clock;"), "c.ptx"
    )
    with pytest.raises(UnsupportedInstruction, match="%clock"):
        lift_kernel(clock)


def test_bad_options(files: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["lift", str(files / "warpsum.ptx"), "--wg-size", "64"])
    assert bad.exit_code == 1 and "--wg-size must be 1..32" in bad.output
    no_size = files / "nosize.ptx"
    no_size.write_text(WARP_SUM.replace(".reqntid 8, 1, 1", ""))
    missing = runner.invoke(main, ["lift", str(no_size)])
    assert missing.exit_code == 1 and "give --wg-size" in missing.output
    block = runner.invoke(
        main,
        [
            *("run", str(files / "warpsum.ptx"), "--block", "40", "--engine", "llvm"),
            *("--arg", str(files / "x.npy"), "--arg", "zeros:u32:40", "-o", str(files)),
        ],
    )
    assert block.exit_code == 1 and "partial warp" in block.output
