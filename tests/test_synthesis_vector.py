"""Vector loads (``ld.global.v2``, ``.v4``) in the shuffle synthesis.

nvcc loads a ``float2`` or ``double2`` with one vector load, and Triton and
Inductor load a thread's contiguous slice so; the same addresses are then
loaded again as single elements, or as the neighbouring lane's vector. Each
register of a vector load is an element: a scalar load may take one element
of an earlier vector load, a vector load every element of one earlier load
at one N. The kernels are `tests/fixtures/vector_loads.ptx`, whose comments
say what each load is.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ptxasw import ir
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.symbolic.executor import Budget
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.codegen import emit_shuffles
from ptxasw.synth.detect import SPLIT_VECTOR, Options, Status, detect_kernel
from ptxasw.synth.prove import PROVED, prove_sites
from ptxasw.synth.synthesize import ShuffleSynthesisPass, _copy_with
from tests.cubin import assert_assembles

FIXTURE = Path(__file__).parent / "fixtures" / "vector_loads.ptx"

# Per kernel, per load in program order: status, N, the source's register per register.
EXPECTED = {
    "pairs": [
        (Status.BLOCKED, None, ()),
        (Status.SHUFFLE, 1, (0, 1)),  # p[i+1]: lane + 1's pair
        (Status.REUSE, 0, (1,)),  # x[2i+3]: its own pair's second element
        (Status.SHUFFLE, -1, (1,)),  # x[2i+1]: lane - 1's second element
        (Status.REUSE, 0, (0, 1)),  # p[i] again, its register changed in between
    ],
    "quads": [
        (Status.BLOCKED, None, ()),
        (Status.SHUFFLE, 1, (0,)),  # q[i+1].x (the .y a sink): lane + 1's first element
        (Status.REUSE, 0, (1,)),  # q[i].y
    ],
    "split": [(Status.BLOCKED, None, ())] * 3,
}


def _synthesize(text: str) -> tuple[ir.Module, ShuffleSynthesisPass]:
    module = parse_ptx(text, "vector_loads.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    return module, synthesis


def test_vector_loads_are_sources_and_targets() -> None:
    _, synthesis = _synthesize(FIXTURE.read_text())
    found = {
        plan.kernel: [(v.status, v.delta, v.elements) for v in plan.verdicts] for plan in synthesis.plans
    }
    assert found == EXPECTED
    for plan in synthesis.plans:
        assert all(v.proof == PROVED for v in plan.chosen), plan.kernel
    split = next(p for p in synthesis.plans if p.kernel == "split")
    # The pair's elements are two scalar loads' values: one site takes one source load.
    assert split.verdicts[2].reason == SPLIT_VECTOR


def test_a_vector_target_becomes_one_corner_test_and_its_own_fallback() -> None:
    """``p[i+1]`` becomes two shuffles behind one corner test, and the edge
    lanes load the whole pair as before (into registers of its own, ahead of
    the shuffles) and move both into the load's registers."""
    module, _ = _synthesize(FIXTURE.read_text())
    text = print_module(module)
    pairs = text[text.index(".entry pairs") : text.index(".entry quads")]
    assert pairs.count("shfl.sync.down.b32") == 2 and pairs.count("shfl.sync.up.b32") == 1
    assert pairs.count("activemask") == 2
    fallback = [
        line for line in pairs.splitlines() if "ld.global.v2.f32" in line and line.lstrip().startswith("@")
    ]
    assert len(fallback) == 1 and "{%swfb0, %swfb1}" in fallback[0]
    guard = fallback[0].split()[0]
    assert f"{guard} mov.f32 \t%f3, %swfb0;" in pairs and f"{guard} mov.f32 \t%f4, %swfb1;" in pairs
    quads = text[text.index(".entry quads") : text.index(".entry split")]
    # 64-bit elements travel as two 32-bit shuffles; the sink stays a sink.
    assert quads.count("shfl.sync.down.b32") == 2 and "{%swfb0, _}" in quads


