"""``-k NAME`` selects kernels by their own name or by the function name in a
mangled one (`ptxasw.parser.kernel_names`), as Nsight Compute's
``--kernel-name`` does: Numba's kernels are named by 200-character mangled
names that nobody types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli import main
from ptxasw.parser.kernel_names import base_name, resolve_kernels

FIXTURES = Path(__file__).parent / "fixtures"
NUMBA = FIXTURES / "numba_1d.ptx"
STENCIL1D5 = next(
    line.split()[2].rstrip("(")
    for line in NUMBA.read_text().splitlines()
    if ".entry" in line and "stencil1d5" in line
)


@pytest.mark.parametrize(
    ("mangled", "name"),
    [
        ("_Z7stencilPKfPfi", "stencil"),
        ("_Z6kernelIfEvPT_", "kernel"),  # a template instance
        ("_ZN3foo6detail5applyEPKfPf", "apply"),  # namespaces
        ("_ZNK3foo3barEv", "bar"),  # a const member function
        (STENCIL1D5, "stencil1d5"),  # Numba: ABI tags after the name
        ("jacobi", "jacobi"),  # extern "C"
        ("main$_omp_fn$0", "main$_omp_fn$0"),  # GCC's offloaded region
        ("_Z3", "_Z3"),  # not a whole mangled name: itself
    ],
)
def test_the_function_name_of_a_mangled_name(mangled: str, name: str) -> None:
    assert base_name(mangled) == name


def test_own_names_come_first_then_every_overload() -> None:
    names = ["gang", "gang1", "_Z4gangPf", "_Z4gangPd", "_Z5otherv"]
    assert resolve_kernels(names, ["gang"]) == (["gang"], [])
    assert resolve_kernels(names, ["other", "_Z4gangPf"]) == (["_Z5otherv", "_Z4gangPf"], [])
    assert resolve_kernels(names, ["nosuch", "gang1"]) == (["gang1"], ["nosuch"])


def test_analyze_and_trace_take_the_function_name() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["analyze", "--json", str(NUMBA), "-k", "stencil1d5"])
    assert result.exit_code == 0, result.output
    assert [k["name"] for k in json.loads(result.output)["kernels"]] == [STENCIL1D5]
    result = runner.invoke(main, ["trace", str(NUMBA), "-k", "stencil1d5"])
    assert result.exit_code == 0, result.output
    assert f"kernel {STENCIL1D5}" in result.output and "stencil1d3" not in result.output


def test_a_name_that_selects_nothing_is_one_line() -> None:
    result = CliRunner().invoke(main, ["analyze", str(NUMBA), "-k", "stencil9d"])
    assert result.exit_code != 0
    assert "no kernel named stencil9d" in result.output and "Traceback" not in result.output


def test_run_wants_one_kernel(tmp_path: Path) -> None:
    source = FIXTURES / "grid_stride_loops.ptx"
    command = ["run", str(source), "--grid", "1", "--block", "32", "-o", str(tmp_path)]
    result = CliRunner().invoke(main, command)
    assert result.exit_code != 0 and "has 2 kernels (gang, gang1)" in result.output
