"""Shadow CUDA toolkits: the real toolkit through symlinks, with our ``bin/ptxas``.

Why: nvcc puts its own ``bin/`` first on PATH before it runs ``ptxas``, so a
``ptxas`` earlier on the user's PATH is never seen. A directory that mirrors
the toolkit entry by entry (symlinks), except ``bin/ptxas``, which is a small
script running `ptxasw.driver.ptxas`, makes ``SHADOW/bin/nvcc`` (a symlink; nvcc
finds its ``bin`` from the path it was called by) call our wrapper. Point
``CUDA_HOME``, ``CMAKE_CUDA_COMPILER=SHADOW/bin/nvcc`` or PATH at it.

The script records the real ptxas (``PTXASW_REAL_PTXAS``, unless the caller
sets that) and the interpreter that created it, so the shadow keeps working
from any environment.

Before it starts Python, the script tries a fast path (`fast_path_script`):
when the result cache holds a fast entry for exactly this invocation (same
PTX bytes, command line up to the PTX and output names, settings, ptxasw
files, interpreter, real ptxas and tuning verdicts; `ptxasw.driver.cache`),
it execs the real ptxas itself on the user's file or on the stored rewrite.
Python's start-up (40-70 ms) dwarfs the 20-60 ms ptxas takes per file, so a
warm build would otherwise cost several times a plain one. ``PTXASW_LOG``,
``PTXASW_DISABLE``, ``PTXASW_PIPELINE`` and ``PTXASW_CACHE_DIR=off`` turn the
fast path off (Python writes the log). On a hit, ptxas writes its output in
place as plain ptxas does (Python's path stages it beside the target and
renames it). The ``ptxasw-ptxas`` console script and ``wrappers/ptxas`` always
run Python; regenerate a shadow (``ptxasw toolkit create``) after upgrading
ptxasw so that its script and the package agree (`cache.fast_protocol`):
until then the old script still works, through Python only.

Making a shadow also byte-compiles the package it runs (`byte_compile`). An
editable install writes its ``.pyc`` files on first import, unless the
environment says not to (``PYTHONDONTWRITEBYTECODE``, common in container
images): then every ptxas call would compile some forty modules again,
about 0.15 s where ptxas itself takes 0.02-0.06 s.
"""

from __future__ import annotations

import compileall
import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import ptxasw

SHADOW_MARKER = ".ptxasw-shadow-toolkit.json"


class ToolkitError(Exception):
    """A shadow toolkit cannot be made; the message is one line for the user."""


def _toolkit_root(path: Path) -> Path | None:
    """The toolkit root if ``path`` (a root or its bin/) holds nvcc and ptxas."""
    for root in (path, path.parent if path.name == "bin" else None):
        if root is not None and (root / "bin" / "nvcc").is_file() and (root / "bin" / "ptxas").is_file():
            return root
    return None


def _resolve_nvcc(nvcc: Path) -> Path:
    """Follow symlinks and one-line ``exec /real/nvcc`` shell shims (like /usr/local/bin/nvcc)."""
    nvcc = nvcc.resolve()
    for _ in range(8):
        try:
            with open(nvcc, "rb") as f:
                head = f.read(4096)
        except OSError:
            break
        if not head.startswith(b"#!"):
            break
        target = None
        for line in head.decode("utf-8", "replace").splitlines():
            words = shlex.split(line, comments=True) if line.strip() else []
            if len(words) >= 2 and words[0] == "exec" and words[1].endswith("/nvcc"):
                target = Path(words[1])
        if target is None or not target.is_file():
            break
        nvcc = target.resolve()
    return nvcc


