"""The avx512 back end: lifted kernels as C with AVX-512 intrinsics, against the interpreter.

Every lifted evidence kernel (`LIFT_CASES` of test_pirch_kernels) and the
small kernels of tests/kernels/pirch.cu (shuffles in every mode, votes,
match, redux, a divergent loop with gathers, atomics, shared memory, a -G
build) run through ``engine="avx512"`` and must equal the concrete
interpreter byte for byte on data with NaNs, infinities, -0.0, subnormals
and integer overflow, for several WG_SIZE and WG_PACK values. The reordering
classifier is checked per class, each with a run of the emitted C. The
gcc builds are cached by content (PTXASW_CACHE); a session fixture compiles
the cold ones in parallel.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir as ll

from ptxasw import ir
from ptxasw.errors import PtxError
from ptxasw.parser import parse_ptx
from ptxasw.pirch_bridge.backends import avx512
from ptxasw.pirch_bridge.backends.c_emit import translate
from ptxasw.pirch_bridge.backends.c_reorder import Reorder, classify, plan_shuffle
from ptxasw.pirch_bridge.lift import LiftedKernel, lift_kernel

sys.path.insert(0, str(Path(__file__).parent))
import test_pirch_lift as lift_tests
from test_pirch_kernels import LIFT_CASES, check_lifted
from test_pirch_lift import NVCC_FLAGS, _compile, floats, ints

from benchmarks.pirch import suite


def _why_not() -> str | None:
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        return "gcc not found on PATH"
    try:
        avx512.check_cpu()
    except PtxError as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _prebuild(lifted: list[LiftedKernel]) -> None:
    """Compile the C of every kernel (cached by content) on all cores at once."""
    texts = {avx512.c_source(k) for k in lifted}
    with ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        list(pool.map(lambda text: avx512.compile_c(text, "so"), texts))


# ---- the evidence kernels ------------------------------------------------------------------------


def _launch_shape(kernel: suite.Kernel, wg: int) -> tuple[object, tuple[int, int, int]]:
    grid, block = kernel.launch_shape(4, wg)
    dims = (block,) if isinstance(block, int) else tuple(block)
    return grid, (*dims, 1, 1)[:3]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def evidence_built() -> None:
    if not suite.have_nvcc():
        pytest.skip("nvcc not found on PATH: the kernels need it")
    suite.compile_all([(s, "sm_90", False) for s in suite.sources()])
    lifted = []
    for name, wg, pack in LIFT_CASES:
        kernel = suite.KERNELS[name]
        _, block = _launch_shape(kernel, wg)
        lifted.append(
            lift_kernel(suite.load_module(kernel.source), kernel.symbol(wg), wg_pack=pack, block=block)
        )
    _prebuild(lifted)


@pytest.mark.parametrize(("name", "wg", "pack"), LIFT_CASES)
def test_evidence_kernel_equals_interpreter(evidence_built: None, name: str, wg: int, pack: int) -> None:
    check_lifted(name, wg, 4, 13, pack=pack, engine="avx512")


# ---- the small kernels of tests/kernels/pirch.cu ---------------------------------------------------------


def compare(
    module: ir.Module,
    kernel: str,
    grid: int | tuple[int, ...],
    wg: int | tuple[int, int, int],
    pack: int,
    args: list[object],
    threads: int = 2,
) -> list[np.ndarray | None]:
    """The interpreter and the avx512 engine on copies of ``args``: equal bytes."""
    return lift_tests.compare(module, kernel, grid, wg, pack, args, threads, engine="avx512")


SMALL = [(8, 3), (16, 2), (32, 1)]


@pytest.fixture(scope="module")
def pirch_ptx(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ir.Module:
    return _compile(request, tmp_path_factory, NVCC_FLAGS)


@pytest.fixture(scope="module")
def pirch_debug_ptx(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ir.Module:
    return _compile(request, tmp_path_factory, ["--ptx", "-arch=sm_80", "-G"])


@pytest.fixture(scope="module")
def small_built(pirch_ptx: ir.Module) -> ir.Module:
    lifted = []
    for wg, pack in SMALL:
        for name in (f"reduce_wg{wg}", f"scan_wg{wg}", f"bfly_wg{wg}", f"segbcast_wg{wg}", f"vote_wg{wg}",
                     f"match_wg{wg}", f"redadd_wg{wg}", "axpy", "daxpy", "divloop", "shfl_rt"):  # fmt: skip
            lifted.append(lift_kernel(pirch_ptx, name, wg_pack=pack, block=(wg, 1, 1)))
    lifted.append(lift_kernel(pirch_ptx, "blocksum", wg_pack=2, block=(64, 1, 1)))
    lifted.append(lift_kernel(pirch_ptx, "atomics", wg_pack=2, block=(8, 1, 1)))
    _prebuild(lifted)
    return pirch_ptx


@pytest.mark.parametrize(("wg", "pack"), SMALL)
def test_shuffles_votes_and_arithmetic(small_built: ir.Module, wg: int, pack: int) -> None:
    module = small_built
    rng = np.random.default_rng(wg * pack)
    grid = 5
    n = grid * wg
    compare(
        module, f"reduce_wg{wg}", grid, wg, pack, [floats(rng, n, np.float32), np.zeros(grid, np.float32)]
    )
    compare(module, f"scan_wg{wg}", grid, wg, pack, [ints(rng, n), np.zeros(n, np.int32)])
    compare(module, f"bfly_wg{wg}", grid, wg, pack, [floats(rng, n, np.float64), np.zeros(n), np.zeros(n)])
    for src in (0, wg // 2 - 1, 5):
        compare(
            module,
            f"segbcast_wg{wg}",
            grid,
            wg,
            pack,
            [floats(rng, n, np.float32), np.zeros(n, np.float32), src],
        )
    x = ints(rng, n, -300, 300)
    x[:wg] = 7  # a group where every vote is unanimous
    compare(module, f"vote_wg{wg}", grid, wg, pack, [x, np.zeros(n, np.uint32)])
    compare(module, f"match_wg{wg}", grid, wg, pack, [x, np.zeros(n, np.uint32)])
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    compare(module, f"redadd_wg{wg}", grid, wg, pack, [u, np.zeros(n, np.uint32)])
    m = 3 * wg + 5  # a partial last block
    g = -(-m // wg)
    a, b, k = floats(rng, m, np.float32), floats(rng, m, np.float32), ints(rng, m)
    compare(module, "axpy", g, wg, pack, [np.float32(1.5), a, b, k, np.zeros(m, np.int32), m])
    compare(module, "daxpy", g, wg, pack, [-0.75, floats(rng, m, np.float64), floats(rng, m, np.float64), m])
    trips = rng.integers(0, 64, n).astype(np.int32)
    trips[:wg] = 3  # one uniform work group
    compare(
        module,
        "divloop",
        grid,
        wg,
        pack,
        [trips, floats(rng, 1024, np.float32, special=0.02), np.zeros(n, np.float32), 7],
    )
    for delta, width in ((1, wg), (3, wg // 2), (wg - 1, wg)):
        compare(module, "shfl_rt", grid, wg, pack, [u, np.zeros(n, np.uint32), delta, width])


def test_shared_memory_atomics_and_module_variables(small_built: ir.Module) -> None:
    module = small_built
    rng = np.random.default_rng(5)
    n = 150
    compare(
        module,
        "blocksum",
        3,
        (64, 1, 1),
        2,
        [floats(rng, 3 * n, np.float32, special=0.02), np.zeros(3, np.float32), n],
    )
    grid, wg = 6, 8
    k = ints(rng, grid * wg, -1000, 1000)
    x = floats(rng, grid * wg, np.float32, special=0.0)
    x[3] = np.float32(1e-40)
    hist = np.zeros(14, np.int32)
    args = [k, x, hist, np.zeros(1, np.float32), np.zeros(1, np.uint32), np.zeros(grid * wg, np.int32)]
    compare(module, "atomics", grid, wg, 2, args, threads=1)
    compare(
        module,
        "module_vars",
        4,
        16,
        1,
        [floats(rng, 64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.int32)],
    )


def test_scalar_gathers_and_scatters(small_built: ir.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    """PTXASW_AVX512_GATHER=scalar: per-lane loads and stores instead of vpgather/vpscatter."""
    monkeypatch.setenv("PTXASW_AVX512_GATHER", "scalar")
    wg, pack, grid = 8, 3, 5
    text = avx512.c_source(lift_kernel(small_built, "divloop", wg_pack=pack, block=(wg, 1, 1)))
    assert "gather" not in text and "g_[" in text
    rng = np.random.default_rng(9)
    n = grid * wg
    trips = rng.integers(0, 64, n).astype(np.int32)
    x = floats(rng, 1024, np.float32, special=0.02)
    compare(small_built, "divloop", grid, wg, pack, [trips, x, np.zeros(n, np.float32), 7])
    rows, cols = 21, 35  # the transpose's stores are strided: scatters
    a = ints(rng, rows * cols)
    tiles = (-(-cols // 16), -(-rows // 16))
    compare(
        small_built, "tile_transpose", tiles, (16, 4, 1), 1, [a, np.zeros(rows * cols, np.int32), rows, cols]
    )


def test_debug_build(pirch_debug_ptx: ir.Module) -> None:
    """-G code: inlined calls, per-lane .local frames (an alloca array), generic addresses."""
    rng = np.random.default_rng(800)
    wg, pack, grid = 8, 2, 5
    n = grid * wg
    compare(pirch_debug_ptx, "vote_wg8", grid, wg, pack, [ints(rng, n, -300, 300), np.zeros(n, np.uint32)])


# ---- the reorderings -----------------------------------------------------------------------------

_I32 = ll.IntType(32)


def _shuffle_module(lanes: int, mask: list[int], two: bool) -> ll.Module:
    """``void f(i32* x, i32* y, i32* out)``: out = shufflevector(x[0:L], y[0:L] or undef, mask)."""
    m = ll.Module("shuffle")
    vt = ll.VectorType(_I32, lanes)
    ptr = vt.as_pointer()
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), [ptr, ptr, ptr]), "f")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    x = b.load(fn.args[0])
    y = b.load(fn.args[1]) if two else ll.Constant(vt, ll.Undefined)
    b.store(b.shuffle_vector(x, y, ll.Constant(ll.VectorType(_I32, len(mask)), mask)), fn.args[2])
    b.ret_void()
    return m


def _run_shuffle(lanes: int, mask: list[int], two: bool = False) -> np.ndarray:
    cmod = translate(_shuffle_module(lanes, mask, two))
    lib = ctypes.CDLL(str(avx512.compile_c(cmod.text, "so")))
    x = np.arange(100, 100 + lanes, dtype=np.uint32)
    y = np.arange(500, 500 + lanes, dtype=np.uint32)
    out = np.zeros(len(mask), np.uint32)
    fn = getattr(lib, cmod.functions["f"])
    fn(*(ctypes.c_void_p(a.ctypes.data) for a in (x, y, out)))
    assert np.array_equal(out, np.concatenate([x, y])[mask])
    return out


REORDER_CASES = [
    # (L, mask, two operands, class): i32 lanes, 16 per chunk
    (32, list(range(32)), False, Reorder.CHUNK_REUSE),
    (32, [5] * 32, False, Reorder.SCALAR_BROADCAST),
    (32, [i % 16 for i in range(32)], False, Reorder.VECTOR_BROADCAST),  # one chunk to all chunks
    (16, [i % 4 for i in range(16)], False, Reorder.VECTOR_BROADCAST),  # a 128-bit block to all blocks
    (16, [i - i % 4 + 1 for i in range(16)], False, Reorder.SEGMENTED_BROADCAST),  # in-lane (vpshufd)
    (16, [(i // 8) * 8 + 3 for i in range(16)], False, Reorder.SEGMENTED_BROADCAST),  # segments of 8
    (16, [i ^ 1 for i in range(16)], False, Reorder.PERMUTE),  # butterfly
    (16, [(i + 1) % 16 for i in range(16)], False, Reorder.PERMUTE),  # rotate
    (16, [i + 16 if i % 2 else i for i in range(16)], True, Reorder.PERMUTE2),  # interleave two chunks
    (32, [(i + 3) % 32 for i in range(16)] * 2, False, Reorder.PERMUTE2),  # across chunks
    (
        16,
        [i if i % 3 == 0 else (i + 16 if i % 3 == 1 else i // 2) for i in range(16)],
        True,
        Reorder.PERMUTE2,
    ),
    (24, [(7 * i) % 48 for i in range(24)], True, Reorder.PERMUTE_MANY),  # four source chunks
    (12, [i % 3 for i in range(12)], False, Reorder.PERMUTE),  # a 3-lane tile: no block broadcast
]


@pytest.mark.parametrize(
    ("lanes", "mask", "two", "kind"), REORDER_CASES, ids=lambda v: getattr(v, "name", None)
)
def test_reordering_class_and_result(lanes: int, mask: list[int], two: bool, kind: Reorder) -> None:
    assert classify(mask, lanes, 16) is kind
    _run_shuffle(lanes, mask, two)


def test_reordering_plans_per_chunk() -> None:
    """Chunks of one shuffle are planned independently: a reused chunk costs nothing."""
    mask = list(range(16)) + [16] * 16  # chunk 0 kept, chunk 1 one lane broadcast
    plans = plan_shuffle(mask, 32, 16)
    assert [p.kind for p in plans] == [Reorder.CHUNK_REUSE, Reorder.SCALAR_BROADCAST]
    assert plans[1].sources == (1,)
    _run_shuffle(32, mask)


def test_reorderings_in_the_c() -> None:
    """The specialised forms really are what the C says."""
    texts = {k: translate(_shuffle_module(L, m, t)).text for L, m, t, k in REORDER_CASES[:7]}
    assert "permutex" not in texts[Reorder.CHUNK_REUSE]
    assert "_mm512_permutexvar_epi32(_mm512_set1_epi32(5)" in texts[Reorder.SCALAR_BROADCAST]
    assert "_mm512_shuffle_i32x4" in texts[Reorder.VECTOR_BROADCAST]
    segmented = translate(_shuffle_module(16, REORDER_CASES[4][1], False)).text
    assert "_mm512_shuffle_epi32" in segmented and "permutex" not in segmented


# ---- the command line ----------------------------------------------------------------------------

REDUCE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry red(.param .u64 x, .param .u64 y)
.reqntid 8, 1, 1
{
    .reg .b32 %r<8>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    shfl.sync.bfly.b32 %r2, %f1, 1, 31, -1;
    mov.b32 %f2, %r2;
    add.f32 %f3, %f1, %f2;
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f3;
    ret;
}
"""


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptxasw.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_cli_writes_c_that_gcc_compiles_and_an_object(tmp_path: Path) -> None:
    src = tmp_path / "red.ptx"
    src.write_text(REDUCE)
    c_file = tmp_path / "k.c"
    proc = _cli("lift", str(src), "--target", "avx512", "-o", str(c_file), "--wg-pack", "2")
    assert proc.returncode == 0, proc.stderr
    text = c_file.read_text()
    assert "#include <immintrin.h>" in text and "__m512" in text
    built = subprocess.run(
        ["gcc", *avx512.FLAGS, "-c", str(c_file), "-o", str(tmp_path / "k.o")], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    obj = tmp_path / "red.o"
    proc = _cli("lift", str(src), "--target", "avx512", "--emit", "obj", "-o", str(obj))
    assert proc.returncode == 0, proc.stderr
    assert obj.read_bytes()[:4] == b"\x7fELF"


def test_cli_refusal_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "red.ptx"
    src.write_text(REDUCE)
    env = {**os.environ, "CC": "no-such-gcc-here"}
    proc = _cli("lift", str(src), "--target", "avx512", "--emit", "obj", "-o", str(tmp_path / "x.o"), env=env)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "gcc" in lines[0] and "Traceback" not in proc.stderr


def test_untranslatable_instruction_is_refused_by_name() -> None:
    """An instruction without an exact translation is a PtxError naming it, never wrong code."""
    m = ll.Module("frem")
    vt = ll.VectorType(ll.FloatType(), 16)
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), [vt.as_pointer()]), "f")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    x = b.load(fn.args[0])
    b.store(b.frem(x, x), fn.args[0])
    b.ret_void()
    with pytest.raises(PtxError, match=r"cannot translate `.*frem <16 x float>.*frem is not translated"):
        translate(m)


