"""Which loads run only where the data says so.

A shuffle replacing a load runs where its warp has not split: above the
load's branch (`ptxasw.synth.codegen` hoists it there) or, for a predicated
load, in every lane. Where the branch tests a thread's position (a bounds
check) nearly every thread takes it and the shuffle costs what the paths
that load would have cost. Where it tests a value read from memory (a
limiter that looks at its neighbours only where the value is large), how
often it is taken is a property of the input, and a shuffle that runs on
every path may cost more than the loads it replaces ever did: on an H100 a
float4 box whose halo is read by 0.13 % of threads ran at 0.92 of nvcc's
code with its halo shuffled, while the same box gains 1.11-1.19 where half
or all of them read it (`benchmarks/vector_halo.py`, ``--sets gated``).

`DataGates` finds those: a load is *gated by data* when it runs under a
branch, taken after its source, or a guard, whose predicate depends on a
register that may hold a value read from memory or exchanged between lanes
(`loaded_registers`: a flow-insensitive closure over the function, which
errs towards "loaded" where a register is written both ways).
"""

from __future__ import annotations

import networkx as nx

from ptxasw import ir
from ptxasw.analysis.cfg import CFG
from ptxasw.ir import isa

__all__ = ["DataGates", "loaded_registers"]

# Collectives whose results depend on other lanes' values; ``activemask``
# depends only on which lanes run.
_LANE_VALUES = frozenset({"shfl", "vote", "match", "redux"})


def _reads_data(inst: ir.Instruction, params: frozenset[str]) -> bool:
    """Whether ``inst``'s results may be a value read from memory or another
    lane. A read of one of ``params``, the function's own parameters (a
    kernel's are the launch's inputs, the same for every thread: bounds), is
    not; a call's results and the ``ld.param`` of its return value are."""
    if isa.is_call(inst) or inst.opcode in _LANE_VALUES:
        return True
    effect = isa.memory_effect(inst)
    if not effect & (isa.MemoryEffect.READ | isa.MemoryEffect.ATOMIC):
        return False
    if isa.state_space(inst) != ".param":
        return True
    address = next((op for op in inst.operands if isinstance(op, ir.Address)), None)
    base = address.base if address is not None else None
    # nvcc and clang name a parameter as a symbol, GCC as a register (``[%in_ar0]``).
    return not (isinstance(base, ir.Symbol | ir.Register) and base.name in params)


def loaded_registers(fn: ir.Function) -> frozenset[str]:
    """The names of ``fn``'s registers that may hold data: written by a read
    of memory (but of its own parameters), an atomic, a call or a collective
    over lanes' values, or computed from such a register. By name across
    the whole function, to a fixed point (loops carry values backwards)."""
    params = frozenset(p.name for p in fn.params)
    loaded: set[str] = set()
    instructions = list(fn.instructions())
    changed = True
    while changed:
        changed = False
        for inst in instructions:
            written = [r.name for r in isa.defs(inst) if r.name not in loaded]
            if not written:
                continue
            if _reads_data(inst, params) or any(r.name in loaded for r in isa.uses(inst)):
                loaded.update(written)
                changed = True
    return frozenset(loaded)


class DataGates:
    """For one function: which of its loads run, after a given source
    instruction, only where a test of loaded data holds (module docstring)."""

    def __init__(self, fn: ir.Function, cfg: CFG) -> None:
        self.cfg = cfg
        self.loaded = loaded_registers(fn)
        # One iteration of every loop: the flow graph without its back edges.
        self._forward = nx.restricted_view(cfg.graph, [], cfg.back_edges)

    def gate(self, source: ir.Instruction, load: ir.Instruction) -> ir.Instruction | None:
        """The instruction whose data-dependent predicate decides whether
        ``load`` runs once ``source`` has: ``load`` itself (its guard), a
        branch between the two, or None where only positions, parameters
        and constants decide."""
        if load.guard is not None and load.guard.predicate.name in self.loaded:
            return load
        cfg = self.cfg
        try:
            start, here = cfg.block_of(source), cfg.block_of(load)
        except KeyError:
            return None
        if start == here:
            return None
        for block in sorted(self._deciding(start, here)):
            branch = cfg.blocks[block].terminator
            if branch is not None and branch.guard is not None and branch.guard.predicate.name in self.loaded:
                return branch
        return None

    def _deciding(self, start: int, here: int) -> set[int]:
        """The blocks whose branches decide whether ``here`` runs once
        ``start`` has: those on a path from ``start`` to ``here`` (within
        one iteration: back edges dropped) with a side from which ``here``
        cannot be reached."""
        graph = self._forward
        after = nx.descendants(graph, start) | {start}
        before = nx.ancestors(graph, here) | {here}
        return {b for b in (after & before) - {here} if any(s not in before for s in graph.successors(b))}
