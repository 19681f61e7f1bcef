"""A kernel whose synthesis fails is said in the report, never dropped from it.

The synthesis pass is fail-open per kernel (a rewrite it cannot build leaves
the kernel as it was); ``ptxasw analyze`` printed the other kernels' rows and
none for it, with exit status 0, so a file whose every kernel failed gave an
empty table (GCC's ``.version 6.0`` PTX did, before the rewrite raised the
version that ``activemask`` needs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli import main
from ptxasw.ir.builder import BuildError
from ptxasw.synth.synthesize import ShuffleSynthesisPass

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "jacobi.ptx"


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: ShuffleSynthesisPass, fn: object, builder: object) -> None:
        raise BuildError("cannot build frobnicate.b32: made up for the test")

    monkeypatch.setattr(ShuffleSynthesisPass, "run_on_function", fail)


def test_the_table_says_which_kernel_failed_and_why(failing: None) -> None:
    result = CliRunner().invoke(main, ["analyze", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "error: cannot build frobnicate.b32: made up for the test" in result.output


def test_the_json_row_has_status_error(failing: None) -> None:
    result = CliRunner().invoke(main, ["analyze", "--json", str(EXAMPLE)])
    kernels = json.loads(result.output)["kernels"]
    assert kernels and all(k["status"] == "error" for k in kernels)
    assert kernels[0]["reason"] == "cannot build frobnicate.b32: made up for the test"
    assert kernels[0]["shuffles"] == 0 and kernels[0]["loads_detail"] == []


def test_rewrite_keeps_a_failed_kernel_as_it_was(failing: None, tmp_path: Path) -> None:
    out = tmp_path / "out.ptx"
    result = CliRunner().invoke(main, ["rewrite", str(EXAMPLE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "not synthesised: cannot build frobnicate.b32" in result.output
    assert "shfl.sync" not in out.read_text()
