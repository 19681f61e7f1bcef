"""Where a PTX file's kernels are, found without parsing it.

A command asked for one kernel of a large file (``trace -k K``) need not
parse the others: the outline finds each kernel's and device function's
lines with one regular expression pass (comments and strings skipped,
braces counted), and `select_kernels` blanks the lines of the kernels not
asked for and of the device functions nothing kept names, keeping their
newlines so that every position the parser reports stays the same.
Directives and module variables are always kept.

The outline only answers when it is sure: a function that shares a line
with other top-level text, unbalanced braces, or kept text that names a
blanked kernel or function (a device-side launch takes a kernel's address,
a call or a ``mov`` a function's) make `select_kernels` return None, and
the caller parses the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["KernelSpan", "kernel_spans", "select_kernels"]

# Comments and identifiers, as the patterns below share them.
_COMMENTS = r"//[^\n]*|/\*.*?\*/"
_IDENTIFIER_TEXT = r"[A-Za-z_$%][\w$]*"
# What moves the brace depth, or hides braces: comments, strings, braces,
# and the keywords that start a kernel or a device function.
_TOKENS = re.compile(_COMMENTS + r'|"(?:\\.|[^"\\\n])*"|[{}]|(?<![\w.$%])\.(?:entry|func)\b', re.S)
# After ``.entry NAME(...)``: a body opens with ``{``; a ``;`` first means a
# declaration without a body.
_BODY_OR_END = re.compile(_COMMENTS + r"|[{;]", re.S)
_NAME = re.compile(r"\s*(" + _IDENTIFIER_TEXT + ")")
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class KernelSpan:
    """A kernel's (or with ``kind`` ``.func``, a device function's) name and
    its whole lines: ``text[start:end]``; a declaration (GCC writes
    ``.entry NAME (...);`` before each definition) when not ``defined``."""

    name: str
    start: int
    end: int
    defined: bool = True
    kind: str = ".entry"
    body: int = -1  # where a definition's ``{`` is


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
        elif token in (".entry", ".func") and depth == 0:
            span = _kernel_at(text, m.start(), m.end(), token)
            if span is False:
                return None
            assert isinstance(span, KernelSpan)
            spans.append(span)
            pos = span.end
    return spans if depth == 0 else None


def _kernel_at(text: str, keyword: int, after: int, kind: str = ".entry") -> KernelSpan | bool:
    """The span of the function (definition or declaration) whose
    ``.entry``/``.func`` is at ``keyword``; False when its lines are not its own."""
    if kind == ".func":
        after = _skip_returns(text, after)
        if after < 0:
            return False
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
    line_end = None if close is None else _line_end_after(text, close)
    if line_end is None:
        return False
    return KernelSpan(name.group(1), start, line_end, defined, kind, body.start() if defined else -1)


def _line_end_after(text: str, close: int) -> int | None:
    """The end of the line of ``close`` (a closing ``}`` or ``;``), or None
    when more than a comment follows it there: the span's lines are not its own."""
    line_end = text.find("\n", close)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[close + 1 : line_end].strip()
    return None if rest and not rest.startswith("//") else line_end


def _skip_returns(text: str, after: int) -> int:
    """Past a device function's return list ``(.param .b32 r)``, if any; -1
    when it does not close."""
    pos = _SPACE.match(text, after).end()  # type: ignore[union-attr]
    if not text.startswith("(", pos):
        return after
    close = text.find(")", pos)
    return -1 if close < 0 else close + 1


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


def select_kernels(
    text: str, names: set[str] | None, called_only: bool = False, trampolines: Collection[str] = ()
) -> tuple[str, list[str]] | None:
    """``text`` with every kernel not in ``names`` (None: all of them)
    blanked, and every device function that nothing kept names (newlines
    kept), and the names of all the file's kernels; None when the outline is
    unsure, a name asked for is not a kernel here, or what is kept names a
    blanked kernel or function.

    ``called_only``: keep the bodies of only the functions that kept code
    calls by name; one whose address is taken (an OpenMP outlined region
    handed to ``__kmpc_parallel_51``, a function-pointer table) keeps just
    its declaration. That is all an analysis that follows direct calls
    reads, not a module to print or assemble. A body that calls one of
    ``trampolines`` (runtime entry points that call a function argument,
    which the analysis follows) keeps every function it names.
    """
    spans = kernel_spans(text)
    if spans is None:
        return None
    defined = [s.name for s in spans if s.defined and s.kind == ".entry"]
    if names is None:
        names = set(defined)
    if not names <= set(defined) or len(set(defined)) != len(defined):
        return None
    drop = {i for i, s in enumerate(spans) if s.kind == ".entry" and s.name not in names}
    funcs = {i for i, s in enumerate(spans) if s.kind == ".func"}
    # Device functions: kept when named by what is kept, to a fixpoint.
    definitions: dict[str, list[int]] = {}
    for i in funcs:
        if spans[i].defined:
            definitions.setdefault(spans[i].name, []).append(i)
    kept_funcs: set[str] = set()
    base = _blank(text, [s for i, s in enumerate(spans) if i in drop or i in funcs])

    followed = set(trampolines)

    def reach(part: str) -> set[str]:
        if not called_only:
            return _words(part)
        called = _called(part)
        return _words(part) if called & followed else called

    named = reach(base)
    pending = [i for word in named for i in definitions.get(word, ())]
    while pending:
        i = pending.pop()
        if spans[i].name in kept_funcs:
            continue
        kept_funcs.add(spans[i].name)
        new = reach(text[spans[i].start : spans[i].end]) - named
        named |= new
        pending.extend(j for word in new for j in definitions.get(word, ()))
    unkept = {i for i in funcs if spans[i].name in definitions and spans[i].name not in kept_funcs}
    headers: list[KernelSpan] = []
    if called_only:
        unkept, headers = _address_taken(text, spans, drop, unkept)
    # A function defined here and not kept goes with its declarations; one
    # only declared (``.extern .func vprintf``) stays: it costs nothing.
    drop |= unkept
    debug: list[KernelSpan] = []
    if called_only:
        # DWARF (-G builds: two thirds of the file) is for debuggers; the
        # analysis reads positions from ``.loc``, which stays.
        debug = _debug_sections(text)
    gone = {spans[i].name for i in drop} - {spans[i].name for i in funcs if i not in drop}
    kept = _blank(text, [*(spans[i] for i in sorted(drop)), *debug], headers)
    if _named(kept, gone - {h.name for h in headers}):
        return None
    return kept, defined


