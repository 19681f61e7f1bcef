"""Time and size of the HTML analysis report (``ptxasw.synth.html.render_html``) on large PTX files.

nvcc, NVHPC and template libraries emit PTX files of tens of thousands of lines, and the
report embeds the whole listing, so the page must stay quick to build and of a size a browser
opens without trouble. The reports measured here are synthetic but shaped like real ones: the
example report ``tests/fixtures/report_stencil.json`` (real nvcc PTX of two stencils with
``.loc`` lines, their CUDA source and an analysis of every global load) has its kernels
repeated, renamed, until the PTX has the asked number of lines; every copy keeps its loads'
annotations (about one global load in 18 lines).

Usage: ``python benchmarks/report_render.py [--lines N ...] [--browser] [--json]``

Columns: PTX lines, annotated loads, PTX size (MB), HTML size (MB), HTML / PTX size ratio,
render time (best of 3, seconds) and render speed (PTX lines per second). With ``--browser``
also the time headless Chromium takes to open the page from a file (until its load event,
best of 3) and to switch the "only load lines" filter on, the two waits a reader sees.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxasw.synth.html import render_html  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "report_stencil.json"
DEFAULT_LINES = (5_000, 50_000, 200_000)


def load_fixture() -> dict[str, Any]:
    """The example report: real nvcc PTX of two stencils, analysed load by load."""
    return json.loads(FIXTURE.read_text())


def synthetic_report(min_lines: int) -> dict[str, Any]:
    """The example report with its kernels repeated (renamed) until the PTX has ``min_lines`` lines.

    The PTX is split into a head (up to the first kernel), the kernels, and a tail (the
    ``.file`` table); copy ``k`` of the kernels gets the suffix ``_k`` on every kernel name
    (which renames their ``_param_N`` too) and its loads' line numbers shifted by ``k`` times
    the kernels' length.
    """
    base = load_fixture()
    ((path, entry),) = base["files"].items()
    lines = entry["ptx"].splitlines()
    first = next(i for i, text in enumerate(lines) if text.strip().startswith("// .globl"))
    last = next(i for i, text in enumerate(lines) if text.strip().startswith(".file"))
    head, body, tail = lines[:first], lines[first:last], lines[last:]
    names = [kernel["name"] for kernel in base["kernels"]]
    rename = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")(?=\b|_param)")
    copies = max(1, -(-(min_lines - len(head) - len(tail)) // len(body)))

    ptx_lines = list(head)
    kernels: list[dict[str, Any]] = []
    for k in range(copies):
        shift = len(head) + k * len(body) - first
        ptx_lines += [rename.sub(lambda m, k=k: f"{m.group(1)}_{k}", text) for text in body]
        for kernel in base["kernels"]:
            clone = copy.deepcopy(kernel)
            clone["name"] = f"{kernel['name']}_{k}"
            for load in clone["loads_detail"]:
                load["line"] += shift
                if load.get("source_load_line") is not None:
                    load["source_load_line"] += shift
            kernels.append(clone)
    ptx_lines += tail
    files = {path: {"ptx": "\n".join(ptx_lines) + "\n", "sources": entry["sources"]}}
    return {"tool": base["tool"], "options": base["options"], "files": files, "kernels": kernels}


def browser_times(page_html: str, repeats: int = 3) -> tuple[float, float]:
    """Best seconds for headless Chromium to open the page, and to apply the load filter."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from benchmarks.report_screenshot import find_chromium

    executable = find_chromium()
    if executable is None:
        raise SystemExit("report_render: --browser needs chromium (scripts/install-system-deps.sh)")
    open_best = filter_best = float("inf")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        path = Path(tmp) / "report.html"
        path.write_text(page_html, encoding="utf-8")
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            start = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load")
            open_best = min(open_best, time.perf_counter() - start)
            start = time.perf_counter()
            page.locator("input.only-loads").first.check()
            page.evaluate("document.body.offsetHeight")  # force the style and layout pass
            filter_best = min(filter_best, time.perf_counter() - start)
            page.close()
        browser.close()
    return open_best, filter_best


def measure(min_lines: int, repeats: int = 3, browser: bool = False) -> dict[str, Any]:
    report = synthetic_report(min_lines)
    ptx = next(iter(report["files"].values()))["ptx"]
    best = float("inf")
    page = ""
    for _ in range(repeats):
        start = time.perf_counter()
        page = render_html(report)
        best = min(best, time.perf_counter() - start)
    ptx_bytes = len(ptx.encode())
    html_bytes = len(page.encode())
    lines = ptx.count("\n")
    open_s, filter_s = browser_times(page) if browser else (None, None)
    return {
        "ptx_lines": lines,
        "loads": sum(len(k["loads_detail"]) for k in report["kernels"]),
        "kernels": len(report["kernels"]),
        "ptx_mb": ptx_bytes / 1e6,
        "html_mb": html_bytes / 1e6,
        "size_ratio": html_bytes / ptx_bytes,
        "render_seconds": best,
        "lines_per_second": lines / best,
        "browser_open_seconds": open_s,
        "browser_filter_seconds": filter_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, nargs="+", default=list(DEFAULT_LINES))
    parser.add_argument("--browser", action="store_true", help="also time opening the page in chromium")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = [measure(n, browser=args.browser) for n in args.lines]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        f"{'PTX lines':>10} {'loads':>7} {'PTX MB':>7} {'HTML MB':>8} {'ratio':>6} "
        f"{'render s':>9} {'lines/s':>10}" + (f" {'open s':>7} {'filter s':>8}" if args.browser else "")
    )
    for r in rows:
        print(
            f"{r['ptx_lines']:>10} {r['loads']:>7} {r['ptx_mb']:>7.2f} {r['html_mb']:>8.2f} "
            f"{r['size_ratio']:>6.2f} {r['render_seconds']:>9.3f} {r['lines_per_second']:>10.0f}"
            + (
                f" {r['browser_open_seconds']:>7.2f} {r['browser_filter_seconds']:>8.2f}"
                if args.browser
                else ""
            )
        )


if __name__ == "__main__":
    main()
