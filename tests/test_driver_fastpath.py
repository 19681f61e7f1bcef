"""Tests of the shadow toolkit's fast path: bin/ptxas runs the real ptxas without Python
when a fast entry (`ptxasw.driver.cache`) already says what this invocation assembles.

What matters is that a hit does exactly what the Python wrapper would do, and
that anything that could change the outcome misses. The script is run with
dash (the /bin/sh of Debian and Ubuntu) explicitly, and with bash in POSIX
mode where a test says so. A hit is told from a miss by whether Python
started (a ``sitecustomize`` on PYTHONPATH notes every start).

Most tests use a fake ptxas (a shell script that "assembles" by copying its
input to its output); those marked ``needs_ptxas`` compare NVIDIA's cubins.
No GPU is needed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptxasw.driver import cache as cache_mod
from ptxasw.driver.cache import (
    FAST_ANY_INPUT,
    FAST_KEYED_ENV,
    FAST_MAGIC,
    FAST_SKIP_ENV,
    FastRequest,
    write_fast_entry,
)
from ptxasw.driver.ptxas import PTXAS_SHIM_MARKER, is_our_shim
from ptxasw.driver.toolkit import ptxas_script
from tests.test_wrapper import MINI_PTX  # the one-load kernel of the drop-in tests

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ptxasw"
JACOBI = REPO / "examples" / "jacobi.ptx"  # rewritten with PTXASW_PROFIT=always, left alone by the model


#: Logs "pid<TAB>PTXASW_VISITED_PTXAS<TAB>args..." of each call.
LOG_CALL = """\
#!/bin/sh
line="$$	${PTXASW_VISITED_PTXAS-}"
for a do line="$line	$a"; done
printf '%s\\n' "$line" >> "$FAKE_LOG"
"""

#: A ptxas that logs its call and "assembles" by copying its input to its
#: output (so an output shows which text was assembled).
FAKE_PTXAS = (
    LOG_CALL
    + """\
out=elf.o
in=
while [ $# -gt 0 ]; do
    case $1 in
    -o) out=$2; shift ;;
    -arch | -maxrregcount) shift ;;
    -*) ;;
    *) in=$1 ;;
    esac
    shift
