"""GCC's nvptx ``as`` shim: run ptxasw's pipeline on the PTX, then nvptx-tools' ``as``.

Why: for ``-foffload=nvptx-none`` GCC does not call ptxas at all. Its offload
driver assembles with nvptx-tools' ``as`` (``DIR/as``, found through ``-B DIR``)
and embeds the PTX text in the program, for the CUDA driver to JIT at run
time. So for GCC the place to rewrite PTX is ``as``. GCC calls it as
``as [--no-verify ...] -o OUT.o IN.s``; nvptx-tools' ``as`` reads standard
input when no file is given.

Use it with ``-foffload-options=nvptx-none=-B<repo>/wrappers/nvptx-none``
(that folder holds an ``as`` script that runs this module). The fail-open
machinery is the ``ptxas`` wrapper's (`ptxasw.driver.ptxas`).

Environment: ``PTXASW_REAL_AS`` (path of nvptx-tools' ``as``; else
``nvptx-none-as`` on PATH, ``/usr/bin/nvptx-none-as`` or GCC's
``accel/nvptx-none/as``), plus the wrapper's ``PTXASW_DISABLE``,
``PTXASW_TIMEOUT``, ``PTXASW_LOG`` and ``PTXASW_PIPELINE``.
"""

from __future__ import annotations

import glob
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from ptxasw.driver.ptxas import (
    Outcome,
    Scratch,
    StagedOutput,
    bypass_status,
    child_env,
    conclude,
    console_main,
    copy_failed,
    find_real_tool,
    log_record,
    passthrough,
    pipeline_idle,
    read_stdin,
    run_transformed,
    stage_target,
    timeout_seconds,
    transform_or_skip,
    transform_ptx,
)

ENV_REAL_AS = "PTXASW_REAL_AS"
ENV_VISITED_AS = "PTXASW_VISITED_AS"
AS_SHIM_MARKER = b"ptxasw.driver.nvptx_as"

#: nvptx-tools' ``as`` short options (getopt "o:I:m:v") that take a value.
_AS_VALUE_SHORT = frozenset("oIm")
_AS_PASSTHROUGH = frozenset({"--help", "--version"})


def gcc_markers(text: str) -> Counter[str]:
    """GCC's ``// BEGIN ...`` marker comments, which nvptx-tools' ``ld`` links by.

    nvptx-ld finds the definitions and references of an object through lines
    like ``// BEGIN GLOBAL FUNCTION DECL: sinf``; PTX without them links
    "successfully" with symbols missing, and fails only when the driver JITs it.
    """
    return Counter(line.strip() for line in text.splitlines() if line.lstrip().startswith("// BEGIN"))


def keep_markers(outcome: Outcome, original: str) -> Outcome:
    """Fall back when the rewritten PTX lost any of GCC's marker comments."""
    if outcome.text is None:
        return outcome
    lost = gcc_markers(original) - gcc_markers(outcome.text)
    if not lost:
        return outcome
    first = next(iter(lost))
    return Outcome(
        outcome.name,
        "fallback",
        passes=outcome.passes,
        seconds=outcome.seconds,
        error=f"the rewritten PTX lost {sum(lost.values())} of GCC's marker comments (like '{first}') "
        "that nvptx-tools' ld needs",
    )


def find_real_as(env: Mapping[str, str] | None = None) -> Path:
    """nvptx-tools' assembler, never one of our shims."""
    fallbacks = [Path("/usr/bin/nvptx-none-as"), Path("/usr/local/bin/nvptx-none-as")]
    fallbacks += [Path(p) for p in sorted(glob.glob("/usr/lib/gcc/*/*/accel/nvptx-none/as"))]
    fallbacks += [Path(p) for p in sorted(glob.glob("/usr/local/nvptx-none/bin/as"))]
    return find_real_tool(
        tool="nvptx-none-as",
        env_var=ENV_REAL_AS,
        names=["nvptx-none-as"],
        fallbacks=fallbacks,
        marker=AS_SHIM_MARKER,
        visited_var=ENV_VISITED_AS,
        env=env,
    )


def as_inputs(argv: Sequence[str]) -> list[int]:
    """Indexes of the input files in an nvptx ``as`` command line (getopt rules)."""
    inputs: list[int] = []
    i = 0
    only_files = False
    while i < len(argv):
        tok = argv[i]
        if only_files or tok == "-" or not tok.startswith("-"):
            inputs.append(i)
        elif tok == "--":
            only_files = True
        elif not tok.startswith("--"):
            for j, ch in enumerate(tok[1:], start=1):
                if ch in _AS_VALUE_SHORT:
                    if j == len(tok) - 1:
                        i += 1  # the value is the next token
                    break
        i += 1
    return inputs