def find_cuda_toolkit(cuda: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The real CUDA toolkit root: ``cuda``, $CUDA_HOME, $CUDA_PATH, nvcc on PATH, /usr/local/cuda.

    An explicit ``cuda`` that is not a toolkit is an error; the others are
    tried in turn. A shadow toolkit found this way is followed to the real one.
    """
    env = os.environ if env is None else env
    if cuda is not None:
        root = _toolkit_root(Path(cuda).expanduser())
        if root is None:
            raise ToolkitError(f"{cuda} is not a CUDA toolkit (no bin/nvcc and bin/ptxas)")
        return _unshadow(root.resolve())
    candidates: list[Path] = [Path(env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc:
        candidates.append(_resolve_nvcc(Path(nvcc)).parent.parent)
    candidates.append(Path("/usr/local/cuda"))
    for c in candidates:
        root = _toolkit_root(c)
        if root is not None:
            return _unshadow(root.resolve())
    raise ToolkitError("cannot find a CUDA toolkit: pass --cuda PATH or set CUDA_HOME")


def _unshadow(root: Path) -> Path:
    """If ``root`` is itself a shadow toolkit, the real toolkit it mirrors."""
    marker = root / SHADOW_MARKER
    if marker.is_file():
        try:
            return Path(json.loads(marker.read_text())["cuda"])
        except (OSError, ValueError, KeyError, TypeError):
            raise ToolkitError(f"{marker} is unreadable; make the shadow toolkit again") from None
    return root


_BOOTSTRAP = """
import os, sys
sys.path.append(sys.argv.pop(1))
fast = sys.argv.pop(1)
try:
    from ptxasw.driver import ptxas as wrapper
except Exception as exc:  # ptxasw gone or broken: never break the build
    real = os.environ["PTXASW_REAL_PTXAS"]
    print(f"ptxasw: warning: cannot load ptxasw ({exc}); running {real} directly", file=sys.stderr)
    os.execv(real, [real, *sys.argv[1:]])
wrapper.FASTPATH_REQUEST = fast or None
sys.exit(wrapper.main())
"""

#: The shell half of the fast path (`ptxasw.driver.cache` describes the key and
#: the entries). ``@NAME@`` marks what `ptxas_script` fills in. Every test and
#: expansion is a shell builtin; the only processes are one `stat` and one
#: `sha256sum` (and two subshells), then ptxas replaces the shell.
_FAST_PATH = r"""
# The fast path: when an earlier run recorded what this very invocation
# assembles (a fast entry of ptxasw's cache), exec the real ptxas on it
# without starting Python. Anything unexpected returns 1, and Python does the
# work as it always did (it records the entry for next time).
ptxasw_fast() {
    [ -z "@SKIP@" ] || return 1
    nl='
'
    case ${PTXASW_CACHE_DIR-} in
    @OFF@) return 1 ;;
    '')
        if [ -n "${XDG_CACHE_HOME-}" ]; then c=$XDG_CACHE_HOME/ptxasw
        elif [ -n "${HOME-}" ]; then c=$HOME/.cache/ptxasw
        else return 1
        fi ;;
    *) c=$PTXASW_CACHE_DIR ;;
    esac
    case $c in /*) ;; *) return 1 ;; esac
    case ${PTXASW_TUNE_DIR-} in
    @OFF@) t= ;;
    '') t=$c/tune ;;
    *) t=$PTXASW_TUNE_DIR ;;
    esac
    # The command line: one PTX file (its place), -o values and the target;
    # anything the key cannot cover (stdin, options files, inline modules) returns.
    k=0 n=0 ix= outs= arch= shape= take=
    for a do
        k=$((k + 1))
        case $a in *"$nl"*) return 1 ;; esac
        case $take in
        o) take=; outs="$outs $k"; shape="$shape${nl}O"; continue ;;
        g) take=; arch=$a ;;
        v) take= ;;
        *)
            case $a in
            -) return 1 ;;
            --output-file | -o) take=o ;;
            --gpu-name | -arch) take=g ;;
            --gpu-name=* | -arch=*) arch=${a#*=} ;;
            --options-file* | -optf | -optf=* | --input-as-string* | -ias | -ias=*) return 1 ;;
            @VALUED@) take=v ;;
            -*) ;;
            *) n=$((n + 1)); ix=$k; f=$a; shape="$shape${nl}I"; continue ;;
            esac ;;
        esac
        shape="$shape${nl}A$a"
    done
    [ "$n" = 1 ] && [ -z "$take" ] && [ -f "$f" ] || return 1  # a pipe must not be read twice
    case $PTXASW_REAL_PTXAS in /*) ;; *) return 1 ;; esac
    tf=
    case $arch in
    '') ;;
    *[!A-Za-z0-9_.-]*) return 1 ;;
    *) [ -z "$t" ] || tf=$t/$arch ;;
    esac
    case @KEYED@$c$t$py$PTXASW_REAL_PTXAS in *"$nl"*) return 1 ;; esac
    # One line per file that exists, all in this form: no stat, or another stat
    # that prints something else, returns (a key must never leave them out).
    s=$(stat -L -c '%d:%i:%s:%.9Y:%.9Z' -- "$py" "$PTXASW_REAL_PTXAS" @FILES@ \
        ${tf:+"$tf" "$tf"/*.json} 2>/dev/null)
    case $s in '' | *[!0-9:.$nl]*) return 1 ;; esac
    case ${s%%"$nl"*} in *:*:*:*.?????????:*.?????????) ;; *) return 1 ;; esac
    k=0
    IFS=$nl
    for a in $s; do k=$((k + 1)); done
    unset IFS
    [ "$k" -ge @LINES@ ] || return 1
    s=$(printf '%s\n' "@PROTOCOL@${nl}real=$PTXASW_REAL_PTXAS${nl}py=$py${nl}cache=$c${nl}tune=$t" \
        "arch=$arch@ENV@${nl}argv$shape" "$s" | sha256sum - "$f" 2>/dev/null) || return 1
    h1=${s%%" "*}
    s=${s#*"$nl"}
    h2=${s%%" "*}
    h2=${h2#"\\"}
    case $h1$h2 in *[!0-9a-f]*) return 1 ;; esac
    [ ${#h1} = 64 ] && [ ${#h2} = 64 ] || return 1
    ptxasw_req="@PROTOCOL@$nl$h1$nl$h2$nl$ix$nl${outs# }$nl$arch$nl$c$nl$t"
    # This very file's entry, else one for any PTX under this key (the pipeline
    # could change nothing, whatever the text), but not for PTX with a masked
    # global load in inline assembly, or a kernel with enough loads of single
    # elements beside its vector loads to be bound by L1 (awk exits 0 when it
    # finds them, 1 when it does not; `ptxasw.synth.cost.worth_a_look` is the
    # same test, `SCREEN_AWK` this program): a reuse of
    # such loads pays on any target, and a strided halo around a vector may pay
    # as shuffles, so Python decides. A file the
    # any-input entry served gets it as its own (a link), so that its rebuilds
    # skip the screen.
    e=$c/fast/$h1/$h2
    own=
    if [ ! -f "$e" ] && [ -f "$c/fast/$h1/@ANY@" ]; then
        awk -v L=@L1_BOUND@ '@SCREEN@' "$f" 2>/dev/null
        [ $? = 1 ] && own=$e && e=$c/fast/$h1/@ANY@
    fi
    [ -f "$e" ] || return 1
    { IFS= read -r m && IFS= read -r w && IFS= read -r v && IFS= read -r z; } 2>/dev/null <"$e" || return 1
    [ "$m" = @MAGIC@ ] && [ "$z" = end ] && [ -n "$v" ] || return 1
    case $e in */@ANY@) [ "$w" = unchanged ] || return 1 ;; esac
    [ -z "$own" ] || ln "$e" "$own" 2>/dev/null
    case $w in
    unchanged) ;;
    /*)
        [ -f "$w" ] && [ -s "$w" ] || return 1
        k=0
        for a do
            k=$((k + 1))
            shift
            if [ "$k" = "$ix" ]; then set -- "$@" "$w"; else set -- "$@" "$a"; fi
        done ;;
    *) return 1 ;;
    esac
    [ -x "$PTXASW_REAL_PTXAS" ] || return 1
    PTXASW_VISITED_PTXAS=$v
    export PTXASW_VISITED_PTXAS
    exec "$PTXASW_REAL_PTXAS" "$@"
}
ptxasw_req=
ptxasw_fast "$@"
"""


def _case_patterns(words: list[str], indent: str) -> str:
    """``a | b | ...`` for a case branch, wrapped (backslash-newline) to short lines."""
    lines, line = [], ""
    for w in words:
        piece = w if not line else f"{line} | {w}"
        if len(piece) > 90 and line:
            lines.append(line + " |")
            line = w
        else:
            line = piece
    lines.append(line)
    return (" \\\n" + indent).join(lines)


def _valued_options() -> list[str]:
    """The spellings of the ptxas options whose value is the next argument,
    except those the fast path reads itself (-o, -arch) or refuses."""
    from ptxasw.driver.ptxas import PTXAS_OPTIONS

    own = {"output-file", "gpu-name", "options-file", "input-as-string"}
    words: set[str] = set()
    for o in PTXAS_OPTIONS:
        if o.takes_value and o.long not in own:
            words.add(f"--{o.long}")
            if o.short and not o.optional:
                words.add(f"-{o.short}")
    return sorted(words)


def fast_path_script(package: Path) -> str:
    """The fast-path function of a shadow ``bin/ptxas`` for ``package`` (the ptxasw folder)."""
    from ptxasw.driver import cache
    from ptxasw.synth.cost import SCREEN_AWK, SCREEN_L1_BOUND

    keyed = "".join(f"${{{v}-}}" for v in cache.FAST_KEYED_ENV)
    env = "".join(f"${{nl}}{v}${{{v}+=}}${{{v}-}}" for v in cache.FAST_KEYED_ENV)
    listed = cache.package_files(package)
    files = " ".join(f'"$pkg"/{shlex.quote(f)}' for f in listed)
    fills = {
        "@SKIP@": "".join(f"${{{v}-}}" for v in cache.FAST_SKIP_ENV),
        "@OFF@": cache.OFF_PATTERNS,
        "@VALUED@": _case_patterns(_valued_options(), " " * 12),
        "@KEYED@": keyed,
        "@ENV@": env,
        "@FILES@": files,
        "@LINES@": str(2 + len(listed)),
        "@PROTOCOL@": cache.fast_protocol(package),
        "@MAGIC@": cache.FAST_MAGIC,
        "@ANY@": cache.FAST_ANY_INPUT,
        "@SCREEN@": SCREEN_AWK.strip(),
        "@L1_BOUND@": repr(SCREEN_L1_BOUND),
    }
    text = _FAST_PATH
    for mark, value in fills.items():
        text = text.replace(mark, value)
    return f"pkg={shlex.quote(str(package))}\n" + text.lstrip("\n")


def ptxas_script(real_ptxas: Path, python: str | None = None, package: Path | None = None) -> str:
    """The text of a shadow toolkit's ``bin/ptxas``: run ptxasw.driver.ptxas with the real ptxas recorded.

    The package's folder is appended (not prepended) to sys.path so an
    installed ptxasw wins and a checkout works too; ``-P`` keeps the build's
    working directory off sys.path. If the interpreter or ptxasw is gone, the
    script runs the real ptxas directly (with a warning) rather than fail.
    Before Python, the fast path (`fast_path_script`) runs the real ptxas
    itself when the cache knows this invocation's outcome. ``package``: the
    ptxasw folder to run (default: this one; tests use copies).
    """
    python = python or sys.executable
    package = (Path(ptxasw.__file__).parent if package is None else package).resolve()
    return (
        "#!/bin/sh\n"
        "# ptxasw shadow CUDA toolkit: this ptxas runs ptxasw.driver.ptxas (ptxasw's passes,\n"
        "# fail-open), which then runs the real ptxas recorded here.\n"
        f': "${{PTXASW_REAL_PTXAS:={_sh_default(str(real_ptxas))}}}"\n'
        "export PTXASW_REAL_PTXAS\n"
        f"py={shlex.quote(python)}\n"
        'if [ ! -x "$py" ]; then\n'
        '    echo "ptxasw: warning: $py is gone; running $PTXASW_REAL_PTXAS directly" >&2\n'
        '    exec "$PTXASW_REAL_PTXAS" "$@"\n'
        "fi\n"
        + fast_path_script(package)
        + f'exec "$py" -P -c {shlex.quote(_BOOTSTRAP)} {shlex.quote(str(package.parent))}'
        + ' "$ptxasw_req" "$@"\n'
    )


def _sh_default(value: str) -> str:
    """Quote ``value`` for use inside ``${VAR:=...}`` within double quotes."""
    return "".join("\\" + c if c in '\\$`"}' else c for c in value)


def byte_compile(package: Path) -> bool:
    """Write the ``.pyc`` files of ``package`` (the ptxasw folder); best effort.

    False where some could not be written (a read-only install: pip compiled
    it when it installed it, or Python compiles in memory as before).
    """
    if not package.is_dir():
        return False
    try:
        return bool(compileall.compile_dir(str(package), quiet=2, workers=1))
    except OSError:
        return False


def create_shadow_toolkit(dest: Path, cuda: Path | None = None) -> Path:
    """Build a shadow of the CUDA toolkit at ``dest`` and return ``dest``.

    Every entry of the real toolkit is a symlink, ``bin/`` is a real folder of
    symlinks, and ``bin/ptxas`` is our wrapper script. Making it again over an
    older shadow replaces it; any other non-empty ``dest`` is refused.
    """
    real = find_cuda_toolkit(cuda)
    dest = Path(dest).expanduser().absolute()
    if dest.resolve() == real or real in dest.resolve().parents:
        raise ToolkitError(f"{dest} is inside the real toolkit {real}")
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise ToolkitError(f"{dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        if not (dest / SHADOW_MARKER).is_file():
            raise ToolkitError(f"{dest} is not empty and is not a shadow toolkit; choose another folder")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    real_ptxas = (real / "bin" / "ptxas").resolve()
    for entry in sorted(real.iterdir()):
        if entry.name == "bin":
            continue
        (dest / entry.name).symlink_to(entry)
    (dest / "bin").mkdir()
    for entry in sorted((real / "bin").iterdir()):
        if entry.name != "ptxas":
            (dest / "bin" / entry.name).symlink_to(entry)
    script = dest / "bin" / "ptxas"
    script.write_text(ptxas_script(real_ptxas))
    script.chmod(0o755)
    byte_compile(Path(ptxasw.__file__).parent)
    (dest / SHADOW_MARKER).write_text(
        json.dumps({"cuda": str(real), "ptxas": str(real_ptxas), "python": sys.executable}, indent=2) + "\n"
    )
    return dest
