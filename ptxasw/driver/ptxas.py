"""The drop-in ``ptxas``: run ptxasw's pipeline on each PTX input, then NVIDIA's ptxas.

Why it is built this way:

* It must accept every ``ptxas`` command line unchanged, so it understands the
  option table of ptxas 13.0 (`PTXAS_OPTIONS`) well enough to tell option
  values from input files, including ``--options-file`` contents and
  ``--input-as-string`` modules, and passes everything else through verbatim.
* It must never break a build: any failure of ours (bad PTX for our parser, a
  bug, a hang cut off by ``PTXASW_TIMEOUT``, or ptxas rejecting what we wrote)
  falls back to assembling the original PTX, with one warning line.
* It must never run itself in a loop: the real ptxas is looked up skipping
  anything that is one of our shims, and every child gets the list of tools
  already chosen (``PTXASW_VISITED_PTXAS``) so a shim we could not recognise
  still cannot recurse.
* It must stop when asked and leave nothing half-done: the pipeline runs in
  a forked child killed at the time-out; SIGTERM/SIGINT/SIGHUP are passed on
  to ptxas, our temporary files are removed and we die of the same signal
  (as we do when ptxas dies of one); ptxas writes a single ``-o`` output in
  a private directory beside it, renamed onto the target only on success
  (`StagedOutput`), so a killed or concurrent build never leaves a torn file.

The input file is never modified: rewritten PTX goes to a private temporary
directory (``$TMPDIR``, made only when needed; unusable, we assemble the
original with one warning) under the input's own basename (ptxas records the
basename of its input in the cubin when ``-g`` is given), and the temporary
directory is removed afterwards. When no pass changed anything, ptxas gets
the user's own file, so its answer needs no second run. The fail-open machinery here (`transform_ptx`,
`run_transformed`, `find_real_tool`, `passthrough`, `conclude` and the
console entry point `console_main`) is shared with the GCC ``as`` shim in
`ptxasw.driver.nvptx_as`.

Environment:

``PTXASW_REAL_PTXAS``  path of NVIDIA's ptxas (else PATH, ``$CUDA_HOME/bin``,
                       ``/usr/local/cuda/bin``).
``PTXASW_DISABLE=1``   run the real ptxas untouched.
``PTXASW_TIMEOUT``     seconds the pipeline may take per input (default 60; ``inf``: no
                       limit; anything else that is not a positive number: one
                       warning, then the default).
``PTXASW_LOG=FILE``    append one JSON line per invocation.
``PTXASW_PIPELINE``    ``module:function`` to run instead of
                       ``ptxasw.driver.pipeline:run_pipeline`` (tests, experiments).
``PTXASW_CACHE_DIR``   the result cache (`ptxasw.driver.cache`; ``off`` disables it).
``PTXASW_CACHE_SIZE``  its size limit (default 1G; ``0``: none), kept by trimming now and then.
``PTXASW_TUNE_DIR``    the verdicts of ``ptxasw tune`` (`ptxasw.driver.tuning`; ``off``: none apply).
``PTXASW_MODE``, ``PTXASW_MAX_DELTA``, ``PTXASW_SYNTH``, ``PTXASW_UNSAFE``: the
                       synthesis settings (`ptxasw.driver.settings`).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import math
import os
import pickle
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptxasw.driver.cache import FastRequest

ENV_REAL_PTXAS = "PTXASW_REAL_PTXAS"
ENV_DISABLE = "PTXASW_DISABLE"
ENV_LOG = "PTXASW_LOG"
ENV_TIMEOUT = "PTXASW_TIMEOUT"
ENV_PIPELINE = "PTXASW_PIPELINE"
ENV_VISITED_PTXAS = "PTXASW_VISITED_PTXAS"

DEFAULT_TIMEOUT = 60.0
DEFAULT_PIPELINE = "ptxasw.driver.pipeline:run_pipeline"

#: A script whose first bytes contain this string is one of our own ptxas
#: shims (wrappers/ptxas, a shadow toolkit's bin/ptxas, the console script).
PTXAS_SHIM_MARKER = b"ptxasw.driver.ptxas"

#: ptxas's own exit status for fatal errors; we use it for ours.
EXIT_FATAL = 255

_OPTIONS_FILE_DEPTH = 16

#: What a shadow toolkit's bin/ptxas computed when its fast path missed (set
#: by its bootstrap; `ptxasw.driver.cache.FastRequest`): after a run whose
#: outcome is final, we record it under that key so the next run skips Python.
FASTPATH_REQUEST: str | None = None


class WrapperError(Exception):
    """A problem that stops the wrapper itself (no real tool): one line to the user."""


# --------------------------------------------------------------------------
# The ptxas 13.0 option table


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One ptxas option: its names and whether it takes a value.

    ``glued`` marks the short forms that also take their value glued on
    (``-O3``, ``-m64``); ptxas 13.0 accepts that for no other option.
    ``optional`` marks a short form whose value is optional and then only
    glued or after ``=`` (``-O`` alone is valid; ``-O 2`` makes ``2`` an input).
    """

    long: str
    short: str | None
    takes_value: bool
    glued: bool = False
    optional: bool = False


def _opt(long: str, short: str | None = None, value: bool = False, **kw: bool) -> OptionSpec:
    return OptionSpec(long, short, value, **kw)


#: Every option printed by ``ptxas --help`` of CUDA 13.0, checked one by one
#: against the real ptxas. Help lists -dlcm/-dscm/-flcm/-fscm without a value,
#: but they take one (``-dlcm ca``); ``-O`` takes an optional glued value.
PTXAS_OPTIONS: tuple[OptionSpec, ...] = (
    _opt("Ofast-compile", "Ofc", True),
    _opt("allow-expensive-optimizations", "allow-expensive-optimizations", True),
    _opt("compile-as-tools-patch", "astoolspatch"),
    _opt("compile-only", "c"),
    _opt("compiler-annotations", "annotate"),
    _opt("def-load-cache", "dlcm", True),
    _opt("def-store-cache", "dscm", True),
    _opt("device-debug", "g"),
    _opt("device-function-maxrregcount", "func-maxrregcount", True),
    _opt("device-stack-protector", "device-stack-protector", True),
    _opt("disable-optimizer-constants", "disable-optimizer-consts"),
    _opt("disable-warnings", "w"),
    _opt("dont-merge-basicblocks", "no-bb-merge"),
    _opt("entry", "e", True),
    _opt("extensible-whole-program", "ewp"),
    _opt("fmad", "fmad", True),
    _opt("force-load-cache", "flcm", True),
    _opt("force-store-cache", "fscm", True),
    _opt("g-tensor-memory-access-check", "g-tmem-access-check"),
    _opt("generate-line-info", "lineinfo"),
    _opt("gno-tensor-memory-access-check", "gno-tmem-access-check"),
    _opt("gpu-name", "arch", True),
    _opt("help", "h"),
    _opt("input-as-string", "ias", True),
    _opt("legacy-bar-warp-wide-behavior", "legacy-bar-warp-wide-behavior"),
    _opt("list-version", "version-ls"),
    _opt("machine", "m", True, glued=True),
    _opt("make-errors-visible-at-exit", "make-errors-visible-at-exit"),
    _opt("maxntid", "maxntid", True),
    _opt("maxrregcount", "maxrregcount", True),
    _opt("minnctapersm", "minnctapersm", True),
    _opt("opt-level", "O", True, glued=True, optional=True),
    _opt("optimize-float-atomics", "opt-fp-atomics"),
    _opt("options-file", "optf", True),
    _opt("output-file", "o", True),
    _opt("override-directive-values", "override-directive-values"),
    _opt("position-independent-code", "pic", True),
    _opt("preserve-relocs", "preserve-relocs"),
    _opt("register-usage-level", "regUsageLevel", True),
    _opt("return-at-end", "ret-end"),
    _opt("sanitize", "sanitize", True),
    _opt("sp-bounds-check", "sp-bounds-check"),
    _opt("split-compile", "split-compile", True),
    _opt("suppress-async-bulk-multicast-advisory-warning", "suppress-async-bulk-multicast-advisory-warning"),
    _opt("suppress-debug-info", "suppress-debug-info"),
    _opt("suppress-double-demote-warning", "suppress-double-demote-warning"),
    _opt("suppress-sparse-mma-advisory-info", "suppress-sparse-mma-advisory-info"),
    _opt("suppress-stack-size-warning", "suppress-stack-size-warning"),
    _opt("verbose", "v"),
    _opt("version", "V"),
    _opt("warn-on-double-precision-use", "warn-double-usage"),
    _opt("warn-on-local-memory-usage", "warn-lmem-usage"),
    _opt("warn-on-spills", "warn-spills"),
    _opt("warning-as-error", "Werror"),
)

