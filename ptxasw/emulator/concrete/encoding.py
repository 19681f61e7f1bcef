"""The bytes of PTX values, as the interpreter stores them: variable
initialisers and kernel arguments are encoded this one way."""

from __future__ import annotations

import struct

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.lanes import width_mask
from ptxasw.ir.layout import bits_of


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
