"""The VE back end (``lift --target ve``, ``run --engine ve-emulated``).

Lifted kernels lowered to ``llvm.ve.vl.*`` intrinsics and run with the
emulated intrinsics equal the interpreter bit for bit (every LIFT_CASES
kernel, and packs up to 256 lanes), and LLVM 14's ``llc -march=ve`` compiles
every one of them. The emulated intrinsics are checked one by one against
NumPy: lanes >= vl are junk, masked-off lanes untouched, 32-bit lanes in the
lower word and floats in the upper word.
"""

from __future__ import annotations

import ctypes
import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchmarks.pirch import suite
from ptxasw.cli import main
from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.backends import ve
from ptxasw.pirch_bridge.backends.ve_intrinsics import JUNK, SIGNATURES, emulation_ir, emulation_name
from ptxasw.pirch_bridge.jit import compile_ir
from ptxasw.pirch_bridge.lift import lift_kernel
from tests import test_pirch_lift as lift_tests
from tests.test_pirch_cli import WARP_SUM
from tests.test_pirch_kernels import LIFT_CASES, check_lifted
from tests.test_pirch_lift import pirch_debug_ptx, pirch_ptx  # noqa: F401 - fixtures used below

# And packs that fill 64 and all 256 lanes of a VE register (LIFT_CASES reach 128,
# block_reduce_f32's 4 warps).
VE_CASES = [*LIFT_CASES, ("vote", 32, 2), ("allreduce_u32", 8, 32), ("reduce_u32", 32, 8)]


def _have_ve() -> bool:
    try:
        ve.toolchain()
    except PtxError:
        return False
    return True


def _lift(name: str, wg: int, pack: int):  # -> LiftedKernel
    kernel = suite.KERNELS[name]
    _, block = kernel.launch_shape(4, wg)
    shape = (*block, 1, 1)[:3] if isinstance(block, tuple) else (block, 1, 1)
    return lift_kernel(suite.load_module(kernel.source), kernel.symbol(wg), wg_pack=pack, block=shape)


needs_nvcc = pytest.mark.skipif(not suite.have_nvcc(), reason="nvcc not found on PATH: the kernels need it")


@needs_nvcc
@pytest.mark.parametrize(("name", "wg", "pack"), VE_CASES)
def test_ve_emulated_equals_interpreter(name: str, wg: int, pack: int) -> None:
    """Special values (NaN, infinities, -0.0, wrap-around); pack+1 work groups (a partial pack)."""
    check_lifted(name, wg, pack + 1, 17, pack=pack, engine="ve-emulated")


# tests/test_pirch_lift.py's kernels (pirch.cu: shuffles in every mode, votes, atomics in
# lane order, shared memory across warps, module variables, a -G build), one configuration
# each, compared the same way with the interpreter but run by the VE emulation.
PIRCH_CU = [
    ("test_elementwise_float_and_integer", (16, 1)),
    ("test_divergent_loop_and_gathers", (8, 2)),
    ("test_shuffles", (16, 2)),
    ("test_shuffle_lanes_at_run_time", (8, 2)),
    ("test_votes_match_and_redux", (16, 2)),
    ("test_blocks_of_several_warps_with_shared_memory", (2,)),
    ("test_atomics_in_lane_order", (32, 1)),
    ("test_module_variables", ()),
    ("test_generic_addresses_of_shared_memory", (2,)),
    ("test_debug_build", ()),
]


@pytest.mark.parametrize(("test", "config"), PIRCH_CU, ids=[t for t, _ in PIRCH_CU])
def test_pirch_cu_kernels_on_ve_emulation(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, test: str, config: tuple[int, ...]
) -> None:
    from ptxasw.pirch_bridge.runtime import launch_lifted

    monkeypatch.setattr(lift_tests, "launch_lifted", functools.partial(launch_lifted, engine="ve-emulated"))
    fn = getattr(lift_tests, test)
    fixtures = [
        request.getfixturevalue(p)
        for p in fn.__code__.co_varnames[: fn.__code__.co_argcount]
        if p in ("pirch_ptx", "pirch_debug_ptx")
    ]
    fn(*fixtures, *config)