LONG_OPTIONS: dict[str, OptionSpec] = {o.long: o for o in PTXAS_OPTIONS}
SHORT_OPTIONS: dict[str, OptionSpec] = {o.short: o for o in PTXAS_OPTIONS if o.short}
_GLUED = {o.short: o for o in PTXAS_OPTIONS if o.glued and o.short}

#: Options that make ptxas print something and stop: passed straight through.
PASSTHROUGH_OPTIONS = frozenset({"help", "version", "list-version"})


@dataclass
class Arg:
    """One option or operand of a ptxas command line, with the tokens it came from.

    ``kind`` is ``option`` (known option), ``unknown`` (an option ptxas may
    reject; passed through as it is), ``input`` (a PTX file), ``stdin`` (``-``),
    ``ias`` (a PTX module given with ``--input-as-string``) or ``optf`` (an
    ``--options-file`` option; ``children`` holds what its files say, or None
    when a file could not be read, in which case ptxas reports it).
    """

    tokens: list[str]
    kind: str
    spec: OptionSpec | None = None
    value: str | None = None
    inline: bool = False
    children: list[Arg] | None = None


def split_options_file(text: str) -> list[str]:
    """Split an options file into tokens the way ptxas 13.0 does.

    Whitespace separates tokens, double quotes group (and may sit inside a
    token: ``ab"c d"e``), a backslash escapes the next character; single
    quotes and ``#`` are ordinary characters.
    """
    tokens: list[str] = []
    cur: list[str] = []
    have = False
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            have = True
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
            have = True
        elif ch.isspace() and not quoted:
            if have:
                tokens.append("".join(cur))
                cur, have = [], False
        else:
            cur.append(ch)
            have = True
        i += 1
    if have:
        tokens.append("".join(cur))
    return tokens


def parse_ptxas_args(argv: Sequence[str], *, _depth: int = 0) -> list[Arg]:
    """Split a ptxas command line into options and PTX inputs.

    Never raises: what we do not understand is kept as an ``unknown`` option
    and handed to ptxas, which knows best how to complain about it.
    """
    args: list[Arg] = []
    i = 0
    n = len(argv)
    while i < n:
        tok = argv[i]
        i += 1
        if tok == "-":
            args.append(Arg([tok], "stdin"))
            continue
        if not tok.startswith("-"):
            args.append(Arg([tok], "input", value=tok))
            continue
        if tok.startswith("--"):
            name, eq, val = tok[2:].partition("=")
            spec = LONG_OPTIONS.get(name)
            optional = False
        else:
            name, eq, val = tok[1:].partition("=")
            spec = SHORT_OPTIONS.get(name)
            optional = spec is not None and spec.optional
            if spec is None and len(tok) > 2 and tok[1] in _GLUED:
                # -O3, -m64 (and, as in ptxas, -maxrregcount32 means -m axrregcount32).
                spec = _GLUED[tok[1]]
                name, eq, val = tok[1], "=", tok[2:]
        if spec is None:
            args.append(Arg([tok], "unknown"))
            continue
        tokens = [tok]
        value: str | None = None
        inline = False
        if spec.takes_value:
            if eq:
                value, inline = val, True
            elif not optional and i < n:
                value = argv[i]
                tokens.append(argv[i])
                i += 1
        arg = Arg(tokens, "option", spec, value, inline)
        if spec.long == "input-as-string" and value is not None:
            arg.kind = "ias"
        elif spec.long == "options-file" and value is not None:
            arg.kind = "optf"
            arg.children = _read_options_files(value, _depth)
        args.append(arg)
    return args


def _read_options_files(value: str, depth: int) -> list[Arg] | None:
    """Parse the files named by an --options-file value; None if any is unreadable."""
    if depth >= _OPTIONS_FILE_DEPTH:
        return None
    tokens: list[str] = []
    for name in value.split(","):
        try:
            text = Path(name).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return None
        tokens.extend(split_options_file(text))
    return parse_ptxas_args(tokens, _depth=depth + 1)


def iter_args(args: Iterable[Arg]) -> Iterable[Arg]:
    """Every argument, descending into options files in command-line order."""
    for a in args:
        yield a
        if a.children:
            yield from iter_args(a.children)


def ptx_inputs(args: Iterable[Arg]) -> list[Arg]:
    """The PTX modules of a command line: files, ``-`` and --input-as-string."""
    return [a for a in iter_args(args) if a.kind in ("input", "stdin", "ias")]


def has_option(args: Iterable[Arg], long: str) -> bool:
    """Whether the command line (options files included) has option ``--long``."""
    return any(a.spec is not None and a.spec.long == long for a in iter_args(args))


def render_args(args: Iterable[Arg], replace: Mapping[int, str]) -> list[str]:
    """Rebuild the command line, replacing the values of the arguments whose ``id`` is in ``replace``.

    Inputs, --input-as-string modules and option values (the output file)
    can be replaced. An options file that holds a replaced input is spelled
    out in place; everything else keeps its original tokens.
    """
    out: list[str] = []
    for a in args:
        new = replace.get(id(a))
        if new is not None and a.kind == "input":
            out.append(new)
        elif new is not None and a.kind in ("ias", "option"):
            if a.inline:
                out.append(a.tokens[0].partition("=")[0] + "=" + new)
            else:
                out.extend([a.tokens[0], new])
        elif a.kind == "optf" and a.children and any(id(c) in replace for c in iter_args(a.children)):
            out.extend(render_args(a.children, replace))
        else:
            out.extend(a.tokens)
    return out


# --------------------------------------------------------------------------
# Finding the real tool


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def is_our_shim(path: Path, marker: bytes) -> bool:
    """Whether ``path`` is one of our own scripts (it would run us again)."""
    try:
        if path.resolve() in _self_paths():
            return True
        with open(path, "rb") as f:
            head = f.read(8192)
    except OSError:
        return False
    return head.startswith(b"#!") and marker in head


