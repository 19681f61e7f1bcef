"""``ptxasw trace``: the memory trace of each kernel, from the symbolic emulator.

For every kernel (or the ``--kernel`` ones) and every flow the emulator
explored, this prints the loads and stores in execution order with their
symbolic addresses, in the style of the PTXASW paper's Listing 5::

    flow 0 [ret]
      if (%tid.x + %ctaid.x*%ntid.x) >= 0x1 && ...
      #4 LD.global.32: 0x8 + load(param_0) + 0x4*sext64(-0x1 + %tid.x + ...)  ; ld.global.nc.f32 ...

or, with ``--json``, one JSON document with every flow, access, path
condition and statistic (addresses also as SMT-LIB terms). The notation is
exact (`ptxasw.emulator.symbolic.domain`: bit-vector arithmetic at the
operands' width, extensions and slices written out); a long subterm used more
than once prints once as ``let t1 = ...`` (JSON: ``terms``). A kernel whose
budget ran out is reported as ``partial`` with the reason; with ``--strict``,
an instruction the emulator cannot model stops the command instead (one
line, exit 1) rather than becoming an unknown value. Bad input is one
line, ``file:line:col: message``, with exit status 1 (``PTXASW_DEBUG=1``
shows a traceback for an internal error instead).

Files of tens of thousands of kernels are handled as a stream: the module is
parsed once (with ``--kernel``, only those kernels are parsed: the others'
lines are blanked, `ptxasw.parser.outline`), then each kernel is analysed,
printed and forgotten before the next (the JSON document is written incrementally, or one object a line with
``--json-lines``), so memory is that of the largest kernel's analysis and the
first results appear at once. ``--budget`` bounds the whole command: kernels
not reached in time are listed as ``skipped`` with the reason (the run's
status is then ``partial``). On a terminal, a progress bar runs on stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from ptxasw.cli.common import progress_bar, select_kernels
from ptxasw.errors import PtxError, UnsupportedInstruction
from ptxasw.parser import read_kernels

if TYPE_CHECKING:
    from ptxasw.emulator.symbolic.snapshot import Snapshot

__all__ = ["trace_command"]

_SPACES = {
    "global": ".global",
    "shared": ".shared",
    "local": ".local",
    "const": ".const",
    "param": ".param",
    "generic": "generic",
}


@click.command("trace")
@click.argument("source", metavar="IN.ptx")
@click.option("-k", "--kernel", "kernels", multiple=True, help="Only this kernel (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--json-lines", is_flag=True, help="Print one JSON object per kernel per line (implies --json)."
)
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0.0, min_open=True),
    default=10.0,
    show_default=True,
    help="Wall-clock seconds per kernel; past it the kernel is reported as partial.",
)
@click.option(
    "--budget",
    "total_budget",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Wall-clock seconds for the analyses of all kernels together (counted after parsing); "
    "kernels not reached are listed as skipped.",
)
@click.option(
    "--max-paths",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Flows per kernel; further forks follow one side only (partial).",
)
@click.option(
    "--solver-timeout",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Milliseconds per solver query (undecided queries are treated conservatively).",
)
@click.option(
    "--space",
    "spaces",
    multiple=True,
    type=click.Choice(sorted(_SPACES)),
    help="Only accesses to this state space (repeatable; default: all).",
)
@click.option("--shared", is_flag=True, help="Repeat the accesses a forked flow shares with its parent.")
@click.option(
    "--strict",
    is_flag=True,
    help="An instruction the emulator cannot model is an error (exit 1), not an unknown value.",
)
def trace_command(
    source: str,
    kernels: tuple[str, ...],
    as_json: bool,
    json_lines: bool,
    time_budget: float,
    total_budget: float | None,
    max_paths: int,
    solver_timeout: int,
    spaces: tuple[str, ...],
    shared: bool,
    strict: bool,
) -> None:
    """Print the symbolic memory trace of each kernel and flow."""
    from ptxasw.analysis.inline import TRAMPOLINES
    from ptxasw.emulator.symbolic import batch
    from ptxasw.emulator.symbolic.executor import Budget

    try:
        with _status(f"parsing {source}", enabled=sys.stderr.isatty()):
            # With -k, only those kernels are parsed (a large file's others
            # would cost more than the analysis), and of the device functions
            # only those called by name, which the analysis inlines; names:
            # all of the file's kernels.
            module, every = read_kernels(source, kernels, called_only=True, trampolines=TRAMPOLINES)
        names = every if every is not None else [fn.name for fn in module.kernels]
        kernels = select_kernels(names, kernels)
    except PtxError as exc:
        click.echo(f"ptxasw: error: {exc}", err=True)
        sys.exit(1)
    selected = list(dict.fromkeys(kernels)) or names
    budget = Budget(time_s=time_budget, max_paths=max_paths, solver_timeout_ms=solver_timeout)
    deadline = None if total_budget is None else batch.now() + total_budget
    keep = [_SPACES[s] for s in spaces] or None
    out: _Output
    if json_lines:
        out = _JsonLinesOutput(keep)
    elif as_json:
        out = _JsonOutput(source, keep)
    else:
        out = _TextOutput(source, keep, shared)
    debug = bool(os.environ.get("PTXASW_DEBUG"))
    skipped = errors = 0
    with progress_bar("trace", len(selected), enabled=sys.stderr.isatty()) as show:
        results = batch.iter_analyses(
            module, selected, budget, deadline=deadline, on_start=show, catch=not debug, strict=strict
        )
        for result in _stop_at_unsupported(results, out):
            out.kernel(result)
            if isinstance(result, batch.Skipped):
                if result.status == "error":
                    errors += 1
                    # bad PTX in this kernel (a branch to an unknown label) is the user's error, located
                    why: object = result.error
                    if not isinstance(why, PtxError):
                        why = f"internal error while analysing {result.kernel}: {result.reason}"
                    click.echo(f"ptxasw: error: {why}", err=True)
                else:
                    skipped += 1
            del result  # printed: let it go before the next kernel is analysed
    out.close("partial" if skipped or errors else "complete", skipped)
    if skipped:
        click.echo(
            f"ptxasw: note: {skipped} of {len(selected)} kernels skipped: "
            f"the overall budget of {total_budget:g} s was spent",
            err=True,
        )
    if errors:
        sys.exit(1)


def _stop_at_unsupported(results: Iterator[Any], out: _Output) -> Iterator[Any]:
    """The results until ``--strict`` meets an instruction it cannot model: then
    the output is closed (status ``error``), the one-line error printed, exit 1."""
    try:
        yield from results
    except UnsupportedInstruction as exc:
        out.close("error", 0)
        click.echo(f"ptxasw: error: {exc}", err=True)
        sys.exit(1)


@contextlib.contextmanager
def _status(message: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr while the file is parsed (a minute for 50 MB; only on a terminal)."""
    if not enabled:
        yield
        return
    from rich.console import Console

    with Console(file=sys.stderr).status(message):
        yield


