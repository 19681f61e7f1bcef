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

become ``@!%p A...; L:`` and ``@!%p F...; @%p B...; J:``. A third shape is
GCC's: the taken side out of line, after an unconditional jump or return,
ending in a jump back to the label the fall-through side runs into, which
may leave early through guarded branches (OpenMP's static schedule gives
the first ``n % threads`` threads one iteration more; every GCC OpenMP
kernel computes its team's and its thread's bounds this way, twice over)::

    @%p bra T;          ...
    F1...               T:            (no other branch to T)
    @%q bra X;          B...
    F2...               bra J;
    J:

becomes ``not.pred %r, %p; @%r F1...; and.pred %e, %r, %q; @%e bra X;
@%r F2...; @%p B...; J:`` (the early exit taken only where the fall-through
side runs; fresh predicates named by `FunctionBuilder`), and the out-of-line
code goes. A region is taken
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
from ptxasw.ir.builder import BuildError, FunctionBuilder, table_checked

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
    converter = _Converter(_label_references(fn.body.body), fn)
    body = converter.statements(fn.body.body)
    if not converter.regions:
        return Converted(fn)
    declared = [ir.VarDecl(".reg", ".pred", [ir.VarName(reg.name)]) for reg in converter.fresh]
    new_fn = dataclasses.replace(fn, body=ir.Block([*declared, *body], fn.body.loc))
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
    def __init__(self, refs: Counter[str], fn: ir.Function) -> None:
        self.refs = refs
        self.fn = fn
        self.origin: dict[int, ir.Instruction] = {}
        self.regions = 0
        self.dropped: set[int] = set()  # ids of out-of-line arms now guarded where they branched from
        self.fresh: list[ir.Register] = []  # predicates the converted code adds
        self._labels: dict[int, tuple[Sequence[object], dict[str, int]]] = {}  # by statement list
        self._builder: FunctionBuilder | None = None

    def builder(self) -> FunctionBuilder:
        """Names for the added predicates: a builder over a copy of the
        function (the input is never modified), made on first use. Inlined
        callees' registers carry no declarations (the inliner renames them
        apart with a ``$iN`` suffix), so the added instructions are checked
        against the instruction table alone (`table_checked`)."""
        if self._builder is None:
            assert self.fn.body is not None
            copy = dataclasses.replace(self.fn, body=ir.Block(list(self.fn.body.body), self.fn.body.loc))
            self._builder = FunctionBuilder(copy, prefix="%ifc")
        return self._builder

    def statements(self, stmts: Sequence[object]) -> list[object]:
        out: list[object] = []
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            if id(stmt) in self.dropped:
                i += 1
                continue
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
        no shape fits."""
        return self._inline_region(stmts, i) or self._out_of_line_region(stmts, i)

    def _inline_region(self, stmts: Sequence[object], i: int) -> tuple[list[object], int] | None:
        """A triangle or a diamond laid out in order (the module docstring)."""
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

    def _out_of_line_region(self, stmts: Sequence[object], i: int) -> tuple[list[object], int] | None:
        """GCC's shape (the module docstring): a fall-through side that may
        leave early, running into a label J; the taken side, if not J
        itself, out of line further down and jumping back to J."""
        branch = stmts[i]
        assert isinstance(branch, ir.Instruction) and branch.guard is not None
        target = _target(branch)
        predicate = branch.guard.predicate
        skipped = not branch.guard.negated
        j = i + 1
        while j < len(stmts) and not isinstance(stmts[j], ir.Label):
            stmt = stmts[j]
            if isinstance(stmt, ir.Block):
                return None
            if isinstance(stmt, ir.Instruction) and not (
                _convertible(stmt, predicate) or _is_early_exit(stmt, predicate, target)
            ):
                return None
            j += 1
        if j >= len(stmts):
            return None
        first = list(stmts[i + 1 : j])
        join = stmts[j]
        assert isinstance(join, ir.Label)
        second: list[object] = []
        arm: range = range(0)
        if join.name != target:
            found = self._out_of_line_arm(stmts, j + 1, target, join.name, predicate)
            if found is None:
                return None
            second, arm = found
        if _count(first) + _count(second) > MAX_REGION:
            return None
        if not any(_is_early_exit(s, predicate, target) for s in first) and not second:
            return None  # a plain triangle: `_inline_region`'s
        try:
            emitted = [
                *self._with_exits(first, predicate, skipped),
                *self._guarded(second, predicate, not skipped),
            ]
        except BuildError:
            return None  # a register the instruction table cannot type here: leave the branch
        self.dropped.update(id(stmts[n]) for n in arm)
        return emitted, j

    def _out_of_line_arm(
        self, stmts: Sequence[object], start: int, target: str | None, join: str, predicate: ir.Register
    ) -> tuple[list[object], range] | None:
        """The statements of the arm labelled ``target`` (after ``start``,
        reached by one branch, nothing falling into it) up to its ``bra``
        back to ``join``; and the range of statement indices it spans."""
        if target is None or self.refs[target] != 1:
            return None
        t = self._label_positions(stmts).get(target)
        if t is None or t < start or not _ends_flow(_previous_instruction(stmts, t)):
            return None
        second, k = self._straight(stmts, t + 1, predicate)
        if second is None or k >= len(stmts):
            return None
        back = stmts[k]
        if not (_is_plain_branch(back) and _target(back) == join):
            return None
        return second, range(t, k + 1)

    def _label_positions(self, stmts: Sequence[object]) -> dict[str, int]:
        """Where each label of ``stmts`` is, computed once per statement list
        (a search per branch would be quadratic in a large function)."""
        known = self._labels.get(id(stmts))
        if known is None or known[0] is not stmts:
            positions = {s.name: n for n, s in enumerate(stmts) if isinstance(s, ir.Label)}
            known = self._labels[id(stmts)] = (stmts, positions)
        return known[1]

    def _with_exits(self, region: list[object], predicate: ir.Register, negated: bool) -> list[object]:
        """``region`` guarded by ``@[!]predicate``, its early exits taken only
        where that guard holds (a fresh predicate each: ``and`` of the guard
        and the exit's condition)."""
        if not any(isinstance(s, ir.Instruction) and s.opcode == "bra" for s in region):
            return self._guarded(region, predicate, negated)
        out: list[object] = []
        runs = predicate
        if negated:
            runs = self._fresh()
            out.append(table_checked(ir.Instruction("not", (".pred",), (runs, predicate))))
        for stmt in region:
            if not (isinstance(stmt, ir.Instruction) and stmt.opcode == "bra"):
                out.extend(self._guarded([stmt], predicate, negated))
                continue
            assert stmt.guard is not None
            condition = stmt.guard.predicate
            if stmt.guard.negated:
                condition = self._fresh()
                negation = ir.Instruction("not", (".pred",), (condition, stmt.guard.predicate))
                out.append(table_checked(negation))
            taken = self._fresh()
            out.append(table_checked(ir.Instruction("and", (".pred",), (taken, runs, condition))))
            exit_copy = table_checked(dataclasses.replace(stmt, guard=ir.Guard(taken)))
            self.origin[id(exit_copy)] = stmt
            out.append(exit_copy)
        return out

    def _fresh(self) -> ir.Register:
        reg = self.builder().fresh_pred()
        self.fresh.append(reg)
        return reg

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


def _is_early_exit(stmt: object, predicate: ir.Register, target: str | None) -> bool:
    """A guarded one-target ``bra`` out of a region, on a condition other
    than the region's own predicate."""
    return (
        _is_guarded_branch(stmt)
        and isinstance(stmt, ir.Instruction)
        and stmt.guard is not None
        and stmt.guard.predicate.name != predicate.name
        and _target(stmt) != target
    )


def _previous_instruction(stmts: Sequence[object], index: int) -> object | None:
    """The statement before ``index``, skipping directives (``.loc``) that do
    not change control flow; None at the start or after a label or block."""
    for n in range(index - 1, -1, -1):
        stmt = stmts[n]
        if isinstance(stmt, ir.Instruction | ir.Label | ir.Block):
            return stmt
    return None


def _ends_flow(stmt: object) -> bool:
    """Whether nothing falls through past ``stmt``: an unguarded ``bra``,
    ``ret``, ``exit`` or ``trap``."""
    return (
        isinstance(stmt, ir.Instruction)
        and stmt.guard is None
        and (_is_plain_branch(stmt) or isa.is_return(stmt))
    )


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
