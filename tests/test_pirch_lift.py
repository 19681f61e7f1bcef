"""Lifted kernels against the concrete interpreter, bit for bit.

Our own warp-synchronous CUDA kernels (``tests/kernels/pirch.cu``: shuffles
in every mode, votes, match, redux, a divergent loop, plain elementwise
arithmetic) are compiled by nvcc, lifted to LLVM for several WG_SIZE and
WG_PACK values, run natively by the runtime, and compared byte for byte
with the interpreter on random data that includes NaNs (signalling ones
too), infinities, negative zero, subnormals and integer overflow. The
interpreter is the CI's oracle (it agrees with an H200), so equality here
is what "the lifted kernel computes what the GPU computes" means on a CPU.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ptxasw import ir
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.errors import EmulationError
from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge.lift import lift_kernel
from ptxasw.pirch_bridge.runtime import launch_lifted

SOURCE = Path(__file__).parent / "kernels" / "pirch.cu"
NVCC_FLAGS = ["--ptx", "-arch=sm_80", "-O3"]


def _compile(request: pytest.FixtureRequest, factory: pytest.TempPathFactory, flags: list[str]) -> ir.Module:
    """``pirch.cu`` compiled by nvcc with ``flags`` (cached in pytest's cache by source and flags)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found on PATH: the lifter tests compile CUDA kernels")
    cache = getattr(request.config, "cache", None)
    folder = Path(cache.mkdir("ptxasw-kernels")) if cache is not None else factory.mktemp("kernels")
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join(flags).encode()).hexdigest()[:16]
    out = folder / f"pirch-{key}.ptx"
    if not out.exists():
        tmp = out.with_suffix(".tmp.ptx")
        proc = subprocess.run([nvcc, *flags, str(SOURCE), "-o", str(tmp)], capture_output=True)
        if proc.returncode != 0:
            pytest.fail(f"nvcc failed on pirch.cu:\n{proc.stderr.decode(errors='replace')}")
        tmp.replace(out)
    return parse_ptx(out.read_text(), str(out))


