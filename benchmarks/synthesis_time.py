"""Shuffle-synthesis time per kernel: what ``ptxasw analyze`` spends on detection and proofs.

Usage::

    python benchmarks/synthesis_time.py [--json] [--time-budget S] [FILE.ptx ...]

``analysis_time.py`` measures the symbolic trace (``ptxasw trace``); this
measures the synthesis, which analyses a kernel differently (loads stay
branches, flows are paired path by path for the proof) and then asks Z3
about every pair of loads. Without files it takes library code nobody here
wrote, Thrust and CUB 3.0 as the CUDA toolkit ships them
(``tests/corpus/cuda/thrust_cub.cu``, compiled with ``nvcc -O3 -ptx``
for sm_75 and sm_90 and kept under ``$PTXASW_CORPUS_CACHE``), and the
kernel suite's sm_90 PTX (``results/gpu_prep/*.original.ptx``).

Each file is one ``ptxasw analyze --json FILE`` command in a fresh process,
as a user runs it. Per kernel: global loads, shuffles (proved), the
analysis status, and the seconds the report gives (detection and proofs);
per file the whole command's wall time. ``--json`` prints the rows.

Goal: every kernel decided within the default budget (``complete``, no load
left "analysis budget"), and no kernel over 10 s.

Measured on the 2-core development VM (``results/synthesis_time.json``):
before detection screened on merged flows (1fc1d17), 10 of CUB's 24 sm_75
kernels and 9 of its 24 sm_90 kernels ran out of the 10 s budget (244 loads
left undecided), 111 s and 104 s per file; at e14a816 every kernel
completes, at most 2.9 s, 15.2 s and 15.9 s per file. The suite is
unchanged: 426 shuffles, 25 s (23 s before: seismic_rhs alone, old and new
run alternately, gave 5.75/5.88/5.45/5.35 s, the VM's noise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


LIBRARY_SOURCE = ROOT / "tests" / "corpus" / "cuda" / "thrust_cub.cu"
LIBRARY_ARCHES = ("sm_75", "sm_90")


def library_ptx(cache: Path) -> list[Path]:
    """The Thrust/CUB source compiled with ``nvcc -O3 --ptx`` per arch (kept while newer than it)."""
    from benchmarks.analysis_time import compile_ptx

    return [compile_ptx(LIBRARY_SOURCE, cache, arch) for arch in LIBRARY_ARCHES]


def default_files() -> list[Path]:
    """The Thrust/CUB builds and the suite's sm_90 PTX."""
    cache = Path(os.environ.get("PTXASW_CORPUS_CACHE") or Path(tempfile.gettempdir()) / "ptxasw-corpus")
    suite = sorted((ROOT / "benchmarks" / "results" / "gpu_prep").glob("*.original.ptx"))
    return [*library_ptx(cache / "synthesis_time"), *suite]


def measure(path: Path, time_budget: float) -> list[dict[str, Any]]:
    """One ``ptxasw analyze --json`` command on ``path``: a row per kernel."""
    command = [
        sys.executable,
        "-m",
        "ptxasw",
        "analyze",
        "--json",
        "--time-budget",
        str(time_budget),
        str(path),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [{"file": path.name, "kernel": None, "error": message, "command_seconds": wall}]
    rows = []
    for kernel in json.loads(done.stdout)["kernels"]:
        budget = sum("analysis budget" in (load["reason"] or "") for load in kernel["loads_detail"])
        rows.append(
            {
                "file": path.name,
                "kernel": kernel["name"],
                "loads": kernel["loads"],
                "shuffles": kernel["shuffles"],
                "status": kernel["status"],
                "reason": kernel["reason"],
                "undecided_loads": budget,
                "seconds": kernel["analysis_seconds"],
                "command_seconds": wall,
            }
        )
    return rows


def _print_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="shuffle synthesis time per kernel (ptxasw analyze)")
    for column in ("file", "kernel", "loads", "shuffles", "status", "budget loads", "seconds"):
        table.add_column(column, justify="left" if column in ("file", "kernel", "status") else "right")
    for r in rows:
        if r.get("error"):
            table.add_row(r["file"], "-", "-", "-", f"error: {r['error']}", "-", "-")
            continue
        name = r["kernel"] if len(r["kernel"]) <= 60 else r["kernel"][:28] + "..." + r["kernel"][-29:]
        table.add_row(
            r["file"],
            name,
            str(r["loads"]),
            str(r["shuffles"]),
            r["status"],
            str(r["undecided_loads"]),
            f"{r['seconds']:.2f}",
        )
    console = Console(width=200)
    console.print(table)
    kernels = [r for r in rows if not r.get("error")]
    if kernels:
        slowest = max(kernels, key=lambda r: r["seconds"])
        partial = sum(r["status"] != "complete" for r in kernels)
        console.print(
            f"{len(kernels)} kernels, {sum(r['seconds'] for r in kernels):.1f} s in all, "
            f"max {slowest['seconds']:.2f} s ({slowest['kernel'][:60]}), {partial} partial, "
            f"{sum(r['undecided_loads'] for r in kernels)} loads left to the budget"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="PTX files (default: Thrust/CUB and the suite)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--time-budget", type=float, default=10.0, help="analysis budget per kernel (s)")
    args = ap.parse_args(argv)
    files = args.files or default_files()
    rows = [row for path in files for row in measure(path, args.time_budget)]
    if args.json:
        print(json.dumps({"time_budget": args.time_budget, "rows": rows}, indent=1))
    else:
        _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