def test_engine_runs_the_cli_kernel(tmp_path: Path) -> None:
    module = parse_ptx(REDUCE, "red.ptx")
    rng = np.random.default_rng(1)
    compare(module, "red", 3, 8, 2, [floats(rng, 24, np.float32), np.zeros(24, np.float32)])


# ---- lane-by-lane operations (no single AVX-512 instruction) -----------------------------------------


def _unary_module(src: ll.Type, dst: ll.Type, lanes: int, build) -> ll.Module:
    """``void f(src* x, dst* out)``: out[0:lanes] = build(builder, module, x[0:lanes])."""
    m = ll.Module("unary")
    vin, vout = ll.VectorType(src, lanes), ll.VectorType(dst, lanes)
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), [vin.as_pointer(), vout.as_pointer()]), "f")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.store(build(b, m, b.load(fn.args[0]), vout), fn.args[1])
    b.ret_void()
    return m


def _declare(m: ll.Module, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
    return ll.Function(m, ll.FunctionType(ret, args), name)


def _run_unary(module: ll.Module, x: np.ndarray, out_dtype: type) -> np.ndarray:
    cmod = translate(module)
    lib = ctypes.CDLL(str(avx512.compile_c(cmod.text, "so")))
    out = np.zeros(x.size, out_dtype)
    getattr(lib, cmod.functions["f"])(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data))
    return out


