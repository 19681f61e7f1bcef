"""GCC's OpenACC offload PTX (Fortran, gfortran-12): the shuffles it gets.

GCC runs every OpenACC loop body with a "vector single" prologue: lane 0 of
each row loads the offload arguments (``tid.x == 0``) and broadcasts them
with ``shfl.sync.idx`` from lane 0; the kernel is launched with the block
its ``//:FUNC_MAP`` comment gives (vector 32, one worker). Before the
executor knew the block and followed the broadcast, every load's address
held lane 0's undefined registers and no load of GCC's offload code was
shown to be global memory, so none was ever shuffled.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.concrete.memory import GLOBAL_WINDOW
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass
from tests.cubin import assert_assembles

FIXTURE = Path(__file__).parent / "fixtures" / "acc_fortran_gcc12.ptx"
SMOOTH = "__stencils_MOD_smooth1d$_omp_fn$0"


@pytest.fixture(scope="module")
def synthesised() -> tuple[dict, str]:
    module = parse_ptx(FIXTURE.read_text(), str(FIXTURE))
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    result = synthesis.run(module)
    assert not result.stats.get("failed"), result.stats.get("failed_names")
    return {plan.kernel: plan for plan in synthesis.plans}, print_module(module)


def test_the_offload_map_gives_the_block() -> None:
    module = parse_ptx(FIXTURE.read_text(), str(FIXTURE))
    blocks = module.index().launch_blocks
    assert blocks == {fn.name: (32, 1, 1) for fn in module.kernels}


def test_both_neighbours_of_the_fortran_stencil_are_shuffled(synthesised: tuple[dict, str]) -> None:
    """``y(i) = 0.25 x(i-1) + 0.5 x(i) + 0.25 x(i+1)``: two of the three loads
    come from the third's neighbours, proven on the rewritten kernel."""
    plans, text = synthesised
    assert all(plan.analysis.complete for plan in plans.values())
    plan = plans[SMOOTH]
    assert sorted(v.delta for v in plan.chosen) == [-1, 1]
    kernel = text[text.rindex(f".entry {SMOOTH}") :]  # the definition, after its declaration
    kernel = kernel[: kernel.index("\n}")]
    assert kernel.count("shfl.sync.up") == 1 and kernel.count("shfl.sync.down") == 1
    # activemask (the corner test) needs PTX ISA 6.2; GCC wrote 6.0.
    assert ".version 6.2" in text and ".version 6.0" not in text


def test_the_lane_zero_loads_are_not_shuffled(synthesised: tuple[dict, str]) -> None:
    """The argument loads of the vector-single prologue run in lane 0 only."""
    plans, _ = synthesised
    for plan in plans.values():
        for verdict in plan.chosen:
            assert verdict.load.guard is None


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_the_rewrite_assembles(synthesised: tuple[dict, str], tmp_path: Path) -> None:
    _, text = synthesised
    assert_assembles(text, tmp_path, "sm_75", "-c")


def _smooth(text: str, x: np.ndarray, gangs: int) -> np.ndarray:
    """Run ``smooth1d`` as libgomp would: one u64 parameter, the offload
    argument block, whose slots hold the addresses of the variables' homes
    (``x`` and ``y`` through a pointer each, and the loop's last index ``n -
    1``, which the host computes, directly). Everything
    lives in one buffer, the launch's first allocation, so its addresses are
    known before the launch."""
    n = x.size
    heap = np.zeros(16384 + 4 * n, np.uint8)
    base = GLOBAL_WINDOW
    x_at, y_at = 1024, 1024 + 4 * n + 256
    assert y_at + 4 * n <= heap.size
    slots = heap[:512].view(np.uint64)
    slots[1], slots[3], slots[4] = base + 256, base + 264, base + 272  # [ar0+8], [ar0+24], [ar0+32]
    slots[32], slots[33] = base + x_at, base + y_at  # the homes of x's and y's addresses
    heap[272:276].view(np.int32)[0] = n - 1
    heap[x_at : x_at + 4 * n] = x.view(np.uint8)
    launch(parse_ptx(text, str(FIXTURE)), SMOOTH, (gangs,), (32, 1, 1), [heap])
    return heap[y_at : y_at + 4 * n].view(np.float32).copy()


