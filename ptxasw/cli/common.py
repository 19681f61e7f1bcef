"""What every command shares: one way to report bad input or output and stop."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

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
