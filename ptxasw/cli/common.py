"""What every command shares: one way to report bad input and stop."""

from __future__ import annotations

import sys

import click

from ptxasw.errors import PtxError


def fail(exc: PtxError) -> None:
    click.echo(f"ptxasw: error: {exc}", err=True)
    sys.exit(1)
