"""Reliability of the commands and the drop-in ptxas: bad output paths, bad
settings, faults (signals, unwritable or full temporary directories, a
wrapper killed mid-way, concurrent builds) and the rough edges a new user hit.

The drop-in runs against a fake ptxas (a small Python script) whose
behaviour each test sets through the environment, so no CUDA is needed; the
wrapper runs as a program (a subprocess) where signals and exit statuses
are the point, in-process elsewhere.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli import main as cli
from ptxasw.driver import ptxas as wrapper
from tests.test_wrapper import MINI_PTX

REPO = Path(__file__).resolve().parent.parent


#: A stand-in for ptxas. FAKE_PIDFILE: write our pid; FAKE_OUT_CHUNKS/FAKE_OUT_SLEEP:
#: write the output (-o) in that many chunks of the input's first byte, sleeping
#: between them; FAKE_WARN_AT: warn (as ptxas does) at the first line holding this
#: text; FAKE_INFO_AT: the same as an info that names the line without the file
#: (as ptxas's GMMA notes do); FAKE_SIGNAL: die of this signal; FAKE_RC: exit
#: code. Every run appends its argv to FAKE_CALLS.
FAKE = """\
#!{python} -S
import os, signal, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_CALLS"], "a") as f:
    f.write(repr(args) + "\\n")
