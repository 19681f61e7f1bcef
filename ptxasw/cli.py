"""The ``ptxasw`` command line.

Every command reads PTX through the one front end and reports bad input as a
single ``file:line:col: message`` line with exit code 1, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path
from typing import ClassVar

import click

from ptxasw import __version__
from ptxasw.errors import PtxError
from ptxasw.parser import ir, isa, print_module, read_ptx
from ptxasw.toolkit import toolkit_group


def fail(exc: PtxError) -> None:
    click.echo(f"ptxasw: error: {exc}", err=True)
    sys.exit(1)


class LazyGroup(click.Group):
    """Subcommands whose modules load only when used.

    The emulator commands pull in NumPy and Z3, a few hundred milliseconds
    that ``fmt`` and ``check`` should not pay.
    """

    lazy: ClassVar[dict[str, str]] = {
        "run": "ptxasw.emulator.run_cli:run_command",
        "trace": "ptxasw.emulator.trace_cli:trace_command",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attr = self.lazy[name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="ptxasw")
def main() -> None:
    """ptxasw: PTX analysis and rewriting that sits where ptxas sits."""


@main.command()
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
    except PtxError as exc:
        fail(exc)
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text)


@main.command()
@click.argument("sources", metavar="IN.ptx...", nargs=-1, required=True)
@click.option("-q", "--quiet", is_flag=True, help="Print errors only.")
def check(sources: tuple[str, ...], quiet: bool) -> None:
    """Parse PTX files; report errors, and warn about modifiers and operand counts the table does not know."""
    failed = False
    for source in sources:
        try:
            module = read_ptx(source)
        except PtxError as exc:
            click.echo(f"ptxasw: error: {exc}", err=True)
            failed = True
            continue
        header = [i for i in module.items if not isinstance(i, ir.Comment)][:2]
        if not (header and isinstance(header[0], ir.Version)):
            click.echo(f"ptxasw: error: {source}:1:1: the module must start with .version", err=True)
            failed = True
            continue
        if len(header) < 2 or not isinstance(header[1], ir.Target):
            click.echo(f"ptxasw: error: {header[0].loc}: .version must be followed by .target", err=True)
            failed = True
            continue
        counts: Counter[str] = Counter()
        for inst in module.instructions():
            counts[inst.opcode] += 1
            for modifier in isa.unknown_modifiers(inst):
                click.echo(
                    f"ptxasw: warning: {inst.loc}: '{inst.opcode}' does not take '{modifier}'", err=True
                )
            problem = isa.operand_count_problem(inst)
            if problem is not None:
                click.echo(f"ptxasw: warning: {inst.loc}: {problem}", err=True)
        if not quiet:
            kernels = len(module.kernels)
            functions = len(module.functions) - kernels
            click.echo(
                f"{source}: ok: {kernels} kernels, {functions} functions, "
                f"{sum(counts.values())} instructions, {len(counts)} opcodes"
            )
    sys.exit(1 if failed else 0)


main.add_command(toolkit_group)


if __name__ == "__main__":  # pragma: no cover
    main()
