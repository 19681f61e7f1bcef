"""Pausing Python's cyclic garbage collector around work that allocates many
objects and forms no cycles (parsing, rendering a trace).

Each collection scans every live container object; a phase that allocates a
node per operand or per subterm triggers many of them, and after a large
parse or analysis each one scans all of that again. Nothing such a phase
builds needs the cyclic collector, so pausing it costs no memory.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, and on again after it if it was on
    before (usable as a decorator too)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
