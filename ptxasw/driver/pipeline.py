"""The pass pipeline the ``ptxas`` wrapper and ``ptxasw`` commands run.

Modelled on LLVM's pass manager, much reduced: a pass is an object with a
name and a ``run(module)`` that edits the IR in place and says whether it
changed anything. The pipeline parses once, runs the passes in order and
prints once; no pass ever sees or produces text. Today the default pipeline
is empty (parse and print, the identity transform); shuffle synthesis adds
itself here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ptxasw import ir
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.parser.frontend import load_parser


@dataclass
class PassResult:
    """What one pass did: whether it changed the module, and its statistics."""

    changed: bool
    stats: dict[str, Any] = field(default_factory=dict)


class ModulePass(Protocol):
    """A transformation or analysis over a whole module."""

    name: str

    def run(self, module: ir.Module) -> PassResult: ...


@dataclass
class PipelineResult:
    """The PTX to assemble and one record per stage (for PTXASW_LOG)."""

    text: str
    passes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(p.get("changed") for p in self.passes)


def default_passes() -> list[ModulePass]:
    """The passes the drop-in ``ptxas`` runs. None yet: the identity transform."""
    return []


def run_pipeline(text: str, source_name: str, passes: Sequence[ModulePass] | None = None) -> PipelineResult:
    """Parse ``text``, run ``passes`` (default: `default_passes`), print.

    Raises `ptxasw.errors.PtxError` for input the parser refuses; the wrapper
    turns any exception into its fail-open path.
    """
    records: list[dict[str, Any]] = []

    # Loading the LALR tables is a once-per-process cost, like the imports;
    # it is recorded apart so that "parse" measures the text.
    start = time.perf_counter()
    load_parser()
    records.append(_record("setup", False, start))

    start = time.perf_counter()
    module = parse_ptx(text, source_name)
    records.append(_record("parse", False, start, instructions=sum(1 for _ in module.instructions())))

    for p in default_passes() if passes is None else passes:
        start = time.perf_counter()
        result = p.run(module)
        records.append(_record(p.name, result.changed, start, **result.stats))

    start = time.perf_counter()
    out = print_module(module)
    records.append(_record("print", False, start, lines=out.count("\n")))
    return PipelineResult(out, records)


def _record(name: str, changed: bool, start: float, **stats: Any) -> dict[str, Any]:
    return {"name": name, "changed": changed, "seconds": round(time.perf_counter() - start, 6), **stats}
