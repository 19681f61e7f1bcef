"""benchmarks/gpu_speedup.py without a GPU: prepare, the run phase through the interpreter, the report.

The GPU run (CuPy) cannot happen in CI; the same `measure_kernel` logic runs
here with the concrete interpreter standing in for the device, so what the
GPU run decides (normal exact, noload/nocorner recorded as inexact, a wrong
"normal" caught, rows complete) is checked on the CPU.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from benchmarks import gpu_speedup as gs
from benchmarks.kernels import suite
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

pytestmark = [
    pytest.mark.skipif(suite.find_nvcc() is None, reason="nvcc not found: the suite compiles CUDA"),
    pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found: registers come from ptxas -v"),
]

KERNELS = ("jacobi", "vecadd")

VERBOSE = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compiling entry function 'jacobi' for 'sm_90'
ptxas info    : Function properties for jacobi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, used 0 barriers, 376 bytes cmem[0]
"""


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("prep")
    gs.prepare(folder, KERNELS, time_s=60, max_delta=31)
    return folder


@pytest.fixture(scope="module")
def dry_run(prepared: Path) -> dict:
    return gs.run(prepared, gs.InterpBackend(), ["jacobi"], quick=False, runs=1, dry=True)


def test_ptxas_verbose_is_read_per_kernel() -> None:
    assert gs.parse_ptxas_verbose(VERBOSE, "jacobi") == gs.Resources(26, 0, 0, 0)
    assert gs.parse_ptxas_verbose(VERBOSE, "other") == gs.Resources(255, 4, 4, 8)
    with pytest.raises(gs.BenchError, match="did not mention"):
        gs.parse_ptxas_verbose(VERBOSE, "missing")


def test_prepare_writes_every_variant_with_report_and_registers(prepared: Path) -> None:
    manifest = gs.load_manifest(prepared)
    assert [e["kernel"] for e in manifest["kernels"]] == list(KERNELS)
    jacobi = manifest["kernels"][0]
    syn = jacobi["synthesis"]
    assert (syn["shuffles"], syn["loads"]) == (6, 9)
    assert syn["proofs"] == {"proved": 6, "failed": 0}
    assert syn["average_delta"] > 0 and syn["analysis_seconds"] > 0
    texts = {v: (prepared / jacobi["variants"][v]["ptx"]).read_text() for v in gs.VARIANTS}
    assert len(set(texts.values())) == 4  # the three modes emit different code
    assert "shfl.sync" not in texts["original"] and all("shfl.sync" in texts[m] for m in gs.MODES)
    assert all(jacobi["variants"][v]["registers"] > 0 for v in gs.VARIANTS)
    # One plan emitted three times gives what the pass itself writes in normal mode.
    original = prepared / jacobi["variants"]["original"]["ptx"]
    module = parse_ptx(original.read_text(), str(original))
    ShuffleSynthesisPass(Options(time_s=60), {jacobi["symbol"]}).run(module)
    assert print_module(module) == texts["normal"]
    vecadd = manifest["kernels"][1]
    assert vecadd["synthesis"]["shuffles"] == 0
    assert "shfl.sync" not in (prepared / vecadd["variants"]["nocorner"]["ptx"]).read_text()


def test_run_checks_normal_and_records_the_unsafe_modes(dry_run: dict) -> None:
    rows = dry_run["rows"]
    assert {(r["variant"], r["size"]) for r in rows} == {
        (v, s) for v in gs.VARIANTS for s in ("ci", "ci-odd")
    }
    by = {(r["variant"], r["size"]): r for r in rows}
    for size in ("ci", "ci-odd"):
        assert by["normal", size]["exact"] and by["original", size]["exact"]
        assert by["normal", size]["exact_without_fma"]
        # The ablations are wrong at warp edges: the comparison must see it.
        for mode in ("noload", "nocorner"):
            assert not by[mode, size]["exact"] and by[mode, size]["differing_elements"] > 0
        assert by["original", size]["speedup_vs_original"] == 1.0
        assert by["normal", size]["shuffles"] == 6 and by["original", size]["shuffles"] == 0
    assert all(r["registers"] > 0 and r["ms"] > 0 for r in rows)
    summary = dry_run["summary"]
    assert (
        summary["normal_exact"] and summary["normal_exact_without_fma"] and summary["original_deterministic"]
    )
    assert not dry_run["errors"]


def test_a_wrong_normal_variant_is_caught(prepared: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tampered"
    shutil.copytree(prepared, folder)
    manifest = json.loads((folder / gs.MANIFEST).read_text())
    jacobi = manifest["kernels"][0]["variants"]
    wrong = (folder / jacobi["nocorner"]["ptx"]).read_text()
    (folder / jacobi["normal"]["ptx"]).write_text(wrong)
    with pytest.raises(gs.BenchError, match="changed since --prepare"):
        gs.load_manifest(folder)
    jacobi["normal"]["sha256"] = hashlib.sha256(wrong.encode()).hexdigest()
    (folder / gs.MANIFEST).write_text(json.dumps(manifest))
    result = gs.run(folder, gs.InterpBackend(), ["jacobi"], quick=True, runs=1, dry=True)
    assert not result["summary"]["normal_exact"] and not result["summary"]["normal_exact_without_fma"]
    assert result["summary"]["original_deterministic"]
    assert [gs.exactness(r) for r in result["rows"] if r["variant"] == "normal"] == ["NO"]


def test_command_line_errors_are_one_line(prepared: Path, tmp_path: Path, capsys) -> None:
    assert gs.main(["--run", str(tmp_path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no manifest" in err
    assert gs.main(["--run", str(prepared), "--dry-run", "jacobi"]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  oops")
    assert gs.main(["--plot", str(bad)]) == 2
    assert f"{bad}:2:3:" in capsys.readouterr().err


def test_markdown_and_plot(dry_run: dict, tmp_path: Path) -> None:
    md = gs.markdown(dry_run)
    row = next(line for line in md.splitlines() if line.startswith("| jacobi | 6/9 |"))
    assert row.endswith("| yes/yes |") and row.count("*") == 4  # noload, nocorner inexact at both sizes
    assert "| ci | with shuffles |" in md
    pytest.importorskip("matplotlib")
    png = tmp_path / "speedup.png"
    gs.plot(dry_run, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_pinned_kernel_runs_exact_in_the_interpreter(tmp_path: Path) -> None:
    """lapgsrb's ``a*b - c*d`` sums are pinned to the product ptxas fuses
    (`ptxasw.synth.pinning`): the manifest keeps the pins, and the
    interpreter, which fuses nothing by itself, runs the original with them,
    so the rewrite is checked against the bits the GPU computes."""
    gs.prepare(tmp_path, ["lapgsrb"], time_s=60, max_delta=31)
    (entry,) = gs.load_manifest(tmp_path)["kernels"]
    assert entry["pins"] and entry["synthesis"]["shuffles"] > 0
    result = gs.run(tmp_path, gs.InterpBackend(), ["lapgsrb"], quick=False, runs=1, dry=True)
    normal = [r for r in result["rows"] if r["variant"] == "normal"]
    assert normal and all(r["exact"] for r in normal)