def _self_paths() -> set[Path]:
    paths = set()
    if sys.argv and sys.argv[0] and sys.argv[0] not in ("-c", "-m"):
        with contextlib.suppress(OSError):
            paths.add(Path(sys.argv[0]).resolve())
    return paths


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def visited(env: Mapping[str, str], var: str) -> list[str]:
    """The real tools that wrappers up the process chain have already chosen."""
    return [p for p in env.get(var, "").split(os.pathsep) if p]


def find_real_tool(
    *,
    tool: str,
    env_var: str,
    names: Sequence[str],
    fallbacks: Iterable[Path],
    marker: bytes,
    visited_var: str,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Find the real ``tool``: ``$env_var``, else PATH (``names``), else ``fallbacks``.

    Skips our own shims and anything already chosen up the process chain, so
    a shim that execs us again cannot make a loop. Raises WrapperError.
    """
    env = os.environ if env is None else env
    seen = set(visited(env, visited_var))
    explicit = env.get(env_var)
    if explicit:
        p = Path(explicit).expanduser()
        if not _is_executable(p):
            raise WrapperError(f"{env_var}={explicit} is not an executable file")
        if is_our_shim(p, marker):
            raise WrapperError(f"{env_var}={explicit} is ptxasw's own wrapper; point it at the real {tool}")
        if str(p.resolve()) in seen:
            raise WrapperError(
                f"{env_var}={explicit} runs ptxasw again (a loop); point it at the real {tool}"
            )
        return p
    candidates: list[Path] = []
    for d in env.get("PATH", os.defpath).split(os.pathsep):
        candidates.extend(Path(d or ".") / name for name in names)
    candidates.extend(fallbacks)
    for p in candidates:
        if not _is_executable(p) or is_our_shim(p, marker):
            continue
        if str(p.resolve()) in seen:
            continue
        return p
    raise WrapperError(f"cannot find the real {tool}: set {env_var} to its path")


def find_real_ptxas(env: Mapping[str, str] | None = None) -> Path:
    """NVIDIA's ptxas: $PTXASW_REAL_PTXAS, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin."""
    env = os.environ if env is None else env
    fallbacks = [Path(env[v]) / "bin" / "ptxas" for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    fallbacks.append(Path("/usr/local/cuda/bin/ptxas"))
    return find_real_tool(
        tool="ptxas",
        env_var=ENV_REAL_PTXAS,
        names=["ptxas"],
        fallbacks=fallbacks,
        marker=PTXAS_SHIM_MARKER,
        visited_var=ENV_VISITED_PTXAS,
        env=env,
    )


def child_env(real: Path, visited_var: str) -> dict[str, str]:
    """The environment for the real tool: ours plus the loop guard."""
    env = dict(os.environ)
    env[visited_var] = os.pathsep.join([*visited(env, visited_var), str(real.resolve())])
    return env


# --------------------------------------------------------------------------
# Running the pipeline, fail-open


@dataclass
class Outcome:
    """What became of one PTX module: the text to assemble (None: the original) and why."""

    name: str
    status: str  # "ok" (rewritten or unchanged) or "fallback"
    text: str | None = None
    passes: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    where: str | None = None
    timed_out: bool = False
    note: str | None = None  # why the pipeline did not run, where that was no failure
    cached: bool = False  # the result came from the result cache

    @property
    def rewritten(self) -> bool:
        """Whether the PTX to assemble differs from the input text (a private copy is used)."""
        return self.text is not None

    def warning(self) -> str:
        """The one warning line for a fallback."""
        return f"ptxasw: warning: {self.where or self.name}: {self.error}; assembling the original PTX"

    def record(self) -> dict[str, Any]:
        """The JSON-able summary for PTXASW_LOG."""
        rec: dict[str, Any] = {
            "input": self.name,
            "status": self.status,
            "rewritten": self.rewritten,
            "seconds": round(self.seconds, 6),
            "passes": self.passes,
        }
        if self.error is not None:
            rec["error"] = self.error
            rec["where"] = self.where or self.name
        if self.timed_out:
            rec["timed_out"] = True
        if self.cached:
            rec["cached"] = True
        if self.note is not None:
            rec["note"] = f"left to the real tool: {self.note}"
        return rec


def timeout_seconds(env: Mapping[str, str] | None = None) -> float:
    """PTXASW_TIMEOUT in seconds: default 60; ``inf`` means no time-out.

    Anything else that is not a positive number (``abc``, ``0``, ``-1``,
    ``nan``) is a mistake we say so about, in one warning, and then use the
    default: silently waiting forever, or never, would hide it.
    """
    env = os.environ if env is None else env
    raw = env.get(ENV_TIMEOUT)
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        t = float(raw)
    except ValueError:
        t = math.nan
    if t > 0:  # false for nan
        return t
    warn(f"{ENV_TIMEOUT}={raw!r} is not a positive number of seconds or 'inf'; using {DEFAULT_TIMEOUT:g} s")
    return DEFAULT_TIMEOUT


def load_pipeline(env: Mapping[str, str] | None = None) -> Callable[[str, str], Any]:
    """The pipeline function named by PTXASW_PIPELINE (default ptxasw.driver.pipeline:run_pipeline)."""
    env = os.environ if env is None else env
    spec = env.get(ENV_PIPELINE) or DEFAULT_PIPELINE
    module, _, attr = spec.partition(":")
    fn = getattr(importlib.import_module(module), attr or "run_pipeline")
    if not callable(fn):
        raise TypeError(f"{spec} is not callable")
    return fn


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"


def _describe(exc: BaseException, name: str) -> tuple[str, str]:
    """(where, message) for an exception: PtxError's location, else the input name."""
    loc = getattr(exc, "loc", None)
    if loc is not None and getattr(loc, "line", 0):
        where = str(loc)
        message = getattr(exc, "message", None) or str(exc)
        if message.startswith(where + ": "):
            message = message[len(where) + 2 :]
        return where, _one_line(message)
    if type(exc).__name__.endswith("PtxError") or hasattr(exc, "loc"):
        return name, _one_line(getattr(exc, "message", None) or str(exc))
    return name, _one_line(f"internal error ({type(exc).__name__}): {exc}")


#: Threads of pipelines cut off by the time-out where we could not fork (they may still spin).
_hung_workers: list[threading.Thread] = []

#: How long a cut-off pipeline process may take to die before we stop waiting for it.
_REAP_SECONDS = 5.0


def transform_ptx(text: str, name: str, timeout: float | None = None) -> Outcome:
    """Run the pipeline on one PTX module under a time-out; never raises.

    The pipeline runs in a forked child process, killed at the time-out: a
    cut-off parse must not keep a core and a gigabyte busy beside the real
    tool (a thread can only be abandoned). Where there is no ``fork`` it runs
    in a daemon thread instead. ``timeout`` may be ``inf`` (no time-out).
    Input the real ptxas refuses whatever we make of it is left to it without
    a word: blank input, and any byte that is not ASCII (ptxas 13 rejects
    those anywhere, comments included; our reprint, which drops comments in
    function bodies, could make such a file assemble, and a build that must
    fail would pass), and a NUL byte (ptxas reads it as the end of the input,
    so what follows it, which we would reprint, does not exist for ptxas).
    """
    timeout = timeout_seconds() if timeout is None else timeout
    if not text or text.isspace():
        return Outcome(name, "ok", note="empty input")
    if not text.isascii():
        return Outcome(name, "ok", note="not ASCII")
    if "\0" in text:
        return Outcome(name, "ok", note="NUL byte")
    start = time.monotonic()
    fork = hasattr(os, "fork")
    fn: Callable[..., Any] | None = None
    if not fork or _load_here():
        try:
            fn = load_pipeline()
        except BaseException as exc:  # fail-open takes everything, SystemExit included
            where, message = _describe(exc, name)
            return Outcome(name, "fallback", error=message, where=where)
    _transforms.count += 1
    if fork:
        done, box = _run_in_child(fn, text, name, timeout)
    else:  # pragma: no cover - not POSIX
        done, box = _run_in_thread(fn, text, name, timeout)
    seconds = time.monotonic() - start
    if not done:
        return Outcome(
            name, "fallback", seconds=seconds, error=f"time-out after {timeout:g} s", timed_out=True
        )
    kind, *rest = box
    if kind == "error":
        where, message = rest
        return Outcome(name, "fallback", seconds=seconds, error=message, where=where)
    new, passes = rest
    return Outcome(name, "ok", text=new, passes=passes, seconds=seconds)


@dataclass
class _Transforms:
    count: int = 0


_transforms = _Transforms()


def _load_here() -> bool:
    """Whether to import the pipeline in this process rather than in the child.

    The wrapper's own imports are the standard library's; the pipeline's
    (lark, the parser, the IR) are most of its start-up. Imported in the
    child, they are paid once as before, and the fork copies a small
    process whose pages the parse does not touch (copy-on-write faults on a
    parent's heap made the child's parse several times slower). A second
    input in one run imports here, once, for every later child to inherit.
    """
    module = (os.environ.get(ENV_PIPELINE) or DEFAULT_PIPELINE).partition(":")[0]
    return module in sys.modules or _transforms.count > 0


def _pipeline_deadline(timeout: float) -> float | None:
    """When the pipeline itself must be done: the time-out, less a margin to
    hand the text back (its passes skip the kernels that do not fit)."""
    if math.isinf(timeout):
        return None
    return time.monotonic() + timeout - min(0.1 * timeout, 2.0)


def _call_pipeline(fn: Callable[..., Any], text: str, name: str, deadline: float | None) -> Any:
    """``fn(text, name)``, with ``deadline=`` for pipelines that take one (PTXASW_PIPELINE may not)."""
    try:
        takes_deadline = "deadline" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_deadline = False
    return fn(text, name, deadline=deadline) if takes_deadline else fn(text, name)


def _pipeline_box(
    fn: Callable[..., Any] | None, text: str, name: str, deadline: float | None = None
) -> tuple[Any, ...]:
    """Run the pipeline and reduce its result to plain data (it may cross a pipe).

    ``("ok", new_text_or_None, pass_records)`` or ``("error", where, message)``.
    The new text is None when no pass changed anything, so that the real tool
    gets the user's own file: then a rejection is the user's own and needs no
    second run on the original.
    """
    try:
        if fn is None:
            fn = load_pipeline()
        result = _call_pipeline(fn, text, name, deadline)
        new = getattr(result, "text", None)
        if not isinstance(new, str):
            return ("error", None, "internal error: the pipeline returned no PTX text")
        passes = [_jsonable(p) for p in (getattr(result, "passes", None) or [])]
        return ("ok", new if _changed(result, passes, new, text) else None, passes)
    except BaseException as exc:  # fail-open takes everything, SystemExit included
        return ("error", *_describe(exc, name))


def _changed(result: Any, passes: Sequence[Any], new: str, text: str) -> bool:
    """Whether the pipeline changed the module: its own word, else its pass records.

    Reprinting alone (layout) is not a change; a pipeline that keeps no
    records is taken at its text.
    """
    if new == text:
        return False
    flag = getattr(result, "changed", None)
    if isinstance(flag, bool):
        return flag
    records = [p for p in passes if isinstance(p, dict)]
    return any(p.get("changed") for p in records) if records else True


def _run_in_child(
    fn: Callable[..., Any] | None, text: str, name: str, timeout: float
) -> tuple[bool, tuple[Any, ...]]:
    """`_pipeline_box` in a forked child; ``(False, ())`` when it was killed at the time-out.

    ``fn`` None: the child imports the pipeline (see `_load_here`).

    The child sends its pickled box through a pipe and leaves with
    ``os._exit`` (no atexit handlers, no stdio buffers of ours flushed twice).
    """
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            os.close(read_fd)
            for signum in _FORWARDED_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            box = _pipeline_box(fn, text, name, _pipeline_deadline(timeout))
            payload = pickle.dumps(box, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(payload)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(write_fd)
    reaped = False
    try:
        data = _read_until(read_fd, time.monotonic() + timeout)
        if data is None:
            return False, ()
        _, status = os.waitpid(pid, 0)
        reaped = True
        if data:
            return True, pickle.loads(data)
        died = f"internal error: the pipeline process died ({_describe_status(status)})"
        return True, ("error", None, died)
    finally:
        os.close(read_fd)
        if not reaped:
            _kill_and_reap(pid)


def _read_until(fd: int, deadline: float) -> bytes | None:
    """Everything from ``fd`` up to end of file; None if the deadline comes first."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], min(left, 3600.0))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _kill_and_reap(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _REAP_SECONDS
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.005)


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        name = signal.Signals(signum).name if signum in _SIGNAL_NUMBERS else "?"
        return f"signal {signum}, {name}"
    return f"exit {os.waitstatus_to_exitcode(status)}"


def _run_in_thread(
    fn: Callable[..., Any] | None, text: str, name: str, timeout: float
) -> tuple[bool, tuple[Any, ...]]:  # pragma: no cover - only where there is no fork
    """`_pipeline_box` in a daemon thread, abandoned (not stopped) at the time-out."""
    box: list[tuple[Any, ...]] = []
    deadline = _pipeline_deadline(timeout)
    worker = threading.Thread(target=lambda: box.append(_pipeline_box(fn, text, name, deadline)), daemon=True)
    worker.start()
    worker.join(None if math.isinf(timeout) else timeout)
    if worker.is_alive():
        _hung_workers.append(worker)
        return False, ()
    return True, box[0]


def transform_or_skip(text: str, name: str, timeout: float, earlier: Sequence[Outcome]) -> Outcome:
    """`transform_ptx`, unless an earlier input of this run timed out (the time is spent)."""
    if any(o.timed_out for o in earlier):
        return Outcome(name, "fallback", error="not transformed after an earlier time-out")
    return transform_ptx(text, name, timeout)


def transform_cached(
    text: str,
    name: str,
    timeout: float,
    earlier: Sequence[Outcome],
    results: tuple[Any, dict[str, str]] | None,
) -> Outcome:
    """`transform_or_skip` through the result cache (`ptxasw.driver.cache`):
    a hit costs a hash and a read; a complete result is stored. A result is
    complete when the pipeline ran to the end and no pass skipped a kernel
    for lack of PTXASW_TIMEOUT time (a later build with more time may do
    better). A kernel whose own analysis budget ran out is stored: it is left
    as it was, and analysing it again would cost the same and end the same."""
    if results is None:
        return transform_or_skip(text, name, timeout, earlier)
    from ptxasw.driver.cache import CachedResult

    store, context = results
    key = store.key(text, context)
    hit = store.get(key)
    if hit is not None:
        return Outcome(name, "ok", text=hit.text, passes=hit.passes, note=None, cached=True)
    outcome = transform_or_skip(text, name, timeout, earlier)
    if outcome.status == "ok" and outcome.note is None and not _skipped_any(outcome.passes):
        store.put(key, CachedResult(outcome.text, outcome.passes))
    return outcome


def _skipped_any(passes: Sequence[Any]) -> bool:
    return any(isinstance(p, dict) and p.get("skipped") for p in passes)


def _result_cache() -> tuple[Any, dict[str, str]] | None:
    """The result cache and this run's key context (target, settings,
    pipeline); None when the cache is off or a custom pipeline runs."""
    from ptxasw.driver import settings
    from ptxasw.driver.cache import ResultCache, cache_dir
    from ptxasw.driver.tuning import store_state

    directory = cache_dir()
    if directory is None or os.environ.get(ENV_PIPELINE):
        return None
    context = settings.synthesis_settings()
    # A new verdict of ``ptxasw tune`` for the target must not be hidden by an older result.
    context["tune"] = store_state(context["arch"])
    # The sums pinned to ptxas's choices depend on that ptxas and its options.
    context["ptxas"] = _tool_identity(settings.PTXAS_COMMAND)
    return ResultCache(directory, settings.cache_size(warn=True)), context


def _tool_identity(command: Sequence[str] | None) -> str:
    """The command with its executable's size and modification time."""
    if not command:
        return ""
    try:
        stat = os.stat(command[0])
        return " ".join([*command, str(stat.st_size), str(stat.st_mtime_ns)])
    except OSError:
        return " ".join(command)


def code_options(args: Iterable[Arg]) -> list[str]:
    """The tokens of the options that change the code ptxas writes
    (`ptxasw.driver.assembler.CODE_OPTIONS`), options files spelled out."""
    from ptxasw.driver.assembler import CODE_OPTIONS

    out: list[str] = []
    for arg in iter_args(args):
        if arg.kind == "option" and arg.spec is not None and arg.spec.long in CODE_OPTIONS:
            out.extend(arg.tokens)
    return out


def target_arch(args: Iterable[Arg]) -> str | None:
    """The ``--gpu-name``/``-arch`` of a ptxas command line (the last one wins)."""
    arch = None
    for arg in iter_args(args):
        if arg.kind == "option" and arg.spec is not None and arg.spec.long == "gpu-name":
            arch = arg.value
    return arch


def _jsonable(value: Any) -> Any:
    """Make a pass record safe to json.dumps (unknown objects become strings)."""
    return json.loads(json.dumps(value, default=str))


# --------------------------------------------------------------------------
# Running the real tool, with a second chance on the original


@dataclass
class Run:
    """How the real tool was run: exit status, and whether we fell back to the original."""

    returncode: int
    retried: bool = False
    rejected: str | None = None
    output: bytes | None = None  # what the tool said on our PTX (replayed), when it was held back


def _exit_status(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


class Terminated(BaseException):
    """We were asked to stop (SIGTERM, SIGINT, SIGHUP) in the middle of our work.

    Raised by our signal handler, so that ``finally`` blocks remove our
    temporary files and staged output and stop our children; then the
    wrapper dies of the same signal. A BaseException, so the fail-open
    ``except Exception`` paths do not take it for a bug of ours.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_SIGNAL_NUMBERS = {int(s) for s in signal.Signals}
_CORE_SIGNALS = {
    int(getattr(signal, n))
    for n in ("SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS", "SIGXCPU")
    if hasattr(signal, n)
}


@dataclass
class _ToolDeath:
    """The signal that ended the real tool's latest run, if a signal did."""

    signum: int | None = None


_tool_death = _ToolDeath()


def run_tool(
    cmd: Sequence[str], env: Mapping[str, str], stdin: bytes | None, capture: bool
) -> subprocess.CompletedProcess[bytes]:
    """Run the real tool; stdin is inherited unless we have bytes for it.

    If we are stopped meanwhile (`Terminated`, Ctrl-C) the tool gets the same
    signal and we wait for it to end before our clean-up runs.
    """
    proc = subprocess.Popen(
        list(cmd),
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else None,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
    )
    try:
        out, err = proc.communicate(stdin)
    except BaseException as exc:
        _stop_child(proc, exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
        raise
    _tool_death.signum = -proc.returncode if proc.returncode < 0 else None
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def _stop_child(proc: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(OSError):
        proc.send_signal(signum)
    try:
        proc.wait(_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _on_signal(signum: int, frame: object) -> None:
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGINT/SIGHUP into `Terminated` (ones the caller ignores stay ignored)."""
    for signum in _FORWARDED_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)


def die_by_signal(signum: int) -> None:
    """End this process by ``signum``, as the real tool ended (make and shells tell the two apart
    from an exit code). Our own core is not dumped: the tool's is the one that matters."""
    sys.stdout.flush()
    sys.stderr.flush()
    if signum in _CORE_SIGNALS:
        with contextlib.suppress(ImportError, ValueError, OSError):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)


def run_transformed(
    new_cmd: Sequence[str],
    orig_cmd: Sequence[str],
    env: Mapping[str, str],
    *,
    new_stdin: bytes | None,
    orig_stdin: bytes | None,
    changed: bool,
    rename: Mapping[str, str] | None = None,
    lines: Mapping[str, LineMap] | None = None,
) -> Run:
    """Run the tool on our PTX; if it fails there, run it again on the original.

    When nothing changed this is one plain run. Otherwise the first run's
    output is held back: on success it is replayed, on failure it is dropped
    (we warn in one line) and the original command's output is what the user
    sees, so a bug of ours can never fail a build that would have passed.
    ``rename`` maps our private copies back to the user's names in the
    replayed output (ptxas names its input in warnings), and ``lines`` the
    line numbers of a copy back to the user's lines.
    """
    if not changed:
        return Run(_exit_status(run_tool(orig_cmd, env, orig_stdin, capture=False).returncode))
    first = run_tool(new_cmd, env, new_stdin, capture=True)
    if first.returncode == 0:
        _replay(first, rename or {}, lines or {})
        return Run(0, output=(first.stdout or b"") + (first.stderr or b""))
    detail = _first_line(first.stderr) or _first_line(first.stdout)
    rejected = f"exit {_exit_status(first.returncode)}" + (f": {detail}" if detail else "")
    second = run_tool(orig_cmd, env, orig_stdin, capture=False)
    return Run(_exit_status(second.returncode), retried=True, rejected=rejected)


def _first_line(data: bytes | None) -> str:
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return ""


class LineMap:
    """Line numbers of our rewritten copy -> the user's file, for ptxas's diagnostics.

    ptxas names the line of the file it was given (``ptxas F, line N;``);
    when that is our rewrite, the user would be sent to the wrong line. Lines
    are matched by their text without blanks (our printer changes layout, not
    tokens, on the lines it keeps), in order; a line with no counterpart
    (one a pass inserted) maps to the nearest matched line before it.
    Worked out only when a diagnostic names a line.
    """

    def __init__(self, ours: str, original: str) -> None:
        self.ours, self.original = ours, original
        self._map: list[int] | None = None

    def user_line(self, line: int) -> int:
        if self._map is None:
            self._map = self._build()
        return self._map[line - 1] if 1 <= line <= len(self._map) else line

    def _build(self) -> list[int]:
        import difflib

        def key(text: str) -> list[str]:
            return ["".join(ln.split()) for ln in text.splitlines()]

        ours, theirs = key(self.ours), key(self.original)
        mapped: list[int | None] = [None] * len(ours)
        matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
        for a, b, size in matcher.get_matching_blocks():
            for k in range(size):
                mapped[a + k] = b + k + 1
        result, last = [], 1
        for m in mapped:
            last = m if m is not None else last
            result.append(last)
        return result


def _fix_lines(data: bytes, ours: bytes, theirs: bytes, line_map: LineMap) -> bytes:
    """``OURS, line N`` -> ``THEIRS, line M`` (ptxas's way of naming a line)."""

    def user(m: re.Match[bytes]) -> bytes:
        return b"%s, line %d" % (theirs, line_map.user_line(int(m[1])))

    return re.sub(re.escape(ours) + rb", line (\d+)", user, data)


#: ptxas's messages that name a line of its one input without the file
#: (``warpgroup.arrive is injected in around line N``, ``compile instruction
#: at line N``, ``encountered on line N``).
_BARE_LINE = re.compile(rb"\b(around line |at line |on line )(\d+)")


def _fix_bare_lines(data: bytes, line_map: LineMap) -> bytes:
    """A line that a message names without its file: the one input's."""
    return _BARE_LINE.sub(lambda m: b"%s%d" % (m[1], line_map.user_line(int(m[2]))), data)


def _replay(
    proc: subprocess.CompletedProcess[bytes], rename: Mapping[str, str], lines: Mapping[str, LineMap]
) -> None:
    for data, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
        if data and len(lines) == 1:
            data = _fix_bare_lines(data, next(iter(lines.values())))
        for ours, theirs in rename.items():
            if data and ours in lines and os.fsencode(ours) + b", line " in data:
                data = _fix_lines(data, os.fsencode(ours), os.fsencode(theirs), lines[ours])
            data = data.replace(os.fsencode(ours), os.fsencode(theirs)) if data else data
        if data:
            stream.flush()
            stream.buffer.write(data)
            stream.flush()


def warn(message: str) -> None:
    """One line on stderr, prefixed like the rest of ptxasw's diagnostics."""
    print(f"ptxasw: warning: {message}", file=sys.stderr, flush=True)


def append_log(record: dict[str, Any], env: Mapping[str, str] | None = None) -> None:
    """Append one JSON line to $PTXASW_LOG (a failure to log never fails the build)."""
    env = os.environ if env is None else env
    path = env.get(ENV_LOG)
    if not path:
        return
    line = json.dumps(record, default=str, sort_keys=True) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        warn(f"cannot write {ENV_LOG}={path}: {exc.strerror or exc}")


def private_copy(tmp: Path, index: int, name: str, text: str) -> Path:
    """Write ``text`` as TMP/INDEX/BASENAME: a private file with the input's basename."""
    d = tmp / str(index)
    d.mkdir()
    path = d / (os.path.basename(name) or "input.ptx")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


class Scratch:
    """Our private temporary directory: made on first use (a run that rewrites
    nothing needs none, so an unwritable TMPDIR costs it nothing) and removed
    by `close`."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.path: Path | None = None

    def copy(self, index: int, name: str, text: str) -> Path:
        """`private_copy` into this directory; raises OSError (TMPDIR unwritable or full)."""
        if self.path is None:
            # $TMPDIR as given: Python would quietly move on to /tmp or even the
            # current (build) directory when it is unusable; we fall back instead.
            self.path = Path(tempfile.mkdtemp(prefix=self.prefix, dir=os.environ.get("TMPDIR") or None))
        return private_copy(self.path, index, name, text)

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


def copy_failed(outcome: Outcome, exc: OSError) -> Outcome:
    """The fallback when the rewritten PTX cannot be written to a temporary file."""
    why = exc.strerror or str(exc)
    return Outcome(
        outcome.name,
        "fallback",
        passes=outcome.passes,
        seconds=outcome.seconds,
        error=f"cannot write the rewritten PTX to a temporary file ({why}; see TMPDIR)",
    )


@dataclass
class StagedOutput:
    """The real ptxas's output, written in a private directory beside the target
    and renamed onto it only when ptxas succeeds.

    Why: ptxas opens its output with O_TRUNC and writes it in place, so a
    build killed meanwhile leaves a truncated cubin newer than its input
    (which make then takes for a good one), and two builds writing the same
    output can interleave into a torn file. A rename is atomic; the staged
    file keeps the target's basename, which ptxas records in a ``-g`` cubin.
    """

    target: Path
    staged: Path
    mode: int | None  # the existing target's permissions, kept as ptxas would keep them

    def commit(self) -> None:
        """Move the staged output onto the target (if ptxas wrote one); raises OSError."""
        if not self.staged.exists():
            return
        if self.mode is not None:
            os.chmod(self.staged, self.mode)
        os.replace(self.staged, self.target)

    def discard(self) -> None:
        shutil.rmtree(self.staged.parent, ignore_errors=True)


def stage_output(args: Sequence[Arg]) -> tuple[Arg, StagedOutput] | None:
    """Stage the output of a command line with one ``-o FILE`` (on the command line itself).

    Left to ptxas (None): no or several ``-o``, one inside an options file,
    a target that is not a plain file of ours (a device, a symlink, a file
    with other hard links or another owner), or a directory we cannot write.
    """
    outs = [a for a in iter_args(args) if a.spec is not None and a.spec.long == "output-file"]
    if len(outs) != 1 or not any(a is outs[0] for a in args) or not outs[0].value:
        return None
    staged = stage_target(Path(outs[0].value))
    return None if staged is None else (outs[0], staged)


def stage_target(target: Path) -> StagedOutput | None:
    """A private directory beside ``target`` to write it in (see `StagedOutput`);
    None when the target is not a plain file of ours or its directory is not
    writable (then the tool writes it in place, as it would without us)."""
    mode: int | None = None
    try:
        st = target.lstat()
    except FileNotFoundError:
        pass
    except OSError:
        return None
    else:
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.geteuid():
            return None
        mode = stat.S_IMODE(st.st_mode)
    try:
        private = Path(tempfile.mkdtemp(prefix=".ptxasw-", dir=target.parent))
    except OSError:
        return None
    return StagedOutput(target, private / target.name, mode)


def read_stdin() -> bytes:
    """All of our standard input (for a ``-`` input)."""
    return sys.stdin.buffer.read() if sys.stdin is not None else b""


# --------------------------------------------------------------------------
# One invocation, start to end (the ptxas wrapper and the GCC as shim)


def log_record(tool: str, argv: Sequence[str], real: Path) -> dict[str, Any]:
    """The PTXASW_LOG record of one invocation, as it starts."""
    return {
        "tool": tool,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": list(argv),
        "cwd": os.getcwd(),
        "real": str(real),
        "inputs": [],
    }


def bypass_status(visited_var: str) -> str | None:
    """Why the real tool must run untouched, or None: ``"disabled"``
    (PTXASW_DISABLE) or ``"nested"`` (an ancestor wrapper already transformed
    this PTX and chose a "real" tool that led back here: just run the next
    real one)."""
    if truthy(os.environ.get(ENV_DISABLE)):
        return "disabled"
    if visited(os.environ, visited_var):
        return "nested"
    return None


def passthrough(
    cmd: Sequence[str], env: dict[str, str], record: dict[str, Any], start: float, *, allow_exec: bool
) -> int:
    """Run the real tool on the user's command line, untouched.

    As a program with no log to write, we exec it (nothing of ours stays in
    between); otherwise we wait for it to log its exit code.
    """
    if allow_exec and not env.get(ENV_LOG):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], list(cmd), env)
    rc = _exit_status(run_tool(cmd, env, None, capture=False).returncode)
    record.update(real_exit=rc, seconds=round(time.monotonic() - start, 6))
    append_log(record)
    return rc


def conclude(
    record: dict[str, Any], run: Run, outcomes: Sequence[Outcome], start: float, tool: str, ok: str = "ok"
) -> int:
    """Warn when ``tool`` rejected our PTX, complete the log record and log it.
    ``ok``: the status of a run without fallback (``unchanged``: no input was read).

    Returns the real tool's exit status.
    """
    if run.retried and run.returncode == 0:
        # (when the original fails too, the PTX itself is bad: the tool has said so)
        warn(f"{tool} rejected the rewritten PTX ({run.rejected}); assembled the original PTX")
    fell_back = run.retried or any(o.status == "fallback" for o in outcomes)
    record.update(
        status="fallback" if fell_back else ok,
        inputs=[o.record() for o in outcomes],
        real_exit=run.returncode,
        seconds=round(time.monotonic() - start, 6),
    )
    if run.retried:
        record["rejected"] = run.rejected
    append_log(record)
    return run.returncode


# --------------------------------------------------------------------------
# The ptxas wrapper


def run_wrapper(argv: Sequence[str], *, allow_exec: bool = False) -> int:
    """The whole wrapper: find ptxas, transform the inputs, run it, log. Returns the exit code."""
    start = time.monotonic()
    global FASTPATH_REQUEST
    fast, FASTPATH_REQUEST = FASTPATH_REQUEST, None
    real = find_real_ptxas()
    env = child_env(real, ENV_VISITED_PTXAS)
    record = log_record("ptxas", argv, real)
    status = bypass_status(ENV_VISITED_PTXAS)
    if status is not None:
        record["status"] = status
        return passthrough([str(real), *argv], env, record, start, allow_exec=allow_exec)
    args = parse_ptxas_args(argv)
    inputs = ptx_inputs(args)
    if not inputs or any(has_option(args, o) for o in PASSTHROUGH_OPTIONS):
        record["status"] = "passthrough"
        return passthrough([str(real), *argv], env, record, start, allow_exec=allow_exec)

    timeout = timeout_seconds()
    # The pipeline (forked from here) decides per target whether a shuffle pays.
    from ptxasw.driver import settings

    settings.TARGET_ARCH = target_arch(args)
    settings.PTXAS_COMMAND = [str(real), *code_options(args)]
    # When the pipeline could change nothing whatever the text, no input is read
    # or parsed: ptxas runs on the command line as it is (its output still staged).
    idle = pipeline_idle()
    if idle is not None and _worth_a_look(inputs):
        idle = None
    if idle is not None:
        record["reason"] = idle
    results = _result_cache() if idle is None else None
    replace: dict[int, str] = {}
    rename: dict[str, str] = {}
    lines: dict[str, LineMap] = {}
    orig_stdin: bytes | None = None
    new_stdin: bytes | None = None
    outcomes: list[Outcome] = []
    read: list[tuple[Arg, bytes]] = []  # the PTX files and the bytes the pipeline saw
    scratch = Scratch("ptxasw-")
    staging = stage_output(args)
    try:
        ias_count = 0
        for index, arg in enumerate(inputs if idle is None else []):
            if arg.kind == "stdin":
                if orig_stdin is not None:
                    continue  # ptxas reads standard input once
                orig_stdin = read_stdin()
                name, data = "<stdin>", orig_stdin
            elif arg.kind == "ias":
                ias_count += 1
                name, data = (
                    f"<input-as-string {ias_count}>",
                    (arg.value or "").encode("utf-8", "surrogateescape"),
                )
            else:
                name = arg.value or ""
                try:
                    data = Path(name).read_bytes()
                except OSError:
                    continue  # ptxas will say it cannot open it
                read.append((arg, data))
            text = data.decode("utf-8", "surrogateescape")
            outcome = transform_cached(text, name, timeout, outcomes, results)
            if outcome.text is not None and arg.kind == "input":
                try:
                    replace[id(arg)] = str(scratch.copy(index, name, outcome.text))
                    rename[replace[id(arg)]] = name
                    lines[replace[id(arg)]] = LineMap(outcome.text, text)
                except OSError as exc:
                    outcome = copy_failed(outcome, exc)
            outcomes.append(outcome)
            if outcome.status == "fallback":
                print(outcome.warning(), file=sys.stderr, flush=True)
            elif outcome.text is not None:
                if arg.kind == "stdin":
                    new_stdin = outcome.text.encode("utf-8", "surrogateescape")
                elif arg.kind == "ias":
                    replace[id(arg)] = outcome.text
        changed = bool(replace) or new_stdin is not None
        if orig_stdin is not None and new_stdin is None:
            new_stdin = orig_stdin
        orig_cmd = [str(real), *argv]
        if staging is not None:
            out_arg, staged = staging
            replace[id(out_arg)] = str(staged.staged)
            rename[str(staged.staged)] = out_arg.value or ""
            orig_cmd = [str(real), *render_args(args, {id(out_arg): str(staged.staged)})]
        new_cmd = [str(real), *render_args(args, replace)]
        run = run_transformed(
            new_cmd,
            orig_cmd,
            env,
            new_stdin=new_stdin,
            orig_stdin=orig_stdin,
            changed=changed,
            rename=rename,
            lines=lines,
        )
        if staging is not None and run.returncode == 0:
            try:
                staging[1].commit()
            except OSError as exc:
                why = exc.strerror or exc
                print(f"ptxasw: error: cannot write {staging[1].target}: {why}", file=sys.stderr)
                run.returncode = EXIT_FATAL
        if fast is not None and idle is not None:
            _record_any_input_entry(fast, argv, args, str(real.resolve()))
        elif fast is not None:
            _record_fast_entry(fast, argv, args, read, outcomes, run, rename, str(real.resolve()))
    finally:
        scratch.close()
        if staging is not None:
            staging[1].discard()
    return conclude(record, run, outcomes, start, "ptxas", "unchanged" if idle is not None else "ok")


def _record_fast_entry(
    payload: str,
    argv: Sequence[str],
    args: Sequence[Arg],
    read: Sequence[tuple[Arg, bytes]],
    outcomes: Sequence[Outcome],
    run: Run,
    rename: Mapping[str, str],
    visited: str,
) -> None:
    """Write the shadow script's fast entry for this run when its outcome is final
    and the script's reading of the command line is ours (`ptxasw.driver.cache`).

    Final: one PTX file, the pipeline's complete result (no fallback, time-out
    or skipped kernel), no warning of ours, and ptxas succeeded on it the first
    time. A rewrite is recorded only when ptxas said nothing naming its input
    or output (what we rename in its messages) and the command line has no
    ``-g``, whose cubin records the input's name. Never fails the build.
    """
    try:
        from ptxasw.driver.cache import write_fast_entry

        if run.returncode != 0 or run.retried or len(outcomes) != 1 or len(read) != 1:
            return
        outcome, (arg, data) = outcomes[0], read[0]
        if outcome.status != "ok" or outcome.note is not None or _skipped_any(outcome.passes):
            return
        request = _agreed_request(payload, argv, args, arg)
        if request is None:
            return
        if outcome.text is not None:
            said = run.output or b""
            if has_option(args, "device-debug") or any(
                os.fsencode(p) in said or os.fsencode(os.path.basename(p)) in said for p in rename
            ):
                return
        write_fast_entry(request, data, outcome.text, visited)
    except Exception:  # a fast entry is an optimisation: never let it fail the build
        return


def pipeline_idle() -> str | None:
    """Why the drop-in's pipeline could change no input whatever its text
    (`ptxasw.driver.settings.nothing_to_do`), or None: always None for a
    custom pipeline (PTXASW_PIPELINE). Fail-open: an error of ours means the
    pipeline runs as usual (and is itself fail-open)."""
    if os.environ.get(ENV_PIPELINE):
        return None
    from ptxasw.driver import settings

    try:
        return settings.nothing_to_do()
    except Exception:
        return None


def _worth_a_look(inputs: Sequence[Arg]) -> bool:
    """Whether an input has what may pay even where no contiguous load's
    shuffle does: masked loads in inline assembly (reuses) or a kernel whose
    strided halo may pay (`ptxasw.synth.cost.worth_a_look`). Standard
    input is not read here (it can be read once); synthesis off means off.
    Fail-open: an error of ours keeps the pipeline idle."""
    from ptxasw.driver import settings
    from ptxasw.synth.cost import worth_a_look

    try:
        if settings.synthesis_settings()["synth"] == "0":
            return False
        for arg in inputs:
            text: str | bytes
            if arg.kind == "input":
                text = Path(arg.value or "").read_bytes()
            elif arg.kind == "ias":
                text = arg.value or ""
            else:
                continue
            if worth_a_look(text):
                return True
    except Exception:
        return False
    return False


def _record_any_input_entry(payload: str, argv: Sequence[str], args: Sequence[Arg], visited: str) -> None:
    """Record that the shadow script may run ptxas on the user's file for any
    PTX under this command line's key (`ptxasw.driver.cache.write_any_input_entry`):
    the pipeline was not run because it could change nothing, whatever the
    text. Same checks of the script's reading as `_record_fast_entry`; never
    fails the build. The script takes no any-input entry where it cannot tell
    that a file with inline assembly has no masked load in it (no ``awk``):
    such a file gets its own entry too."""
    try:
        from ptxasw.driver.cache import write_any_input_entry, write_fast_entry

        inputs = ptx_inputs(args)
        request = _agreed_request(payload, argv, args, inputs[0]) if len(inputs) == 1 else None
        if request is not None:
            write_any_input_entry(request, visited)
            data = Path(inputs[0].value or "").read_bytes()
            if b"inline asm" in data:
                write_fast_entry(request, data, None, visited)
    except Exception:  # a fast entry is an optimisation: never let it fail the build
        return


def _agreed_request(payload: str, argv: Sequence[str], args: Sequence[Arg], arg: Arg) -> FastRequest | None:
    """The shadow script's request when it holds for this run: well formed, its
    reading of the command line ours (`_same_reading`, ``arg`` the PTX file), its
    folders and protocol ours, and no setting warned about (a hit would not warn)."""
    from ptxasw.driver.cache import FastRequest

    request = FastRequest.parse(payload)
    if request is None or not _same_reading(request, argv, args, arg):
        return None
    return request if request.agrees() and _settings_clean() else None


def _same_reading(request: FastRequest, argv: Sequence[str], args: Sequence[Arg], arg: Arg) -> bool:
    """Whether the script read the command line as we did: the same single PTX
    file at the same place, -o values where it put placeholders, the same target,
    and nothing it cannot see (options files, standard input, inline modules)."""
    starts, pos = {}, 1
    for a in args:
        starts[id(a)] = pos
        pos += len(a.tokens)
    if pos - 1 != len(argv) or any(a.kind in ("optf", "stdin", "ias") for a in iter_args(args)):
        return False
    inputs = ptx_inputs(args)
    if len(inputs) != 1 or inputs[0] is not arg or starts.get(id(arg)) != request.input_index:
        return False
    values = {
        starts[id(a)] + 1
        for a in args
        if a.spec is not None and a.spec.long == "output-file" and not a.inline and len(a.tokens) == 2
    }
    return set(request.output_indices) == values and (target_arch(args) or "") == request.arch


def _settings_clean() -> bool:
    """Whether this run's settings raised no warning (a fast hit would not repeat it)."""
    import io

    from ptxasw.driver import settings

    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        timeout_seconds()
        settings.synthesis_settings(warn=True)
        settings.cache_size(warn=True)
    return not said.getvalue()


# --------------------------------------------------------------------------
# Console entry points


def finish(rc: int, as_program: bool) -> int:
    """Return ``rc``; as a program whose real tool died of a signal, die of it too;
    as a program with a hung pipeline thread, exit at once."""
    signum = _tool_death.signum
    if as_program and signum is not None and rc == 128 + signum:
        die_by_signal(signum)
    if as_program and any(t.is_alive() for t in _hung_workers):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def console_main(
    run: Callable[..., int],
    argv: Sequence[str] | None,
    find_real: Callable[[], Path],
    visited_var: str,
) -> int:
    """A console entry point: ``run(args, allow_exec=...)``, whose exit code is
    the real tool's.

    Fail-open to the end: a bug of ours anywhere in ``run`` (not only in the
    pipeline, which `transform_ptx` already guards) prints one warning and
    runs the real tool on the user's own arguments. Only a missing real tool
    is fatal (one line, `EXIT_FATAL`).

    ``argv`` None means we are the program (arguments from ``sys.argv``): the
    real tool may then replace us (exec), and a hung pipeline thread must not
    keep us alive.
    """
    as_program = argv is None
    args = sys.argv[1:] if argv is None else list(argv)
    if as_program:
        install_signal_handlers()
    try:
        rc = run(args, allow_exec=as_program)
    except Terminated as stop:  # our clean-up has run; the real tool has stopped
        if as_program:
            die_by_signal(stop.signum)
        return 128 + stop.signum
    except (WrapperError, OSError) as exc:
        print(f"ptxasw: error: {exc}", file=sys.stderr)
        rc = EXIT_FATAL
    except KeyboardInterrupt:
        rc = 130
    except Exception as exc:  # never break the user's build
        warn(f"internal error ({type(exc).__name__}: {_one_line(str(exc))}); running the real tool unchanged")
        try:
            real = find_real()
            rc = subprocess.run([str(real), *args], env=child_env(real, visited_var), check=False).returncode
        except (WrapperError, OSError) as fatal:
            print(f"ptxasw: error: {fatal}", file=sys.stderr)
            rc = EXIT_FATAL
    return finish(rc, as_program)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``ptxasw-ptxas``: behaves as ptxas; the exit code is ptxas's."""
    return console_main(run_wrapper, argv, find_real_ptxas, ENV_VISITED_PTXAS)


if __name__ == "__main__":
    sys.exit(main())
