"""Pipelines the wrapper tests plug in through PTXASW_PIPELINE=pipeline_hooks:NAME.

Why: fail-open must be shown for every way a pipeline can fail (a PTX error,
an internal error, a hang, PTX that ptxas rejects) without waiting for a
real pass to have such a bug.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Result:
    """Same shape as ptxasw.driver.pipeline.PipelineResult."""

    text: str
    passes: list[dict] = field(default_factory=list)


MARK = "// rewritten by the ptxasw test pipeline"


def identity(text: str, name: str) -> Result:
    """No change: the wrapper must then assemble the original file itself."""
    return Result(text, [{"name": "identity", "changed": False, "seconds": 0.0}])


def add_comment(text: str, name: str) -> Result:
    """A harmless change, so the wrapper must write and assemble a private copy."""
    return Result(text + "\n" + MARK + "\n", [{"name": "add_comment", "changed": True, "seconds": 0.0}])


def raise_ptx_error(text: str, name: str) -> Result:
    """A diagnostic with a location, as the parser raises for bad PTX."""
    try:
        from ptxasw.errors import PtxError
        from ptxasw.ir import SourceLoc
    except ImportError:  # the parser package is being written; keep the shape
        raise _LocatedError("unexpected token 'bogus'", f"{name}:3:7") from None
    raise PtxError("unexpected token 'bogus'", SourceLoc(name, 3, 7))


class _Loc:
    def __init__(self, text: str) -> None:
        self.text = text
        self.line = 3

    def __str__(self) -> str:
        return self.text


class _LocatedError(Exception):
    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.message = message
        self.loc = _Loc(where)


def raise_internal(text: str, name: str) -> Result:
    """A bug of ours."""
    raise RuntimeError("boom\nsecond line")


def hang(text: str, name: str) -> Result:
    """A pipeline that never returns (blocked)."""
    time.sleep(3600)
    return Result(text)


def spin(text: str, name: str) -> Result:
    """A pipeline that never returns (busy, holding the GIL between switches)."""
    while True:
        pass


def break_ptx(text: str, name: str) -> Result:
    """PTX the real ptxas rejects: the wrapper must retry with the original."""
    return Result(text.replace(".version", ".bogus_directive", 1) + "\n" + MARK + "\n")


def no_text(text: str, name: str) -> object:
    """A pipeline returning the wrong type."""
    return object()


def drop_gcc_markers(text: str, name: str) -> Result:
    """Loses GCC's '// BEGIN' comments, which nvptx-tools' ld needs."""
    return Result("\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("// BEGIN")) + "\n")
