"""GCC's OpenACC gang loop keeps its arrays' addresses in lane 0 and
broadcasts them at the top of every iteration (C, arrays at file scope).

``tests/corpus/gcc/acc_jacobi.c`` compiled by gcc-12 ``-fopenacc``
(``tests/fixtures/acc_jacobi_gcc12.ptx``): lane 0 loads ``u``'s and ``v``'s
addresses from the argument block before the gang loop, and each iteration
begins with ``mov.b64 {lo, hi}, r; shfl.sync.idx.b32 lo, lo, 0, 31, -1; ...;
mov.b64 r, {lo, hi}``. The loop summary used to make such a register an
unknown loop value, so no load through it was shown to read global memory
("generic address not shown to be global memory"); the executor now knows
it holds lane 0's entry value from the first broadcast on, and
``u[j][i+1]`` becomes a shuffle of ``u[j][i-1]`` two lanes on.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.gcc_openacc_c import KERNELS
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.concrete.memory import GLOBAL_WINDOW
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass
from tests.cubin import assert_assembles

FIXTURE = Path(__file__).parent / "fixtures" / "acc_jacobi_gcc12.ptx"
# The same source at -O3: GCC unrolls the vector loop (three shuffles, N = -2).
FIXTURE_O3 = Path(__file__).parent / "fixtures" / "acc_jacobi_O3_gcc12.ptx"
JACOBI = "jacobi$_omp_fn$0"
NX, NY = 70, 9  # the source's array shape


def synthesise(text: str) -> tuple[object, str]:
    module = parse_ptx(text, "gcc-openacc.ptx")
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    result = synthesis.run(module)
    assert not result.stats.get("failed"), result.stats.get("failed_names")
    (plan,) = synthesis.plans
    return plan, print_module(module)


@pytest.fixture(scope="module")
def synthesised() -> tuple[object, str]:
    return synthesise(FIXTURE.read_text())


def test_the_right_neighbour_is_a_shuffle_of_the_left(synthesised: tuple[object, str]) -> None:
    plan, _ = synthesised
    assert plan.analysis.complete
    assert [v.delta for v in plan.chosen] == [2]
    generic = [v for v in plan.verdicts if v.reason and "generic address" in v.reason]
    assert not generic, [v.reason for v in generic]


@pytest.mark.parametrize(
    "edit",
    [
        # the broadcast reads lane 1: not lane 0's value
        (r"(shfl\.sync\.idx\.b32\t%r\d+, %r\d+, )0(, 31, 0xffffffff;)", r"\g<1>1\g<2>"),
        # a partial mask: not every lane takes part
        (r"(shfl\.sync\.idx\.b32\t%r\d+, %r\d+, 0, 31, )0xffffffff;", r"\g<1>0x0000ffff;"),
    ],
)
def test_a_register_is_summarised_as_broadcast_only_when_it_is(edit: tuple[str, str]) -> None:
    """Changing every broadcast of the gang loop (the base pointers', the
    row offsets', the loop test's) leaves the registers unknown loop values
    again: the loads through them are not shown to read global memory."""
    text = FIXTURE.read_text()
    loop = text.index("$L9:")
    pattern, replacement = edit
    edited, count = re.subn(pattern, replacement, text[loop:])
    assert count > 0
    plan, _ = synthesise(text[:loop] + edited)
    assert not plan.chosen


def _launch(text: str, symbol: str, u: np.ndarray, gangs: int) -> np.ndarray:
    """Run the kernel as libgomp does: one u64 parameter, the argument
    block, whose two slots hold the input's and the output's device
    addresses (in the order of the data clauses), all in the launch's first
    allocation; the output (``u``'s shape and type) starts at -7."""
    size = u.nbytes
    heap = np.zeros(1024 + 2 * size + 512, np.uint8)
    u_at, out_at = 512, 512 + size + 256
    heap[:16].view(np.uint64)[:] = (GLOBAL_WINDOW + u_at, GLOBAL_WINDOW + out_at)
    heap[u_at : u_at + size] = u.view(np.uint8).ravel()
    heap[out_at : out_at + size] = np.full(u.shape, -7.0, u.dtype).view(np.uint8).ravel()
    launch(parse_ptx(text, "gcc-openacc.ptx"), symbol, (gangs,), (32, 1, 1), [heap])
    return heap[out_at : out_at + size].view(u.dtype).reshape(u.shape).copy()


def check_same_bits(
    kernel: str, symbol: str, original_text: str, rewritten_text: str, u: np.ndarray, gangs: int
) -> None:
    """Original and rewrite bit-equal, and equal to NumPy (the benchmark's
    reference and tolerance for ``kernel``)."""
    original = _launch(original_text, symbol, u, gangs)
    rewritten = _launch(rewritten_text, symbol, u, gangs)
    bits = np.uint64 if u.dtype == np.float64 else np.uint32
    assert np.array_equal(original.view(bits), rewritten.view(bits))
    tolerance = KERNELS[kernel].tolerance
    np.testing.assert_allclose(original, KERNELS[kernel].reference(u), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("gangs", [1, 2, 3, 7])
def test_the_rewritten_jacobi_computes_the_same_bits(synthesised: tuple[object, str], gangs: int) -> None:
    """Rows split between gangs (7 interior rows: one, some, all gangs
    with a row each); the vector loop's last pass over a row of 68
    interior columns leaves lanes 4-31 idle: the warp is incomplete there
    and every lane loads."""
    _, text = synthesised
    check_jacobi(FIXTURE.read_text(), text, gangs)


@pytest.mark.parametrize("gangs", [1, 3])
def test_the_unrolled_jacobi_at_O3(gangs: int) -> None:
    plan, text = synthesise(FIXTURE_O3.read_text())
    assert [v.delta for v in plan.chosen] == [-2, -2, -2]
    check_jacobi(FIXTURE_O3.read_text(), text, gangs)


def check_jacobi(original_text: str, rewritten_text: str, gangs: int) -> None:
    u = np.random.default_rng(gangs).standard_normal((NY, NX))
    check_same_bits("jacobi", JACOBI, original_text, rewritten_text, u, gangs)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_the_rewrite_assembles(synthesised: tuple[object, str], tmp_path: Path) -> None:
    _, text = synthesised
    assert_assembles(text, tmp_path, "sm_75", "-c")


# A 3-D Laplacian over file-scope arrays: a collapse(2) gang loop over (k, j),
# a vector loop over i (tests/corpus/gcc/acc_lap3d.c).
LAP3D_FIXTURE = Path(__file__).parent / "fixtures" / "acc_lap3d_gcc12.ptx"
LAP3D = "lap3d$_omp_fn$0"
LX, LY, LZ = 70, 6, 5


@pytest.mark.parametrize("gangs", [1, 2, 5])
def test_the_c_laplacian_shuffles_both_neighbours_and_computes_the_same_bits(gangs: int) -> None:
    """``u[k][j][i-1]`` and ``u[k][j][i+1]`` from ``u[k][j][i]``, one lane
    either side; the collapsed gang loop's pairs (k, j) split between gangs."""
    plan, text = synthesise(LAP3D_FIXTURE.read_text())
    assert sorted(v.delta for v in plan.chosen) == [-1, 1]
    u = np.random.default_rng(gangs).standard_normal((LZ, LY, LX)).astype(np.float32)
    check_same_bits("lap3d", LAP3D, LAP3D_FIXTURE.read_text(), text, u, gangs)
