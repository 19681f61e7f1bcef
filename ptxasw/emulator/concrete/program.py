"""A module prepared for execution: where every variable and function lives.

`Program` is what the interpreter needs of a module before any thread runs:
the addresses of ``.shared``, ``.const``, module-scope ``.local`` and
``.global`` variables (the latter fixed by allocating them in declaration
order in every launch's fresh global memory), function-pointer values, the
constant bank with its initialisers evaluated, and a cache of each function's
decoded code (`ptxasw.emulator.concrete.decode`). Built once per module and shared by
every launch of it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.decode import DecodedFunction, decode_function
from ptxasw.emulator.concrete.encoding import encode_scalar
from ptxasw.emulator.concrete.memory import (
    FUNC_WINDOW,
    GENERIC_BASE,
    FlatMemory,
    GlobalMemory,
)
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.errors import PtxError
from ptxasw.ir.layout import Variable, elem_bytes, normalize_space, round_up, var_of, walk_decls

LOCAL_MODULE_BASE = 0  # module-scope .local variables sit at the bottom of each stack


class Program:
    """A parsed module prepared for execution: variable layouts, function
    addresses and (lazily) every function's decoded instructions.

    Built once per module by `launch` (and reused for later launches of the
    same module object); build one yourself to launch several kernels.
    """

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.path = module.path
        self.functions: dict[str, ir.Function] = {}
        for fn in module.functions:
            if fn.name not in self.functions or fn.body is not None:
                self.functions[fn.name] = fn
        self.func_names = list(self.functions)
        self.func_index = {name: i for i, name in enumerate(self.func_names)}
        self.module_vars: dict[str, Variable] = {}
        self.body_vars: dict[tuple[str, str], Variable] = {}
        for item in module.items:
            if isinstance(item, ir.VarDecl):
                for name in item.names:
                    var = var_of(item, name)
                    self.module_vars[var.name] = var
        for fn in self.functions.values():
            if fn.body is None:
                continue
            for decl in walk_decls(fn.body.body):
                if normalize_space(decl.space) in (".shared", ".global", ".const"):
                    for name in decl.names:
                        self.body_vars[(fn.name, str(name.name))] = var_of(decl, name)
        self._layout()
        self._decoded: dict[str, DecodedFunction] = {}

    # ---- layout ------------------------------------------------------------

    def _layout(self) -> None:
        """Shared, const, module-local and global addresses of every variable."""
        self.shared_offset: dict[object, int] = {}
        self.const_offset: dict[object, int] = {}
        self.global_order: list[tuple[object, Variable]] = []
        self.module_local_offset: dict[str, int] = {}
        shared_top = const_top = local_top = 0
        extern_shared: list[object] = []
        extern_align = 16
        everything: list[tuple[object, Variable]] = list(self.module_vars.items())
        everything += list(self.body_vars.items())
        for key, var in everything:
            if var.space == ".shared":
                if var.unsized or (".extern" in var.decl.linkage and var.size == 0):
                    extern_shared.append(key)
                    extern_align = max(extern_align, var.align)
                    continue
                shared_top = round_up(shared_top, var.align)
                self.shared_offset[key] = shared_top
                shared_top += var.size
            elif var.space == ".const":
                const_top = round_up(const_top, var.align)
                self.const_offset[key] = const_top
                const_top += var.size
            elif var.space == ".global":
                self.global_order.append((key, var))
            elif var.space == ".local" and isinstance(key, str):
                local_top = round_up(local_top, var.align)
                self.module_local_offset[key] = local_top
                local_top += var.size
        self.static_shared = shared_top
        self.dynamic_shared_base = round_up(shared_top, extern_align)
        for key in extern_shared:
            self.shared_offset[key] = self.dynamic_shared_base
        self.const_size = const_top
        self.module_local_size = round_up(local_top, 16)
        # Global variables: addresses are fixed by allocating them first, in
        # declaration order, in every launch's fresh global memory.
        probe = GlobalMemory()
        self.global_address: dict[object, int] = {}
        for key, var in self.global_order:
            self.global_address[key] = probe.allocate(max(var.size, 1), global_name(key), var.align)
        self.const_image = FlatMemory(const_top, ".const")
        for key, var in everything:
            if var.space == ".const" and var.init is not None:
                data = self.initial_bytes(var)
                off = self.const_offset[key]
                self.const_image.data[off : off + len(data)] = np.frombuffer(data, dtype=np.uint8)

    def module_symbol(self, name: str, fn_name: str | None = None) -> tuple[str, int] | None:
        """``(space, address in that space)`` of a variable or function by name
        (a function's own ``.shared``/``.global``/``.const`` first)."""
        if fn_name is not None and (fn_name, name) in self.body_vars:
            return self._var_address((fn_name, name), self.body_vars[(fn_name, name)])
        var = self.module_vars.get(name)
        if var is not None:
            return self._var_address(name, var)
        index = self.func_index.get(name)
        if index is not None:
            return ".func", FUNC_WINDOW + 16 * index
        return None

    def _var_address(self, key: object, var: Variable) -> tuple[str, int]:
        if var.space == ".shared":
            return ".shared", self.shared_offset[key]
        if var.space == ".const":
            return ".const", self.const_offset[key]
        if var.space == ".global":
            return ".global", self.global_address[key]
        if var.space == ".local" and isinstance(key, str):
            return ".local", LOCAL_MODULE_BASE + self.module_local_offset[key]
        return var.space, 0

    def generic_address(self, space: str, address: int) -> int:
        """The generic address of a module-level object (initialisers' ``generic()``)."""
        return address + GENERIC_BASE.get(space, 0)

    def function_at(self, address: int) -> str | None:
        """The function a function-pointer value points to."""
        off = address - FUNC_WINDOW
        if off < 0 or off % 16:
            return None
        index = off // 16
        return self.func_names[index] if index < len(self.func_names) else None

    # ---- initialisers ----------------------------------------------------------

    def eval_expr(self, expr: ir.Expr, loc: ir.SourceLoc | None = None) -> int | float:
        """Value of a constant expression of an initialiser (symbols are addresses)."""
        match expr:
            case ir.IntImm(value=v):
                return v
            case ir.FloatImm():
                return _float_imm(expr)
            case ir.Symbol(name=name):
                found = self.module_symbol(name)
                if found is None:
                    raise PtxError(f"unknown symbol {name} in an initialiser", loc)
                return found[1]
            case ir.CallExpr(func=func, args=args) if func in ("generic", "mask") and args:
                inner = args[0]
                if func == "generic" and isinstance(inner, ir.Symbol):
                    found = self.module_symbol(inner.name)
                    if found is None:
                        raise PtxError(f"unknown symbol {inner.name} in an initialiser", loc)
                    return self.generic_address(*found)
                return self.eval_expr(inner, loc)
            case ir.ParenExpr(inner=inner):
                return self.eval_expr(inner, loc)
            case ir.UnaryExpr(op=op, operand=inner):
                v = self.eval_expr(inner, loc)
                if op == "-":
                    return -v
                if op == "~":
                    return ~int(v)
                return int(not v)
            case ir.BinaryExpr(op=op, lhs=lhs, rhs=rhs):
                return _binop(op, self.eval_expr(lhs, loc), self.eval_expr(rhs, loc))
        raise PtxError(f"unsupported initialiser expression {expr!r}", loc)

    def initial_bytes(self, var: Variable) -> bytes:
        """The initial contents of a variable (zeros where not initialised)."""
        out = bytearray(var.size)
        if var.init is None:
            return bytes(out)
        values = _flatten_init(var.init)
        elem = elem_bytes(var.type)
        for i, value in enumerate(values):
            if (i + 1) * elem > var.size:
                break
            if isinstance(value, ir.SamplerField):
                continue
            v = self.eval_expr(value, var.decl.loc)
            out[i * elem : (i + 1) * elem] = encode_scalar(v, var.type, value)
        return bytes(out)

    # ---- functions ---------------------------------------------------------------

    def decoded(self, name: str, semantics: Semantics) -> DecodedFunction:
        """The decoded form of a function with a body (cached)."""
        info = self._decoded.get(name)
        if info is None:
            fn = self.functions[name]
            info = self._decoded[name] = decode_function(self, fn, semantics)
        return info


def global_name(key: object) -> str:
    return key if isinstance(key, str) else "::".join(key)  # type: ignore[arg-type]


def _flatten_init(init: ir.Initializer) -> list[ir.Initializer]:
    if isinstance(init, list):
        out: list[ir.Initializer] = []
        for item in init:
            out.extend(_flatten_init(item))
        return out
    return [init]


def _float_imm(imm: ir.FloatImm) -> float:
    if imm.kind == "f":
        return struct.unpack("<f", struct.pack("<I", int(imm.text[2:], 16)))[0]
    if imm.kind == "d":
        return struct.unpack("<d", struct.pack("<Q", int(imm.text[2:], 16)))[0]
    return float(imm.text)


def _binop(op: str, a: int | float, b: int | float) -> int | float:
    ops: dict[str, Callable[[int | float, int | float], int | float]] = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "/": lambda x, y: x / y if isinstance(x, float) or isinstance(y, float) else int(x / y),
        "%": lambda x, y: int(x) % int(y),
        "<<": lambda x, y: int(x) << int(y),
        ">>": lambda x, y: int(x) >> int(y),
        "&": lambda x, y: int(x) & int(y),
        "|": lambda x, y: int(x) | int(y),
        "^": lambda x, y: int(x) ^ int(y),
        "&&": lambda x, y: int(bool(x and y)),
        "||": lambda x, y: int(bool(x or y)),
        "==": lambda x, y: int(x == y),
        "!=": lambda x, y: int(x != y),
        "<": lambda x, y: int(x < y),
        ">": lambda x, y: int(x > y),
        "<=": lambda x, y: int(x <= y),
        ">=": lambda x, y: int(x >= y),
    }
    return ops[op](a, b)