if os.environ.get("FAKE_PIDFILE"):
    with open(os.environ["FAKE_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
inputs = [a for a in args if a.endswith(".ptx")]
out = args[args.index("-o") + 1] if "-o" in args else None
if out and inputs:
    fill = open(inputs[0], "rb").read(1) * 1000
    with open(out, "wb") as f:
        for _ in range(int(os.environ.get("FAKE_OUT_CHUNKS", "1"))):
            f.write(fill)
            f.flush()
            time.sleep(float(os.environ.get("FAKE_OUT_SLEEP", "0")))
if os.environ.get("FAKE_WARN_AT") and inputs:
    lines = open(inputs[0]).read().splitlines()
    n = next(i for i, ln in enumerate(lines, 1) if os.environ["FAKE_WARN_AT"] in ln)
    print(f"ptxas {{inputs[0]}}, line {{n}}; warning : here", file=sys.stderr)
if os.environ.get("FAKE_INFO_AT") and inputs:
    lines = open(inputs[0]).read().splitlines()
    n = next(i for i, ln in enumerate(lines, 1) if os.environ["FAKE_INFO_AT"] in ln)
    info = f"ptxas info    : (C7519) warpgroup.arrive is injected in around line {{n}} by compiler"
    print(info, file=sys.stderr)
if os.environ.get("FAKE_SIGNAL"):
    os.kill(os.getpid(), int(os.environ["FAKE_SIGNAL"]))
sys.exit(int(os.environ.get("FAKE_RC", "0")))
"""

_CLEARED = (
    "PTXASW_REAL_PTXAS",
    "PTXASW_DISABLE",
    "PTXASW_LOG",
    "PTXASW_TIMEOUT",
    "PTXASW_PIPELINE",
    "PTXASW_VISITED_PTXAS",
    "FAKE_PIDFILE",
    "FAKE_OUT_CHUNKS",
    "FAKE_OUT_SLEEP",
    "FAKE_SIGNAL",
    "FAKE_RC",
    "FAKE_WARN_AT",
    "FAKE_INFO_AT",
)


# --------------------------------------------------------------------------
# Pipelines plugged in through PTXASW_PIPELINE=tests.test_reliability:NAME


class _Result:
    def __init__(self, text: str, changed: bool) -> None:
        self.text = text
        self.passes = [{"name": "hook", "changed": changed, "seconds": 0.0}]


def reprint(text: str, name: str) -> _Result:
    """Different text, but no pass says it changed anything (a layout-only reprint)."""
    return _Result(text + "\n// reprinted\n", changed=False)


def rewrite(text: str, name: str) -> _Result:
    """A real change: the wrapper must assemble a private copy."""
    return _Result(text + "\n// rewritten\n", changed=True)


def shift_lines(text: str, name: str) -> _Result:
    """A change that moves every line down and re-lays it out, as a pass and the printer do."""
    return _Result("// one\n// two\n\n" + text.replace("\t", "    ").replace(", ", ","), changed=True)


def spin_and_record(text: str, name: str) -> _Result:
    """Write where we run (pid) to $HOOK_PIDFILE, then keep a core busy forever."""
    Path(os.environ["HOOK_PIDFILE"]).write_text(str(os.getpid()))
    while True:
        pass


def segfault(text: str, name: str) -> _Result:
    """A pipeline that crashes its process (as a bug in a C extension would)."""
    import faulthandler

    faulthandler.disable()  # pytest's would print the stack: the crash is the point
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A fake ptxas on PTXASW_REAL_PTXAS; returns the environment for subprocess runs."""
    for var in _CLEARED:
        monkeypatch.delenv(var, raising=False)
    fake = tmp_path / "bin" / "ptxas"
    fake.parent.mkdir()
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("PTXASW_REAL_PTXAS", str(fake))
    monkeypatch.setenv("FAKE_CALLS", str(tmp_path / "calls.txt"))
    monkeypatch.setenv("TMPDIR", str(_mkdir(tmp_path / "tmp")))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    monkeypatch.syspath_prepend(str(REPO))
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture
def src(tmp_path: Path) -> Path:
    p = tmp_path / "src" / "k.ptx"
    p.parent.mkdir()
    p.write_text(MINI_PTX)
    return p


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def calls(tmp_path: Path) -> list[list[str]]:
    f = tmp_path / "calls.txt"
    return [eval(line) for line in f.read_text().splitlines()] if f.exists() else []


def warnings_in(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("ptxasw:")]


def unwritable_dir(tmp_path: Path) -> Path:
    """A directory this process cannot create files in (as root too: /sys refuses)."""
    if os.geteuid() == 0:
        return Path("/sys")
    d = _mkdir(tmp_path / "readonly")
    d.chmod(0o555)
    return d


def wrapper_program(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ptxasw.driver.ptxas", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


def process_gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` has ended (a zombie counts as ended only once reaped)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.02)
    return False


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith((".ptxasw-", "ptxasw-")))


# --------------------------------------------------------------------------
# Output errors are one line, like input errors


def test_fmt_into_a_missing_directory_is_one_line(tmp_path: Path, src: Path) -> None:
    target = tmp_path / "no" / "such" / "out.ptx"
    result = CliRunner().invoke(cli, ["fmt", str(src), "-o", str(target)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: cannot write {target}: No such file or directory\n"
    assert not target.parent.exists()


def test_fmt_into_an_unwritable_place_is_one_line(tmp_path: Path, src: Path) -> None:
    target = unwritable_dir(tmp_path) / "out.ptx"
    result = CliRunner().invoke(cli, ["fmt", str(src), "-o", str(target)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"ptxasw: error: cannot write {target}: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


RUN_ARGS = ["--block", "1", "--arg", "zeros:u32:1", "--arg", "zeros:u32:1"]


def test_run_into_an_unwritable_directory_is_one_line(tmp_path: Path, src: Path) -> None:
    outdir = unwritable_dir(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(src), *RUN_ARGS, "-o", str(outdir)])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"ptxasw: error: cannot write {outdir}")
    assert "internal error" not in line and "PermissionError" not in line


def test_run_does_not_create_missing_parents(tmp_path: Path, src: Path) -> None:
    outdir = tmp_path / "missing" / "out"
    result = CliRunner().invoke(cli, ["run", str(src), *RUN_ARGS, "-o", str(outdir)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: cannot write {outdir}: No such file or directory\n"
    assert not (tmp_path / "missing").exists()
    # the directory itself is made when its parent exists
    result = CliRunner().invoke(cli, ["run", str(src), *RUN_ARGS, "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["arg0.npy", "arg1.npy"]


def test_run_caps_the_list_of_kernels(tmp_path: Path) -> None:
    body = "".join(f".visible .entry k{i}()\n{{\n\tret;\n}}\n" for i in range(30))
    ptx = tmp_path / "many.ptx"
    ptx.write_text(".version 8.0\n.target sm_90\n.address_size 64\n" + body)
    result = CliRunner().invoke(cli, ["run", str(ptx), "--block", "1"])
    assert result.exit_code == 1
    names = ", ".join(f"k{i}" for i in range(10))
    assert result.stderr == (
        f"ptxasw: error: {ptx} has 30 kernels ({names}, ... and 20 more); choose one with --kernel\n"
    )


# --------------------------------------------------------------------------
# Input errors: empty files, unreadable files, bytes that are not UTF-8


@pytest.mark.parametrize("command", ["fmt", "check", "trace"])
@pytest.mark.parametrize("content", ["", "\n  \n\t"], ids=["empty", "blank"])
def test_an_empty_file_is_one_error_for_every_command(tmp_path: Path, command: str, content: str) -> None:
    empty = tmp_path / "empty.ptx"
    empty.write_text(content)
    result = CliRunner().invoke(cli, [command, str(empty)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"ptxasw: error: {empty}:1:1: empty input: a PTX module starts with .version\n"


def test_the_drop_in_hands_an_empty_file_to_ptxas_untouched(
    env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty.ptx"
    empty.write_text("")
    monkeypatch.setenv("FAKE_RC", "255")
    assert wrapper.main(["-arch=sm_90", str(empty)]) == 255
    assert calls(tmp_path) == [["-arch=sm_90", str(empty)]]
    assert not warnings_in(capfd.readouterr().err)


def test_an_unreadable_file_has_no_made_up_position(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ptx"
    result = CliRunner().invoke(cli, ["check", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: cannot read {missing}: No such file or directory\n"


def test_bytes_that_are_not_utf8_are_pointed_at(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ptx"
    bad.write_bytes(b".version 8.0\n// caf\xc3\xa9 \xff\n")
    result = CliRunner().invoke(cli, ["check", str(bad)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: {bad}:2:9: file is not UTF-8 text\n"  # the 9th character


def test_stdin_that_is_not_utf8_is_one_line() -> None:
    result = CliRunner().invoke(cli, ["fmt", "-"], input=b".version 8.0\n\xfe")
    assert result.exit_code == 1
    assert result.stderr == "ptxasw: error: <stdin>:2:1: file is not UTF-8 text\n"


def test_the_quick_start_output_is_ignored_by_git() -> None:
    proc = subprocess.run(
        ["git", "check-ignore", "-q", "jacobi.cubin"], cwd=REPO, capture_output=True, check=False
    )
    assert proc.returncode == 0


# --------------------------------------------------------------------------
# PTXASW_TIMEOUT


@pytest.mark.parametrize("value", ["abc", "-1", "0", "nan", "-inf"])
def test_bad_timeouts_warn_once_and_use_the_default(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert wrapper.timeout_seconds({"PTXASW_TIMEOUT": value}) == wrapper.DEFAULT_TIMEOUT
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ptxasw: warning: PTXASW_TIMEOUT='{value}' is not a positive number")


def test_inf_means_no_time_out(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    assert wrapper.timeout_seconds({"PTXASW_TIMEOUT": "inf"}) == float("inf")
    assert wrapper.timeout_seconds({"PTXASW_TIMEOUT": "2.5"}) == 2.5
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("PTXASW_TIMEOUT", "inf")
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:rewrite")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 0
    (argv,) = calls(tmp_path)
    assert argv[1] != str(src) and Path(argv[1]).name == "k.ptx"  # transformed, not failed open
    assert not warnings_in(capsys.readouterr().err)


def test_a_timed_out_pipeline_stops_working(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """The time-out must stop the work, not only the waiting: nothing may keep
    a core busy beside the real ptxas."""
    pidfile = tmp_path / "hook.pid"
    monkeypatch.setenv("HOOK_PIDFILE", str(pidfile))
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:spin_and_record")
    monkeypatch.setenv("PTXASW_TIMEOUT", "0.5")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 0
    (line,) = warnings_in(capfd.readouterr().err)
    assert "time-out after 0.5 s" in line
    pid = int(pidfile.read_text())
    assert pid != os.getpid() and process_gone(pid)


def test_a_crashing_pipeline_fails_open(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:segfault")
    monkeypatch.setenv("FAKE_RC", "4")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 4
    assert calls(tmp_path) == [["-arch=sm_90", str(src)]]
    (line,) = warnings_in(capfd.readouterr().err)
    assert line == (
        f"ptxasw: warning: {src}: internal error: the pipeline process died (signal 11, SIGSEGV); "
        "assembling the original PTX"
    )


# --------------------------------------------------------------------------
# One ptxas run when the PTX is the user's own


def test_unchanged_ptx_is_the_users_file_and_a_rejection_runs_once(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:reprint")
    monkeypatch.setenv("FAKE_RC", "2")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 2
    assert calls(tmp_path) == [["-arch=sm_90", str(src)]]
    assert not warnings_in(capfd.readouterr().err)


def test_a_real_change_that_ptxas_rejects_still_gets_the_second_run(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:rewrite")
    monkeypatch.setenv("FAKE_RC", "2")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 2
    first, second = calls(tmp_path)
    assert first[1] != str(src) and second == ["-arch=sm_90", str(src)]


def test_ptxas_diagnostics_on_our_rewrite_name_the_users_lines(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:shift_lines")
    monkeypatch.setenv("FAKE_WARN_AT", "st.global.u32")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 0
    (argv,) = calls(tmp_path)
    assert argv[1] != str(src)  # ptxas assembled our rewrite...
    line = 1 + MINI_PTX.splitlines().index("\tst.global.u32 \t[%rd3], %r1;")
    assert capfd.readouterr().err == f"ptxas {src}, line {line}; warning : here\n"  # ...the user's line


def test_a_line_ptxas_names_without_the_file_is_the_users_line_too(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """``warpgroup.arrive is injected in around line N``: ptxas names a line
    of its one input without the file (found by fuzzing a wgmma kernel)."""
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:shift_lines")
    monkeypatch.setenv("FAKE_INFO_AT", "st.global.u32")
    assert wrapper.main(["-arch=sm_90", str(src)]) == 0
    (argv,) = calls(tmp_path)
    assert argv[1] != str(src)
    line = 1 + MINI_PTX.splitlines().index("\tst.global.u32 \t[%rd3], %r1;")
    assert capfd.readouterr().err == (
        f"ptxas info    : (C7519) warpgroup.arrive is injected in around line {line} by compiler\n"
    )


def test_the_default_pipeline_hands_ptxas_the_users_file(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src.write_text(MINI_PTX.replace("\t", "    "))  # the printer would lay it out differently
    assert wrapper.main(["-arch=sm_90", str(src)]) == 0
    assert calls(tmp_path) == [["-arch=sm_90", str(src)]]


# --------------------------------------------------------------------------
# Faults: signals, temporary directories, kills, concurrent builds


def test_ptxas_killed_by_a_signal(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process the status is what a shell reports (128+N); as a program the
    wrapper dies of the same signal, as ptxas did."""
    monkeypatch.setenv("FAKE_SIGNAL", str(int(signal.SIGKILL)))
    assert wrapper.main(["-arch=sm_90", str(src)]) == 128 + signal.SIGKILL
    env = {**env, "FAKE_SIGNAL": str(int(signal.SIGSEGV)), "PTXASW_LOG": str(tmp_path / "log.jsonl")}
    proc = wrapper_program(["-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")], env)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGSEGV
    assert not (tmp_path / "k.cubin").exists()  # ptxas failed: no output is taken for good


@pytest.mark.parametrize("how", ["unwritable", "full"])
def test_no_usable_temporary_directory_falls_back_with_one_warning(
    how: str,
    env: dict[str, str],
    src: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PTXASW_PIPELINE", "tests.test_reliability:rewrite")
    if how == "unwritable":
        monkeypatch.setenv("TMPDIR", str(unwritable_dir(tmp_path)))
        monkeypatch.setattr("tempfile.tempdir", None)
    else:

        def full(*args: object) -> Path:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(wrapper, "private_copy", full)
    monkeypatch.setenv("FAKE_RC", "3")
    assert wrapper.main(["-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")]) == 3
    ((argv),) = calls(tmp_path)
    assert argv[1] == str(src)  # the user's own PTX
    (line,) = warnings_in(capfd.readouterr().err)
    assert "cannot write the rewritten PTX to a temporary file" in line and "assembling the original" in line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_wrapper_killed_while_ptxas_writes_leaves_no_partial_output(
    sig: signal.Signals, env: dict[str, str], src: Path, tmp_path: Path
) -> None:
    out_dir = _mkdir(tmp_path / "out")
    target = out_dir / "k.cubin"
    target.write_bytes(b"previous good cubin")
    pidfile = tmp_path / "fake.pid"
    env = {**env, "FAKE_PIDFILE": str(pidfile), "FAKE_OUT_CHUNKS": "50", "FAKE_OUT_SLEEP": "0.05"}
    proc = wrapper_program(["-arch=sm_90", str(src), "-o", str(target)], env)
    wait_for(pidfile)
    time.sleep(0.3)  # ptxas is half-way through its output
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == -sig
    fake_pid = int(pidfile.read_text())
    if sig == signal.SIGTERM:
        assert process_gone(fake_pid)  # the signal was passed on to ptxas
        assert leftovers(out_dir) == [] and leftovers(tmp_path / "tmp") == []
    else:  # nothing can clean up after SIGKILL; ptxas finishes into our private directory
        assert process_gone(fake_pid, 10.0)
    assert target.read_bytes() == b"previous good cubin"


def test_a_wrapper_killed_during_the_pipeline_leaves_nothing(
    env: dict[str, str], src: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "hook.pid"
    env = {**env, "PTXASW_PIPELINE": "tests.test_reliability:spin_and_record", "HOOK_PIDFILE": str(pidfile)}
    proc = wrapper_program(["-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")], env)
    wait_for(pidfile)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert process_gone(int(pidfile.read_text()))
    assert calls(tmp_path) == [] and not (tmp_path / "k.cubin").exists()
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "tmp") == []


def test_two_builds_writing_one_output_never_tear_it(env: dict[str, str], tmp_path: Path) -> None:
    """Two builds assemble different inputs into one output at once, ptxas writing
    slowly: the output is one of the two complete results."""
    a, b = tmp_path / "a" / "k.ptx", tmp_path / "b" / "k.ptx"
    for p, first in ((a, "A"), (b, "B")):
        _mkdir(p.parent)
        p.write_text(first + MINI_PTX)
    target = tmp_path / "k.cubin"
    slow = {**env, "FAKE_OUT_CHUNKS": "10", "FAKE_OUT_SLEEP": "0.03"}
    pa = wrapper_program(["-arch=sm_90", str(a), "-o", str(target)], {**slow, "FAKE_OUT_CHUNKS": "12"})
    pb = wrapper_program(["-arch=sm_90", str(b), "-o", str(target)], slow)
    for proc in (pa, pb):
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    assert target.read_bytes() in (b"A" * 12000, b"B" * 10000)
    assert leftovers(tmp_path) == []


def test_an_existing_output_keeps_its_permissions(
    env: dict[str, str], src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "k.cubin"
    target.write_bytes(b"old")
    target.chmod(0o640)
    assert wrapper.main(["-arch=sm_90", str(src), "-o", str(target)]) == 0
    assert target.read_bytes() == b"." * 1000 and (target.stat().st_mode & 0o777) == 0o640


def test_outputs_that_are_not_plain_files_are_left_to_ptxas(
    env: dict[str, str], src: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.cubin"
    real = tmp_path / "real.cubin"
    real.write_bytes(b"old")
    link.symlink_to(real)
    assert wrapper.main(["-arch=sm_90", str(src), "-o", str(link)]) == 0
    assert link.is_symlink() and real.read_bytes() == b"." * 1000  # written through the link
    assert wrapper.main(["-arch=sm_90", str(src), "-o", os.devnull]) == 0
    assert calls(tmp_path)[-1][-1] == os.devnull