def run_as(argv: Sequence[str], *, allow_exec: bool = False) -> int:
    """Transform the PTX input, run nvptx-tools' ``as``, log. Returns its exit code."""
    start = time.monotonic()
    real = find_real_as()
    env = child_env(real, ENV_VISITED_AS)
    record = log_record("as", argv, real)
    orig_cmd = [str(real), *argv]
    status = bypass_status(ENV_VISITED_AS)
    if status is None and any(a in _AS_PASSTHROUGH for a in argv):
        status = "passthrough"
    if status is not None:
        record["status"] = status
        return passthrough(orig_cmd, env, record, start, allow_exec=allow_exec)

    timeout = timeout_seconds()
    # Nothing to read or transform when the pipeline could change nothing (`pipeline_idle`).
    idle = pipeline_idle()
    if idle is not None:
        record["reason"] = idle
    positions = [i for i in as_inputs(argv) if argv[i] != "-"] if idle is None else []
    from_stdin = not positions and idle is None
    new_argv = list(argv)
    outcomes: list[Outcome] = []
    orig_stdin: bytes | None = None
    new_stdin: bytes | None = None
    changed = False
    rename: dict[str, str] = {}
    scratch = Scratch("ptxasw-as-")
    staged = _stage_as_output(argv)
    if staged is not None:
        position, staging = staged
        new_argv[position] = orig_cmd[position + 1] = str(staging.staged)
        rename[str(staging.staged)] = argv[position]
    try:
        if from_stdin:
            orig_stdin = new_stdin = read_stdin()
            text = orig_stdin.decode("utf-8", "surrogateescape")
            outcome = keep_markers(transform_ptx(text, "<stdin>", timeout), text)
            outcomes.append(outcome)
            if outcome.text is not None:
                new_stdin = outcome.text.encode("utf-8", "surrogateescape")
                changed = True
        for index, pos in enumerate(positions):
            name = argv[pos]
            try:
                data = Path(name).read_bytes()
            except OSError:
                continue  # as will say it cannot open it
            text = data.decode("utf-8", "surrogateescape")
            outcome = keep_markers(transform_or_skip(text, name, timeout, outcomes), text)
            if outcome.text is not None:
                try:
                    new_argv[pos] = str(scratch.copy(index, name, outcome.text))
                    rename[new_argv[pos]] = name
                    changed = True
                except OSError as exc:
                    outcome = copy_failed(outcome, exc)
            outcomes.append(outcome)
        for outcome in outcomes:
            if outcome.status == "fallback":
                print(outcome.warning(), file=sys.stderr, flush=True)
        run = run_transformed(
            [str(real), *new_argv],
            orig_cmd,
            env,
            new_stdin=new_stdin,
            orig_stdin=orig_stdin,
            changed=changed,
            rename=rename,
        )
        if staged is not None and run.returncode == 0:
            try:
                staged[1].commit()
            except OSError as exc:
                why = exc.strerror or exc
                print(f"ptxasw: error: cannot write {staged[1].target}: {why}", file=sys.stderr)
                run.returncode = 1
    finally:
        scratch.close()
        if staged is not None:
            staged[1].discard()
    return conclude(record, run, outcomes, start, "nvptx-none-as", "unchanged" if idle is not None else "ok")


def _stage_as_output(argv: Sequence[str]) -> tuple[int, StagedOutput] | None:
    """The position of the one ``-o FILE`` value and its staging, so that a
    build killed while ``as`` writes never leaves a partial object (as the
    ptxas wrapper does); None when there is not exactly one ``-o FILE``."""
    outs = [i for i, a in enumerate(argv) if a == "-o"]
    if len(outs) != 1 or outs[0] + 1 >= len(argv) or any(a.startswith("-o") and a != "-o" for a in argv):
        return None
    position = outs[0] + 1
    staging = stage_target(Path(argv[position]))
    return None if staging is None else (position, staging)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``ptxasw-nvptx-as``: behaves as nvptx-tools' ``as``."""
    return console_main(run_as, argv, find_real_as, ENV_VISITED_AS)


if __name__ == "__main__":
    sys.exit(main())
