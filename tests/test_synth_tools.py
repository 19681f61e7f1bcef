"""Shuffle synthesis where users meet it: the drop-in ptxas, its result cache,
``ptxasw rewrite`` and ``ptxasw analyze`` (the report's JSON and HTML).

The drop-in runs as a program (``python -m ptxasw.driver.ptxas``) with the
real ptxas, as a build would run it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli import main as cli
from ptxasw.driver.cache import CachedResult, ResultCache
from ptxasw.driver.settings import synthesis_settings
from ptxasw.synth.cost import costs_for, site_cost

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "jacobi.ptx"
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


def _dropin(tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    log = tmp / "log.jsonl"
    log.unlink(missing_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith("PTXASW_")}
    full.update({"PTXASW_LOG": str(log), "PTXASW_CACHE_DIR": "off", **env})
    out = tmp / "out.cubin"
    proc = subprocess.run(
        [sys.executable, "-m", "ptxasw.driver.ptxas", "-arch=sm_90", str(EXAMPLE), "-o", str(out)],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    record = json.loads(log.read_text().splitlines()[-1])
    return proc, record


def _synthesis(record: dict) -> dict:
    (inp,) = record["inputs"]
    return next(p for p in inp["passes"] if p["name"] == "shuffle-synthesis")


@needs_ptxas
def test_dropin_default_keeps_what_does_not_pay(tmp_path: Path) -> None:
    """On sm_90 no exact shuffle pays (cost model): the file is not even parsed
    and ptxas gets the user's own file."""
    proc, record = _dropin(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert record["status"] == "unchanged" and record["reason"].startswith("no shuffle pays on sm_90 (")
    assert record["inputs"] == []  # not even parsed
    assert (tmp_path / "out.cubin").read_bytes()[:4] == b"\x7fELF"


@needs_ptxas
def test_dropin_always_rewrites_and_assembles(tmp_path: Path) -> None:
    proc, record = _dropin(tmp_path, PTXASW_PROFIT="always")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    stats = _synthesis(record)
    assert (stats["shuffles"], stats["loads"]) == (2, 5)
    assert record["inputs"][0]["rewritten"] is True
    assert (tmp_path / "out.cubin").read_bytes()[:4] == b"\x7fELF"


@needs_ptxas
def test_dropin_refuses_unsafe_modes(tmp_path: Path) -> None:
    proc, record = _dropin(tmp_path, PTXASW_PROFIT="always", PTXASW_MODE="nocorner")
    assert proc.returncode == 0
    assert "PTXASW_UNSAFE=1" in proc.stderr
    assert _synthesis(record)["shuffles"] == 2  # the normal mode instead


@needs_ptxas
def test_result_cache_hit_and_key(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, rec1 = _dropin(tmp_path, PTXASW_PROFIT="always", PTXASW_CACHE_DIR=str(cache))
    cubin = (tmp_path / "out.cubin").read_bytes()
    second, rec2 = _dropin(tmp_path, PTXASW_PROFIT="always", PTXASW_CACHE_DIR=str(cache))
    assert first.returncode == second.returncode == 0
    assert "cached" not in rec1["inputs"][0] and rec2["inputs"][0]["cached"] is True
    assert (tmp_path / "out.cubin").read_bytes() == cubin
    # Another setting is another key: analysed again, with its own result.
    _, rec3 = _dropin(tmp_path, PTXASW_PROFIT="always", PTXASW_MAX_DELTA="1", PTXASW_CACHE_DIR=str(cache))
    assert "cached" not in rec3["inputs"][0]
    assert _synthesis(rec3)["shuffles"] == 1


def test_cache_concurrent_writers_never_tear(tmp_path: Path) -> None:
    store = ResultCache(tmp_path)
    key = store.key("x", {"a": "1"})
    texts = [f"text {i} " * 5000 for i in range(8)]
    errors: list[str] = []

    def write(text: str) -> None:
        for _ in range(10):
            assert store.put(key, CachedResult(text, [{"n": 1}]))

    def read() -> None:
        for _ in range(200):
            hit = store.get(key)
            if hit is not None and hit.text not in texts:
                errors.append("torn")

    threads = [threading.Thread(target=write, args=(t,)) for t in texts] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    hit = store.get(key)
    assert hit is not None and hit.text in texts
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_cache_ignores_damaged_entries(tmp_path: Path) -> None:
    store = ResultCache(tmp_path)
    key = store.key("y", {})
    store.put(key, CachedResult(None, []))
    path = next(tmp_path.rglob("*.json"))
    path.write_text("{not json")
    assert store.get(key) is None


def test_settings_from_the_environment() -> None:
    assert synthesis_settings({})["mode"] == "normal"
    assert synthesis_settings({"PTXASW_MODE": "noload"})["mode"] == "normal"
    assert synthesis_settings({"PTXASW_MODE": "noload", "PTXASW_UNSAFE": "1"})["mode"] == "noload"
    assert synthesis_settings({"PTXASW_MAX_DELTA": "40"})["max_delta"] == "31"
    assert synthesis_settings({"PTXASW_PROFIT": "sometimes"})["profit"] == "model"


def test_cost_model() -> None:
    h100 = costs_for("sm_90")
    assert site_cost(h100, 32, "normal") > h100.load  # the exact shuffle loses
    assert site_cost(h100, 32, "nocorner") < h100.load  # the unsafe one would win
    assert site_cost(h100, 64, "normal") > site_cost(h100, 32, "normal")
    assert costs_for("sm_75") == h100 and costs_for("sm_100a") == h100


def test_rewrite_command(tmp_path: Path) -> None:
    out = tmp_path / "out.ptx"
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["rewrite", str(EXAMPLE), "-o", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.count("shfl.sync.down.b32") == 2 and text.count("activemask.b32") == 2
    data = json.loads(report.read_text())
    assert data["kernels"][0]["shuffles"] == 2


def test_rewrite_command_errors(tmp_path: Path) -> None:
    copy = tmp_path / "in.ptx"
    copy.write_text(EXAMPLE.read_text())
    result = CliRunner().invoke(cli, ["rewrite", str(copy), "-o", str(copy)])
    assert result.exit_code == 1 and "overwrite the input" in result.output
    assert copy.read_text() == EXAMPLE.read_text()
    result = CliRunner().invoke(cli, ["rewrite", str(copy), "-o", str(tmp_path / "o.ptx"), "-k", "nope"])
    assert result.exit_code == 1 and "no kernel named nope" in result.output
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { foo.bar %r1; }\n")
    result = CliRunner().invoke(cli, ["rewrite", str(bad), "-o", str(tmp_path / "o.ptx")])
    assert result.exit_code == 1 and "bad.ptx:4:" in result.output and "Traceback" not in result.output


def test_analyze_json_and_html(tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["analyze", str(EXAMPLE), "--json", "--html", str(html)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (kernel,) = data["kernels"]
    keys = {"name", "file", "loads", "shuffles", "average_delta", "analysis_seconds", "loads_detail"}
    assert keys <= set(kernel)
    assert (kernel["loads"], kernel["shuffles"], kernel["average_delta"]) == (5, 2, 1.5)
    details = {d["line"]: d for d in kernel["loads_detail"]}
    assert details[57]["status"] == "shuffle" and details[57]["delta"] == 1
    assert details[57]["source_load_line"] == 56 and details[57]["proof"] == "proved"
    assert details[64]["status"] == "blocked" and details[64]["reason"] == "non-constant delta"
    for d in details.values():
        assert {"line", "source_line", "delta", "source_load_line", "status", "reason"} <= set(d)
    page = html.read_text()
    assert page.count('class="load-shuffle') >= 2 or page.count("load-shuffle") >= 2
    assert "non-constant delta" in page


def test_analyze_from_stdin_keeps_the_text(tmp_path: Path) -> None:
    """The file is read once; standard input's PTX is on the page too (it was left out)."""
    html = tmp_path / "r.html"
    text = EXAMPLE.read_text()
    result = CliRunner().invoke(cli, ["analyze", "-", "--json", "--html", str(html)], input=text)
    assert result.exit_code == 0, result.output
    (kernel,) = json.loads(result.output)["kernels"]
    assert (kernel["loads"], kernel["shuffles"]) == (5, 2)
    page = html.read_text()
    assert page.count("load-shuffle") >= 2
    assert "ld.global.nc.f32" in page or "ld.global.f32" in page


def test_analyze_text() -> None:
    result = CliRunner().invoke(cli, ["analyze", str(EXAMPLE), "--max-delta", "1"])
    assert result.exit_code == 0, result.output
    assert "shuffle N = +1 from line 56" in result.output
    assert "delta out of range (+2)" in result.output


def test_rewrite_report_keeps_source_lines(tmp_path: Path) -> None:
    """The rewrite removes the loads it replaces; the report still gives their
    CUDA lines (taken from the module before the rewrite)."""
    fixture = json.loads((REPO / "tests" / "fixtures" / "report_stencil.json").read_text())
    ptx = next(iter(fixture["files"].values()))["ptx"]
    src = tmp_path / "s.ptx"
    src.write_text(ptx)
    report = tmp_path / "r.json"
    args = ["rewrite", str(src), "-o", str(tmp_path / "o.ptx"), "--report", str(report)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    loads = [d for k in json.loads(report.read_text())["kernels"] for d in k["loads_detail"]]
    shuffled = [d for d in loads if d["status"] == "shuffle"]
    assert shuffled and all(d["source_line"] and d["source_line"].startswith("stencil.cu:") for d in shuffled)
