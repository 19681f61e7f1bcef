"""Shuffle synthesis on kernels it was not tuned on, the interpreter as the oracle.

``tests/fixtures/unseen_kernels.cu`` holds CUDA in shapes the suite lacks
(a radius-8 filter, a pitched image, ``half2``, a 64-bit grid-stride loop,
bytes, a reversed index, a stride of two, an in-place update that a
neighbour reads back, rows along ``threadIdx.y``, and more). Each is compiled
by nvcc (optimised for sm_90, ``-G`` for sm_75) and by clang-19 (-O3, -O1,
-O0, where installed), rewritten with every proven shuffle kept, and run
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
from typing import NamedTuple

import numpy as np
import pytest

from benchmarks.kernels import suite
from ptxasw.cli.common import synthesis_assembler
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.pinning import Choice, pin_like
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
    "aos_neighbour": (
        lambda r: [_f32(r, 3 * N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((10,), (16,))],
    ),
    "float2_mixed": (
        lambda r: [_f32(r, 2 * N), _f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "short_u16": (
        lambda r: [r.integers(0, 2**16, N).astype(np.uint16), np.zeros(N, np.uint16), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "ternary_pick": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "exit_between": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((1,), (150,))],
    ),
    "divergent_loop": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((10,), (16,))],
    ),
    "half_warp_branch": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((1,), (150,))],
    ),
    "while_pointer": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((2,), (48,)), ((1,), (96,))],
    ),
    "volatile_read": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,))],
    ),
    "const_coeffs": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "backward_loop": (
        lambda r: [_f32(r, 40 * 5), np.zeros(40, np.float32), 40, 5],
        [((2,), (32,)), ((3,), (16,)), ((1,), (48,))],
    ),
    "switch_stencil": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N, 2],
        [((3,), (64,)), ((5,), (48,))],
    ),
    "two_arrays": (
        lambda r: [_f32(r, N), _f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((10,), (16,))],
    ),
    "gather_pair": (
        lambda r: [r.integers(0, N - 1, N).astype(np.int32), _f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,))],
    ),
    "shared_tile": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((5,), (48,)), ((1,), (150,))],
    ),
    "halo_tile": (
        lambda r: [_f32(r, 256), np.zeros(256, np.float32)],
        [((3,), (64,)), ((4,), (48,)), ((1,), (150,))],
    ),
    "lane_gated": (
        lambda r: [_f32(r, N), np.zeros(N, np.float32), N],
        [((3,), (64,)), ((4,), (48,)), ((10,), (16,))],
    ),
}


# Builds: nvcc optimised for sm_90 and -G for sm_75; clang-19 at -O3, -O1
# and -O0, and -O0 -g (its debug build: .loc lines and DWARF sections), for
# sm_80, without the CUDA headers (its CUDA 13 support stops short of them;
# `unseen_shim.h` declares what the kernels use, and the half2 kernel, which
# needs cuda_fp16.h, is left out).
BUILDS = {"sm_90": ("nvcc", "sm_90", False), "sm_75-G": ("nvcc", "sm_75", True)}
BUILDS |= {f"clang-{o}": ("clang", f"-{o}", False) for o in ("O3", "O1", "O0")}
BUILDS["clang-O0g"] = ("clang", "-O0", True)


def build_ptx(build: str, out_dir: Path) -> str | None:
    """The PTX of ``SOURCE`` as ``build`` (a key of `BUILDS`) compiles it,
    or None when that compiler is not installed."""
    compiler, target, debug = BUILDS[build]
    if compiler == "nvcc":
        return suite.compile_ptx(SOURCE, arch=target, debug=debug).read_text()
    clang = shutil.which("clang-19")
    if clang is None:
        return None
    out = out_dir / f"unseen-clang{target}{'g' if debug else ''}.ptx"
    cmd = [clang, "-x", "cuda", "--cuda-gpu-arch=sm_80", "--cuda-device-only", "-nocudainc", "-nocudalib"]
    cmd += [target, *(["-g"] if debug else []), "-DPTXASW_NO_CUDA_HEADERS", "-S", str(SOURCE), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_text()


class Versions(NamedTuple):
    original: str
    rewritten: str
    shuffles: dict[str, int]  # per kernel
    pins: dict[str, list[tuple[int, str]]]  # per kernel: the rounding ptxas chose (OpenSum.index, Choice)


def rewrite(original: str) -> Versions:
    """Every proven shuffle, keeping ptxas's rounding (the commands' default)."""
    module = parse_ptx(original, "unseen.ptx")
    options = Options(time_s=20, rounding="ptxas", assemble=synthesis_assembler(module, "ptxas"))
    synthesis = ShuffleSynthesisPass(options)
    synthesis.run(module)
    shuffles = {p.kernel: len(p.chosen) for p in synthesis.plans}
    pins = {p.kernel: [(s.index, str(c)) for s, c in p.pins] for p in synthesis.plans}
    return Versions(original, print_module(module), shuffles, pins)


@pytest.fixture(scope="module", params=sorted(BUILDS))
def versions(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Versions:
    """The original PTX, the rewritten PTX, each kernel's shuffles and pins."""
    original = build_ptx(request.param, tmp_path_factory.mktemp("build"))
    if original is None:
        pytest.skip("clang-19 not installed")
    return rewrite(original)


