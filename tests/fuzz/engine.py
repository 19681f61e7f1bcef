"""A mutation fuzzer for the front end and the drop-in ptxas.

Real compilers' PTX (the test corpus) is mutated the ways a broken build,
a bad merge or a truncated download mutate files: lines and tokens deleted,
duplicated or swapped, bytes flipped, the file cut short. Every mutant is
then given to

* ``ptxasw check``, ``fmt`` (and, for a sample, ``trace``), in-process: each
  must succeed or print exactly one ``ptxasw: error: FILE:LINE:COL: message``
  line with exit status 1, never a traceback, an "internal error" or a hang;
  what ``fmt`` prints must parse back and print the same again;
* for a sample, the drop-in ptxas and NVIDIA's ptxas on the same file: the
  same exit status, the same output file bytes, and the same stdout and
  stderr but for at most one ``ptxasw: warning:`` line.

A case is named by its number and the campaign's seed, so any finding can be
replayed alone (`Case.make`). `run_case` checks one case and returns a
`CaseResult`; `Tally` adds them up by mutation kind. ``tests/fuzz/test_fuzz.py``
runs a bounded campaign in CI and ``benchmarks/fuzz.py`` long ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ptxasw.cli import main as cli

KINDS = (
    "delete_line",
    "duplicate_line",
    "swap_lines",
    "delete_token",
    "duplicate_token",
    "swap_tokens",
    "flip_byte",
    "truncate",
)

#: Tokens as a PTX reader sees them: punctuation alone, anything else up to a separator.
_TOKEN = re.compile(rb"[,;{}()\[\]<>]|[^\s,;{}()\[\]<>]+")
_ERROR = re.compile(r"ptxasw: error: (?:(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): \S.*|cannot read .+)")
_TARGET = re.compile(rb"^\s*\.target\s+(sm_\d+a?)", re.M)


@dataclass(frozen=True)
class Seed:
    """A PTX file to mutate, with what ptxas needs to assemble it (``-c`` for -rdc PTX)."""

    path: Path
    arch: str
    ptxas_flags: tuple[str, ...] = ()

    @staticmethod
    def of(path: Path, ptxas_flags: Sequence[str] = ()) -> Seed:
        m = _TARGET.search(path.read_bytes()[:4096])
        return Seed(path, m.group(1).decode() if m else "sm_90", tuple(ptxas_flags))


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    """One to three mutations of ``kind`` applied to ``data``."""
    for _ in range(rng.randint(1, 3)):
        data = _MUTATORS[kind](data, rng)
    return data


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _tokens(data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(data)]


def _delete_token(data: bytes, rng: random.Random) -> bytes:
    spans = _tokens(data)
    if not spans:
        return data
    a, b = rng.choice(spans)
    return data[:a] + data[b:]


def _duplicate_token(data: bytes, rng: random.Random) -> bytes:
    spans = _tokens(data)
    if not spans:
        return data
    a, b = rng.choice(spans)
    at = rng.choice(spans)[rng.randrange(2)]
    return data[:at] + data[a:b] + b" " + data[at:]


def _swap_tokens(data: bytes, rng: random.Random) -> bytes:
    spans = _tokens(data)
    if len(spans) < 2:
        return data
    (a, b), (c, d) = sorted(rng.sample(spans, 2))
    return data[:a] + data[c:d] + data[b:c] + data[a:b] + data[d:]


def _flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    flipped = data[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.7 else rng.randrange(256)
    return data[:i] + bytes([flipped]) + data[i + 1 :]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


_MUTATORS = {
    "delete_line": _delete_line,
    "duplicate_line": _duplicate_line,
    "swap_lines": _swap_lines,
    "delete_token": _delete_token,
    "duplicate_token": _duplicate_token,
    "swap_tokens": _swap_tokens,
    "flip_byte": _flip_byte,
    "truncate": _truncate,
}


@dataclass(frozen=True)
class Case:
    """Case ``index`` of the campaign seeded ``seed``: which file, which mutation."""

    seed: int
    index: int

    def rng(self) -> random.Random:
        return random.Random(f"ptxasw-fuzz:{self.seed}:{self.index}")

    def make(self, seeds: Sequence[Seed]) -> tuple[Seed, str, bytes]:
        rng = self.rng()
        base = seeds[rng.randrange(len(seeds))]
        kind = KINDS[rng.randrange(len(KINDS))]
        return base, kind, mutate(base.path.read_bytes(), kind, rng)


@dataclass
class Finding:
    """One thing that went wrong: the case, the command and the first line of what it said."""

    case: int
    kind: str
    seed_file: str
    command: str
    problem: str  # traceback, hang, bad_error, wrong_output
    detail: str


@dataclass
class CaseResult:
    kind: str
    findings: list[Finding] = field(default_factory=list)
    traced: bool = False
    dropin: bool = False
    rejected_rewrite: bool = False  # ptxas refused our reprint of PTX it accepts (fail-open hid it)


class _Hang(Exception):
    """Raised by the alarm: a command ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `_Hang` in the main thread after ``seconds`` (SIGALRM)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise _Hang(f"no answer after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Options:
    """What a campaign checks besides check and fmt: how often, and with what limits."""

    trace_every: int = 8  # every Nth case also runs trace (0: never)
    dropin_every: int = 4  # every Nth case also runs the drop-in against ptxas (0: never)
    limit_s: float = 20.0  # a command that takes longer hangs (trace: 3x)
    ptxas: str | None = None  # NVIDIA's ptxas; None: no drop-in checks


def run_case(case: Case, seeds: Sequence[Seed], workdir: Path, opts: Options) -> CaseResult:
    """Mutate, write ``workdir/SEEDNAME`` and check every command on it."""
    base, kind, data = case.make(seeds)
    result = CaseResult(kind)
    path = workdir / "in" / base.path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)

    def found(command: str, problem: str, detail: str) -> None:
        first = (detail.strip().splitlines() or ["(nothing)"])[-1 if problem == "traceback" else 0]
        result.findings.append(Finding(case.index, kind, base.path.name, command, problem, first[:300]))

    text_lines = data.count(b"\n") + 1
    for command in ("check", "fmt"):
        _check_command(command, [command, str(path)], path, text_lines, opts.limit_s, found)
    if opts.trace_every and case.index % opts.trace_every == 0:
        result.traced = True
        args = ["trace", str(path), "--time-budget", "1", "--max-paths", "16", "--solver-timeout", "50"]
        _check_command("trace", args, path, text_lines, 3 * opts.limit_s, found)
    if opts.ptxas and opts.dropin_every and case.index % opts.dropin_every == 0:
        result.dropin = True
        forced = (case.index // opts.dropin_every) % 2 == 1
        result.rejected_rewrite = _check_dropin(base, path, data, workdir, opts, forced, found)
    return result


def _check_command(command: str, args: list[str], path: Path, lines: int, limit: float, found: Any) -> None:
    runner = CliRunner()
    try:
        with time_limit(limit):
            res = runner.invoke(cli, args, catch_exceptions=True)
    except _Hang as exc:  # raised outside click's own handling
        found(command, "hang", str(exc))
        return
    exc = res.exception
    if isinstance(exc, _Hang):
        found(command, "hang", str(exc))
        return
    if exc is not None and not isinstance(exc, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        found(command, "traceback", tb)
        return
    err_lines = [ln for ln in res.stderr.splitlines() if ln.startswith("ptxasw: error:")]
    if any("internal error" in ln for ln in res.stderr.splitlines()):
        found(command, "traceback", res.stderr)
        return
    if res.exit_code == 0:
        if err_lines:
            found(command, "bad_error", f"exit 0 with an error: {err_lines[0]}")
        elif command == "fmt":
            _check_fmt_output(res.stdout, found)
        return
    # trace reports each bad kernel on its own line and goes on with the others
    all_lines = res.stderr.splitlines()
    if command == "trace":
        allowed = len(err_lines) >= 1
        allowed &= all(ln in err_lines or ln.startswith("ptxasw: note:") for ln in all_lines)
    else:
        allowed = len(err_lines) == len(all_lines) == 1
    if res.exit_code != 1 or not allowed:
        found(command, "bad_error", f"exit {res.exit_code}: {res.stderr!r}")
        return
    for err in err_lines:
        m = _ERROR.fullmatch(err)
        if m is None:
            found(command, "bad_error", err)
        elif m.group("file") is not None:
            line, col = int(m.group("line")), int(m.group("col"))
            if m.group("file") != str(path) or not (1 <= line <= lines and col >= 1):
                found(command, "bad_error", f"bad position ({lines} lines): {err}")


def _check_fmt_output(text: str, found: Any) -> None:
    """What fmt prints must parse again and print the same (the drop-in would assemble it)."""
    from ptxasw.errors import PtxError
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx

    try:
        again = print_module(parse_ptx(text, "<fmt output>"))
    except PtxError as exc:
        found("fmt", "wrong_output", f"fmt printed PTX that does not parse: {exc}")
        return
    except Exception as exc:
        found("fmt", "traceback", f"reparsing fmt output: {type(exc).__name__}: {exc}")
        return
    if again != text:
        found("fmt", "wrong_output", "fmt output is not a fixed point of parse+print")


# --------------------------------------------------------------------------
# The drop-in against NVIDIA's ptxas


class _Reprinted:
    def __init__(self, text: str, passes: list[dict[str, Any]]) -> None:
        self.text = text
        self.passes = passes
        self.changed = True


def reprint_as_changed(text: str, name: str) -> _Reprinted:
    """The default pipeline, claiming a change: ptxas then assembles our reprint,
    so the fuzzer compares its cubin with the original's."""
    from ptxasw.driver.pipeline import run_pipeline

    result = run_pipeline(text, name)
    return _Reprinted(result.text, result.passes)


@dataclass
class _Run:
    rc: int
    out: bytes
    err: bytes
    output: bytes | None


def _check_dropin(
    base: Seed, path: Path, data: bytes, workdir: Path, opts: Options, forced: bool, found: Any
) -> bool:
    """Compare the drop-in (in-process) with NVIDIA's ptxas on ``path``; True if
    ptxas rejected our reprint (and the wrapper had to fall back)."""
    assert opts.ptxas is not None
    args = [f"-arch={base.arch}", *base.ptxas_flags, str(path)]
    ref = _run_ptxas(opts.ptxas, args, workdir / "ref")
    log = workdir / "log.jsonl"
    log.unlink(missing_ok=True)
    env = {"PTXASW_REAL_PTXAS": opts.ptxas, "PTXASW_LOG": str(log), "PTXASW_TIMEOUT": str(opts.limit_s)}
    if forced:
        env["PTXASW_PIPELINE"] = "tests.fuzz.engine:reprint_as_changed"
    command = "dropin-rewrite" if forced else "dropin"
    try:
        with time_limit(opts.limit_s * 3):
            ours = _run_wrapper(args, workdir / "ours", env)
    except _Hang as exc:
        found(command, "hang", str(exc))
        return False
    if path.read_bytes() != data:
        found(command, "wrong_output", "the input file was modified")
    problems = []
    # In this process the drop-in reports a ptxas killed by signal N as 128+N (as
    # a program it dies of N itself, which tests/test_reliability.py checks).
    expected_rc = 128 - ref.rc if ref.rc < 0 else ref.rc
    if ours.rc != expected_rc:
        problems.append(f"exit {ours.rc} != ptxas's {ref.rc}")
    record = _last_record(log)
    if ours.output is None or ref.output is None:
        if ours.output is not ref.output:
            problems.append("output file presence differs")
    elif (
        not _synthesised(record)
        and not same_cubin(ours.output, ref.output, layout_may_differ=forced)
        and _ptxas_repeats(opts.ptxas, args, workdir / "ref-again", ref)
    ):
        problems.append("output file differs")
    if ours.out != ref.out:
        problems.append("stdout differs")
    ours_err = [ln for ln in ours.err.splitlines(keepends=True) if not ln.startswith(b"ptxasw: warning:")]
    if _stable(b"".join(ours_err)) != _stable(ref.err):
        problems.append("stderr differs")
    if len(ours.err.splitlines()) - len(ours_err) > 1:
        problems.append("more than one warning line")
    if any(b"internal error" in ln for ln in ours.err.splitlines()):
        found(command, "traceback", ours.err.decode("utf-8", "replace"))
    if problems:
        found(command, "wrong_output", "; ".join(problems) + f" (stderr: {ours.err[-200:]!r})")
    return record is not None and "rejected" in record and ref.rc == 0


def _last_record(log: Path) -> dict[str, Any] | None:
    try:
        return json.loads(log.read_text().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _synthesised(record: dict[str, Any] | None) -> bool:
    """Whether the drop-in kept a proven shuffle or reuse (by default, on sm_90,
    only reuses of Triton-like masked loads): its code then differs from what
    ptxas makes of the input by design; the proof, not the fuzzer, answers
    for it (and `benchmarks/masked_campaign.py` runs such rewrites)."""
    for entry in (record or {}).get("inputs", []):
        for p in entry.get("passes", []):
            if p.get("name") == "shuffle-synthesis" and p.get("shuffles"):
                return True
    return False


#: ptxas 13.0 prints a different, made-up line number in this message on every run.
_UNSTABLE = re.compile(rb"(Unexpected non-ASCII character encountered on line )\d+")


def _stable(err: bytes) -> bytes:
    return _UNSTABLE.sub(rb"\1N", err)


def same_cubin(a: bytes, b: bytes, *, layout_may_differ: bool) -> bool:
    """Byte-equal, or (for our reprint) equal but for what depends on the PTX
    text's layout: the debug sections of -G/-lineinfo builds (see
    tests/cubin.py) and the names ptxas gives function-scope variables
    (``$__$str$6__230``: declared on line 230), in the symbol tables."""
    if a == b:
        return True
    if not layout_may_differ:
        return False
    from tests.cubin import same_code

    return same_code(a, b)


def _ptxas_repeats(ptxas: str, args: list[str], outdir: Path, first: _Run) -> bool:
    """Whether ptxas gives ``first``'s cubin again. On some mutants it does
    not (``st.param.b64 [%r2], 0``, a store to a parameter through an
    undefined register, assembles to other code on every run): there the
    drop-in's cubin cannot be compared with one run of ptxas."""
    again = _run_ptxas(ptxas, args, outdir)
    if again.output is None or first.output is None:
        return again.output is first.output
    return same_cubin(again.output, first.output, layout_may_differ=False)


def _run_ptxas(ptxas: str, args: list[str], outdir: Path) -> _Run:
    outdir.mkdir(parents=True, exist_ok=True)
    target = outdir / "k.cubin"
    target.unlink(missing_ok=True)
    proc = subprocess.run([ptxas, *args, "-o", str(target)], capture_output=True, check=False, timeout=120)
    return _Run(proc.returncode, proc.stdout, proc.stderr, target.read_bytes() if target.exists() else None)


def _run_wrapper(args: list[str], outdir: Path, env: dict[str, str]) -> _Run:
    """The drop-in in this process, its (and ptxas's) stdout and stderr caught at the fd level."""
    from ptxasw.driver import ptxas as wrapper

    outdir.mkdir(parents=True, exist_ok=True)
    target = outdir / "k.cubin"
    target.unlink(missing_ok=True)
    saved_env = {k: os.environ.get(k) for k in (*env, "PTXASW_PIPELINE", "PTXASW_DISABLE")}
    os.environ.pop("PTXASW_PIPELINE", None)
    os.environ.pop("PTXASW_DISABLE", None)
    os.environ.update(env)
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            rc = wrapper.main([*args, "-o", str(target)])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        out.seek(0)
        err.seek(0)
        return _Run(rc, out.read(), err.read(), target.read_bytes() if target.exists() else None)


# --------------------------------------------------------------------------
# Adding up


_COLUMNS = ("cases", "tracebacks", "hangs", "bad_errors", "wrong_outputs", "traced", "dropin", "rejected")


@dataclass
class Tally:
    """Counts by mutation kind, and the findings themselves."""

    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def add(self, r: CaseResult) -> None:
        row = self.rows.setdefault(r.kind, dict.fromkeys(_COLUMNS, 0))
        row["cases"] += 1
        row["traced"] += r.traced
        row["dropin"] += r.dropin
        row["rejected"] += r.rejected_rewrite
        for f in r.findings:
            key = {"traceback": "tracebacks", "hang": "hangs", "bad_error": "bad_errors"}.get(
                f.problem, "wrong_outputs"
            )
            row[key] += 1
        self.findings.extend(r.findings)

    def total(self) -> dict[str, int]:
        return {c: sum(r[c] for r in self.rows.values()) for c in _COLUMNS}

    def to_json(self) -> dict[str, Any]:
        return {
            "by_kind": self.rows,
            "total": self.total(),
            "findings": [dataclasses.asdict(f) for f in self.findings],
        }

    def table(self) -> str:
        head = f"{'mutation':<16}" + "".join(f"{c:>14}" for c in _COLUMNS)
        lines = [head, "-" * len(head)]
        for kind in sorted(self.rows):
            lines.append(f"{kind:<16}" + "".join(f"{self.rows[kind][c]:>14,}" for c in _COLUMNS))
        total = self.total()
        lines.append(f"{'total':<16}" + "".join(f"{total[c]:>14,}" for c in _COLUMNS))
        return "\n".join(lines)
