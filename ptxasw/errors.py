"""Diagnostics that reach users as one line: ``file:line:col: message``.

Every user-facing failure of ptxasw is a `PtxError` (or a subclass), so the
command line and the ``ptxas`` wrapper can print it without a traceback and
the wrapper can decide to fail open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the IR imports nothing from here; keep it that way at run time
    from ptxasw.ir import SourceLoc


class PtxError(Exception):
    """An error in the user's PTX (or in what we were asked to do with it)."""

    def __init__(self, message: str, loc: SourceLoc | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        if self.loc is None:
            return self.message
        return f"{self.loc}: {self.message}"


class PtxSyntaxError(PtxError):
    """The text is not PTX: a token or construct the grammar does not accept."""


class UnsupportedError(PtxError):
    """Valid PTX that this stage does not handle (yet)."""


class EmulationError(PtxError):
    """The emulated kernel did something the hardware would fault on (or that
    the interpreter cannot continue from): an out-of-bounds or misaligned
    access, a trap, a failed device assertion, an exhausted step budget.
    The location is the instruction's ``file:line:col``."""


class UnsupportedInstruction(UnsupportedError):
    """An instruction a strict executor cannot model (the lifter must never
    compute with a made-up value). ``opcode`` names it; the location is the
    instruction's ``file:line:col``."""

    def __init__(self, opcode: str, reason: str, loc: SourceLoc | None = None) -> None:
        super().__init__(f"unsupported instruction {opcode}: {reason}", loc)
        self.opcode = opcode
        self.reason = reason
