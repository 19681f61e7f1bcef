"""A file's kernels synthesised in several processes: ``ptxasw analyze``
and ``ptxasw rewrite`` with ``--jobs N``.

Kernels are analysed one by one and each on its own, so a generated file of
12,000 kernels kept one core busy for minutes while the others idled. The
parent parses every file once and then forks its workers, which inherit the
parsed modules (copy on write: no worker parses again) and each synthesise a
share of the kernels. What comes back is plain data, each kernel's
`KernelResult`: its report row (`kernel_entry`), a line saying what was done
and, for a rewrite, the rewritten kernel's text, which the parent prints in
the kernel's place. A plan's instructions and Z3 terms do not cross
processes.

Results come back in the file's kernel order whatever order the workers
finish in. Where the solver's effort decides (a question it gives up on), a
kernel's answer may depend on what the process asked before it: the
detection asks linear questions again with the proof's effort against that
(`ptxasw.synth.detect`), but a product of unknowns can still end "solver
gave up" after one history and "non-constant delta" after another. So every
share runs in a fresh fork of the parent, and a run with the same ``--jobs``
gives the same answers; with another number of jobs such a reason may read
otherwise. With one job, or where ``fork`` is not offered (Windows), the
kernels are synthesised in this process, the same way.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from ptxasw import ir
from ptxasw.ir.printer import function_text
from ptxasw.synth.detect import KernelPlan, Options
from ptxasw.synth.report import failed_entry, kernel_entry, source_positions

__all__ = ["KernelResult", "Source", "synthesise"]

# A worker takes kernels a share at a time: small enough that the slowest
# shares do not leave the others idle at the end, large enough that a share
# is more than its pass's walk over the module's functions.
_SHARES_PER_JOB = 8

# Makes a progress display for so many kernels; it is told each kernel's name.
Progress = Callable[[int], AbstractContextManager[Callable[[str], None]]]


@dataclass(frozen=True)
class Source:
    """One parsed file: where it came from, its module and its text."""

    path: str
    module: ir.Module
    text: str


@dataclass(frozen=True)
class KernelResult:
    """What the synthesis of one kernel gives back: ``row``, its report row;
    ``summary``, the line `synthesise`'s ``describe`` made of its plan;
    ``text``, the kernel as rewritten (None when nothing was asked to be)."""

    path: str
    name: str
    row: dict[str, object]
    summary: str
    text: str | None


@dataclass(frozen=True)
class _Work:
    """What every worker needs, set in the parent before it forks: each
    file's source, PTX lines and ``.loc`` positions (instruction ids, the
    same in a forked child), the options a module's synthesis runs with,
    whether to rewrite, and how to describe a plan."""

    sources: list[Source]
    lines: list[list[str]]
    positions: list[dict[int, tuple[str, int]]]
    options_for: Callable[[ir.Module], Options]
    rewrite: bool
    describe: Callable[[KernelPlan], str]


_WORK: _Work | None = None


def _quiet(name: str) -> None:
    """No progress display."""


def _nothing(plan: KernelPlan) -> str:
    return ""


def _available_jobs() -> int:
    """The cores this process may run on (``--jobs 0``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def synthesise(
    sources: list[Source],
    options_for: Callable[[ir.Module], Options],
    wanted: set[str] | None,
    jobs: int,
    *,
    rewrite: bool = False,
    describe: Callable[[KernelPlan], str] = _nothing,
    progress: Progress = lambda total: nullcontext(_quiet),
) -> list[KernelResult]:
    """Each wanted kernel's `KernelResult`, in file and kernel order,
    synthesised by up to ``jobs`` processes (0: one per core). ``rewrite``: rewrite the
    kernels (the text comes back; this process's modules are left as they
    were only where workers did the rewriting). The report rows take their
    source lines from the modules as they were before. ``progress`` makes a
    display for the number of kernels, told each kernel's name: as its synthesis begins in this
    process, as its result arrives from a worker. It starts after the
    workers are forked: a progress bar's thread, forked while it held a lock
    (the terminal's), would leave that lock held in every worker."""
    global _WORK
    _WORK = _Work(
        sources,
        [source.text.splitlines() for source in sources],
        [source_positions(source.module) for source in sources],
        options_for,
        rewrite,
        describe,
    )
    jobs = jobs or _available_jobs()
    try:
        shares = list(_shares(sources, wanted, jobs))
        total = sum(len(names) for _, names in shares)
        if jobs <= 1 or len(shares) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            with progress(total) as show:
                done = [_synthesise_share(share, show) for share in shares]
        else:
            done = []
            # A fresh worker for every share: what Z3 answers where its effort
            # decides depends on the terms the process made before, so a
            # share answers the same whichever worker, and after whichever
            # shares, it would have run.
            fork = multiprocessing.get_context("fork")
            with fork.Pool(min(jobs, len(shares)), maxtasksperchild=1) as pool, progress(total) as show:
                for results in pool.imap_unordered(_synthesise_share, shares):
                    done.append(results)
                    for _, _, result in results:
                        show(result.name)
    finally:
        _WORK = None
    return [result for *_, result in sorted((r for results in done for r in results), key=lambda r: r[:2])]


def _shares(sources: list[Source], wanted: set[str] | None, jobs: int) -> Iterator[tuple[int, list[str]]]:
    """The wanted kernels as ``(file index, kernel names)`` shares: a file a
    share for one job (one pass over each file, as before there were jobs)."""
    kernels = [
        (index, fn.name)
        for index, source in enumerate(sources)
        for fn in source.module.kernels
        if wanted is None or fn.name in wanted
    ]
    size = len(kernels) if jobs <= 1 else -(-len(kernels) // (jobs * _SHARES_PER_JOB))
    size = max(1, size)
    for index, of_file in itertools.groupby(kernels, key=lambda kernel: kernel[0]):
        names = [name for _, name in of_file]
        for start in range(0, len(names), size):
            yield index, names[start : start + size]


def _synthesise_share(
    share: tuple[int, list[str]], on_kernel: Callable[[str], None] | None = None
) -> list[tuple[int, int, KernelResult]]:
    """One share's results, as ``(file index, kernel's place in its file, result)``."""
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    assert _WORK is not None, "synthesise sets the work before any share runs"
    index, names = share
    source = _WORK.sources[index]
    options = _WORK.options_for(source.module)
    synthesis = ShuffleSynthesisPass(options, set(names), apply=_WORK.rewrite, on_kernel=on_kernel)
    synthesis.run(source.module)
    kernels = {fn.name: (place, fn) for place, fn in enumerate(source.module.kernels)}
    lines, positions = _WORK.lines[index], _WORK.positions[index]
    out = []
    for plan in synthesis.plans:
        place, fn = kernels[plan.kernel]
        row = kernel_entry(source.path, plan, lines, positions)
        text = function_text(fn) if _WORK.rewrite else None
        out.append((index, place, KernelResult(source.path, plan.kernel, row, _WORK.describe(plan), text)))
    # A kernel whose synthesis failed is left as it was (the pass is fail-open):
    # its row says so, with the pass's reason where it gave one.
    planned = {plan.kernel for plan in synthesis.plans}
    for name in names:
        if name in planned or name not in kernels:
            continue
        place, fn = kernels[name]
        why = synthesis.failures.get(name, "the synthesis did not finish")
        row = failed_entry(source.path, name, why)
        text = function_text(fn) if _WORK.rewrite else None
        summary = f"{name}: not synthesised: {why}"
        out.append((index, place, KernelResult(source.path, name, row, summary, text)))
    return out
