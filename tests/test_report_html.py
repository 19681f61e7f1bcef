"""The HTML analysis report, checked as a person sees it: in a real headless Chromium.

``render_html`` turns the report dict of ``ptxasw analyze`` into one page. The string checks
below (balanced tags, escaping, size on a 50k-line file) run everywhere; the rest open the page
in Debian's ``chromium`` through Playwright and read the DOM: the title and summary rows, the
computed colours of the highlighted loads (and the pixels of one, in a screenshot), the blocked
loads' reasons, the CUDA source lines, the links between loads, the "only load lines" switch,
and that text from the PTX stays text.

Chromium missing is a failure with the fix in the message, not a skip: CI installs it through
``scripts/install-system-deps.sh``. Set ``PTXASW_NO_BROWSER=1`` to skip the browser tests.
"""

from __future__ import annotations

import copy
import json
import os
import re
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from benchmarks.report_render import FIXTURE, synthetic_report
from benchmarks.report_screenshot import find_chromium
from ptxasw.synth.html import LOAD_CLASSES, render_html

BROWSER_HELP = (
    "the HTML report tests need headless Chromium driven by Playwright: install Debian's chromium "
    "(scripts/install-system-deps.sh) and the test extras (pip install -e '.[test]'), point "
    "PTXASW_CHROMIUM at another Chromium binary, or set PTXASW_NO_BROWSER=1 to skip these tests"
)

# PTX whose comment, reason, source and kernel texts are full of markup: all of it must stay text.
HOSTILE_PTX = """\
.version 8.0
.target sm_90
.address_size 64
// <b>not bold</b> & <script>document.title = "pwned"</script> &amp; <img src=x>
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b64 \t%rd<3>;
\t.reg .f32 \t%f<3>;
\tld.param.u64 \t%rd1, [k_param_0];
\tld.global.f32 \t%f1, [%rd1];
\tld.global.f32 \t%f2, [%rd1+132];
\tret;
}
"""
HOSTILE_SOURCE = "// k.cu\nif (a < b && c > d) x = <i>y</i>;\nfloat v = in[i + 33];\n"


def hostile_report() -> dict[str, Any]:
    def load(line: int, lineno: int, **fields: Any) -> dict[str, Any]:
        base = {
            "line": line,
            "column": 2,
            "text": HOSTILE_PTX.splitlines()[line - 1].strip(),
            "source_line": f"k.cu:{lineno}",
            "source_file": "k.cu",
            "source_lineno": lineno,
            "status": "blocked",
            "delta": None,
            "source_load_line": None,
            "corner_lanes": None,
            "proof": None,
            "reason": None,
        }
        return base | fields

    loads = [
        load(12, 2, reason="no neighbour <u>&</u>"),
        load(13, 3, reason="delta out of range (33)", delta=33, source_load_line=12),
    ]
    kernel = {
        "name": "k",
        "file": "hostile<1>.ptx",
        "status": "partial",
        "reason": "analysis budget <10 s> exceeded",
        "loads": 2,
        "shuffles": 0,
        "average_delta": None,
        "analysis_seconds": 10.02,
        "loads_detail": loads,
    }
    return {
        "tool": "ptxasw 0.1.0",
        "options": {"mode": "normal", "max_delta": "<31>"},
        "files": {"hostile<1>.ptx": {"ptx": HOSTILE_PTX, "sources": {"k.cu": HOSTILE_SOURCE}}},
        "kernels": [kernel],
    }


