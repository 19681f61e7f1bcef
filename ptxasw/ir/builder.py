"""Editing a function's IR: positions, insertion and removal, fresh names, checked instructions.

Passes never splice statement lists by hand. A `FunctionBuilder` wraps one
function and offers what shuffle synthesis and later rewrites need:

* where a statement is (:meth:`FunctionBuilder.position`), also inside nested
  ``{ }`` blocks, found by identity (two equal ``mov`` instructions are two
  different places);
* :meth:`~FunctionBuilder.insert_before`, :meth:`~FunctionBuilder.insert_after`,
  :meth:`~FunctionBuilder.replace` and :meth:`~FunctionBuilder.remove`, which keep
  labels and ``.loc`` directives attached to what they belong to;
* fresh registers (:meth:`~FunctionBuilder.fresh`) and labels whose names no
  declaration, ``%r<N>`` range, parameter, label or module symbol uses, declared
  in the function's top-level body so that every nested block sees them;
* instructions built from the instruction table and checked there
  (:meth:`~FunctionBuilder.instruction`; typed helpers such as
  :meth:`~FunctionBuilder.mov`, :meth:`~FunctionBuilder.setp`,
  :meth:`~FunctionBuilder.shfl_sync`): a combination the table knows ``ptxas``
  refuses (a type, an operand shape, a register of the wrong type) raises
  `BuildError` at the call, in the pass, rather than in ``ptxas`` after it;
* an `AnalysisCache` that every edit invalidates, so that a CFG or a cache keyed
  by instruction identity is never used after the code it describes changed.

Instructions are never changed in place (caches key them by identity): a pass
builds a new one, with :meth:`~FunctionBuilder.copy` if it is a variant, and
puts it in with :meth:`~FunctionBuilder.replace`.

Example: the rewrite shuffle synthesis makes, a global load replaced by a
shuffle from the lane below and, where that lane is out of range, the load::

    b = FunctionBuilder(fn, module)
    dst, src = load.operands[0], earlier_load.operands[0]
    in_range = b.fresh_pred()                  # declared, named to clash with nothing
    b.replace(load, [
        b.shfl_sync("up", dst, src, 1, 0, pred=in_range),
        b.copy(load, guard=ir.Guard(in_range, negated=True)),
    ])
    cfg = b.analyses.get(fn, build_cfg)        # computed once per edit epoch...
    b.remove(dead)
    assert not b.analyses.is_current(fn, cfg)  # ...and dropped by the next edit

Where a label precedes an instruction, branches to the label reach it, so
``insert_before(inst, ...)`` places the new code between the label and the
instruction: it runs on every path that reaches ``inst``. A ``.loc`` directive
just above ``inst`` stays above the new code too, which is thus attributed to
the same source line, as a compiler would do for code it generated for it.
"""

from __future__ import annotations

import copy
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from ptxasw.ir import isa
from ptxasw.ir.nodes import (
    Address,
    Block,
    CallPrototype,
    FloatImm,
    Function,
    Guard,
    Instruction,
    IntImm,
    Label,
    ListOperand,
    LocDirective,
    Module,
    Negated,
    Operand,
    PairOperand,
    ParenOperand,
    Register,
    Statement,
    Symbol,
    TargetList,
    VarDecl,
    VarName,
    VectorOperand,
    Version,
)

__all__ = [
    "FULL_MASK",
    "AnalysisCache",
    "BuildError",
    "FunctionBuilder",
    "InstructionCache",
    "Position",
    "copy_function",
    "register_types",
    "table_checked",
]

#: The member mask of a whole warp, for ``shfl.sync``/``vote.sync``.
FULL_MASK = 0xFFFFFFFF

T = TypeVar("T")


class BuildError(ValueError):
    """A pass asked for an edit or an instruction that would not be valid PTX.

    This is a bug in the pass, not in the user's input, so it is not a
    `ptxasw.errors.PtxError`: the drop-in's fail-open path reports it.
    """


def copy_function(module: Module, fn: Function) -> tuple[Function, Module, dict[int, Any]]:
    """A deep copy of ``fn`` in a module that shares every other item, and
    `copy.deepcopy`'s memo (``id`` of an original object -> its copy), with
    which a pass points what it found in ``fn`` at the copy: trials (a
    rewrite to prove, a variant to assemble) are edited there, never in
    ``fn``."""
    memo: dict[int, Any] = {}
    twin = copy.deepcopy(fn, memo)
    return twin, replace(module, items=[twin if it is fn else it for it in module.items]), memo


