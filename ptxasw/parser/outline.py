"""Where a PTX file's kernels are, found without parsing it.

A command asked for one kernel of a large file (``trace -k K``) need not
parse the others: the outline finds each kernel's lines with one regular
expression pass (comments and strings skipped, braces counted), and
`select_kernels` blanks the lines of the kernels not asked for, keeping
their newlines so that every position the parser reports stays the same.
Everything that is not a kernel (directives, module variables, device
functions) is kept.

The outline only answers when it is sure: a kernel that shares a line with
other top-level text, unbalanced braces, or a kept kernel that names a
blanked one (a device-side launch takes a kernel's address) make
`select_kernels` return None, and the caller parses the whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KernelSpan", "kernel_spans", "select_kernels"]

# What moves the brace depth, or hides braces: comments, strings, braces,
# and the keyword that starts a kernel.
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|[{}]|(?<![\w.$%])\.entry\b', re.S)
# After ``.entry NAME(...)``: a body opens with ``{``; a ``;`` first means a
# declaration without a body.
_BODY_OR_END = re.compile(r"//[^\n]*|/\*.*?\*/|[{;]", re.S)
_NAME = re.compile(r"\s*([A-Za-z_$%][\w$]*)")


@dataclass(frozen=True)
class KernelSpan:
    """A kernel's name and its whole lines: ``text[start:end]``; a
    declaration (GCC writes ``.entry NAME (...);`` before each definition)
    when not ``defined``."""

    name: str
    start: int
    end: int
    defined: bool = True


def kernel_spans(text: str) -> list[KernelSpan] | None:
    """Every kernel definition's and declaration's span, in file order;
    None when unsure."""
    spans: list[KernelSpan] = []
    depth = 0
    pos = 0
    while True:
        m = _TOKENS.search(text, pos)
        if m is None:
            break
        token = m.group()
        pos = m.end()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth < 0:
                return None
        elif token == ".entry" and depth == 0:
            span = _kernel_at(text, m.start(), m.end())
            if span is False:
                return None
            assert isinstance(span, KernelSpan)
            spans.append(span)
            pos = span.end
    return spans if depth == 0 else None


def _kernel_at(text: str, keyword: int, after: int) -> KernelSpan | bool | None:
    """The span of the kernel whose ``.entry`` is at ``keyword``; None for a
    declaration without a body; False when its lines are not its own."""
    name = _NAME.match(text, after)
    if name is None:
        return False
    start = text.rfind("\n", 0, keyword) + 1
    # The line up to the keyword may hold only linkage words (.visible, .weak).
    if any(not word.startswith(".") for word in text[start:keyword].split()):
        return False
    body = _BODY_OR_END.search(text, name.end())
    while body is not None and body.group() not in ("{", ";"):
        body = _BODY_OR_END.search(text, body.end())
    if body is None:
        return False
    defined = body.group() == "{"
    close = _matching_brace(text, body.start()) if defined else body.start()
    if close is None:
        return False
    line_end = text.find("\n", close)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[close + 1 : line_end].strip()
    if rest and not rest.startswith("//"):
        return False
    return KernelSpan(name.group(1), start, line_end, defined)


def _matching_brace(text: str, open_at: int) -> int | None:
    depth = 0
    for m in _TOKENS.finditer(text, open_at):
        token = m.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return m.start()
    return None


def select_kernels(text: str, names: set[str]) -> tuple[str, list[str]] | None:
    """``text`` with every kernel not in ``names`` blanked (its newlines kept),
    and the names of all the file's kernels; None when the outline is unsure,
    a name asked for is not a kernel here, or what is kept names a blanked
    kernel."""
    spans = kernel_spans(text)
    if spans is None:
        return None
    defined = [s.name for s in spans if s.defined]
    if not names <= set(defined) or len(set(defined)) != len(defined):
        return None
    parts: list[str] = []
    blanked: set[str] = set()
    pos = 0
    for span in spans:
        if span.name in names:
            continue
        parts.append(text[pos : span.start])
        parts.append("\n" * text.count("\n", span.start, span.end))
        blanked.add(span.name)
        pos = span.end
    parts.append(text[pos:])
    kept = "".join(parts)
    if blanked and _names_any(kept, blanked):
        return None
    return kept, defined


def _names_any(text: str, names: set[str]) -> bool:
    """Whether ``text`` mentions any of ``names`` as a whole identifier
    outside comments (nvcc's ``// .globl NAME`` lines name every kernel)."""
    code = _COMMENT.sub(" ", text)
    words = set(re.findall(r"[A-Za-z_$%][\w$]*", code))
    return any(n in words for n in names)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
