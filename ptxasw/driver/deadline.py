"""The time a pipeline run may take, as the passes see it.

The drop-in ``ptxas`` gives each input ``PTXASW_TIMEOUT`` seconds; past that
it assembles the original PTX and the whole file gains nothing. A pass that
analyses kernels one by one can do better: it checks the `Deadline` between
kernels and skips (and logs, in its PTXASW_LOG record) the kernels that do
not fit, so that a file of 30,000 kernels still gets the first few thousand
rewritten. A pass opts in by taking a ``deadline`` keyword in ``run``; the
pipeline hands it one whose end leaves time to print the module.

`KernelAnalysisPass` is such a pass: the symbolic analysis of every kernel,
within the deadline, changing nothing. The shuffle synthesis builds on it;
alone it measures what the analysis would cost in a build.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ptxasw import ir

__all__ = ["MAX_LOGGED", "Deadline", "KernelAnalysisPass", "analysis_pipeline"]

# How many skipped names a pass record lists (a file may have 30k kernels).
MAX_LOGGED = 50


@dataclass
class Deadline:
    """A `time.monotonic` time by which the passes must be done (None: no limit).

    ``skipped`` collects what was left out to keep it, as ``{"pass", "what",
    "reason"}`` records; the pipeline logs them with each pass's record.
    """

    at: float | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """A deadline ``seconds`` from now (None or infinity: none)."""
        if seconds is None or math.isinf(seconds):
            return cls()
        return cls(time.monotonic() + seconds)

    def left(self) -> float:
        """Seconds left (infinity without a deadline; negative once past it)."""
        return math.inf if self.at is None else self.at - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0

    def skip(self, pass_name: str, what: str, reason: str) -> None:
        self.skipped.append({"pass": pass_name, "what": what, "reason": reason})

    def kernels(self, module: ir.Module, pass_name: str) -> Iterator[ir.Function]:
        """The module's kernels while time is left; the rest are recorded as skipped."""
        for fn in module.kernels:
            if self.expired():
                self.skip(pass_name, fn.name, "PTXASW_TIMEOUT deadline reached")
                continue
            yield fn

    def record(self, pass_name: str) -> dict[str, Any]:
        """The statistics of what ``pass_name`` skipped, for its PTXASW_LOG record."""
        names = [s["what"] for s in self.skipped if s["pass"] == pass_name]
        if not names:
            return {}
        return {"skipped": len(names), "skipped_names": names[:MAX_LOGGED]}


class KernelAnalysisPass:
    """Analyse every kernel symbolically within the deadline; edits nothing.

    Each kernel's own budget is cut to the time left, so a kernel started
    just before the deadline ends as ``partial`` instead of overrunning it;
    the kernels not started are logged as skipped. Results are counted, not
    kept: the memory is that of the largest kernel's analysis.
    """

    name = "kernel-analysis"

    def __init__(self, per_kernel_seconds: float = 10.0) -> None:
        self.per_kernel_seconds = per_kernel_seconds

    def run(self, module: ir.Module, analyses: Any = None, deadline: Deadline | None = None) -> Any:
        from ptxasw.driver.pipeline import PassResult
        from ptxasw.emulator.symbolic import batch
        from ptxasw.emulator.symbolic.executor import Budget

        deadline = deadline or Deadline()
        # batch keeps time on its own clock; translate the monotonic deadline.
        end = None if deadline.at is None else batch.now() + deadline.left()
        counts = {"complete": 0, "partial": 0, "error": 0}
        results = batch.iter_analyses(
            module, budget=Budget(time_s=self.per_kernel_seconds), deadline=end, catch=True
        )
        for result in results:
            if result.status == "skipped":
                deadline.skip(self.name, result.kernel, "PTXASW_TIMEOUT deadline reached")
            else:
                counts[result.status if result.status in counts else "error"] += 1
        return PassResult(False, {"kernels": sum(counts.values()), **counts, **deadline.record(self.name)})


def analysis_pipeline(text: str, source_name: str, deadline: float | None = None) -> Any:
    """The default pipeline plus `KernelAnalysisPass` (``PTXASW_PIPELINE=
    ptxasw.driver.deadline:analysis_pipeline``): what the analysis would cost
    a build, and what of it fits in ``PTXASW_TIMEOUT``."""
    from ptxasw.driver.pipeline import default_passes, run_pipeline

    return run_pipeline(text, source_name, [*default_passes(text), KernelAnalysisPass()], deadline=deadline)