def register_types(fn: Function) -> dict[str, str | None]:
    """The declared type of each register of ``fn`` (nested blocks folded
    in; None for a name declared with two types, or a vector register)."""
    return _Scope(fn, None).types


# --------------------------------------------------------------------------
# Analyses and their invalidation


class InstructionCache(Protocol):
    """Anything that keeps facts keyed by instruction identity (e.g.
    `ptxasw.emulator.semantics.instructions.Semantics`): told which
    instructions left the function so that it drops what it holds on them."""

    def forget(self, instructions: Sequence[Instruction]) -> None: ...


@dataclass
class _FunctionEntry:
    fn: Function  # held so that id(fn) stays unique while the entry lives
    epoch: int = 0
    results: dict[Any, Any] = field(default_factory=dict)
    instruction_caches: list[InstructionCache] = field(default_factory=list)


class AnalysisCache:
    """Per-function analysis results, valid for one edit epoch.

    Like LLVM's analysis managers, much reduced: a result is computed on first
    request (``get(fn, build_cfg)``), kept until the function is edited, and
    dropped then; the edit epoch counts the edits, so that any holder of an
    old result can ask :meth:`is_current` (or compare :meth:`epoch`) instead
    of trusting a stale CFG. Caches keyed by instruction identity register
    with :meth:`track` and are told which instructions went away. Every
    `FunctionBuilder` edit calls :meth:`invalidate`.
    """

    def __init__(self) -> None:
        self._entries: dict[int, _FunctionEntry] = {}
        self.edits = 0

    def _entry(self, fn: Function) -> _FunctionEntry:
        entry = self._entries.get(id(fn))
        if entry is None:
            entry = self._entries[id(fn)] = _FunctionEntry(fn)
        return entry

    def epoch(self, fn: Function) -> int:
        """How many edits ``fn`` has seen through this cache."""
        return self._entry(fn).epoch

    def get(self, fn: Function, analysis: Callable[[Function], T]) -> T:
        """``analysis(fn)``, computed once per epoch (the function is the key)."""
        results = self._entry(fn).results
        if analysis not in results:
            results[analysis] = analysis(fn)
        return results[analysis]  # type: ignore[no-any-return]

    def is_current(self, fn: Function, result: object) -> bool:
        """Whether ``result`` is one this cache holds for ``fn`` now, i.e. no edit
        happened since it was computed ("is my CFG still valid?")."""
        return any(r is result for r in self._entry(fn).results.values())

    def track(self, fn: Function, cache: InstructionCache) -> None:
        """Tell ``cache`` about every instruction later removed from ``fn``."""
        self._entry(fn).instruction_caches.append(cache)

    def invalidate(self, fn: Function, removed: Sequence[Instruction] = (), *, edit: bool = True) -> None:
        """Record a change of ``fn``: a new epoch, no results, ``removed`` forgotten.
        ``edit`` counts it in `edits` (a rollback changes code but edits nothing)."""
        entry = self._entry(fn)
        entry.epoch += 1
        entry.results.clear()
        self.edits += edit
        if removed:
            for cache in entry.instruction_caches:
                cache.forget(removed)


# --------------------------------------------------------------------------
# Names in scope


_RANGE_LIMIT = 1 << 20  # a %r<N> larger than this is not a real declaration


def _declared(name: VarName) -> Iterator[str]:
    """The names a declaration introduces: ``%r<3>`` is %r0, %r1, %r2."""
    if name.count is None:
        yield name.name
    else:
        for i in range(min(name.count, _RANGE_LIMIT)):
            yield f"{name.name}{i}"


def _operand_names(op: object) -> Iterator[str]:
    match op:
        case Register(name=name) | Symbol(name=name):
            yield name
        case Negated(operand=inner):
            yield inner.name
        case Address(base=base):
            if base is not None:
                yield base.name
        case VectorOperand(elements=items) | ListOperand(items=items) | ParenOperand(items=items):
            for item in items:
                yield from _operand_names(item)
        case PairOperand(first=a, second=b):
            yield from _operand_names(a)
            yield from _operand_names(b)