@pytest.mark.parametrize(
    ("block", "grid", "n"),
    [(32, 3, 96), (48, 2, 90), (16, 5, 77), (8, 3, 20), (64, 1, 64), (128, 1, 100), (96, 2, 191)],
)
def test_the_rewrites_compute_the_same_bits(block: int, grid: int, n: int) -> None:
    """Original and rewrite launched alike in the reference interpreter write
    the same bits, at block widths that are and are not multiples of a warp
    and sizes that leave the last warp partial (threads past ``n`` leave)."""
    text = FIXTURE.read_text()
    module, synthesis = _synthesize(text)
    assert sum(len(p.chosen) for p in synthesis.plans) == 6
    rewritten = print_module(module)
    threads = grid * block
    rng = np.random.default_rng(block * 1000 + n)
    floats = rng.standard_normal(2 * threads + 8).astype(np.float32)
    doubles = rng.standard_normal(2 * threads + 4)
    for kernel, x, out, extra in (
        ("pairs", floats, np.zeros(2 * threads, np.float32), [np.uint32(n)]),
        ("quads", doubles, np.zeros(threads, np.float64), [np.uint32(n)]),
        ("split", floats, np.zeros(2 * threads, np.float32), []),
    ):
        written = []
        for source in (text, rewritten):
            y = out.copy()
            launch(parse_ptx(source, "k.ptx"), kernel, grid, block, [x.copy(), y, *extra], strict=True)
            written.append(y)
        assert np.any(written[0] != 0), kernel
        assert np.array_equal(written[0].view(np.uint8), written[1].view(np.uint8)), (kernel, block, n)


def test_the_proof_refuses_a_vector_taken_in_the_wrong_order() -> None:
    """The proof compares every register: the lane + 1 pair with its two
    elements swapped (what a wrong element map would emit) is refused, and
    the same site as detected is proven."""
    module = parse_ptx(FIXTURE.read_text(), "vector_loads.ptx")
    fn = next(f for f in module.functions if f.name == "pairs")
    plan = detect_kernel(module, fn)
    site = next(v for v in plan.verdicts if v.elements == (0, 1) and v.delta == 1)
    outcomes = {}
    for elements in ((0, 1), (1, 0)):
        site.elements = elements
        keep = [v for v in plan.verdicts if v is site]
        trial_fn, trial_module, mapped = _copy_with(module, fn, keep)
        sites = emit_shuffles(FunctionBuilder(trial_fn, trial_module), mapped, "normal")
        result = prove_sites(
            plan.analysis, trial_module, trial_fn, sites, [site.load], [site.source], Budget(time_s=10)
        )
        outcomes[elements] = result.outcomes[0]
    assert outcomes[(0, 1)] == PROVED
    assert outcomes[(1, 0)] != PROVED and outcomes[(1, 0)].startswith("failed")


def test_the_report_names_the_source_registers() -> None:
    from ptxasw.synth.html import element_note
    from ptxasw.synth.report import kernel_entry, source_positions

    text = FIXTURE.read_text()
    module = parse_ptx(text, "vector_loads.ptx")
    synthesis = ShuffleSynthesisPass(Options(), apply=False)
    synthesis.run(module)
    plan = next(p for p in synthesis.plans if p.kernel == "pairs")
    details = kernel_entry(str(FIXTURE), plan, text.splitlines(), source_positions(module))["loads_detail"]
    assert [d["source_elements"] for d in details] == [None, [0, 1], [1], [1], [0, 1]]
    assert [element_note(d) for d in details] == [
        "",
        " (its elements 0, 1)",
        " (its element 1)",
        " (its element 1)",
        " (its elements 0, 1)",
    ]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")
def test_the_rewrite_assembles(tmp_path: Path) -> None:
    module, _ = _synthesize(FIXTURE.read_text())
    assert_assembles(print_module(module), tmp_path, "sm_90")


@pytest.fixture(scope="module")
def nvcc_halos(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`benchmarks/vector_halo.py`'s kernels as nvcc builds them (float4,
    float2 and double2 vectors with scalar halos)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found on PATH")
    from benchmarks.vector_halo import source

    folder = tmp_path_factory.mktemp("halo")
    (folder / "halo.cu").write_text(source())
    out = folder / "halo.ptx"
    subprocess.run(
        ["nvcc", "-O3", "-arch=sm_90", "-ptx", str(folder / "halo.cu"), "-o", str(out)], check=True
    )
    return out.read_text()


# Just enough of CUDA for clang-19 without CUDA 13's headers (which it does not take).
CLANG_SHIM = """
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __forceinline__ __attribute__((always_inline)) inline
#define __restrict__ __restrict
#include <__clang_cuda_builtin_vars.h>
typedef __SIZE_TYPE__ size_t;
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) double2 { double x, y; };
static __device__ inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static __device__ inline float2 make_float2(float a, float b) { return {a, b}; }
static __device__ inline double2 make_double2(double a, double b) { return {a, b}; }
static __device__ inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static __device__ inline double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
"""


