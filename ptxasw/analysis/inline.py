"""Inline direct calls of a kernel into one function body, for analyses that
reason about a thread's whole execution (the symbolic executor, the lifter).

Debug builds (``-G``) and GCC/LLVM offload output put loads and stores in
device functions reached by ``call``; an analysis that only looks at the
kernel's own instructions sees none of them. Rather than teach every analysis
about call frames, this pass produces an equivalent function with callees
pasted in at their call sites, so the CFG, loops, liveness and the executor
work unchanged:

- the callee's registers, labels and body-local variables (its ``.local``
  depot, its own call sequences' ``.param`` variables) get a suffix unique to
  the call site: every inlined call runs in a fresh scope;
- ``.param`` formals are renamed to the caller's actual ``.param`` variables,
  so the caller's ``st.param`` and the callee's ``ld.param`` meet in memory
  (the return value the same way, in the other direction); ``.reg`` formals
  become ``mov`` instructions;
- ``ret`` becomes a branch to a label after the pasted body; a guarded call
  becomes a branch around it;
- copied instructions keep their source positions (the callee's lines).

Calls that cannot be inlined (through a register, to a function without a
body here, recursive, or deeper than ``max_depth``) stay as ``call``
instructions and are listed in `Inlined.skipped` with the reason, so that a
client can say the analysis is not complete.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from ptxasw import ir
from ptxasw.analysis.cfg import is_special_register

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "TRAMPOLINES",
    "CallSite",
    "Inlined",
    "NotFollowed",
    "call_site",
    "declared_names",
    "inline_calls",
    "variables",
]

DEFAULT_MAX_DEPTH = 4

# Runtime entry points that call a function pointer argument with a data
# argument (name -> positions of the two): GCC's OpenMP offload kernels start
# in libgomp's ``gomp_nvptx_main(fn, data)``, and parallel regions run through
# ``GOMP_parallel(fn, data, ...)``. Their bodies are in libgomp, not in the
# PTX; when the function pointer is a constant (``mov.u64 %r, fn``) the call
# is inlined as the call ``fn(data)`` it makes for the thread.
TRAMPOLINES: dict[str, tuple[int, int]] = {"gomp_nvptx_main": (0, 1), "GOMP_parallel": (0, 1)}


@dataclass(frozen=True, slots=True)
class CallSite:
    """The parts of a ``call`` instruction: ``call (returns), callee, (args)``.

    ``callee`` is a `ir.Symbol` for a direct call and a `ir.Register` for
    one through a function pointer.
    """

    callee: ir.Operand
    returns: tuple[ir.Operand, ...]
    args: tuple[ir.Operand, ...]

    @property
    def name(self) -> str:
        """The callee's name (a register's name for an indirect call)."""
        return self.callee.name if isinstance(self.callee, (ir.Symbol, ir.Register)) else "?"


@dataclass(frozen=True, slots=True)
class NotFollowed:
    """A call left in place, and why."""

    callee: str
    reason: str


@dataclass
class Inlined:
    """The result of `inline_calls`.

    ``function``: the kernel with its calls inlined (a new `ir.Function`; the
    input is not modified). ``skipped``: ``id()`` of every ``call`` that was
    left in place -> why. ``inlined``: how many call sites were pasted in.
    ``origin``: ``id()`` of every copied instruction -> the instruction of
    the module it was copied from (what a pass that rewrites code edits, and
    what a trace should print).
    """

    function: ir.Function
    skipped: dict[int, NotFollowed] = field(default_factory=dict)
    inlined: int = 0
    origin: dict[int, ir.Instruction] = field(default_factory=dict)


def call_site(inst: ir.Instruction) -> CallSite:
    """Split a ``call``'s operands by their shapes (PTX allows ``call f``,
    ``call f, (a)``, ``call (r), f, (a)`` and a trailing prototype or target
    list for indirect calls)."""
    ops = inst.operands
    returns: tuple[ir.Operand, ...] = ()
    if ops and isinstance(ops[0], ir.ParenOperand) and len(ops) > 1:
        returns, ops = ops[0].items, ops[1:]
    callee = ops[0] if ops else ir.Symbol("?")
    args: tuple[ir.Operand, ...] = ()
    if len(ops) > 1 and isinstance(ops[1], ir.ParenOperand):
        args = ops[1].items
    return CallSite(callee, returns, args)


def inline_calls(module: ir.Module, fn: ir.Function, max_depth: int = DEFAULT_MAX_DEPTH) -> Inlined:
    """``fn`` with every direct call to a function defined in ``module``
    replaced by the callee's body, nested calls too, up to ``max_depth``
    levels."""
    index = module.index()
    inliner = _Inliner(index.definitions, index.aliases, max_depth, _taken_names(fn))
    if fn.body is None:
        return Inlined(fn)
    body = inliner.statements(fn.body.body, _Scope.identity(), depth=0, stack=(fn.name,))
    if not inliner.count:
        return Inlined(fn, inliner.skipped)
    new_fn = dataclasses.replace(fn, body=ir.Block(body, fn.body.loc))
    return Inlined(new_fn, inliner.skipped, inliner.count, inliner.origin)


# --------------------------------------------------------------------------
# Renaming


@dataclass(frozen=True)
class _Scope:
    """How names of one pasted body map to the function being built.

    ``suffix`` is appended to registers (None: the kernel's own body, left
    as is); ``symbols`` maps formal parameters, labels and body-local
    variables; ``ret_label`` is where a ``ret`` goes (None: ``ret`` stays).
    """

    suffix: str | None
    symbols: dict[str, str]
    ret_label: str | None
    reg_formals: frozenset[str] = frozenset()

    @staticmethod
    def identity() -> _Scope:
        return _Scope(None, {}, None)

    def reg(self, reg: ir.Register) -> ir.Register:
        if self.suffix is None or is_special_register(reg.name):
            return reg
        if reg.name in self.symbols:  # a variable (``%P0`` of ``.param .u64 %P<2>``), renamed as one
            return ir.Register(self.symbols[reg.name], reg.selector)
        return ir.Register(reg.name + self.suffix, reg.selector)

    def symbol(self, name: str) -> str:
        return self.symbols.get(name, name)

    def operand(self, op: Any) -> Any:
        """``op`` with every register and symbol renamed (recursively through
        addresses, lists, vectors, pairs and constant expressions)."""
        if self.suffix is None and not self.symbols:
            return op
        if isinstance(op, ir.Register):
            return self.reg(op)
        if isinstance(op, ir.Symbol):
            return ir.Symbol(self.symbol(op.name))
        if isinstance(op, tuple):
            return tuple(self.operand(x) for x in op)
        if dataclasses.is_dataclass(op) and not isinstance(op, type):
            changes = {}
            for f in dataclasses.fields(op):
                if not f.compare:
                    continue
                value = getattr(op, f.name)
                new = self.operand(value)
                if new is not value:
                    changes[f.name] = new
            return dataclasses.replace(op, **changes) if changes else op
        return op

    def instruction(self, inst: ir.Instruction) -> ir.Instruction:
        guard = inst.guard
        if guard is not None:
            guard = ir.Guard(self.reg(guard.predicate), guard.negated)
        return ir.Instruction(inst.opcode, inst.modifiers, self.operand(inst.operands), guard, inst.loc)


def _taken_names(fn: ir.Function) -> set[str]:
    names = {p.name for p in fn.params}
    if fn.body is not None:
        for inst in fn.instructions():
            for op in _walk(inst.operands):
                if isinstance(op, (ir.Register, ir.Symbol)):
                    names.add(op.name)
    return names


def _walk(op: Any) -> Any:
    if isinstance(op, tuple):
        for x in op:
            yield from _walk(x)
    elif dataclasses.is_dataclass(op) and not isinstance(op, type):
        yield op
        for f in dataclasses.fields(op):
            if f.compare:
                yield from _walk(getattr(op, f.name))


def declared_names(decl: ir.VarDecl) -> list[str]:
    """The names a declaration introduces (``%P<2>`` is ``%P0`` and ``%P1``)."""
    out = []
    for v in decl.names:
        out.extend([v.name] if v.count is None else [f"{v.name}{i}" for i in range(v.count)])
    return out


def variables(fn: ir.Function) -> set[str]:
    """Names of the non-register variables declared in ``fn``'s body."""
    out: set[str] = set()
    stack = [fn.body.body] if fn.body is not None else []
    while stack:
        for stmt in stack.pop():
            if isinstance(stmt, ir.VarDecl) and stmt.space != ".reg":
                out.update(declared_names(stmt))
            elif isinstance(stmt, ir.Block):
                stack.append(stmt.body)
    return out