class _Scope:
    """Every name a function declares or can see (``names``), every name its
    operands mention (``used``), and the type of each register.

    Nested blocks are folded into one namespace on purpose: a fresh name must
    not be shadowed by a block's own declaration either. A name declared with
    two types in two blocks has no single type and is not type-checked.
    """

    def __init__(self, fn: Function, module: Module | None, skip: VarDecl | None = None) -> None:
        self.skip = skip  # a declaration to leave out (see FunctionBuilder.hoist)
        self.names: set[str] = set()
        self.used: set[str] = set()
        self.types: dict[str, str | None] = {}
        self.reserved: set[str] = set()  # fresh labels handed out, maybe not inserted yet
        if module is not None:
            self.names.update(module.index().names)
        self.names.add(fn.name)
        for p in [*fn.params, *(fn.returns or [])]:
            self.names.add(p.name)
            if p.space == ".reg":
                self._declare(p.name, p.type)
        if fn.body is not None:
            self._walk(fn.body.body)

    def _declare(self, name: str, typ: str | None) -> None:
        self.names.add(name)
        if name in self.types and self.types[name] != typ:
            self.types[name] = None
        else:
            self.types[name] = typ

    def _walk(self, body: list[Statement]) -> None:
        for stmt in body:
            match stmt:
                case Instruction():
                    for op in stmt.operands:
                        self.used.update(_operand_names(op))
                case VarDecl() if stmt is not self.skip:
                    for vn in stmt.names:
                        for name in _declared(vn):
                            if stmt.space == ".reg" and not vn.array:
                                # A vector register has no one type to check against.
                                self._declare(name, None if stmt.vector else stmt.type)
                            else:
                                self.names.add(name)
                case Label(name=name) | CallPrototype(label=name) | TargetList(label=name):
                    self.names.add(name)
                case Block(body=inner):
                    self._walk(inner)

    def taken(self, name: str) -> bool:
        """Whether a new declaration or label may not use ``name``."""
        return name in self.names or name in self.used or name in self.reserved


def _hint_base(typ: str) -> str:
    if typ == ".pred":
        return "p"
    bits = isa.type_bits(typ) or 32
    if typ.startswith(".f") and bits in (32, 64):
        return "f" if bits == 32 else "fd"
    return {16: "rs", 64: "rd"}.get(bits, "r")


_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


# --------------------------------------------------------------------------
# Positions


@dataclass(frozen=True)
class Position:
    """Where a statement is: ``body[index] is stmt``; ``blocks`` are the nested
    ``{ }`` blocks around it, outermost first (empty at the function's top level)."""

    body: list[Statement]
    index: int
    blocks: tuple[Block, ...]

    @property
    def statement(self) -> Statement:
        return self.body[self.index]

    @property
    def depth(self) -> int:
        return len(self.blocks)


OperandLike = Operand | int
GuardLike = Guard | Register | None


class _Keep:
    """The default of `FunctionBuilder.copy`'s ``guard``: keep the original's."""


_KEEP = _Keep()


