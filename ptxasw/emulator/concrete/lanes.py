"""A warp as 32 lanes: lane masks and per-lane values.

The interpreter keeps the lanes of a warp that take part in something (the
active lanes, a guard, a member mask) as an int bit mask, quick to combine and
compare, and register values as `Bits` with one element per lane. The helpers
here convert between the two; the executor, the warp-collective operations
and the atomics all need them.
"""

from __future__ import annotations

import numpy as np

from ptxasw.emulator.concrete.domain import Bits

LANES = 32
FULL_MASK = (1 << LANES) - 1
LANE_IDS = np.arange(LANES, dtype=np.uint64)
LANE_INTS = np.arange(LANES, dtype=np.int64)

_MASK_CACHE: dict[int, np.ndarray] = {}


def mask_array(mask: int) -> np.ndarray:
    """The lanes of an int bit mask as a read-only bool array (cached)."""
    arr = _MASK_CACHE.get(mask)
    if arr is None:
        arr = ((np.uint64(mask) >> LANE_IDS) & np.uint64(1)).astype(bool)
        arr.flags.writeable = False
        if len(_MASK_CACHE) < 8192:
            _MASK_CACHE[mask] = arr
    return arr


def to_mask(data: np.ndarray) -> int:
    """Bit mask of the lanes whose value is non-zero."""
    return int.from_bytes(np.packbits(data != 0, bitorder="little").tobytes(), "little")


def width_mask(width: int) -> int:
    return (1 << width) - 1


def lane_bits(values: np.ndarray | int, width: int) -> Bits:
    """A value of ``width`` bits in every lane: one int for all, or one per lane."""
    if isinstance(values, int):
        return Bits(np.full(LANES, values & width_mask(width), dtype=np.uint64), width)
    return Bits(values.astype(np.uint64), width)


def uniform(value: Bits, part: int) -> int:
    """A warp-uniform operand (a member mask, a barrier id): its value in the
    first lane of ``part``."""
    lane = (part & -part).bit_length() - 1
    return int(value.data[max(lane, 0)])
