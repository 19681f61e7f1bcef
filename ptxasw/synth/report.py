"""What the synthesis found, as the report `ptxasw analyze` prints and
`ptxasw.synth.html` renders.

One dict, JSON as it stands::

    {"tool", "options",
     "files": {path: {"ptx": text, "sources": {cuda path: text or null}}},
     "kernels": [{"name", "file", "status", "reason", "loads", "shuffles",
                  "average_delta", "analysis_seconds",
                  "loads_detail": [{"line", "column", "text", "source_line",
                                    "source_file", "source_lineno", "status",
                                    "delta", "source_load_line", "corner_lanes",
                                    "proof", "reason", "assumptions"}]}]}

``loads`` counts the kernel's own global loads (the paper's Table 2);
``shuffles`` the loads replaced (by a shuffle or, N = 0, by the register);
``average_delta`` is the mean ``|N|`` over them. Loads of called functions
(``-G`` builds) are listed, blocked, with ``"in a called function"``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ptxasw import __version__, ir
from ptxasw.synth.detect import KernelPlan, LoadVerdict, Options, Status

__all__ = [
    "MAX_SOURCE_BYTES",
    "corner_lanes",
    "failed_entry",
    "file_entry",
    "kernel_entry",
    "report",
    "source_positions",
]

# CUDA sources larger than this are not embedded in a report.
MAX_SOURCE_BYTES = 4 << 20


def report(
    rows: list[dict[str, Any]],
    modules: dict[str, tuple[ir.Module, str]],
    options: Options,
    embed_sources: bool = True,
) -> dict[str, Any]:
    """The report of the kernels' rows (`kernel_entry`, made by
    `ptxasw.synth.workers`, in this process or another); ``modules`` maps
    each file's path to its module and PTX text."""
    return {
        "tool": f"ptxasw {__version__}",
        "options": {"mode": options.mode, "max_delta": options.max_delta},
        "files": {
            path: file_entry(path, module, text, embed_sources) for path, (module, text) in modules.items()
        },
        "kernels": rows,
    }


def file_entry(path: str, module: ir.Module, text: str, embed_sources: bool = True) -> dict[str, Any]:
    sources: dict[str, str | None] = {}
    for item in module.items:
        if isinstance(item, ir.FileDirective):
            sources[item.path] = _read_source(path, item.path) if embed_sources else None
    return {"ptx": text, "sources": sources}


def kernel_entry(
    path: str, plan: KernelPlan, lines: list[str], positions: dict[int, tuple[str, int]]
) -> dict[str, Any]:
    """One kernel's row of the report: ``lines``, its file's PTX lines;
    ``positions``, its file's `source_positions`."""
    rewritten = [v for v in plan.verdicts if v.rewritten]
    deltas = [abs(v.delta) for v in rewritten if v.delta is not None]
    sources: dict[int, int] = {}
    for v in rewritten:
        if v.source is not None:
            sources[id(v.source)] = sources.get(id(v.source), 0) + 1
    return {
        "name": plan.kernel,
        "file": path,
        "status": plan.analysis.status,
        "reason": plan.analysis.reason,
        "loads": plan.global_loads,
        "shuffles": len(rewritten),
        "average_delta": round(sum(deltas) / len(deltas), 3) if deltas else None,
        "analysis_seconds": round(plan.seconds, 3),
        "loads_detail": [
            _load_entry(v, lines, positions, plan.block_shape_known, sources.get(id(v.load), 0))
            for v in plan.verdicts
        ],
    }


def failed_entry(path: str, kernel: str, why: str) -> dict[str, Any]:
    """The row of a kernel whose synthesis failed (an instruction the rewrite
    could not build, an internal error): said, never left out of the table."""
    return {
        "name": kernel,
        "file": path,
        "status": "error",
        "reason": why,
        "loads": 0,
        "shuffles": 0,
        "average_delta": None,
        "analysis_seconds": 0.0,
        "loads_detail": [],
    }


def corner_lanes(delta: int, rows_whole: bool) -> str | None:
    """Which lanes still load, in words."""
    if delta == 0:
        return None
    edge = f"lanes {32 - delta}-31" if delta > 0 else f"lanes 0-{-delta - 1}"
    if delta == 1:
        edge = "lane 31"
    elif delta == -1:
        edge = "lane 0"
    row = "" if rows_whole else ", lanes whose neighbour is in another row of the block"
    return f"{edge}{row} and incomplete warps load"


def _load_entry(
    v: LoadVerdict,
    lines: list[str],
    positions: dict[int, tuple[str, int]],
    rows_whole: bool,
    serves: int = 0,
) -> dict[str, Any]:
    loc = v.load.loc
    line = loc.line if loc is not None else None
    where = positions.get(id(v.load))
    source_line = f"{os.path.basename(where[0])}:{where[1]}" if where else None
    text = lines[line - 1].strip() if line and 0 < line <= len(lines) else None
    rewritten = v.rewritten
    source_loc = v.source.loc if v.source is not None else None
    return {
        "line": line,
        "column": loc.col if loc is not None else None,
        "text": text,
        "source_line": source_line,
        "source_file": where[0] if where else None,
        "source_lineno": where[1] if where else None,
        "status": str(v.status),
        "delta": v.delta if rewritten else None,
        "source_load_line": source_loc.line if rewritten and source_loc is not None else None,
        # Per register of the load, the source load's register (by position) it takes.
        "source_elements": list(v.elements) if rewritten else None,
        "corner_lanes": corner_lanes(v.delta, rows_whole) if v.status is Status.SHUFFLE and v.delta else None,
        "proof": v.proof,
        "reason": None if rewritten else _reason(v.reason, serves),
        "assumptions": list(v.assumptions),
    }


def _reason(reason: str | None, serves: int) -> str | None:
    """Why a load stays, saying so first when it is the source of shuffles."""
    if not serves:
        return reason
    plural = "s" if serves > 1 else ""
    return f"kept: the source of {serves} shuffle{plural} (itself: {reason})"


def source_positions(module: ir.Module) -> dict[int, tuple[str, int]]:
    """Instruction identity -> (source file, line) of the ``.loc`` above it."""
    files = module.index().files
    out: dict[int, tuple[str, int]] = {}
    for fn in module.functions:
        if fn.body is None:
            continue
        current: tuple[str, int] | None = None
        for stmt in _flat(fn.body.body):
            if isinstance(stmt, ir.LocDirective):
                current = (files.get(stmt.file, f"file{stmt.file}"), stmt.line)
            elif isinstance(stmt, ir.Instruction) and current is not None and current[1] > 0:
                out[id(stmt)] = current
    return out


def _flat(body: list[ir.Statement]) -> list[ir.Statement]:
    out: list[ir.Statement] = []
    for stmt in body:
        if isinstance(stmt, ir.Block):
            out.extend(_flat(stmt.body))
        else:
            out.append(stmt)
    return out


def _read_source(ptx_path: str, source: str) -> str | None:
    """The CUDA/Fortran file a ``.file`` names, if readable and not too large
    (relative names are tried beside the PTX file too)."""
    for candidate in (Path(source), Path(ptx_path).parent / source):
        try:
            if candidate.is_file() and candidate.stat().st_size <= MAX_SOURCE_BYTES:
                return candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return None
