"""Parse and print speed of the front end on the largest PTX files we have.

Usage:
    python benchmarks/parse_speed.py [--json] [--top N] [--no-large] [FILE.ptx ...]

Without files it builds the test corpus (tests/corpus, cached under
$PTXASW_CORPUS_CACHE or a temporary directory), takes its N largest files and
adds one large generated kernel (benchmarks/gen_large_ptx.py, 100k+ lines of
real nvcc output). Each file is measured in a fresh child process so that the
peak memory figure belongs to that file alone: lines/s of parse and print, and
peak resident memory above the interpreter's baseline.

Goal (DESIGN): at least 30,000 lines/s on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_LINES_PER_SECOND = 30_000


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _measure(path: str, queue: mp.Queue) -> None:  # type: ignore[type-arg]
    """Runs in a child: parse (best of 3), print, and report peak memory."""
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx

    text = Path(path).read_text()
    parse_ptx(".version 9.0\n.target sm_90\n.address_size 64\n", "warm-up")  # build the parser
    baseline = _rss_mib()
    parse_times, print_times = [], []
    module = None
    for _ in range(3):
        start = time.perf_counter()
        module = parse_ptx(text, path)
        parse_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        print_module(module)
        print_times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert module is not None
    lines = text.count("\n")
    queue.put(
        {
            "file": Path(path).name,
            "lines": lines,
            "instructions": sum(1 for _ in module.instructions()),
            "parse_s": min(parse_times),
            "print_s": min(print_times),
            "parse_lines_per_s": lines / min(parse_times),
            "print_lines_per_s": lines / min(print_times),
            "peak_mib_above_baseline": max(0.0, peak - baseline),
        }
    )


def measure(path: Path) -> dict[str, object]:
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(str(path), queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def default_files(top: int, large: bool) -> list[Path]:
    from benchmarks.gen_large_ptx import generate
    from tests.corpus.build import build_corpus

    cache = Path(os.environ.get("PTXASW_CORPUS_CACHE", Path(tempfile.gettempdir()) / "ptxasw-corpus"))
    cache.mkdir(parents=True, exist_ok=True)
    files = sorted((f.ptx_path for f in build_corpus(cache)), key=lambda p: p.stat().st_size, reverse=True)
    chosen = files[:top]
    if large:
        big = cache / "large_unrolled.ptx"
        if not big.exists():
            generate(big)
        chosen.insert(0, big)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--top", type=int, default=5, help="how many of the largest corpus files")
    parser.add_argument("--no-large", action="store_true", help="skip the generated 100k-line file")
    args = parser.parse_args()

    files = args.files or default_files(args.top, not args.no_large)
    rows = [measure(f) for f in files]
    total_lines = sum(int(r["lines"]) for r in rows)  # type: ignore[call-overload]
    total_parse = sum(float(r["parse_s"]) for r in rows)  # type: ignore[arg-type]
    summary = {
        "files": len(rows),
        "lines": total_lines,
        "parse_lines_per_s": total_lines / total_parse if total_parse else 0.0,
        "goal_lines_per_s": GOAL_LINES_PER_SECOND,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
        return 0

    from rich.console import Console
    from rich.table import Table

    table = Table(title="ptxasw front end: parse and print speed (best of 3, one process per file)")
    for column in ("file", "lines", "instructions", "parse lines/s", "print lines/s", "peak MiB"):
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in rows:
        table.add_row(
            str(r["file"]),
            f"{r['lines']:,}",
            f"{r['instructions']:,}",
            f"{r['parse_lines_per_s']:,.0f}",
            f"{r['print_lines_per_s']:,.0f}",
            f"{r['peak_mib_above_baseline']:,.1f}",
        )
    console = Console()
    console.print(table)
    verdict = "meets" if summary["parse_lines_per_s"] >= GOAL_LINES_PER_SECOND else "MISSES"
    console.print(
        f"overall parse: {summary['parse_lines_per_s']:,.0f} lines/s over {total_lines:,} lines "
        f"({verdict} the goal of {GOAL_LINES_PER_SECOND:,} lines/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