def _local_names(body: list[ir.Statement]) -> set[str]:
    """Labels and non-register variables declared anywhere in a body."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ir.Label):
            out.add(stmt.name)
        elif isinstance(stmt, ir.VarDecl) and stmt.space != ".reg":
            out.update(declared_names(stmt))
        elif isinstance(stmt, ir.TargetList):
            out.add(stmt.label)
        elif isinstance(stmt, ir.Block):
            out |= _local_names(stmt.body)
    return out


# --------------------------------------------------------------------------
# The pass


class _Inliner:
    def __init__(
        self, bodies: dict[str, ir.Function], aliases: dict[str, str], max_depth: int, taken: set[str]
    ) -> None:
        self.bodies = bodies
        self.aliases = aliases
        self.max_depth = max_depth
        self.taken = taken
        self.skipped: dict[int, NotFollowed] = {}
        self.origin: dict[int, ir.Instruction] = {}
        self.count = 0
        self._ids = itertools.count(1)
        # Instructions emitted since the last label, in order: enough to find
        # the constant a trampoline's function-pointer argument holds.
        self.recent: list[ir.Instruction] = []

    def statements(
        self, body: list[ir.Statement], scope: _Scope, depth: int, stack: tuple[str, ...]
    ) -> list[ir.Statement]:
        out: list[ir.Statement] = []
        for stmt in body:
            if isinstance(stmt, ir.Instruction):
                out.extend(self.instruction(stmt, scope, depth, stack))
            elif isinstance(stmt, ir.Block):
                out.append(ir.Block(self.statements(stmt.body, scope, depth, stack), stmt.loc))
            elif isinstance(stmt, ir.Label) and scope.suffix is None:
                self.recent.clear()
                out.append(stmt)
            elif scope.suffix is None:
                out.append(stmt)
            elif isinstance(stmt, ir.Label):
                self.recent.clear()
                out.append(ir.Label(scope.symbol(stmt.name), stmt.loc))
            elif isinstance(stmt, ir.VarDecl) and stmt.space != ".reg":
                names = [
                    dataclasses.replace(v, name=scope.symbol(v.name))
                    if v.count is None
                    else ir.VarName(scope.symbol(name), None, v.array, v.init)
                    for v in stmt.names
                    for name in ([v.name] if v.count is None else [f"{v.name}{i}" for i in range(v.count)])
                ]
                out.append(dataclasses.replace(stmt, names=names))
            elif isinstance(stmt, ir.TargetList):
                targets = tuple(scope.symbol(t) for t in stmt.targets)
                out.append(dataclasses.replace(stmt, label=scope.symbol(stmt.label), targets=targets))
            else:
                out.append(stmt)
        return out

    def instruction(
        self, inst: ir.Instruction, scope: _Scope, depth: int, stack: tuple[str, ...]
    ) -> list[ir.Statement]:
        if inst.opcode == "ret" and scope.ret_label is not None:
            guard = inst.guard
            if guard is not None:
                guard = ir.Guard(scope.reg(guard.predicate), guard.negated)
            return [ir.Instruction("bra", (), (ir.Symbol(scope.ret_label),), guard, inst.loc)]
        new = inst if scope.suffix is None and not scope.symbols else scope.instruction(inst)
        if new is not inst:
            self.origin[id(new)] = self.origin.get(id(inst), inst)
        if inst.opcode != "call":
            self.recent.append(new)
            return [new]
        site = self._through_trampoline(call_site(new))
        callee, why = self._callee(site, depth, stack)
        if callee is None:
            self.skipped[id(new)] = NotFollowed(call_site(inst).name, why)
            return [new]
        assert callee.body is not None
        return self._paste(new, site, callee, depth, stack)

    def _through_trampoline(self, site: CallSite) -> CallSite:
        """``gomp_nvptx_main(fn, data)`` as ``fn(data)`` when ``fn`` is a
        function of this module stored into the argument slot just before
        (``mov.u64 %r, fn; st.param.u64 [slot], %r``); else ``site``."""
        positions = TRAMPOLINES.get(site.name)
        if positions is None or site.name in self.bodies or not isinstance(site.callee, ir.Symbol):
            return site
        fn_pos, data_pos = positions
        if len(site.args) <= max(fn_pos, data_pos):
            return site
        slot = site.args[fn_pos]
        if not isinstance(slot, (ir.Symbol, ir.Register)):
            return site
        value = self._stored_in(slot.name)
        target = None if value is None else self._register_constant(value)
        if target is None or target not in self.bodies:
            return site
        return CallSite(ir.Symbol(target), (), (site.args[data_pos],))

    def _stored_in(self, slot: str) -> ir.Register | None:
        """The register last stored to ``[slot]`` among the recent instructions."""
        for inst in reversed(self.recent):
            if inst.opcode == "st" and len(inst.operands) == 2:
                addr, value = inst.operands
                base = addr.base if isinstance(addr, ir.Address) else None
                if isinstance(base, (ir.Symbol, ir.Register)) and base.name == slot:
                    return value if isinstance(value, ir.Register) and addr.offset == 0 else None
        return None

    def _register_constant(self, reg: ir.Register) -> str | None:
        """The symbol ``reg`` holds when its last recent definition is
        ``mov reg, symbol``."""
        for inst in reversed(self.recent):
            if inst.operands and inst.operands[0] == reg and inst.opcode != "st":
                src = inst.operands[1] if len(inst.operands) == 2 else None
                if inst.opcode == "mov" and isinstance(src, ir.Symbol) and inst.guard is None:
                    return src.name
                return None  # defined by something else
        return None

    def _callee(self, site: CallSite, depth: int, stack: tuple[str, ...]) -> tuple[ir.Function | None, str]:
        if not isinstance(site.callee, ir.Symbol):
            return None, "an indirect call through a register"
        name = site.callee.name
        seen = {name}
        while name in self.aliases and name not in self.bodies:
            name = self.aliases[name]
            if name in seen:
                break
            seen.add(name)
        fn = self.bodies.get(name)
        if fn is None:
            return None, "no body in this module"
        if name in stack:
            return None, "recursive"
        if depth >= self.max_depth:
            return None, f"call depth bound of {self.max_depth} reached"
        formals = fn.params
        if len(site.args) != len(formals) or len(site.returns) != len(fn.returns or []):
            return None, "argument count differs from the callee's signature"
        for actual, formal in zip((*site.args, *site.returns), (*formals, *(fn.returns or [])), strict=True):
            if formal.space == ".param" and not isinstance(actual, (ir.Symbol, ir.Register)):
                return None, f"argument for {formal.name} is not a .param variable"
        return fn, ""

    def _fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name = f"{base}${next(self._ids)}"
        self.taken.add(name)
        return name

    def _paste(
        self, call: ir.Instruction, site: CallSite, callee: ir.Function, depth: int, stack: tuple[str, ...]
    ) -> list[ir.Statement]:
        """The callee's body in a fresh scope, with its arguments bound."""
        assert callee.body is not None
        self.count += 1
        tag = f"$i{self.count}"
        symbols = {name: self._fresh(name + tag) for name in _local_names(callee.body.body)}
        ret_label = self._fresh(f"$L__ret{tag}")
        formals = [*callee.params, *(callee.returns or [])]
        actuals = [*site.args, *site.returns]
        reg_formals = []
        for formal, actual in zip(formals, actuals, strict=True):
            if formal.space == ".param":
                # A .param variable; a "register" here is one whose name the
                # parser could not resolve (GCC's ``.param.u64 %P<2>``).
                assert isinstance(actual, (ir.Symbol, ir.Register))
                symbols[formal.name] = actual.name
            else:
                reg_formals.append((formal, actual))
        scope = _Scope(tag, symbols, ret_label)
        loc = call.loc
        out: list[ir.Statement] = []
        skip_label = None
        if call.guard is not None:
            skip_label = self._fresh(f"$L__skip{tag}")
            negated = ir.Guard(call.guard.predicate, not call.guard.negated)
            out.append(ir.Instruction("bra", (), (ir.Symbol(skip_label),), negated, loc))
        returns = {id(f) for f in callee.returns or []}
        for formal, actual in reg_formals:
            if id(formal) not in returns:
                out.append(_mov(formal.type, scope.reg(ir.Register(formal.name)), actual, loc))
        body = self.statements(callee.body.body, scope, depth + 1, (*stack, callee.name))
        out.append(ir.Block(body, callee.body.loc))
        out.append(ir.Label(ret_label, loc))
        for formal, actual in reg_formals:
            if id(formal) in returns:
                out.append(_mov(formal.type, actual, scope.reg(ir.Register(formal.name)), loc))
        if skip_label is not None:
            out.append(ir.Label(skip_label, loc))
        return [ir.Block(out, loc)]


def _mov(typ: str, dst: ir.Operand, src: ir.Operand, loc: ir.SourceLoc) -> ir.Instruction:
    return ir.Instruction("mov", (typ,), (dst, src), None, loc)