done
[ -z "$in" ] || cat "$in" > "$out"
"""
)


def real_ptxas() -> Path | None:
    for cand in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas"):
        if cand.startswith("/") and os.access(cand, os.X_OK):
            return Path(cand).resolve()
    found = shutil.which("ptxas")
    return Path(found).resolve() if found else None


needs_ptxas = pytest.mark.skipif(real_ptxas() is None, reason="NVIDIA ptxas not installed (CUDA toolkit)")


@dataclass
class Call:
    """One run of the shadow script."""

    rc: int
    stdout: str
    stderr: str
    fast: bool  # the real tool ran and Python did not start
    argv: list[str]  # what the fake ptxas was given (fake only)
    visited: str


@dataclass
class Shadow:
    """A shadow bin/ptxas over some real ptxas, and the environment to run it in."""

    script: Path
    real: Path
    env: dict[str, str]
    log: Path
    cache: Path
    starts: Path  # one line per Python start
    shell: str = "dash"

    def python_path(self, *folders: Path) -> None:
        """Import from ``folders`` first (keeping the start counter)."""
        hook = str(self.starts.parent / "hook")
        self.env["PYTHONPATH"] = os.pathsep.join([*map(str, folders), hook])

    def run(self, *args: str | Path, cwd: Path | None = None, **env: str) -> Call:
        before = len(self.log.read_text().splitlines()) if self.log.exists() else 0
        started = self.starts.read_text().count("\n") if self.starts.exists() else 0
        proc = subprocess.Popen(
            [self.shell, str(self.script), *map(str, args)],
            env={**self.env, **env},
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = proc.communicate(timeout=300)
        lines = self.log.read_text().splitlines()[before:] if self.log.exists() else []
        _, visited, *argv = lines[-1].split("\t") if lines else ["", ""]
        python = (self.starts.read_text().count("\n") if self.starts.exists() else 0) > started
        return Call(proc.returncode, out, err, bool(lines) and not python, argv, visited)

    def entries(self) -> list[Path]:
        fast = self.cache / "fast"
        return (
            sorted(p for p in fast.rglob("*") if p.is_file() and p.parent.name != "ptx")
            if fast.is_dir()
            else []
        )


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PTXASW_", "XDG_CACHE_HOME"))}
    env.update(HOME=str(tmp_path / "home"), **extra)
    return env


def make_shadow(tmp_path: Path, package: Path, real: Path | None = None, shell: str = "dash") -> Shadow:
    """A shadow script over the fake ptxas, or over ``real`` through a script that logs calls,
    running the ptxasw package folder ``package`` (a copy: the checkout changes under
    other people's edits, and every change rightly misses)."""
    tool = tmp_path / "fakebin" / "ptxas"
    tool.parent.mkdir(parents=True, exist_ok=True)
    tool.write_text(FAKE_PTXAS if real is None else LOG_CALL + f'exec "{real}" "$@"\n')
    tool.chmod(0o755)
    real = tool
    script = tmp_path / "shadow" / "bin" / "ptxas"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(ptxas_script(real, package=package))
    script.chmod(0o755)
    log = tmp_path / "fake.log"
    cache = tmp_path / "cache"
    starts = tmp_path / "python-starts.txt"
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(
        f"with open({str(starts)!r}, 'a') as f:\n    f.write('started\\n')\n"
    )
    env = clean_env(tmp_path, PTXASW_CACHE_DIR=str(cache), FAKE_LOG=str(log))
    sh = Shadow(script, real, env, log, cache, starts, shell)
    sh.python_path(package.parent)
    return sh


def copy_package(dest: Path) -> Path:
    """A copy of the ptxasw package under ``dest``."""
    pkg = dest / "ptxasw"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the package for the tests that do not edit it."""
    return copy_package(tmp_path_factory.mktemp("site"))


@pytest.fixture
def shadow(tmp_path: Path, package: Path) -> Shadow:
    return make_shadow(tmp_path, package)


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    p = tmp_path / "src" / "mini.ptx"
    p.parent.mkdir(exist_ok=True)
    p.write_text(MINI_PTX)
    return p


@pytest.fixture
def jacobi(tmp_path: Path) -> Path:
    p = tmp_path / "src" / "jacobi.ptx"
    p.parent.mkdir(exist_ok=True)
    shutil.copy(JACOBI, p)
    return p


def warm(shadow: Shadow, *args: str | Path, **env: str) -> tuple[Call, Call]:
    """Run twice: the first run is Python's (and records), the second must hit."""
    first = shadow.run(*args, **env)
    second = shadow.run(*args, **env)
    assert first.rc == 0 and second.rc == 0, first.stderr + second.stderr
    assert not first.fast and second.fast, (first, second, shadow.entries())
    return first, second


# --------------------------------------------------------------------------
# Hits do what Python does


@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_unchanged_input_hits_and_assembles_the_users_file(
    tmp_path: Path, package: Path, mini: Path, shell: str
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed")
    sh = make_shadow(tmp_path, package, shell=shell)
    if shell == "bash":
        sh.env["POSIXLY_CORRECT"] = "1"
    out = tmp_path / "out.cubin"
    first, second = warm(sh, "-arch", "sm_90", mini, "-o", out)
    assert second.argv == ["-arch", "sm_90", str(mini), "-o", str(out)]  # the user's command line as it is
    assert out.read_text() == MINI_PTX
    assert second.stderr == first.stderr == ""
    # The loop guard is set as Python sets it for ptxas.
    assert second.visited == first.visited == str(sh.real.resolve())
    # The any-input entry Python wrote, and the file's own the hit linked to it.
    entries = sh.entries()
    assert sorted(e.name == FAST_ANY_INPUT for e in entries) == [False, True]
    for entry in entries:
        assert entry.read_text().splitlines() == [FAST_MAGIC, "unchanged", str(sh.real.resolve()), "end"]


def test_rewritten_input_hits_with_the_stored_rewrite(shadow: Shadow, jacobi: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    _, second = warm(shadow, "-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    rewritten = out.read_text()
    assert rewritten != JACOBI.read_text() and "shfl.sync" in rewritten
    stored = Path(second.argv[2])
    assert stored.parent == shadow.cache / "fast" / "ptx" and stored.read_text() == rewritten
    assert second.argv[:2] == ["-arch", "sm_90"] and second.argv[3:] == ["-o", str(out)]
    out.unlink()
    again = shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    assert again.fast and out.read_text() == rewritten


def test_the_fast_path_never_writes_into_the_input(shadow: Shadow, jacobi: Path, tmp_path: Path) -> None:
    src = jacobi.parent
    work = tmp_path / "work"
    work.mkdir()
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in src.iterdir()}
    warm(shadow, "-arch", "sm_90", jacobi, "-o", work / "out.cubin", PTXASW_PROFIT="always")
    assert shadow.run("-arch", "sm_90", jacobi, "-o", work / "out.cubin", PTXASW_PROFIT="always").fast
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in src.iterdir()} == before
    assert sorted(p.name for p in work.iterdir()) == ["out.cubin"]


def test_nvcc_style_temporary_names_hit(shadow: Shadow, tmp_path: Path) -> None:
    """nvcc names its PTX and cubin after its process id: the key leaves both names out."""
    work = tmp_path / "nvcc"
    work.mkdir()
    outs = []
    for pid in ("00001779", "0000177d"):
        ptx = work / f"tmpxft_{pid}_00000000-6_jacobi.ptx"
        shutil.copy(JACOBI, ptx)
        out = work / f"tmpxft_{pid}_00000000-8_jacobi.sm_90.cubin"
        call = shadow.run("-arch=sm_90", "-m64", ptx, "-o", out, PTXASW_PROFIT="always")
        assert call.rc == 0 and call.fast == (pid == "0000177d")
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_no_input_file_or_odd_inputs_go_to_python(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    optf = tmp_path / "opts.txt"
    optf.write_text(f"-arch sm_90 {mini}")
    for args in (
        ["-arch", "sm_90", mini, mini],  # two inputs
        ["-arch", "sm_90", "-", "-o", tmp_path / "s.cubin"],  # standard input
        ["--options-file", optf, "-o", tmp_path / "o.cubin"],
        ["-arch", "sm_90", "-o"],  # a value missing
        ["--version"],
    ):
        for _ in range(2):
            call = shadow.run(*args)
            assert not call.fast, args
    assert shadow.entries() == []


def test_a_pipe_is_left_to_python_unread(shadow: Shadow, tmp_path: Path) -> None:
    """The script must not hash (and so drain) a PTX "file" that is a named pipe."""
    fifo = tmp_path / "k.ptx"
    os.mkfifo(fifo)
    out = tmp_path / "out.cubin"

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(JACOBI.read_bytes())

    for _ in range(2):
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        proc = subprocess.run(
            ["dash", str(shadow.script), "-arch", "sm_90", str(fifo), "-o", str(out)],
            env={**shadow.env, "PTXASW_PROFIT": "always"},
            capture_output=True,
            timeout=60,
        )
        writer.join(5)
        assert proc.returncode == 0, proc.stderr
        assert "shfl.sync" in out.read_text()  # Python read the whole module and rewrote it
    assert shadow.entries() == []


# --------------------------------------------------------------------------
# Misses: anything that could change the outcome


def test_changed_ptx_misses(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    """Where the pipeline runs (forced synthesis), an entry holds for one text only.
    (Under the cost model on sm_90 one entry holds for any text:
    tests/test_driver_nothing_to_do.py.)"""
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out, PTXASW_PROFIT="always")
    mini.write_text(MINI_PTX.replace("copy_one", "copy_two"))
    assert not shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_PROFIT="always").fast
    assert out.read_text() == mini.read_text()
    assert shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_PROFIT="always").fast


def test_changed_command_line_misses(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    for args in (
        ["-arch", "sm_80", mini, "-o", out],
        ["-arch", "sm_90", "-O2", mini, "-o", out],
        ["-arch", "sm_90", mini, "-o", out, "-lineinfo"],
        ["-arch", "sm_90", "-maxrregcount", "32", mini, "-o", out],
        ["-arch", "sm_90", mini],
    ):
        assert not shadow.run(*args, cwd=tmp_path).fast, args


@pytest.mark.parametrize(
    "name, value",
    [
        ("PTXASW_PROFIT", "always"),
        ("PTXASW_SYNTH", "0"),
        ("PTXASW_MAX_DELTA", "2"),
        ("PTXASW_MODE", "normal"),
        ("PTXASW_TIMEOUT", "30"),
        ("PTXASW_UNSAFE", "1"),
        ("PTXASW_TUNE_DIR", "off"),
    ],
)
def test_changed_setting_misses(shadow: Shadow, mini: Path, tmp_path: Path, name: str, value: str) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    assert not shadow.run("-arch", "sm_90", mini, "-o", out, **{name: value}).fast
    assert shadow.run("-arch", "sm_90", mini, "-o", out, **{name: value}).fast


@pytest.mark.parametrize("name", FAST_SKIP_ENV)
def test_skipping_settings_always_go_to_python(shadow: Shadow, mini: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    value = {
        "PTXASW_LOG": str(tmp_path / "log.jsonl"),
        "PTXASW_PIPELINE": "ptxasw.driver.pipeline:run_pipeline",
    }
    call = shadow.run("-arch", "sm_90", mini, "-o", out, **{name: value.get(name, "1")})
    assert not call.fast and call.rc == 0
    if name == "PTXASW_LOG":
        assert (tmp_path / "log.jsonl").read_text().count("\n") == 1


def test_new_tune_verdict_misses(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    folder = shadow.cache / "tune" / "sm_90"
    folder.mkdir(parents=True)
    verdict = folder / ("0" * 64 + ".json")
    verdict.write_text("{}\n")
    assert not shadow.run("-arch", "sm_90", mini, "-o", out).fast
    assert shadow.run("-arch", "sm_90", mini, "-o", out).fast
    verdict.write_text("[]\n")  # edited in place, same size
    assert not shadow.run("-arch", "sm_90", mini, "-o", out).fast


def test_changed_real_ptxas_misses(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    shadow.real.write_text(FAKE_PTXAS + "# upgraded\n")
    assert not shadow.run("-arch", "sm_90", mini, "-o", out).fast
    assert shadow.run("-arch", "sm_90", mini, "-o", out).fast
    other = tmp_path / "other" / "ptxas"
    other.parent.mkdir()
    shutil.copy2(shadow.real, other)
    assert not shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_REAL_PTXAS=str(other)).fast


def test_edited_or_upgraded_package_misses(tmp_path: Path, mini: Path) -> None:
    pkg = copy_package(tmp_path / "site")
    sh = make_shadow(tmp_path, pkg)
    out = tmp_path / "out.cubin"
    warm(sh, "-arch", "sm_90", mini, "-o", out)
    module = pkg / "driver" / "settings.py"
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # an edit
    assert not sh.run("-arch", "sm_90", mini, "-o", out).fast
    assert sh.run("-arch", "sm_90", mini, "-o", out).fast
    (pkg / "synth" / "new_module.py").write_text("X = 1\n")  # a module added (upgrade)
    entries = sh.entries()
    for _ in range(2):  # the script no longer covers every module: Python only, records nothing
        assert not sh.run("-arch", "sm_90", mini, "-o", out).fast
    assert sh.entries() == entries
    sh.script.write_text(ptxas_script(sh.real, package=pkg))  # ptxasw toolkit create, again
    warm(sh, "-arch", "sm_90", mini, "-o", out)
    text = module.read_text()
    module.write_text(text)  # same size, rewritten: its change time moves
    assert not sh.run("-arch", "sm_90", mini, "-o", out).fast


def test_another_installation_is_not_served(tmp_path: Path, mini: Path) -> None:
    """A script made for one ptxasw folder while Python imports another writes no entries."""
    pkg = copy_package(tmp_path / "site")
    other = copy_package(tmp_path / "elsewhere")
    sh = make_shadow(tmp_path, pkg)
    sh.python_path(other.parent)
    out = tmp_path / "out.cubin"
    for _ in range(2):
        call = sh.run("-arch", "sm_90", mini, "-o", out)
        assert call.rc == 0 and not call.fast
    assert sh.entries() == []


# --------------------------------------------------------------------------
# Damaged or unwritable caches


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "empty", "no copy", "empty copy", "relative copy", "no end"],
)
def test_damaged_entry_falls_back_to_python(
    shadow: Shadow, jacobi: Path, tmp_path: Path, damage: str
) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    good = out.read_text()
    (entry,) = shadow.entries()
    lines = entry.read_text().splitlines()
    copy = Path(lines[1])
    if damage == "garbage":
        entry.write_bytes(os.urandom(64))
    elif damage == "truncated":
        entry.write_text(entry.read_text()[:30])
    elif damage == "empty":
        entry.write_text("")
    elif damage == "no copy":
        copy.unlink()
    elif damage == "empty copy":
        copy.write_text("")
    elif damage == "relative copy":
        entry.write_text("\n".join([lines[0], "fast/ptx/x.ptx", *lines[2:]]) + "\n")
    elif damage == "no end":
        entry.write_text("\n".join(lines[:3]) + "\n")
    out.unlink()
    call = shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    assert call.rc == 0 and not call.fast and call.stderr == ""
    assert out.read_text() == good
    # Python wrote the entry again.
    assert shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always").fast


def test_read_only_cache_still_serves(shadow: Shadow, jacobi: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    modes = {}
    for p in [shadow.cache, *shadow.cache.rglob("*")]:
        modes[p] = p.stat().st_mode
        p.chmod(modes[p] & 0o555)
    try:
        listing = sorted(shadow.cache.rglob("*"))
        assert shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always").fast
        assert sorted(shadow.cache.rglob("*")) == listing
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_unwritable_cache_works_through_python(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    out = tmp_path / "out.cubin"
    for _ in range(2):
        call = shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_CACHE_DIR=str(blocker / "cache"))
        assert call.rc == 0 and not call.fast and call.stderr == ""
        assert out.read_text() == MINI_PTX


@pytest.mark.parametrize("says", ["", "?\n", "1:2:3:4:5\n"])
def test_a_stat_that_says_something_else_goes_to_python(
    shadow: Shadow, mini: Path, tmp_path: Path, says: str
) -> None:
    """Without the stat lines the key would not cover the package: no hit then."""
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out)
    bin_dir = tmp_path / "odd-bin"
    bin_dir.mkdir()
    (bin_dir / "stat").write_text(f"#!/bin/sh\nprintf '{says}'\n")
    (bin_dir / "stat").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{shadow.env['PATH']}"
    for _ in range(2):
        call = shadow.run("-arch", "sm_90", mini, "-o", out, PATH=path)
        assert call.rc == 0 and not call.fast


def test_relative_or_missing_cache_folder_goes_to_python(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    env = {k: v for k, v in shadow.env.items() if k not in ("PTXASW_CACHE_DIR", "HOME")}
    shadow.env = env
    for _ in range(2):
        assert not shadow.run("-arch", "sm_90", mini, "-o", out, cwd=tmp_path).fast
    for _ in range(2):
        call = shadow.run("-arch", "sm_90", mini, "-o", out, cwd=tmp_path, PTXASW_CACHE_DIR="rel-cache")
        assert call.rc == 0 and not call.fast


# --------------------------------------------------------------------------
# What the Python side refuses to record


def test_warning_settings_are_not_recorded(shadow: Shadow, mini: Path, tmp_path: Path) -> None:
    """A bad setting warns on every Python run; a fast hit would silence it."""
    out = tmp_path / "out.cubin"
    for _ in range(2):
        call = shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_TIMEOUT="soon")
        assert not call.fast and "PTXASW_TIMEOUT" in call.stderr
    assert shadow.entries() == []


def test_debug_rewrites_are_not_recorded(shadow: Shadow, jacobi: Path, mini: Path, tmp_path: Path) -> None:
    """With -g ptxas records the input's name, which a stored rewrite does not have."""
    out = tmp_path / "out.cubin"
    for _ in range(2):
        assert not shadow.run("-arch", "sm_90", "-g", jacobi, "-o", out, PTXASW_PROFIT="always").fast
    warm(shadow, "-arch", "sm_90", "-g", mini, "-o", out)  # unchanged: the user's own file


def test_fast_request_checks(tmp_path: Path) -> None:
    data = MINI_PTX.encode()
    h2 = hashlib.sha256(data).hexdigest()
    payload = "\n".join([cache_mod.fast_protocol(), "a" * 64, h2, "3", "5", "sm_90", str(tmp_path), ""])
    req = FastRequest.parse(payload)
    assert req is not None and req.input_index == 3 and req.output_indices == (5,) and req.tune is None
    for bad in (
        "",
        "x",
        payload.replace("a" * 64, "g" * 64),
        payload.replace("\n3\n", "\nx\n"),
        payload + "\n",
    ):
        assert FastRequest.parse(bad) is None
    assert not write_fast_entry(req, data + b" ", None, "/bin/ptxas")  # the file changed under us
    assert write_fast_entry(req, data, None, "/bin/ptxas")
    assert (tmp_path / "fast" / ("a" * 64) / h2).read_text() == f"{FAST_MAGIC}\nunchanged\n/bin/ptxas\nend\n"


def test_every_driver_setting_is_keyed_or_skips() -> None:
    """A setting read by the drop-in that the key leaves out would let a hit ignore it."""
    known = set(FAST_KEYED_ENV) | set(FAST_SKIP_ENV) | {"PTXASW_REAL_PTXAS"}
    nvptx_as = {"PTXASW_REAL_AS", "PTXASW_VISITED_AS"}  # the GCC as shim's own
    outside = {"cli", "pirch_bridge", "tune"}  # not run by the drop-in
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in outside:
            continue
        found |= set(re.findall(r"PTXASW_[A-Z0-9_]+", path.read_text()))
    assert found - known - nvptx_as == set()


def test_script_is_posix_and_marked_as_ours(tmp_path: Path) -> None:
    script = tmp_path / "ptxas"
    script.write_text(ptxas_script(Path("/opt/cuda/bin/ptxas")))
    script.chmod(0o755)
    assert subprocess.run(["dash", "-n", str(script)]).returncode == 0
    assert is_our_shim(script, PTXAS_SHIM_MARKER)
    assert script.read_bytes().index(PTXAS_SHIM_MARKER) < 8192


# --------------------------------------------------------------------------
# NVIDIA's ptxas: the same cubin either way


def untimed(said: str) -> str:
    """ptxas's messages without its compile times (-v)."""
    return re.sub(r"time = [0-9.]+ ms", "time = ? ms", said)


@needs_ptxas
@pytest.mark.parametrize("profit", ["always", "model"])
@pytest.mark.parametrize("extra", [[], ["-lineinfo", "-O2"], ["-v"], ["-g"]])
def test_same_cubin_as_python(
    tmp_path: Path, package: Path, jacobi: Path, profit: str, extra: list[str]
) -> None:
    real = real_ptxas()
    assert real is not None
    sh = make_shadow(tmp_path, package, real=real)
    reference = tmp_path / "python.cubin"
    args = ["-arch", "sm_90", *extra, jacobi]
    py = sh.run(*args, "-o", reference, PTXASW_CACHE_DIR="off", PTXASW_PROFIT=profit)
    assert py.rc == 0, py.stderr
    outs = []
    for name in ("first.cubin", "second.cubin"):
        call = sh.run(*args, "-o", tmp_path / name, PTXASW_PROFIT=profit)
        assert call.rc == 0 and call.stdout == py.stdout and untimed(call.stderr) == untimed(py.stderr)
        assert call.fast == (name == "second.cubin" and not (profit == "always" and "-g" in extra))
        outs.append((tmp_path / name).read_bytes())
    if "-g" in extra:
        return  # the cubin records the output's name: compared below with the same names
    assert outs[0] == outs[1] == reference.read_bytes()
    plain = tmp_path / "plain.cubin"
    subprocess.run([str(real), *map(str, args), "-o", str(plain)], check=True, capture_output=True)
    assert (outs[0] != plain.read_bytes()) == (profit == "always")  # the rewrite was assembled


@needs_ptxas
def test_same_debug_cubin_as_python(tmp_path: Path, package: Path, jacobi: Path) -> None:
    real = real_ptxas()
    assert real is not None
    sh = make_shadow(tmp_path, package, real=real)
    out = tmp_path / "k.cubin"
    sh.run("-arch", "sm_90", "-g", jacobi, "-o", out, PTXASW_CACHE_DIR="off")
    reference = out.read_bytes()
    first = sh.run("-arch", "sm_90", "-g", jacobi, "-o", out)
    second = sh.run("-arch", "sm_90", "-g", jacobi, "-o", out)
    assert first.rc == second.rc == 0 and out.read_bytes() == reference
    assert not first.fast and second.fast  # the model leaves jacobi as it is: -g is served


def _cuda() -> Path | None:
    from ptxasw.driver.toolkit import ToolkitError, find_cuda_toolkit

    try:
        return find_cuda_toolkit(None)
    except ToolkitError:
        return None


@pytest.mark.skipif(_cuda() is None, reason="CUDA toolkit (nvcc, ptxas) not installed")
def test_nvcc_rebuild_through_a_shadow_toolkit_skips_python(tmp_path: Path, package: Path) -> None:
    """nvcc's temporary names change every build; the second build still hits, same cubin."""
    from ptxasw.driver.toolkit import create_shadow_toolkit

    cuda = _cuda()
    assert cuda is not None
    sh = make_shadow(tmp_path, package)  # for its environment and Python-start counter
    toolkit = create_shadow_toolkit(tmp_path / "cuda-shadow", cuda)
    (toolkit / "bin" / "ptxas").write_text(ptxas_script((cuda / "bin" / "ptxas").resolve(), package=package))
    env = {**sh.env, "PTXASW_PROFIT": "always"}
    source = REPO / "examples" / "jacobi.cu"
    cubins = []
    for name in ("first", "second", "plain"):
        out = tmp_path / f"{name}.cubin"
        before = sh.starts.read_text().count("\n") if sh.starts.exists() else 0
        proc = subprocess.run(
            [str(toolkit / "bin" / "nvcc"), "-arch=sm_90", "-cubin", str(source), "-o", str(out)],
            env={**env, "PTXASW_DISABLE": "1"} if name == "plain" else env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        started = (sh.starts.read_text().count("\n") if sh.starts.exists() else 0) - before
        assert (started == 0) == (name == "second"), name
        cubins.append(out.read_bytes())
    assert cubins[0] == cubins[1] != cubins[2]  # the rewrite, assembled both times
