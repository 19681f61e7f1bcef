"""Analyse the kernels of a module one at a time, within an overall deadline.

A PTX file of a template-heavy library holds tens of thousands of kernels.
Analysing them all before printing anything holds every analysis (and its Z3
terms) in memory at once and says nothing for minutes; `iter_analyses`
yields each kernel's result as soon as it is known, so a caller can print it
and let it go, and stops analysing when the overall deadline is reached:
the kernels left are yielded as `Skipped`, with the reason, so that nothing
is silently dropped. The ``trace`` command and the drop-in's passes share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ptxasw import ir
from ptxasw.emulator.symbolic.executor import Budget, KernelAnalysis, SymbolicExecutor
from ptxasw.emulator.symbolic.snapshot import Snapshot
from ptxasw.errors import UnsupportedInstruction

__all__ = ["Skipped", "iter_analyses", "now"]

# A kernel started with less time than this left is skipped instead: a few
# milliseconds cannot analyse anything, and a half-built partial analysis is
# worth less than an honest "skipped".
MIN_KERNEL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Skipped:
    """A kernel without an analysis, and why.

    ``status`` is ``skipped`` (the overall budget ran out before it) or
    ``error`` (the analysis failed; ``error`` holds the exception, so a
    caller can report it and still go on to the next kernel).
    """

    kernel: str
    reason: str
    status: str = "skipped"
    error: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def complete(self) -> bool:
        return False

    # ``snapshot``: as `KernelAnalysis`'s; a skipped kernel has no terms to read.
    def to_json(
        self, spaces: Iterable[str] | None = None, snapshot: Snapshot | None = None
    ) -> dict[str, Any]:
        return {"kernel": self.kernel, "status": self.status, "reason": self.reason}

    def format(
        self, spaces: Iterable[str] | None = None, shared: bool = False, snapshot: Snapshot | None = None
    ) -> str:
        return f"kernel {self.kernel}: {self.status} ({self.reason})"


def now() -> float:
    """The clock deadlines are read against (monotonic seconds); tests replace it."""
    return time.monotonic()


def iter_analyses(
    module: ir.Module,
    kernels: Iterable[str] | None = None,
    budget: Budget | None = None,
    *,
    deadline: float | None = None,
    on_start: Callable[[str], None] | None = None,
    catch: bool = False,
    strict: bool = False,
) -> Iterator[KernelAnalysis | Skipped]:
    """Each named kernel's analysis (default: every kernel), in order, one at a time.

    ``deadline`` is a `now` time. A kernel is analysed with the per-kernel
    ``budget``, cut to the time left before the deadline (a cut analysis is
    ``partial``, as for its own budget); once the deadline is reached every
    remaining kernel is yielded as `Skipped`. ``on_start`` is told each
    kernel's name before its analysis begins (progress display). With
    ``catch``, a kernel whose analysis raises is yielded as a `Skipped` of
    status ``error`` and the next one is analysed; without, the exception
    propagates. Raises KeyError for a name that is not a kernel of the
    module, before analysing anything. ``strict``: an instruction the
    executor cannot model raises `UnsupportedInstruction` (never caught).
    """
    budget = budget or Budget()
    by_name = {fn.name: fn for fn in module.kernels}
    names = list(by_name) if kernels is None else list(kernels)
    for name in names:
        if name not in by_name:
            raise KeyError(name)
    shared = _shared_items(module)
    analyse = _analyse_strict if strict else _analyse
    for name in names:
        kernel_budget = budget
        if deadline is not None:
            left = deadline - now()
            if left < MIN_KERNEL_SECONDS:
                yield Skipped(name, "overall time budget spent before this kernel")
                continue
            if left < budget.time_s:
                kernel_budget = replace(budget, time_s=left)
        if on_start is not None:
            on_start(name)
        if not catch:
            yield analyse(module, shared, by_name[name], kernel_budget)
            continue
        try:
            result: KernelAnalysis | Skipped = analyse(module, shared, by_name[name], kernel_budget)
        except UnsupportedInstruction:
            raise  # strict: the caller's error, not one kernel's failure
        except Exception as exc:  # reported per kernel by the caller
            result = Skipped(name, f"{type(exc).__name__}: {exc}", "error", exc)
        yield result
        del result  # not kept alive while the next kernel is analysed


def _shared_items(module: ir.Module) -> list[ir.TopLevel]:
    """The items one kernel's analysis may read: all but the kernels and comments.

    The executor looks through its module for ``.file`` names, device
    functions to inline and aliases; a scan of 30,000 kernels (and their
    ``// .globl`` comments) for each of 30,000 kernels is what made a 50 MB
    file take hours. No kernel can call another (``.entry`` is not callable)
    and no analysis reads comments, so each analysis gets a module of the
    shared items and its own kernel, built once and extended per kernel.
    """
    return [
        item
        for item in module.items
        if not isinstance(item, ir.Comment) and not (isinstance(item, ir.Function) and item.is_kernel)
    ]


def _analyse(module: ir.Module, shared: list[ir.TopLevel], fn: ir.Function, budget: Budget) -> KernelAnalysis:
    return SymbolicExecutor(ir.Module([*shared, fn], module.path), fn, budget).run()


def _analyse_strict(
    module: ir.Module, shared: list[ir.TopLevel], fn: ir.Function, budget: Budget
) -> KernelAnalysis:
    return SymbolicExecutor(ir.Module([*shared, fn], module.path), fn, budget, strict=True).run()
