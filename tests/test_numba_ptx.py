"""PTX that Numba's CUDA target wrote, a front end nobody wrote ptxasw for.

``tests/fixtures/numba_*.ptx`` are ``numba.cuda.compile_ptx`` output (Numba
0.68.1 with the NVVM of CUDA 13.0) of the kernels in
``tests/fixtures/numba_kernels.py``; these tests need no Numba. Numba's PTX
differs from nvcc's in ways that matter here: every array is nine (2-D) or
more scalar ``.param`` (``meminfo, parent, nitems, itemsize, data,
shape..., strides...``, strides in bytes), so every address is a product of
a run-time stride, in 64-bit arithmetic; an index not known to be
non-negative is wrapped around (``a[-1]`` is the last element: ``shr.s64
i, 63`` and a ``selp`` in the address); Python's ``%`` and ``range`` come
with sign fix-ups; ``debug=True`` (``-G``) makes the kernel a wrapper that
calls the Python function as a ``.func``; and each kernel has an
``__errcode__`` global the error model may write (checked here: zero, and
equal before and after the rewrite).

For each file: it parses, prints back to a cubin identical to the original's
(`tests.cubin.same_code`, with ptxas), its kernels' global loads, shuffles
and the reasons for the loads kept are the ones measured (exact numbers, so
that a change shows), every chosen shuffle is proven, and the rewrite runs
in the interpreter bit-equal to the original on odd sizes with partial
blocks (and equal to NumPy).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from ptxasw import ir
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir import isa
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import KernelPlan, Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass
from tests.cubin import assert_assembles, same_code

FIXTURES = Path(__file__).parent / "fixtures"
FILES = {
    "numba_1d": "sm_90",
    "numba_wrap": "sm_90",
    "numba_2d": "sm_90",
    "numba_contig_sm75": "sm_75",
    "numba_misc": "sm_90",
    "numba_loop": "sm_90",
    "numba_debug_1d": "sm_90",
    "numba_debug_2d": "sm_90",
}

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")


# ---- the expected analysis ------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What the synthesis makes of one kernel: its global loads, the loads
    it turns into shuffles, and why the others stay loads (reason -> count;
    the sources of shuffles are counted as ``source``)."""

    loads: int
    shuffles: int
    deltas: tuple[int, ...]
    kept: dict[str, int]


SOURCE = {"source": 1}

EXPECTED: dict[tuple[str, str], Expect] = {
    # One load of the stencil; the others are shuffles of it, proven for any
    # run-time stride (every address is ``data + i * strides[0]``).
    ("numba_1d", "stencil1d3"): Expect(3, 2, (1, 2), SOURCE),
    ("numba_1d", "stencil1d5"): Expect(5, 4, (-1, 1, 2, 3), SOURCE),
    ("numba_1d", "stencil1d3_int"): Expect(3, 2, (-1, 1), SOURCE),
    ("numba_1d", "strided3"): Expect(3, 2, (-1, 1), SOURCE),
    # Missed: with no lower bound on ``i`` Numba wraps ``a[i - 1]`` around
    # (``shr.s64 i, 63`` and a ``selp`` on ``i < 1``), though ``i`` is
    # ``ntid.x * ctaid.x + tid.x`` >= 0; the solver gives up on the products
    # with the stride (guarded by ``1 <= i``, the same loads are a shuffle).
    ("numba_wrap", "diff_wrap"): Expect(2, 0, (), {"no neighbour": 1, "solver gave up": 1}),
    # Python's ``%`` (``rem`` on 32 or 64 bits, and a sign fix-up) in the index.
    ("numba_wrap", "periodic1d3"): Expect(3, 0, (), {"no neighbour": 1, "solver gave up": 2}),
    # Rows above and below are in other warps (rows of 32 or 16 threads).
    ("numba_2d", "lap2d5"): Expect(5, 2, (-2, -1), {"no neighbour": 2, "source": 1}),
    ("numba_2d", "box2d9"): Expect(9, 6, (1, 1, 1, 2, 2, 2), {"source": 3}),
    ("numba_2d", "lap3d7"): Expect(7, 2, (-2, -1), {"no neighbour": 4, "source": 1}),
    # C-contiguous arrays (``float32[:, ::1]``): the row pitch is ``shape[1]`` elements.
    ("numba_contig_sm75", "lap2d5"): Expect(5, 2, (-2, -1), {"non-constant delta": 2, "source": 1}),
    ("numba_contig_sm75", "stencil1d3"): Expect(3, 2, (1, 2), SOURCE),
    # ``a[i]`` into the tile, ``a[i -/+ 1]`` only at the block's edges.
    ("numba_misc", "shared3"): Expect(3, 0, (), {"no neighbour": 3}),
    # Wraparound as in diff_wrap.
    ("numba_misc", "dot_neighbours"): Expect(2, 0, (), {"no neighbour": 1, "solver gave up": 1}),
    # The loads' sum goes to an atomic: the proof compares what the atomic
    # adds (tests/test_synthesis_atomic.py; it used to compare the old
    # values, a fresh unknown in each run, and failed).
    ("numba_misc", "atomic_pairs"): Expect(2, 1, (-1,), SOURCE),
    # Numba's ``range``: trip count by division, index through ``selp``,
    # unrolled 4x after a remainder loop; about 12 s of solver questions.
    ("numba_loop", "grid_stride3"): Expect(15, 0, (), {"no neighbour": 7, "solver gave up": 8}),
    # -G: the kernel calls the Python function (a ``.func``); its loads are not the kernel's.
    ("numba_debug_1d", "stencil1d3"): Expect(0, 0, (), {"in a called function": 24}),
    ("numba_debug_2d", "lap2d5"): Expect(0, 0, (), {"in a called function": 61}),
}


