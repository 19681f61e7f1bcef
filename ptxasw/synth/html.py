"""Render the analysis report (the dict ``ptxasw analyze`` builds) as one self-contained HTML page.

Why a page at all: the JSON answers "how many loads became shuffles", but the person deciding
whether to trust or tune the rewrite wants to *see* the PTX with every global load marked, the
lane it reads from, the CUDA line it came from, and for the loads left alone the reason. So the
page is the PTX listing itself, with line numbers, annotated in place, under a summary table with
the PTXASW paper's Table-2 columns.

Design choices, and why:

- Self-contained (inline CSS, a few lines of vanilla JS, no fonts, images or frameworks): the page
  is attached to CI artefacts and mailed around, and must open offline exactly as it was made.
- Everything taken from the report is escaped: PTX declares register ranges as ``%r<15>`` and
  CUDA source is full of ``<`` and ``&``.
- Size and speed: nvcc and NVHPC emit PTX files of tens of thousands of lines, so a plain line
  costs one short ``<div>`` (its anchor id and a line number) and the page is built by joining a
  list of strings. Only load lines carry classes and annotations.
- The page reads the report as given and never re-analyses the PTX. The one thing it looks up in
  the text is each kernel's ``.entry``/``.func`` line, to give the summary a link target.

The classes ``load-shuffle``, ``load-reuse`` and ``load-blocked`` (see :data:`LOAD_CLASSES`) mark
the load lines; the test drives a real headless browser over them.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["LOAD_CLASSES", "render_html"]

#: CSS class of a load line, by the load's ``status`` in the report.
LOAD_CLASSES: Mapping[str, str] = {
    "shuffle": "load-shuffle",
    "reuse": "load-reuse",
    "blocked": "load-blocked",
}

_STYLE = """
:root { --fg: #1f2328; --muted: #6e7781; --line: #d0d7de; --shuffle: #dcf5e1; --shuffle-edge: #1a7f37;
  --reuse: #ddeeff; --reuse-edge: #0969da; --blocked: #fdecea; --blocked-edge: #cf222e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  margin: 0 auto; padding: 1.2em 2em 4em; max-width: 1500px; }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
h2 { font-size: 1.15em; margin: 0; display: inline; }
code, .listing, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.meta { color: var(--muted); margin: 0 0 1.2em; }
.meta code { color: var(--fg); }
table.summary { border-collapse: collapse; margin: .5em 0 1.5em; }
table.summary th, table.summary td { border-bottom: 1px solid var(--line); padding: .3em .8em; }
table.summary th { text-align: left; background: #f6f8fa; font-weight: 600; }
table.summary td.num, table.summary th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.summary td.kernel { word-break: break-all; max-width: 34em; }
table.summary tfoot td { font-weight: 600; border-bottom: none; }
.status-complete { color: var(--shuffle-edge); }
.status-partial { color: #9a6700; }
.status-error { color: #cf222e; }
.legend { margin: .3em 0 .8em; color: var(--muted); }
.swatch { display: inline-block; padding: 0 .5em; margin-right: .6em; border-radius: 3px; color: var(--fg); }
.swatch.load-shuffle { background: var(--shuffle); box-shadow: inset 3px 0 var(--shuffle-edge); }
.swatch.load-reuse { background: var(--reuse); box-shadow: inset 3px 0 var(--reuse-edge); }
.swatch.load-blocked { background: var(--blocked); box-shadow: inset 3px 0 var(--blocked-edge); }
details.file { margin: 1.2em 0; border: 1px solid var(--line); border-radius: 6px; }
details.file > summary { padding: .5em .8em; background: #f6f8fa; cursor: pointer; border-radius: 6px; }
.file-tools { padding: .4em .8em; border-bottom: 1px solid var(--line); color: var(--muted); }
.listing { tab-size: 8; font-size: 12.5px; line-height: 1.5; overflow-x: auto;
  padding: .3em 0; }
.listing .chunk { content-visibility: auto; }
.chunk > div { white-space: pre; position: relative; padding: 0 1em 0 calc(var(--lnw, 5ch) + 3ch);
  min-height: 1.5em; }
.listing i { font-style: normal; position: absolute; left: 1ch; width: var(--lnw, 5ch); text-align: right;
  color: var(--muted); user-select: none; }
.chunk > div:target { outline: 2px solid #d4a72c; outline-offset: -2px; }
.listing .entry { font-weight: 700; border-top: 1px solid var(--line); }
.listing .load-shuffle { background: var(--shuffle); box-shadow: inset 4px 0 var(--shuffle-edge); }
.listing .load-reuse { background: var(--reuse); box-shadow: inset 4px 0 var(--reuse-edge); }
.listing .load-blocked { background: var(--blocked); box-shadow: inset 4px 0 var(--blocked-edge); }
.listing .note { white-space: normal; font: 12.5px/1.4 system-ui, sans-serif; color: #3b4148;
  padding: .1em 1em .35em calc(var(--lnw, 5ch) + 3ch); margin-bottom: .15em; }
.note-shuffle { background: #f1fbf3; box-shadow: inset 4px 0 var(--shuffle-edge); }
.note-reuse { background: #f2f8ff; box-shadow: inset 4px 0 var(--reuse-edge); }
.note-blocked { background: #fff7f6; box-shadow: inset 4px 0 var(--blocked-edge); }
.note .tag { font-weight: 700; text-transform: uppercase; font-size: .78em; letter-spacing: .04em;
  margin-right: .2em; }
.note-shuffle .tag { color: var(--shuffle-edge); } .note-reuse .tag { color: var(--reuse-edge); }
.note-blocked .tag { color: var(--blocked-edge); }
.note .sep { color: var(--muted); margin: 0 .2em; }
.note .src { display: block; color: var(--muted); }
.note .src code { color: var(--fg); white-space: pre-wrap; }
.proof-proved { color: var(--shuffle-edge); } .proof-failed, .proof-timeout { color: var(--blocked-edge); }
.loads-only .chunk > div:not(.load):not(.note):not(.entry) { display: none; }
.orphans { padding: .4em .8em; }
"""

# Toggle per listing: show only load lines (with their notes and the kernels' entry lines).
_SCRIPT = """
document.querySelectorAll('input.only-loads').forEach(function (box) {
  box.addEventListener('change', function () {
    document.getElementById(box.dataset.listing).classList.toggle('loads-only', box.checked);
  });
});
"""

_esc = html.escape

# Lines per chunk of the listing. Each chunk is a `content-visibility: auto` box, so the browser
# lays out only the chunks on screen: a 50k-line file opens and filters quickly.
_CHUNK_LINES = 256


def render_html(report: Mapping[str, Any]) -> str:
    """Return the whole HTML page for ``report`` (the dict ``ptxasw analyze --json`` prints)."""
    files: Mapping[str, Any] = report.get("files") or {}
    kernels: list[Mapping[str, Any]] = list(report.get("kernels") or [])
    # Every file that has PTX text or kernels gets a section; its index names its anchors.
    paths = list(files)
    for kernel in kernels:
        if kernel.get("file") not in paths:
            paths.append(str(kernel.get("file")))
    file_ids = {path: f"f{i}" for i, path in enumerate(paths)}
    entry_lines = {path: _entry_lines(_ptx_text(files, path)) for path in paths}

    parts: list[str] = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_esc(_title(paths))}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n",
        "<h1>ptxasw shuffle analysis</h1>\n",
        _meta(report),
        _summary(kernels, file_ids, entry_lines),
        _legend(),
    ]
    for path in paths:
        kernels_here = [k for k in kernels if k.get("file") == path]
        parts.append(
            _file_section(path, file_ids[path], files.get(path) or {}, kernels_here, entry_lines[path])
        )
    parts.append(f"<script>{_SCRIPT}</script>\n</body>\n</html>\n")
    return "".join(parts)


# -- page head ---------------------------------------------------------------------------------


def _title(paths: list[str]) -> str:
    names = [p.replace("\\", "/").rsplit("/", 1)[-1] for p in paths]
    if not names:
        return "ptxasw analysis report"
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"ptxasw analysis report: {shown}"


def _meta(report: Mapping[str, Any]) -> str:
    items = [f"<code>{_esc(str(report.get('tool', 'ptxasw')))}</code>"]
    for key, value in (report.get("options") or {}).items():
        items.append(f"{_esc(str(key))} <code>{_esc(str(value))}</code>")
    return f'<p class="meta">{" &middot; ".join(items)}</p>\n'


def _legend() -> str:
    return (
        '<p class="legend">'
        '<span class="swatch load-shuffle">shuffle</span>value taken from lane + N with shfl.sync'
        '<span class="sep"> &nbsp; </span><span class="swatch load-reuse">reuse</span>'
        "value already in a register (N = 0)"
        '<span class="sep"> &nbsp; </span><span class="swatch load-blocked">blocked</span>'
        "load kept, with the reason</p>\n"
    )


# -- summary table (the paper's Table 2) -------------------------------------------------------


def _summary(
    kernels: list[Mapping[str, Any]], file_ids: Mapping[str, str], entry_lines: Mapping[str, dict[str, int]]
) -> str:
    head = (
        '<table class="summary" id="summary">\n<thead><tr><th>Kernel</th><th>File</th>'
        '<th class="num">Global loads</th><th class="num">Shuffles</th><th class="num">Average |N|</th>'
        '<th class="num">Analysis time</th><th>Status</th></tr></thead>\n<tbody>\n'
    )
    rows = [head]
    for kernel in kernels:
        path = kernel.get("file", "")
        name = str(kernel.get("name", "?"))
        line = entry_lines.get(path, {}).get(name) or _first_load_line(kernel)
        fid = file_ids.get(path, "")
        target = f"#{fid}-L{line}" if line else f"#{fid}"
        status = str(kernel.get("status", "complete"))
        reason = kernel.get("reason")
        status_cell = _esc(status) + (f": {_esc(str(reason))}" if reason else "")
        rows.append(
            f'<tr><td class="kernel mono"><a href="{target}">{_esc(name)}</a></td>'
            f'<td class="mono">{_esc(_basename(path))}</td>'
            f'<td class="num">{_count(kernel.get("loads"))}</td>'
            f'<td class="num">{_count(kernel.get("shuffles"))}</td>'
            f'<td class="num">{_average(kernel.get("average_delta"))}</td>'
            f'<td class="num">{_seconds(kernel.get("analysis_seconds"))}</td>'
            f'<td class="status-{_esc(status)}">{status_cell}</td></tr>\n'
        )
    rows.append("</tbody>\n")
    if len(kernels) > 1:
        rows.append(_totals(kernels))
    rows.append("</table>\n")
    return "".join(rows)


def _totals(kernels: list[Mapping[str, Any]]) -> str:
    """The total row; its average |N| weighs each kernel's average by its shuffles."""
    loads = sum(int(k.get("loads") or 0) for k in kernels)
    shuffles = sum(int(k.get("shuffles") or 0) for k in kernels)
    weighted = [
        (k["average_delta"], int(k.get("shuffles") or 0))
        for k in kernels
        if k.get("average_delta") is not None
    ]
    weight = sum(w for _, w in weighted)
    average = sum(a * w for a, w in weighted) / weight if weight else None
    seconds = sum(float(k.get("analysis_seconds") or 0.0) for k in kernels)
    partial = sum(1 for k in kernels if k.get("status") == "partial")
    errors = sum(1 for k in kernels if k.get("status") == "error")
    counts = []
    if partial:
        counts.append(f"{partial} partial")
    if errors:
        counts.append(f"{errors} not synthesised")
    status = ", ".join(counts) or "all complete"
    return (
        f'<tfoot><tr><td>{len(kernels)} kernels</td><td></td><td class="num">{loads}</td>'
        f'<td class="num">{shuffles}</td><td class="num">{_average(average)}</td>'
        f'<td class="num">{_seconds(seconds)}</td><td>{status}</td></tr></tfoot>\n'
    )


# -- one file: the annotated PTX listing -------------------------------------------------------


def _file_section(
    path: str,
    fid: str,
    entry: Mapping[str, Any],
    kernels: list[Mapping[str, Any]],
    entry_lines: Mapping[str, int],
) -> str:
    loads = {int(load["line"]): load for kernel in kernels for load in kernel.get("loads_detail") or ()}
    feeds = _feeds(loads.values())
    sources = _SourceLines(entry.get("sources") or {})
    ptx = entry.get("ptx")
    lines = ptx.splitlines() if isinstance(ptx, str) else []
    shuffled = sum(1 for load in loads.values() if load.get("status") in ("shuffle", "reuse"))
    parts = [
        f'<details class="file" id="{fid}" open>\n<summary><h2 class="mono">{_esc(path)}</h2>'
        f" &nbsp;{len(lines)} lines, {len(loads)} global loads, {shuffled} replaced</summary>\n"
    ]
    if not lines:
        parts.append('<p class="orphans">The PTX text of this file is not in the report.</p>\n')
    else:
        width = len(str(len(lines)))
        parts.append(
            f'<div class="file-tools"><label><input type="checkbox" class="only-loads" '
            f'data-listing="{fid}-listing"> only load lines</label></div>\n'
            f'<div class="listing" id="{fid}-listing" style="--lnw: {width}ch">\n'
        )
        entries = set(entry_lines.values())
        for start in range(0, len(lines), _CHUNK_LINES):
            chunk = lines[start : start + _CHUNK_LINES]
            notes = sum(1 for number in range(start + 1, start + len(chunk) + 1) if number in loads)
            height = 1.5 * len(chunk) + 3.4 * notes
            parts.append(f'<div class="chunk" style="contain-intrinsic-size: auto {height:.0f}em">\n')
            for number, text in enumerate(chunk, start=start + 1):
                anchor = f"{fid}-L{number}"
                load = loads.get(number)
                if load is not None:
                    cls = "load " + LOAD_CLASSES.get(str(load.get("status")), "load-blocked")
                    parts.append(f'<div id="{anchor}" class="{cls}"><i>{number}</i>{_esc(text)}</div>')
                    parts.append(_note(load, fid, sources, feeds.get(number, ())))
                elif number in entries:
                    parts.append(f'<div id="{anchor}" class="entry"><i>{number}</i>{_esc(text)}</div>\n')
                else:
                    parts.append(f'<div id="{anchor}"><i>{number}</i>{_esc(text)}</div>\n')
            parts.append("</div>\n")
        parts.append("</div>\n")
    orphans = [load for number, load in sorted(loads.items()) if number < 1 or number > len(lines)]
    if orphans:
        parts.append(_orphan_list(orphans, fid, sources, feeds))
    parts.append("</details>\n")
    return "".join(parts)


def _orphan_list(
    orphans: list[Mapping[str, Any]], fid: str, sources: _SourceLines, feeds: Mapping[int, list[int]]
) -> str:
    """Loads whose line is not in the listing (no PTX text in the report): still shown, as a list."""
    parts = ['<div class="orphans"><p>Loads of this file:</p>\n<div class="listing"><div class="chunk">\n']
    for load in orphans:
        cls = "load " + LOAD_CLASSES.get(str(load.get("status")), "load-blocked")
        number = int(load["line"])
        parts.append(f'<div class="{cls}"><i>{number}</i>{_esc(str(load.get("text", "")))}</div>')
        parts.append(_note(load, fid, sources, feeds.get(number, ())))
    parts.append("</div></div></div>\n")
    return "".join(parts)


def _note(load: Mapping[str, Any], fid: str, sources: _SourceLines, feeds: Iterable[int]) -> str:
    """The annotation under a load line: what happened to it, from where, and its CUDA line."""
    status = str(load.get("status"))
    sep = ' <span class="sep">&middot;</span> '
    items: list[str] = []
    if status == "shuffle":
        delta = load.get("delta")
        direction = "shfl.sync.down" if (delta or 0) > 0 else "shfl.sync.up"
        items.append(
            f"N = {_signed(delta)} ({direction}) from {_line_link(fid, load.get('source_load_line'))}"
            f"{_esc(element_note(load))}"
        )
        if load.get("corner_lanes"):
            items.append(f"corner cases: {_esc(str(load['corner_lanes']))}")
    elif status == "reuse":
        items.append(
            f"N = 0: the value loaded at {_line_link(fid, load.get('source_load_line'))}"
            f"{_esc(element_note(load))}"
        )
    else:
        status = "blocked"
        items.append(_esc(str(load.get("reason") or "no reason given")))
    if load.get("proof"):
        proof = str(load["proof"])
        items.append(f'proof: <span class="proof-{_esc(proof)}">{_esc(proof)}</span>')
    feeds = list(feeds)
    if feeds:
        items.append("value shared with " + ", ".join(_line_link(fid, n) for n in feeds))
    tag = f'<span class="tag">{_esc(status)}</span> '
    return f'<div class="note note-{status}">{tag}{sep.join(items)}{_source(load, sources)}</div>\n'


def _source(load: Mapping[str, Any], sources: _SourceLines) -> str:
    label = load.get("source_line")
    if not label:
        return ""
    text = sources.line(load.get("source_file"), load.get("source_lineno"))
    shown = f"<code>{_esc(text.strip())}</code>" if text is not None else "(source not available)"
    return f'<span class="src">{_esc(str(label))}: {shown}</span>'


def _feeds(loads: Iterable[Mapping[str, Any]]) -> dict[int, list[int]]:
    """For each source load line, the loads that take its value (so the source can link to them)."""
    feeds: dict[int, list[int]] = defaultdict(list)
    for load in loads:
        if load.get("status") in ("shuffle", "reuse") and load.get("source_load_line") is not None:
            feeds[int(load["source_load_line"])].append(int(load["line"]))
    return {line: sorted(users) for line, users in feeds.items()}


class _SourceLines:
    """The CUDA sources of one PTX file (``.file`` path -> text or None), split into lines once."""

    def __init__(self, texts: Mapping[str, str | None]) -> None:
        self._texts = texts
        self._lines: dict[str, list[str] | None] = {}

    def line(self, path: str | None, lineno: int | None) -> str | None:
        if path is None or lineno is None:
            return None
        if path not in self._lines:
            text = self._texts.get(path)
            self._lines[path] = text.splitlines() if isinstance(text, str) else None
        lines = self._lines[path]
        if lines is None or not 1 <= int(lineno) <= len(lines):
            return None
        return lines[int(lineno) - 1]


# -- small helpers -----------------------------------------------------------------------------

# A kernel's or function's name on its declaration line: `.entry NAME(` / `.func (ret) NAME(`.
_ENTRY = re.compile(r"^\s*(?:\.\w+\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)")


def _entry_lines(ptx: str | None) -> dict[str, int]:
    """Line of each ``.entry``/``.func`` name, for the summary's links (first occurrence wins)."""
    found: dict[str, int] = {}
    if not ptx:
        return found
    for number, text in enumerate(ptx.splitlines(), start=1):
        if ".entry" in text or ".func" in text:
            match = _ENTRY.match(text)
            if match:
                found.setdefault(match.group(1), number)
    return found


def _ptx_text(files: Mapping[str, Any], path: str) -> str | None:
    entry = files.get(path) or {}
    ptx = entry.get("ptx")
    return ptx if isinstance(ptx, str) else None


def _first_load_line(kernel: Mapping[str, Any]) -> int | None:
    lines = [int(load["line"]) for load in kernel.get("loads_detail") or ()]
    return min(lines) if lines else None


def element_note(load: dict[str, Any]) -> str:
    """Which registers of the source load a rewritten load takes, in words
    (empty for a scalar load from a scalar's, or a vector's first, register)."""
    elements = load.get("source_elements")
    if not elements or elements == [0]:
        return ""
    if len(elements) == 1:
        return f" (its element {elements[0]})"
    return f" (its elements {', '.join(str(e) for e in elements)})"


def _line_link(fid: str, line: Any) -> str:
    if line is None:
        return "an earlier load"
    return f'<a href="#{fid}-L{int(line)}">line {int(line)}</a>'


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _signed(delta: Any) -> str:
    return "?" if delta is None else f"{int(delta):+d}"


def _count(value: Any) -> str:
    return "&ndash;" if value is None else str(int(value))


def _average(value: Any) -> str:
    return "&ndash;" if value is None else f"{float(value):.2f}"


def _seconds(value: Any) -> str:
    if value is None:
        return "&ndash;"
    seconds = float(value)
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.1f} s"
