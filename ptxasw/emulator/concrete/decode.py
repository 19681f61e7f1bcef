"""Decoding a function for the interpreter: its code as a list of `Op`.

The run loop must not re-interpret PTX text or walk the IR: every instruction
is decoded once per function into an `Op` that says what the loop does with
it (an `EXEC` for the semantics, a branch with its target and reconvergence
pc, a call with its operands, a barrier...). Decoding also

* renames registers apart: a register declared in a nested ``{ }`` under a
  name an enclosing scope also declares gets its own name, and every name is
  interned (fast dict keys in the register file);
* lays out the frame: ``.param`` parameters and call-site variables in one
  per-lane buffer, ``.local`` variables on the thread's stack;
* computes each divergent branch's reconvergence pc, and marks branches to a
  ``ret``/``exit`` block that retire their lanes on the spot (as ptxas does;
  see `CFG.exit_branches`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ptxasw import ir
from ptxasw.analysis.cfg import CFG, build_cfg
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.errors import EmulationError
from ptxasw.ir import isa
from ptxasw.ir.layout import bits_of, normalize_space, param_var, round_up, var_of, walk_decls


class SymbolTable(Protocol):
    """Where module-level names live: what decoding needs of a `Program`.

    A protocol rather than an import, so that the program (which decodes its
    functions) and the decoder do not import each other.
    """

    def module_symbol(self, name: str, fn_name: str | None = None) -> tuple[str, int] | None: ...


# Operand kinds of the decoded instructions (ints: the hot loop compares them).
EXEC, BRA, BRX, CALL, RET, EXIT, TRAP, BAR, BAR_ARRIVE, BAR_RED = range(10)
NOP, MAPA, CTARANK, UNSUPPORTED, BRA_RET = range(10, 15)


@dataclass(slots=True)
class Call:
    """The decoded operands of a ``call``."""

    returns: tuple[ir.Operand, ...]
    callee: ir.Symbol | ir.Register
    args: tuple[ir.Operand, ...]


class Op:
    """One decoded instruction: what the run loop does with it."""

    __slots__ = ("call", "exits", "inst", "kind", "rpc", "target", "targets", "width")

    def __init__(self, kind: int, inst: ir.Instruction) -> None:
        self.kind = kind
        self.inst = inst
        self.target = -1
        self.rpc = -1
        self.targets: tuple[int, ...] = ()
        self.call: Call | None = None
        self.width = 0
        self.exits = False  # a branch to `exit` (not `ret`): its lanes leave the kernel


class DecodedFunction:
    """A function decoded for execution: its CFG, decoded instructions and
    the layout of its frame (``.param`` and ``.local`` symbols)."""

    def __init__(self, fn: ir.Function, cfg: CFG) -> None:
        self.fn = fn
        self.cfg = cfg
        self.code: list[Op] = []
        # name -> (space, value, relative to the frame's local base)
        self.symbols: dict[str, tuple[str, int, bool]] = {}
        self.param_layout: dict[str, tuple[int, int]] = {}
        self.param_size = 0
        self.local_size = 0
        self.reg_types: dict[str, str] = {}


def intern(name: str) -> str:
    """The interned copy of a register or symbol name (fast dict keys)."""
    return sys.intern(str(name))


class _Scope:
    """Register declarations of one ``{ }`` scope (for shadowing)."""

    __slots__ = ("exact", "id", "parent", "ranges")

    def __init__(self, sid: int, parent: _Scope | None) -> None:
        self.id = sid
        self.parent = parent
        self.exact: set[str] = set()
        self.ranges: list[tuple[str, int]] = []

    def declares(self, name: str) -> bool:
        if name in self.exact:
            return True
        for prefix, count in self.ranges:
            if name.startswith(prefix):
                tail = name[len(prefix) :]
                if tail.isdigit() and int(tail) < count:
                    return True
        return False


def _scoped_instructions(fn: ir.Function) -> tuple[list[ir.Instruction], list[_Scope]]:
    """Instructions in text order (as the CFG lists them) with their scopes."""
    insts: list[ir.Instruction] = []
    scopes: list[_Scope] = []
    counter = [0]
    root = _Scope(0, None)
    for p in [*fn.params, *(fn.returns or [])]:
        if p.space == ".reg":
            root.exact.add(p.name)

    def walk(body: list[ir.Statement], scope: _Scope) -> None:
        for stmt in body:
            if isinstance(stmt, ir.VarDecl) and stmt.space == ".reg":
                for n in stmt.names:
                    if n.count is not None:
                        scope.ranges.append((str(n.name), n.count))
                    else:
                        scope.exact.add(str(n.name))
        for stmt in body:
            if isinstance(stmt, ir.Instruction):
                insts.append(stmt)
                scopes.append(scope)
            elif isinstance(stmt, ir.Block):
                counter[0] += 1
                walk(stmt.body, _Scope(counter[0], scope))

    assert fn.body is not None
    walk(fn.body.body, root)
    return insts, scopes


def _register_key(name: str, scope: _Scope) -> str:
    """A name unique per declaration: a register declared in a nested scope
    under a name an enclosing scope also declares gets ``name@scope``."""
    s: _Scope | None = scope
    while s is not None:
        if s.declares(name):
            outer = s.parent
            while outer is not None:
                if outer.declares(name):
                    return intern(f"{name}@{s.id}")
                outer = outer.parent
            break
        s = s.parent
    return intern(name)


def _rewrite_operand(op: ir.Operand, rename: Callable[[str], str]) -> ir.Operand:
    match op:
        case ir.Register(name=name, selector=sel):
            return ir.Register(rename(name), sel)
        case ir.Symbol(name=name):
            return ir.Symbol(intern(name))
        case ir.Address(base=base, offset=off, offset_text=text):
            new_base = None if base is None else _rewrite_operand(base, rename)
            return ir.Address(new_base, off, text)  # type: ignore[arg-type]
        case ir.Negated(operand=inner):
            return ir.Negated(_rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.VectorOperand(elements=items):
            return ir.VectorOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.ParenOperand(items=items):
            return ir.ParenOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.ListOperand(items=items):
            return ir.ListOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.PairOperand(first=a, second=b):
            return ir.PairOperand(_rewrite_operand(a, rename), _rewrite_operand(b, rename))
        case ir.UnaryExpr(op=o, operand=inner):
            return ir.UnaryExpr(o, _rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.BinaryExpr(op=o, lhs=lhs, rhs=rhs):
            return ir.BinaryExpr(o, _rewrite_operand(lhs, rename), _rewrite_operand(rhs, rename))  # type: ignore[arg-type]
        case ir.ParenExpr(inner=inner):
            return ir.ParenExpr(_rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.CallExpr(func=f, args=args):
            return ir.CallExpr(f, tuple(_rewrite_operand(a, rename) for a in args))  # type: ignore[misc]
    return op


def _rewrite(inst: ir.Instruction, scope: _Scope) -> ir.Instruction:
    """A copy with interned register names (fast dict keys) and shadowed
    registers renamed apart; the copy keeps the original's location."""
    cache: dict[str, str] = {}

    def rename(name: str) -> str:
        key = cache.get(name)
        if key is None:
            key = cache[name] = _register_key(name, scope)
        return key

    guard = inst.guard
    if guard is not None:
        guard = ir.Guard(ir.Register(rename(guard.predicate.name), guard.predicate.selector), guard.negated)
    operands = tuple(_rewrite_operand(op, rename) for op in inst.operands)
    return ir.Instruction(inst.opcode, inst.modifiers, operands, guard, inst.loc)