# ---- running a kernel ---------------------------------------------------------------------------


def numba_args(arrays: list[np.ndarray]) -> list[object]:
    """The scalar parameters Numba passes for ``arrays``: per array
    ``meminfo, parent, nitems, itemsize, data, shape..., strides...``."""
    args: list[object] = []
    for a in arrays:
        assert a.flags.c_contiguous
        args += [np.uint64(0), np.uint64(0), np.int64(a.size), np.int64(a.itemsize), a]
        args += [np.int64(s) for s in a.shape] + [np.int64(s) for s in a.strides]
    return args


@cache
def parsed(stem: str) -> ir.Module:
    return parse_ptx((FIXTURES / f"{stem}.ptx").read_text(), f"{stem}.ptx")


@cache
def rewritten(stem: str) -> tuple[dict[str, KernelPlan], str]:
    """Every proven shuffle of the file written in (rounding as PTX
    defines it, so no ptxas is needed), and the plans by kernel."""
    module = parse_ptx((FIXTURES / f"{stem}.ptx").read_text(), f"{stem}.ptx")
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    result = synthesis.run(module)
    assert not result.stats.get("failed"), result.stats.get("failed_names")
    return {plan.kernel: plan for plan in synthesis.plans}, print_module(module)


def kernel_name(module: ir.Module, function: str) -> str:
    """The mangled name of the kernel made of Python function ``function``."""
    tag = f"__main__{len(function)}{function}B"
    (name,) = [k.name for k in module.kernels if tag in k.name]
    return name


