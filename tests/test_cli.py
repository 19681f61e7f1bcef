"""The ``ptxasw`` command line: fmt and check, files and stdin, one-line errors."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli import main
from ptxasw.parser import parse_ptx

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "jacobi.ptx"
BAD = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tfoo.bar %r1;\n}\n"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child, so tracebacks would show on stderr."""
    return subprocess.run(
        [sys.executable, "-m", "ptxasw.cli", *args], input=stdin, capture_output=True, text=True, check=False
    )


def test_fmt_prints_a_module_that_parses_to_the_same_ir(tmp_path: Path) -> None:
    out = tmp_path / "out.ptx"
    result = CliRunner().invoke(main, ["fmt", str(EXAMPLE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert parse_ptx(out.read_text()) == parse_ptx(EXAMPLE.read_text())


def test_fmt_reads_stdin_and_writes_stdout() -> None:
    proc = run("fmt", "-", stdin=EXAMPLE.read_text())
    assert proc.returncode == 0 and proc.stderr == ""
    assert parse_ptx(proc.stdout) == parse_ptx(EXAMPLE.read_text())


def test_check_summarises_each_file_and_requires_the_header() -> None:
    proc = run("check", str(EXAMPLE))
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.strip() == f"{EXAMPLE}: ok: 1 kernels, 0 functions, 45 instructions, 12 opcodes"
    proc = run("check", str(EXAMPLE), "-", stdin="")
    assert proc.returncode == 1
    assert proc.stderr == "ptxasw: error: <stdin>:1:1: empty input: a PTX module starts with .version\n"
    proc = run("check", "-", stdin=".version 9.0\n.address_size 64\n")
    assert proc.stderr == "ptxasw: error: <stdin>:1:10: .version must be followed by .target\n"


@pytest.mark.parametrize("command", ["fmt", "check"])
def test_bad_input_is_one_line_with_position_and_exit_1(tmp_path: Path, command: str) -> None:
    bad = tmp_path / "bad.ptx"
    bad.write_text(BAD)
    proc = run(command, str(bad))
    assert proc.returncode == 1
    assert proc.stderr == f"ptxasw: error: {bad}:6:2: unknown instruction 'foo.bar'\n"
    proc = run(command, "-", stdin=BAD)
    assert proc.returncode == 1
    assert proc.stderr == "ptxasw: error: <stdin>:6:2: unknown instruction 'foo.bar'\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe.version", "1:1: file is not UTF-8 text"),
        (b".version 9.0\n.target sm_90\n.visible .entry k(\n", "4:1: unexpected end of file"),
    ],
)
def test_undecodable_or_truncated_files(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.ptx"
    bad.write_bytes(content)
    proc = run("check", str(bad))
    assert proc.returncode == 1
    assert proc.stderr == f"ptxasw: error: {bad}:{message}\n"


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    proc = run("fmt", str(tmp_path / "nope.ptx"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("ptxasw: error: ") and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_crlf_files_parse_like_lf_files(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.ptx"
    crlf.write_bytes(EXAMPLE.read_bytes().replace(b"\n", b"\r\n"))
    proc = run("check", str(crlf))
    assert proc.returncode == 0, proc.stderr
    assert parse_ptx(crlf.read_bytes().decode()) == parse_ptx(EXAMPLE.read_text())


def test_check_warns_about_modifiers_the_table_does_not_know(tmp_path: Path) -> None:
    ptx = tmp_path / "mod.ptx"
    ptx.write_text(BAD.replace("foo.bar %r1;", "add.bogus.s32 %r1, %r2, 1;"))
    proc = run("check", str(ptx))
    assert proc.returncode == 0
    assert proc.stderr == f"ptxasw: warning: {ptx}:6:2: 'add' does not take '.bogus'\n"


def test_check_warns_about_operand_counts(tmp_path: Path) -> None:
    ptx = tmp_path / "count.ptx"
    ptx.write_text(BAD.replace("foo.bar %r1;", "add.s32 %r1, %r2;\n\tret %r1;"))
    proc = run("check", str(ptx))
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        f"ptxasw: warning: {ptx}:6:2: 'add' takes 3 operands, not 2",
        f"ptxasw: warning: {ptx}:7:2: 'ret' takes 0 operands, not 1",
    ]


def test_analyze_tells_a_progress_display_each_kernel_it_begins(capsys: pytest.CaptureFixture[str]) -> None:
    """The synthesis tells ``on_kernel`` each kernel as its analysis begins
    (`ptxasw analyze` feeds a progress bar on a terminal); the bar itself
    takes the names and leaves no output behind (it is transient), and
    without a terminal it is not drawn at all."""
    from ptxasw.cli.common import progress_bar
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    module = parse_ptx(EXAMPLE.read_text(), str(EXAMPLE))
    begun: list[str] = []
    ShuffleSynthesisPass(apply=False, on_kernel=begun.append).run(module)
    assert begun == [fn.name for fn in module.kernels] and begun
    for enabled in (True, False):
        with progress_bar("analyze", len(begun), enabled=enabled) as show:
            for name in begun:
                show(name)
    assert capsys.readouterr().out == ""
    result = CliRunner().invoke(main, ["analyze", str(EXAMPLE)])
    assert result.exit_code == 0 and "analyze" not in result.stderr


def test_analyze_in_several_processes_gives_the_same_report() -> None:
    """``--jobs 2``: kernels of three files analysed by two forked workers,
    a kernel a share; the rows come back in file and kernel order, and the
    report is the one a single process writes but for the seconds."""
    import json

    fixtures = REPO / "tests" / "fixtures"
    files = [str(fixtures / "vector_loads.ptx"), str(fixtures / "vector_halo.ptx"), str(EXAMPLE)]
    reports = []
    for jobs in ("1", "2"):
        proc = run("analyze", "--json", "--jobs", jobs, *files)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        data = json.loads(proc.stdout)
        for kernel in data["kernels"]:
            assert kernel["analysis_seconds"] >= 0
            kernel["analysis_seconds"] = None
        reports.append(data)
    assert reports[0] == reports[1]
    names = [(Path(k["file"]).name, k["name"]) for k in reports[0]["kernels"]]
    assert names[:5] == [
        ("vector_loads.ptx", "pairs"),
        ("vector_loads.ptx", "quads"),
        ("vector_loads.ptx", "split"),
        ("vector_halo.ptx", "box4_r2"),
        ("vector_halo.ptx", "row4_r2"),
    ]
    assert sum(k["shuffles"] for k in reports[0]["kernels"]) > 0


def test_rewrite_in_several_processes_writes_the_same_ptx(tmp_path: Path) -> None:
    """``rewrite --jobs 2``: the kernels rewritten by workers are printed in
    their places, byte for byte the text one process writes, and the
    report and the line per kernel are the same too."""
    import json

    source = REPO / "tests" / "fixtures" / "vector_halo.ptx"
    outputs = []
    for jobs in ("1", "2"):
        out, report = tmp_path / f"out{jobs}.ptx", tmp_path / f"report{jobs}.json"
        proc = run("rewrite", "--jobs", jobs, str(source), "-o", str(out), "--report", str(report))
        assert proc.returncode == 0, proc.stderr
        data = json.loads(report.read_text())
        for kernel in data["kernels"]:
            kernel["analysis_seconds"] = None
        lines = [line.rsplit(",", 1)[0] for line in proc.stderr.splitlines()]  # less the seconds
        outputs.append((out.read_text(), data, lines))
    assert outputs[0] == outputs[1]
    text, data, lines = outputs[0]
    assert text.count("shfl.sync") >= 20 and [k["name"] for k in data["kernels"]] == ["box4_r2", "row4_r2"]
    assert len(lines) == 2 and lines[0].startswith("ptxasw: box4_r2: 20 of 25 global loads shuffled")


def test_the_workers_return_kernels_in_order_whatever_order_they_finish_in() -> None:
    """Shares finish in any order (``imap_unordered``); the results are
    sorted back, and the progress display, made for every kernel, hears of
    each once."""
    from ptxasw.synth.detect import Options
    from ptxasw.synth.workers import Source, synthesise

    fixtures = REPO / "tests" / "fixtures"
    sources = [
        Source(str(path), parse_ptx(path.read_text(), str(path)), path.read_text())
        for path in (fixtures / "vector_loads.ptx", EXAMPLE)
    ]
    heard: list[str] = []
    totals: list[int] = []

    @contextlib.contextmanager
    def progress(total: int) -> Iterator[Callable[[str], None]]:
        totals.append(total)
        yield heard.append

    results = synthesise(sources, lambda module: Options(rounding="ptx"), None, 3, progress=progress)
    expected = [(s.path, fn.name) for s in sources for fn in s.module.kernels]
    assert [(r.path, r.name) for r in results] == expected
    assert [r.row["name"] for r in results] == [name for _, name in expected]
    assert sorted(heard) == sorted(name for _, name in expected) and totals == [len(expected)]
    assert all(r.text is None for r in results)  # a report: nothing rewritten
    wanted = synthesise(sources, lambda module: Options(rounding="ptx"), {"quads"}, 1, rewrite=True)
    assert [r.name for r in wanted] == ["quads"] and "shfl.sync" in (wanted[0].text or "")
