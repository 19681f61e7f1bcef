"""``atom``/``red`` on memory words for the interpreter, in lane order.

The arithmetic (``new = f(old, b, c)``, NaN results as an H200 leaves them)
is `ptxasw.emulator.semantics.collectives.atomic_update`, shared with the
symbolic executor; this module applies it to NumPy words. The interpreter
performs a warp's atomics lane by lane, in increasing lane order, so that
every run (float atomics included) is deterministic. Lanes that hit distinct
words do not interact, so `lane_order_rounds` splits the lanes into rounds
of distinct words, each round computed at once: a warp of 32 lanes updating
one counter takes 32 rounds, a warp of 32 distinct words one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.semantics.collectives import atomic_supported, atomic_update

# new = update(old, b, c) on equally long uint64 arrays of raw bits.
WordUpdate = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def atomic_words(op: str, ptx_type: str, nbytes: int) -> WordUpdate | None:
    """``new = f(old, b, c)`` over arrays of ``nbytes``-byte words, or None
    when the operation is not modelled."""
    if not atomic_supported(op, ptx_type) or nbytes not in (2, 4, 8):
        return None
    bits = nbytes * 8

    def update(old: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        d = ConcreteDomain(old.size)
        new = atomic_update(d, op, ptx_type, Bits(old, bits), Bits(b, bits), Bits(c, bits))
        return new.data

    return update


def atomic_function(op: str, ptx_type: str, nbytes: int) -> Callable[[int, int, int], int] | None:
    """``new = f(old, b, c)`` on one word's raw bits, or None (tests, host code)."""
    words = atomic_words(op, ptx_type, nbytes)
    if words is None:
        return None
    mask = (1 << (nbytes * 8)) - 1

    def one(old: int, b: int, c: int) -> int:
        arrays = (np.array([v & mask], dtype=np.uint64) for v in (old, b, c))
        return int(words(*arrays)[0])

    return one


def lane_order_rounds(locations: Sequence[Hashable]) -> list[np.ndarray]:
    """Positions of ``locations`` in rounds: within a round every location is
    distinct, and a location's positions appear in increasing order across
    rounds, so running the rounds in turn is running the lanes in order."""
    seen: dict[Hashable, int] = {}
    rank = np.zeros(len(locations), dtype=np.int64)
    for i, key in enumerate(locations):
        rank[i] = seen.get(key, 0)
        seen[key] = rank[i] + 1
    return [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1 if len(locations) else 0)]