@needs_nvcc
@pytest.mark.skipif(not _have_ve(), reason="no llc with the VE target")
def test_llc_compiles_every_case_for_ve() -> None:
    """Every kernel's VE IR through ``llc -march=ve -mattr=+vpu`` to an EM_VE object
    (the llc runs in parallel: one test, every failure listed)."""

    def build(case: tuple[str, int, int]) -> str | None:
        text = ve.emit(_lift(*case), "ir")
        if "llvm.ve.vl." not in text or "<256 x double>" not in text:
            return f"{case}: no VE intrinsics in the IR"
        try:
            obj = ve.assemble(str(text), "obj")
        except PtxError as exc:
            return f"{case}: {exc}"
        if not isinstance(obj, bytes) or obj[:4] != b"\x7fELF" or int.from_bytes(obj[18:20], "little") != 251:
            return f"{case}: not an EM_VE ELF object"
        return None

    # Each kernel once (its first case), and the widest packs.
    cases = list({name: (name, wg, pack) for name, wg, pack in reversed(LIFT_CASES)}.values())
    cases += [c for c in VE_CASES if c not in LIFT_CASES]
    with ThreadPoolExecutor(2) as pool:
        problems = [p for p in pool.map(build, cases) if p is not None]
    assert not problems, "\n".join(problems)


def test_too_many_lanes_is_refused() -> None:
    from ptxasw.parser import parse_ptx

    lifted = lift_kernel(parse_ptx(WARP_SUM, "warpsum.ptx"), wg_pack=40)  # 320 lanes
    with pytest.raises(PtxError, match="do not fit a VE vector register"):
        ve.lowered_ir(lifted)


