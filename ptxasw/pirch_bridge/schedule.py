"""The order the lifter runs a straight-line PTX block in: chain by chain.

nvcc lays out a fully unrolled warp-register-cache kernel step by step: every
row's load, then ``for k: for r: c[r] += shfl(a[r], k) * b[k]``, then every
store. Lifted as it stands, every one of those rows is live at once; at WG 32
each row is two to four 512-bit registers, and the host spills them all
between uses. `schedule` reorders the block so that each result is finished,
as far as its dependences allow, before the next one starts: a depth-first
walk from the block's sinks (stores and values nothing in the block reads
again, in their original order) that emits an instruction after everything it
depends on. A row's chain (load, multiply-adds, store) then runs together and
only what several chains share (``b[k]``) stays live.

Only the order changes, never what is computed: an instruction depends on
every earlier one that writes a register it reads or writes, or reads a
register it writes (the carry flag counts as a register); memory accesses
keep their order unless both only read, and ``ld.global.nc`` (memory the
kernel never writes, as PTX requires of it) moves freely past stores;
anything else with an effect (fences, barriers, atomics, instructions outside
the pure families) stays where it is relative to everything.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxasw import ir
from ptxasw.ir import isa
from ptxasw.ir.isa import Family, MemoryEffect

__all__ = ["pressure", "schedule"]

_PURE = frozenset(
    {
        Family.INTEGER,
        Family.FLOAT,
        Family.HALF,
        Family.COMPARISON,
        Family.LOGIC,
        Family.DATA,
        Family.CONVERSION,
        Family.WARP,
        Family.VIDEO,
    }
)
_ACCESSES = frozenset({"ld", "ldu", "st"})
_CARRY = "%%carry"


def schedule(
    block: list[ir.Instruction], width: Callable[[str], int], budget: int, chains: int
) -> list[ir.Instruction]:
    """``block``'s instructions in chain order (see the module documentation), ``chains``
    sinks' chains interleaved for the host's pipelines to overlap; a terminator stays
    last. A block whose values fit in ``budget`` (bits held live at once, ``width``
    giving a register's bits across the lanes) keeps its order: nvcc's interleaving
    of independent chains is then the better schedule."""
    body = list(block)
    tail: list[ir.Instruction] = []
    if body and _terminates(body[-1]):
        tail = [body.pop()]
    if len(body) < 3 or pressure(body, width) <= budget:
        return block
    deps = _dependences(body)
    dependents = [0] * len(body)
    for ds in deps:
        for d in ds:
            dependents[d] += 1
    done = [False] * len(body)
    sinks = [i for i in range(len(body)) if dependents[i] == 0]
    order: list[int] = []
    for start in range(0, len(sinks), chains):
        lists = []
        for root in sinks[start : start + chains]:
            part: list[int] = []
            _emit_from(root, deps, done, part)
            lists.append(part)
        order += _interleave(lists, deps)
    assert len(order) == len(body)
    return [body[i] for i in order] + tail


def _interleave(lists: list[list[int]], deps: list[list[int]]) -> list[int]:
    """The lists merged round-robin, an item waiting until what it depends on is out
    (each list is in dependence order and only depends on itself and earlier lists)."""
    out: list[int] = []
    emitted: set[int] = set()
    pending = set().union(*lists)
    heads = [0] * len(lists)
    while any(h < len(lst) for h, lst in zip(heads, lists, strict=True)):
        for j, lst in enumerate(lists):
            if heads[j] < len(lst):
                node = lst[heads[j]]
                if all(d in emitted or d not in pending for d in deps[node]):
                    out.append(node)
                    emitted.add(node)
                    heads[j] += 1
                elif j == 0:
                    raise AssertionError("the first chain always makes progress")
    return out


def pressure(body: list[ir.Instruction], width: Callable[[str], int]) -> int:
    """The most bits of registers live at once in ``body``'s own order (values that
    live across the block count from their first to their last mention)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, inst in enumerate(body):
        for reg in (*isa.defs(inst), *isa.uses(inst)):
            first.setdefault(reg.name, i)
            last[reg.name] = i
    change = [0] * (len(body) + 1)
    for name, i in first.items():
        w = width(name)
        change[i] += w
        change[last[name] + 1] -= w
    live = peak = 0
    for delta in change:
        live += delta
        peak = max(peak, live)
    return peak


def _terminates(inst: ir.Instruction) -> bool:
    return inst.opcode in ("bra", "brx.idx", "call", "ret", "exit", "trap")


def _emit_from(root: int, deps: list[list[int]], done: list[bool], order: list[int]) -> None:
    """Post-order walk from ``root``: its dependences first, in their original order."""
    stack = [(root, 0)]
    while stack:
        node, next_dep = stack.pop()
        if done[node]:
            continue
        ds = deps[node]
        while next_dep < len(ds) and done[ds[next_dep]]:
            next_dep += 1
        if next_dep < len(ds):
            stack.append((node, next_dep + 1))
            stack.append((ds[next_dep], 0))
            continue
        done[node] = True
        order.append(node)


def _dependences(body: list[ir.Instruction]) -> list[list[int]]:
    """For each instruction, the earlier ones it must follow (sorted)."""
    last_def: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    loads: list[int] = []  # memory reads since the last write (not .nc)
    writes: list[int] = []  # memory writes since the last barrier
    free_loads: list[int] = []  # .nc loads since the last barrier
    barrier: int | None = None
    since_barrier: list[int] = []
    out: list[list[int]] = []
    for i, inst in enumerate(body):
        ds: set[int] = set()
        if barrier is not None:
            ds.add(barrier)
        used = {r.name for r in isa.uses(inst)}
        defined = {r.name for r in isa.defs(inst)}
        if isa.reads_carry(inst):
            used.add(_CARRY)
        if isa.writes_carry(inst):
            defined.add(_CARRY)
        for name in used:
            if name in last_def:
                ds.add(last_def[name])
        for name in defined:
            if name in last_def:
                ds.add(last_def[name])
            ds.update(readers.get(name, ()))
        kind = _kind(inst)
        if kind == "barrier":
            ds.update(since_barrier)
        elif kind == "load":
            ds.update(writes)
        elif kind == "store":
            ds.update(writes)
            ds.update(loads)
        ds.discard(i)
        out.append(sorted(ds))
        for name in used:
            readers.setdefault(name, []).append(i)
        for name in defined:
            last_def[name] = i
            readers[name] = []
        if kind == "barrier":
            barrier, since_barrier = i, []
            loads, writes, free_loads = [], [], []
            continue
        since_barrier.append(i)
        if kind == "load":
            loads.append(i)
        elif kind == "free_load":
            free_loads.append(i)
        elif kind == "store":
            writes, loads = [i], []
    return out


def _kind(inst: ir.Instruction) -> str:
    """``pure``, ``load``, ``free_load`` (``ld.global.nc``), ``store`` or ``barrier``."""
    if inst.opcode in _ACCESSES:
        ordered = MemoryEffect.FENCE | MemoryEffect.ATOMIC | MemoryEffect.ASYNC
        if isa.memory_effect(inst) & ordered or ".volatile" in inst.modifiers:
            return "barrier"
        if inst.opcode == "st":
            return "store"
        if ".nc" in inst.modifiers and ".global" in inst.modifiers:
            return "free_load"
        return "load"
    try:
        family = isa.instruction_family(inst)
    except KeyError:  # an opcode the table does not know: keep it in place
        return "barrier"
    if isa.memory_effect(inst) != MemoryEffect.NONE:
        return "barrier"
    return "pure" if family in _PURE else "barrier"
