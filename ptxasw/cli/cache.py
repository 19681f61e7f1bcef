"""``ptxasw cache``: what the drop-in's result cache holds; trim it or clear it.

The cache (`ptxasw.driver.cache`) is ``PTXASW_CACHE_DIR`` (default
``~/.cache/ptxasw``), which the drop-in itself keeps under
``PTXASW_CACHE_SIZE`` (default 1G). This command shows it (``--stats``, the
default), trims it to the limit now (``--trim``) or removes every entry
(``--clear``). The verdicts of ``ptxasw tune`` are user data: they stay
unless ``--clear --tune``. A folder we cannot read or change is one error
line and exit 1.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

import click

from ptxasw.driver import cache, settings, tuning

__all__ = ["cache_command"]


@click.command("cache")
@click.option("--stats", is_flag=True, help="Show the folder, its size, limit and contents (default).")
@click.option("--trim", is_flag=True, help="Trim to PTXASW_CACHE_SIZE now, least recently used first.")
@click.option("--clear", is_flag=True, help="Remove every entry; the verdicts of ptxasw tune stay.")
@click.option("--tune", "verdicts", is_flag=True, help="With --clear: remove the tune verdicts too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def cache_command(stats: bool, trim: bool, clear: bool, verdicts: bool, as_json: bool) -> None:
    """Show, trim or clear the drop-in's result cache (PTXASW_CACHE_DIR).

    Rewritten copies that fast entries named stay ten minutes after their
    entries go (a build may be about to assemble them); a later trim removes
    them.
    """
    if stats + trim + clear > 1:
        _fail("give one of --stats, --trim and --clear")
    if verdicts and not clear:
        _fail("--tune goes with --clear (verdicts are never trimmed)")
    directory = cache.cache_dir()
    if directory is None:
        _fail(f"the result cache is off ({cache.ENV_CACHE_DIR}=off)")
    limit = settings.cache_size(warn=True)
    tune = tuning.tune_dir()
    _check_folder(directory, write=trim or clear)
    if not trim and not clear:
        _show_stats(cache.cache_stats(directory, limit, tune), as_json)
        return
    try:
        if clear:
            report = cache.clear_cache(directory, tune if verdicts else None)
        else:
            report = cache.trim_cache(directory, limit)
    except OSError as exc:
        _fail(f"cannot {'clear' if clear else 'trim'} {directory}: {exc.strerror or exc}")
    _show_report(directory, report, clear, verdicts, as_json)
    if report.failed:
        more = f" and {len(report.failed) - 1} more" if len(report.failed) > 1 else ""
        _fail(f"cannot remove {report.failed[0]}{more}")


def _check_folder(directory: Path, *, write: bool) -> None:
    """One error line when ``directory`` is there but not a folder we may use."""
    if not directory.exists():
        return
    if not directory.is_dir():
        _fail(f"{directory} is not a folder ({cache.ENV_CACHE_DIR})")
    mode = os.R_OK | os.X_OK | (os.W_OK if write else 0)
    if not os.access(directory, mode):
        _fail(f"cannot {'change' if write else 'read'} {directory}: permission denied")


def _show_stats(found: cache.CacheStats, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(asdict(found), indent=1))
        return
    limit = _size(found.limit) if found.limit else "no limit"
    click.echo(f"directory  {found.directory}")
    click.echo(f"size       {_size(found.size)} of {limit} ({settings.ENV_CACHE_SIZE})")
    click.echo(f"results    {found.results}")
    click.echo(f"fast       {found.fast_entries} entries, {found.copies} rewritten copies")
    if found.temporaries:
        click.echo(f"temporary  {found.temporaries} files (of killed or running writers)")
    where = found.verdicts_directory or f"off ({tuning.ENV_TUNE_DIR}=off)"
    click.echo(f"verdicts   {found.verdicts} in {where} (not counted, never trimmed)")
    if found.other_names:
        shown = ", ".join(found.other_names[:4]) + (", ..." if len(found.other_names) > 4 else "")
        click.echo(f"other      {_size(found.other)} in {shown} (not the drop-in's: not counted or trimmed)")


def _show_report(
    directory: Path, report: cache.TrimReport, clear: bool, verdicts: bool, as_json: bool
) -> None:
    if as_json:
        payload: dict[str, Any] = {"directory": str(directory), **asdict(report)}
        click.echo(json.dumps(payload, indent=1))
        return
    if report.skipped:
        click.echo(f"another process is trimming {directory}: nothing done")
        return
    what = "cleared" if clear else "trimmed"
    limit = _size(report.limit) if report.limit else "no limit"
    before, after = _size(report.size_before), _size(report.size_after)
    click.echo(f"{what} {directory}: {before} -> {after}" + ("" if clear else f" (limit {limit})"))
    removed = [
        f"{report.results} results",
        f"{report.fast_entries} fast entries",
        f"{report.copies} rewritten copies",
        f"{report.temporaries} temporary files",
    ]
    if verdicts:
        removed.append(f"{report.verdicts} verdicts")
    click.echo(f"removed {', '.join(removed)} ({_size(report.freed)})")
    if report.waiting:
        minutes = round(cache.GRACE_SECONDS / 60)
        click.echo(
            f"{report.waiting} rewritten copies ({_size(report.waiting_size)}) stay until {minutes} minutes "
            "after their entries went (a build may be using them); a later trim removes them"
        )


def _size(n: int) -> str:
    """``512 B``, ``12.3 KiB``, ``1.0 GiB``."""
    value, unit = float(n), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def _fail(message: str) -> NoReturn:
    click.echo(f"ptxasw: error: {message}", err=True)
    sys.exit(1)