class FunctionBuilder:
    """Edits one function (see the module docstring).

    ``edits`` counts the edits made through this builder; a pass changed the
    function exactly when it is non-zero. ``analyses`` is shared between the
    builders of a pipeline run (`ptxasw.driver.pipeline`).
    """

    def __init__(
        self,
        fn: Function,
        module: Module | None = None,
        analyses: AnalysisCache | None = None,
        *,
        prefix: str = "%sw",
    ) -> None:
        if fn.body is None:
            raise BuildError(f"{fn.name} is a declaration: it has no body to edit")
        if prefix.lstrip("%") and not _IDENT.fullmatch(prefix.lstrip("%")):
            raise BuildError(f"register prefix {prefix!r} is not a PTX identifier")
        self.fn = fn
        self.module = module
        self.analyses = analyses if analyses is not None else AnalysisCache()
        self.prefix = prefix
        self.edits = 0
        self._undo: list[Callable[[], None]] = []
        self._added: list[Instruction] = []
        self._scope = _Scope(fn, module)
        self._counters: dict[str, int] = {}

    # ---- positions ---------------------------------------------------------------
    def position(self, stmt: Statement) -> Position:
        """Where ``stmt`` (this very object) is in the body; `BuildError` if absent."""
        found = self._find(self.fn.body.body, stmt, ())  # type: ignore[union-attr]
        if found is None:
            raise BuildError(f"{_describe(stmt)} is not in {self.fn.name}")
        return found

    def contains(self, stmt: Statement) -> bool:
        return self._find(self.fn.body.body, stmt, ()) is not None  # type: ignore[union-attr]

    def _find(self, body: list[Statement], stmt: Statement, blocks: tuple[Block, ...]) -> Position | None:
        for i, s in enumerate(body):
            if s is stmt:
                return Position(body, i, blocks)
            if isinstance(s, Block):
                found = self._find(s.body, stmt, (*blocks, s))
                if found is not None:
                    return found
        return None

    @property
    def epoch(self) -> int:
        """The function's edit epoch in `analyses`."""
        return self.analyses.epoch(self.fn)

    # ---- edits -------------------------------------------------------------------
    def insert_before(self, anchor: Statement, new: Statement | Sequence[Statement]) -> None:
        """Insert ``new`` just before ``anchor``: after any label and ``.loc`` above
        it, so that every path reaching ``anchor`` runs ``new`` first."""
        pos = self.position(anchor)
        self._insert(pos.body, pos.index, self._fresh_statements(new))

    def insert_after(self, anchor: Statement, new: Statement | Sequence[Statement]) -> None:
        """Insert ``new`` just after ``anchor``, which must fall through: after a
        branch, ``ret`` or ``exit`` the new code would run on one path only, or on none."""
        pos = self.position(anchor)
        if isinstance(anchor, Instruction) and (isa.is_branch(anchor) or isa.is_return(anchor)):
            raise BuildError(f"cannot insert after {anchor.mnemonic}: control does not fall through to it")
        self._insert(pos.body, pos.index + 1, self._fresh_statements(new))

    def replace(self, old: Statement, new: Statement | Sequence[Statement]) -> None:
        """Put ``new`` where ``old`` was; labels and ``.loc`` above stay where they are."""
        pos = self.position(old)
        stmts = self._fresh_statements(new)
        if isinstance(old, Label):
            self._check_unreferenced(old)
        body, index = pos.body, pos.index
        body[index : index + 1] = stmts
        for s in stmts:
            self._scope_add(s)

        def undo() -> None:
            body[index : index + len(stmts)] = [old]

        self._edited(undo, removed=_instructions_of([old]), added=_instructions_of(stmts))

    def remove(self, stmt: Statement) -> None:
        """Remove ``stmt``. A ``.loc`` that only described it goes too; a label
        never goes with an instruction (branches still reach the next one), and
        removing a label that a branch names is refused."""
        pos = self.position(stmt)
        if isinstance(stmt, Label):
            self._check_unreferenced(stmt)
        body, i = pos.body, pos.index
        del body[i]
        gone: list[tuple[int, Statement]] = [(i, stmt)]
        if i > 0 and isinstance(body[i - 1], LocDirective):
            following = body[i] if i < len(body) else None
            if following is None or isinstance(following, LocDirective):
                gone.insert(0, (i - 1, body.pop(i - 1)))

        def undo() -> None:
            for index, old in gone:
                body.insert(index, old)

        self._edited(undo, removed=_instructions_of([stmt]))

    def _insert(self, body: list[Statement], index: int, stmts: list[Statement]) -> None:
        body[index:index] = stmts
        for s in stmts:
            self._scope_add(s)

        def undo() -> None:
            del body[index : index + len(stmts)]

        self._edited(undo, added=_instructions_of(stmts))

    def _fresh_statements(self, new: Statement | Sequence[Statement]) -> list[Statement]:
        if isinstance(new, str):
            raise BuildError(f"{new!r} is text: build the statement instead")
        stmts = [new] if not isinstance(new, Sequence) else list(new)
        if not stmts:
            raise BuildError("nothing to insert")
        for s in stmts:
            if not isinstance(s, Statement):  # type: ignore[misc, arg-type]
                raise BuildError(f"{s!r} is not a PTX statement: build it, do not write it")
            if isinstance(s, Instruction):
                self.check(s)  # also what a pass put together without the helpers
            if self.contains(s) or sum(1 for t in stmts if t is s) > 1:
                raise BuildError(f"{_describe(s)} is already in {self.fn.name}: insert a copy")
            if isinstance(s, Label) and s.name in self._scope.names:
                raise BuildError(f"{s.name} already names something in {self.fn.name}")
        return stmts

    def _scope_add(self, stmt: Statement) -> None:
        if isinstance(stmt, Label):
            self._scope.names.add(stmt.name)
        elif isinstance(stmt, (VarDecl, Block)):
            self._scope._walk([stmt])

    def _check_unreferenced(self, label: Label) -> None:
        for inst in self.fn.instructions():
            if label.name in _targets(inst):
                raise BuildError(f"label {label.name} is still the target of {inst.mnemonic}")
        for table in _target_lists(self.fn.body.body):  # type: ignore[union-attr]
            if label.name in table.targets:
                raise BuildError(f"label {label.name} is still in the table {table.label}")

    def _edited(
        self, undo: Callable[[], None], removed: Sequence[Instruction] = (), added: Sequence[Instruction] = ()
    ) -> None:
        self.edits += 1
        self._undo.append(undo)
        self._added.extend(added)
        self.analyses.invalidate(self.fn, removed)

    def rollback(self) -> None:
        """Undo every edit of this builder, newest first: the body holds its
        original statement objects again (a pass that fails half-way through
        a function leaves it as it was). Analyses are invalidated, and the
        edits no longer count as changes."""
        if not self._undo:
            return
        for undo in reversed(self._undo):
            undo()
        self.analyses.invalidate(self.fn, self._added, edit=False)
        self.analyses.edits -= self.edits
        self.edits = 0
        self._undo.clear()
        self._added.clear()

    def hoist(self, decl: VarDecl) -> None:
        """Move a ``.reg`` declaration out of its nested block to the top level.

        Registers declared in a block are visible in that block only; code a
        pass moves out of it (or adds around it) needs them at the top level.
        Refused when the top level would then declare a name twice or when the
        name would start shadowing or being shadowed by another declaration.
        """
        pos = self.position(decl)
        if decl.space != ".reg":
            raise BuildError(f"only .reg declarations are hoisted, not {decl.space}")
        if pos.depth == 0:
            return
        names = {n for vn in decl.names for n in _declared(vn)}
        others = _Scope(self.fn, self.module, skip=decl)
        clash = sorted(names & others.names)
        if clash:
            raise BuildError(
                f"cannot hoist {', '.join(clash[:5])}: the name is declared elsewhere in {self.fn.name}"
            )
        block_body, block_index = pos.body, pos.index
        del block_body[block_index]
        body = self.fn.body.body  # type: ignore[union-attr]
        index = _declarations_end(body)
        body.insert(index, decl)

        def undo() -> None:
            del body[index]
            block_body.insert(block_index, decl)

        self._edited(undo)

    # ---- names -------------------------------------------------------------------
    def fresh(self, typ: str, hint: str | None = None) -> Register:
        """A new register of PTX type ``typ``, declared at the function's top level.

        Its name is ``prefix + hint + N`` (hint defaults to nvcc's letter for the
        type: ``%swr0`` for .b32, ``%swp0`` for .pred) with the smallest N no name
        in the function or module uses.
        """
        if isa.type_bits(typ) is None or typ.startswith((".texref", ".samplerref", ".surfref")):
            raise BuildError(f"cannot declare a register of type {typ!r}")
        stem = self.prefix + (hint if hint is not None else _hint_base(typ))
        if not _IDENT.fullmatch(stem.lstrip("%")):
            raise BuildError(f"register name {stem!r} is not a PTX identifier")
        n = self._counters.get(stem, 0)
        while self._scope.taken(f"{stem}{n}"):
            n += 1
        self._counters[stem] = n + 1
        name = f"{stem}{n}"
        decl = VarDecl(".reg", typ, [VarName(name)])
        body = self.fn.body.body  # type: ignore[union-attr]
        index = _declarations_end(body)
        body.insert(index, decl)
        self._scope._declare(name, typ)  # stays taken after a rollback: harmless

        def undo() -> None:
            del body[index]

        self._edited(undo)
        return Register(name)

    def fresh_pred(self, hint: str | None = None) -> Register:
        """A new ``.pred`` register (see :meth:`fresh`)."""
        return self.fresh(".pred", hint)

    def fresh_label(self, hint: str = "$SW_L") -> Label:
        """A new label (not yet inserted) whose name nothing in the function uses."""
        if not _IDENT.fullmatch(hint):
            raise BuildError(f"label name {hint!r} is not a PTX identifier")
        n = self._counters.get(hint, 0)
        while self._scope.taken(f"{hint}{n}"):
            n += 1
        self._counters[hint] = n + 1
        name = f"{hint}{n}"
        self._scope.reserved.add(name)  # so that two fresh labels never clash
        return Label(name)

    def declared_type(self, reg: Register) -> str | None:
        """The declared type of ``reg`` (``.u32`` for ``%tid.x``); None when
        unknown or ambiguous."""
        special = isa.special_register_type(reg)
        if special is not None:
            return special
        return self._scope.types.get(reg.name)

    def is_declared(self, name: str) -> bool:
        return name in self._scope.names

    # ---- queries -----------------------------------------------------------------
    def users(self, reg: Register) -> list[Instruction]:
        """Instructions that read ``reg`` (by name; guards included)."""
        return [i for i in self.fn.instructions() if any(r.name == reg.name for r in isa.uses(i))]

    def definitions(self, reg: Register) -> list[Instruction]:
        """Instructions that write ``reg`` (by name)."""
        return [i for i in self.fn.instructions() if any(r.name == reg.name for r in isa.defs(i))]

    # ---- building instructions ---------------------------------------------------
    def instruction(
        self,
        opcode: str,
        modifiers: Iterable[str] = (),
        operands: Iterable[OperandLike] = (),
        *,
        guard: GuardLike = None,
    ) -> Instruction:
        """A new instruction, checked against the table and the declarations.

        ``opcode`` may carry modifiers (``"shfl.sync"``); the table decides
        where the opcode ends. Python ints become `ir.IntImm`. Raises
        `BuildError` naming every problem: unknown modifiers, a wrong operand
        count or shape, a type the opcode does not take, an undeclared register,
        a register or literal whose type does not fit its position, an opcode
        newer than the module's ``.version``.
        """
        mods = tuple(modifiers)
        bad = [m for m in mods if not m.startswith(".")]
        if bad:
            raise BuildError(f"modifiers are written with their dot: {', '.join(bad)}")
        try:
            name, extra = isa.split_mnemonic(opcode)
        except isa.UnknownOpcode as exc:
            raise BuildError(str(exc)) from None
        inst = Instruction(name, extra + mods, tuple(_operand(o) for o in operands), _guard(guard))
        self.check(inst)
        return inst

    def require_ptx(self, opcode: str) -> None:
        """Raise the module's ``.version`` to what ``opcode`` needs, where it
        is older: GCC writes ``.version 6.0``, and ``activemask`` (the corner
        test of every shuffle) came with PTX ISA 6.2. Only as far as needed:
        what later versions retire for sm_70 on (``shfl`` and ``vote`` without
        ``.sync``) stays valid up to 6.3."""
        needs = isa.lookup(opcode).min_ptx
        if self.module is None or self.module.version is None or self.module.version >= needs:
            return
        for item in self.module.items:
            if isinstance(item, Version):
                item.major, item.minor = needs
                return

    def check(self, inst: Instruction) -> None:
        """Raise `BuildError` if ``inst`` is not valid here (see :meth:`instruction`)."""
        table_checked(inst)
        problems = list(self._operand_problems(inst))
        version = self.module.version if self.module is not None else None
        needs = isa.lookup(inst.opcode).min_ptx
        if version is not None and needs > version:
            have = f"{version[0]}.{version[1]}"
            problems.append(
                f"{inst.opcode} needs PTX ISA {needs[0]}.{needs[1]}; the module is .version {have}"
            )
        _refuse(inst, problems)

    def _operand_problems(self, inst: Instruction) -> Iterator[str]:
        widening = isa.allows_wide_registers(inst)
        for reg, typ in [*isa.typed_defs(inst), *isa.typed_uses(inst)]:
            declared = self.declared_type(reg)
            if declared is None:
                if isa.is_special_register(reg.name):
                    yield f"special register {_reg(reg)} needs its .x/.y/.z selector, or takes none"
                elif reg.name not in self._scope.names:
                    yield f"register {_reg(reg)} is not declared in {self.fn.name}"
                continue
            if typ is not None and not isa.register_fits(declared, typ, widening=widening):
                yield f"{_reg(reg)} is {declared}, where {inst.opcode} wants {typ}"
        for op, info in zip(inst.operands, isa.operand_infos(inst), strict=True):
            for value in _immediates(op):
                if info.type is None:
                    continue
                if info.role is not isa.Role.USE:
                    yield f"literal {_literal(value)} cannot be written"
                elif not isa.immediate_fits(value, info.type):
                    yield f"literal {_literal(value)} does not fit a {info.type} operand"
            for sym in _symbols(op):
                if sym.name not in self._scope.names and sym.name not in self._scope.reserved:
                    yield f"{sym.name} names nothing in {self.fn.name} or its module"

    def copy(
        self,
        inst: Instruction,
        *,
        operands: Iterable[OperandLike] | None = None,
        guard: GuardLike | _Keep = _KEEP,
    ) -> Instruction:
        """A checked copy of ``inst`` (a new object: an instruction is in one place
        only), optionally with other operands or another guard. Duplicating a
        computation into a fresh register is ``b.copy(inst, operands=[fresh,
        *inst.operands[1:]])``; the fallback load of a shuffle is
        ``b.copy(load, guard=Guard(in_range, negated=True))``."""
        ops = inst.operands if operands is None else tuple(_operand(o) for o in operands)
        new_guard = inst.guard if isinstance(guard, _Keep) else _guard(guard)
        new = Instruction(inst.opcode, inst.modifiers, ops, new_guard, inst.loc)
        self.check(new)
        return new

    # typed helpers: the type defaults to what the destination is declared as,
    # turned into the class the opcode takes (add.b32 does not exist: add.s32).

    def mov(
        self, dst: Register, src: OperandLike, typ: str | None = None, *, guard: GuardLike = None
    ) -> Instruction:
        """``mov.T dst, src`` (T: ``dst``'s type)."""
        return self.instruction("mov", [typ or self._type_of(dst)], [dst, src], guard=guard)

    def add(
        self,
        dst: Register,
        a: OperandLike,
        b: OperandLike,
        typ: str | None = None,
        *,
        guard: GuardLike = None,
    ) -> Instruction:
        """``add.T dst, a, b`` (T: ``dst``'s type, ``.bN`` read as ``.sN``)."""
        return self.instruction("add", [typ or _arith(self._type_of(dst))], [dst, a, b], guard=guard)

    def sub(
        self,
        dst: Register,
        a: OperandLike,
        b: OperandLike,
        typ: str | None = None,
        *,
        guard: GuardLike = None,
    ) -> Instruction:
        """``sub.T dst, a, b`` (T as for :meth:`add`)."""
        return self.instruction("sub", [typ or _arith(self._type_of(dst))], [dst, a, b], guard=guard)

    def setp(
        self,
        compare: str,
        dst: Register,
        a: OperandLike,
        b: OperandLike,
        typ: str | None = None,
        *,
        negated_dst: Register | None = None,
        guard: GuardLike = None,
    ) -> Instruction:
        """``setp.CMP.T dst[|negated_dst], a, b`` (T: ``a``'s type, ``.bN`` as ``.sN``
        unless the comparison is ``eq``/``ne``)."""
        cmp = compare if compare.startswith(".") else "." + compare
        if typ is None:
            if not isinstance(a, Register):
                raise BuildError("setp needs a type when its first source is not a register")
            typ = self._type_of(a)
            if cmp not in (".eq", ".ne"):
                typ = _arith(typ)
        target: Operand = dst if negated_dst is None else PairOperand(dst, negated_dst)
        return self.instruction("setp", [cmp, typ], [target, a, b], guard=guard)

    def selp(
        self,
        dst: Register,
        a: OperandLike,
        b: OperandLike,
        pred: Register | Negated,
        typ: str | None = None,
        *,
        guard: GuardLike = None,
    ) -> Instruction:
        """``selp.T dst, a, b, pred``: ``a`` where ``pred`` holds, else ``b``."""
        return self.instruction("selp", [typ or self._type_of(dst)], [dst, a, b, pred], guard=guard)

    def shfl_sync(
        self,
        mode: str,
        dst: Register,
        src: OperandLike,
        lane: OperandLike,
        clamp: OperandLike,
        mask: OperandLike = FULL_MASK,
        *,
        pred: Register | None = None,
        guard: GuardLike = None,
    ) -> Instruction:
        """``shfl.sync.MODE.b32 dst[|pred], src, lane, clamp, mask``; ``pred`` is set
        when the source lane was in range."""
        m = mode if mode.startswith(".") else "." + mode
        target: Operand = dst if pred is None else PairOperand(dst, pred)
        mask_op = self.imm(mask, hex=True) if isinstance(mask, int) else mask
        return self.instruction(
            "shfl", [".sync", m, ".b32"], [target, src, lane, clamp, mask_op], guard=guard
        )

    def activemask(self, dst: Register, *, guard: GuardLike = None) -> Instruction:
        """``activemask.b32 dst``: the lanes executing it."""
        return self.instruction("activemask", [".b32"], [dst], guard=guard)

    def ld(
        self,
        space: str,
        dst: Register | VectorOperand,
        address: Address,
        typ: str | None = None,
        modifiers: Iterable[str] = (),
        *,
        guard: GuardLike = None,
    ) -> Instruction:
        """``ld.SPACE[.MODS].T dst, [address]`` (T: ``dst``'s type)."""
        if typ is None:
            if not isinstance(dst, Register):
                raise BuildError("a vector load needs its element type")
            typ = self._type_of(dst)
        sp = space if space.startswith(".") else "." + space
        return self.instruction("ld", [sp, *modifiers, typ], [dst, address], guard=guard)

    def bra(self, target: Label | str, *, guard: GuardLike = None, uni: bool = False) -> Instruction:
        """``[@guard] bra[.uni] target``."""
        name = target.name if isinstance(target, Label) else target
        return self.instruction("bra", [".uni"] if uni else [], [Symbol(name)], guard=guard)

    # ---- literals ----------------------------------------------------------------
    @staticmethod
    def imm(value: int, *, hex: bool = False) -> IntImm:
        """An integer literal (``hex``: printed as ``0xFFFFFFFF``)."""
        return IntImm(value, f"0x{value:X}" if hex and value >= 0 else None)

    @staticmethod
    def f32(value: float) -> FloatImm:
        """A ``.f32`` literal, exactly (``0f3F800000`` for 1.0)."""
        return FloatImm("f", "0f" + struct.pack(">f", value).hex().upper())

    @staticmethod
    def f64(value: float) -> FloatImm:
        """A ``.f64`` literal, exactly (``0d3FF0000000000000`` for 1.0)."""
        return FloatImm("d", "0d" + struct.pack(">d", value).hex().upper())

    def _type_of(self, reg: Register) -> str:
        typ = self.declared_type(reg)
        if typ is None:
            raise BuildError(f"the type of {_reg(reg)} is not known here: give it")
        return typ


