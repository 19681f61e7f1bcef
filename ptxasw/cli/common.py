"""What every command shares: one way to report bad input or output and stop."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from ptxasw.errors import PtxError

#: How many names a diagnostic lists before "... and N more" (a file may have 30k kernels).
MAX_LISTED = 10


def fail(exc: PtxError) -> NoReturn:
    """Print ``ptxasw: error: file:line:col: message`` and exit 1."""
    click.echo(f"ptxasw: error: {exc}", err=True)
    sys.exit(1)


def output_error(path: str | Path, exc: OSError) -> PtxError:
    """The one-line error for an output we could not write (said like an input error)."""
    return PtxError(f"cannot write {path}: {exc.strerror or exc}")


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (never creating directories); a `PtxError` if we cannot."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise output_error(path, exc) from None


def name_list(names: Sequence[str], limit: int = MAX_LISTED) -> str:
    """``a, b, c`` -- at most ``limit`` names, then ``... and N more``; ``none`` if empty."""
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    rest = len(names) - limit
    return f"{shown}, ... and {rest} more" if rest > 0 else shown


def select_kernels(names: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The kernels of ``names`` that ``-k`` names ``wanted`` select: a
    kernel's own name, or the function name in mangled ones (``-k stencil``
    for ``_Z7stencilPKfPfi``, every overload: `ptxasw.parser.kernel_names`);
    a `PtxError` for the first that selects none."""
    from ptxasw.parser.kernel_names import resolve_kernels

    chosen, missing = resolve_kernels(names, wanted)
    if missing:
        raise PtxError(f"no kernel named {missing[0]} (kernels: {name_list(names)})")
    return chosen


def synthesis_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the commands that run shuffle synthesis (rewrite, analyze)."""
    from ptxasw.synth.detect import MODES

    decorators = [
        click.option("-k", "--kernel", "kernels", multiple=True, help="Only this kernel (repeatable)."),
        click.option(
            "--max-delta",
            type=click.IntRange(0, 31),
            default=31,
            show_default=True,
            help="Largest shuffle distance |N| (the paper used 1 for application kernels).",
        ),
        click.option(
            "--mode",
            type=click.Choice(MODES),
            default="normal",
            show_default=True,
            help="normal: always correct; noload/nocorner: the paper's ablations, wrong at warp edges.",
        ),
        click.option(
            "--time-budget",
            type=click.FloatRange(min=0.0, min_open=True),
            default=10.0,
            show_default=True,
            help="Analysis seconds per kernel (for each of the two analyses: original and proof).",
        ),
        click.option(
            "--rounding",
            type=click.Choice(["ptxas", "ptx"]),
            default="ptxas",
            show_default=True,
            help="ptxas: keep the rounding ptxas gives the original (sums like a*b-c*d pinned to the "
            "product it fuses, asked of the ptxas on PATH for the module's .target); ptx: equal under "
            "PTX's semantics only, ptxas may fuse another product.",
        ),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def jobs_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--jobs N`` of the commands that synthesise kernels (`ptxasw.synth.workers`)."""
    return click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=0),
        default=1,
        show_default=True,
        help="Synthesise kernels in this many processes (0: one per core); the result is the same.",
    )(command)


def synthesis_assembler(module: Any, rounding: str) -> Any:
    """The ptxas the synthesis asks which products it fuses (`ptxasw.synth.pinning`):
    the one the drop-in would run, for the module's ``.target``; None with
    ``--rounding ptx``, or when there is no ptxas or no target."""
    if rounding != "ptxas":
        return None
    from ptxasw.driver.assembler import assembler, module_arch
    from ptxasw.driver.ptxas import WrapperError, find_real_ptxas

    arch = module_arch(module)
    try:
        real = find_real_ptxas()
    except WrapperError:
        return None
    return assembler([str(real), f"-arch={arch}"]) if arch else None


@contextlib.contextmanager
def progress_bar(label: str, total: int, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr (only on a terminal), ``label`` first;
    yields "now analysing NAME" (`ptxasw trace`, `ptxasw analyze`: a
    generated file of 12,000 kernels takes minutes)."""
    if not enabled or total == 0:
        yield lambda name: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(file=sys.stderr),
        transient=True,
        # Results printed to the same terminal go above the bar; to a pipe or file, untouched.
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=False,
    )
    task = progress.add_task("", total=total)
    started = 0

    def show(name: str) -> None:
        nonlocal started
        progress.update(task, completed=started, description=name[:60])
        started += 1

    with progress:
        yield show
