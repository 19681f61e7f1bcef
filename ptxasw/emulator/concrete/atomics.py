"""What each ``atom``/``red`` operation does to one memory word, on raw bits.

The interpreter performs atomics lane by lane, in increasing lane order, so
that every run (float atomics included) is deterministic; for that it needs
``new = f(old, b, c)`` as a Python function of bit patterns, which
`atomic_function` builds for an operation and type. Float additions round to
nearest; ``.f32`` flushes subnormal inputs and results, as ``atom.add.f32``
does.

NaN results follow what an H200 leaves in memory: the canonical NaN
(``0x7fffffff``, ``0x7fff``) after ``atom.add.f32``/``.f16``/``.bf16``, and
for ``atom.add.f64`` the NaN operand unchanged, signalling or not (NumPy would
quiet it). With two NaN operands the one in memory is kept (not measured).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from ptxasw.emulator.concrete.lanes import width_mask
from ptxasw.emulator.concrete.variables import f32_to_bf16


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _f32_bits(value: float) -> int:
    with np.errstate(all="ignore"):
        return int(np.float32(value).view(np.uint32))


def _ftz32(bits: int) -> int:
    return bits & 0x80000000 if (bits & 0x7F800000) == 0 else bits


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _f64_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _is_nan(bits: int, exponent: int, mantissa: int) -> bool:
    return (bits & exponent) == exponent and (bits & mantissa) != 0


def _add_f32(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        s = np.float32(_f32(_ftz32(a))) + np.float32(_f32(_ftz32(b)))
    bits = _ftz32(int(np.float32(s).view(np.uint32)))
    return 0x7FFFFFFF if _is_nan(bits, 0x7F800000, 0x007FFFFF) else bits


def _add_f64(a: int, b: int) -> int:
    for operand in (a, b):
        if _is_nan(operand, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF):
            return operand
    return _f64_bits(_f64(a) + _f64(b))


def _add_f16(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        x = np.array([a & 0xFFFF], dtype=np.uint16).view(np.float16)[0]
        y = np.array([b & 0xFFFF], dtype=np.uint16).view(np.float16)[0]
        bits = int(np.array([x + y], dtype=np.float16).view(np.uint16)[0])
    return 0x7FFF if _is_nan(bits, 0x7C00, 0x03FF) else bits


def _add_bf16(a: int, b: int) -> int:
    s = _f32((a & 0xFFFF) << 16) + _f32((b & 0xFFFF) << 16)
    bits = f32_to_bf16(_f32_bits(s))
    return 0x7FFF if _is_nan(bits, 0x7F80, 0x007F) else bits


def _lanes2(fn: Callable[[int, int], int]) -> Callable[[int, int], int]:
    return lambda a, b: fn(a & 0xFFFF, b & 0xFFFF) | fn(a >> 16, b >> 16) << 16


def atomic_function(op: str, ptx_type: str, nbytes: int) -> Callable[[int, int, int], int] | None:
    """``new = f(old, b, c)`` for an atom operation on raw bits, or None."""
    bits = nbytes * 8
    mask = width_mask(bits)
    sign = 1 << (bits - 1)

    def signed(v: int) -> int:
        return v - (1 << bits) if v & sign else v

    is_float = ptx_type.startswith((".f", ".bf"))
    if op == "add":
        if ptx_type == ".f32":
            return lambda o, b, c: _add_f32(o, b)
        if ptx_type == ".f64":
            return lambda o, b, c: _add_f64(o, b)
        if ptx_type == ".f16":
            return lambda o, b, c: _add_f16(o, b)
        if ptx_type == ".f16x2":
            f = _lanes2(_add_f16)
            return lambda o, b, c: f(o, b)
        if ptx_type == ".bf16":
            return lambda o, b, c: _add_bf16(o, b)
        if ptx_type == ".bf16x2":
            g = _lanes2(_add_bf16)
            return lambda o, b, c: g(o, b)
        if is_float:
            return None
        return lambda o, b, c: (o + b) & mask
    if is_float and op not in ("exch", "cas"):
        return None
    if op == "inc":
        return lambda o, b, c: 0 if o >= b else (o + 1) & mask
    if op == "dec":
        return lambda o, b, c: b if o == 0 or o > b else o - 1
    if op in ("min", "max"):
        pick = min if op == "min" else max
        if ptx_type.startswith(".s"):
            return lambda o, b, c: pick(signed(o), signed(b)) & mask
        return lambda o, b, c: pick(o, b)
    if op == "and":
        return lambda o, b, c: o & b
    if op == "or":
        return lambda o, b, c: o | b
    if op == "xor":
        return lambda o, b, c: o ^ b
    if op == "exch":
        return lambda o, b, c: b
    if op == "cas":
        return lambda o, b, c: c if o == b else o
    return None
