"""Loads before shuffles: the global loads that follow a rewritten load in its
block, and do not depend on it, are issued ahead of its shuffle (in blocks
of few shuffles: `ptxasw.synth.codegen.EARLY_FALLBACKS`).

Why: ``ptxas`` does not move a load across ``shfl.sync``. A shuffle waits for
its source load's value, so every load written after it waits a memory
latency more than in the original, where all of a stencil's loads leave
back to back. On an H100, GCC's OpenACC Jacobi (one warp a block, little to
hide latency behind) ran at 0.59-0.77 of the original with its two
row loads after the shuffle and at 0.92-0.98 with them moved above it by
hand (`benchmarks/gcc_openacc.py`).

What moves: a plain load (no memory-order qualifier, unguarded) with the
register arithmetic computing its address, from between a site's first
emitted instruction and the next site up to just before the former, in their order,
where nothing in between writes memory, synchronises, branches or is a
label, and nothing in between reads or writes what they write or writes
what they read. Only loads and arithmetic cross shuffles and other loads,
so every thread still reads the memory it read and computes what it
computed; the proof runs on the code as moved.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptxasw import ir
from ptxasw.ir import isa
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.synth.detect import ORDERED_LOAD

__all__ = ["loads_first"]

_SCAN = 96  # statements looked at past a block's first site


def loads_first(builder: FunctionBuilder, starts: Sequence[ir.Instruction]) -> int:
    """Move the loads that may go (module docstring) above the site before
    them: each of ``starts`` (a site's first emitted instruction) takes the
    loads up to the next site; how many moved. One site at a time: raising
    every load of an unrolled stencil above the block's first shuffle kept
    all their values live at once (the suite's seismic kernel went from 80
    registers to 128, and ran at half speed)."""
    fences = {id(start) for start in starts}
    moved = 0
    for anchor in starts:
        moved += _move_loads(builder, anchor, fences)
    return moved


def _move_loads(builder: FunctionBuilder, anchor: ir.Instruction, fences: set[int]) -> int:
    moved = 0
    while True:
        pos = builder.position(anchor)
        window = _window(pos.body, pos.index, fences)
        found = _next_movable(window)
        if found is None:
            return moved
        for inst in found:
            builder.remove(inst)
        builder.insert_before(anchor, found)
        moved += 1


def _window(body: list[ir.Statement], start: int, fences: set[int]) -> list[ir.Statement]:
    """The statements from ``start`` on that a load may be moved across or
    from: up to the next site, the first label, branch, return, call, store
    or other memory effect but a plain load, or synchronising instruction."""
    out: list[ir.Statement] = []
    for stmt in body[start : start + _SCAN]:
        if isinstance(stmt, ir.Label) or (out and id(stmt) in fences):
            break
        if isinstance(stmt, ir.Instruction) and _stops(stmt):
            break
        if isinstance(stmt, ir.Block) and any(_stops(i) for i in _instructions(stmt)):
            break
        out.append(stmt)
    return out


def _stops(inst: ir.Instruction) -> bool:
    """Control flow, or any memory effect but a plain load's (stores,
    atomics, and the FENCE of barriers and fences)."""
    if isa.is_branch(inst) or isa.is_call(inst) or isa.is_return(inst):
        return True
    effect = isa.memory_effect(inst)
    return bool(effect) and not _plain_load(inst)


def _plain_load(inst: ir.Instruction) -> bool:
    return (
        inst.opcode in ("ld", "ldu")
        and isa.memory_effect(inst) == isa.MemoryEffect.READ
        and not ORDERED_LOAD & set(inst.modifiers)
    )


def _next_movable(window: list[ir.Statement]) -> list[ir.Instruction] | None:
    """The first load of ``window`` past its first statement that may move to
    its start, with the arithmetic before it that computes its address; None
    if none may."""
    for k in range(1, len(window)):
        stmt = window[k]
        if not (isinstance(stmt, ir.Instruction) and _plain_load(stmt) and stmt.guard is None):
            continue
        if isa.state_space(stmt) not in (".global", "generic", ".const", ".param"):
            continue
        slice_ = _slice(window, k)
        if slice_ is not None and _free_to_move(window, slice_):
            return [window[i] for i in slice_]  # type: ignore[misc]
    return None


def _slice(window: list[ir.Statement], k: int) -> list[int] | None:
    """Indices in ``window`` of the load at ``k`` and of the register
    arithmetic its address needs that lies in the window, in order; None if
    some of that is not movable arithmetic."""
    taken = {k}
    wanted = list(isa.uses(window[k]))  # type: ignore[arg-type]
    while wanted:
        reg = wanted.pop()
        last = _last_writer(window, reg, before=max(taken))
        if last is None:
            continue
        inst = window[last]
        if last == 0 or not isinstance(inst, ir.Instruction) or not _movable_arithmetic(inst):
            return None
        if last not in taken:
            taken.add(last)
            wanted.extend(isa.uses(inst))
    return sorted(taken)


def _last_writer(window: list[ir.Statement], reg: ir.Register, before: int) -> int | None:
    """The last statement before ``before`` in the window that writes
    ``reg`` (the window's first, the site, never moves)."""
    for i in range(before - 1, -1, -1):
        if reg in _writes(window[i]):
            return i
    return None


def _movable_arithmetic(inst: ir.Instruction) -> bool:
    return (
        inst.guard is None
        and isa.computes_registers(inst)
        and isa.memory_effect(inst) == isa.MemoryEffect.NONE
        and not isa.writes_carry(inst)
        and not isa.reads_carry(inst)
    )


def _free_to_move(window: list[ir.Statement], slice_: list[int]) -> bool:
    """Whether each statement of ``slice_`` may go to the window's start: no
    other statement before it in the window reads or writes what it writes,
    or writes what it reads (the slice keeps its own order)."""
    chosen = set(slice_)
    for i in slice_:
        inst = window[i]
        assert isinstance(inst, ir.Instruction)
        written, read = set(isa.defs(inst)), set(isa.uses(inst))
        for j in range(i):
            if j in chosen:
                continue
            other_writes = _writes(window[j])
            if written & (other_writes | _reads(window[j])) or read & other_writes:
                return False
    return True


def _instructions(block: ir.Block) -> list[ir.Instruction]:
    out: list[ir.Instruction] = []
    for stmt in block.body:
        if isinstance(stmt, ir.Instruction):
            out.append(stmt)
        elif isinstance(stmt, ir.Block):
            out.extend(_instructions(stmt))
    return out


def _of(stmt: ir.Statement) -> list[ir.Instruction]:
    if isinstance(stmt, ir.Block):
        return _instructions(stmt)
    return [stmt] if isinstance(stmt, ir.Instruction) else []


def _writes(stmt: ir.Statement) -> set[ir.Register]:
    return {reg for inst in _of(stmt) for reg in isa.defs(inst)}


def _reads(stmt: ir.Statement) -> set[ir.Register]:
    return {reg for inst in _of(stmt) for reg in isa.uses(inst)}
