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
import subprocess
from pathlib import Path

import pytest

from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

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
    source = tmp_path / "acc_fortran.ptx"
    source.write_text(text)
    proc = subprocess.run(
        ["ptxas", "-arch=sm_75", "-c", str(source), "-o", str(tmp_path / "acc_fortran.cubin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