def fixture_report() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def all_loads(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [load for kernel in report["kernels"] for load in kernel["loads_detail"]]


# -- checks on the HTML text (no browser) ------------------------------------------------------

VOID = {"meta", "br", "input", "img", "hr", "link", "wbr"}


class _TagBalance(HTMLParser):
    """Records every start tag and fails on an end tag that closes anything but the open one."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: Counter[str] = Counter()
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()


def tag_balance(page: str) -> _TagBalance:
    parser = _TagBalance()
    parser.feed(page)
    parser.close()
    return parser


@pytest.mark.parametrize("make", [fixture_report, hostile_report], ids=["stencil", "hostile"])
def test_page_is_well_formed(make) -> None:
    page = render_html(make())
    balance = tag_balance(page)
    assert balance.errors == []
    assert balance.stack == []
    # Only the page's own script, and no markup smuggled in from the report.
    assert balance.tags["script"] == 1
    assert balance.tags["img"] == 0 and balance.tags["b"] == 0 and balance.tags["u"] == 0
    assert "http://" not in page and "https://" not in page and "<link" not in page


def test_report_text_is_escaped() -> None:
    page = render_html(hostile_report())
    assert "&lt;b&gt;not bold&lt;/b&gt; &amp; &lt;script&gt;" in page
    assert "&amp;amp;" in page  # a literal "&amp;" in the PTX stays those five characters
    assert "%rd&lt;3&gt;" in page
    assert "no neighbour &lt;u&gt;&amp;&lt;/u&gt;" in page
    assert "if (a &lt; b &amp;&amp; c &gt; d) x = &lt;i&gt;y&lt;/i&gt;;" in page
    assert "analysis budget &lt;10 s&gt; exceeded" in page
    assert "hostile&lt;1&gt;.ptx" in page


def test_minimal_report_from_the_issue_keys() -> None:
    """Only the keys issue 7's JSON promises (no files, no load texts): every load still shown."""
    loads = [
        {
            "line": 40,
            "source_line": None,
            "delta": None,
            "source_load_line": None,
            "status": "blocked",
            "reason": "vector load",
        },
        {
            "line": 44,
            "source_line": "a.cu:3",
            "delta": -2,
            "source_load_line": 40,
            "status": "shuffle",
            "reason": None,
        },
    ]
    kernel = {
        "name": "_Z1kPf",
        "file": "a.ptx",
        "loads": 2,
        "shuffles": 1,
        "average_delta": 2.0,
        "analysis_seconds": 0.5,
        "loads_detail": loads,
    }
    page = render_html({"kernels": [kernel]})
    assert tag_balance(page).errors == []
    assert 'class="load load-shuffle"' in page and 'class="load load-blocked"' in page
    assert 'N = -2 (shfl.sync.up) from <a href="#f0-L40">line 40</a>' in page
    assert "vector load" in page and "a.cu:3: (source not available)" in page
    assert "<title>ptxasw analysis report: a.ptx</title>" in page


def test_big_report_size_and_every_load_marked() -> None:
    """A 50k-line file: every load line carries its class, and the page stays < 5x the PTX."""
    report = synthetic_report(50_000)
    ptx = next(iter(report["files"].values()))["ptx"]
    page = render_html(report)
    assert ptx.count("\n") >= 50_000
    by_status = Counter(load["status"] for load in all_loads(report))
    for status, cls in LOAD_CLASSES.items():
        assert page.count(f'class="load {cls}"') == by_status[status] > 0
    assert len(page.encode()) < 5 * len(ptx.encode())
    last = ptx.count("\n")
    assert f'id="f0-L{last}"' in page and f'id="f0-L{last + 1}"' not in page


# -- in the browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if os.environ.get("PTXASW_NO_BROWSER") == "1":
        pytest.skip("PTXASW_NO_BROWSER=1: browser tests of the HTML report skipped")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed: {BROWSER_HELP}", pytrace=False)
    executable = find_chromium()
    if executable is None:
        pytest.fail(f"no chromium found ($PTXASW_CHROMIUM, then PATH): {BROWSER_HELP}", pytrace=False)
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, headless=True)
        yield instance
        instance.close()


@pytest.fixture
def open_report(browser: Any, tmp_path: Path):
    """Write a report's page to tmp_path and open it from its file:// URL."""
    pages: list[Any] = []

    def open_(report: dict[str, Any], name: str = "report.html") -> Any:
        path = tmp_path / name
        path.write_text(render_html(report), encoding="utf-8")
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        pages.append(page)
        page.goto(path.as_uri())
        return page

    yield open_
    for page in pages:
        page.close()


