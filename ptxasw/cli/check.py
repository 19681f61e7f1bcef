"""``ptxasw check``: parse files, report errors, warn about what the table does not know."""

from __future__ import annotations

import sys
from collections import Counter

import click

from ptxasw import ir
from ptxasw.errors import PtxError
from ptxasw.ir import isa
from ptxasw.parser import read_ptx


@click.command("check")
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