def test_saturating_conversion_and_bit_counts() -> None:
    """llvm.fptosi.sat (NaN to 0, saturated), ctpop and ctlz over 20 lanes (two chunks)."""
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, -0.0, 2147483520.0, 1e-30] * 2, np.float32)
    sat = _unary_module(
        ll.FloatType(),
        _I32,
        20,
        lambda b, m, v, t: b.call(_declare(m, "llvm.fptosi.sat.v20i32.v20f32", t, [v.type]), [v]),
    )
    wide = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=2.0**40, neginf=-(2.0**40)))
    want = np.clip(wide, -(2**31), 2**31 - 1).astype(np.int32)
    assert np.array_equal(_run_unary(sat, x, np.int32), want)
    k = np.array([0, 1, 3, 0x80000000, 0xFFFFFFFF, 12345, 7, 1 << 20] * 2 + [5, 6, 9, 0], np.uint32)
    for name, expect in (
        ("llvm.ctpop", [bin(int(v)).count("1") for v in k]),
        ("llvm.ctlz", [32 - int(v).bit_length() for v in k]),
    ):
        extra = [ll.Constant(ll.IntType(1), 0)] if name == "llvm.ctlz" else []

        def build(
            b: ll.IRBuilder, m: ll.Module, v: ll.Value, t: ll.Type, n: str = name, e: list = extra
        ) -> ll.Value:
            return b.call(_declare(m, f"{n}.v20i32", t, [v.type, *(x.type for x in e)]), [v, *e])

        mod = _unary_module(_I32, _I32, 20, build)
        assert _run_unary(mod, k, np.uint32).tolist() == expect, name
