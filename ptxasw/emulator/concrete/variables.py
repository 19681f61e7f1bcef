"""Declared variables and the bytes of PTX values, as the interpreter lays them out.

The module-level layout (`ptxasw.emulator.concrete.program`) and the frame of every
decoded function (`ptxasw.emulator.concrete.decode`) size and align declarations the
same way, and variable initialisers and kernel arguments are encoded the same
way; this is that one way.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.lanes import width_mask
from ptxasw.emulator.concrete.memory import normalize_space
from ptxasw.ir import isa


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


def encode_scalar(value: int | float | object, ptx_type: str, literal: object = None) -> bytes:
    """Bytes of one value of a PTX type (little-endian); floats round to nearest.

    A ``0f``/``0d`` literal is a bit pattern: it is stored as such in a
    variable of its own width (``.f32``, but also ``.b32``/``.u32``) and
    converted by value only into a float type of another width.
    """
    bits = bits_of(ptx_type)
    nbytes = max(bits // 8, 1)
    mask = width_mask(nbytes * 8)
    is_float = ptx_type.startswith((".f", ".bf")) and ptx_type not in (".f16x2", ".bf16x2")
    if isinstance(literal, ir.FloatImm) and literal.kind in ("f", "d"):
        literal_bits = 32 if literal.kind == "f" else 64
        if not is_float or bits == literal_bits:
            return (int(literal.text[2:], 16) & mask).to_bytes(nbytes, "little")
    if is_float:
        f = float(value)  # type: ignore[arg-type]
        with np.errstate(all="ignore"):
            if bits == 64:
                return struct.pack("<d", f)
            if bits == 32:
                return np.float32(f).tobytes()
            if ptx_type == ".f16":
                return np.float16(f).tobytes()
            if ptx_type == ".bf16":
                return (f32_to_bf16(int(np.float32(f).view(np.uint32)))).to_bytes(2, "little")
    return (int(value) & mask).to_bytes(nbytes, "little")  # type: ignore[call-overload]


def f32_to_bf16(bits: int) -> int:
    """An f32 bit pattern rounded to bf16 (to nearest even; a NaN keeps its payload, quieted)."""
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