def _decode_call(inst: ir.Instruction) -> Call:
    ops = list(inst.operands)
    returns: tuple[ir.Operand, ...] = ()
    if ops and isinstance(ops[0], ir.ParenOperand):
        returns = ops.pop(0).items  # type: ignore[union-attr]
    if not ops or not isinstance(ops[0], (ir.Symbol, ir.Register)):
        raise EmulationError("call without a callee", inst.loc)
    callee = ops.pop(0)
    args: tuple[ir.Operand, ...] = ()
    if ops and isinstance(ops[0], ir.ParenOperand):
        args = ops.pop(0).items  # type: ignore[union-attr]
    return Call(returns, callee, args)  # type: ignore[arg-type]


def _classify(inst: ir.Instruction, semantics: Semantics) -> int:
    opcode = inst.opcode
    if opcode == "bra":
        return BRA
    if opcode == "brx.idx":
        return BRX
    if opcode == "call":
        return CALL
    if opcode == "ret":
        return RET
    if opcode == "exit":
        return EXIT
    if opcode == "trap":
        return TRAP
    if opcode in ("bar", "barrier"):
        if ".red" in inst.modifiers:
            return BAR_RED
        if ".arrive" in inst.modifiers:
            return BAR_ARRIVE
        return BAR
    if opcode == "barrier.cluster":
        return BAR if ".wait" in inst.modifiers else NOP
    if opcode == "mapa":
        return MAPA
    if opcode == "getctarank":
        return CTARANK
    return EXEC if semantics.supports(inst) else UNSUPPORTED