def test_the_rewrite_finds_shuffles(versions: Versions) -> None:
    rewritten, shuffles = versions.rewritten, versions.shuffles
    # How many of the possible shuffles are proven depends on the solver's
    # effort limits (and on what it learned from the tests before); what must
    # never be shuffled does not.
    assert rewritten.count("shfl.sync") >= 4 and sum(shuffles.values()) >= 8
    assert shuffles["store_between"] == 0  # another lane's store comes between its loads
    assert shuffles["with_barrier"] == 0 and shuffles["hist_and_load"] == 0  # a barrier, an atomic between
    # Indices with no constant distance at the edges stay loads.
    assert shuffles["clamped"] == 0 and shuffles["modulo"] == 0 and shuffles["xor_neighbour"] == 0
    assert shuffles["gather_pair"] == 0  # a[idx[i] + 1] is no neighbour's a[idx[i]]
    assert shuffles["volatile_read"] == 0  # each volatile load must be performed
    # Only corner lanes reach the tile's halo load: a shuffle would serve none.
    assert shuffles["halo_tile"] == 0


def test_a_load_only_corner_lanes_reach_stays_and_a_served_lane_is_shuffled(tmp_path: Path) -> None:
    """``tid.x < 3`` loads ``a[i - 3]``, and lane ``laneid - 3`` of each such
    lane is outside its warp: the pair holds only vacuously (no lane uses the
    shuffled value), so the load stays and says why. Lane 5 of every warp
    reading ``a[i - 1]`` has its neighbour: that one is shuffled."""
    original = build_ptx("sm_90", tmp_path)
    assert original is not None
    module = parse_ptx(original, "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20), {"halo_tile", "lane_gated"})
    synthesis.run(module)
    plans = {p.kernel: p for p in synthesis.plans}
    halo = [v for v in plans["halo_tile"].verdicts if v.reason and "corner case" in v.reason]
    assert len(halo) == 1 and halo[0].reason.startswith("no neighbour in the warp (at N = -3 ")
    assert not plans["halo_tile"].chosen
    assert [v.delta for v in plans["lane_gated"].chosen] == [-1]


@pytest.mark.parametrize("build", ["sm_90", "clang-O0"])
def test_narrow_values_are_shuffled(build: str, tmp_path: Path) -> None:
    """Bytes and shorts: nvcc loads bytes into 32-bit registers (``ld.u8
    %r``) and shorts into 16-bit ones (``ld.u16 %rs``), clang -O0 both into
    16-bit ones. A 16-bit value travels packed in a 32-bit shuffle; the
    proof compares the register with the load as the load's type extends it."""
    original = build_ptx(build, tmp_path)
    if original is None:
        pytest.skip("clang-19 not installed")
    module = parse_ptx(original, "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20), {"u8_box", "short_u16"})
    synthesis.run(module)
    shuffles = {p.kernel: len(p.chosen) for p in synthesis.plans}
    assert shuffles["u8_box"] >= 1 and shuffles["short_u16"] >= 1  # 2 each when every proof finishes


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
def test_rewritten_kernels_compute_the_same_bits(versions: Versions, name: str) -> None:
    """The original runs with the rounding ptxas gives it written out (the
    pins): the bits the GPU computes, which the rewrite must keep."""
    if name not in versions.shuffles:
        pytest.skip(f"{name} is not in this build (the clang builds go without cuda_fp16.h)")
    make, launches = KERNELS[name]
    before_module = parse_ptx(versions.original, "a.ptx")
    after_module = parse_ptx(versions.rewritten, "b.ptx")
    pin_like(before_module, name, versions.pins[name])
    for grid, block in launches:
        runs = []
        for module in (before_module, after_module):
            args = make(np.random.default_rng(11))
            result = launch(module, name, grid, block, args)
            assert not result.warnings, result.warnings
            runs.append([None if b is None else b.tobytes() for b in result.buffers])
        assert runs[0] == runs[1], f"{name} grid {grid} block {block}"


def test_a_sum_of_two_products_keeps_the_product_ptxas_fuses() -> None:
    """``a[i+1]*b[i] - a[i]*b[i+1]`` (nvcc leaves the fusion to ptxas): the
    H100 fused the other product after the rewrite, and the last bits
    changed. With the rounding kept, the sum is written as ptxas compiled
    the original (``fma.rn`` of the product it fused), and the shuffles stay."""
    original = suite.compile_ptx(SOURCE, arch="sm_90").read_text()
    if synthesis_assembler(parse_ptx(original, "unseen.ptx"), "ptxas") is None:
        pytest.skip("no ptxas")
    versions = rewrite(original)
    assert versions.shuffles["two_arrays"] == 2
    assert [choice for _, choice in versions.pins["two_arrays"]] == [Choice.LEFT.value]
    kernel = versions.rewritten[versions.rewritten.index(".entry two_arrays") :]
    kernel = kernel[: kernel.index("\n}")]
    assert "fma.rn.f32" in kernel and "sub.f32" not in kernel


def test_without_ptxas_to_ask_the_loads_feeding_such_a_sum_stay() -> None:
    """With no ptxas to say which product it fuses, the loads whose values
    reach the products are not rewritten (the rewrite could change the
    choice); the report says why."""
    module = parse_ptx(suite.compile_ptx(SOURCE, arch="sm_90").read_text(), "unseen.ptx")
    synthesis = ShuffleSynthesisPass(Options(time_s=20, rounding="ptxas"), {"two_arrays"})
    synthesis.run(module)
    (plan,) = synthesis.plans
    assert not plan.chosen and not plan.pins
    assert sum(1 for v in plan.verdicts if (v.reason or "").startswith("rounding: ")) == 2