def run(
    text: str,
    stem: str,
    function: str,
    grid: tuple[int, ...],
    block: tuple[int, ...],
    arrays: list[np.ndarray],
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """``arrays`` after the kernel ran on copies of them, and the module's globals."""
    module = parse_ptx(text, f"{stem}.ptx")
    copies = [a.copy() for a in arrays]
    result = launch(module, kernel_name(module, function), grid, block, numba_args(copies), strict=True)
    errcodes = {k: v for k, v in result.globals.items() if k.endswith("__errcode__")}
    assert errcodes and all(not v.any() for v in errcodes.values()), errcodes
    return copies, result.globals


# ---- the kernels' inputs and NumPy's answers --------------------------------------------------------

F32 = np.float32
SENTINEL = -7


def blocks_1d(n: int, size: int) -> tuple[tuple[int], tuple[int]]:
    return ((n + size - 1) // size,), (size,)


def blocks_nd(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Grid and block for an array of ``shape`` (slowest first), x along the last axis."""
    extents = shape[::-1]
    return tuple((e + b - 1) // b for e, b in zip(extents, block, strict=True)), block


def randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def ref_stencil1d3(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    b = b.copy()
    b[1:-1] = F32(0.25) * a[:-2] + F32(0.5) * a[1:-1] + F32(0.25) * a[2:]
    return [a, b]


def ref_stencil1d5(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    b = b.copy()
    b[2:-2] = (-a[:-4] + 16.0 * a[1:-3] - 30.0 * a[2:-2] + 16.0 * a[3:-1] - a[4:]) / 12.0
    return [a, b]


def ref_stencil1d3_int(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    b = b.copy()
    b[1:-1] = a[:-2] + 2 * a[1:-1] + a[2:]
    return [a, b]


def ref_sum3(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    b = b.copy()
    b[1:-1] = a[:-2] + a[1:-1] + a[2:]
    return [a, b]


def ref_strided3(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    v, b = a[::2], b.copy()
    b[1 : len(v) - 1] = v[:-2] + v[1:-1] + v[2:]
    return [a, b]


def ref_diff_wrap(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [a, a - np.roll(a, 1)]  # a[0] - a[-1] first


def ref_periodic1d3(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [a, np.roll(a, 1) + a + np.roll(a, -1)]


def ref_dot(a: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    out = out.copy()
    out[0] += np.sum(a[:-1] * a[1:], dtype=np.int32)
    return [a, out]


def ref_atomic_pairs(a: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    out = out.copy()
    out[0] += np.sum(a[1:-1] + a[2:], dtype=np.int32)
    return [a, out]


def ref_lap2d5(u: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    w = w.copy()
    s = u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1]
    w[1:-1, 1:-1] = (s.astype(np.float64) - 4.0 * u[1:-1, 1:-1]).astype(F32)
    return [u, w]


def ref_box2d9(u: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    w, ny, nx = w.copy(), *u.shape
    s = np.zeros((ny - 2, nx - 2), F32)
    for dj in range(3):
        for di in range(3):
            s += u[dj : ny - 2 + dj, di : nx - 2 + di]
    w[1:-1, 1:-1] = s * F32(1.0 / 9.0)
    return [u, w]


def ref_lap3d7(u: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    w, c = w.copy(), u[1:-1, 1:-1, 1:-1]
    w[1:-1, 1:-1, 1:-1] = (
        u[1:-1, 1:-1, :-2]
        + u[1:-1, 1:-1, 2:]
        + u[1:-1, :-2, 1:-1]
        + u[1:-1, 2:, 1:-1]
        + u[:-2, 1:-1, 1:-1]
        + u[2:, 1:-1, 1:-1]
        - F32(6.0) * c
    )
    return [u, w]


@dataclass(frozen=True)
class Case:
    """A kernel of a fixture file, its arguments (an input of ``shape`` and
    an output), NumPy's answer and the launches to run it at."""

    stem: str
    function: str
    dtype: type
    shape: tuple[int, ...]
    reference: Callable[[np.ndarray, np.ndarray], list[np.ndarray]]
    launches: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    output: tuple[int, ...] | None = None  # the output's shape where not the input's

    @property
    def id(self) -> str:
        return f"{self.stem}-{self.function}"


N = 75  # 2 and a third warps; blocks of 32 and 48 leave the last block partial
LAUNCH_1D = (blocks_1d(N, 32), blocks_1d(N, 48))
SHAPE_2D = (11, 37)  # rows x columns
LAUNCH_2D = (blocks_nd(SHAPE_2D, (32, 4)), blocks_nd(SHAPE_2D, (16, 16)))
SHAPE_3D = (4, 5, 37)
LAUNCH_3D = (blocks_nd(SHAPE_3D, (32, 2, 2)), blocks_nd(SHAPE_3D, (16, 4, 4)))

CASES = [
    Case("numba_1d", "stencil1d3", np.float32, (N,), ref_stencil1d3, LAUNCH_1D),
    Case("numba_1d", "stencil1d5", np.float64, (N,), ref_stencil1d5, LAUNCH_1D),
    Case("numba_1d", "stencil1d3_int", np.int32, (N,), ref_stencil1d3_int, LAUNCH_1D),
    Case("numba_1d", "strided3", np.float32, (2 * N,), ref_strided3, LAUNCH_1D, output=(N,)),
    Case("numba_wrap", "diff_wrap", np.float32, (N,), ref_diff_wrap, LAUNCH_1D),
    Case("numba_wrap", "periodic1d3", np.float32, (N,), ref_periodic1d3, LAUNCH_1D),
    Case("numba_2d", "lap2d5", np.float32, SHAPE_2D, ref_lap2d5, LAUNCH_2D),
    Case("numba_2d", "box2d9", np.float32, SHAPE_2D, ref_box2d9, LAUNCH_2D),
    Case("numba_2d", "lap3d7", np.float32, SHAPE_3D, ref_lap3d7, LAUNCH_3D),
    Case("numba_contig_sm75", "lap2d5", np.float32, SHAPE_2D, ref_lap2d5, LAUNCH_2D),
    Case("numba_contig_sm75", "stencil1d3", np.float32, (N,), ref_stencil1d3, LAUNCH_1D),
    # The tile holds 64 threads; each block's first and last thread read their outer neighbour from global.
    Case(
        "numba_misc",
        "shared3",
        np.float32,
        (N,),
        ref_sum3,
        (blocks_1d(N, 32), blocks_1d(N, 48), blocks_1d(N, 64)),
    ),
    Case("numba_misc", "dot_neighbours", np.int32, (N,), ref_dot, LAUNCH_1D, output=(1,)),
    Case("numba_misc", "atomic_pairs", np.int32, (N,), ref_atomic_pairs, LAUNCH_1D, output=(1,)),
    # One warp walks 300 points (9 or 10 iterations: the 4-fold unrolled body and the remainder);
    # two blocks of 48 threads take 3 or 4.
    Case("numba_loop", "grid_stride3", np.float32, (300,), ref_sum3, (((1,), (32,)), ((2,), (48,)))),
    Case("numba_debug_1d", "stencil1d3", np.float32, (N,), ref_stencil1d3, LAUNCH_1D),
    Case("numba_debug_2d", "lap2d5", np.float32, SHAPE_2D, ref_lap2d5, LAUNCH_2D),
]


def inputs(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, case.id)))
    a = randn(rng, case.shape, case.dtype)
    out = np.full(case.output or case.shape, SENTINEL, case.dtype)
    if case.output == (1,):  # the sum's start
        out[0] = 5
    return [a, out]


# ---- the tests ------------------------------------------------------------------------------------


def summary(plan: KernelPlan) -> Expect:
    """The plan as an `Expect`: a load kept as the source of shuffles counts
    as ``source`` (``-G``'s loads in the called Python function, which
    `KernelPlan.global_loads` leaves out, with their reason too)."""
    sources = {id(v.source) for v in plan.chosen}
    kept = Counter(
        "source" if id(v.load) in sources else (v.reason or "?").split(";")[0]
        for v in plan.verdicts
        if not v.rewritten
    )
    deltas = tuple(sorted(v.delta for v in plan.chosen if v.delta is not None))
    return Expect(plan.global_loads, len(plan.chosen), deltas, dict(sorted(kept.items())))


@pytest.mark.parametrize("stem", FILES)
def test_parses_with_its_kernels(stem: str) -> None:
    """And `ptxasw check` would warn about no modifier or operand count."""
    module = parsed(stem)
    names = {function for (file, function) in EXPECTED if file == stem}
    assert len(module.kernels) == len(names)
    assert {kernel_name(module, function) for function in names} == {k.name for k in module.kernels}
    unknown = set()
    for inst in module.instructions():
        unknown.update((inst.opcode, modifier) for modifier in isa.unknown_modifiers(inst))
        problem = isa.operand_count_problem(inst)
        if problem is not None:
            unknown.add((inst.mnemonic, problem))
    assert not unknown


@needs_ptxas
@pytest.mark.parametrize("stem", FILES)
def test_printed_back_assembles_to_the_same_cubin(stem: str, tmp_path: Path) -> None:
    """`ptxasw fmt`: the same code (``-G``'s copy of the PTX text aside: `same_code`)."""
    arch, text = FILES[stem], (FIXTURES / f"{stem}.ptx").read_text()
    original = assert_assembles(text, tmp_path, arch)
    printed = assert_assembles(print_module(parsed(stem)), tmp_path, arch)
    assert same_code(original, printed)
    if "debug" not in stem:
        assert original == printed


@needs_ptxas
@pytest.mark.parametrize("stem", FILES)
def test_the_rewrite_assembles(stem: str, tmp_path: Path) -> None:
    _, text = rewritten(stem)
    assert_assembles(text, tmp_path, FILES[stem])


@pytest.mark.parametrize(("stem", "function"), list(EXPECTED), ids=[f"{s}-{f}" for s, f in EXPECTED])
def test_loads_shuffles_and_reasons(stem: str, function: str) -> None:
    plans, text = rewritten(stem)
    plan = plans[kernel_name(parsed(stem), function)]
    assert summary(plan) == EXPECTED[stem, function]
    assert all(v.proof == "proved" for v in plan.chosen), [v.proof for v in plan.chosen]
    assert text.count("shfl.sync") >= len(plan.chosen)


def test_every_kernel_is_run() -> None:
    assert {(c.stem, c.function) for c in CASES} == set(EXPECTED)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_rewrite_computes_the_same_bits(case: Case) -> None:
    _, text = rewritten(case.stem)
    original_text = (FIXTURES / f"{case.stem}.ptx").read_text()
    arrays = inputs(case)
    expected = case.reference(*arrays)
    for grid, block in case.launches:
        before, globals_before = run(original_text, case.stem, case.function, grid, block, arrays)
        after, globals_after = run(text, case.stem, case.function, grid, block, arrays)
        where = f"grid {grid} block {block}"
        for x, y in zip(before, after, strict=True):
            assert x.tobytes() == y.tobytes(), where
        assert globals_before.keys() == globals_after.keys()
        assert all(globals_before[k].tobytes() == globals_after[k].tobytes() for k in globals_before), where
        for got, want in zip(before, expected, strict=True):
            if np.issubdtype(want.dtype, np.integer):
                np.testing.assert_array_equal(got, want, err_msg=where)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=where)
