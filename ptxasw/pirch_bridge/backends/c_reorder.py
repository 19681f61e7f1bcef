"""Lane permutations of chunked InfRegs: borG's specialised reorderings.

An InfReg of ``L`` lanes is held as native 512-bit chunks of ``per`` lanes.
A ``shufflevector`` with a constant mask becomes, for each output chunk, the
cheapest reordering its lanes allow (borG, section "reorderings"), tried in
this order:

* chunk reuse: the output chunk *is* a source chunk (no instruction);
* scalar broadcast: one source lane to every lane (``set1``/``broadcast``);
* vector broadcast: a 128- or 256-bit block repeated over the chunk, or one
  source chunk reused by every output chunk (the whole-value summary);
* segmented scalar broadcast: each segment of ``2^k`` lanes takes one lane
  of one source chunk (an in-lane ``shuffle`` where the pattern fits);
* a generic permute of one source chunk (``permutexvar``), of two
  (``permutex2var``), or of more, merged under masks.

This module only decides (`plan_chunk`, `classify`); `c_emit` writes the C.
Lanes are indices into the concatenation of the two operands, ``None`` where
the mask leaves them undefined; only the ``valid`` lanes of an output chunk
(those below ``L``) are looked at, the spare lanes of a chunk are don't-care.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ChunkPlan", "Reorder", "classify", "plan_chunk", "plan_shuffle"]


class Reorder(enum.Enum):
    """The reordering an output chunk (or a whole shuffle) is emitted as."""

    UNDEFINED = "undefined"
    CHUNK_REUSE = "chunk reuse"
    SCALAR_BROADCAST = "scalar broadcast"
    VECTOR_BROADCAST = "vector broadcast"
    SEGMENTED_BROADCAST = "segmented scalar broadcast"
    PERMUTE = "permute"
    PERMUTE2 = "permute of two chunks"
    PERMUTE_MANY = "permute of several chunks"


@dataclass(frozen=True)
class ChunkPlan:
    """One output chunk: its reordering, the source chunks it reads (indices into
    the chunks of operand 0 followed by those of operand 1) and, per output lane,
    ``(position in sources, lane)`` or None (don't care)."""

    kind: Reorder
    sources: tuple[int, ...]
    lanes: tuple[tuple[int, int] | None, ...]
    segment: int = 0
    """Segment length (lanes) of a segmented or vector broadcast."""


def _source(index: int, in_lanes: int, in_chunks: int, per: int) -> tuple[int, int]:
    """(source chunk id, lane in it) of a concatenated-operand lane index."""
    operand, lane = divmod(index, in_lanes)
    return operand * in_chunks + lane // per, lane % per


def plan_chunk(picks: Sequence[tuple[int, int] | None], per: int) -> ChunkPlan:
    """The reordering for one output chunk whose lane ``i`` must hold source
    ``picks[i]`` (source chunk id, lane), None for a don't-care lane."""
    defined = [(i, p) for i, p in enumerate(picks) if p is not None]
    if not defined:
        return ChunkPlan(Reorder.UNDEFINED, (), tuple(None for _ in range(per)))
    sources = tuple(sorted({p[0] for _, p in defined}))
    lanes = tuple(None if p is None else (sources.index(p[0]), p[1]) for p in picks)
    lanes = lanes + (None,) * (per - len(lanes))
    if len(sources) == 1:
        if all(lane == i for i, (_, lane) in defined):
            return ChunkPlan(Reorder.CHUNK_REUSE, sources, lanes)
        if len({lane for _, (_, lane) in defined}) == 1:
            return ChunkPlan(Reorder.SCALAR_BROADCAST, sources, lanes)
        block = _tile(defined, per)
        if block:
            return ChunkPlan(Reorder.VECTOR_BROADCAST, sources, lanes, block)
        seg = _segments(defined, per)
        if seg:
            return ChunkPlan(Reorder.SEGMENTED_BROADCAST, sources, lanes, seg)
        return ChunkPlan(Reorder.PERMUTE, sources, lanes)
    if len(sources) == 2:
        return ChunkPlan(Reorder.PERMUTE2, sources, lanes)
    return ChunkPlan(Reorder.PERMUTE_MANY, sources, lanes)


def _tile(defined: list[tuple[int, tuple[int, int]]], per: int) -> int:
    """The block length ``s`` (a quarter or half chunk) when lane ``i`` reads
    lane ``i % s`` (the low block repeated), else 0."""
    for s in (per // 4, per // 2):
        if s >= 1 and all(lane == i % s for i, (_, lane) in defined):
            return s
    return 0


def _segments(defined: list[tuple[int, tuple[int, int]]], per: int) -> int:
    """The largest power-of-two segment length (< ``per``) with one source lane per
    segment, else 0."""
    best = 0
    s = 2
    while s < per:
        lanes: dict[int, int] = {}
        if all(lanes.setdefault(i // s, lane) == lane for i, (_, lane) in defined):
            best = s
        s *= 2
    return best


def plan_shuffle(
    mask: Sequence[int | None], in_lanes: int, per: int, in_chunks: int | None = None
) -> list[ChunkPlan]:
    """Plans of every output chunk of ``shufflevector`` with ``mask`` over operands of
    ``in_lanes`` lanes held in chunks of ``per`` lanes."""
    chunks = in_chunks if in_chunks is not None else -(-in_lanes // per)
    plans = []
    for base in range(0, len(mask), per):
        picks = [None if m is None else _source(m, in_lanes, chunks, per) for m in mask[base : base + per]]
        plans.append(plan_chunk(picks, per))
    return plans


def classify(mask: Sequence[int | None], in_lanes: int, per: int) -> Reorder:
    """One name for a whole shuffle: every output chunk reusing one source chunk is a
    vector broadcast; otherwise the most general reordering any chunk needs."""
    plans = [p for p in plan_shuffle(mask, in_lanes, per) if p.kind is not Reorder.UNDEFINED]
    if not plans:
        return Reorder.UNDEFINED
    kinds = {p.kind for p in plans}
    if kinds == {Reorder.CHUNK_REUSE}:
        if len(plans) > 1 and len({p.sources for p in plans}) == 1:
            return Reorder.VECTOR_BROADCAST
        return Reorder.CHUNK_REUSE
    order = list(Reorder)
    return max(kinds, key=order.index)
