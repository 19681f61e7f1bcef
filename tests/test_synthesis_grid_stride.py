"""A warp that walks along a row 32 points at a time (OpenACC's gang loop, written in CUDA).

``tests/fixtures/grid_stride_loops.cu`` (nvcc's PTX beside it): ``gang``'s
inner loop is unrolled 4x with the remainder iterations peeled first, so
lanes whose trip counts differ are at different iterations in the unrolled
body and no load there may become a shuffle; in the peeled iterations
``u[c+1]`` and ``u[c]`` are shuffles of ``u[c-1]`` (the lanes that run them
form an incomplete warp, which loads for itself). ``gang1`` keeps the loop
rolled: two shuffles, exact for every lane.

Every question about the unrolled body is answered by a counterexample
(`Prover.refuted` evaluating a block at a launch with rows longer than four
warps' width), not by the solver's effort running out; the rewrites run in
the interpreter bit-equal to the originals at row lengths whose lanes'
trip counts differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.gang_loop_probe import laplacian
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options, _Detector
from ptxasw.synth.synthesize import ShuffleSynthesisPass

FIXTURE = Path(__file__).parent / "fixtures" / "grid_stride_loops.ptx"
UNROLLED_BODY = ("no neighbour", "divergent flow", "non-constant delta", "delta out of range")


@pytest.fixture(scope="module")
def rewritten() -> tuple[dict[str, object], str]:
    module = parse_ptx(FIXTURE.read_text(), FIXTURE.name)
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    result = synthesis.run(module)
    assert not result.stats.get("failed"), result.stats.get("failed_names")
    return {plan.kernel: plan for plan in synthesis.plans}, print_module(module)


def test_the_unrolled_body_is_refused_by_counterexamples() -> None:
    module = parse_ptx(FIXTURE.read_text(), FIXTURE.name)
    detector = _Detector(module, module.function("gang"), Options(), merge=True)
    verdicts = detector.plan()
    # Before the launch with rows past four warps (and a 2-D block's
    # %tid.y at 0), 21 of these questions cost the solver its limit each.
    assert detector.prover.unknown == 0
    shuffled = [v for v in verdicts if v.rewritten]
    assert sorted(v.delta for v in shuffled) == [-2, -2, -2, -1, -1, -1]
    # The unrolled body: the last 28 of the 49 loads; none shuffled.
    body = sorted(verdicts, key=lambda v: v.load.loc.line)[-28:]
    assert not any(v.rewritten for v in body)
    assert all(v.reason and v.reason.startswith(UNROLLED_BODY) for v in body), {v.reason for v in body}


def test_the_rolled_loop_shuffles_both_neighbours(rewritten: tuple[dict[str, object], str]) -> None:
    plans, _ = rewritten
    assert sorted(v.delta for v in plans["gang1"].chosen) == [-2, -1]
    assert sorted(v.delta for v in plans["gang"].chosen) == [-2, -2, -2, -1, -1, -1]


def run(text: str, kernel: str, u: np.ndarray, grid: int, block: tuple[int, int, int]) -> np.ndarray:
    nz, ny, nx = u.shape
    w = np.zeros_like(u)
    args = [u.copy(), w, np.int32(nx), np.int32(ny), np.int32(nz)]
    launch(parse_ptx(text, FIXTURE.name), kernel, (grid,), block, args)
    return w


@pytest.mark.parametrize("kernel", ["gang", "gang1"])
@pytest.mark.parametrize(
    ("nx", "grid", "block"),
    [
        (300, 1, (32, 1, 1)),  # 298 points a row: lanes 0-9 run 10 iterations, 10-31 run 9
        (300, 2, (32, 1, 1)),
        (70, 1, (32, 2, 1)),  # two warps a block, a row each; lanes 0-3 run 3 iterations, 4-31 run 2
        (171, 3, (48, 1, 1)),  # 48-thread rows: the second warp has 16 lanes
    ],
)
def test_the_rewrite_computes_the_same_bits(
    rewritten: tuple[dict[str, object], str], kernel: str, nx: int, grid: int, block: tuple[int, int, int]
) -> None:
    _, text = rewritten
    u = np.random.default_rng(nx).standard_normal((4, 4, nx)).astype(np.float32)
    original = run(FIXTURE.read_text(), kernel, u, grid, block)
    shuffled = run(text, kernel, u, grid, block)
    assert np.array_equal(original.view(np.uint32), shuffled.view(np.uint32))
    np.testing.assert_allclose(original, laplacian(u), rtol=1e-5, atol=1e-5)
