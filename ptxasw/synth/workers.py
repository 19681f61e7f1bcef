"""A file's kernels analysed in several processes: ``ptxasw analyze --jobs N``.

Kernels are analysed one by one and each on its own, so a generated file of
12,000 kernels kept one core busy for minutes while the others idled. The
parent parses every file once and then forks its workers, which inherit the
parsed modules (copy on write: no worker parses again) and each plan a share
of the kernels. What comes back is each kernel's report row (`kernel_entry`,
plain data): a plan's instructions and Z3 terms do not cross processes, which
is also why only the report runs here, not the rewrite.

Rows come back in the file's kernel order whatever order the workers finish
in. Each worker answers with its own Z3, as a process of its own would: the
detection asks linear questions again with the proof's effort so that a
kernel's answer does not depend on what the process analysed before it
(`ptxasw.synth.detect`). Where ``fork`` is not offered (Windows), the
kernels are analysed in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from ptxasw import ir
from ptxasw.synth.detect import Options
from ptxasw.synth.report import kernel_entry, source_positions

__all__ = ["Source", "available_jobs", "kernel_rows"]

# A worker takes kernels a share at a time: small enough that the slowest
# shares do not leave the others idle at the end, large enough that a share
# is more than its pass's walk over the module's functions.
_SHARES_PER_JOB = 8


@dataclass(frozen=True)
class Source:
    """One parsed file: where it came from, its module and its text."""

    path: str
    module: ir.Module
    text: str


@dataclass(frozen=True)
class _Work:
    """What every worker needs, set in the parent before it forks: each
    file's source, PTX lines and ``.loc`` positions (instruction ids, the
    same in a forked child), the options a module's synthesis runs with."""

    sources: list[Source]
    lines: list[list[str]]
    positions: list[dict[int, tuple[str, int]]]
    options_for: Callable[[ir.Module], Options]


_WORK: _Work | None = None


def _quiet(name: str) -> None:
    """No progress display."""


def available_jobs() -> int:
    """The cores this process may run on (``--jobs 0``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def kernel_rows(
    sources: list[Source],
    options_for: Callable[[ir.Module], Options],
    wanted: set[str] | None,
    jobs: int,
    progress: Callable[[], AbstractContextManager[Callable[[str], None]]] = lambda: nullcontext(_quiet),
) -> list[tuple[str, dict[str, Any]]]:
    """Each wanted kernel's report row (``(path, kernel_entry)``), in file and
    kernel order, analysed by up to ``jobs`` processes. ``progress`` makes a
    display that is told each kernel's name: as its analysis begins in this
    process, as its row arrives from a worker. It starts after the workers
    are forked: a progress bar's thread, forked while it held a lock (the
    terminal's), would leave that lock held in every worker."""
    global _WORK
    _WORK = _Work(
        sources,
        [source.text.splitlines() for source in sources],
        [source_positions(source.module) for source in sources],
        options_for,
    )
    try:
        shares = list(_shares(sources, wanted, jobs))
        if jobs <= 1 or len(shares) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            with progress() as show:
                done = [_analyse(share, show) for share in shares]
        else:
            done = []
            with multiprocessing.get_context("fork").Pool(min(jobs, len(shares))) as pool, progress() as show:
                for rows in pool.imap_unordered(_analyse, shares):
                    done.append(rows)
                    for _, _, row in rows:
                        show(row["name"])
    finally:
        _WORK = None
    ordered = sorted((key, row) for rows in done for *key, row in rows)
    return [(sources[index].path, row) for (index, _), row in ordered]


def _shares(sources: list[Source], wanted: set[str] | None, jobs: int) -> Iterator[tuple[int, list[str]]]:
    """The wanted kernels as ``(file index, kernel names)`` shares."""
    kernels = [
        (index, fn.name)
        for index, source in enumerate(sources)
        for fn in source.module.kernels
        if wanted is None or fn.name in wanted
    ]
    size = max(1, -(-len(kernels) // (max(1, jobs) * _SHARES_PER_JOB)))
    for index in range(len(sources)):
        names = [name for i, name in kernels if i == index]
        for start in range(0, len(names), size):
            yield index, names[start : start + size]


def _analyse(
    share: tuple[int, list[str]], on_kernel: Callable[[str], None] | None = None
) -> list[tuple[int, int, dict[str, Any]]]:
    """One share's rows, as ``(file index, kernel's place in its file, row)``."""
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    assert _WORK is not None, "kernel_rows sets the work before any share runs"
    index, names = share
    source = _WORK.sources[index]
    synthesis = ShuffleSynthesisPass(
        _WORK.options_for(source.module), set(names), apply=False, on_kernel=on_kernel
    )
    synthesis.run(source.module)
    place = {fn.name: k for k, fn in enumerate(source.module.kernels)}
    lines, positions = _WORK.lines[index], _WORK.positions[index]
    return [
        (index, place[plan.kernel], kernel_entry(source.path, plan, lines, positions))
        for plan in synthesis.plans
    ]
