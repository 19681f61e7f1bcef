"""Shuffle synthesis on kernels it was not tuned on, the interpreter as the oracle.

``tests/fixtures/unseen_kernels.cu`` holds CUDA in shapes the suite lacks
(a radius-8 filter, a pitched image, ``half2``, a 64-bit grid-stride loop,
bytes, a reversed index, a stride of two, an in-place update that a
neighbour reads back, rows along ``threadIdx.y``, and more). Each is compiled
by nvcc (optimised for sm_90, ``-G`` for sm_75) and by clang-19 (-O3, -O0,
where installed), rewritten with every proven shuffle kept, and run
original and rewritten on the same random inputs with odd block shapes:
the outputs must be the same bits. The in-place
update is where the synthesis once took a stale value (another lane's
store between the two loads).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from benchmarks.kernels import suite
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

pytestmark = pytest.mark.skipif(suite.find_nvcc() is None, reason="nvcc not found")

SOURCE = Path(__file__).parent / "fixtures" / "unseen_kernels.cu"
N = 150

Args = Callable[[np.random.Generator], list[object]]


def _f32(r: np.random.Generator, n: int) -> np.ndarray:
    return r.standard_normal(n, np.float32)


def _keys(r: np.random.Generator) -> np.ndarray:
    return r.integers(0, 1000, N).astype(np.int32)


# Per kernel: its arguments (arrays are outputs when written), and launches
# (grid, block) with partial warps, rows inside warps and one-block grids.
KERNELS: dict[str, tuple[Args, list[tuple[tuple[int, ...], tuple[int, ...]]]]] = {
    "conv1d_r8": (
        lambda r: [_f32(r, N), _f32(r, 17), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((4,), (48,)), ((1,), (150,))],
    ),
    "blur_pitch": (
        lambda r: [r.standard_normal(40 * 12, np.float32), np.zeros(40 * 12, np.float32), 37, 12, 160],
        [((2, 2), (32, 8)), ((3, 3), (16, 4)), ((1, 2), (48, 7))],
    ),
    "h2_stencil": (
        lambda r: [r.standard_normal(2 * N).astype(np.float16), np.zeros(2 * N, np.float16), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "diff_gridstride": (
        lambda r: [r.standard_normal(N), np.zeros(N), np.int64(N)],
        [((2,), (48,)), ((1,), (96,))],
    ),
    "u8_box": (
        lambda r: [r.integers(0, 255, N).astype(np.uint8), np.zeros(N, np.uint8), N],
        [((5,), (48,))],
    ),
    "reverse_diff": (
        lambda r: [r.standard_normal(N, np.float32), np.zeros(N, np.float32), N - 1],
        [((3,), (64,)), ((5,), (48,)), ((10,), (16,))],
    ),
    "stride2": (
        lambda r: [r.standard_normal(N, np.float32), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((10,), (16,))],
    ),
    "store_between": (
        lambda r: [r.standard_normal(N, np.float32), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((2,), (96,)), ((1,), (150,))],
    ),
    "early_exit": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((10,), (16,))],
    ),
    "divergent": (
        lambda r: [_f32(r, N), _f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "loop_rows": (
        lambda r: [_f32(r, 40 * 5), np.zeros(40, np.float32), 40, 5],
        [((2,), (32,)), ((3,), (16,)), ((1,), (48,))],
    ),
    "narrow_rows": (
        lambda r: [r.standard_normal(37 * 6), np.zeros(37 * 6), 37, 6],
        [((5, 2), (8, 4)), ((3, 3), (16, 2)), ((10, 1), (4, 8))],
    ),
    "with_barrier": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((2,), (96,))],
    ),
    "warp_sum": (
        lambda r: [_f32(r, N), np.zeros(N // 32 + 1, np.float32), N],
        [((3,), (64,)), ((2,), (96,))],
    ),
    "hist_and_load": (
        lambda r: [_keys(r), np.zeros(16, np.int32), np.zeros(N, np.float32), _f32(r, N), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "two_outputs": (
        lambda r: [np.zeros(N, np.float32), np.zeros(N, np.float32), _f32(r, N), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "block3d": (
        lambda r: [_f32(r, 21 * 5 * 3), np.zeros(21 * 5 * 3, np.float32), 21, 5, 3],
        [((1, 2, 2), (24, 4, 2)), ((3, 2, 1), (8, 4, 4)), ((1, 1, 1), (21, 5, 3))],
    ),
    "wide_delta": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((1,), (150,))],
    ),
    "i64_loads": (
        lambda r: [r.integers(-(2**62), 2**62, N), np.zeros(N, np.int64), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "clamped": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "modulo": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,))],
    ),
    "xor_neighbour": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "unsigned_idx": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), np.uint32(N)],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "reuse_twice": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "tid_y_rows": (
        lambda r: [r.standard_normal(24 * 20, np.float32), np.zeros(24 * 20, np.float32), 24, 20],
        [((2, 2), (16, 8)), ((1, 3), (8, 8)), ((3, 1), (12, 20))],
    ),
}


# Builds: nvcc optimised for sm_90 and -G for sm_75; clang-19 at -O3 and
# -O0 for sm_80, without the CUDA headers (its CUDA 13 support stops short of
# them; `unseen_shim.h` declares what the kernels use, and the half2 kernel,
# which needs cuda_fp16.h, is left out).
BUILDS = {"sm_90": ("nvcc", "sm_90", False), "sm_75-G": ("nvcc", "sm_75", True)}
BUILDS |= {"clang-O3": ("clang", "-O3", False), "clang-O0": ("clang", "-O0", False)}


def _clang_ptx(opt: str, out_dir: Path) -> str:
    clang = shutil.which("clang-19")
    if clang is None:
        pytest.skip("clang-19 not installed")
    out = out_dir / f"unseen-clang{opt}.ptx"
    cmd = [clang, "-x", "cuda", "--cuda-gpu-arch=sm_80", "--cuda-device-only", "-nocudainc", "-nocudalib"]
    cmd += [opt, "-DPTXASW_NO_CUDA_HEADERS", "-S", str(SOURCE), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_text()


@pytest.fixture(scope="module", params=sorted(BUILDS))
def versions(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str, dict[str, int]]:
    """The original PTX, the rewritten PTX, and each kernel's shuffles."""
    compiler, target, debug = BUILDS[request.param]
    if compiler == "clang":
        original = _clang_ptx(target, tmp_path_factory.mktemp("clang"))
    else:
        original = suite.compile_ptx(SOURCE, arch=target, debug=debug).read_text()
    module = parse_ptx(original, "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20))
    synthesis.run(module)
    shuffles = {p.kernel: len(p.chosen) for p in synthesis.plans}
    return original, print_module(module), shuffles


def test_the_rewrite_finds_shuffles(versions: tuple[str, str, dict[str, int]]) -> None:
    _, rewritten, shuffles = versions
    # How many of the possible shuffles are proven depends on the solver's
    # effort limits (and on what it learned from the tests before); what must
    # never be shuffled does not.
    assert rewritten.count("shfl.sync") >= 4 and sum(shuffles.values()) >= 8
    assert shuffles["store_between"] == 0  # another lane's store comes between its loads
    assert shuffles["with_barrier"] == 0 and shuffles["hist_and_load"] == 0  # a barrier, an atomic between
    # Indices with no constant distance at the edges stay loads.
    assert shuffles["clamped"] == 0 and shuffles["modulo"] == 0 and shuffles["xor_neighbour"] == 0


def test_the_warp_sum_over_a_shuffled_value_is_proven() -> None:
    """The kernel's own warp sum over a rewritten value: the proof follows the
    value into the other lanes (it was an opaque per-lane unknown, and the
    store comparison spent the budget)."""
    module = parse_ptx(suite.compile_ptx(SOURCE, arch="sm_90").read_text(), "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20), {"warp_sum"})
    synthesis.run(module)
    (plan,) = synthesis.plans
    assert len(plan.chosen) == 1


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_rewritten_kernels_compute_the_same_bits(
    versions: tuple[str, str, dict[str, int]], name: str
) -> None:
    original, rewritten, shuffles = versions
    if name not in shuffles:
        pytest.skip(f"{name} is not in this build (the clang builds go without cuda_fp16.h)")
    make, launches = KERNELS[name]
    before_module, after_module = parse_ptx(original, "a.ptx"), parse_ptx(rewritten, "b.ptx")
    for grid, block in launches:
        runs = []
        for module in (before_module, after_module):
            args = make(np.random.default_rng(11))
            result = launch(module, name, grid, block, args)
            assert not result.warnings, result.warnings
            runs.append([None if b is None else b.tobytes() for b in result.buffers])
        assert runs[0] == runs[1], f"{name} grid {grid} block {block}"