@pytest.mark.parametrize(("n", "gangs"), [(100, 1), (77, 2), (300, 3), (33, 1)])
def test_the_rewritten_fortran_stencil_computes_the_same_bits(
    synthesised: tuple[dict, str], n: int, gangs: int
) -> None:
    _, text = synthesised
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    original = _smooth(FIXTURE.read_text(), x, gangs)
    rewritten = _smooth(text, x, gangs)
    assert np.array_equal(original.view(np.uint32), rewritten.view(np.uint32))
    expected = np.zeros(n, np.float32)
    expected[1:-1] = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
    np.testing.assert_allclose(original, expected, rtol=1e-5, atol=1e-6)


JACOBI = "__stencils_MOD_jacobi2d$_omp_fn$0"


def _jacobi(text: str, u: np.ndarray, gangs: int) -> np.ndarray:
    """``jacobi2d`` (a gang loop over ``j``, a vector loop over ``i``) with
    its argument block: every slot the address of a home, the homes holding
    ``u``'s and ``v``'s addresses, the ``j`` loop's last index (``ny - 1``),
    each array's offset and column stride (Fortran's ``-(1 + nx)`` and
    ``nx``, 1-based, column-major) and ``nx``."""
    nx, ny = u.shape
    n = nx * ny
    heap = np.zeros(8192 + 16 * n, np.uint8)
    base = GLOBAL_WINDOW
    u_at, v_at = 2048, 4096 + 8 * n
    slots = heap[:512].view(np.uint64)
    for k, offset in enumerate((8, 24, 32, 40, 48, 56, 64, 72)):
        slots[offset // 8] = base + 512 + 8 * k
    homes = heap[512:576].view(np.int64)
    homes[:] = (base + u_at, base + v_at, ny - 1, -(1 + nx), nx, -(1 + nx), nx, nx)
    heap[u_at : u_at + 8 * n] = u.ravel(order="F").view(np.uint8)
    launch(parse_ptx(text, str(FIXTURE)), JACOBI, (gangs,), (32, 1, 1), [heap])
    return heap[v_at : v_at + 8 * n].view(np.float64).reshape((nx, ny), order="F").copy()


def test_the_fortran_jacobi_shuffles_its_right_neighbour(synthesised: tuple[dict, str]) -> None:
    """``u(i+1, j)`` from ``u(i-1, j)`` two lanes on (the vector loop's
    ``i``); the row above and below are other rows."""
    plans, _ = synthesised
    assert [v.delta for v in plans[JACOBI].chosen] == [2]


@pytest.mark.parametrize(("nx", "ny", "gangs"), [(40, 7, 1), (40, 7, 2), (70, 5, 3), (33, 4, 1)])
def test_the_rewritten_fortran_jacobi_computes_the_same_bits(
    synthesised: tuple[dict, str], nx: int, ny: int, gangs: int
) -> None:
    _, text = synthesised
    u = np.random.default_rng(nx * ny).standard_normal((nx, ny))
    original = _jacobi(FIXTURE.read_text(), u, gangs)
    rewritten = _jacobi(text, u, gangs)
    assert np.array_equal(original.view(np.uint64), rewritten.view(np.uint64))
    expected = np.zeros((nx, ny))
    expected[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    np.testing.assert_allclose(original, expected, rtol=1e-12, atol=1e-12)


LAP3D = "__stencils_MOD_lap3d$_omp_fn$0"


def _lap3d(text: str, u: np.ndarray, step: int, gangs: int) -> np.ndarray:
    """``lap3d`` over assumed-shape arrays (descriptors): its argument
    block as GCC's host code fills it (``-fdump-tree-omplower``): slots +8
    and +24 the homes of ``u``'s and ``w``'s data addresses, +32 and +40
    ``size(u,2) - 1`` and ``size(u,3) - 1`` (the collapsed gang loops'
    bounds), +48..+72 ``w``'s offset and strides (dims 3, 2, 1), +80, +88,
    +104, +120 ``u``'s offset and strides (dims 3, 2, 1), +128
    ``size(u,1)``. ``u`` is a section of every ``step``-th element along
    its first dimension (a stride the kernel reads at run time); ``w`` is
    contiguous and starts at -7."""
    nx, ny, nz = u.shape
    u_whole = np.zeros((nx * step, ny, nz), np.float32, order="F")
    u_whole[::step] = u
    heap = np.zeros(4096 + 4 * u_whole.size + 4 * u.size + 256, np.uint8)
    u_at, w_at = 4096, 4096 + 4 * u_whole.size + 128
    heap[u_at : u_at + 4 * u_whole.size] = u_whole.ravel(order="F").view(np.uint8)
    w = np.full(u.shape, -7.0, np.float32)
    heap[w_at : w_at + 4 * w.size] = w.ravel(order="F").view(np.uint8)
    us = (step, step * nx, step * nx * ny)  # u's strides in elements, dims 1, 2, 3
    ws = (1, nx, nx * ny)
    homes = {
        8: GLOBAL_WINDOW + u_at,
        24: GLOBAL_WINDOW + w_at,
        32: ny - 1,
        40: nz - 1,
        48: -sum(ws),
        56: ws[2],
        64: ws[1],
        72: ws[0],
        80: -sum(us),
        88: us[2],
        104: us[1],
        120: us[0],
        128: nx,
    }
    slots = heap[:256].view(np.uint64)
    values = heap[1024:2048].view(np.int64)
    for k, (offset, value) in enumerate(homes.items()):
        slots[offset // 8] = GLOBAL_WINDOW + 1024 + 8 * k
        values[k] = value
    launch(parse_ptx(text, str(FIXTURE)), LAP3D, (gangs,), (32, 1, 1), [heap])
    return heap[w_at : w_at + 4 * w.size].view(np.float32).reshape(u.shape, order="F").copy()


def test_the_assumed_shape_laplacian_shuffles_along_dimension_one(synthesised: tuple[dict, str]) -> None:
    """``u(i-1, j, k)`` and ``u(i+1, j, k)`` from ``u(i, j, k)``, one lane
    either side: the element stride is the descriptor's, unknown, but every
    load takes the same one. (The first needed the proof to read
    ``%laneid`` as ``%tid.x`` in rows of one warp.)"""
    plans, _ = synthesised
    assert sorted(v.delta for v in plans[LAP3D].chosen) == [-1, 1]


LAP3D_CASES = [((37, 5, 4), 1, 1), ((37, 5, 4), 2, 3), ((33, 4, 5), 3, 2)]  # shape, u's step, gangs


@pytest.mark.parametrize(("shape", "step", "gangs"), LAP3D_CASES)
def test_the_rewritten_laplacian_computes_the_same_bits(
    synthesised: tuple[dict, str], shape: tuple[int, int, int], step: int, gangs: int
) -> None:
    _, text = synthesised
    u = np.random.default_rng(sum(shape) + step).standard_normal(shape).astype(np.float32)
    original = _lap3d(FIXTURE.read_text(), u, step, gangs)
    rewritten = _lap3d(text, u, step, gangs)
    assert np.array_equal(original.view(np.uint32), rewritten.view(np.uint32))
    c = u[1:-1, 1:-1, 1:-1]
    expected = np.full(shape, -7.0, np.float32)
    expected[1:-1, 1:-1, 1:-1] = (
        (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1])
        + (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:])
        - 6 * c
    )
    np.testing.assert_allclose(original, expected, rtol=1e-5, atol=1e-5)
