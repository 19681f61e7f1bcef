"""Parse and print speed of the front end on the largest PTX files we have.

Usage:
    python benchmarks/parse_speed.py [--json] [--top N] [--no-large] [--max-mb MB] [FILE.ptx ...]

Without files it builds the test corpus (tests/corpus, cached under
$PTXASW_CORPUS_CACHE or a temporary directory), takes its N largest files,
adds one large generated kernel (benchmarks/gen_large_ptx.py, 100k+ lines of
real nvcc output) and many-kernel files of 1, 5, 20 and 50 MB (gen_large_ptx
``--mb N --unroll 4``: about 65 lines a kernel, like a template library;
``--max-mb`` caps the sizes for a quick run).

Each file is measured twice, each time in a fresh process: lines/s of parse
and print (best of 3; one round above 200k lines), and then the memory of
what ``ptxasw fmt`` does, one parse and a streamed print: "peak MiB" is the
process's maximum resident set size (getrusage ru_maxrss, interpreter and
imports included), "base MiB" that of the same process before reading the
file, and "peak / input" is (peak - base) / file size.

Goals (DESIGN, issue 6): at least 30,000 lines/s on the 2-core development
machine; parse + print within 20x the input size.
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
GOAL_PEAK_RATIO = 20.0
GENERATED_MB = (1, 5, 20, 50)
ONE_ROUND_LINES = 200_000


def _measure(path: str, queue: mp.Queue) -> None:  # type: ignore[type-arg]
    """Runs in a child: parse (best of 3), print, and report the speeds."""
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx

    text = Path(path).read_text()
    parse_ptx(".version 9.0\n.target sm_90\n.address_size 64\n", "warm-up")  # build the parser
    parse_times, print_times = [], []
    module = None
    rounds = 3 if text.count("\n") < ONE_ROUND_LINES else 1
    for _ in range(rounds):
        start = time.perf_counter()
        module = parse_ptx(text, path)
        parse_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        print_module(module)
        print_times.append(time.perf_counter() - start)
        del module  # one module at a time
    lines = text.count("\n")
    module = parse_ptx(text, path) if rounds == 3 else None
    queue.put(
        {
            "file": Path(path).name,
            "bytes": len(text.encode()),
            "lines": lines,
            "kernels": text.count(".entry "),
            "parse_s": min(parse_times),
            "print_s": min(print_times),
            "parse_lines_per_s": lines / min(parse_times),
            "print_lines_per_s": lines / min(print_times),
            "rounds": rounds,
            "instructions": None if module is None else sum(1 for _ in module.instructions()),
        }
    )


def _measure_memory(path: str, queue: mp.Queue) -> None:  # type: ignore[type-arg]
    """Runs in a fresh child: what ``ptxasw fmt IN -o /dev/null`` does, and its peak RSS."""
    from ptxasw.ir.printer import write_module
    from ptxasw.parser import parse_file, parse_ptx

    parse_ptx(".version 9.0\n.target sm_90\n.address_size 64\n", "warm-up")  # build the parser
    exact = _reset_peak()
    base = _status_mib("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    module = parse_file(path)
    with open(os.devnull, "w") as out:
        write_module(module, out)
    seconds = time.perf_counter() - start
    peak = _status_mib("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(
        {
            "base_mib": base,
            "peak_mib": peak,
            "fmt_s": seconds,
            "peak_source": "VmHWM" if exact else "ru_maxrss",
        }
    )


def _reset_peak() -> bool:
    """Reset the kernel's high-water mark of this process's RSS (Linux: clear_refs 5).

    Without it the peak would be that of the imports when a small file needs
    less than they did; where it cannot be reset, ru_maxrss is reported.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_mib(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def _in_child(target: object, path: Path) -> dict[str, object]:
    # spawn, not fork: the child's peak must not include pages of this process.
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(str(path), queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def measure(path: Path) -> dict[str, object]:
    row = _in_child(_measure, path)
    row.update(_in_child(_measure_memory, path))
    above = float(row["peak_mib"]) - float(row["base_mib"])  # type: ignore[arg-type]
    row["peak_above_base_mib"] = above
    row["peak_per_input"] = above / (int(row["bytes"]) / 2**20)  # type: ignore[call-overload]
    return row


def default_files(top: int, large: bool, max_mb: float) -> list[Path]:
    from benchmarks.gen_large_ptx import generate, replicate, tables
    from tests.corpus.build import build_corpus

    cache = Path(os.environ.get("PTXASW_CORPUS_CACHE", Path(tempfile.gettempdir()) / "ptxasw-corpus"))
    cache.mkdir(parents=True, exist_ok=True)
    chosen: list[Path] = []
    if top > 0:
        files = sorted(
            (f.ptx_path for f in build_corpus(cache)), key=lambda p: p.stat().st_size, reverse=True
        )
        chosen = files[:top]
    if large:
        big = cache / "large_unrolled.ptx"
        if not big.exists():
            generate(big)
        chosen.insert(0, big)
        lookup = cache / "tables_1mb.ptx"
        if not lookup.exists():
            tables(lookup)
        chosen.insert(1, lookup)
        for mb in GENERATED_MB:
            if mb > max_mb:
                continue
            path = cache / f"many_kernels_{mb}mb.ptx"
            if not path.exists():
                replicate(path, mb * 10**6, unroll=4)
            chosen.append(path)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--top", type=int, default=5, help="how many of the largest corpus files")
    parser.add_argument("--no-large", action="store_true", help="skip the generated files")
    parser.add_argument(
        "--max-mb", type=float, default=50.0, help="largest generated many-kernel file (1, 5, 20, 50 MB)"
    )
    args = parser.parse_args()

    files = args.files or default_files(args.top, not args.no_large, args.max_mb)
    # Speeds depend on what else runs (memory does not): the load is recorded beside them.
    load_before = os.getloadavg()[0]
    rows = [measure(f) for f in files]
    load_after = os.getloadavg()[0]
    total_lines = sum(int(r["lines"]) for r in rows)  # type: ignore[call-overload]
    total_parse = sum(float(r["parse_s"]) for r in rows)  # type: ignore[arg-type]
    worst_ratio = max((float(r["peak_per_input"]) for r in rows if int(r["bytes"]) >= 10**6), default=0.0)  # type: ignore[arg-type]
    summary = {
        "files": len(rows),
        "lines": total_lines,
        "parse_lines_per_s": total_lines / total_parse if total_parse else 0.0,
        "goal_lines_per_s": GOAL_LINES_PER_SECOND,
        "worst_peak_per_input_1mb_up": worst_ratio,
        "goal_peak_per_input": GOAL_PEAK_RATIO,
        "cpus": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(load_after, 2)],
    }
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
        return 0

    from rich.console import Console
    from rich.table import Table

    table = Table(title="ptxasw front end: parse and print speed, and the memory of parse + streamed print")
    columns = ("file", "MB", "lines", "kernels", "parse lines/s", "print lines/s", "peak MiB", "base MiB")
    for column in (*columns, "peak / input"):
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in rows:
        table.add_row(
            str(r["file"]),
            f"{int(r['bytes']) / 1e6:,.1f}",  # type: ignore[call-overload]
            f"{r['lines']:,}",
            f"{r['kernels']:,}",
            f"{r['parse_lines_per_s']:,.0f}",
            f"{r['print_lines_per_s']:,.0f}",
            f"{r['peak_mib']:,.0f}",
            f"{r['base_mib']:,.0f}",
            f"{r['peak_per_input']:,.1f}x",
        )
    console = Console(width=None if sys.stdout.isatty() else 150)
    console.print(table)
    verdict = "meets" if summary["parse_lines_per_s"] >= GOAL_LINES_PER_SECOND else "MISSES"
    console.print(
        f"overall parse: {summary['parse_lines_per_s']:,.0f} lines/s over {total_lines:,} lines "
        f"({verdict} the goal of {GOAL_LINES_PER_SECOND:,} lines/s; load average {load_before:.1f} before, "
        f"{load_after:.1f} after, on {os.cpu_count()} CPUs)"
    )
    verdict = "meets" if worst_ratio <= GOAL_PEAK_RATIO else "MISSES"
    console.print(
        f"peak memory of parse + print, files of 1 MB and up: at most {worst_ratio:.1f}x the input "
        f"above the interpreter's base ({verdict} the goal of {GOAL_PEAK_RATIO:g}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
