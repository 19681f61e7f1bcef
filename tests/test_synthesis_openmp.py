"""Shuffle synthesis on clang's OpenMP offload code as the link step gives it to ptxas.

With ``-foffload-lto`` clang links the device runtime (libomp's
``libomptarget.devicertl``) into the kernels before it calls ptxas, so the
drop-in sees the whole loop: ``teams distribute parallel for`` of a 1-D
stencil becomes a grid-stride loop over ``i``, with ``x[i - 1]`` and ``x[i +
1]`` walked by a 64-bit pointer and ``x[i]`` as ``(i << 32) >> 30`` (LLVM's
sign extension of a 32-bit index) stepped by ``ntid << 32``.
``tests/fixtures/omp_offload_lto_sm80.ptx`` is that PTX (captured from a
build of ``tests/corpus/openmp/omp_offload.c``; the end-to-end build is in
``tests/test_toolchain.py``). Both neighbours become shuffles of ``x[i -
1]``, under the no-wrap assumption, and the rewritten kernel computes the
same bits as the original in the reference interpreter, with block sizes
that are not multiples of 32 and grids that leave threads idle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.solver import NO_WRAP
from ptxasw.synth.synthesize import ShuffleSynthesisPass

FIXTURE = Path(__file__).parent / "fixtures" / "omp_offload_lto_sm80.ptx"
STENCIL = "__omp_offloading_fe00_5101a3_stencil1d_l14"


@pytest.fixture(scope="module")
def rewritten() -> tuple[str, str, list[tuple[int | None, tuple[str, ...]]]]:
    original = FIXTURE.read_text()
    module = parse_ptx(original, str(FIXTURE))
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    synthesis.run(module)
    plans = {plan.kernel: plan for plan in synthesis.plans}
    assert all(plan.analysis.complete for plan in plans.values())
    chosen = [(v.delta, v.assumptions) for v in plans[STENCIL].chosen]
    return original, print_module(module), chosen


def test_both_neighbours_of_the_openmp_stencil_are_shuffled(
    rewritten: tuple[str, str, list[tuple[int | None, tuple[str, ...]]]],
) -> None:
    _, text, chosen = rewritten
    assert sorted(delta for delta, _ in chosen) == [1, 2]  # x[i] and x[i + 1] from x[i - 1]
    assert all(NO_WRAP in assumptions for _, assumptions in chosen)
    kernel = text[text.index(f".entry {STENCIL}") :]
    assert kernel[: kernel.index("\n}")].count("shfl.sync.down") == 2


@pytest.mark.parametrize(("n", "grid", "block"), [(150, 2, 128), (300, 1, 128), (77, 3, 64), (200, 2, 96)])
def test_the_rewritten_openmp_stencil_computes_the_same_bits(
    rewritten: tuple[str, str, list[tuple[int | None, tuple[str, ...]]]], n: int, grid: int, block: int
) -> None:
    """The kernel's parameters: the runtime's dynamic pointer, ``n``, ``y``, ``x``."""
    original, text, _ = rewritten
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    outputs = []
    for ptx in (original, text):
        y = np.zeros(n, np.float32)
        launch(parse_ptx(ptx, str(FIXTURE)), STENCIL, (grid,), (block,), [np.zeros(8, np.uint8), n, y, x])
        outputs.append(y)
    assert np.array_equal(outputs[0], outputs[1])
    expected = np.zeros(n, np.float32)
    expected[1:-1] = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-6, atol=1e-6)
