"""``ptxasw tune`` and its verdicts, without a GPU.

The GPU is a `ptxasw.tune.device.Device`; here a fake one runs the assembled
variants' PTX in the concrete interpreter (so the bit-for-bit check compares
real outputs of the real rewrite) and reports the times a test gives it. The
drop-in then runs as a program, as a build runs it, against the stored
verdicts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from ptxasw.cli import main as cli
from ptxasw.driver import tuning
from ptxasw.driver.ptxas import find_real_ptxas
from ptxasw.parser import read_ptx
from ptxasw.synth.detect import Options
from ptxasw.tune import device as gpu
from ptxasw.tune.select import decide, differences, measure
from ptxasw.tune.session import Settings, tune_kernels
from ptxasw.tune.variants import build_variants

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "jacobi.ptx"
SYMBOL = "_Z8jacobi2dPKfPfii"
NX, NY = 40, 20
GRID, BLOCK = (2, 3, 1), (32, 8, 1)

try:
    PTXAS: Path | None = find_real_ptxas()
except Exception:
    PTXAS = None
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


class FakeGpu:
    """A `Device` that runs each variant's PTX (written beside its cubin) in the
    interpreter and times it as told: ``times[variant]`` ms per sample."""

    name = "fake GPU"

    def __init__(self, times: Mapping[str, float], corrupt: bool = False) -> None:
        self.times = dict(times)
        self.corrupt = corrupt
        self.loaded: list[Path] = []

    def load(self, cubin: Path, symbol: str) -> Any:
        assert cubin.read_bytes()[:4] == b"\x7fELF"
        self.loaded.append(cubin)
        return read_ptx(str(cubin.with_suffix(".ptx"))), symbol, "shuffle" in cubin.name

    def run(self, kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray | None]:
        from ptxasw.emulator.concrete.interpreter import launch

        module, symbol, rewritten = kernel
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        result = launch(module, symbol, grid, block, copies)
        out = [b if isinstance(b, np.ndarray) else None for b in result.buffers]
        if self.corrupt and rewritten:
            out[1] = out[1].copy()
            out[1][NX + 1] += 1.0
        return out

    def time(
        self, kernels: Mapping[str, Any], grid: Any, block: Any, args: Any, runs: int, warmup: int
    ) -> dict[str, list[float]]:
        return {name: [self.times[name]] * runs for name in kernels}


def _jacobi_args() -> list[Any]:
    rng = np.random.default_rng(1)
    return [
        rng.random(NX * NY, dtype=np.float32),
        np.zeros(NX * NY, np.float32),
        np.int32(NX),
        np.int32(NY),
    ]


def _tune(tmp: Path, original_ms: float, shuffle_ms: float, **kw: Any) -> list:
    module = read_ptx(str(EXAMPLE))
    store = tuning.VerdictStore(tmp / "tune")
    device = FakeGpu({"original": original_ms, "shuffle": shuffle_ms}, **kw)
    return tune_kernels(
        module, EXAMPLE.read_text(), [SYMBOL], GRID, BLOCK, _jacobi_args(), [1],
        device, PTXAS, Settings("sm_90", runs=5, warmup=1), store,
    )  # fmt: skip


# --------------------------------------------------------------------------
# The decision


def test_decide_needs_more_than_the_margin() -> None:
    assert decide(1.0, 0.95, 0.01) == "shuffle"
    assert decide(1.0, 0.995, 0.01) == "original"  # within the margin: the user's code
    assert decide(1.0, 1.0, 0.0) == "original"  # a tie
    assert decide(1.0, 1.2, 0.01) == "original"


def test_differences_count_bits_not_values() -> None:
    a = np.array([0.0, np.nan, 1.0], np.float32)
    b = np.array([-0.0, np.nan, 1.0], np.float32)
    assert differences([a], [a.copy()], [0]) == []
    (line,) = differences([a], [b], [0])
    assert line.startswith("arg0: 1 of 3 elements differ, first at 0")


def test_measure_with_fake_buffers() -> None:
    """The check comes before the timing; a mismatch is never timed."""

    class Buffers:
        name = "buffers"

        def __init__(self, outs: dict[str, list], times: dict[str, float]) -> None:
            self.outs, self.times, self.timed = outs, times, False

        def run(self, kernel: str, *_: Any) -> list:
            return self.outs[kernel]

        def time(self, kernels: Mapping[str, str], *_: Any) -> dict[str, list[float]]:
            self.timed = True
            return {k: [self.times[k], self.times[k] * 3, self.times[k] / 2] for k in kernels}

    same = [np.arange(4, dtype=np.float32), None]
    dev = Buffers({"original": same, "shuffle": same}, {"original": 2.0, "shuffle": 1.0})
    kernels = {"original": "original", "shuffle": "shuffle"}
    found = measure(dev, kernels, GRID, BLOCK, [], [0, 1], runs=3, warmup=0)
    assert (found.choice, found.original_ms, found.shuffle_ms, found.samples) == ("shuffle", 2.0, 1.0, 3)
    other = [np.arange(4, dtype=np.float32) + 1, None]
    dev = Buffers({"original": same, "shuffle": other}, {"original": 2.0, "shuffle": 1.0})
    found = measure(dev, kernels, GRID, BLOCK, [], [0], runs=3, warmup=0)
    assert found.choice == "original" and not dev.timed
    assert "bug in ptxasw" in (found.error("k") or "")
    # The same difference gone with --fmad=false: ptxas's contraction, not a bug.
    dev.outs["shuffle-plain"] = same
    found = measure(
        dev, kernels, GRID, BLOCK, [], [0], runs=3, warmup=0,
        without_fma=lambda: {"original": "original", "shuffle": "shuffle-plain"},
    )  # fmt: skip
    assert found.choice == "original" and found.fma_only is True
    assert "FMA contraction" in (found.error("k") or "")


@needs_ptxas
@pytest.mark.parametrize(
    ("original_ms", "shuffle_ms", "choice"),
    [(1.0, 0.9, "shuffle"), (1.0, 0.995, "original"), (1.0, 1.1, "original")],
)
def test_verdict_stored(tmp_path: Path, original_ms: float, shuffle_ms: float, choice: str) -> None:
    (row,) = _tune(tmp_path, original_ms, shuffle_ms)
    assert (row.verdict, row.shuffles, row.loads, row.error) == (choice, 2, 5, None)
    assert row.speedup == pytest.approx(original_ms / shuffle_ms, rel=1e-3)
    stored = json.loads(Path(row.stored).read_text())
    assert stored["choice"] == choice and stored["arch"] == "sm_90" and stored["device"] == "fake GPU"
    module = read_ptx(str(EXAMPLE))
    v = build_variants(module, EXAMPLE.read_text(), module.function(SYMBOL), Options(arch="sm_90"))
    got = tuning.VerdictStore(tmp_path / "tune").get(v.kernel_hash, "sm_90", "normal", 31)
    assert got is not None and got.choice == choice and got.rewrite_hash == v.rewrite_hash


@needs_ptxas
def test_mismatch_is_original_and_an_error(tmp_path: Path) -> None:
    (row,) = _tune(tmp_path, 2.0, 1.0, corrupt=True)
    assert row.verdict == "original" and row.bug
    assert row.error.startswith(f"{SYMBOL}: the rewritten kernel computes different values (arg1: 1 of")
    assert row.original_ms is None  # not timed
    assert json.loads(Path(row.stored).read_text())["choice"] == "original"


# --------------------------------------------------------------------------
# The command line


def _cli_args(tmp: Path) -> list[str]:
    data = tmp / "in.npy"
    np.save(data, _jacobi_args()[0])
    return [
        "tune", str(EXAMPLE), "-arch", "sm_90", "--grid", "2,3", "--block", "32,8",
        str(data), f"zeros:f32:{NX * NY}@out", f"i32:{NX}", f"i32:{NY}", "--runs", "3",
    ]  # fmt: skip


@needs_ptxas
def test_cli_tunes_and_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXASW_TUNE_DIR", str(tmp_path / "tune"))
    monkeypatch.setattr(gpu, "open_gpu", lambda: FakeGpu({"original": 1.0, "shuffle": 0.8}))
    result = CliRunner().invoke(cli, [*_cli_args(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (row,) = data["kernels"]
    assert (row["kernel"], row["verdict"], row["shuffles"]) == (SYMBOL, "shuffle", 2)
    assert row["speedup"] == pytest.approx(1.25)
    assert Path(row["stored"]).parent == tmp_path / "tune" / "sm_90"
    # The table, and a second run that finds the original faster replaces the verdict.
    monkeypatch.setattr(gpu, "open_gpu", lambda: FakeGpu({"original": 1.0, "shuffle": 1.3}))
    result = CliRunner().invoke(cli, _cli_args(tmp_path))
    assert result.exit_code == 0, result.output
    assert "original" in result.stdout and "stored 1 verdict" in result.stdout
    assert json.loads(Path(row["stored"]).read_text())["choice"] == "original"


def test_cli_without_cupy_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    result = CliRunner().invoke(cli, _cli_args(tmp_path))
    assert result.exit_code == 1
    assert result.stderr == (
        "ptxasw: error: ptxasw tune needs CuPy to run kernels on the GPU (pip install 'ptxasw[gpu]')\n"
    )


def test_cli_without_ptxas_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXASW_REAL_PTXAS", str(tmp_path / "no-ptxas"))
    result = CliRunner().invoke(cli, _cli_args(tmp_path))
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"ptxasw: error: PTXASW_REAL_PTXAS={tmp_path / 'no-ptxas'} is not an executable file\n"
    )
    result = CliRunner().invoke(cli, ["tune", str(tmp_path / "none.ptx"), "-arch", "sm_90", "--block", "32"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "none.ptx" in result.stderr


def test_cli_without_gpu_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_device() -> int:
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_device))
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    result = CliRunner().invoke(cli, _cli_args(tmp_path))
    assert result.exit_code == 1
    assert (
        result.stderr
        == "ptxasw: error: no CUDA device: cudaErrorNoDevice: no CUDA-capable device is detected\n"
    )


def test_cli_bad_arguments_are_one_line(tmp_path: Path) -> None:
    args = _cli_args(tmp_path)
    result = CliRunner().invoke(cli, args[: args.index(f"i32:{NY}")])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: {SYMBOL} takes 4 parameters; 3 ARGs given\n"
    result = CliRunner().invoke(cli, [*args, "-k", "nope"])
    assert result.exit_code == 1 and "no kernel named nope" in result.stderr


# --------------------------------------------------------------------------
# The drop-in consults the verdicts


def _store_verdict(tune_dir: Path, text: str, choice: str, rewrite_hash: str | None = None) -> None:
    module = read_ptx(str(EXAMPLE))
    v = build_variants(module, text, module.function(SYMBOL), Options(arch="sm_90"))
    tuning.VerdictStore(tune_dir).put(
        tuning.Verdict(SYMBOL, "sm_90", "normal", 31, v.kernel_hash, rewrite_hash or v.rewrite_hash, choice)
    )


def _dropin(tmp: Path, ptx: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    log = tmp / "log.jsonl"
    log.unlink(missing_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith("PTXASW_")}
    full.update({"PTXASW_LOG": str(log), "PTXASW_CACHE_DIR": "off", **env})
    proc = subprocess.run(
        [sys.executable, "-m", "ptxasw.driver.ptxas", "-arch=sm_90", str(ptx), "-o", str(tmp / "out.cubin")],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(log.read_text().splitlines()[-1])
    if record["status"] == "unchanged":  # the pipeline could change nothing, and did not run
        return proc, record
    (inp,) = record["inputs"]
    return proc, inp


def _synthesis(inp: dict) -> dict:
    return next(p for p in inp["passes"] if p["name"] == "shuffle-synthesis")


def _model_alone(inp: dict) -> bool:
    """Whether the drop-in left the file to ptxas because the cost model rules
    out every shuffle on sm_90 and no verdict applies (it did not parse)."""
    return inp.get("status") == "unchanged" and inp["reason"].startswith("no shuffle pays on sm_90")


@needs_ptxas
def test_dropin_follows_the_verdict(tmp_path: Path) -> None:
    tune_dir = tmp_path / "tune"
    env = {"PTXASW_TUNE_DIR": str(tune_dir)}
    _, inp = _dropin(tmp_path, EXAMPLE, **env)
    assert _model_alone(inp)
    _store_verdict(tune_dir, EXAMPLE.read_text(), "shuffle")
    _, inp = _dropin(tmp_path, EXAMPLE, **env)
    stats = _synthesis(inp)
    assert (stats["shuffles"], stats["tuned"], stats["tuned_shuffle"]) == (2, 1, 1) and inp["rewritten"]
    _store_verdict(tune_dir, EXAMPLE.read_text(), "original")
    _, inp = _dropin(tmp_path, EXAMPLE, **env)
    stats = _synthesis(inp)
    assert (stats["shuffles"], stats["tuned_original"]) == (0, 1) and not inp["rewritten"]
    # PTXASW_TUNE_DIR=off: no verdict applies.
    _store_verdict(tune_dir, EXAMPLE.read_text(), "shuffle")
    _, inp = _dropin(tmp_path, EXAMPLE, PTXASW_TUNE_DIR="off")
    assert _model_alone(inp)


@needs_ptxas
def test_dropin_ignores_verdicts_of_other_code(tmp_path: Path) -> None:
    tune_dir = tmp_path / "tune"
    _store_verdict(tune_dir, EXAMPLE.read_text(), "shuffle")
    # Another kernel text (the coefficient changed): its own key, no verdict.
    changed = tmp_path / "jacobi.ptx"
    changed.write_text(EXAMPLE.read_text().replace("0f3E4CCCCD", "0f3E800000"))
    _, inp = _dropin(tmp_path, changed, PTXASW_TUNE_DIR=str(tune_dir))
    stats = _synthesis(inp)
    assert stats["unprofitable"] == 1 and "tuned" not in stats and not inp["rewritten"]  # the model
    # The same kernel, but the verdict measured another rewrite (an older ptxasw): stale, ignored.
    _store_verdict(tune_dir, EXAMPLE.read_text(), "shuffle", rewrite_hash="0" * 64)
    _, inp = _dropin(tmp_path, EXAMPLE, PTXASW_TUNE_DIR=str(tune_dir))
    stats = _synthesis(inp)
    assert (stats["shuffles"], stats["tune_stale"]) == (0, 1) and not inp["rewritten"]


@needs_ptxas
def test_result_cache_does_not_hide_a_new_verdict(tmp_path: Path) -> None:
    env = {"PTXASW_CACHE_DIR": str(tmp_path / "cache")}  # verdicts in its tune/ folder
    _, first = _dropin(tmp_path, EXAMPLE, **env)
    assert _model_alone(first)  # nothing to cache: the pipeline did not run
    # A stale verdict (it measured another rewrite) makes the pipeline run, which
    # ignores it: the result is the model's and is cached ...
    _store_verdict(tmp_path / "cache" / "tune", EXAMPLE.read_text(), "shuffle", rewrite_hash="0" * 64)
    _, ran = _dropin(tmp_path, EXAMPLE, **env)
    _, again = _dropin(tmp_path, EXAMPLE, **env)
    assert not ran["rewritten"] and "cached" not in ran and again["cached"] is True
    # ... and a verdict for this code is not hidden by that cached result.
    _store_verdict(tmp_path / "cache" / "tune", EXAMPLE.read_text(), "shuffle")
    _, tuned = _dropin(tmp_path, EXAMPLE, **env)
    assert "cached" not in tuned and tuned["rewritten"] and _synthesis(tuned)["tuned_shuffle"] == 1
    _, cached = _dropin(tmp_path, EXAMPLE, **env)
    assert cached["cached"] is True and cached["rewritten"]


def test_store_ignores_bad_entries(tmp_path: Path) -> None:
    store = tuning.VerdictStore(tmp_path)
    assert store.state("sm_90") == "" and store.get("h", "sm_90", "normal", 31) is None
    verdict = tuning.Verdict("k", "sm_90", "normal", 31, "h", "r", "shuffle", 1.0, 0.5)
    path = store.put(verdict)
    assert store.get("h", "sm_90", "normal", 31) == verdict and verdict.speedup == 2.0
    assert store.get("h", "sm_90", "normal", 1) is None and store.get("h", "sm_80", "normal", 31) is None
    state = store.state("sm_90")
    path.write_text("{not json")
    assert store.get("h", "sm_90", "normal", 31) is None and store.state("sm_90") != state
    with pytest.raises(ValueError):
        store.put(tuning.Verdict("k", "sm_90", "normal", 31, "h", "r", "maybe"))
    assert tuning.tune_dir({"PTXASW_TUNE_DIR": "off"}) is None
    assert tuning.tune_dir({"PTXASW_CACHE_DIR": "off", "XDG_CACHE_HOME": "/x"}) == Path("/x/ptxasw/tune")
    assert tuning.tune_dir({"PTXASW_CACHE_DIR": "/c"}) == Path("/c/tune")


@needs_ptxas
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_tune_suite_dry_run(tmp_path: Path) -> None:
    """benchmarks/tune_suite.py end to end on the CPU: a suite kernel's verdict is the
    one the drop-in's pipeline then applies (tune and drop-in hash the same texts)."""
    from benchmarks import tune_suite

    out = tmp_path / "suite.json"
    assert tune_suite.main(["--dry-run", "--kernels", "jacobi", "--runs", "1", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["shuffles"] == 6 and row["verdict"] in ("shuffle", "original") and row["dropin_tuned"]
    assert row["dropin_shuffles"] == (6 if row["verdict"] == "shuffle" else 0)
