"""If-conversion for the symbolic analysis: forward-branching code that only
computes registers, reads memory or writes the thread's own local memory
becomes guarded instructions.

Why: every two-way branch whose condition can go both ways forks the
symbolic executor's flow, so k such branches in a row make up to 2^k flows,
each running the rest of the kernel and asking the solver again. Math
library code is made of them (special cases of ``sin``, ``pow``, ``exp``;
Payne-Hanek's table lookups; nvcc lays the rare side out of line), and so is
an unrolled insertion sort in a local array (a chain of early exits, one
per element). Guarded, such code runs on one flow and the values meet as
``If(p, a, b)``; a guarded write keeps the old value where its guard is
false, a guarded load reads what the branch's load read where it ran.

**Acyclic regions** (`_Converter._acyclic_region`), within one scope: the
blocks between a conditional branch and its immediate post-dominator J
(`_Layout`: the blocks of a statement list, post-dominators from networkx
on the reversed graph), wherever they are laid out, when nothing else
enters them, they form no loop, they lie after the branch and every
instruction converts. Each statement is guarded by the formula of where it
runs (`ptxasw.analysis.guards`: the disjunction over the branches into its
block of their source's formula and their condition); the blocks are
emitted in an order where each follows those that lead to it, leave their
old places, and a ``bra J`` follows where J is not next. Triangles,
diamonds, nvcc's ``@p bra T; bra F; T: ...`` layout and the rare sides it
places after the ``ret``, nests of them and chains of early exits to one
label are all this shape. Already-guarded instructions run under both
guards; a predicate the region overwrites while a formula still needs its
old value is copied first.

**GCC's out-of-line side** (`_Converter._out_of_line_region`): the taken
side placed after an unconditional jump or return, ending in a jump back to
the label the fall-through side runs into, which may leave early through
guarded branches (OpenMP's static schedule gives the first ``n % threads``
threads one iteration more; every GCC OpenMP kernel computes its team's and
its thread's bounds this way, twice over)::

    @%p bra T;          ...
    F1...               T:            (no other branch to T)
    @%q bra X;          B...
    F2...               bra J;
    J:

becomes ``@!%p F1...; @(!%p && %q) bra X; @(!%p && !%q) F2...; @%p B...; J:``
(each formula one fresh predicate) and the out-of-line code goes; it is
tried where the acyclic form does not fit (an early exit leaves the
region). Passes run to a fixed point, as one conversion can make the code
around it convertible.

What converts: register arithmetic, comparison, logic, conversion and moves
(no carry flag), plain ``ld``/``st`` of ``.local``, plain ``ld`` of
``.global``/``.const`` and plain ``ld``/``st`` of ``.global`` or generic
addresses (no ``.volatile``, no memory order; the last three not with
``visible_memory=False``, which the shuffle synthesis asks for: it places
shuffles where loads were and counts the stores between two loads per
flow; a region with such a store that joins at the kernel's ``ret`` stays
a branch, see `_returns_at`); never a shared-memory store, an atomic, a
collective, a call or a return. Fresh predicates are
named by `FunctionBuilder`. The input is not modified; `Converted.origin`
maps each guarded copy to the instruction it was made from, so traces and
passes still name the module's instructions.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from ptxasw import ir
from ptxasw.analysis import guards
from ptxasw.ir import isa
from ptxasw.ir.builder import BuildError, FunctionBuilder, table_checked

__all__ = ["MAX_REGION", "Converted", "if_convert"]

MAX_REGION = 1024
MAX_NESTING = 8  # passes: regions nested this deep are converted from the inside out

_ORDERED = frozenset({".volatile", ".relaxed", ".acquire", ".release", ".mmio"})


@dataclass
class Converted:
    """The result of `if_convert`: the function (a new one when anything was
    converted), ``id()`` of every guarded copy -> its original, and how many
    regions were converted."""

    function: ir.Function
    origin: dict[int, ir.Instruction] = field(default_factory=dict)
    regions: int = 0


def if_convert(
    fn: ir.Function, *, visible_memory: bool = True, keep: frozenset[int] = frozenset()
) -> Converted:
    """``fn`` with its convertible branch regions guarded (see the module
    docstring); without ``visible_memory``, regions that read or write
    memory other threads may see (global, constant, generic) stay branches.
    ``keep``: ``id()`` of instructions whose regions stay branches (a proof
    of a rewrite watches the ``mov`` that took a load's place in a branch:
    converted, the rewrite's paths would no longer be the original's)."""
    if fn.body is None:
        return Converted(fn)
    converter = _Converter(_label_references(fn.body.body), fn, visible_memory, keep)
    body = converter.statements(fn.body.body)
    for _ in range(MAX_NESTING - 1):  # a converted region may make the one around it convertible
        before = converter.regions
        converter.refs = _label_references(body)
        body = converter.statements(body)
        if converter.regions == before:
            break
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
    def __init__(
        self,
        refs: Counter[str],
        fn: ir.Function,
        visible_memory: bool = True,
        keep: frozenset[int] = frozenset(),
    ) -> None:
        self.refs = refs
        self.fn = fn
        self.visible_memory = visible_memory
        self.branches_kept = keep
        self.origin: dict[int, ir.Instruction] = {}
        self.regions = 0
        self.dropped: set[int] = set()  # ids of out-of-line arms now guarded where they branched from
        self.fresh: list[ir.Register] = []  # predicates the converted code adds
        self._layouts: dict[int, _Layout] = {}  # by statement list, for this pass
        self._builder: FunctionBuilder | None = None
        self._made: list[ir.Instruction] = []  # every copy, kept alive while `origin` holds its id
        self._visible_loads = False  # the region being tried runs in one thread of each row
        self._definitions: dict[ir.Register, list[ir.Instruction]] | None = None

    def _converts(self, inst: ir.Instruction, predicate: ir.Register | None) -> bool:
        return _convertible(inst, predicate, self.visible_memory, self.branches_kept, self._visible_loads)

    def _converts_block(self, block: ir.Block, predicate: ir.Register | None) -> bool:
        return _convertible_block(
            block, predicate, self.visible_memory, self.branches_kept, self._visible_loads
        )

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
        self._visible_loads = not self.visible_memory and self._thread_zero_only(stmts[i])
        try:
            return self._acyclic_region(stmts, i) or self._out_of_line_region(stmts, i)
        finally:
            self._visible_loads = False

    def _thread_zero_only(self, branch: object) -> bool:
        """Whether ``branch`` skips what follows for every thread but those
        with ``%tid.x == 0``: GCC's OpenACC "vector single" code, where lane 0
        of each row loads the offload arguments and broadcasts them (``@%p bra
        L`` on ``setp.ne %p, %tid.x, 0``, made once at the kernel's entry;
        ``L: shfl.sync.idx ...``).

        Its loads run in one lane of a row, so none is a shuffle's source or
        target (`ptxasw.synth.detect` refuses them under their guard): the
        shuffle synthesis may take such a region guarded, which is what lets
        the executor see the broadcast values in every lane."""
        assert isinstance(branch, ir.Instruction) and branch.guard is not None
        test = self._only_definition(branch.guard.predicate)
        if test is None or test.opcode != "setp" or len(test.operands) != 3:
            return False
        if (".eq" if branch.guard.negated else ".ne") not in test.modifiers:
            return False
        a, b = test.operands[1], test.operands[2]
        if isinstance(a, ir.IntImm):
            a, b = b, a
        if not (isinstance(b, ir.IntImm) and b.value == 0 and isinstance(a, ir.Register)):
            return False
        if a.name != "%tid":
            moved = self._only_definition(a)
            if moved is None or moved.opcode != "mov" or not isinstance(moved.operands[-1], ir.Register):
                return False
            a = moved.operands[-1]
        return a.name == "%tid" and a.selector == "x"

    def _only_definition(self, reg: ir.Register) -> ir.Instruction | None:
        """The one instruction of the function that writes ``reg``, if it is
        the only one and unguarded (then every read after it sees its value)."""
        if self._definitions is None:
            self._definitions = {}
            for inst in self.fn.instructions():
                for written in isa.defs(inst):
                    self._definitions.setdefault(written, []).append(inst)
        found = self._definitions.get(reg, [])
        return found[0] if len(found) == 1 and found[0].guard is None else None

    def _acyclic_region(self, stmts: Sequence[object], i: int) -> tuple[list[object], int] | None:
        """The blocks between the branch at ``i`` and its immediate
        post-dominator J, wherever they are laid out, when nothing else
        enters them, they form no loop, they lie after the branch and all of
        their statements convert. Each statement is guarded by the formula of
        where it runs (`ptxasw.analysis.guards`), the blocks in an order where
        each comes after those that lead to it; they leave their old places,
        and a ``bra J`` follows where J is not next. Triangles, diamonds,
        nvcc's ``@p bra T; bra F; T:`` layout and the rare sides it places
        after the ``ret``, nests of them and chains of early exits to one
        label are all this shape."""
        layout = self._layout(stmts)
        entry = layout.of[i]
        join = layout.ipdom.get(entry)
        if join is None or join == _EXIT:
            return None
        join_label = layout.blocks[join].label
        region = self._region_blocks(layout, entry, join, i)
        if join_label is None or region is None:
            return None
        if _returns_at(layout.stmts, join) and any(
            _stores_visibly(layout.stmts[layout.blocks[b].start : layout.blocks[b].end]) for b in region
        ):
            return None  # a bounds check around a store (see `_returns_at`)
        order = _topological(layout, region, entry)
        if order is None:
            return None  # a loop
        try:
            emitted = _Predication(self, guards.TRUE).run(_walk_list(layout, i, order))
        except BuildError:
            return None  # a register the instruction table cannot type here: leave the branches
        for start in order:
            block = layout.blocks[start]
            self.dropped.update(id(s) for s in stmts[block.start : block.end])
        following = next((n for n in range(i + 1, len(stmts)) if id(stmts[n]) not in self.dropped), None)
        if following != join:
            emitted.append(table_checked(ir.Instruction("bra", (), (ir.Symbol(join_label),))))
        return emitted, i + 1

    def _layout(self, stmts: Sequence[object]) -> _Layout:
        """The blocks of ``stmts``, computed once per statement list and pass."""
        known = self._layouts.get(id(stmts))
        if known is None or known.stmts is not stmts:
            known = self._layouts[id(stmts)] = _Layout(stmts)
        return known

    def _region_blocks(self, layout: _Layout, entry: int, join: int, i: int) -> set[int] | None:
        """The blocks the branch reaches before J, if every one qualifies
        (see `_acyclic_region`)."""
        region: set[int] = set()
        stack = [s for s in layout.blocks[entry].successors if s != join]
        size = 0
        while stack:
            start = stack.pop()
            if start in region:
                continue
            block = layout.blocks[start]
            if start <= i or block.terminal:
                return None
            if any(id(s) in self.dropped for s in layout.stmts[block.start : block.end]):
                return None  # part of a region converted earlier in this pass
            size += self._convertible_size(layout.stmts, block)
            if size > MAX_REGION:
                return None
            region.add(start)
            stack.extend(s for s in block.successors if s != join and s not in region)
        for start in region:
            block = layout.blocks[start]
            preds = layout.predecessors[start]
            if any(p not in region and p != entry for p in preds):
                return None  # entered from outside
            branching = sum(1 for p in preds if layout.blocks[p].target == start)
            if block.label is not None and self.refs[block.label] != branching:
                return None  # named elsewhere too (a branch table, an address)
        return region

    def _convertible_size(self, stmts: Sequence[object], block: _Block) -> int:
        """The instructions of ``block``; more than `MAX_REGION` if one does not convert."""
        count = 0
        for stmt in stmts[block.start : block.end]:
            if isinstance(stmt, ir.Block):
                if not self._converts_block(stmt, None):
                    return MAX_REGION + 1
                count += _count(stmt.body)
            elif isinstance(stmt, ir.Instruction):
                ok = _plain_guard(stmt) if stmt is block.branch else self._converts(stmt, None)
                if not ok:
                    return MAX_REGION + 1
                count += 1
        return count

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
                self._converts(stmt, predicate) or _is_early_exit(stmt, predicate, target)
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
        if _returns_at(stmts, j) and _stores_visibly([*first, *second]):
            return None  # a bounds check around a store (see `_returns_at`)
        if not any(_is_early_exit(s, predicate, target) for s in first) and not second:
            return None  # a plain triangle: `_acyclic_region`'s
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
        t = self._layout(stmts).labels.get(target)
        if t is None or t < start or not _ends_flow(_previous_instruction(stmts, t)):
            return None
        second, k = self._straight(stmts, t + 1, predicate)
        if second is None or k >= len(stmts):
            return None
        back = stmts[k]
        if not (_is_plain_branch(back) and _target(back) == join):
            return None
        return second, range(t, k + 1)

    def _with_exits(self, region: list[object], predicate: ir.Register, negated: bool) -> list[object]:
        """``region`` guarded by ``@[!]predicate``, its early exits taken only
        where that guard holds."""
        return _Predication(self, guards.literal(ir.Guard(predicate, negated)), exits=True).run(region)

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
            if isinstance(stmt, ir.Label) and self.refs[stmt.name] == 0:
                j += 1  # left by a region converted inside this one: nothing branches here
                continue
            if isinstance(stmt, ir.Label) or _is_plain_branch(stmt):
                break
            if isinstance(stmt, ir.Block) and not self._converts_block(stmt, predicate):
                return None, j
            if isinstance(stmt, ir.Instruction) and not self._converts(stmt, predicate):
                return None, j
            j += 1
        region = list(stmts[start:j])
        if _count(region) > MAX_REGION:
            return None, j
        return region, j

    def _guarded(self, region: list[object], predicate: ir.Register, negated: bool) -> list[object]:
        """``region`` under ``@[!]predicate`` (an instruction already guarded
        runs under both guards)."""
        return _Predication(self, guards.literal(ir.Guard(predicate, negated))).run(region)

    def keep(self, copy: ir.Instruction, original: ir.Instruction) -> ir.Instruction:
        """Record that ``copy`` stands for ``original`` (or for what that copy stood for)."""
        self.origin[id(copy)] = self.origin.get(id(original), original)
        self._made.append(copy)
        return copy


class _Predication:
    """One region's statements, each guarded by the formula of where it runs
    (`ptxasw.analysis.guards`). A branch to a label inside the region adds
    to that label's formula and removes its condition from what follows;
    with ``exits``, a branch is instead kept, taken only where it would have
    been (the label is outside). Formulas name registers, so before an
    instruction overwrites a predicate that a live formula mentions, the
    predicate is copied and the formulas renamed to the copy."""

    def __init__(self, converter: _Converter, entry: guards.Formula, *, exits: bool = False) -> None:
        self.converter = converter
        self.exits = exits
        self.builder = guards.GuardBuilder(converter._fresh)
        self.alive = entry  # where the current statement runs
        self.arriving: dict[str, guards.Formula] = {}  # per label inside: where its branches come from

    def run(self, region: Sequence[object]) -> list[object]:
        out: list[object] = []
        for stmt in region:
            if isinstance(stmt, ir.Label):
                self.alive = guards.disj(self.alive, self.arriving.pop(stmt.name, guards.FALSE))
                if self.exits:
                    out.append(stmt)
            elif self.alive == guards.FALSE:
                continue  # after an unconditional branch, before any label: never runs
            elif isinstance(stmt, ir.Block):
                out.append(dataclasses.replace(stmt, body=self.run(stmt.body)))
            elif isinstance(stmt, ir.Instruction) and stmt.opcode == "bra":
                self._branch(stmt, out)
            elif isinstance(stmt, ir.Instruction):
                self._instruction(stmt, out)
            else:
                out.append(stmt)  # .loc and other directives stay where they were
        return out

    def _branch(self, stmt: ir.Instruction, out: list[object]) -> None:
        taken = guards.TRUE if stmt.guard is None else guards.literal(stmt.guard)
        where = guards.conj(self.alive, taken)
        if self.exits:
            if where != guards.FALSE:
                guard = self.builder.guard(where, out)
                out.append(self.converter.keep(table_checked(dataclasses.replace(stmt, guard=guard)), stmt))
        else:
            target = _target(stmt)
            assert target is not None
            self.arriving[target] = guards.disj(self.arriving.get(target, guards.FALSE), where)
        if stmt.guard is None:
            self.alive = guards.FALSE
        else:
            self.alive = guards.conj(self.alive, guards.negate(stmt.guard))

    def _instruction(self, stmt: ir.Instruction, out: list[object]) -> None:
        runs = self.alive if stmt.guard is None else guards.conj(self.alive, guards.literal(stmt.guard))
        if runs == guards.FALSE:
            return
        guard = self.builder.guard(runs, out)
        for reg in isa.defs(stmt):
            if any(guards.mentions(f, reg) for f in (self.alive, *self.arriving.values())):
                copy = self.builder.snapshot(reg, out)
                self.alive = guards.rename(self.alive, reg, copy)
                self.arriving = {k: guards.rename(f, reg, copy) for k, f in self.arriving.items()}
            self.builder.forget(reg)
        out.append(self.converter.keep(dataclasses.replace(stmt, guard=guard), stmt))


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


@dataclass
class _Block:
    """Statements of one list that control enters only at the top: at a
    label, or after a branch."""

    start: int
    end: int  # exclusive
    label: str | None
    successors: list[int]  # starts of the blocks control goes to
    target: int | None  # where the closing branch goes
    falls_to: int | None  # where control falls through to
    branch: ir.Instruction | None  # the closing branch
    terminal: bool  # ends the function, or leaves this list


_EXIT = -1


class _Layout:
    """The blocks of one statement list, where each branch and fall-through
    goes, and each block's immediate post-dominator (the first block every
    path from it meets on its way out: dominators of the reversed graph)."""

    def __init__(self, stmts: Sequence[object]) -> None:
        self.stmts = stmts
        self.labels = {s.name: n for n, s in enumerate(stmts) if isinstance(s, ir.Label)}
        starts = sorted(
            {0, *self.labels.values()}
            | {n + 1 for n, s in enumerate(stmts) if _ends_block(s) and n + 1 < len(stmts)}
        )
        self.blocks: dict[int, _Block] = {}
        self.of: dict[int, int] = {}  # statement index -> the start of its block
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(stmts)
            self.blocks[start] = self._block(start, end, end if k + 1 < len(starts) else None)
            self.of.update(dict.fromkeys(range(start, end), start))
        self.predecessors: dict[int, set[int]] = {b: set() for b in self.blocks}
        reverse = nx.DiGraph()
        reverse.add_node(_EXIT)
        for start, block in self.blocks.items():
            reverse.add_node(start)
            for succ in block.successors:
                self.predecessors[succ].add(start)
                reverse.add_edge(succ, start)
            if block.terminal:
                reverse.add_edge(_EXIT, start)
        self.ipdom: dict[int, int] = nx.immediate_dominators(reverse, _EXIT)

    def _block(self, start: int, end: int, following: int | None) -> _Block:
        stmts = self.stmts
        first = stmts[start]
        label = first.name if isinstance(first, ir.Label) else None
        last = next((s for s in reversed(stmts[start:end]) if isinstance(s, ir.Instruction | ir.Label)), None)
        if isinstance(last, ir.Instruction) and last.opcode == "bra":
            name = _target(last)
            target = self.labels.get(name) if name is not None else None
            if target is None:  # indirect, or to a label of another scope
                return _Block(start, end, label, [], None, None, last, True)
            if last.guard is None:
                return _Block(start, end, label, [target], target, None, last, False)
            if following is None:
                return _Block(start, end, label, [target], target, None, last, True)
            return _Block(start, end, label, [target, following], target, following, last, False)
        if (isinstance(last, ir.Instruction) and isa.is_return(last)) or following is None:
            return _Block(start, end, label, [], None, None, None, True)
        return _Block(start, end, label, [following], None, following, None, False)


def _returns_at(stmts: Sequence[object], start: int) -> bool:
    """Whether the first instruction at or after ``start`` is an unguarded
    ``ret``/``exit``: a region joining there ends the thread's work.

    Such a region with a store to global memory (a kernel's ``if (i < n)
    {...; out[i] = ...}``) stays a branch: forking it costs one empty flow,
    and its trace keeps a plain path condition, where the guarded form
    would print every address and value under the bounds check's ``If``.
    Where more code follows the join, each fork doubles the work after it,
    and the region converts."""
    for stmt in stmts[start:]:
        if isinstance(stmt, ir.Instruction):
            return isa.is_return(stmt) and stmt.guard is None
        if isinstance(stmt, ir.Block):
            return False
    return False


def _stores_visibly(stmts: Sequence[object]) -> bool:
    """Whether ``stmts`` (nested blocks included) store to global memory or
    at a generic address."""
    return any(
        inst.opcode == "st" and isa.state_space(inst) in (".global", "generic")
        for inst in ir.iter_instructions(list(stmts))
    )


def _ends_block(stmt: object) -> bool:
    return isinstance(stmt, ir.Instruction) and (stmt.opcode == "bra" or isa.is_return(stmt))


def _topological(layout: _Layout, region: set[int], entry: int) -> list[int] | None:
    """The region's blocks, each after every block of the region that leads
    to it, nearest to the original layout; None if they form a loop."""
    waiting = {b: sum(1 for p in layout.predecessors[b] if p in region) for b in region}
    ready = [b for b in layout.blocks[entry].successors if b in region and waiting[b] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        block = heapq.heappop(ready)
        if block in order:
            continue
        order.append(block)
        for succ in set(layout.blocks[block].successors):
            if succ in region:
                waiting[succ] -= 1
                if waiting[succ] == 0:
                    heapq.heappush(ready, succ)
    return order if len(order) == len(region) else None


def _walk_list(layout: _Layout, i: int, order: list[int]) -> list[object]:
    """The branch at ``i`` and the region's blocks in ``order``, as one list
    for `_Predication`: each block under its label (a made-up one where it
    has none), and an explicit ``bra`` where a block fell through to one
    that no longer follows it."""
    stmts = layout.stmts

    def name(start: int) -> str:
        return layout.blocks[start].label or f"$ifc.fall{start}"

    def jump(start: int) -> ir.Instruction:
        return ir.Instruction("bra", (), (ir.Symbol(name(start)),))

    out: list[object] = [stmts[i]]
    falls_to = layout.blocks[layout.of[i]].falls_to
    for start in order:
        if falls_to is not None and falls_to != start:
            out.append(jump(falls_to))
        block = layout.blocks[start]
        out.append(ir.Label(name(start)))
        out.extend(s for s in stmts[block.start : block.end] if not isinstance(s, ir.Label))
        falls_to = block.falls_to
    if falls_to is not None:
        out.append(jump(falls_to))  # into the join
    return out


def _count(region: Sequence[object]) -> int:
    return sum(_count(s.body) if isinstance(s, ir.Block) else isinstance(s, ir.Instruction) for s in region)


def _convertible_block(
    block: ir.Block,
    predicate: ir.Register | None,
    visible_memory: bool,
    keep: frozenset[int] = frozenset(),
    visible_loads: bool = False,
) -> bool:
    """A nested scope of register declarations and convertible instructions:
    nvcc wraps each 64-bit split or join (``mov.b64 {%temp, %r}, %fd``) in one,
    declaring its ``%temp`` there."""
    for stmt in block.body:
        if isinstance(stmt, ir.Block):
            if not _convertible_block(stmt, predicate, visible_memory, keep, visible_loads):
                return False
        elif isinstance(stmt, ir.VarDecl):
            if stmt.space != ".reg":
                return False
        elif isinstance(stmt, ir.Instruction):
            if not _convertible(stmt, predicate, visible_memory, keep, visible_loads):
                return False
        elif isinstance(stmt, ir.Label):
            return False
    return True


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


def _convertible(
    inst: ir.Instruction,
    predicate: ir.Register | None,
    visible_memory: bool = True,
    keep: frozenset[int] = frozenset(),
    visible_loads: bool = False,
) -> bool:
    """Register computation (or a thread-private access) that cannot trap or
    touch other lanes, and leaves the branch ``predicate`` (if given) alone."""
    if id(inst) in keep:
        return False
    if isa.is_branch(inst) or isa.is_call(inst) or isa.is_return(inst) or not _plain_guard(inst):
        return False
    if isa.writes_carry(inst) or isa.reads_carry(inst):
        return False
    if isa.memory_effect(inst) != isa.MemoryEffect.NONE:
        if not _guardable_access(inst, visible_memory, visible_loads):
            return False
    elif not isa.computes_registers(inst):
        return False
    return predicate is None or all(reg != predicate for reg in isa.defs(inst))


def _plain_guard(inst: ir.Instruction) -> bool:
    """Unguarded, or guarded by an ordinary predicate register."""
    return inst.guard is None or not isa.is_special_register(inst.guard.predicate.name)


def _guardable_access(inst: ir.Instruction, visible_memory: bool, visible_loads: bool = False) -> bool:
    """A plain ``ld``/``st`` of local memory; with ``visible_memory`` also a
    plain load from global or constant memory and a plain load or store
    of global memory or at a generic address.

    A guarded access is the access its branch made, where it ran: a store
    whose guard is false keeps the old bytes, a load whose guard is false
    leaves its register as it was, and the executor keeps the guard on the
    access (a later load of the place reads ``If(guard, stored, older)``).
    Math-library slow paths (tables in global memory, digits in local
    arrays), sorts in local arrays and the remainder chains of unrolled
    loops over a buffer (one fork per chain step otherwise: a loop
    unrolled by 8 over a ``malloc``'d buffer gave 66 flows and 2,550
    solver questions, 9.5 s; converted: 16 flows, 1.2 s) are full of them.
    Shared-memory stores stay branches, as before: no input measured here
    needed them converted."""
    effect = isa.memory_effect(inst)
    if effect & (isa.MemoryEffect.ATOMIC | isa.MemoryEffect.ASYNC):
        return False
    if any(m in _ORDERED for m in inst.modifiers):
        return False
    space = isa.state_space(inst)
    if inst.opcode == "st":
        return space == ".local" or (visible_memory and space in (".global", "generic"))
    visible = (".global", ".const", "generic") if visible_memory or visible_loads else ()
    return inst.opcode == "ld" and space in (".local", *visible)
