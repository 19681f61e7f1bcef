"""The pass pipeline the ``ptxas`` wrapper and ``ptxasw`` commands run.

Modelled on LLVM's pass manager, much reduced: a pass is an object with a
name and a ``run(module, analyses)`` that edits the IR in place and says
whether it changed anything. The pipeline parses once, runs the passes in
order and prints once; no pass ever sees or produces text. Passes edit
through `ptxasw.ir.builder`, whose edits invalidate the shared
`AnalysisCache`, so the pipeline knows from the edits, not from the pass's
word alone, whether the module changed (the drop-in hands ``ptxas`` the
user's own file when nothing did). Most passes work one function at a time:
they subclass `FunctionPass`. The default pipeline is shuffle synthesis
(`ptxasw.synth.synthesize.ShuffleSynthesisPass`), configured from the
environment (`synthesis_options`).

Environment: see `ptxasw.driver.settings`.
"""

from __future__ import annotations

import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ptxasw import ir
from ptxasw.driver.deadline import MAX_LOGGED, Deadline
from ptxasw.driver.settings import model_rules_out_shuffles, synthesis_settings
from ptxasw.ir.builder import AnalysisCache, BuildError, FunctionBuilder
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.parser.frontend import load_parser


@dataclass
class PassResult:
    """What one pass did: whether it changed the module, and its statistics."""

    changed: bool
    stats: dict[str, Any] = field(default_factory=dict)


class ModulePass(Protocol):
    """A transformation or analysis over a whole module.

    ``analyses`` is shared by the passes of one pipeline run: a pass edits
    through `FunctionBuilder` with it, so that results computed before an
    edit are never used after it.
    """

    name: str

    def run(self, module: ir.Module, analyses: AnalysisCache) -> PassResult: ...


class FunctionPass(ABC):
    """A pass that rewrites each function with a body, one at a time.

    Subclasses set ``name`` and implement :meth:`run_on_function`, which edits
    through the builder it is given and may return statistics. ``changed`` is
    whether the builder made any edit: a pass cannot claim a change it did not
    make, nor hide one. Past the pipeline's deadline the remaining functions
    are skipped and logged, each left as it was; so is a function on which the
    pass raised `BuildError` (its edits are rolled back), unless ``strict``.
    """

    name: str = "function-pass"
    #: Re-raise `BuildError` instead of rolling the function back (tests).
    strict: bool = False
    #: After `run`: why each function left as it was failed, by name.
    failures: dict[str, str]

    def run(
        self, module: ir.Module, analyses: AnalysisCache | None = None, deadline: Deadline | None = None
    ) -> PassResult:
        analyses = AnalysisCache() if analyses is None else analyses
        deadline = Deadline() if deadline is None else deadline
        stats: dict[str, Any] = {}
        failed: list[str] = []
        self.failures = {}
        edits = functions = 0
        for fn in module.functions:
            if fn.body is None or not self.wants(fn):
                continue
            if deadline.expired():
                deadline.skip(self.name, fn.name, "PTXASW_TIMEOUT deadline reached")
                continue
            builder = FunctionBuilder(fn, module, analyses)
            try:
                result = self.run_on_function(fn, builder)
            except BuildError as exc:
                if self.strict:
                    raise
                # A bug in the pass on this function: leave it as it was and go on.
                builder.rollback()
                failed.append(f"{fn.name}: {exc}")
                self.failures[fn.name] = str(exc)
                continue
            for key, value in (result or {}).items():
                stats[key] = stats.get(key, 0) + value if isinstance(value, int | float) else value
            functions += 1
            edits += builder.edits
        record = {"functions": functions, "edits": edits, **stats, **deadline.record(self.name)}
        if failed:
            record.update(failed=len(failed), failed_names=failed[:MAX_LOGGED])
        return PassResult(edits > 0, record)

    def wants(self, fn: ir.Function) -> bool:
        """Whether to visit ``fn`` (default: every function with a body)."""
        return True

    @abstractmethod
    def run_on_function(self, fn: ir.Function, builder: FunctionBuilder) -> dict[str, Any] | None:
        """Rewrite ``fn`` through ``builder``; return statistics to record, or None."""


@dataclass
class PipelineResult:
    """The PTX to assemble and one record per stage (for PTXASW_LOG)."""

    text: str
    passes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(p.get("changed") for p in self.passes)


