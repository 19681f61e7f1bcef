"""Measure both variants of a kernel on a `Device`, check them and decide.

The order matters for what a verdict may claim:

1. both variants run once on the same inputs and every array must come out
   bit for bit the same (NaN payloads and signs of zero included). A
   difference means the rewrite changed what the kernel computes, which the
   proofs say cannot happen: the verdict is ``original`` and the mismatch is
   reported as an error. Before calling it a bug, both variants are run again
   assembled with ``--fmad=false``: ptxas may contract different multiply-add
   pairs into FMAs in two PTX texts, a rounding difference of ptxas's making
   (the rewrite stays ``original`` then too: a user's build would see it);
2. only then are they timed, interleaved, median of ``runs`` samples;
3. the shuffles are kept only if they are faster by more than ``margin``
   (relative): a tie keeps the original, whose code is the user's own.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxasw.tune.device import Device, Dims, Value

__all__ = ["DEFAULT_MARGIN", "Measurement", "decide", "differences", "measure"]

DEFAULT_MARGIN = 0.01


@dataclass
class Measurement:
    """What one kernel's measurement found."""

    choice: str
    original_ms: float | None = None
    shuffle_ms: float | None = None
    samples: int = 0
    mismatches: list[str] = field(default_factory=list)
    fma_only: bool | None = None  # on a mismatch: gone with --fmad=false? (None: not checked)

    @property
    def speedup(self) -> float | None:
        """original / rewrite time (> 1: the shuffles are faster)."""
        if not self.original_ms or not self.shuffle_ms:
            return None
        return self.original_ms / self.shuffle_ms

    def error(self, kernel: str) -> str | None:
        """The one-line error a mismatch deserves, or None."""
        if not self.mismatches:
            return None
        what = "; ".join(self.mismatches[:3]) + (" ..." if len(self.mismatches) > 3 else "")
        if self.fma_only:
            return (
                f"{kernel}: the rewrite's outputs differ from the original's only through ptxas's FMA "
                f"contraction ({what}); keeping the original"
            )
        return (
            f"{kernel}: the rewritten kernel computes different values ({what}); this is a bug in "
            f"ptxasw's shuffle synthesis: please report it; keeping the original"
        )


def decide(original_ms: float, shuffle_ms: float, margin: float = DEFAULT_MARGIN) -> str:
    """``shuffle`` when the rewrite is faster by more than ``margin`` (relative), else ``original``."""
    return "shuffle" if shuffle_ms * (1.0 + margin) < original_ms else "original"


def _bits(a: np.ndarray) -> np.ndarray:
    """The same bytes as unsigned integers: NaN payloads and zero signs count as values."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a.view(np.uint8)


def differences(
    a: Sequence[np.ndarray | None], b: Sequence[np.ndarray | None], compare: Sequence[int]
) -> list[str]:
    """``argN: K of M elements differ`` for each array argument in ``compare`` that differs in any bit."""
    found = []
    for i in compare:
        x, y = a[i], b[i]
        if x is None or y is None:
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            found.append(f"arg{i}: shape/type {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
            continue
        bad = int(np.count_nonzero(_bits(x) != _bits(y)))
        if bad:
            first = int(np.flatnonzero(_bits(x).ravel() != _bits(y).ravel())[0])
            found.append(
                f"arg{i}: {bad} of {x.size} elements differ, first at {first}: "
                f"{x.ravel()[first]!r} vs {y.ravel()[first]!r}"
            )
    return found


def measure(
    device: Device,
    kernels: dict[str, Any],
    grid: Dims,
    block: Dims,
    args: Sequence[Value],
    compare: Sequence[int],
    *,
    runs: int,
    warmup: int,
    margin: float = DEFAULT_MARGIN,
    without_fma: Callable[[], dict[str, Any]] | None = None,
) -> Measurement:
    """Check and time ``kernels["original"]`` against ``kernels["shuffle"]`` (see the module doc).

    ``compare``: the argument positions whose arrays must agree. ``without_fma``
    loads both variants assembled with ``--fmad=false`` (asked only on a mismatch).
    """
    outputs = {name: device.run(k, grid, block, args) for name, k in kernels.items()}
    mismatches = differences(outputs["original"], outputs["shuffle"], compare)
    if mismatches:
        result = Measurement("original", mismatches=mismatches)
        if without_fma is not None:
            plain = without_fma()
            again = {name: device.run(k, grid, block, args) for name, k in plain.items()}
            result.fma_only = not differences(again["original"], again["shuffle"], compare)
        return result
    samples = device.time(kernels, grid, block, args, runs, warmup)
    original_ms = statistics.median(samples["original"])
    shuffle_ms = statistics.median(samples["shuffle"])
    return Measurement(
        decide(original_ms, shuffle_ms, margin),
        original_ms=original_ms,
        shuffle_ms=shuffle_ms,
        samples=min(len(s) for s in samples.values()),
    )