def decode_function(program: SymbolTable, fn: ir.Function, semantics: Semantics) -> DecodedFunction:
    """The code and frame layout of a function with a body (see the module doc)."""
    cfg = build_cfg(fn)
    info = DecodedFunction(fn, cfg)
    insts, scopes = _scoped_instructions(fn)
    if len(insts) != len(cfg.instructions):
        raise EmulationError(f"internal: instruction count of {fn.name} differs from its CFG", fn.loc)
    decls = walk_decls(fn.body.body) if fn.body is not None else []
    _lay_out_params(info, decls)
    _lay_out_locals(info, program, decls)
    for i, (orig, scope) in enumerate(zip(insts, scopes, strict=True)):
        info.code.append(_decode_op(cfg, i, _rewrite(orig, scope), semantics))
    return info


def _lay_out_params(info: DecodedFunction, decls: list[ir.VarDecl]) -> None:
    """Parameters, return parameters, then the body's ``.param`` variables
    (call sites), all in one per-lane ``.param`` buffer."""
    fn = info.fn
    layout: dict[str, tuple[int, int]] = {}
    top = 0
    param_vars = [param_var(p) for p in [*fn.params, *(fn.returns or [])] if p.space == ".param"]
    for decl in decls:
        if normalize_space(decl.space) == ".param":
            param_vars.extend(var_of(decl, n) for n in _each_name(decl))
    for var in param_vars:
        if var.name in layout:  # the same call-site name in several blocks: one slot
            off, size = layout[var.name]
            if var.size <= size:
                continue
        top = round_up(top, max(var.align, 1))
        layout[var.name] = (top, var.size)
        top += var.size
    info.param_layout = layout
    info.param_size = round_up(max(top, 8), 8)
    for name, (off, _) in layout.items():
        info.symbols[name] = (".param", off, False)


def _each_name(decl: ir.VarDecl) -> list[ir.VarName]:
    """The variables a declaration names: GCC's ``.param.u64 %P<2>`` is ``%P0`` and ``%P1``."""
    out: list[ir.VarName] = []
    for n in decl.names:
        if n.count is None:
            out.append(n)
        else:
            out.extend(ir.VarName(f"{n.name}{i}", None, n.array, n.init) for i in range(n.count))
    return out


def _lay_out_locals(info: DecodedFunction, program: SymbolTable, decls: list[ir.VarDecl]) -> None:
    """The ``.local`` depot (relative to the frame's local base), the types of
    registers, and the addresses of the body's ``.shared``/``.global``/``.const``."""
    fn = info.fn
    local_top = 0
    for decl in decls:
        if normalize_space(decl.space) == ".local":
            for n in _each_name(decl):
                var = var_of(decl, n)
                if var.name in info.symbols:
                    continue
                local_top = round_up(local_top, var.align)
                info.symbols[var.name] = (".local", local_top, True)
                local_top += var.size
        elif decl.space == ".reg":
            for n in decl.names:
                info.reg_types[str(n.name)] = decl.type
        elif normalize_space(decl.space) in (".shared", ".global", ".const"):
            for n in decl.names:
                found = program.module_symbol(str(n.name), fn.name)
                if found is not None:
                    info.symbols[str(n.name)] = (found[0], found[1], False)
    info.local_size = round_up(local_top, 16)
    for p in [*fn.params, *(fn.returns or [])]:
        if p.space == ".reg":
            info.reg_types[p.name] = p.type


def _decode_op(cfg: CFG, index: int, inst: ir.Instruction, semantics: Semantics) -> Op:
    """Instruction ``index`` of the function (already renamed) as an `Op`:
    branch targets and reconvergence pcs are instruction indexes, the end of
    the code (``len(cfg.instructions)``) standing for the exit."""
    kind = _classify(inst, semantics)
    op = Op(kind, inst)
    if kind in (BRA, BRX):
        block = cfg.blocks[cfg.block_of(index)]
        op.targets = tuple(_start_of(cfg, t) for t in block.targets)
        op.target = op.targets[0] if op.targets else len(cfg.instructions)
        if kind == BRA and block.id in cfg.exit_branches:
            op.kind = BRA_RET
            op.exits = cfg.blocks[block.targets[0]].instructions[0].opcode == "exit"
        elif inst.guard is not None or kind == BRX:
            op.rpc = _reconvergence_pc(cfg, block.id)
    elif kind == CALL:
        op.call = _decode_call(inst)
    elif kind == MAPA:
        op.width = bits_of(isa.instruction_type(inst), 64)
    return op


def _start_of(cfg: CFG, block_id: int) -> int:
    return len(cfg.instructions) if block_id == cfg.exit else cfg.blocks[block_id].start


def _reconvergence_pc(cfg: CFG, block_id: int) -> int:
    """Where the lanes that diverge at the block's branch meet again (-1: only
    at the function's end); lanes that branch to a ``ret``/``exit`` retire
    there and then, so they are not waited for."""
    r = cfg.reconvergence_point(block_id, ignoring_exit_branches=True)
    return -1 if r == cfg.exit else cfg.blocks[r].start