class _Output:
    """Where results go, one kernel at a time (written and flushed at once)."""

    _terms: Snapshot | None = None

    def kernel(self, result: Any) -> None:
        raise NotImplementedError

    def terms(self) -> Snapshot:
        """The terms read for the kernels printed before, shared by the next
        one while their number stays bounded (`snapshot.shared`)."""
        from ptxasw.emulator.symbolic.snapshot import shared

        self._terms = shared(self._terms)
        return self._terms

    def close(self, status: str, skipped: int) -> None:
        raise NotImplementedError


class _TextOutput(_Output):
    def __init__(self, source: str, keep: list[str] | None, shared: bool) -> None:
        self.source, self.keep, self.shared = source, keep, shared
        self.count = 0

    def kernel(self, result: Any) -> None:
        text = result.format(spaces=self.keep, shared=self.shared, snapshot=self.terms())
        _write(("\n\n" if self.count else "") + text)
        self.count += 1

    def close(self, status: str, skipped: int) -> None:
        _write("\n" if self.count else f"{self.source}: no kernels\n")


class _JsonOutput(_Output):
    """``{"file": ..., "kernels": [...], "status": ..., "skipped": N}``, written as it grows."""

    def __init__(self, source: str, keep: list[str] | None) -> None:
        self.keep = keep
        self.count = 0
        _write('{\n  "file": ' + json.dumps(source) + ',\n  "kernels": [')

    def kernel(self, result: Any) -> None:
        body = json.dumps(result.to_json(self.keep, self.terms()), indent=2).replace("\n", "\n    ")
        _write(("," if self.count else "") + "\n    " + body)
        self.count += 1

    def close(self, status: str, skipped: int) -> None:
        end = "\n  ]" if self.count else "]"
        _write(f'{end},\n  "status": "{status}",\n  "skipped": {skipped}\n}}\n')


class _JsonLinesOutput(_Output):
    def __init__(self, keep: list[str] | None) -> None:
        self.keep = keep

    def kernel(self, result: Any) -> None:
        _write(json.dumps(result.to_json(self.keep, self.terms())) + "\n")

    def close(self, status: str, skipped: int) -> None:
        pass


def _write(text: str) -> None:
    # sys.stdout at call time: the progress bar may redirect it while it runs.
    sys.stdout.write(text)
    sys.stdout.flush()
