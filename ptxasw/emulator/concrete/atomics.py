"""``atom``/``red`` on memory words for the interpreter, in lane order.

The arithmetic (``new = f(old, b, c)``, NaN results as an H200 leaves them)
is `ptxasw.emulator.semantics.collectives.atomic_update`, shared with the
symbolic executor; this module applies it to NumPy words. The interpreter
performs a warp's atomics lane by lane, in increasing lane order, so that
every run (float atomics included) is deterministic. `apply_in_lane_order`
does that without a Python step per lane: lanes that hit distinct words do
not interact, so the k-th lane of every word's chain is updated in one
vectorised step (a warp of 32 distinct words: one step); and for the
operations whose update is associative and commutative on bit patterns
(integer ``add``, ``and or xor min max``: `SCANNABLE`) a chain of lanes on
one word is a prefix scan of the update itself, log2(32) = 5 steps instead
of 32. Either way each lane gets exactly the old value the sequential order
gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.semantics.collectives import atomic_supported, atomic_update

# new = update(old, b, c) on equally long uint64 arrays of raw bits.
WordUpdate = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


# Operations whose update f(x, y) = x (op) y is associative and commutative
# on bit patterns, so that a chain of updates is a prefix scan of f itself.
SCANNABLE = frozenset({"add", "and", "or", "xor", "min", "max"})


def scannable(op: str, ptx_type: str) -> bool:
    """Whether `apply_in_lane_order` may scan ``op`` (float adds round: not associative)."""
    return op in SCANNABLE and not ptx_type.startswith((".f", ".bf"))


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


def apply_in_lane_order(
    update: WordUpdate, scan: bool, init: np.ndarray, word: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``new = update(old, b, c)`` lane by lane in increasing lane order.

    ``word[i]`` is the index (into ``init``) of the word lane i updates,
    ``init`` the words' values before. Returns each lane's old value and
    each word's final value. ``scan``: the update is associative and
    commutative (`scannable`), so chains are computed as prefix scans.
    """
    n = word.size
    olds = np.zeros(n, dtype=np.uint64)
    finals = init.copy()
    rounds = lane_order_rounds(word.tolist())
    if len(rounds) <= 1 or not scan:
        for lanes in rounds:  # within a round every word is distinct
            w = word[lanes]
            olds[lanes] = finals[w]
            finals[w] = update(finals[w], b[lanes], c[lanes])
        return olds, finals
    # rank[i]: lane i's place in its word's chain; prev[s][i]: the lane s places
    # before it in the chain (Hillis-Steele inclusive scan over each chain).
    rank = np.zeros(n, dtype=np.int64)
    for r, lanes in enumerate(rounds):
        rank[lanes] = r
    chain_lane = {(int(word[i]), int(rank[i])): i for i in range(n)}
    total = b.copy()
    step = 1
    while step < len(rounds):
        later = np.flatnonzero(rank >= step)
        earlier = np.array([chain_lane[(int(word[i]), int(rank[i]) - step)] for i in later], dtype=np.int64)
        combined = update(total[earlier], total[later], total[later])
        total = total.copy()
        total[later] = combined
        step *= 2
    # old of lane i = init (op) the b of the lanes before it in its chain.
    first = rank == 0
    olds[first] = init[word[first]]
    rest = np.flatnonzero(~first)
    before = np.array([chain_lane[(int(word[i]), int(rank[i]) - 1)] for i in rest], dtype=np.int64)
    olds[rest] = update(init[word[rest]], total[before], total[before])
    last = np.array([chain_lane[(w, int(np.max(rank[word == w])))] for w in np.unique(word)], dtype=np.int64)
    finals[word[last]] = update(init[word[last]], total[last], total[last])
    return olds, finals
