"""Declared variables as every stage lays them out: sizes, alignment and
the state space of each declared name.

The interpreter's module layout and frames, the symbolic executor's
variables and the LLVM lifter's globals all size and align declarations the
same way; this is that one way. Encoding values into bytes is the concrete
interpreter's (`ptxasw.emulator.concrete.encoding`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxasw import ir
from ptxasw.ir import isa


def normalize_space(space: str) -> str:
    """``.shared::cta`` -> ``.shared``, ``.param::entry`` -> ``.param``; a
    cluster of one CTA makes ``.shared::cluster`` the CTA's own shared memory."""
    head, _, _ = space.partition("::")
    return head


@dataclass(slots=True)
class Variable:
    """A declared variable: its space, type, size and initialiser."""

    name: str
    space: str
    type: str
    size: int
    align: int
    decl: ir.VarDecl
    init: ir.Initializer | None = None
    unsized: bool = False


_VECTOR_LENGTH = {".v2": 2, ".v4": 4, ".v8": 8}


def elem_bytes(ptx_type: str) -> int:
    """Bytes of one value of a PTX type (handles: 8; a type without a width: 4)."""
    bits = isa.type_bits(ptx_type)
    if not bits:
        return 8 if ptx_type in (".texref", ".samplerref", ".surfref") else 4
    return max(bits // 8, 1)


def _element_bytes(ptx_type: str, vector: str | None) -> int:
    """Bytes of one array element of a declaration (a ``.v4`` vector counts four values)."""
    return elem_bytes(ptx_type) * _VECTOR_LENGTH.get(vector or "", 1)


def var_of(decl: ir.VarDecl, name: ir.VarName) -> Variable:
    """One declared name of ``decl``; an unsized array (``[]``) takes its
    length from its initialiser (0 without one: ``extern .shared``)."""
    elem = _element_bytes(decl.type, decl.vector)
    count = 1
    unsized = False
    for dim in name.array:
        if dim is None:
            unsized = True
            dim = _init_length(name.init)
        count *= dim
    space = normalize_space(decl.space)
    return Variable(
        str(name.name), space, decl.type, elem * count, decl.align or elem, decl, name.init, unsized
    )


def _init_length(init: ir.Initializer | None) -> int:
    if isinstance(init, list):
        return sum(_init_length(i) if isinstance(i, list) else 1 for i in init)
    return 0


def param_var(spec: ir.ParamSpec) -> Variable:
    """A function parameter as a variable of its space."""
    elem = _element_bytes(spec.type, spec.vector)
    count = 1
    for dim in spec.array:
        count *= dim or 0
    decl = ir.VarDecl(spec.space, spec.type, [ir.VarName(spec.name)])
    return Variable(spec.name, spec.space, spec.type, elem * count, spec.align or elem, decl)


def round_up(value: int, align: int) -> int:
    """``value`` rounded up to a multiple of ``align``."""
    return -(-value // align) * align


def walk_decls(body: list[ir.Statement]) -> list[ir.VarDecl]:
    """Every declaration of a body, nested ``{ }`` blocks included, in text order."""
    return list(ir.iter_declarations(body))


def bits_of(ptx_type: str | None, default: int = 32) -> int:
    """Bits of a value of a PTX type (``default`` for none or an unknown one)."""
    bits = isa.type_bits(ptx_type) if ptx_type else None
    return bits if bits else default
