"""If-conversion for the symbolic analysis: short branch regions that only
compute registers become guarded instructions.

Why: every two-way branch whose condition can go both ways forks the
symbolic executor's flow, so k such branches in a row make up to 2^k flows,
each asking the solver again. Math-library code is made of them: the
Payne-Hanek reduction and quadrant selection that nvcc inlines for a precise
``sinf``/``cosf`` gave 184 flows and 6 s of analysis for a two-line kernel.
A region with no memory access, no collective and no control flow computes
the same registers as its instructions guarded by the branch condition
(``@!%p``: a guarded write keeps the old value when the guard is false), so
the executor runs it on one flow and the values meet as ``If(p, a, b)``.

Two shapes, both as nvcc and GCC print them, within one scope:

    @%p bra L;          @%p bra T;
    A...                F...
    L:                  bra J;
                        T:            (no other branch to T)
                        B...
                        J:

become ``@!%p A...; L:`` and ``@!%p F...; @%p B...; J:``. A region is taken
only when every instruction in it is unguarded register arithmetic,
comparison, logic, conversion or a move (no carry flag), none writes the
branch predicate, and it has at most `MAX_REGION` instructions. The input is
not modified; `Converted.origin` maps each guarded copy to the instruction it
was made from, so traces and passes still name the module's instructions.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ptxasw import ir
from ptxasw.ir import isa

__all__ = ["MAX_REGION", "Converted", "if_convert"]

MAX_REGION = 32

_PURE = frozenset(
    {
        isa.Family.INTEGER,
        isa.Family.FLOAT,
        isa.Family.HALF,
        isa.Family.COMPARISON,
        isa.Family.LOGIC,
        isa.Family.CONVERSION,
    }
)
_PURE_DATA = frozenset({"mov", "prmt"})


@dataclass
class Converted:
    """The result of `if_convert`: the function (a new one when anything was
    converted), ``id()`` of every guarded copy -> its original, and how many
    regions were converted."""

    function: ir.Function
    origin: dict[int, ir.Instruction] = field(default_factory=dict)
    regions: int = 0


def if_convert(fn: ir.Function) -> Converted:
    """``fn`` with its convertible branch regions guarded (see the module docstring)."""
    if fn.body is None:
        return Converted(fn)
    converter = _Converter(_label_references(fn.body.body))
    body = converter.statements(fn.body.body)
    if not converter.regions:
        return Converted(fn)
    new_fn = dataclasses.replace(fn, body=ir.Block(body, fn.body.loc))
    return Converted(new_fn, converter.origin, converter.regions)


def _label_references(stmts: Sequence[object]) -> Counter[str]:
    """How often each name is used as an operand anywhere (branch targets,
    ``brx.idx`` tables, address-of): a label used elsewhere keeps its block."""
    refs: Counter[str] = Counter()
    stack = [list(stmts)]
    while stack:
        for stmt in stack.pop():
            if isinstance(stmt, ir.Block):
                stack.append(stmt.body)
            elif isinstance(stmt, ir.Instruction):
                refs.update(op.name for op in stmt.operands if isinstance(op, ir.Symbol))
            elif isinstance(stmt, ir.VarDecl):
                refs.update(_names_in(stmt))
            elif isinstance(stmt, ir.TargetList):  # .branchtargets tables
                refs.update(stmt.targets)
    return refs


def _names_in(decl: ir.VarDecl) -> list[str]:
    """Names an initialiser mentions (labels in a ``.branchtargets``-like table of addresses)."""
    out: list[str] = []
    stack: list[object] = [v.init for v in decl.names if v.init is not None]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, ir.Symbol):
            out.append(item.name)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
    return out


class _Converter:
    def __init__(self, refs: Counter[str]) -> None:
        self.refs = refs
        self.origin: dict[int, ir.Instruction] = {}
        self.regions = 0

    def statements(self, stmts: Sequence[object]) -> list[object]:
        out: list[object] = []
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            if isinstance(stmt, ir.Block):
                out.append(dataclasses.replace(stmt, body=self.statements(stmt.body)))
                i += 1
                continue
            taken = self._region(stmts, i) if _is_guarded_branch(stmt) else None
            if taken is None:
                out.append(stmt)
                i += 1
                continue
            emitted, i = taken
            out.extend(emitted)
            self.regions += 1
        return out

    def _region(self, stmts: Sequence[object], i: int) -> tuple[list[object], int] | None:
        """The guarded statements that replace the branch at ``i`` and what
        follows it, and the index to go on from (the join label); None when
        the shape does not fit."""
        branch = stmts[i]
        assert isinstance(branch, ir.Instruction) and branch.guard is not None
        target = _target(branch)
        predicate = branch.guard.predicate
        skipped = not branch.guard.negated  # the fall-through runs when the guard is false
        first, j = self._straight(stmts, i + 1, predicate)
        if first is None or j >= len(stmts):
            return None
        stop = stmts[j]
        if isinstance(stop, ir.Label) and stop.name == target:  # triangle
            return self._guarded(first, predicate, skipped), j
        if not (_is_plain_branch(stop) and j + 1 < len(stmts)):
            return None
        join = _target(stop)
        then = stmts[j + 1]
        if not (isinstance(then, ir.Label) and then.name == target and self.refs[target] == 1):
            return None
        second, k = self._straight(stmts, j + 2, predicate)
        if second is None or k >= len(stmts):
            return None
        end = stmts[k]
        if not (isinstance(end, ir.Label) and end.name == join):
            return None
        if _count(first) + _count(second) > MAX_REGION:
            return None
        return [*self._guarded(first, predicate, skipped), *self._guarded(second, predicate, not skipped)], k

    def _straight(
        self, stmts: Sequence[object], start: int, predicate: ir.Register
    ) -> tuple[list[object] | None, int]:
        """The statements from ``start`` up to the next label or branch, if all
        are convertible; and where they stop."""
        j = start
        while j < len(stmts):
            stmt = stmts[j]
            if isinstance(stmt, ir.Label) or _is_plain_branch(stmt):
                break
            if isinstance(stmt, ir.Block) or (
                isinstance(stmt, ir.Instruction) and not _convertible(stmt, predicate)
            ):
                return None, j
            j += 1
        region = list(stmts[start:j])
        if _count(region) > MAX_REGION:
            return None, j
        return region, j

    def _guarded(self, region: list[object], predicate: ir.Register, negated: bool) -> list[object]:
        out: list[object] = []
        for stmt in region:
            if isinstance(stmt, ir.Instruction):
                copy = dataclasses.replace(stmt, guard=ir.Guard(predicate, negated))
                self.origin[id(copy)] = stmt
                out.append(copy)
            else:
                out.append(stmt)  # .loc and other directives stay where they were
        return out


def _count(region: list[object]) -> int:
    return sum(isinstance(s, ir.Instruction) for s in region)


def _target(inst: ir.Instruction) -> str | None:
    targets = isa.branch_targets(inst)
    return targets[0] if len(targets) == 1 else None


def _is_guarded_branch(stmt: object) -> bool:
    return (
        isinstance(stmt, ir.Instruction)
        and stmt.opcode == "bra"
        and stmt.guard is not None
        and _target(stmt) is not None
        and not isa.is_special_register(stmt.guard.predicate.name)
    )


def _is_plain_branch(stmt: object) -> bool:
    return (
        isinstance(stmt, ir.Instruction)
        and stmt.opcode == "bra"
        and stmt.guard is None
        and _target(stmt) is not None
    )


def _convertible(inst: ir.Instruction, predicate: ir.Register) -> bool:
    """Unguarded register computation that cannot trap, touch memory or
    other lanes, and leaves the branch predicate alone."""
    if inst.guard is not None or isa.is_branch(inst) or isa.is_call(inst) or isa.is_return(inst):
        return False
    if isa.memory_effect(inst) != isa.MemoryEffect.NONE or isa.writes_carry(inst) or isa.reads_carry(inst):
        return False
    if isa.instruction_family(inst) not in _PURE and inst.opcode not in _PURE_DATA:
        return False
    return all((reg.name, reg.selector) != (predicate.name, predicate.selector) for reg in isa.defs(inst))