def background(page: Any, selector: str) -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


def test_summary_and_highlighted_loads(open_report, tmp_path: Path) -> None:
    report = fixture_report()
    page = open_report(report)
    assert page.title() == "ptxasw analysis report: stencil.ptx"

    rows = page.locator("#summary tbody tr")
    assert rows.count() == 2
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(2)]
    assert cells[0] == ["jacobi", "stencil.ptx", "5", "2", "1.00", "0.412 s", "complete"]
    assert cells[1][0] == "blur" and cells[1][2:4] == ["4", "2"]
    assert page.locator("#summary tfoot td").all_inner_texts()[2:4] == ["9", "4"]

    # Every load line has its status's class; nothing else does.
    for status, cls in LOAD_CLASSES.items():
        expected = sorted(load["line"] for load in all_loads(report) if load["status"] == status)
        ids = page.eval_on_selector_all(f".listing .{cls}", "es => es.map(e => e.id)")
        assert sorted(int(i.rsplit("L", 1)[1]) for i in ids) == expected

    plain = background(page, "#f0-L1")
    colours = {status: background(page, f".listing .{cls}") for status, cls in LOAD_CLASSES.items()}
    assert len({plain, *colours.values()}) == 4, (plain, colours)
    assert all(colour != "rgba(0, 0, 0, 0)" for colour in colours.values())
    for status, cls in LOAD_CLASSES.items():
        assert {
            background(page, f"#{e}")
            for e in page.eval_on_selector_all(f".listing .{cls}", "es => es.map(e => e.id)")
        } == {colours[status]}

    # The shuffled line really is painted in that colour: read the pixels of its screenshot.
    shot = tmp_path / "line73.png"
    page.locator("#f0-L73").screenshot(path=str(shot))
    width, height, pixels = decode_png(shot.read_bytes())
    green = tuple(int(c) for c in colours["shuffle"].removeprefix("rgb(").rstrip(")").split(","))
    share = pixels.count(green) / (width * height)
    assert share > 0.5, (green, Counter(pixels).most_common(3))

    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_annotations_reasons_and_source_lines(open_report) -> None:
    page = open_report(fixture_report())
    note = page.locator("#f0-L73 + .note")
    text = note.inner_text()
    assert text.upper().startswith("SHUFFLE N = -1") and "N = -1 (shfl.sync.up) from line 71" in text
    assert "lane 0 (and incomplete warps) load" in text and "proof: proved" in text
    assert "stencil.cu:10: float w = in[i - 1];" in text
    assert "N = +1 (shfl.sync.down)" in page.locator("#f0-L77 + .note").inner_text()
    assert "N = 0: the value loaded at line 134" in page.locator("#f0-L139 + .note").inner_text()

    blocked = page.locator(".note-blocked").all_inner_texts()
    assert len(blocked) == 5
    for reason in ("no neighbour", "non-constant delta (depends on param nx)", "store in between"):
        assert any(reason in t for t in blocked), reason
    # A source load lists the loads it feeds.
    assert "no neighbour · value shared with line 73, line 77" in page.locator("#f0-L71 + .note").inner_text()


def test_links_between_loads_and_load_filter(open_report) -> None:
    page = open_report(fixture_report())
    page.locator("#f0-L73 + .note a", has_text="line 71").click()
    assert page.evaluate("location.hash") == "#f0-L71"
    assert page.evaluate("document.querySelector(':target').id") == "f0-L71"
    page.locator("#summary a", has_text="blur").click()
    assert "blur(" in page.evaluate("document.querySelector(':target').textContent")

    assert page.locator("#f0-L1").is_visible()
    page.locator("input.only-loads").check()
    assert not page.locator("#f0-L1").is_visible()
    assert page.locator("#f0-L73").is_visible() and page.locator("#f0-L73 + .note").is_visible()
    assert page.locator("#f0-L15").is_visible()  # the kernel's .entry line stays as a heading
    page.locator("input.only-loads").uncheck()
    assert page.locator("#f0-L1").is_visible()


