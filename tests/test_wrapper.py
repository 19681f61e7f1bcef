"""Tests of the drop-in ptxas (ptxasw.driver.ptxas) and the GCC as shim (ptxasw.driver.nvptx_as).

Most tests run the wrapper in-process against a fake ptxas that records what
it was given, so they are fast and need no CUDA; a few use NVIDIA's ptxas
when it is installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptxasw.driver import nvptx_as as gcc_as
from ptxasw.driver import ptxas as wrapper
from ptxasw.driver.ptxas import (
    LONG_OPTIONS,
    PTXAS_OPTIONS,
    SHORT_OPTIONS,
    WrapperError,
    find_real_ptxas,
    main,
    parse_ptxas_args,
    ptx_inputs,
    render_args,
    split_options_file,
    transform_ptx,
)

REPO = Path(__file__).resolve().parent.parent
HOOKS_DIR = REPO / "tests" / "toolchain"
WRAPPER_SHIM = REPO / "wrappers" / "ptxas"

MINI_PTX = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry copy_one(
\t.param .u64 copy_one_param_0,
\t.param .u64 copy_one_param_1
)
{
\t.reg .b32 \t%r<2>;
\t.reg .b64 \t%rd<5>;

\tld.param.u64 \t%rd1, [copy_one_param_0];
\tld.param.u64 \t%rd2, [copy_one_param_1];
\tcvta.to.global.u64 \t%rd3, %rd1;
\tcvta.to.global.u64 \t%rd4, %rd2;
\tld.global.u32 \t%r1, [%rd4];
\tst.global.u32 \t[%rd3], %r1;
\tret;
}
"""

MALFORMED_PTX = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry f() { bogus.instr %r1; }\n"

MARK = "// rewritten by the ptxasw test pipeline"

FAKE_TOOL = """\
#!{python} -S
# A stand-in for ptxas / nvptx-none-as: records its command line and the
# text of every file argument (and stdin for "-"), then exits.
import json, os, sys
args = sys.argv[1:]
rec = {{"argv": args, "files": {{}}, "stdin": None}}
if "-" in args or os.environ.get("FAKE_READS_STDIN"):
    rec["stdin"] = sys.stdin.read()
for a in args:
    if a != "-" and not a.startswith("-") and os.path.isfile(a):
        with open(a) as f:
            rec["files"][a] = f.read()
with open(os.environ["FAKE_TOOL_LOG"], "a") as f:
    f.write(json.dumps(rec) + "\\n")
texts = list(rec["files"].values()) + [rec["stdin"] or ""]
if any("bogus_directive" in t for t in texts):
    print("fake: fatal: bogus directive", file=sys.stderr)
    sys.exit(255)
for a, t in rec["files"].items():
    print("fake: info: assembled " + a, file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_TOOL_RC", "0")))
"""

_ENV = (
    "PTXASW_REAL_PTXAS",
    "PTXASW_REAL_AS",
    "PTXASW_DISABLE",
    "PTXASW_LOG",
    "PTXASW_TIMEOUT",
    "PTXASW_PIPELINE",
    "PTXASW_VISITED_PTXAS",
    "PTXASW_VISITED_AS",
    "FAKE_TOOL_RC",
    "FAKE_READS_STDIN",
)


@dataclass
class Fake:
    """A fake real tool and what it saw."""

    path: Path
    log: Path

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def write_fake(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_TOOL.format(python=sys.executable))
    path.chmod(0o755)
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in _ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.syspath_prepend(str(HOOKS_DIR))
    return monkeypatch


def install_fake(tmp_path: Path, mp: pytest.MonkeyPatch) -> Fake:
    """A fake ptxas under ``tmp_path`` that the drop-in takes for the real one."""
    tool = write_fake(tmp_path / "fakebin" / "ptxas")
    log = tmp_path / "fake.jsonl"
    mp.setenv("PTXASW_REAL_PTXAS", str(tool))
    mp.setenv("FAKE_TOOL_LOG", str(log))
    return Fake(tool, log)