_DEBUG_SECTION = re.compile(r"^[ \t]*\.section[ \t]+\.debug_\w+[ \t]*$", re.M)


def _debug_sections(text: str) -> list[KernelSpan]:
    """The ``.section .debug_*`` blocks that stand on lines of their own."""
    out: list[KernelSpan] = []
    for m in _DEBUG_SECTION.finditer(text):
        opening = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]
        if not text.startswith("{", opening):
            continue
        close = _matching_brace(text, opening)
        line_end = None if close is None else _line_end_after(text, close)
        if line_end is None:
            continue
        out.append(KernelSpan(m.group().split()[1], m.start(), line_end, True, ".section"))
    return out


def _address_taken(
    text: str, spans: list[KernelSpan], drop: set[int], unkept: set[int]
) -> tuple[set[int], list[KernelSpan]]:
    """Of the functions not kept (``unkept``), those the kept text still
    names (their address is taken) keep a declaration: their own, which
    leaves ``unkept``, or where they have none apart, their definition's
    header (returned, to be kept by `_blank`)."""
    if not unkept:
        return unkept, []
    still = _named(_blank(text, [spans[i] for i in sorted(drop | unkept)]), {spans[i].name for i in unkept})
    declared = {spans[i].name for i in unkept if not spans[i].defined and spans[i].name in still}
    headers: dict[str, KernelSpan] = {}
    for i in sorted(unkept):
        span = spans[i]
        if span.name in still and span.name not in declared:
            headers.setdefault(span.name, span)
    return {i for i in unkept if spans[i].defined or spans[i].name not in declared}, list(headers.values())


def _blank(text: str, spans: list[KernelSpan], headers: Sequence[KernelSpan] = ()) -> str:
    """``text`` with the lines of ``spans`` (in file order) emptied, their
    newlines kept; of a span in ``headers``, the header up to its body stays,
    ended by ``;`` (a declaration) where the body was."""
    declared = {id(h) for h in headers}
    parts: list[str] = []
    pos = 0
    for span in sorted(spans, key=lambda s: s.start):
        parts.append(text[pos : span.start])
        start = span.start
        if id(span) in declared:
            parts.append(text[span.start : span.body] + ";")
            start = span.body
        parts.append("\n" * text.count("\n", start, span.end))
        pos = span.end
    parts.append(text[pos:])
    return "".join(parts)


# A call by name: ``call.uni (retval), NAME, (args)`` or ``call NAME, (args)``.
_CALLEE = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?(" + _IDENTIFIER_TEXT + ")")


def _called(text: str) -> set[str]:
    """The functions ``text`` calls by name outside comments."""
    return set(_CALLEE.findall(_COMMENT.sub(" ", text)))


def _words(text: str) -> set[str]:
    """The identifiers ``text`` names outside comments (nvcc's ``// .globl
    NAME`` lines name every kernel)."""
    return set(_IDENTIFIER.findall(_COMMENT.sub(" ", text)))


def _named(text: str, names: set[str]) -> set[str]:
    """Which of ``names`` ``text`` names outside comments: `_words` asked
    about a few names only, without collecting every identifier of a large
    file. A name right after a digit counts (where `_words` would see one
    identifier or none): a name too many only makes the caller careful."""
    if not names:
        return set()
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z_$%])(?:{alternatives})(?![\w$])")
    return set(pattern.findall(_COMMENT.sub(" ", text)))


_IDENTIFIER = re.compile(_IDENTIFIER_TEXT)
_COMMENT = re.compile(_COMMENTS, re.S)