@pytest.fixture(scope="module", params=["nvcc", "clang-O3", "clang-O1"])
def halos(request: pytest.FixtureRequest, nvcc_halos: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same kernels from nvcc and from clang-19 (-O3, -O1; at -O0 the
    stencil is a call and its loads go through the stack: nothing to find)."""
    if request.param == "nvcc":
        return nvcc_halos
    clang = shutil.which("clang-19")
    if clang is None:
        pytest.skip("clang-19 not installed")
    from benchmarks.vector_halo import source

    folder = tmp_path_factory.mktemp("clang")
    (folder / "halo.cu").write_text(CLANG_SHIM + source())
    out = folder / "halo.ptx"
    command = [clang, "-x", "cuda", "--cuda-gpu-arch=sm_80", "--cuda-device-only", "-nocudainc", "-nocudalib"]
    command += [f"-{request.param.split('-')[1]}", "-S", str(folder / "halo.cu"), "-o", str(out)]
    subprocess.run(command, check=True, capture_output=True)
    return out.read_text()


HALO_KERNELS = {"row4_r3", "box4_r2", "box2f_r1", "box2_r2", "mbox4_r2", "aos_r2"}
_REWRITTEN: dict[int, tuple[ir.Module, ShuffleSynthesisPass]] = {}


def _rewritten(text: str) -> tuple[ir.Module, ShuffleSynthesisPass]:
    """The tested kernels of a build, synthesised once per build."""
    key = hash(text)
    if key not in _REWRITTEN:
        module = parse_ptx(text, "halo.ptx")
        synthesis = ShuffleSynthesisPass(Options(), kernels=HALO_KERNELS)
        synthesis.run(module)
        _REWRITTEN[key] = (module, synthesis)
    return _REWRITTEN[key]


@pytest.mark.parametrize(
    ("kernel", "per_thread", "dtype", "block", "halo", "distances"),
    [
        ("row4_r3", 4, np.float32, 32, 6, {1}),
        ("box4_r2", 4, np.float32, 48, 20, {1}),
        ("box2f_r1", 2, np.float32, 16, 6, {1}),
        ("box2_r2", 2, np.float64, 8, 20, {1}),
        # The halo behind bounds checks (branches around each load): every
        # row's, the rows' pitch products extended from 32-bit row numbers.
        ("mbox4_r2", 4, np.float32, 48, 20, {1}),
        # An array of structures: every load a field 16 bytes from its lane's
        # neighbour's, taken from the first particle's (N = 1 .. 2R).
        ("aos_r2", 4, np.float32, 16, 4, {1, 2, 3, 4}),
    ],
)
def test_vector_halos_become_exact_shuffles(
    halos: str, kernel: str, per_thread: int, dtype: type, block: int, halo: int, distances: set[int]
) -> None:
    """A thread's vector and its neighbours' elements on either side, as
    nvcc and clang write them: every halo load is a neighbour's element (N = -1 or
    +1; a neighbouring particle's field), proven, and the rewrite writes the same bits as the original at
    sizes with partial warps and rows of several warps."""
    module, synthesis = _rewritten(halos)
    plan = next(p for p in synthesis.plans if p.kernel == kernel)
    assert len(plan.chosen) == halo and {abs(v.delta) for v in plan.chosen} == distances
    assert all(v.proof == PROVED for v in plan.chosen)
    rewritten = print_module(module)
    vectors, height = 37, 6
    pitch = vectors * per_thread + 8
    x = np.random.default_rng(vectors).standard_normal(pitch * height).astype(dtype)
    grid = ((vectors + block - 1) // block, height)
    written = []
    for source in (halos, rewritten):
        y = np.zeros(pitch * height, dtype)
        launch(
            parse_ptx(source, "halo.ptx"),
            kernel,
            grid,
            (block, 1),
            [x, y, np.int32(vectors), np.int32(pitch)],
        )
        written.append(y)
    assert np.any(written[0] != 0)
    assert np.array_equal(written[0].view(np.uint8), written[1].view(np.uint8))


def test_a_shuffle_of_a_bounds_checked_halo_runs_above_its_branch(nvcc_halos: str) -> None:
    """Each halo element of ``mbox4_r2`` is loaded in its own branch (``if
    (4 * i - 2 >= 0)``): its shuffle and its fallback load (under the
    branch's condition) run in a block every path from the row's vector
    load passes, where the warp has not split, and the branch keeps one
    ``mov`` (`ptxasw.synth.codegen`); the proof holds."""
    from ptxasw.analysis.cfg import build_cfg

    module, synthesis = _rewritten(nvcc_halos)
    plan = next(p for p in synthesis.plans if p.kernel == "mbox4_r2")
    assert len(plan.chosen) == 20 and all(v.proof == PROVED for v in plan.chosen)
    fn = next(f for f in module.functions if f.name == "mbox4_r2")
    cfg = build_cfg(fn)
    vectors = [i for i in cfg.instructions if i.opcode == "ld" and ".v4" in i.modifiers]
    shuffles = [i for i in cfg.instructions if i.opcode == "shfl"]
    fallbacks = [i for i in cfg.instructions if i.opcode == "ld" and i.guard is not None]
    assert len(vectors) == 5 and len(shuffles) == 20 and len(fallbacks) == 20
    first = cfg.block_of(vectors[0])
    assert all(cfg.post_dominates(cfg.block_of(i), first) for i in shuffles + fallbacks)
    sides = [b for b in cfg.blocks if not cfg.post_dominates(b.id, first) and cfg.dominates(first, b.id)]
    assert len(sides) == 20
    assert all([i.opcode for i in b.instructions] == ["mov"] for b in sides)


def test_a_strided_halo_pays_only_where_the_kernel_is_bound_by_l1() -> None:
    """The cost model's rule for loads whose lanes are 16 bytes apart (four
    L1 wavefronts), with the figures of `benchmarks/vector_halo.py`'s
    kernels: a float4 box of radius 2 (100 load wavefronts for 24 lines
    moved) keeps its shuffles; a float4 row (20 for 8) and a float2 box (two
    wavefronts a halo load) do not; a load of one wavefront never does."""
    from ptxasw.synth.cost import costs_for, shuffle_pays
    from ptxasw.synth.detect import Traffic

    h100 = costs_for("sm_90")
    box, row = Traffic(loads=100, dense=20, stores=4), Traffic(loads=20, dense=4, stores=4)
    assert shuffle_pays(h100, 32, "normal", 1, 4.0, box)[0]
    assert not shuffle_pays(h100, 32, "normal", 1, 4.0, row)[0]
    assert "not bound by L1" in shuffle_pays(h100, 32, "normal", 1, 4.0, row)[1]
    assert not shuffle_pays(h100, 32, "normal", 1, 2.0, Traffic(loads=50, dense=10, stores=2))[0]
    assert not shuffle_pays(h100, 32, "normal", 1, 1.0, box)[0]
    assert shuffle_pays(h100, 64, "normal", 1, 4.0, box)[0]  # double2's halo: 2 shuffles for 4 wavefronts
    assert not shuffle_pays(h100, 32, "normal", 4, 4.0, box)[0]  # a whole float4: 4 shuffles for 4


def test_the_cost_model_keeps_the_halos_of_l1_bound_boxes(nvcc_halos: str) -> None:
    """What the drop-in does by default on sm_90: the kernels whose counts
    say a halo may pay (`ptxasw.synth.cost.strided_halo_may_pay`) are
    analysed although no contiguous load pays there; the analysis sees their
    traffic and keeps the float4 box's halo shuffles, not the float2 box's
    (two wavefronts a halo load); the row and the radius-1 box are not even
    analysed."""
    from ptxasw.synth.detect import Traffic

    module = parse_ptx(nvcc_halos, "halo.ptx")
    kernels = {"box4_r2", "row4_r2", "box2f_r2", "box4_r1"}
    synthesis = ShuffleSynthesisPass(Options(profit="model", arch="sm_90"), kernels=kernels)
    synthesis.run(module)
    plans = {p.kernel: p for p in synthesis.plans}
    assert set(plans) == {"box4_r2", "box2f_r2"}
    box = plans["box4_r2"]
    assert box.traffic == Traffic(loads=100, dense=20, stores=4)
    assert {v.wavefronts for v in box.verdicts} == {4.0}
    assert len(box.chosen) == 20
    assert not plans["box2f_r2"].chosen
    assert any("2 L1 wavefronts" in (v.reason or "") for v in plans["box2f_r2"].verdicts)


def test_the_cost_model_leaves_halos_read_under_a_test_of_the_data(nvcc_halos: str) -> None:
    """``gbox4_half`` reads its halo only where the row's first element is
    positive (`benchmarks/vector_halo.py`'s gated boxes): every halo load is
    proven, but the shuffle would run on every path, and how often the loads
    did is the input's; the model refuses them and says why, while the
    bounds-checked box (``mbox4_r2``: the branches test positions) keeps all.
    The model chooses before the proof: no refused site costs one."""
    module = parse_ptx(nvcc_halos, "halo.ptx")
    synthesis = ShuffleSynthesisPass(
        Options(profit="model", arch="sm_90"), kernels={"gbox4_half", "mbox4_r2"}
    )
    synthesis.run(module)
    plans = {p.kernel: p for p in synthesis.plans}
    assert len(plans["mbox4_r2"].chosen) == 20
    gated = plans["gbox4_half"]
    refused = [v for v in gated.verdicts if "loaded data" in (v.reason or "")]
    assert not gated.chosen and len(refused) == 20
    assert all("the branch at line" in (v.reason or "") for v in refused)
    assert all(v.proof != PROVED for v in refused)