# --------------------------------------------------------------------------
# Helpers


def table_checked(inst: Instruction) -> Instruction:
    """``inst``, if the instruction table has no objection to it (opcode,
    modifiers, operand shapes and types); else `BuildError`. What
    :meth:`FunctionBuilder.check` asks first, without the declarations: for
    code whose registers carry none (an inlined callee's, renamed apart)."""
    _refuse(inst, isa.instruction_problems(inst))
    return inst


def _refuse(inst: Instruction, problems: Sequence[str]) -> None:
    if problems:
        raise BuildError(f"cannot build {inst.mnemonic}: {'; '.join(problems)}")


def _declarations_end(body: list[Statement]) -> int:
    """Where a new top-level declaration goes: after the declarations the body
    opens with (earlier fresh ones included), so that it precedes every use."""
    index = 0
    while index < len(body) and isinstance(body[index], VarDecl):
        index += 1
    return index


def _arith(typ: str) -> str:
    """Arithmetic opcodes take no bit-size types: ``.b32`` registers add as ``.s32``."""
    return ".s" + typ[2:] if typ.startswith(".b") and typ != ".b128" else typ


def _operand(op: OperandLike) -> Operand:
    if isinstance(op, bool):
        raise BuildError("a Python bool is not an operand: use 0 or 1")
    if isinstance(op, int):
        return IntImm(op)
    if isinstance(op, str):
        raise BuildError(f"operand {op!r} is text: build it (ir.Register, ir.Symbol, ...) instead")
    return op


