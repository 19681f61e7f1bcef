"""Where the fallback load and the loads after a shuffle go (`ptxasw.synth.codegen`,
`ptxasw.synth.schedule`).

In a block of few shuffles (`EARLY_FALLBACKS`) the corner lanes' fallback
load comes before its shuffle, into registers of its own, and the loads
written after the shuffle are raised above it (ptxas moves no load across
``shfl.sync``); a block of many keeps the paper's order, the fallback after
the shuffle into the load's registers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.codegen import EARLY_FALLBACKS
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

FIXTURES = Path(__file__).parent / "fixtures"


def _rewritten(fixture: str) -> str:
    module = parse_ptx((FIXTURES / fixture).read_text(), fixture)
    ShuffleSynthesisPass(Options(rounding="ptx")).run(module)
    return print_module(module)


def _kernel(text: str, name: str) -> list[str]:
    start = text.rindex(f".entry {name}")
    return [line.strip() for line in text[start : text.index("\n}", start)].splitlines()]


@pytest.fixture(scope="module")
def halo() -> str:
    return _rewritten("vector_halo.ptx")


def test_few_shuffles_load_their_fallback_first(halo: str) -> None:
    """``row4_r2``: 4 shuffles; each fallback load precedes its shuffle and
    a predicated ``mov`` after it puts the value in the load's register."""
    lines = _kernel(halo, "row4_r2")
    shuffles = [k for k, line in enumerate(lines) if line.startswith("shfl.sync")]
    fallbacks = [k for k, line in enumerate(lines) if line.startswith("@%sw") and " ld." in line]
    assert len(fallbacks) == 4 <= EARLY_FALLBACKS
    assert all("%swfb" in lines[k] for k in fallbacks)
    assert len(shuffles) == 4 and all(f < s for f, s in zip(fallbacks, shuffles, strict=True))
    merges = [line for line in lines if line.startswith("@%sw") and " mov." in line and "%swfb" in line]
    assert len(merges) >= 4


def test_many_shuffles_keep_the_papers_order(halo: str) -> None:
    """``box4_r2``: 20 shuffles in one block, more than `EARLY_FALLBACKS`:
    each fallback loads into the load's registers after the shuffles (raising
    them all made ptxas keep every value live: tricubic 32 -> 80 registers)."""
    lines = _kernel(halo, "box4_r2")
    shuffles = [k for k, line in enumerate(lines) if line.startswith("shfl.sync")]
    fallbacks = [k for k, line in enumerate(lines) if line.startswith("@%sw") and " ld." in line]
    assert len(shuffles) == 20 > EARLY_FALLBACKS
    assert fallbacks and not any("%swfb" in lines[k] for k in fallbacks)
    assert min(fallbacks) > min(shuffles)


def test_the_loads_after_a_shuffle_are_raised_above_it() -> None:
    """GCC's Fortran Jacobi: the rows above and below (``u(i, j-1)``,
    ``u(i, j+1)``) are written after ``u(i+1, j)``'s shuffle; they now leave
    before the shuffle's corner test, with the address arithmetic they need."""
    lines = _kernel(_rewritten("acc_fortran_gcc12.ptx"), "__stencils_MOD_jacobi2d$_omp_fn$0")
    loop = lines[lines.index("$L18:") :]
    corner = next(k for k, line in enumerate(loop) if line.startswith("activemask"))
    rows = [k for k, line in enumerate(loop) if line.startswith("ld.f64") and "+8]" in line]
    assert len(rows) == 2 and all(k < corner for k in rows)