@pytest.fixture
def fake(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Fake:
    return install_fake(tmp_path, clean_env)


@pytest.fixture
def ptx(tmp_path: Path) -> Path:
    p = tmp_path / "src" / "kernel.ptx"
    p.parent.mkdir()
    p.write_text(MINI_PTX)
    return p


def use_hook(mp: pytest.MonkeyPatch, name: str) -> None:
    mp.setenv("PTXASW_PIPELINE", f"pipeline_hooks:{name}")


def warnings_in(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("ptxasw:")]


def real_ptxas() -> Path | None:
    for cand in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas"):
        if cand.startswith("/") and os.access(cand, os.X_OK):
            return Path(cand)
    found = shutil.which("ptxas")
    return Path(found) if found else None


needs_ptxas = pytest.mark.skipif(real_ptxas() is None, reason="NVIDIA ptxas not installed (CUDA toolkit)")


# --------------------------------------------------------------------------
# The option parser


def inputs_of(argv: list[str]) -> list[str]:
    return [a.value or a.tokens[0] for a in ptx_inputs(parse_ptxas_args(argv))]


VALUE_OPTIONS = [
    o for o in PTXAS_OPTIONS if o.takes_value and o.long not in ("options-file", "input-as-string")
]
FLAG_OPTIONS = [o for o in PTXAS_OPTIONS if not o.takes_value]


@pytest.mark.parametrize("spec", VALUE_OPTIONS, ids=lambda o: o.long)
def test_value_options_consume_their_value(spec: wrapper.OptionSpec) -> None:
    forms: list[list[str]] = [[f"--{spec.long}", "VAL"], [f"--{spec.long}=VAL"], [f"-{spec.short}=VAL"]]
    if not spec.optional:
        forms.append([f"-{spec.short}", "VAL"])
    for form in forms:
        argv = ["-c", *form, "in.ptx", "-v"]
        assert inputs_of(argv) == ["in.ptx"], form
        args = parse_ptxas_args(argv)
        opt = next(a for a in args if a.spec is spec)
        assert opt.value == "VAL"
        assert render_args(args, {}) == argv


@pytest.mark.parametrize("spec", FLAG_OPTIONS, ids=lambda o: o.long)
def test_flags_take_no_value(spec: wrapper.OptionSpec) -> None:
    for form in (f"--{spec.long}", f"-{spec.short}"):
        assert inputs_of([form, "in.ptx"]) == ["in.ptx"]


def test_opt_level_and_machine_quirks() -> None:
    # ptxas: -O takes an optional glued value, so in "-O 2" the 2 is an input.
    assert inputs_of(["-O", "k.ptx"]) == ["k.ptx"]
    assert inputs_of(["-O3", "k.ptx"]) == ["k.ptx"]
    assert inputs_of(["-O", "2", "k.ptx"]) == ["2", "k.ptx"]
    assert inputs_of(["--opt-level", "2", "k.ptx"]) == ["k.ptx"]
    assert inputs_of(["-m64", "k.ptx"]) == ["k.ptx"]
    assert inputs_of(["-m", "64", "k.ptx"]) == ["k.ptx"]
    # "-maxrregcount32" is -m with value "axrregcount32" for ptxas too.
    args = parse_ptxas_args(["-maxrregcount32", "k.ptx"])
    assert args[0].spec is SHORT_OPTIONS["m"] and args[0].value == "axrregcount32"
    # the cache options take values although --help shows none
    assert inputs_of(["-dlcm", "ca", "-fscm", "wt", "k.ptx"]) == ["k.ptx"]


def test_long_and_short_names_are_not_interchangeable() -> None:
    # ptxas rejects --arch and -gpu-name: they are unknown options to us too.
    args = parse_ptxas_args(["--arch", "sm_90", "-gpu-name", "sm_90"])
    assert [a.kind for a in args] == ["unknown", "input", "unknown", "input"]


def test_several_inputs_stdin_and_input_as_string() -> None:
    args = parse_ptxas_args(["-c", "a.ptx", "-", "-ias", MINI_PTX, "--input-as-string=.version 8.0", "b.ptx"])
    kinds = [(a.kind, a.value) for a in ptx_inputs(args)]
    assert kinds == [
        ("input", "a.ptx"),
        ("stdin", None),
        ("ias", MINI_PTX),
        ("ias", ".version 8.0"),
        ("input", "b.ptx"),
    ]
    new = render_args(args, {id(ptx_inputs(args)[2]): "X", id(ptx_inputs(args)[3]): "Y"})
    assert new == ["-c", "a.ptx", "-", "-ias", "X", "--input-as-string=Y", "b.ptx"]


def test_unknown_options_pass_through() -> None:
    argv = ["-knob", "--no-such-thing", "k.ptx"]
    args = parse_ptxas_args(argv)
    assert [a.kind for a in args] == ["unknown", "unknown", "input"]
    assert render_args(args, {}) == argv


def test_split_options_file() -> None:
    text = '-arch sm_90\n-o "out file.cubin"  ab"c d"e opt\\ 8 \'q\' # x\n'
    assert split_options_file(text) == [
        "-arch",
        "sm_90",
        "-o",
        "out file.cubin",
        "abc de",
        "opt 8",
        "'q'",
        "#",
        "x",
    ]


def test_options_files_nested_and_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("inner.txt").write_text("-o out.cubin k.ptx\n")
    Path("outer.txt").write_text("-arch=sm_90 -optf inner.txt\n")
    Path("plain.txt").write_text("-v\n")
    argv = ["--options-file", "outer.txt,plain.txt", "-optf=plain.txt", "other.ptx"]
    args = parse_ptxas_args(argv)
    assert inputs_of(argv) == ["k.ptx", "other.ptx"]
    assert render_args(args, {}) == argv
    k = ptx_inputs(args)[0]
    # an options file that holds a replaced input is spelled out; others stay
    assert render_args(args, {id(k): "/tmp/x/k.ptx"}) == [
        "-arch=sm_90",
        "-o",
        "out.cubin",
        "/tmp/x/k.ptx",
        "-v",
        "-optf=plain.txt",
        "other.ptx",
    ]


def test_unreadable_options_file_is_left_to_ptxas() -> None:
    args = parse_ptxas_args(["-optf", "/nonexistent/opts.txt", "k.ptx"])
    assert args[0].kind == "optf" and args[0].children is None
    assert inputs_of(["-optf", "/nonexistent/opts.txt", "k.ptx"]) == ["k.ptx"]


def test_self_including_options_file_terminates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("loop.txt").write_text("-optf loop.txt\n")
    parse_ptxas_args(["-optf", "loop.txt"])  # must not recurse forever


@needs_ptxas
def test_option_table_matches_ptxas_help() -> None:
    """Every option of `ptxas --help` is in our table with the same names and arity."""
    out = subprocess.run([str(real_ptxas()), "--help"], capture_output=True, text=True, check=False).stdout
    listed = re.findall(r"^--(\S+)(?: <[^>]*>(?:,\.\.\.)?)?\s+\(-(\S+)\)", out, re.M)
    with_value = {m[0] for m in re.findall(r"^--(\S+) (<[^>]*>)", out, re.M)}
    assert len(listed) > 40
    for long, short in listed:
        assert long in LONG_OPTIONS, f"--{long} missing from PTXAS_OPTIONS"
        spec = LONG_OPTIONS[long]
        assert spec.short == short
        if long not in ("def-load-cache", "def-store-cache", "force-load-cache", "force-store-cache"):
            assert spec.takes_value == (long in with_value), long


# --------------------------------------------------------------------------
# Finding the real ptxas


def test_explicit_real_ptxas_must_exist(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("PTXASW_REAL_PTXAS", str(tmp_path / "nope"))
    with pytest.raises(WrapperError, match="not an executable"):
        find_real_ptxas()


def test_explicit_real_ptxas_cannot_be_ourselves(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("PTXASW_REAL_PTXAS", str(WRAPPER_SHIM))
    with pytest.raises(WrapperError, match="own wrapper"):
        find_real_ptxas()


def test_path_search_skips_our_shims(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "ptxas").symlink_to(WRAPPER_SHIM)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(WRAPPER_SHIM, copy / "ptxas")
    real = write_fake(tmp_path / "real" / "ptxas")
    clean_env.setenv("PATH", os.pathsep.join([str(ours), str(copy), str(real.parent)]))
    assert find_real_ptxas() == real


def test_path_search_skips_tools_already_chosen(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = write_fake(tmp_path / "a" / "ptxas")
    second = write_fake(tmp_path / "b" / "ptxas")
    clean_env.setenv("PATH", os.pathsep.join([str(first.parent), str(second.parent)]))
    assert find_real_ptxas() == first
    clean_env.setenv("PTXASW_VISITED_PTXAS", str(first.resolve()))
    assert find_real_ptxas() == second


def test_cuda_home_fallback(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tool = write_fake(tmp_path / "cuda" / "bin" / "ptxas")
    clean_env.setenv("PATH", str(tmp_path / "empty"))
    clean_env.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    assert find_real_ptxas() == tool


def test_no_real_ptxas_is_one_line_error(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("PATH", str(tmp_path))
    clean_env.delenv("CUDA_HOME", raising=False)
    clean_env.delenv("CUDA_PATH", raising=False)
    clean_env.setattr(wrapper, "find_real_tool", _no_fallbacks(wrapper.find_real_tool))
    assert main(["-arch", "sm_90", "k.ptx"]) == wrapper.EXIT_FATAL
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ptxasw: error: cannot find the real ptxas")


def _no_fallbacks(fn):  # type: ignore[no-untyped-def]
    """find_real_tool without the /usr/local/cuda fallback (this machine has one)."""

    def inner(**kw):  # type: ignore[no-untyped-def]
        kw["fallbacks"] = []
        return fn(**kw)

    return inner


def test_recursion_through_an_unrecognised_shim(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    """A user's ptxas shim that runs ptxasw again must not loop: the nested run skips it."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "ptxas").write_text('#!/bin/sh\nexec "$SHIM_TARGET" "$@"\n')
    (user / "ptxas").chmod(0o755)
    real = write_fake(tmp_path / "real" / "ptxas")
    log = tmp_path / "fake.jsonl"
    wlog = tmp_path / "wrapper.jsonl"
    src = tmp_path / "k.ptx"
    src.write_text(MINI_PTX)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(user), str(real.parent), os.environ.get("PATH", "")]),
        "SHIM_TARGET": str(WRAPPER_SHIM),
        "PTXASW_PYTHON": sys.executable,
        "FAKE_TOOL_LOG": str(log),
        "PTXASW_LOG": str(wlog),
        "PYTHONPATH": str(HOOKS_DIR),
        "PTXASW_PIPELINE": "pipeline_hooks:add_comment",
    }
    proc = subprocess.run(
        [str(WRAPPER_SHIM), "-arch", "sm_90", str(src)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    calls = Fake(real, log).calls()
    assert len(calls) == 1
    (seen,) = calls[0]["files"].values()
    assert MARK in seen
    statuses = [json.loads(line)["status"] for line in wlog.read_text().splitlines()]
    assert sorted(statuses) == ["nested", "ok"]


# --------------------------------------------------------------------------
# Transforming and fail-open


def test_rewritten_ptx_goes_to_a_private_copy(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "add_comment")
    before = ptx.read_bytes()
    assert main(["-arch", "sm_90", str(ptx), "-o", "out.cubin"]) == 0
    (call,) = fake.calls()
    new_path = call["argv"][2]
    assert new_path != str(ptx) and Path(new_path).name == ptx.name
    assert call["argv"][:2] == ["-arch", "sm_90"] and call["argv"][3] == "-o"
    assert Path(call["argv"][4]).name == "out.cubin"  # staged beside the target, renamed onto it
    assert MARK in call["files"][new_path]
    assert not Path(new_path).exists()  # the private directory is gone
    assert ptx.read_bytes() == before
    err = capfd.readouterr().err
    assert not warnings_in(err)
    assert f"assembled {ptx}" in err  # tool output names the user's file, not our copy


def test_unchanged_ptx_is_assembled_from_the_original(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch
) -> None:
    use_hook(clean_env, "identity")
    assert main(["-arch", "sm_90", str(ptx)]) == 0
    assert fake.calls()[0]["argv"] == ["-arch", "sm_90", str(ptx)]


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        ("raise_ptx_error", r"{file}:3:7: unexpected token 'bogus'"),
        ("raise_internal", r"{file}: internal error \(RuntimeError\): boom second line"),
        ("no_text", r"{file}: internal error: the pipeline returned no PTX text"),
    ],
    ids=["ptx-error", "internal-error", "no-text"],
)
def test_pipeline_errors_fall_back_with_one_warning(
    hook: str,
    message: str,
    fake: Fake,
    ptx: Path,
    clean_env: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    use_hook(clean_env, hook)
    clean_env.setenv("FAKE_TOOL_RC", "3")
    before = ptx.read_bytes()
    assert main(["-arch", "sm_90", str(ptx)]) == 3  # ptxas's exit code, whatever happened to us
    (call,) = fake.calls()
    assert call["argv"] == ["-arch", "sm_90", str(ptx)]
    (line,) = warnings_in(capfd.readouterr().err)
    pattern = "ptxasw: warning: " + message.format(file=re.escape(str(ptx))) + "; assembling the original PTX"
    assert re.fullmatch(pattern, line), line
    assert ptx.read_bytes() == before


def test_hanging_pipeline_is_cut_off(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "hang")
    clean_env.setenv("PTXASW_TIMEOUT", "0.3")
    assert main(["-arch", "sm_90", str(ptx)]) == 0
    assert fake.calls()[0]["argv"] == ["-arch", "sm_90", str(ptx)]
    (line,) = warnings_in(capfd.readouterr().err)
    assert line == f"ptxasw: warning: {ptx}: time-out after 0.3 s; assembling the original PTX"


def test_spinning_pipeline_is_cut_off_and_the_process_exits(fake: Fake, ptx: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PTXASW_PIPELINE": "pipeline_hooks:spin", "PTXASW_TIMEOUT": "0.5"}
    env["PYTHONPATH"] = os.pathsep.join([str(HOOKS_DIR), str(REPO)])
    env["FAKE_TOOL_RC"] = "7"
    proc = subprocess.run(
        [sys.executable, "-m", "ptxasw.driver.ptxas", "-arch", "sm_90", str(ptx)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 7
    assert len(warnings_in(proc.stderr)) == 1 and "time-out after 0.5 s" in proc.stderr
    assert fake.calls()[0]["argv"] == ["-arch", "sm_90", str(ptx)]


def test_ptxas_rejecting_our_ptx_gets_the_original(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    use_hook(clean_env, "break_ptx")
    log = tmp_path / "w.jsonl"
    clean_env.setenv("PTXASW_LOG", str(log))
    assert main(["-arch", "sm_90", str(ptx)]) == 0
    first, second = fake.calls()
    assert first["argv"][2] != str(ptx)
    assert second["argv"] == ["-arch", "sm_90", str(ptx)]
    err = capfd.readouterr().err
    (line,) = warnings_in(err)
    assert "ptxas rejected the rewritten PTX (exit 255: fake: fatal: bogus directive)" in line
    assert "fatal" not in err.replace(line, "")  # the failed run's output is not shown
    rec = json.loads(log.read_text())
    assert rec["status"] == "fallback" and rec["real_exit"] == 0 and "rejected" in rec


def test_bad_ptx_that_ptxas_rejects_either_way_is_reported_by_ptxas_alone(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "break_ptx")
    clean_env.setenv("FAKE_TOOL_RC", "2")
    assert main(["-arch", "sm_90", str(ptx)]) == 2
    assert len(fake.calls()) == 2
    assert not warnings_in(capfd.readouterr().err)


def test_after_a_time_out_later_inputs_are_not_transformed(
    fake: Fake, tmp_path: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "hang")
    clean_env.setenv("PTXASW_TIMEOUT", "0.2")
    a, b = tmp_path / "a.ptx", tmp_path / "b.ptx"
    for p in (a, b):
        p.write_text(MINI_PTX)
    assert main(["-c", str(a), str(b)]) == 0
    assert fake.calls()[0]["argv"] == ["-c", str(a), str(b)]
    first, second = warnings_in(capfd.readouterr().err)
    assert "time-out after 0.2 s" in first and "not transformed after an earlier time-out" in second


def test_several_inputs_with_one_basename(fake: Fake, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    use_hook(clean_env, "add_comment")
    a, b = tmp_path / "a" / "k.ptx", tmp_path / "b" / "k.ptx"
    for p in (a, b):
        p.parent.mkdir()
        p.write_text(MINI_PTX)
    assert main(["-c", str(a), str(b)]) == 0
    argv = fake.calls()[0]["argv"]
    assert argv[0] == "-c" and len(set(argv[1:])) == 2
    assert all(Path(p).name == "k.ptx" and p not in (str(a), str(b)) for p in argv[1:])


def test_input_inside_an_options_file(
    fake: Fake, ptx: Path, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    use_hook(clean_env, "add_comment")
    opts = tmp_path / "opts.txt"
    opts.write_text(f'-arch sm_90 "{ptx}"\n')
    assert main(["-optf", str(opts), "-o", "out.cubin"]) == 0
    argv = fake.calls()[0]["argv"]
    assert argv[:2] == ["-arch", "sm_90"] and argv[3] == "-o" and Path(argv[4]).name == "out.cubin"
    assert Path(argv[2]).name == ptx.name and argv[2] != str(ptx)


def test_input_as_string_and_stdin(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_hook(clean_env, "add_comment")
    monkeypatch.setattr(wrapper, "read_stdin", lambda: MINI_PTX.encode())
    assert main(["-arch", "sm_90", "-ias", MINI_PTX, "-"]) == 0
    call = fake.calls()[0]
    assert call["argv"][:3] == ["-arch", "sm_90", "-ias"]
    assert MARK in call["argv"][3] and call["argv"][4] == "-"
    assert MARK in call["stdin"]


def test_disable_passes_straight_through(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    use_hook(clean_env, "raise_internal")
    clean_env.setenv("PTXASW_DISABLE", "1")
    clean_env.setenv("PTXASW_LOG", str(tmp_path / "w.jsonl"))
    argv = ["-arch", "sm_90", str(ptx), "-o", "x.cubin"]
    assert main(argv) == 0
    assert fake.calls()[0]["argv"] == argv
    assert not warnings_in(capfd.readouterr().err)
    assert json.loads((tmp_path / "w.jsonl").read_text())["status"] == "disabled"


@pytest.mark.parametrize("flag", ["--version", "-V", "--help", "-h", "--list-version"])
def test_version_and_help_pass_through(
    flag: str,
    fake: Fake,
    clean_env: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    ptx: Path,
) -> None:
    use_hook(clean_env, "raise_internal")
    clean_env.setenv("PTXASW_LOG", str(tmp_path / "w.jsonl"))
    assert main([flag, str(ptx)]) == 0
    assert fake.calls()[0]["argv"] == [flag, str(ptx)]
    assert not warnings_in(capfd.readouterr().err)
    assert json.loads((tmp_path / "w.jsonl").read_text())["status"] == "passthrough"


def test_log_lines(fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "w.jsonl"
    clean_env.setenv("PTXASW_LOG", str(log))
    use_hook(clean_env, "add_comment")
    assert main(["-arch", "sm_90", str(ptx)]) == 0
    use_hook(clean_env, "raise_ptx_error")
    clean_env.setenv("FAKE_TOOL_RC", "4")
    assert main(["-arch", "sm_90", str(ptx)]) == 4
    ok, bad = (json.loads(line) for line in log.read_text().splitlines())
    assert ok["tool"] == "ptxas" and ok["argv"] == ["-arch", "sm_90", str(ptx)]
    assert ok["status"] == "ok" and ok["real_exit"] == 0 and ok["seconds"] >= 0
    assert ok["real"] == str(fake.path)
    (inp,) = ok["inputs"]
    assert inp["input"] == str(ptx) and inp["rewritten"] is True
    assert inp["passes"] == [{"name": "add_comment", "changed": True, "seconds": 0.0}]
    assert bad["status"] == "fallback" and bad["real_exit"] == 4
    assert bad["inputs"][0]["error"] == "unexpected token 'bogus'"
    assert bad["inputs"][0]["where"] == f"{ptx}:3:7"


def test_unwritable_log_warns_once_and_keeps_the_exit_code(
    fake: Fake, ptx: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    use_hook(clean_env, "identity")
    clean_env.setenv("PTXASW_LOG", str(tmp_path / "no" / "such" / "dir" / "w.jsonl"))
    clean_env.setenv("FAKE_TOOL_RC", "5")
    assert main(["-arch", "sm_90", str(ptx)]) == 5
    (line,) = warnings_in(capfd.readouterr().err)
    assert "cannot write PTXASW_LOG" in line


def test_transform_ptx_never_raises(clean_env: pytest.MonkeyPatch) -> None:
    use_hook(clean_env, "raise_internal")
    out = transform_ptx(MINI_PTX, "x.ptx", timeout=5)
    assert out.status == "fallback" and out.text is None
    clean_env.setenv("PTXASW_PIPELINE", "no_such_module_anywhere:run")
    out = transform_ptx(MINI_PTX, "x.ptx", timeout=5)
    assert out.status == "fallback" and "ModuleNotFoundError" in (out.error or "")


# --------------------------------------------------------------------------
# With NVIDIA's ptxas


@needs_ptxas
def test_malformed_ptx_gets_ptxas_exit_code(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """With the default pipeline: whatever it makes of bad PTX, ptxas decides the exit code."""
    real = real_ptxas()
    assert real is not None
    clean_env.setenv("PTXASW_REAL_PTXAS", str(real))
    bad = tmp_path / "bad.ptx"
    bad.write_text(MALFORMED_PTX)
    expected = subprocess.run(
        [str(real), "-arch", "sm_90", str(bad), "-o", str(tmp_path / "a.cubin")]
    ).returncode
    assert expected != 0
    capfd.readouterr()
    assert main(["-arch", "sm_90", str(bad), "-o", str(tmp_path / "b.cubin")]) == expected
    assert len(warnings_in(capfd.readouterr().err)) <= 1
    assert bad.read_text() == MALFORMED_PTX


@needs_ptxas
def test_cubin_is_the_same_through_the_wrapper(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    """A rewrite that only adds a comment gives the same cubin; -g records only the basename."""
    real = real_ptxas()
    assert real is not None
    clean_env.setenv("PTXASW_REAL_PTXAS", str(real))
    use_hook(clean_env, "add_comment")
    src = tmp_path / "k.ptx"
    src.write_text(MINI_PTX)
    clean_env.chdir(tmp_path)
    subprocess.run([str(real), "-arch", "sm_90", "k.ptx", "-o", "direct.cubin"], check=True)
    assert main(["-arch", "sm_90", "k.ptx", "-o", "wrapped.cubin"]) == 0
    assert Path("direct.cubin").read_bytes() == Path("wrapped.cubin").read_bytes()
    assert main(["-arch", "sm_90", "-g", "k.ptx", "-o", "debug.cubin"]) == 0
    data = Path("debug.cubin").read_bytes()
    assert b"k.ptx -g" in data and b"ptxasw-" not in data


@needs_ptxas
def test_real_version_through_the_shim() -> None:
    env = {**os.environ, "PTXASW_PYTHON": sys.executable}
    env.pop("PTXASW_LOG", None)
    proc = subprocess.run(
        [str(WRAPPER_SHIM), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith("ptxas: NVIDIA")


# --------------------------------------------------------------------------
# The GCC nvptx `as` shim


@pytest.fixture
def fake_as(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Fake:
    tool = write_fake(tmp_path / "fakebin" / "nvptx-none-as")
    log = tmp_path / "fake-as.jsonl"
    clean_env.setenv("PTXASW_REAL_AS", str(tool))
    clean_env.setenv("FAKE_TOOL_LOG", str(log))
    return Fake(tool, log)


GCC_PTX = (
    "// BEGIN PREAMBLE\n.version 6.0\n.target sm_30\n.address_size 64\n// END PREAMBLE\n"
    "// BEGIN GLOBAL FUNCTION DECL: sinf\n"
    ".extern .func (.param .f32 %value_out) sinf (.param .f32 %in_ar0);\n"
)


def test_as_inputs() -> None:
    assert gcc_as.as_inputs(["--no-verify", "--no-verify", "-o", "x.o", "y.s"]) == [4]
    assert gcc_as.as_inputs(["-ox.o", "-m", "sm_50", "-v", "y.s"]) == [4]
    assert gcc_as.as_inputs(["-vo", "x.o", "--", "-y.s"]) == [3]
    assert gcc_as.as_inputs(["-o", "x.o"]) == []


def test_as_shim_rewrites_and_keeps_arguments(
    fake_as: Fake, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    use_hook(clean_env, "add_comment")
    src = tmp_path / "in.s"
    src.write_text(GCC_PTX)
    assert gcc_as.main(["--no-verify", "-o", "out.o", str(src)]) == 0
    argv = fake_as.calls()[0]["argv"]
    # The output is staged beside the target (renamed onto it when as succeeds).
    assert argv[:2] == ["--no-verify", "-o"] and Path(argv[2]).name == "out.o"
    assert Path(argv[2]).parent.name.startswith(".ptxasw-") and Path(argv[3]).name == "in.s"
    assert MARK in fake_as.calls()[0]["files"][argv[3]]
    assert src.read_text() == GCC_PTX
    assert not list(Path.cwd().glob(".ptxasw-*"))


def test_as_shim_stages_its_output(tmp_path: Path) -> None:
    """What as writes lands on the target only by a rename (a killed build
    leaves no partial object); odd command lines are left as they are."""
    target = tmp_path / "out.o"
    position, staging = gcc_as._stage_as_output(["--no-verify", "-o", str(target), "in.s"])
    assert position == 2 and staging.staged.parent.parent == tmp_path
    staging.staged.write_bytes(b"object")
    assert not target.exists()
    staging.commit()
    staging.discard()
    assert target.read_bytes() == b"object" and not list(tmp_path.glob(".ptxasw-*"))
    assert gcc_as._stage_as_output(["-o", "a.o", "-o", "b.o", "in.s"]) is None
    assert gcc_as._stage_as_output([f"-o{target}", "in.s"]) is None
    assert gcc_as._stage_as_output(["in.s"]) is None


def test_as_shim_reads_stdin(
    fake_as: Fake, clean_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_hook(clean_env, "add_comment")
    clean_env.setenv("FAKE_READS_STDIN", "1")
    monkeypatch.setattr(gcc_as, "read_stdin", lambda: GCC_PTX.encode())
    assert gcc_as.main(["-o", "out.o"]) == 0
    assert MARK in fake_as.calls()[0]["stdin"]


def test_as_shim_refuses_to_lose_gcc_markers(
    fake_as: Fake, tmp_path: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "drop_gcc_markers")
    src = tmp_path / "in.s"
    src.write_text(GCC_PTX)
    assert gcc_as.main(["-o", "out.o", str(src)]) == 0
    argv = fake_as.calls()[0]["argv"]  # the original input; the output staged beside out.o
    assert argv[0] == "-o" and Path(argv[1]).name == "out.o" and argv[2] == str(src)
    (line,) = warnings_in(capfd.readouterr().err)
    assert "marker comments" in line and "// BEGIN" in line


def test_as_shim_fails_open_and_passes_version(
    fake_as: Fake, tmp_path: Path, clean_env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    use_hook(clean_env, "raise_internal")
    clean_env.setenv("FAKE_TOOL_RC", "1")
    clean_env.setenv("PTXASW_LOG", str(tmp_path / "w.jsonl"))
    src = tmp_path / "in.s"
    src.write_text(GCC_PTX)
    assert gcc_as.main(["-o", "out.o", str(src)]) == 1
    assert len(warnings_in(capfd.readouterr().err)) == 1
    assert gcc_as.main(["--version"]) == 1
    assert fake_as.calls()[1]["argv"] == ["--version"]
    statuses = [json.loads(line)["status"] for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    assert statuses == ["fallback", "passthrough"]


def test_an_internal_bug_outside_the_pipeline_still_assembles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fail-open covers our whole wrapper, not only the pipeline: a crash in the
    option parser prints one warning and the real ptxas runs on the user's arguments."""
    import ptxasw.driver.ptxas as wrapper

    real = shutil.which("ptxas")
    if real is None:
        pytest.skip("ptxas not installed")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n")
    out = tmp_path / "k.cubin"

    def broken(argv: object) -> object:
        raise TypeError("simulated bug")

    monkeypatch.setattr(wrapper, "parse_ptxas_args", broken)
    monkeypatch.setenv("PTXASW_REAL_PTXAS", real)
    rc = wrapper.main(["-arch=sm_90", str(ptx), "-o", str(out)])
    assert rc == 0 and out.read_bytes()[:4] == b"\x7fELF"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (TypeError: simulated bug)" in err
