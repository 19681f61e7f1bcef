"""``ptxasw trace``: the memory trace of each kernel, from the symbolic emulator.

For every kernel (or the ``--kernel`` ones) and every flow the emulator
explored, this prints the loads and stores in execution order with their
symbolic addresses, in the style of the PTXASW paper's Listing 5::

    flow 0 [ret]
      if (%tid.x + %ctaid.x*%ntid.x) >= 0x1 && ...
      #4 LD.global.32: 0x8 + load(param_0) + 0x4*(-0x1 + %tid.x + ...)  ; ld.global.nc.f32 ...

or, with ``--json``, one JSON document with every flow, access, path
condition and statistic (addresses also as SMT-LIB terms). A kernel whose
budget ran out is reported as ``partial`` with the reason. Bad input is one
line, ``file:line:col: message``, with exit status 1 (``PTXASW_DEBUG=1``
shows a traceback for an internal error instead).
"""

from __future__ import annotations

import json
import os
import sys

import click

from ptxasw.errors import PtxError
from ptxasw.parser import read_ptx

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
    "--time-budget",
    type=click.FloatRange(min=0.0, min_open=True),
    default=10.0,
    show_default=True,
    help="Wall-clock seconds per kernel; past it the kernel is reported as partial.",
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
def trace_command(
    source: str,
    kernels: tuple[str, ...],
    as_json: bool,
    time_budget: float,
    max_paths: int,
    solver_timeout: int,
    spaces: tuple[str, ...],
    shared: bool,
) -> None:
    """Print the symbolic memory trace of each kernel and flow."""
    from ptxasw.emulator.symbolic.executor import Budget, analyze_kernel

    try:
        module = read_ptx(source)
        names = [fn.name for fn in module.kernels]
        for name in kernels:
            if name not in names:
                known = ", ".join(names) or "none"
                raise PtxError(f"no kernel named {name} (kernels: {known})")
        selected = list(kernels) or names
        budget = Budget(time_s=time_budget, max_paths=max_paths, solver_timeout_ms=solver_timeout)
        keep = [_SPACES[s] for s in spaces] or None
        results = []
        for name in selected:
            try:
                results.append(analyze_kernel(module, name, budget))
            except PtxError:
                raise
            except Exception as exc:  # an emulator bug: one line, not a traceback
                if os.environ.get("PTXASW_DEBUG"):
                    raise
                why = f"{type(exc).__name__}: {exc}"
                raise PtxError(f"internal error while analysing {name}: {why}") from None
    except PtxError as exc:
        click.echo(f"ptxasw: error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        doc = {"file": source, "kernels": [r.to_json(keep) for r in results]}
        click.echo(json.dumps(doc, indent=2))
        return
    if not results:
        click.echo(f"{source}: no kernels")
        return
    click.echo("\n\n".join(r.format(spaces=keep, shared=shared) for r in results))