def _guard(guard: GuardLike) -> Guard | None:
    if guard is None or isinstance(guard, Guard):
        return guard
    return Guard(guard)


def _immediates(op: Operand) -> Iterator[IntImm | FloatImm]:
    if isinstance(op, (IntImm, FloatImm)):
        yield op
    elif isinstance(op, VectorOperand):
        for e in op.elements:
            yield from _immediates(e)


def _symbols(op: Operand) -> Iterator[Symbol]:
    match op:
        case Symbol():
            yield op
        case Address(base=Symbol() as base):
            yield base
        case VectorOperand(elements=items) | ListOperand(items=items) | ParenOperand(items=items):
            for item in items:
                yield from _symbols(item)


def _targets(inst: Instruction) -> list[str]:
    """Labels an instruction names (branch targets, tables, ``call`` prototypes)."""
    return [name for op in inst.operands for name in _operand_names(op)]


def _target_lists(body: list[Statement]) -> Iterator[TargetList]:
    for s in body:
        if isinstance(s, TargetList):
            yield s
        elif isinstance(s, Block):
            yield from _target_lists(s.body)


def _instructions_of(stmts: Iterable[Statement]) -> list[Instruction]:
    out: list[Instruction] = []
    for s in stmts:
        if isinstance(s, Instruction):
            out.append(s)
        elif isinstance(s, Block):
            out.extend(i for i in _instructions_of(s.body))
    return out


def _reg(reg: Register) -> str:
    return reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"


def _literal(value: IntImm | FloatImm) -> str:
    return value.text if isinstance(value, FloatImm) else (value.text or str(value.value))


def _describe(stmt: Statement) -> str:
    if isinstance(stmt, Instruction):
        return f"instruction {stmt.mnemonic}"
    if isinstance(stmt, Label):
        return f"label {stmt.name}"
    return type(stmt).__name__
