"""``ptxasw fmt``: print a module back from the IR (normalised layout, same meaning)."""

from __future__ import annotations

import click

from ptxasw.cli.common import fail, write_text
from ptxasw.errors import PtxError
from ptxasw.ir.printer import print_module
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
        text = print_module(read_ptx(source))
        if output == "-":
            click.echo(text, nl=False)
        else:
            write_text(output, text)
    except PtxError as exc:
        fail(exc)