def test_escaping_in_the_browser(open_report) -> None:
    page = open_report(hostile_report())
    assert page.title() == "ptxasw analysis report: hostile<1>.ptx"  # the script in the PTX never ran
    assert page.locator(".listing b, .listing img, .note u, .note i").count() == 0
    assert page.locator("script").count() == 1
    assert page.locator("#f0-L4").inner_text().endswith(HOSTILE_PTX.splitlines()[3])
    assert page.locator("#f0-L9").inner_text().endswith("%rd<3>;")
    note = page.locator("#f0-L12 + .note").inner_text()
    assert "no neighbour <u>&</u>" in note and "if (a < b && c > d) x = <i>y</i>;" in note
    assert "delta out of range (33)" in page.locator("#f0-L13 + .note").inner_text()
    assert page.locator("#summary tbody td").last.inner_text() == "partial: analysis budget <10 s> exceeded"


def test_missing_texts_still_show_every_load(open_report) -> None:
    """No PTX text (or an unreadable CUDA source): the loads are still listed with their notes."""
    report = fixture_report()
    report["files"]["stencil.ptx"]["ptx"] = None
    report["files"]["stencil.ptx"]["sources"]["stencil.cu"] = None
    page = open_report(report)
    assert "not in the report" in page.locator("#f0").inner_text()
    assert page.locator(".orphans .load").count() == len(all_loads(report))
    assert page.locator(".orphans .load-shuffle").count() == 3
    note = page.locator(".orphans .load-shuffle + .note").first.inner_text()
    assert "stencil.cu:10: (source not available)" in note
    # The summary still links each kernel somewhere on the page.
    assert page.locator("#summary tbody a").first.get_attribute("href") == "#f0-L71"


def test_big_report_opens(open_report) -> None:
    """The 50k-line page loads completely: every highlighted load is in the DOM, links reach the end."""
    from playwright.sync_api import expect

    report = synthetic_report(50_000)
    page = open_report(report, "big.html")
    last = next(iter(report["files"].values()))["ptx"].count("\n")
    # Only the chunks on screen are laid out: jump to the last line the way a link does, and read it.
    page.evaluate(f"location.hash = '#f0-L{last}'")
    line = page.locator(f"#f0-L{last}")
    line.wait_for(state="visible")
    box = line.bounding_box()
    assert box is not None and 0 <= box["y"] < 900, box
    assert line.inner_text().endswith('.file\t1 "stencil.cu"')
    middle = page.locator(f"#f0-L{last // 2}")
    middle.scroll_into_view_if_needed()
    expect(middle).to_have_text(re.compile(rf"^{last // 2}\s"), use_inner_text=True)  # once laid out
    shuffles = sum(1 for load in all_loads(report) if load["status"] == "shuffle")
    assert page.locator(".listing .load-shuffle").count() == shuffles
    assert page.locator("#summary tbody tr").count() == len(report["kernels"])


def test_fixture_kernel_copy_is_independent() -> None:
    """synthetic_report leaves the fixture alone (its loads are deep copies)."""
    before = copy.deepcopy(fixture_report())
    synthetic_report(1_000)
    assert fixture_report() == before


# -- a small PNG reader (8-bit RGB/RGBA, as Chromium writes them) ------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and the RGB pixels, row by row, of an 8-bit non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = row[x - bpp] if x >= bpp else 0
            up = previous[x]
            corner = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                row[x] = (row[x] + left) & 0xFF
            elif kind == 2:
                row[x] = (row[x] + up) & 0xFF
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                row[x] = (row[x] + pred) & 0xFF
        rows.append(row)
        previous = row
    pixels = [tuple(row[x : x + 3]) for row in rows for x in range(0, stride, bpp)]
    return width, height, pixels
