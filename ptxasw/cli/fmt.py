"""``ptxasw fmt``: print a module back from the IR (normalised layout, same meaning)."""

from __future__ import annotations

import sys

import click

from ptxasw.cli.common import fail, output_error
from ptxasw.errors import PtxError
from ptxasw.ir.printer import write_module
from ptxasw.parser import read_ptx


@click.command("fmt")
@click.argument("source", metavar="IN.ptx")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="Where to write (default: stdout).",
)
def fmt(source: str, output: str) -> None:
    """Print the module back from the IR (normalised layout, same meaning)."""
    try:
        module = read_ptx(source)
        # Streamed item by item: the text of a 50 MB module is never held whole.
        if output == "-":
            write_module(module, sys.stdout)
        else:
            try:
                with open(output, "w", encoding="utf-8") as f:
                    write_module(module, f)
            except OSError as exc:
                raise output_error(output, exc) from None
    except PtxError as exc:
        fail(exc)