@pytest.fixture(scope="session")
def pirch_ptx(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ir.Module:
    """``pirch.cu`` as nvcc -O3 compiles it."""
    return _compile(request, tmp_path_factory, NVCC_FLAGS)


@pytest.fixture(scope="session")
def pirch_debug_ptx(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ir.Module:
    """``pirch.cu`` as a debug build (-G): device functions called (even the shuffles),
    locals in a .local depot reached through generic addresses."""
    return _compile(request, tmp_path_factory, ["--ptx", "-arch=sm_80", "-G"])


# ---- data with every special value --------------------------------------------------------

_F32_SPECIAL = [0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0, 0x80000000, 1, 0x807FFFFF]
_F64_SPECIAL = [
    0x7FF8000000000000,
    0x7FF0000000000001,
    0xFFF8000000012345,
    0x7FF0000000000000,
    0xFFF0000000000000,
    0,
    1 << 63,
    1,
    0x800FFFFFFFFFFFFF,
]
_I32_SPECIAL = [-(2**31), 2**31 - 1, 0, -1, 1, -7, 2**30]


def floats(rng: np.random.Generator, n: int, dtype: type, special: float = 0.15) -> np.ndarray:
    """Normal values, with specials (NaN payloads, inf, -0, subnormals) in ``special`` of the lanes."""
    x = rng.normal(size=n).astype(dtype)
    bits = x.view(np.uint32 if dtype == np.float32 else np.uint64)
    table = np.array(_F32_SPECIAL if dtype == np.float32 else _F64_SPECIAL, dtype=bits.dtype)
    pick = rng.random(n) < special
    bits[pick] = rng.choice(table, pick.sum())
    return x


def ints(rng: np.random.Generator, n: int, lo: int = -(2**31), hi: int = 2**31) -> np.ndarray:
    x = rng.integers(lo, hi, n, dtype=np.int64)
    pick = rng.random(n) < 0.2
    x[pick] = rng.choice(np.array(_I32_SPECIAL), pick.sum())
    return x.astype(np.int32)


def compare(
    module: ir.Module,
    kernel: str,
    grid: int | tuple[int, ...],
    wg: int | tuple[int, int, int],
    pack: int,
    args: list[object],
    threads: int = 2,
    engine: str = "llvm",
) -> list[np.ndarray | None]:
    """Run the interpreter and the lifted kernel (blocks of ``wg`` threads, ``pack``
    per call, built by ``engine``) on copies of ``args``; assert equal bytes."""
    copy = lambda a: a.copy() if isinstance(a, np.ndarray) else a  # noqa: E731
    block = (wg, 1, 1) if isinstance(wg, int) else wg
    want = launch(module, kernel, grid, block, [copy(a) for a in args], strict=True)
    lifted = lift_kernel(module, kernel, wg_pack=pack, block=block)
    got = launch_lifted(lifted, grid, block, [copy(a) for a in args], threads=threads, engine=engine)
    for i, (w, g) in enumerate(zip(want.buffers, got.buffers, strict=True)):
        if w is None:
            assert g is None
            continue
        wb, gb = w.view(np.uint8), g.view(np.uint8)
        if not np.array_equal(wb, gb):
            bad = np.flatnonzero((wb != gb).reshape(w.size, -1).any(axis=1))
            pytest.fail(
                f"{kernel} (WG {wg}, pack {pack}): argument {i} differs at {bad[:8].tolist()}: "
                f"{engine} {g.reshape(-1)[bad[:4]]} interpreter {w.reshape(-1)[bad[:4]]}"
            )
    return got.buffers


CONFIGS = [(8, 1), (8, 3), (16, 1), (16, 2), (32, 1), (32, 2)]


@pytest.mark.parametrize(("wg", "pack"), [(8, 2), (16, 1), (32, 1)])
def test_elementwise_float_and_integer(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    rng = np.random.default_rng(wg)
    n = 3 * wg + 5  # a partial last block: its lanes past n are guarded off
    grid = -(-n // wg)
    x, y = floats(rng, n, np.float32), floats(rng, n, np.float32)
    k = ints(rng, n)
    compare(pirch_ptx, "axpy", grid, wg, pack, [np.float32(1.5), x, y, k, np.zeros(n, np.int32), n])
    dx, dy = floats(rng, n, np.float64), floats(rng, n, np.float64)
    compare(pirch_ptx, "daxpy", grid, wg, pack, [-0.75, dx, dy, n])


@pytest.mark.parametrize(("wg", "pack"), [(8, 1), (8, 2), (16, 3), (32, 1)])
def test_divergent_loop_and_gathers(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    rng = np.random.default_rng(100 + wg)
    grid = 5
    n = grid * wg
    k = rng.integers(0, 64, n).astype(np.int32)
    k[:wg] = 3  # one uniform work group: the loop runs without masks there
    x = floats(rng, 1024, np.float32, special=0.02)
    compare(pirch_ptx, "divloop", grid, wg, pack, [k, x, np.zeros(n, np.float32), 7])


@pytest.mark.parametrize(("wg", "pack"), CONFIGS)
def test_shuffles(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    rng = np.random.default_rng(200 + wg * pack)
    grid = 5
    n = grid * wg
    out = compare(
        pirch_ptx, f"reduce_wg{wg}", grid, wg, pack, [floats(rng, n, np.float32), np.zeros(grid, np.float32)]
    )
    assert out[1] is not None
    compare(pirch_ptx, f"scan_wg{wg}", grid, wg, pack, [ints(rng, n), np.zeros(n, np.int32)])
    x = floats(rng, n, np.float64)
    compare(pirch_ptx, f"bfly_wg{wg}", grid, wg, pack, [x, np.zeros(n), np.zeros(n)])
    for src in (0, wg // 2 - 1, 5):
        y = np.zeros(n, np.float32)
        compare(pirch_ptx, f"segbcast_wg{wg}", grid, wg, pack, [floats(rng, n, np.float32), y, src])


@pytest.mark.parametrize(("wg", "pack"), [(8, 2), (16, 1), (32, 1)])
def test_shuffle_lanes_at_run_time(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    rng = np.random.default_rng(300 + wg)
    grid = 4
    n = grid * wg
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    for delta, width in ((1, wg), (3, wg // 2), (wg - 1, wg), (0, 4)):
        compare(pirch_ptx, "shfl_rt", grid, wg, pack, [x, np.zeros(n, np.uint32), delta, width])


@pytest.mark.parametrize(("wg", "pack"), CONFIGS)
def test_votes_match_and_redux(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    rng = np.random.default_rng(400 + wg * pack)
    grid = 5
    n = grid * wg
    x = ints(rng, n, -300, 300)
    x[:wg] = 7  # a group where every vote is unanimous
    compare(pirch_ptx, f"vote_wg{wg}", grid, wg, pack, [x, np.zeros(n, np.uint32)])
    compare(pirch_ptx, f"match_wg{wg}", grid, wg, pack, [x, np.zeros(n, np.uint32)])
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    compare(pirch_ptx, f"redadd_wg{wg}", grid, wg, pack, [u, np.zeros(n, np.uint32)])


@pytest.mark.parametrize("pack", [1, 2])
def test_blocks_of_several_warps_with_shared_memory(pirch_ptx: ir.Module, pack: int) -> None:
    rng = np.random.default_rng(500 + pack)
    n = 150  # threads run 2 or 3 iterations: masked, then a barrier where all meet
    x = floats(rng, 3 * n, np.float32, special=0.02)
    compare(pirch_ptx, "blocksum", 3, (64, 1, 1), pack, [x, np.zeros(3, np.float32), n])
    rows, cols = 21, 35  # partial tiles in both directions
    a = ints(rng, rows * cols)
    grid = (-(-cols // 16), -(-rows // 16))
    compare(
        pirch_ptx, "tile_transpose", grid, (16, 4, 1), pack, [a, np.zeros(rows * cols, np.int32), rows, cols]
    )


@pytest.mark.parametrize(("wg", "pack"), [(8, 2), (32, 1)])
def test_atomics_in_lane_order(pirch_ptx: ir.Module, wg: int, pack: int) -> None:
    """On one host thread CTAs and lanes go in the interpreter's order, so the float
    sum and every returned old value match too."""
    rng = np.random.default_rng(600 + wg)
    grid = 6
    n = grid * wg
    k = ints(rng, n, -1000, 1000)
    x = floats(rng, n, np.float32, special=0.0)
    x[3] = np.float32(1e-40)  # atom.add.f32 flushes subnormals
    hist = np.zeros(14, np.int32)
    hist[9] = -1
    args = [k, x, hist, np.zeros(1, np.float32), np.zeros(1, np.uint32), np.zeros(n, np.int32)]
    compare(pirch_ptx, "atomics", grid, wg, pack, args, threads=1)


def test_module_variables(pirch_ptx: ir.Module) -> None:
    rng = np.random.default_rng(700)
    n = 4 * 16
    x = floats(rng, n, np.float32)
    compare(pirch_ptx, "module_vars", 4, 16, 1, [x, np.zeros(n, np.float32), np.zeros(n, np.int32)])


GENERIC_SHARED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry gshared(.param .u64 y)
.reqntid 8, 1, 1
{
    .shared .align 4 .b8 pad[12];  // buf is not at the window's start
    .shared .align 4 .b8 buf[32];
    .reg .b32 %r<8>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [y];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd2, buf;
    cvta.shared.u64 %rd3, %rd2;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    mul.lo.u32 %r2, %r1, 3;
    st.u32 [%rd5], %r2;
    bar.sync 0;
    xor.b32 %r3, %r1, 1;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd3, %rd6;
    ld.u32 %r4, [%rd7];
    cvta.to.shared.u64 %rd8, %rd7;
    ld.shared.u32 %r5, [%rd8];
    add.u32 %r4, %r4, %r5;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r2, %r2, 8, %r1;
    mul.wide.u32 %rd4, %r2, 4;
    add.s64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r4;
    ret;
}
"""


@pytest.mark.parametrize("pack", [1, 2])
def test_generic_addresses_of_shared_memory(pack: int) -> None:
    module = parse_ptx(GENERIC_SHARED, "gshared.ptx")
    out = compare(module, "gshared", 3, 8, pack, [np.zeros(24, np.uint32)])
    assert out[0] is not None
    lane = np.arange(24) % 8
    np.testing.assert_array_equal(out[0], 6 * (lane ^ 1))


def test_debug_build(pirch_debug_ptx: ir.Module) -> None:
    """-G code: calls are inlined, call-site .param and .local variables get a frame per lane."""
    rng = np.random.default_rng(800)
    wg, pack, grid = 8, 2, 5
    n = grid * wg
    compare(
        pirch_debug_ptx,
        "reduce_wg8",
        grid,
        wg,
        pack,
        [floats(rng, n, np.float32), np.zeros(grid, np.float32)],
    )
    compare(pirch_debug_ptx, "vote_wg8", grid, wg, pack, [ints(rng, n, -300, 300), np.zeros(n, np.uint32)])
    k = rng.integers(0, 64, n).astype(np.int32)
    x = floats(rng, 1024, np.float32)
    compare(pirch_debug_ptx, "divloop", grid, wg, pack, [k, x, np.zeros(n, np.float32), 7])


# A loop laid out after its exit (the loop's test at the bottom, the code after
# the loop above it, as GCC's offload output and some nvcc kernels have it): the
# text order is no schedule, the CFG's structured order is. Lanes leave the loop
# after a different number of trips (tid.x), and the shuffle after it must see
# every lane's final sum: run before the loop had finished, it would not.
LOOP_BELOW_EXIT = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry below(.param .u64 out)
.reqntid 32, 1, 1
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    bra.uni $L_head;
$L_done:
    shfl.sync.down.b32 %r5, %r4, 1, 31, -1;
    add.u32 %r6, %r4, %r5;
    mov.u32 %r7, %ctaid.x;
    mad.lo.u32 %r7, %r7, 32, %r2;
    mul.wide.u32 %rd3, %r7, 4;
    cvta.to.global.u64 %rd2, %rd1;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r6;
    ret;
$L_body:
    add.u32 %r4, %r4, %r3;
    add.u32 %r3, %r3, 1;
$L_head:
    setp.lt.u32 %p1, %r3, %r2;
    @%p1 bra $L_body;
    bra.uni $L_done;
}
"""


@pytest.mark.parametrize("pack", [1, 2])
def test_loop_laid_out_below_its_exit(pack: int) -> None:
    module = parse_ptx(LOOP_BELOW_EXIT, "below.ptx")
    out = compare(module, "below", 3, 32, pack, [np.zeros(96, np.uint32)])
    assert out[0] is not None
    t = np.arange(96) % 32
    sums = t * (t - 1) // 2
    following = np.where(t < 31, np.roll(sums, -1), sums)  # lane 31 reads itself
    np.testing.assert_array_equal(out[0], sums + following)


GUARDED_TRAP = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry checked(.param .u64 x, .param .u64 y)
.reqntid 16, 1, 1
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mad.lo.u32 %r3, %r1, 16, %r2;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.s32 %r4, [%rd4];
    setp.lt.s32 %p1, %r4, 0;
    @%p1 trap;
    shl.b32 %r5, %r4, 1;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r5;
    ret;
}
"""


@pytest.mark.parametrize("pack", [1, 2])
def test_trap_fails_the_launch_as_the_interpreter_does(pack: int) -> None:
    module = parse_ptx(GUARDED_TRAP, "trap.ptx")
    x = np.arange(48, dtype=np.int32)
    out = compare(module, "checked", 3, 16, pack, [x, np.zeros(48, np.int32)])
    np.testing.assert_array_equal(out[1], 2 * x)  # no lane traps: a normal run
    x[37] = -1
    with pytest.raises(EmulationError) as interp:
        launch(module, "checked", 3, (16, 1, 1), [x.copy(), np.zeros(48, np.int32)], strict=True)
    lifted = lift_kernel(module, "checked", wg_pack=pack, block=(16, 1, 1))
    with pytest.raises(EmulationError) as native:
        launch_lifted(lifted, 3, (16, 1, 1), [x.copy(), np.zeros(48, np.int32)], threads=2)
    assert "trap executed" in str(native.value)
    assert native.value.loc == interp.value.loc and native.value.loc.line == 20
    # the next launch starts clean: the trap flag is reset like every module variable
    x[37] = 5
    again = launch_lifted(lifted, 3, (16, 1, 1), [x, np.zeros(48, np.int32)], threads=2)
    np.testing.assert_array_equal(again.buffers[1], 2 * x)


SPECIALS = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry specials(.param .u64 y)
.reqntid 8, 1, 1
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [y];
    mov.u32 %r1, %clusterid.x;
    mov.u32 %r2, %nclusterid.x;
    mov.u32 %r3, %cluster_ctarank;
    mov.u32 %r4, %cluster_nctarank;
    mov.u32 %r5, %cluster_nctaid.x;
    mov.u32 %r6, %smid;
    mov.u32 %r7, %nsmid;
    mov.u32 %r8, %envreg1;
    mov.u32 %r9, %nwarpid;
    mov.u64 %rd2, %gridid;
    cvt.u32.u64 %r10, %rd2;
    mad.lo.u32 %r11, %r1, 1000, %r2;
    mad.lo.u32 %r11, %r11, 10, %r3;
    add.u32 %r11, %r11, %r4;
    add.u32 %r11, %r11, %r5;
    add.u32 %r11, %r11, %r6;
    add.u32 %r11, %r11, %r7;
    add.u32 %r11, %r11, %r8;
    add.u32 %r11, %r11, %r9;
    add.u32 %r11, %r11, %r10;
    mov.u32 %r12, %ctaid.x;
    mov.u32 %r13, %tid.x;
    mad.lo.u32 %r14, %r12, 8, %r13;
    mul.wide.u32 %rd3, %r14, 4;
    add.s64 %rd4, %rd1, %rd3;
    st.global.u32 [%rd4], %r11;
    ret;
}
"""


@pytest.mark.parametrize("pack", [1, 3])
def test_cluster_sm_and_environment_registers(pack: int) -> None:
    """A launch without clusters on one SM: the values the interpreter gives them."""
    out = compare(parse_ptx(SPECIALS, "specials.ptx"), "specials", 5, 8, pack, [np.zeros(40, np.uint32)])
    cta = np.arange(40) // 8
    np.testing.assert_array_equal(out[0], (cta * 1000 + 5) * 10 + 1 + 1 + 0 + 1 + 0 + 64 + 1)


# Rows kept in registers: each lane reads its row of 4 words through one address
# register (a strided gather alone; together one contiguous block, read as vectors
# and transposed in registers), then writes it back rotated the same way; the
# addresses are computed in 64 bits (from ctaid.x, which never wraps), so their lane
# offsets are known at lift time. In
# ``cut`` a store through the same register sits between the loads: the loads
# after it must see it, so neither the loads nor the stores may be grouped across.
ROWS = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry rows(.param .u64 a, .param .u64 out)
.reqntid 8, 1, 1
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd6, %r1, 128;
    mul.wide.u32 %rd7, %r2, 16;
    add.s64 %rd3, %rd6, %rd7;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r4, [%rd4+4];
    ld.global.u32 %r5, [%rd4];
    mov.u32 %r10, 3;
    ld.global.u32 %r6, [%rd4+12];
    ld.global.u32 %r7, [%rd4+8];
    add.u32 %r8, %r4, %r10;
    st.global.u32 [%rd5], %r8;
    st.global.u32 [%rd5+4], %r7;
    xor.b32 %r9, %r6, %r5;
    st.global.u32 [%rd5+12], %r9;
    st.global.u32 [%rd5+8], %r5;
    ret;
}
.visible .entry cut(.param .u64 a)
.reqntid 8, 1, 1
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd6, %r1, 128;
    mul.wide.u32 %rd7, %r2, 16;
    add.s64 %rd3, %rd6, %rd7;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r4, [%rd4];
    ld.global.u32 %r5, [%rd4+4];
    add.u32 %r8, %r4, %r5;
    st.global.u32 [%rd4+8], %r8;
    ld.global.u32 %r6, [%rd4+8];
    ld.global.u32 %r7, [%rd4+12];
    st.global.u32 [%rd4], %r7;
    ld.global.u32 %r9, [%rd4];
    st.global.u32 [%rd4+4], %r6;
    st.global.u32 [%rd4+12], %r9;
    ret;
}
"""


def test_access_groups_are_cut_where_the_order_shows() -> None:
    from ptxasw.analysis.cfg import build_cfg
    from ptxasw.pirch_bridge.machine import plan_access_groups

    module = parse_ptx(ROWS, "rows.ptx")

    def groups(name: str) -> list[tuple[int, ...]]:
        fn = next(k for k in module.kernels if k.name == name)
        planned = plan_access_groups([bb.instructions for bb in build_cfg(fn).blocks])
        unique = {id(g): g for g in planned.values()}.values()
        return sorted((g.store, *(g.offsets[id(m)] for m in g.members)) for g in unique)

    assert groups("rows") == [(False, 4, 0, 12, 8), (True, 0, 4, 12, 8)]
    # the store between the loads, and the load between the stores, cut the runs
    assert groups("cut") == [(False, 0, 4), (False, 8, 12)]


@pytest.mark.parametrize("pack", [1, 2, 3])
def test_rows_read_and_written_as_blocks(pack: int) -> None:
    module = parse_ptx(ROWS, "rows.ptx")
    rng = np.random.default_rng(5)
    a = ints(rng, 3 * 8 * 4)
    out = compare(module, "rows", 3, 8, pack, [a, np.zeros(3 * 8 * 4, np.int32)])
    rows = a.reshape(-1, 4).view(np.uint32)
    want = np.stack([rows[:, 1] + 3, rows[:, 2], rows[:, 0], rows[:, 3] ^ rows[:, 0]], axis=1)
    np.testing.assert_array_equal(out[1].reshape(-1, 4).view(np.uint32), want)
    compare(module, "cut", 3, 8, pack, [a])


GRID_3D = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry where(.param .u64 out)
.reqntid 8, 1, 1
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ctaid.y;
    mov.u32 %r3, %ctaid.z;
    mov.u32 %r4, %nctaid.x;
    mov.u32 %r5, %nctaid.y;
    mov.u32 %r6, %tid.x;
    mad.lo.u32 %r7, %r3, %r5, %r2;
    mad.lo.u32 %r7, %r7, %r4, %r1;
    mad.lo.u32 %r8, %r7, 8, %r6;
    mad.lo.u32 %r9, %r1, 10000, %r6;
    mad.lo.u32 %r9, %r2, 100, %r9;
    mad.lo.u32 %r9, %r3, 1000000, %r9;
    mul.wide.u32 %rd2, %r8, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    ret;
}
"""


@pytest.mark.parametrize(("pack", "threads"), [(1, 3), (2, 2), (2, 5), (3, 4)])
def test_grid_slices_of_a_3d_grid(pack: int, threads: int) -> None:
    """Each host thread starts its slice of (x chunk, y, z) anywhere and steps through it."""
    module = parse_ptx(GRID_3D, "grid.ptx")
    out = compare(module, "where", (5, 3, 2), 8, pack, [np.zeros(5 * 3 * 2 * 8, np.uint32)], threads=threads)
    assert out[0] is not None
    z, y, x, t = np.meshgrid(np.arange(2), np.arange(3), np.arange(5), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(out[0], (x * 10000 + y * 100 + z * 1000000 + t).reshape(-1))


@pytest.mark.parametrize("pack", [1, 2])
def test_blocks_reordered_chain_by_chain(monkeypatch: pytest.MonkeyPatch, pack: int) -> None:
    """Every block reordered (`schedule`), whatever its register pressure: the stores
    and loads through one row in ``cut``, the shared-memory exchange in ``gshared`` and
    the special registers keep their meaning."""
    from ptxasw.pirch_bridge import lift as lift_module

    monkeypatch.setattr(lift_module, "_VECTOR_BITS", 0)
    rng = np.random.default_rng(9)
    a = ints(rng, 3 * 8 * 4)
    rows = parse_ptx(ROWS, "rows.ptx")
    compare(rows, "rows", 3, 8, pack, [a, np.zeros(3 * 8 * 4, np.int32)])
    compare(rows, "cut", 3, 8, pack, [a])
    compare(parse_ptx(GENERIC_SHARED, "gshared.ptx"), "gshared", 3, 8, pack, [np.zeros(24, np.uint32)])
    compare(parse_ptx(GRID_3D, "grid.ptx"), "where", (5, 3, 2), 8, pack, [np.zeros(240, np.uint32)])


def test_schedule_keeps_memory_order() -> None:
    """Every block reordered: a store keeps its place among the accesses around it."""
    from ptxasw.pirch_bridge.schedule import schedule

    module = parse_ptx(ROWS, "rows.ptx")
    fn = next(k for k in module.kernels if k.name == "cut")
    body = list(fn.instructions())
    order = schedule(body, lambda name: 512, 0, 1)
    assert sorted(map(id, order)) == sorted(map(id, body)) and order[-1] is body[-1]
    position = {id(inst): k for k, inst in enumerate(order)}
    memory = [i for i in body if i.opcode in ("ld", "st")]
    for k, x in enumerate(memory):
        for y in memory[k + 1 :]:
            if "st" in (x.opcode, y.opcode):  # only two loads may trade places
                assert position[id(x)] < position[id(y)]


SPECULATED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry spec(.param .u64 x, .param .u64 out)
.reqntid 16, 1, 1
{
    .reg .pred %p<3>;
    .reg .b32 %r<16>;
    .reg .f64 %fd<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r2, 16, %r1;
    mul.wide.u32 %rd3, %r3, 24;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f64 %fd1, [%rd4];
    ld.global.f64 %fd2, [%rd4+8];
    ld.global.f64 %fd3, [%rd4+16];
    and.b32 %r4, %r1, 3;
    setp.eq.u32 %p1, %r4, 1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    @%p1 fma.rn.f64 %fd3, %fd1, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    mov.b64 {%r10, %r11}, %fd1;
    shfl.sync.down.b32 %r12, %r10, 1, 15, 0xffff;
    shfl.sync.down.b32 %r13, %r11, 1, 15, 0xffff;
    mov.b64 %fd4, {%r12, %r13};
    add.rn.f64 %fd1, %fd4, %fd2;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    add.rn.f64 %fd2, %fd1, %fd2;
    mul.rn.f64 %fd3, %fd2, %fd3;
    sub.rn.f64 %fd1, %fd3, %fd1;
    div.rn.f64 %fd2, %fd2, %fd1;
    mov.u32 %r5, 0;
$L_loop:
    setp.ge.u32 %p2, %r5, %r4;
    @%p2 bra $L_done;
    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;
    mul.rn.f64 %fd3, %fd3, %fd1;
    add.u32 %r5, %r5, 1;
    bra.uni $L_loop;
$L_done:
    add.s64 %rd5, %rd2, %rd3;
    st.global.f64 [%rd5], %fd1;
    st.global.f64 [%rd5+8], %fd2;
    st.global.f64 [%rd5+16], %fd3;
    ret;
}
"""


@pytest.mark.parametrize(("pack", "special"), [(1, 0.0), (1, 0.1), (2, 0.02), (2, 0.3)])
def test_speculated_nan_rules(monkeypatch: pytest.MonkeyPatch, pack: int, special: float) -> None:
    """``.f64`` runs with one NaN test per piece (`_Lifter._speculated`): registers read
    before they are written in a piece (the accumulators), a guarded write, a 64-bit
    shuffle and a divergent loop (masked, lanes that left hold stale values) give the
    interpreter's bits whether no lane, a few or many meet a NaN (its payload
    decides the result: a cold copy reruns the piece with the exact rule)."""
    from ptxasw.pirch_bridge import lift as lift_module

    monkeypatch.setattr(lift_module, "_SPECULATE", True)  # off by default (see lift._SPECULATE)
    module = parse_ptx(SPECULATED, "spec.ptx")
    lifted = lift_kernel(module, "spec", wg_pack=pack, block=(16, 1, 1))
    assert "fcmp ord" in lifted.ir_text
    rng = np.random.default_rng(int(special * 100) + pack)
    for _ in range(3):
        x = floats(rng, 4 * 16 * 3, np.float64, special)
        compare(module, "spec", 4, 16, pack, [x, np.zeros(4 * 16 * 3, np.float64)])
        compare(module, "spec", 4, 16, pack, [x, np.zeros(4 * 16 * 3, np.float64)], engine="avx512")
