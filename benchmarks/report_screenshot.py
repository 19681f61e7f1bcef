"""Render an analysis report as HTML and photograph it in headless Chromium.

The HTML report is for people, so it is checked the way a person sees it: this script renders
a report (by default the example ``tests/fixtures/report_stencil.json``, real nvcc PTX of two
stencils with their CUDA source) with ``ptxasw.synth.html.render_html``, opens the page in
Debian's ``chromium`` through Playwright (browsers cannot be downloaded here, so Playwright is
pointed at the system binary) and saves a PNG of the whole page.

Usage: ``python benchmarks/report_screenshot.py [REPORT.json] [-o PNG] [--html OUT.html] [--width PX]``
(default PNG: ``benchmarks/results/report_example.png``).

The browser is found through ``$PTXASW_CHROMIUM``, else ``chromium``, ``chromium-browser``,
``google-chrome`` on ``PATH``; ``scripts/install-system-deps.sh`` installs Debian's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxasw.synth.html import render_html  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "report_stencil.json"
DEFAULT_PNG = ROOT / "benchmarks" / "results" / "report_example.png"
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """Path of a Chromium binary Playwright can drive, or None when none is installed."""
    env = os.environ.get("PTXASW_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(html_file: Path, png: Path, width: int = 1400, height: int = 900) -> None:
    """Open ``html_file`` in headless Chromium and save a full-page PNG to ``png``."""
    from playwright.sync_api import sync_playwright

    executable = find_chromium()
    if executable is None:
        raise SystemExit(
            "report_screenshot: no chromium found (apt-get install chromium, or set PTXASW_CHROMIUM)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(html_file.resolve().as_uri())
            page.screenshot(path=str(png), full_page=True)
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "report", nargs="?", type=Path, default=FIXTURE, help="report JSON (ptxasw analyze --json)"
    )
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_PNG, help="PNG to write")
    parser.add_argument("--html", type=Path, help="also keep the HTML page here")
    parser.add_argument("--width", type=int, default=1400, help="viewport width in pixels")
    args = parser.parse_args()

    page = render_html(json.loads(args.report.read_text()))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html_file = args.html or Path(tmp) / "report.html"
        html_file.write_text(page, encoding="utf-8")
        screenshot(html_file, args.output, width=args.width)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
