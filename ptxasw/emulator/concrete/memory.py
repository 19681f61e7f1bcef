"""Simulated GPU memories for the concrete interpreter.

Every state space lives in its own window of one 64-bit generic address
space, so that a generic address alone says which space it points into
(what ``isspacep`` tests and what a generic ``ld``/``st`` must decide):

==========  ==========================  =====================================
space       generic window              address *inside* the space
==========  ==========================  =====================================
global      ``GLOBAL_WINDOW`` + offset  the same as the generic address
shared      ``SHARED_WINDOW`` + offset  the offset (fits the 32-bit shared
                                        addresses nvcc computes with ``.u32``)
local       ``LOCAL_WINDOW`` + thread   the offset in the thread's own stack
            * ``LOCAL_STRIDE`` + offset
const       ``CONST_WINDOW`` + offset   the offset
param       ``PARAM_WINDOW`` + offset   the offset in the current frame
functions   ``FUNC_WINDOW`` + 16 * i    (function pointers; not data)
==========  ==========================  =====================================

``cvta`` is therefore an addition or a subtraction of the window base (the
identity for global), exactly consistent with `window_of`. Address 0 and
everything below ``GLOBAL_WINDOW`` is in no space, so a null pointer
dereference is reported as such instead of silently reading something.

The stores here work on whole warps at once: an access is a vector of
addresses (one per participating lane) and its result a vector of
``uint64`` values. `locate` turns addresses into indexes of a typed NumPy
view (``uint8``/``uint16``/``uint32``/``uint64`` by access size), after the
checks that make bugs loud: bounds (per allocation for global memory, so an
overrun into the next buffer is caught too) and natural alignment, as the
hardware requires. The interpreter then gathers, scatters or performs
atomics on that view.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from ptxasw import ir
from ptxasw.errors import EmulationError

__all__ = [
    "CONST_WINDOW",
    "FUNC_WINDOW",
    "GENERIC_BASE",
    "GLOBAL_WINDOW",
    "LOCAL_STRIDE",
    "LOCAL_WINDOW",
    "PARAM_WINDOW",
    "SHARED_WINDOW",
    "SPACE_WINDOW",
    "WINDOW_SHIFT",
    "WINDOW_SPACE",
    "Allocation",
    "EmulationError",
    "FlatMemory",
    "GlobalMemory",
    "LaneMemory",
    "dtype_for",
    "fault",
    "window_of",
]

WINDOW_SHIFT = 44
GLOBAL_WINDOW = 1 << WINDOW_SHIFT
SHARED_WINDOW = 2 << WINDOW_SHIFT
LOCAL_WINDOW = 3 << WINDOW_SHIFT
CONST_WINDOW = 4 << WINDOW_SHIFT
PARAM_WINDOW = 5 << WINDOW_SHIFT
FUNC_WINDOW = 6 << WINDOW_SHIFT
#: Bytes of the generic window of one thread's local memory (its stack limit).
LOCAL_STRIDE = 1 << 24

#: Window number (``address >> WINDOW_SHIFT``) -> PTX state space.
WINDOW_SPACE = {1: ".global", 2: ".shared", 3: ".local", 4: ".const", 5: ".param"}
#: PTX state space -> window number.
SPACE_WINDOW = {space: window for window, space in WINDOW_SPACE.items()}
#: What ``cvta`` adds to an address in a space to make it generic (global
#: addresses already are; a local one also selects the thread, see above).
GENERIC_BASE = {".global": 0, ".shared": SHARED_WINDOW, ".const": CONST_WINDOW, ".param": PARAM_WINDOW}

_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def dtype_for(nbytes: int) -> np.dtype:
    """The little-endian unsigned NumPy type of an access of ``nbytes``."""
    try:
        return _DTYPES[nbytes]
    except KeyError:
        raise ValueError(f"unsupported access size {nbytes}") from None


def window_of(addresses: np.ndarray) -> np.ndarray:
    """Window numbers of generic addresses (see the table in the module doc)."""
    return (addresses >> np.uint64(WINDOW_SHIFT)).astype(np.int64)


def fault(inst: ir.Instruction | None, message: str) -> EmulationError:
    """The error for an access (or anything else) ``inst`` cannot do, naming it."""
    if inst is None:
        return EmulationError(message)
    return EmulationError(f"{inst.mnemonic}: {message}", inst.loc)


def _check_alignment(
    addresses: np.ndarray, nbytes: int, inst: ir.Instruction | None, space: str, shown: np.ndarray
) -> None:
    if nbytes > 1:
        bad = (addresses & np.uint64(nbytes - 1)) != 0
        if bad.any():
            i = int(np.argmax(bad))
            raise fault(inst, f"misaligned {nbytes}-byte {space} access at address {int(shown[i]):#x}")


def _check_access(
    offsets: np.ndarray,
    nbytes: int,
    size: int,
    inst: ir.Instruction | None,
    space: str,
    shown: np.ndarray,
    owner: str,
) -> None:
    """Alignment, then bounds: every access must end within ``size`` bytes
    (of the ``owner`` ``space`` memory, as the message names it)."""
    _check_alignment(offsets, nbytes, inst, space, shown)
    bad = offsets + np.uint64(nbytes) > np.uint64(size)
    if bad.any():
        i = int(np.argmax(bad))
        raise fault(
            inst,
            f"out-of-bounds {nbytes}-byte {space} access at address {int(shown[i]):#x} "
            f"(offset {int(offsets[i])}, {owner}{space} memory is {size} bytes)",
        )


class _TypedViews:
    """Typed views of one byte array, rebuilt when the array is replaced."""

    __slots__ = ("_views", "data")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self._views: dict[int, np.ndarray] = {}

    def view(self, nbytes: int) -> np.ndarray:
        v = self._views.get(nbytes)
        if v is None:
            v = self._views[nbytes] = self.data.reshape(-1).view(dtype_for(nbytes))
        return v

    def replace(self, data: np.ndarray) -> None:
        self.data = data
        self._views.clear()


# --------------------------------------------------------------------------
# Global memory: one flat byte space with per-allocation bounds


@dataclass(slots=True)
class Allocation:
    """One buffer of global memory: ``[address, address + size)``."""

    address: int
    size: int
    name: str


class GlobalMemory:
    """Global memory: buffers at distinct, aligned addresses in one flat byte
    array starting at ``GLOBAL_WINDOW``.

    A gap of at least ``redzone`` bytes separates buffers, and every access
    must lie inside a single allocation, so an overrun is reported even when
    it would land in the next buffer. Buffers are never freed (a launch is
    short-lived).
    """

    def __init__(self, redzone: int = 256) -> None:
        self.redzone = redzone
        self._mem = _TypedViews(np.zeros(1 << 16, dtype=np.uint8))
        self._top = 0  # bytes used (offset of the next free byte)
        self.allocations: list[Allocation] = []
        self._starts = np.zeros(0, dtype=np.uint64)
        self._ends = np.zeros(0, dtype=np.uint64)

    @property
    def data(self) -> np.ndarray:
        """The whole byte array (offset 0 is ``GLOBAL_WINDOW``)."""
        return self._mem.data

    def allocate(self, size: int, name: str, align: int = 256) -> int:
        """Reserve ``size`` zeroed bytes; returns their (global = generic) address."""
        align = max(align, 16)
        start = -(-(self._top + (self.redzone if self.allocations else 0)) // align) * align
        end = start + size
        need = -(-(end + 8) // 8) * 8
        if need > self._mem.data.size:
            grown = np.zeros(max(need, 2 * self._mem.data.size), dtype=np.uint8)
            grown[: self._top] = self._mem.data[: self._top]
            self._mem.replace(grown)
        self._top = end
        address = GLOBAL_WINDOW + start
        self.allocations.append(Allocation(address, size, name))
        self._starts = np.array([a.address for a in self.allocations], dtype=np.uint64)
        self._ends = np.array([a.address + a.size for a in self.allocations], dtype=np.uint64)
        return address

    def write(self, address: int, data: bytes | np.ndarray) -> None:
        """Copy raw bytes in (host side, unchecked beyond the array's size)."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else data
        raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
        off = address - GLOBAL_WINDOW
        self._mem.data[off : off + raw.size] = raw

    def read(self, address: int, size: int) -> np.ndarray:
        """A copy of ``size`` bytes at ``address`` (host side)."""
        off = address - GLOBAL_WINDOW
        return self._mem.data[off : off + size].copy()

    def allocation_at(self, address: int) -> Allocation | None:
        i = bisect.bisect_right([a.address for a in self.allocations], address) - 1
        if i >= 0:
            a = self.allocations[i]
            if a.address <= address < a.address + max(a.size, 1):
                return a
        return None

    def read_cstring(self, address: int, limit: int = 1 << 16) -> bytes:
        """The NUL-terminated bytes at ``address`` (for printf formats and
        assertion messages); stops at the end of the allocation."""
        alloc = self.allocation_at(address)
        if alloc is None:
            raise EmulationError(f"string pointer {address:#x} is not in global memory")
        end = min(alloc.address + alloc.size, address + limit)
        raw = self.read(address, end - address).tobytes()
        return raw.split(b"\0", 1)[0]

    def locate(
        self, addresses: np.ndarray, nbytes: int, inst: ir.Instruction | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Typed view and element indexes for an access of ``nbytes`` at each address.

        Raises EmulationError naming the instruction for an address outside
        every allocation (with the nearest buffer in the message) or a
        misaligned one.
        """
        _check_alignment(addresses, nbytes, inst, "global", addresses)
        if not self.allocations:
            raise fault(inst, f"global access at {int(addresses[0]):#x}: no global memory allocated")
        idx = np.searchsorted(self._starts, addresses, side="right") - 1
        safe = np.maximum(idx, 0)
        ok = (idx >= 0) & (addresses + np.uint64(nbytes) <= self._ends[safe])
        if not ok.all():
            i = int(np.argmin(ok))
            raise fault(inst, self._describe(int(addresses[i]), nbytes, int(idx[i])))
        offsets = (addresses - np.uint64(GLOBAL_WINDOW)).astype(np.int64)
        return self._mem.view(nbytes), offsets // nbytes

    def _describe(self, address: int, nbytes: int, index: int) -> str:
        what = f"out-of-bounds {nbytes}-byte global access at address {address:#x}"
        if address < GLOBAL_WINDOW or address >= SHARED_WINDOW:
            return what + " (not a global-memory address)"
        if index < 0:
            first = self.allocations[0]
            return what + f": {first.address - address} bytes before buffer '{first.name}'"
        a = self.allocations[index]
        past = address - (a.address + a.size)
        if past == 0:
            return what + f": just past the end of buffer '{a.name}' (size {a.size})"
        if past > 0:
            return what + f": {past} bytes past the end of buffer '{a.name}' (size {a.size})"
        return what + f": straddles the end of buffer '{a.name}' (size {a.size})"


# --------------------------------------------------------------------------
# One byte array (shared memory of a CTA, constant memory)


class FlatMemory:
    """A zero-based byte array with a fixed size: a CTA's shared memory or
    the module's constant bank. Addresses are offsets into it."""

    def __init__(self, size: int, space: str) -> None:
        self.size = size
        self.space = space
        self._mem = _TypedViews(np.zeros(max(-(-size // 8) * 8, 8), dtype=np.uint8))

    @property
    def data(self) -> np.ndarray:
        return self._mem.data

    def locate(
        self, offsets: np.ndarray, nbytes: int, inst: ir.Instruction | None = None, window: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Typed view and indexes; bounds- and alignment-checked.

        ``window`` is only added to addresses shown in error messages (so a
        generic access reports the generic address it used).
        """
        shown = offsets + np.uint64(window)
        _check_access(offsets, nbytes, self.size, inst, self.space.lstrip("."), shown, "")
        return self._mem.view(nbytes), offsets.astype(np.int64) // nbytes


# --------------------------------------------------------------------------
# One byte array per thread (local memory, parameter frames)


class LaneMemory:
    """A byte array per thread, stored as a ``(rows, size)`` array: the
    local memory (stacks) of a CTA's threads, or the ``.param`` space of one
    call frame of a warp (whose rows are its lanes).

    ``size`` is the usable bytes per row; `grow` raises it (keeping the
    contents), as call frames push their local depots.
    """

    def __init__(self, rows: int, size: int, space: str) -> None:
        self.rows = rows
        self.size = size
        self.space = space
        self._stride = max(-(-size // 8) * 8, 8)
        self._mem = _TypedViews(np.zeros((rows, self._stride), dtype=np.uint8))

    @property
    def data(self) -> np.ndarray:
        """The ``(rows, stride)`` byte array (stride >= size, a multiple of 8)."""
        return self._mem.data

    def grow(self, size: int) -> None:
        if size <= self.size:
            return
        if size > self._stride:
            stride = max(-(-size // 8) * 8, 2 * self._stride)
            grown = np.zeros((self.rows, stride), dtype=np.uint8)
            grown[:, : self._stride] = self._mem.data
            self._stride = stride
            self._mem.replace(grown)
        self.size = size

    def locate(
        self,
        rows: np.ndarray,
        offsets: np.ndarray,
        nbytes: int,
        inst: ir.Instruction | None = None,
        shown: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Typed view (flattened) and indexes of row ``rows[i]``, byte ``offsets[i]``."""
        shown = offsets if shown is None else shown
        _check_access(offsets, nbytes, self.size, inst, self.space.lstrip("."), shown, "the thread's ")
        index = rows.astype(np.int64) * (self._stride // nbytes) + offsets.astype(np.int64) // nbytes
        return self._mem.view(nbytes), index
