"""``ptxasw rewrite``: shuffle synthesis of a PTX file, written to another.

Each kernel is analysed, its shuffles proven on a copy, and the proven ones
emitted (`ptxasw.synth.synthesize`); a line per kernel on stderr says what
was done. The output is never the input file. ``--mode noload|nocorner``
are the paper's ablations: wrong at warp edges, for measurement only.
``--jobs N`` rewrites the kernels in N processes (`ptxasw.synth.workers`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ptxasw.cli.common import (
    fail,
    jobs_option,
    select_kernels,
    synthesis_assembler,
    synthesis_options,
    write_text,
)
from ptxasw.errors import PtxError
from ptxasw.parser import parse_ptx, read_text

__all__ = ["rewrite_command"]


@click.command("rewrite")
@click.argument("source", metavar="IN.ptx")
@click.option("-o", "--output", "output", required=True, metavar="OUT.ptx", help="Where to write the PTX.")
@click.option("--report", "report_path", metavar="R.json", help="Also write the analysis report (JSON).")
@jobs_option
@synthesis_options
def rewrite_command(
    source: str,
    output: str,
    report_path: str | None,
    jobs: int,
    kernels: tuple[str, ...],
    max_delta: int,
    mode: str,
    time_budget: float,
    rounding: str,
) -> None:
    """Replace global loads a neighbouring lane already loaded by warp shuffles."""
    import json

    from ptxasw.ir.printer import print_module
    from ptxasw.synth.detect import Options
    from ptxasw.synth.report import report
    from ptxasw.synth.workers import Source, synthesise

    try:
        if source != "-" and output != "-" and Path(output).resolve() == Path(source).resolve():
            raise PtxError(f"{output}: the output would overwrite the input")
        original = read_text(source)
        module = parse_ptx(original, "<stdin>" if source == "-" else source)
        kernels = select_kernels([fn.name for fn in module.kernels], kernels)
    except PtxError as exc:
        fail(exc)
    if mode != "normal":
        click.echo(
            f"ptxasw: warning: --mode {mode} gives wrong values at warp edges (measurement only)", err=True
        )
    assemble = synthesis_assembler(module, rounding)
    options = Options(
        max_delta=max_delta, mode=mode, time_s=time_budget, rounding=rounding, assemble=assemble
    )
    # The report's source lines come from the module as it was (`synthesise`
    # takes them before): the rewrite takes the replaced loads, and the .loc
    # lines above them, out of it.
    results = synthesise(
        [Source(source, module, original)],
        lambda _: options,
        set(kernels) or None,
        jobs,
        rewrite=True,
        describe=_summary,
    )
    for result in results:
        click.echo(result.summary, err=True)
    text = print_module(module, {r.name: r.text for r in results if r.text is not None})
    try:
        if output == "-":
            sys.stdout.write(text)
        else:
            write_text(output, text)
        if report_path:
            rows = [result.row for result in results]
            data = report(rows, {source: (module, original)}, options)
            write_text(report_path, json.dumps(data, indent=1))
    except PtxError as exc:
        fail(exc)


def _summary(plan: object) -> str:
    from ptxasw.synth.detect import KernelPlan

    assert isinstance(plan, KernelPlan)
    chosen = plan.chosen
    deltas = [abs(v.delta) for v in chosen if v.delta is not None]
    avg = f", average |N| {sum(deltas) / len(deltas):.2f}" if deltas else ""
    status = "" if plan.analysis.complete else f" (partial: {plan.analysis.reason})"
    return (
        f"ptxasw: {plan.kernel}: {len(chosen)} of {plan.global_loads} global loads shuffled{avg}, "
        f"all proven, {plan.seconds:.2f} s{status}"
    )