# ---- the command line ----------------------------------------------------------------------------------
@pytest.mark.skipif(not _have_ve(), reason="no llc with the VE target")
def test_lift_target_ve_emits_assembly(tmp_path: Path) -> None:
    src = tmp_path / "warpsum.ptx"
    src.write_text(WARP_SUM)
    out = tmp_path / "k.s"
    result = CliRunner().invoke(main, ["lift", str(src), "--target", "ve", "--emit", "asm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    asm = out.read_text()
    assert "lvl " in asm and "vld" in asm and "warpsum" in asm  # vector length set, registers loaded
    refused = CliRunner().invoke(main, ["lift", str(src), "--target", "ve", "--wg-pack", "64"])
    assert refused.exit_code == 1
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and "VE vector register" in lines[0]


def test_run_engine_ve_emulated(tmp_path: Path) -> None:
    (tmp_path / "warpsum.ptx").write_text(WARP_SUM)
    x = (np.arange(40, dtype=np.uint64) * 2654435761 % 1000).astype(np.uint32)
    np.save(tmp_path / "x.npy", x)
    outs = {}
    for engine in ("interp", "ve-emulated"):
        out = tmp_path / engine
        args = ["run", str(tmp_path / "warpsum.ptx"), "--grid", "5", "--block", "8", "--engine", engine]
        args += ["--arg", str(tmp_path / "x.npy"), "--arg", "zeros:u32:40@out", "-o", str(out)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        outs[engine] = np.load(out / "arg1.npy")
    np.testing.assert_array_equal(outs["ve-emulated"], outs["interp"])


# ---- the emulated intrinsics against NumPy ---------------------------------------------------------------
_VT, _MT = "<256 x double>", "<256 x i1>"


def _wrapper(name: str) -> str:
    """``@"t.NAME"(...)``: the definition in the form emulated kernels call it (registers by
    pointer, the result through the first), with masks as byte arrays, for ctypes."""
    ret, args = SIGNATURES[name]
    params, lines, call_args = [], [], []
    if ret in (_VT, _MT):
        params.append("i8* %out")
        if ret == _VT:
            lines.append(f"  %res = bitcast i8* %out to {_VT}*")
        else:
            lines.append(f"  %res = alloca {_MT}")
        call_args.append(f"{ret}* %res")
    for i, t in enumerate(args):
        if t == _VT:
            params.append(f"i8* %a{i}")
            lines.append(f"  %c{i} = bitcast i8* %a{i} to {_VT}*")
            call_args.append(f"{_VT}* %c{i}")
        elif t == _MT:
            params.append(f"i8* %a{i}")
            lines.append(f"  %c{i} = bitcast i8* %a{i} to <256 x i8>*")
            lines.append(f"  %b{i} = load <256 x i8>, <256 x i8>* %c{i}, align 1")
            lines.append(f"  %v{i} = trunc <256 x i8> %b{i} to {_MT}")
            lines.append(f"  %m{i} = alloca {_MT}")
            lines.append(f"  store {_MT} %v{i}, {_MT}* %m{i}")
            call_args.append(f"{_MT}* %m{i}")
        else:
            params.append(f"{t} %a{i}")
            call_args.append(f"{t} %a{i}")
    rtype = "void" if ret in (_VT, _MT) else ret
    call = f'call {rtype} @"{emulation_name(name)}"({", ".join(call_args)})'
    lines.append(f"  {call}" if rtype == "void" else f"  %r = {call}")
    if ret == _MT:
        lines.append(f"  %rm = load {_MT}, {_MT}* %res")
        lines.append(f"  %z = zext {_MT} %rm to <256 x i8>")
        lines.append("  %o = bitcast i8* %out to <256 x i8>*")
        lines.append("  store <256 x i8> %z, <256 x i8>* %o, align 1")
    lines.append("  ret void" if rtype == "void" else f"  ret {rtype} %r")
    return f'define {rtype} @"t.{name}"({", ".join(params)}) {{\n' + "\n".join(lines) + "\n}\n"


class _Emu:
    """The definitions, callable: ``emu(name, *args)`` with NumPy arrays for registers."""

    def __init__(self) -> None:
        text = emulation_ir(memory=True) + "\n".join(_wrapper(n) for n in SIGNATURES)
        self.compiled = compile_ir(text, opt=1)

    def __call__(self, name: str, *args: object) -> object:
        ret, types = SIGNATURES[name]
        cargs: list[object] = []
        out = None
        if ret in (_VT, _MT):
            out = np.zeros(256, dtype=np.uint64 if ret == _VT else np.uint8)
            cargs.append(ctypes.c_void_p(out.ctypes.data))
        keep = []
        for t, a in zip(types, args, strict=True):
            if t in (_VT, _MT):
                arr = np.ascontiguousarray(a, dtype=np.uint64 if t == _VT else np.uint8)
                keep.append(arr)
                cargs.append(ctypes.c_void_p(arr.ctypes.data))
            elif t == "i8*":
                cargs.append(ctypes.c_void_p(int(a)))  # type: ignore[call-overload]
            elif t == "i32":
                cargs.append(ctypes.c_uint32(int(a)))  # type: ignore[call-overload]
            else:
                cargs.append(ctypes.c_uint64(int(a) & 0xFFFF_FFFF_FFFF_FFFF))  # type: ignore[call-overload]
        restype = {"i64": ctypes.c_uint64, "i32": ctypes.c_uint32}.get(ret)
        fn = ctypes.CFUNCTYPE(restype, *(type(c) for c in cargs))(self.compiled.address(f"t.{name}"))
        result = fn(*cargs)
        return out if out is not None else result


@pytest.fixture(scope="module")
def emu() -> _Emu:
    return _Emu()


RNG = np.random.default_rng(8)
M64 = 0xFFFF_FFFF_FFFF_FFFF


def _rand64() -> np.ndarray:
    return RNG.integers(0, 2**64, 256, dtype=np.uint64)


def _check_lanes(got: np.ndarray, want: np.ndarray, vl: int) -> None:
    np.testing.assert_array_equal(got[:vl], want[:vl].astype(np.uint64))
    assert (got[vl:] == JUNK).all(), "lanes >= vl must be junk"


@pytest.mark.parametrize("vl", [256, 77, 1])
def test_integer_arithmetic(emu: _Emu, vl: int) -> None:
    a, b = _rand64(), _rand64()
    for name, want in (
        ("vaddsl", a + b),
        ("vsubsl", a - b),
        ("vmulsl", a * b),
        ("vand", a & b),
        ("vor", a | b),
        ("vxor", a ^ b),
    ):
        _check_lanes(emu(f"{name}.vvvl", a, b, vl), want, vl)
    _check_lanes(emu("vand.vsvl", 0xFFFF, b, vl), b & np.uint64(0xFFFF), vl)
    # 32-bit forms read the lower words and sign-extend.
    lo = (a & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
    lo_b = (b & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
    want = (lo + lo_b).astype(np.int64).view(np.uint64)
    _check_lanes(emu("vaddswsx.vvvl", a, b, vl), want, vl)
    want = (lo * lo_b).astype(np.int64).view(np.uint64)
    _check_lanes(emu("vmulswsx.vvvl", a, b, vl), want, vl)
    _check_lanes(emu("vaddswsx.vsvl", 0, a, vl), lo.astype(np.int64).view(np.uint64), vl)


def test_shifts(emu: _Emu) -> None:
    a = _rand64()
    s = RNG.integers(0, 64, 256, dtype=np.uint64)
    _check_lanes(emu("vsll.vvvl", a, s, 200), a << s, 200)
    _check_lanes(emu("vsrl.vvvl", a, s, 200), a >> s, 200)
    _check_lanes(emu("vsral.vvvl", a, s, 200), (a.view(np.int64) >> s.astype(np.int64)).view(np.uint64), 200)
    _check_lanes(emu("vsrl.vvsl", a, 32, 256), a >> np.uint64(32), 256)
    lo = (a & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
    s32 = s & np.uint64(31)
    want = (lo >> s32.astype(np.int32)).astype(np.int64).view(np.uint64)
    _check_lanes(emu("vsrawsx.vvvl", a, s32 | np.uint64(0xABC0_0000_0000_0000), 256), want, 256)


def _masks_from(got: np.ndarray, vl: int) -> np.ndarray:
    assert got[vl:].all(), "mask bits >= vl must be junk (set)"
    return got[:vl].astype(bool)


@pytest.mark.parametrize("vl", [256, 33])
def test_compares_and_masks(emu: _Emu, vl: int) -> None:
    a = RNG.integers(-5, 5, 256).astype(np.int64).view(np.uint64)
    b = RNG.integers(-5, 5, 256).astype(np.int64).view(np.uint64)
    sa, sb = a.view(np.int64), b.view(np.int64)
    signed = emu("vcmpsl.vvvl", a, b, vl)[:vl].view(np.int64)
    np.testing.assert_array_equal(np.sign(signed), np.sign(sa - sb)[:vl])
    unsigned = emu("vcmpul.vvvl", a, b, vl)[:vl].view(np.int64)
    np.testing.assert_array_equal(unsigned > 0, (a > b)[:vl])
    np.testing.assert_array_equal(unsigned < 0, (a < b)[:vl])
    diff = emu("vcmpsl.vvvl", a, b, vl)
    for cc, op in (("gt", np.greater), ("lt", np.less), ("eq", np.equal), ("ne", np.not_equal)):
        got = _masks_from(emu(f"vfmkl{cc}.mvl", diff, vl), vl)
        np.testing.assert_array_equal(got, op(sa, sb)[:vl])
    # Masks: logic on all 256 bits, counts under vl.
    m1, m2 = RNG.integers(0, 2, 256, dtype=np.uint8), RNG.integers(0, 2, 256, dtype=np.uint8)
    np.testing.assert_array_equal(emu("andm.mmm", m1, m2), m1 & m2)
    np.testing.assert_array_equal(emu("negm.mm", m1), 1 - m1)
    assert emu("pcvm.sml", m1, vl) == int(m1[:vl].sum())
    # vmrg: the second operand where the mask is set.
    got = emu("vmrg.vvvml", a, b, m1, vl)
    _check_lanes(got, np.where(m1.astype(bool), b, a), vl)


def test_float_compares_with_nan(emu: _Emu) -> None:
    x = np.array([1.0, -0.0, 0.0, np.nan, np.inf, -2.5, 3.0, np.nan] * 32)
    y = np.array([2.0, 0.0, -1.0, 1.0, np.inf, -2.5, np.nan, np.nan] * 32)
    diff = emu("vfcmpd.vvvl", x.view(np.uint64), y.view(np.uint64), 256)
    for cc, want in (
        ("gt", x > y),
        ("eq", x == y),
        ("ne", (x != y) & ~np.isnan(x) & ~np.isnan(y)),
        ("nan", np.isnan(x) | np.isnan(y)),
        ("genan", ~(x < y)),
        ("lenan", ~(x > y)),
    ):
        np.testing.assert_array_equal(emu(f"vfmkd{cc}.mvl", diff, 256).astype(bool), want, err_msg=cc)
    # Single precision sits in the upper word; the lower word is ignored.
    xs, ys = x.astype(np.float32), y.astype(np.float32)
    up = lambda v: (v.view(np.uint32).astype(np.uint64) << np.uint64(32)) | np.uint64(0x1234)  # noqa: E731
    diff_s = emu("vfcmps.vvvl", up(xs), up(ys), 256)
    np.testing.assert_array_equal(emu("vfmksgt.mvl", diff_s, 256).astype(bool), xs > ys)


def test_float_arithmetic_and_layout(emu: _Emu) -> None:
    x, y = RNG.normal(size=256), RNG.normal(size=256)
    xb, yb = x.view(np.uint64), y.view(np.uint64)
    _check_lanes(emu("vfaddd.vvvl", xb, yb, 100), (x + y).view(np.uint64), 100)
    _check_lanes(emu("vfdivd.vvvl", xb, yb, 100), (x / y).view(np.uint64), 100)
    xs, ys = x.astype(np.float32), y.astype(np.float32)
    up = (xs.view(np.uint32).astype(np.uint64) << np.uint64(32)) | np.uint64(0xDEAD)
    uy = ys.view(np.uint32).astype(np.uint64) << np.uint64(32)
    got = emu("vfmuls.vvvl", up, uy, 256)
    np.testing.assert_array_equal((got >> np.uint64(32)).astype(np.uint32), (xs * ys).view(np.uint32))
    # vfmad: vx = vy + vz * vw (the addend first).
    a, b, c = (np.arange(256, dtype=np.float64) + k for k in (1.0, 2.0, 3.0))
    got = emu("vfmadd.vvvvl", c.view(np.uint64), a.view(np.uint64), b.view(np.uint64), 256).view(np.float64)
    np.testing.assert_array_equal(got, a * b + c)
    got = emu("vcvtds.vvl", up, 256).view(np.float64)
    np.testing.assert_array_equal(got, xs.astype(np.float64))


def test_memory_forms(emu: _Emu) -> None:
    mem = _rand64()
    words = mem.view(np.uint32)
    got = emu("vld.vssl", 16, mem.ctypes.data, 50)  # stride 16: every other element
    _check_lanes(got, mem[::2], 50)
    got = emu("vldlzx.vssl", 4, mem.ctypes.data, 256)
    np.testing.assert_array_equal(got, words[:256].astype(np.uint64))
    got = emu("vldu.vssl", 4, mem.ctypes.data, 256)
    np.testing.assert_array_equal((got >> np.uint64(32)).astype(np.uint32), words[:256])
    # Stores and scatters write lanes < vl under the mask only.
    dst = np.zeros(256, dtype=np.uint64)
    value = _rand64()
    mask = RNG.integers(0, 2, 256, dtype=np.uint8)
    emu("vst.vssml", value, 8, dst.ctypes.data, mask, 200)
    want = np.where(mask.astype(bool) & (np.arange(256) < 200), value, 0)
    np.testing.assert_array_equal(dst, want)
    dst32 = np.zeros(256, dtype=np.uint32)
    emu("vstu.vssml", value, 4, dst32.ctypes.data, np.ones(256, np.uint8), 256)
    np.testing.assert_array_equal(dst32, (value >> np.uint64(32)).astype(np.uint32))
    perm = RNG.permutation(256)
    addrs = (np.uint64(mem.ctypes.data) + perm.astype(np.uint64) * np.uint64(8)).astype(np.uint64)
    got = emu("vgt.vvssml", addrs, 0, 0, mask, 256)
    np.testing.assert_array_equal(got[mask.astype(bool)], mem[perm][mask.astype(bool)])
    assert (got[~mask.astype(bool)] == JUNK).all()
    out = np.zeros(256, dtype=np.uint64)
    targets = (np.uint64(out.ctypes.data) + perm.astype(np.uint64) * np.uint64(8)).astype(np.uint64)
    emu("vsc.vvssml", value, targets, 0, 0, np.ones(256, np.uint8), 256)
    np.testing.assert_array_equal(out[perm], value)


def test_lanes_broadcasts_and_reductions(emu: _Emu) -> None:
    a = _rand64()
    assert emu("lvsl.svs", a, 17) == int(a[17])
    got = emu("lsv.vvss", a, 5, 99)
    want = a.copy()
    want[5] = 99
    np.testing.assert_array_equal(got, want)
    _check_lanes(emu("vbrdl.vsl", 7, 10), np.full(256, 7, np.uint64), 10)
    _check_lanes(emu("vseq.vl", 256), np.arange(256, dtype=np.uint64), 256)
    vl = 40
    assert int(emu("vsuml.vvl", a, vl)[0]) == int(a[:vl].sum(dtype=np.uint64))
    assert int(emu("vror.vvl", a, vl)[0]) == int(np.bitwise_or.reduce(a[:vl]))
    lo = (a & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
    got = emu("vrminswfstsx.vvl", a, vl)[0]
    assert int(np.uint64(got).view(np.int64)) == int(lo[:vl].min())
    got = emu("vrmaxslfst.vvl", a, vl)[0]
    assert int(np.uint64(got).view(np.int64)) == int(a[:vl].view(np.int64).max())


def test_every_intrinsic_has_a_definition() -> None:
    text = emulation_ir()
    for name in SIGNATURES:
        assert f'@"{emulation_name(name)}"(' in text, name


def test_missing_llc_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptxasw.parser import parse_ptx

    lifted = lift_kernel(parse_ptx(WARP_SUM, "warpsum.ptx"))
    assert "llvm.ve.vl." in str(ve.emit(lifted, "ir"))  # the IR needs no tools
    monkeypatch.setattr(ve.shutil, "which", lambda name: None)
    with pytest.raises(PtxError) as info:
        ve.emit(lifted, "asm")
    assert "llc" in str(info.value) and "\n" not in str(info.value)


def test_division_and_square_root(emu: _Emu) -> None:
    a = RNG.integers(-(2**63), 2**63, 256, dtype=np.int64)
    b = RNG.integers(-1000, 1000, 256, dtype=np.int64)
    b[:3] = [0, -1, 0]
    a[1] = -(2**63)  # MIN / -1
    ok = (b != 0) & ~((a == -(2**63)) & (b == -1))
    got = emu("vdivsl.vvvl", a.view(np.uint64), b.view(np.uint64), 256)
    q = np.zeros(256, dtype=np.int64)
    q[ok] = np.abs(a[ok]) // np.abs(b[ok]) * np.sign(a[ok]) * np.sign(b[ok])  # truncating division
    np.testing.assert_array_equal(got[ok].view(np.int64), q[ok])
    assert (got[~ok] == JUNK).all(), "no defined quotient: junk"
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    got = emu("vdivul.vvvl", ua, ub, 256)
    nz = ub != 0
    np.testing.assert_array_equal(got[nz], ua[nz] // ub[nz])
    x = np.abs(RNG.normal(size=256))
    _check_lanes(emu("vfsqrtd.vvl", x.view(np.uint64), 128), np.sqrt(x).view(np.uint64), 128)
