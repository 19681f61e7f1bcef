"""clang's OpenMP offload kernels with the device runtime inlined (`tests.corpus.openmp_lto`):
PTX nobody here wrote, the link step's input to ptxas.

The front end keeps it (printed, it assembles to the same code), and the
synthesis analyses every kernel to the end: the runtime's loop scheduling
is in the kernel, not behind a call. The shuffles found are checked in the
interpreter by `tests/test_synthesis_openmp.py` (the stencil's fixture is the
first of these files, captured once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass
from tests.corpus.build import CorpusFile
from tests.cubin import same_code


def _assemble(ptx: Path, arch: str, out: Path) -> bytes:
    subprocess.run(["ptxas", f"-arch={arch}", str(ptx), "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


def test_printed_openmp_lto_ptx_assembles_to_the_same_code(
    openmp_lto_corpus: list[CorpusFile], tmp_path: Path
) -> None:
    for file in openmp_lto_corpus:
        printed = tmp_path / f"{file.name}.printed.ptx"
        printed.write_text(print_module(parse_ptx(file.ptx_path.read_text(), str(file.ptx_path))))
        original = _assemble(file.ptx_path, file.arch, tmp_path / f"{file.name}.a.cubin")
        again = _assemble(printed, file.arch, tmp_path / f"{file.name}.b.cubin")
        assert same_code(original, again), file.name


@pytest.mark.parametrize("source", ["omp_offload", "omp_target", "omp_realworld"])
def test_every_openmp_lto_kernel_is_analysed_to_the_end(
    openmp_lto_corpus: list[CorpusFile], source: str
) -> None:
    (file,) = [f for f in openmp_lto_corpus if f.name.startswith(f"{source}.")]
    module = parse_ptx(file.ptx_path.read_text(), str(file.ptx_path))
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx", time_s=60))
    synthesis.run(module)
    assert len(synthesis.plans) == len(module.kernels) >= 3
    for plan in synthesis.plans:
        assert plan.analysis.complete, (plan.kernel, plan.analysis.reason)
        assert not any((v.reason or "").startswith("analysis budget") for v in plan.verdicts), plan.kernel
    shuffles = {plan.kernel.split("_")[-2]: len(plan.chosen) for plan in synthesis.plans}
    if source == "omp_offload":
        assert shuffles["stencil1d"] == 2 and shuffles["saxpy"] == 0
    if source == "omp_realworld":
        # collapse(3): a neighbour along x wraps to the next row inside a warp.
        assert shuffles["seismic"] == 0