def default_passes(text: str | None = None) -> list[ModulePass]:
    """The passes the drop-in ``ptxas`` runs on ``text``: shuffle synthesis
    (unless ``PTXASW_SYNTH=0``); where no contiguous load's shuffle pays on
    the target, only in PTX worth a look (`ptxasw.synth.cost.worth_a_look`:
    masked loads in inline assembly get their reuses, kernels whose strided
    halo may pay the synthesis, whose cost model keeps the shuffles that pay)."""
    settings = synthesis_settings(warn=True)
    if settings["synth"] == "0":
        return []
    if model_rules_out_shuffles(settings):
        from ptxasw.synth.cost import NothingPaysPass, worth_a_look

        def synthesis(kernels: set[str], max_delta: int | None) -> ModulePass:
            delta = int(settings["max_delta"]) if max_delta is None else max_delta
            return _synthesis(settings, kernels, max_delta=delta)

        screened = text is not None and worth_a_look(text)
        return [NothingPaysPass(settings["arch"] or None, settings["mode"], synthesis if screened else None)]
    return [_synthesis(settings, None, max_delta=int(settings["max_delta"]))]


def _synthesis(settings: dict[str, str], kernels: set[str] | None, max_delta: int) -> ModulePass:
    """The shuffle synthesis as the drop-in runs it (imports Z3: built only when it runs)."""
    from ptxasw.driver import settings as driver_settings
    from ptxasw.driver.assembler import assembler
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    command = driver_settings.PTXAS_COMMAND
    options = Options(
        max_delta=max_delta,
        mode=settings["mode"],
        profit=settings["profit"],
        arch=settings["arch"] or None,
        rounding="ptxas",
        assemble=assembler(command) if command else None,
    )
    return ShuffleSynthesisPass(options, kernels)


def run_pipeline(
    text: str,
    source_name: str,
    passes: Sequence[ModulePass] | None = None,
    deadline: float | None = None,
) -> PipelineResult:
    """Parse ``text``, run ``passes`` (default: `default_passes`), print.

    ``deadline`` (a `time.monotonic` time, None for none) is when the whole
    run must be done: the passes get a `Deadline` that ends early enough to
    print, and a pass that does not fit is skipped and logged, not the file.
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

    pass_deadline = _pass_deadline(deadline, records[-1]["seconds"])
    analyses = AnalysisCache()
    for p in default_passes(text) if passes is None else passes:
        start = time.perf_counter()
        if pass_deadline.expired():
            pass_deadline.skip(p.name, p.name, "PTXASW_TIMEOUT deadline reached before the pass")
            records.append(_record(p.name, False, start, skipped=1, skipped_names=[p.name]))
            continue
        edits = analyses.edits
        result = _run_pass(p, module, analyses, pass_deadline)
        # An edit through the builder is a change whatever the pass says.
        changed = result.changed or analyses.edits != edits
        records.append(_record(p.name, changed, start, **result.stats))

    start = time.perf_counter()
    out = print_module(module)
    records.append(_record("print", False, start, lines=out.count("\n")))
    return PipelineResult(out, records)


# Printing takes about a fifth of the parse time; half of it is kept in hand.
PRINT_RESERVE = 0.5


def _pass_deadline(deadline: float | None, parse_seconds: float) -> Deadline:
    """The passes' share of the run's deadline: what is left after printing."""
    if deadline is None:
        return Deadline()
    return Deadline(deadline - PRINT_RESERVE * parse_seconds)


def _run_pass(p: ModulePass, module: ir.Module, analyses: AnalysisCache, deadline: Deadline) -> PassResult:
    """``p.run``, handing the deadline to passes whose ``run`` takes a ``deadline`` keyword."""
    try:
        takes_deadline = "deadline" in inspect.signature(p.run).parameters
    except (TypeError, ValueError):
        takes_deadline = False
    if takes_deadline:
        return p.run(module, analyses, deadline=deadline)  # type: ignore[call-arg]
    return p.run(module, analyses)


def _record(name: str, changed: bool, start: float, **stats: Any) -> dict[str, Any]:
    return {"name": name, "changed": changed, "seconds": round(time.perf_counter() - start, 6), **stats}
