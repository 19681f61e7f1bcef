"""``ptxasw analyze``: where shuffles are possible, and why the other loads are not.

For each kernel of each file the paper's Table-2 columns (global loads,
shuffles, average |N|, analysis time), then per load its PTX line, the
source line where ``.loc`` gives one, the source load and N, the corner-case
lanes, the proof, or why not. ``--json`` prints the report
(`ptxasw.synth.report`); ``--html OUT.html`` writes a page with the PTX and
the highlighted loads (`ptxasw.synth.html`). Nothing is rewritten.
``--jobs N`` analyses the kernels in N processes (`ptxasw.synth.workers`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import click

from ptxasw.cli.common import (
    fail,
    jobs_option,
    progress_bar,
    select_kernels,
    synthesis_assembler,
    synthesis_options,
    write_text,
)
from ptxasw.errors import PtxError
from ptxasw.parser import parse_ptx, read_text

__all__ = ["analyze_command"]


@click.command("analyze")
@click.argument("sources", metavar="IN.ptx...", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html_path", metavar="OUT.html", help="Write the report as an HTML page.")
@jobs_option
@synthesis_options
def analyze_command(
    sources: tuple[str, ...],
    as_json: bool,
    html_path: str | None,
    jobs: int,
    kernels: tuple[str, ...],
    max_delta: int,
    mode: str,
    time_budget: float,
    rounding: str,
) -> None:
    """Report the shuffle opportunities of each kernel (nothing is rewritten)."""
    from ptxasw.synth.detect import Options
    from ptxasw.synth.report import report
    from ptxasw.synth.workers import Source, synthesise

    options = Options(max_delta=max_delta, mode=mode, time_s=time_budget)
    try:
        parsed = [Source(path, *_read(path)) for path in sources]
        every = sorted({fn.name for source in parsed for fn in source.module.kernels})
        kernels = select_kernels(every, kernels)
    except PtxError as exc:
        fail(exc)

    def options_for(module: Any) -> Options:
        assemble = synthesis_assembler(module, rounding)
        return dataclasses.replace(options, rounding=rounding, assemble=assemble)

    results = synthesise(
        parsed,
        options_for,
        set(kernels) or None,
        jobs,
        progress=lambda total: progress_bar("analyze", total, enabled=sys.stderr.isatty()),
    )
    modules = {source.path: (source.module, source.text) for source in parsed}
    data = report([result.row for result in results], modules, options)
    try:
        if html_path:
            from ptxasw.synth.html import render_html

            write_text(html_path, render_html(data))
    except PtxError as exc:
        fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        _print_text(data)


def _read(path: str) -> tuple[Any, str]:
    """The module and its text (the report shows the PTX), from one read of the file."""
    text = read_text(path)
    return parse_ptx(text, "<stdin>" if path == "-" else path), text


def _print_text(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, emoji=False, markup=False, width=None if sys.stdout.isatty() else 200)
    table = Table(title="shuffle synthesis", show_lines=False)
    for column in ("kernel", "file", "global loads", "shuffles", "average |N|", "time (s)", "status"):
        table.add_column(column, justify="right" if column not in ("kernel", "file", "status") else "left")
    for k in data["kernels"]:
        avg = "-" if k["average_delta"] is None else f"{k['average_delta']:.2f}"
        status = k["status"] if k["status"] == "complete" else f"{k['status']}: {k['reason']}"
        table.add_row(
            k["name"],
            Path(k["file"]).name,
            str(k["loads"]),
            str(k["shuffles"]),
            avg,
            f"{k['analysis_seconds']:.2f}",
            status,
        )
    console.print(table)
    from ptxasw.synth.html import element_note

    for k in data["kernels"]:
        console.print()
        console.print(f"{k['name']} ({k['file']})", style="bold")
        for load in k["loads_detail"]:
            where = f"{Path(k['file']).name}:{load['line']}"
            source = f" [{load['source_line']}]" if load["source_line"] else ""
            if load["status"] == "blocked":
                what = f"load: {load['reason']}"
            elif load["status"] == "reuse":
                line = load["source_load_line"]
                what = f"reuse of the value loaded at line {line}{element_note(load)} (N = 0)"
            else:
                what = (
                    f"shuffle N = {load['delta']:+d} from line {load['source_load_line']}"
                    f"{element_note(load)}; {load['corner_lanes']}"
                )
            if load["assumptions"]:
                what += f"; assumes {'; '.join(load['assumptions'])}"
            console.print(f"  {where}{source}: {what}", soft_wrap=True)
