"""The concrete value domain: every lane's bit pattern in one NumPy array.

A value is a `Bits`: a ``uint64`` array with one element per lane (thread of
a warp), each masked to the value's width (1..64 bits). Integer operations
are exact modular arithmetic on those arrays; floating-point operations
reinterpret the bit patterns and compute the result that an NVIDIA GPU
computes (see the accuracy notes below), so that the CPU reference
interpreter agrees with the hardware bit for bit.

How floating point is made exact
--------------------------------
NumPy only rounds to nearest, and only in float16/32/64. Everything else is
built from two facts:

* *Round to odd.* If a result is first rounded to 53 bits "to odd" (an
  inexact result gets its last bit forced to 1) and then rounded to a format
  of at most 51 bits, the second rounding gives the correctly rounded result
  in *any* rounding mode. So every ``.f32``/``.f16``/``.bf16`` operation is
  computed as an exact float64 sum or product plus its error term
  (error-free transformations: Knuth's TwoSum, Dekker's TwoProduct), rounded
  to odd, and then rounded once, with the requested mode, by `_encode`, an
  integer implementation of IEEE rounding that also knows the 8-, 6- and
  4-bit formats, ``.tf32``, subnormals, saturation and overflow rules.
* ``.f64`` has no wider format, so round-to-nearest uses NumPy directly
  (``fma`` uses Boldo and Melquiond's round-to-odd emulation) and the
  directed roundings, and the rare lanes whose operands would overflow or
  underflow the error-free transformations, are computed per lane with
  `fractions.Fraction` and rounded exactly (`_round_rational`).

Accuracy: ``.rn/.rz/.rm/.rp`` arithmetic, conversions, ``min``/``max`` and
comparisons are exact (identical to IEEE 754 and to the GPU). The ``.approx``
functions (``rcp sqrt rsqrt sin cos lg2 ex2 tanh`` and ``div.approx``/
``div.full``) are evaluated in float64 and rounded to nearest: within one
ulp of the true value, which is inside every bound the PTX ISA states, but
not the GPU's own approximation bit for bit. Single-precision NaN results
are the canonical NaN ``0x7fffffff`` (``0x7fff`` for half types); double
precision propagates NaN payloads as the hardware does.

Where the ISA leaves a result open, the domain returns what an H200 returns
(``benchmarks/gpu_semantics.py``, 456 instruction forms, all bit-identical):
``x % 0`` is all ones; a NaN converted to an integer is 0, except from
``.f64`` or into a 64-bit integer, where it is ``1 << (width-1)``; ``.ftz``
flushes a result that is tiny *after rounding with an unbounded exponent*
(it may flush a value that rounds up to the smallest normal); ``.ftz`` also
applies to ``.bf16`` (``ex2.approx.ftz.bf16``); ``rcp``/``rsqrt.approx.ftz.f64``
work on the upper word, as the ISA describes; ``cvt.rna.tf32.f32`` rounds a
NaN's payload like a number.

Widths above 64 bits (``.b128``) raise `NotImplementedError`, which the
semantics turn into an "unknown" value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.emulator.semantics.floats import (
    _F32,
    _F64,
    FORMATS,
    FloatFormat,
    _bit_length,
    _encode,
    _round_rational,
    _round_sqrt,
    decode,
    encode_f64,
)

__all__ = ["FORMATS", "Bits", "ConcreteDomain", "FloatFormat"]

_U64 = np.uint64
_ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF


def _mask(width: int) -> np.uint64:
    return np.uint64((1 << width) - 1)


@dataclass(frozen=True, slots=True, eq=False)
class Bits:
    """One register's value in every lane: ``data[i]`` is lane i's bit pattern.

    ``eq=False`` because array equality is element-wise; compare with
    `ConcreteDomain.to_ints` or ``np.array_equal(a.data, b.data)``.
    """

    data: np.ndarray
    width: int

    def __repr__(self) -> str:
        shown = ", ".join(hex(int(v)) for v in self.data[:8])
        more = ", ..." if len(self.data) > 8 else ""
        return f"Bits<{self.width}>[{shown}{more}]"


# Packed pairs: element type, and how many register bits one element takes
# (the 6-bit formats take a byte each).
_PAIRS: dict[str, tuple[str, int]] = {
    ".f16x2": (".f16", 16),
    ".bf16x2": (".bf16", 16),
    ".f32x2": (".f32", 32),
    ".e4m3x2": (".e4m3", 8),
    ".e5m2x2": (".e5m2", 8),
    ".e2m3x2": (".e2m3", 8),
    ".e3m2x2": (".e3m2", 8),
    ".e2m1x2": (".e2m1", 4),
}
_INT_BITS = {f".{k}{w}": w for k in "usb" for w in (8, 16, 32, 64)}
_ROUNDING = {".rn": "rn", ".rz": "rz", ".rm": "rm", ".rp": "rp", ".rna": "rna", None: "rn"}
# Formats whose subnormals `.ftz` flushes (f64 only in rcp/rsqrt.approx.ftz.f64).
_FTZ_NAMES = frozenset({".f32", ".f16", ".bf16"})
_INTEGRAL = {".rni": np.rint, ".rzi": np.trunc, ".rmi": np.floor, ".rpi": np.ceil}


def _is_int_type(t: str | None) -> bool:
    return t in _INT_BITS


# --------------------------------------------------------------------------
# Error-free transformations on float64 arrays


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error a + b - s (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = 134217729.0 * a  # 2**27 + 1 (Veltkamp)
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = fl(a * b) and the exact error (Dekker; needs no over/underflow)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _to_odd(s: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Round to odd: ``s`` is RN of a value lying ``direction`` (sign) of it."""
    even = (s.view(_U64) & _U64(1)) == 0
    fix = np.isfinite(s) & (direction != 0) & ~np.isnan(direction) & even
    toward = np.where(direction > 0, np.inf, -np.inf)
    return np.where(fix, np.nextafter(s, toward), s)


def _zero_sum_sign(s: np.ndarray, x: np.ndarray, y: np.ndarray, mode: str) -> np.ndarray:
    """IEEE sign of an exact zero sum x + y: -0 under .rm unless both are +0."""
    if mode != "rm":
        return s
    both_pos = (x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y)
    return np.where((s == 0) & ~both_pos, -0.0, s)


# --------------------------------------------------------------------------
# The domain


class ConcreteDomain:
    """`Domain[Bits]` over NumPy arrays, one element per lane."""

    name = "concrete"

    def __init__(self, lanes: int = 32) -> None:
        self.lanes = lanes

    # ---- making values ------------------------------------------------------
    def _make(self, data: np.ndarray, width: int) -> Bits:
        if not 1 <= width <= 64:
            raise NotImplementedError(f"the concrete domain holds 1..64-bit values, not {width}")
        return Bits(np.asarray(data, dtype=_U64) & _mask(width), width)

    def const(self, value: int, width: int) -> Bits:
        if not 1 <= width <= 64:
            raise NotImplementedError(f"the concrete domain holds 1..64-bit values, not {width}")
        return Bits(np.full(self.lanes, value & ((1 << width) - 1), dtype=_U64), width)

    def fresh(self, hint: str, width: int) -> Bits:
        """Nothing is known: the concrete domain says zero in every lane."""
        return self.const(0, width)

    def width(self, a: Bits) -> int:
        return a.width

    def from_ints(self, values: Sequence[int], width: int) -> Bits:
        """A value from Python integers (any length; negative values wrap)."""
        m = (1 << width) - 1
        return self._make(np.array([v & m for v in values], dtype=_U64), width)

    def to_ints(self, a: Bits) -> list[int]:
        return [int(v) for v in a.data]

    def to_signed(self, a: Bits) -> np.ndarray:
        """The lanes read as two's-complement integers (int64)."""
        if a.width == 64:
            return a.data.view(np.int64).copy()
        x = a.data.astype(np.int64)
        s = np.int64(1 << (a.width - 1))
        return (x ^ s) - s

    def from_floats(self, values: Sequence[float], type: str) -> Bits:
        """Bit patterns of Python floats rounded to nearest in a float type."""
        fmt = FORMATS[type]
        return self._make(encode_f64(np.array(values, dtype=np.float64), fmt), fmt.storage_bits)

    def to_floats(self, a: Bits, type: str) -> np.ndarray:
        """The lanes read as a float type (float64 values)."""
        return decode(a.data, FORMATS[type])

    # ---- integer arithmetic -------------------------------------------------
    def add(self, a: Bits, b: Bits) -> Bits:
        return self._make(a.data + b.data, a.width)

    def sub(self, a: Bits, b: Bits) -> Bits:
        return self._make(a.data - b.data, a.width)

    def mul(self, a: Bits, b: Bits) -> Bits:
        return self._make(a.data * b.data, a.width)

    def neg(self, a: Bits) -> Bits:
        return self._make(_U64(0) - a.data, a.width)

    def udiv(self, a: Bits, b: Bits) -> Bits:
        zero = b.data == 0
        q = a.data // np.where(zero, _U64(1), b.data)
        return self._make(np.where(zero, _mask(a.width), q), a.width)

    def urem(self, a: Bits, b: Bits) -> Bits:
        """x % 0 is all ones: what the GPU returns (measured on an H200)."""
        zero = b.data == 0
        r = a.data % np.where(zero, _U64(1), b.data)
        return self._make(np.where(zero, _mask(a.width), r), a.width)

    def _magnitude(self, a: Bits) -> tuple[np.ndarray, np.ndarray]:
        negative = (a.data >> _U64(a.width - 1)) & _U64(1) != 0
        mag = np.where(negative, (_U64(0) - a.data) & _mask(a.width), a.data)
        return negative, mag

    def sdiv(self, a: Bits, b: Bits) -> Bits:
        na, ma = self._magnitude(a)
        nb, mb = self._magnitude(b)
        zero = b.data == 0
        q = ma // np.where(zero, _U64(1), mb)
        q = np.where(na ^ nb, _U64(0) - q, q)
        return self._make(np.where(zero, _mask(a.width), q), a.width)

    def srem(self, a: Bits, b: Bits) -> Bits:
        na, ma = self._magnitude(a)
        _, mb = self._magnitude(b)
        zero = b.data == 0
        r = ma % np.where(zero, _U64(1), mb)
        r = np.where(na, _U64(0) - r, r)
        return self._make(np.where(zero, _mask(a.width), r), a.width)

    # ---- bitwise --------------------------------------------------------------
    def and_(self, a: Bits, b: Bits) -> Bits:
        return Bits(a.data & b.data, a.width)

    def or_(self, a: Bits, b: Bits) -> Bits:
        return Bits(a.data | b.data, a.width)

    def xor(self, a: Bits, b: Bits) -> Bits:
        return Bits(a.data ^ b.data, a.width)

    def not_(self, a: Bits) -> Bits:
        return self._make(~a.data, a.width)

    def shl(self, a: Bits, b: Bits) -> Bits:
        amount = np.minimum(b.data, _U64(63))
        out = np.where(b.data >= _U64(a.width), _U64(0), a.data << amount)
        return self._make(out, a.width)

    def lshr(self, a: Bits, b: Bits) -> Bits:
        amount = np.minimum(b.data, _U64(63))
        out = np.where(b.data >= _U64(a.width), _U64(0), a.data >> amount)
        return self._make(out, a.width)

    def ashr(self, a: Bits, b: Bits) -> Bits:
        amount = np.minimum(b.data, _U64(63)).astype(np.int64)
        return self._make((self.to_signed(a) >> amount).view(_U64), a.width)

    # ---- comparisons and selection ----------------------------------------------
    def eq(self, a: Bits, b: Bits) -> Bits:
        return Bits((a.data == b.data).astype(_U64), 1)

    def ult(self, a: Bits, b: Bits) -> Bits:
        return Bits((a.data < b.data).astype(_U64), 1)

    def slt(self, a: Bits, b: Bits) -> Bits:
        return Bits((self.to_signed(a) < self.to_signed(b)).astype(_U64), 1)

    def ite(self, cond: Bits, a: Bits, b: Bits) -> Bits:
        return Bits(np.where(cond.data != 0, a.data, b.data), a.width)

    # ---- width changes -------------------------------------------------------------
    def zext(self, a: Bits, width: int) -> Bits:
        return self._make(a.data, width)

    def sext(self, a: Bits, width: int) -> Bits:
        return self._make(self.to_signed(a).view(_U64), width)

    def extract(self, a: Bits, hi: int, lo: int) -> Bits:
        return self._make(a.data >> _U64(lo), hi - lo + 1)

    def concat(self, hi: Bits, lo: Bits) -> Bits:
        width = hi.width + lo.width
        if width > 64:
            raise NotImplementedError(f"the concrete domain holds 1..64-bit values, not {width}")
        return self._make((hi.data << _U64(lo.width)) | lo.data, width)

    # ---- bit counting ----------------------------------------------------------------
    def popc(self, a: Bits) -> Bits:
        return Bits(np.bitwise_count(a.data).astype(_U64), a.width)

    def clz(self, a: Bits) -> Bits:
        return Bits((a.width - _bit_length(a.data)).astype(_U64), a.width)

    def brev(self, a: Bits) -> Bits:
        rev = _BYTE_REVERSE[a.data.astype(_U64).view(np.uint8).reshape(-1, 8)[:, ::-1]]
        full = np.ascontiguousarray(rev).view(_U64).reshape(-1)
        return self._make(full >> _U64(64 - a.width), a.width)

    # ---- floating point ------------------------------------------------------------------
    def fp(self, op: FpOp, *args: Bits) -> Bits:
        fast = _FAST_FP.get(op)
        if fast is not None:  # round-to-nearest add/sub/mul of .f32/.f64: see `_fast_fp`
            with np.errstate(all="ignore"):
                return Bits(fast.run(args[0].data, args[1].data), fast.width)
        return self.fp_general(op, *args)

    def fp_general(self, op: FpOp, *args: Bits) -> Bits:
        """`fp` without its fast path (every operation; the reference the fast path is tested against)."""
        with np.errstate(all="ignore"):
            if op.op == "cvt":
                return self._cvt(op, args)
            pair = _PAIRS.get(op.type)
            if pair is not None:
                elem, w = pair
                sub = replace(op, type=elem)
                lo = self.fp(sub, *(self.extract(a, w - 1, 0) for a in args))
                hi = self.fp(sub, *(self.extract(a, 2 * w - 1, w) for a in args))
                return self.concat(hi, lo)
            fmt = FORMATS.get(op.type)
            handler = _FP_OPS.get(op.op)
            if fmt is None or handler is None:
                raise NotImplementedError(f"floating-point {op.op} on {op.type}")
            xs = [self._input(a.data, fmt, op.ftz) for a in args]
            bits = handler(op, fmt, xs)
            return self._make(_post(bits, fmt, op), fmt.storage_bits)

    def fp_compare(self, cmp: str, type: str, a: Bits, b: Bits) -> Bits:
        fmt = FORMATS.get(type)
        if fmt is None:
            raise NotImplementedError(f"float compare on {type}")
        x, y = decode(a.data, fmt), decode(b.data, fmt)
        unordered = np.isnan(x) | np.isnan(y)
        base = cmp.rstrip("u") if cmp not in ("num", "nan") else cmp
        with np.errstate(all="ignore"):
            table = {
                "eq": x == y,
                "ne": x != y,
                "lt": x < y,
                "le": x <= y,
                "gt": x > y,
                "ge": x >= y,
                "num": ~unordered,
                "nan": unordered,
            }
        if base not in table:
            raise NotImplementedError(f"float compare {cmp}")
        result = table[base]
        if cmp in ("num", "nan"):
            pass
        elif cmp.endswith("u"):
            result = result | unordered
        else:
            result = result & ~unordered
        return Bits(result.astype(_U64), 1)

    # ---- the other lanes of the warp -------------------------------------------------------
    # Lanes 32k..32k+31 of a value form warp k (the interpreter holds one warp,
    # the GPU oracle many); a value of fewer than 32 lanes is one partial warp.
    # Each lane may name its own lane mask: lane i's result is computed over
    # the lanes its own ``part`` names.

    def lane_index(self) -> Bits:
        return Bits(np.arange(self.lanes, dtype=_U64) & _U64(31), 32)

    def lane_read(self, value: Bits, src: Bits) -> Bits:
        """A gather within each warp; a source lane past a partial warp's end
        reads the lane's own value."""
        n = value.data.size
        index = np.arange(n, dtype=np.int64)
        pos = index - (index & 31) + (src.data & _U64(31)).astype(np.int64)
        pos = np.where(pos < n, pos, index)
        return Bits(value.data[pos], value.width)

    def lane_ballot(self, pred: Bits, part: Bits) -> Bits:
        packed = _pack_rows(_warp_rows(pred.data) != 0)
        return Bits(packed[np.arange(pred.data.size) >> 5] & part.data & _mask(32), 32)

    def lane_match(self, value: Bits, part: Bits) -> Bits:
        rows = _warp_rows(value.data)[np.arange(value.data.size) >> 5]
        packed = _pack_rows(rows == value.data[:, None])
        return Bits(packed & part.data & _mask(32), 32)

    def lane_reduce(self, op: str, value: Bits, part: Bits) -> Bits:
        n, width = value.data.size, value.width
        rows = _warp_rows(value.data)[np.arange(n) >> 5]
        member = ((part.data[:, None] >> np.arange(32, dtype=_U64)) & _U64(1)).astype(bool)
        ones = _mask(width)
        if op in ("smin", "smax"):
            signed = self.to_signed(Bits(rows.reshape(-1), width)).reshape(rows.shape)
            pick = np.min if op == "smin" else np.max
            fill = np.iinfo(np.int64).max if op == "smin" else np.iinfo(np.int64).min
            result = pick(np.where(member, signed, fill), axis=1).view(_U64)
        elif op == "add":
            result = np.where(member, rows, _U64(0)).sum(axis=1, dtype=_U64)
        elif op in _LANE_FOLDS:
            ufunc, identity = _LANE_FOLDS[op]
            fill = ones if identity else _U64(0)
            result = ufunc.reduce(np.where(member, rows, fill), axis=1)
        else:
            raise NotImplementedError(f"lane reduction {op}")
        return self._make(np.where(member.any(axis=1), result, _U64(0)), width)

    # ---- floating-point helpers -----------------------------------------------------------
    @staticmethod
    def _input(data: np.ndarray, fmt: FloatFormat, ftz: bool) -> np.ndarray:
        x = decode(data, fmt)
        if ftz and fmt.name in _FTZ_NAMES:
            x = _flush(x, fmt)
        return x

    def _cvt(self, op: FpOp, args: Sequence[Bits]) -> Bits:
        """Conversions with at least one float side (see `_cvt_scalar`)."""
        dst, src = op.type, op.src
        dpair, spair = _PAIRS.get(dst), _PAIRS.get(src or "")
        if dpair is not None and spair is None and len(args) == 2:
            elem, w = dpair  # two scalars packed: a goes high, b low
            hi = self._cvt_scalar(replace(op, type=elem), args[0])
            lo = self._cvt_scalar(replace(op, type=elem), args[1])
            return self._make((hi << _U64(w)) | lo, 2 * w)
        if dpair is not None and spair is not None:
            delem, dw = dpair
            selem, sw = spair
            parts = []
            for k in (1, 0):
                piece = self._make(args[0].data >> _U64(k * sw), sw)
                parts.append(self._cvt_scalar(replace(op, type=delem, src=selem), piece))
            return self._make((parts[0] << _U64(dw)) | parts[1], 2 * dw)
        if dpair is not None or spair is not None or len(args) != 1:
            raise NotImplementedError(f"cvt{dst}{src} with {len(args)} operands")
        bits = self._cvt_scalar(op, args[0])
        width = _INT_BITS.get(dst) or FORMATS[dst].storage_bits
        return self._make(bits, width)

    def _cvt_scalar(self, op: FpOp, a: Bits) -> np.ndarray:
        dst, src = op.type, op.src or op.type
        if _is_int_type(src):
            if _is_int_type(dst):
                raise NotImplementedError("integer-to-integer cvt belongs to the integer semantics")
            fmt = FORMATS[dst]
            signed = src.startswith(".s")
            x = self._make(a.data, _INT_BITS[src])
            if signed:
                neg, mag = self._magnitude(x)
            else:
                neg, mag = np.zeros(x.data.shape, dtype=bool), x.data
            mode = _ROUNDING.get(op.rounding, "rn")
            bits = _encode(neg, mag, np.zeros(mag.shape, np.int64), fmt, mode, op.satfinite)
            return _post(bits, fmt, op)
        sfmt = FORMATS[src]
        x = decode(a.data, sfmt)
        if op.ftz and sfmt.name in _FTZ_NAMES:
            x = _flush(x, sfmt)
        if _is_int_type(dst):
            nan_is_min = sfmt is _F64 or _INT_BITS[dst] == 64
            return _float_to_int(x, dst, op.rounding, nan_is_min)
        dfmt = FORMATS[dst]
        rounding = op.rounding
        if rounding in _INTEGRAL:
            x = _INTEGRAL[rounding](x)
            rounding = None
        mode = _ROUNDING.get(rounding, "rn")
        if op.ftz and dfmt.name in _FTZ_NAMES:
            x = _flush_tiny(x, dfmt, mode)
        bits = encode_f64(x, dfmt, mode, op.satfinite)
        if dfmt.name == ".tf32" and sfmt is _F32:
            # The GPU rounds NaN patterns like numbers (a payload can carry into inf).
            nan_bits = (a.data + _U64(0x1000)) & _U64(0xFFFF_E000)
            bits = np.where(np.isnan(x), nan_bits, bits)
        return _post(bits, dfmt, op)


_BYTE_REVERSE = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


# ufunc and whether its identity is all ones, for `ConcreteDomain.lane_reduce`.
_LANE_FOLDS: dict[str, tuple[np.ufunc, bool]] = {
    "and": (np.bitwise_and, True),
    "or": (np.bitwise_or, False),
    "xor": (np.bitwise_xor, False),
    "umin": (np.minimum, True),
    "umax": (np.maximum, False),
}


def _warp_rows(data: np.ndarray) -> np.ndarray:
    """The lanes as a (warps, 32) array; a partial last warp is padded with zeros."""
    n = data.size
    padded = np.zeros(-(-n // 32) * 32, dtype=data.dtype)
    padded[:n] = data
    return padded.reshape(-1, 32)


def _pack_rows(bits: np.ndarray) -> np.ndarray:
    """Each row of 32 booleans as a bit mask (bit l = column l)."""
    return (bits.astype(_U64) << np.arange(32, dtype=_U64)).sum(axis=1, dtype=_U64)


def _flush(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Flush subnormals of ``fmt`` to sign-preserving zero."""
    tiny = math.ldexp(1.0, 1 - fmt.bias)
    return np.where((np.abs(x) < tiny) & (x != 0), np.copysign(0.0, x), x)


def _post(bits: np.ndarray, fmt: FloatFormat, op: FpOp) -> np.ndarray:
    """Apply ``.ftz`` to results, then ``.relu`` and ``.sat``."""
    if not (op.ftz or op.relu or op.sat):
        return bits
    x = decode(bits, fmt)
    if op.ftz and fmt.name in _FTZ_NAMES:
        sign = bits & _U64(1 << (fmt.sign_pos + fmt.shift))
        x_is_sub = (x != 0) & (np.abs(x) < math.ldexp(1.0, 1 - fmt.bias))
        bits = np.where(x_is_sub, sign, bits)
        x = decode(bits, fmt)
    nan = _U64((fmt.nan or 0) << fmt.shift)
    if op.relu:
        bits = np.where(np.isnan(x), nan, np.where(np.signbit(x), _U64(0), bits))
    if op.sat:
        one = encode_f64(np.ones(1), fmt)[0]
        bits = np.where(np.isnan(x) | (x <= 0), _U64(0), np.where(x > 1, one, bits))
    return bits


def _float_to_int(x: np.ndarray, dst: str, rounding: str | None, nan_is_min: bool) -> np.ndarray:
    """Round to an integer and saturate (PTX: float-to-int always saturates, NaN -> 0)."""
    width = _INT_BITS[dst]
    signed = dst.startswith(".s")
    lo = -(1 << (width - 1)) if signed else 0
    hi = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
    r = _INTEGRAL.get(rounding or ".rzi", np.trunc)(x)
    nan = np.isnan(r)
    r = np.where(nan, 0.0, r)
    over = r >= float(hi)  # float(hi) rounds up to 2**k for 64-bit types
    under = r <= float(lo)
    mid = np.where(over | under, 0.0, r)
    val = mid.astype(np.int64).view(_U64) if signed or width < 64 else mid.astype(_U64)
    val = np.where(over, _U64(hi & _ALL_ONES), val)
    val = np.where(under, _U64(lo & _ALL_ONES), val)
    # PTX says NaN -> 0; the GPU gives 0 only for narrow conversions from
    # f32/f16/bf16 and 1 << (width-1) from f64 or into 64 bits (H200).
    nan_value = 1 << (width - 1) if nan_is_min else 0
    val = np.where(nan, _U64(nan_value), val)
    return val & _mask(width)


# ---- arithmetic: narrow formats through round-to-odd float64, f64 exactly ----


def _mode(op: FpOp) -> str:
    return _ROUNDING.get(op.rounding, "rn")


def _finish(ro: np.ndarray, fmt: FloatFormat, op: FpOp) -> np.ndarray:
    """Round a (round-to-odd) float64 result to ``fmt``.

    ``.ftz`` decides on the exact result: the GPU flushes a result that is
    below the smallest normal *before* rounding, even when it would round up
    to the smallest normal (measured on an H200).
    """
    mode = _mode(op)
    if op.ftz and fmt.name in _FTZ_NAMES:
        ro = _flush_tiny(ro, fmt, mode)
    return encode_f64(ro, fmt, mode, op.satfinite)


def _flush_tiny(ro: np.ndarray, fmt: FloatFormat, mode: str) -> np.ndarray:
    """Zero the results that are tiny *after rounding with an unbounded
    exponent*: below the smallest normal 2**emin once rounded to full
    precision. Such a value rounds up to 2**emin only from within an ulp."""
    tiny = math.ldexp(1.0, 1 - fmt.bias)
    ulp = math.ldexp(1.0, 1 - fmt.bias - fmt.mbits - 1)  # spacing just below 2**emin
    a = np.abs(ro)
    if mode in ("rn", "rna"):
        normal = a >= tiny - ulp / 2
    elif mode == "rz":
        normal = a >= tiny
    else:
        away = (ro > 0) if mode == "rp" else (ro < 0)
        normal = np.where(away, a > tiny - ulp, a >= tiny)
    flush = ~normal & (ro != 0) & np.isfinite(ro)
    return np.where(flush, np.copysign(0.0, ro), ro)


def _approx_f64_ftz(fn: Callable[[np.ndarray], np.ndarray], x_bits: np.ndarray) -> np.ndarray:
    """``rcp``/``rsqrt.approx.ftz.f64``: the ISA computes on the upper word only
    and returns a result whose lower word is zero; NaN -> 0x7fffffff00000000."""
    hi = decode(x_bits & _U64(0xFFFF_FFFF_0000_0000), _F64)
    hi = _flush(hi, _F64)
    y = _flush(fn(hi), _F64)
    bits = (y.view(_U64) + _U64(0x8000_0000)) & _U64(0xFFFF_FFFF_0000_0000)
    bits = np.where(np.isinf(y), y.view(_U64), bits)
    return np.where(np.isnan(y), _U64(0x7FFF_FFFF_0000_0000), bits)


def _exact_lanes(
    lanes: np.ndarray,
    xs: list[np.ndarray],
    exact: Callable[..., Fraction | None],
    fmt: FloatFormat,
    mode: str,
) -> dict[int, int]:
    """Per-lane exact results (bit patterns) for the lanes selected."""
    out: dict[int, int] = {}
    for i in np.flatnonzero(lanes):
        vals = [Fraction(float(x[i])) for x in xs]
        r = exact(*vals)
        if r is None:
            continue
        out[int(i)] = r if isinstance(r, int) else _round_rational(r, fmt, mode)
    return out


def _apply(bits: np.ndarray, fixes: dict[int, int]) -> np.ndarray:
    if fixes:
        idx = np.fromiter(fixes.keys(), dtype=np.intp)
        bits[idx] = np.fromiter(fixes.values(), dtype=_U64, count=len(fixes))
    return bits


def _f64_exact(op: FpOp, xs: list[np.ndarray], y: np.ndarray, exact: Callable[..., Fraction]) -> np.ndarray:
    """f64 with a directed rounding: exact per lane where every input is finite.

    ``y`` is NumPy's result, kept for non-finite inputs and exact zeros (whose
    sign it already has right).
    """
    bits = y.view(_U64).copy()
    finite = np.all([np.isfinite(x) for x in xs], axis=0)

    def lane(*vals: Fraction) -> Fraction | None:
        r = exact(*vals)
        return None if r == 0 else r

    return _apply(bits, _exact_lanes(finite, xs, lane, _F64, _mode(op)))


def _op_add(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray], negate_b: bool = False) -> np.ndarray:
    a, b = xs[0], (-xs[1] if negate_b else xs[1])
    mode = _mode(op)
    s, err = _two_sum(a, b)
    s = _zero_sum_sign(s, a, b, mode)
    if fmt is not _F64:
        return _finish(_to_odd(s, err), fmt, op)
    if mode == "rn":
        return s.view(_U64).copy()
    # TwoSum is exact for any finite sum: adjust RN by the error's sign.
    out = _directed_adjust(s, err, mode, np.isfinite(a) & np.isfinite(b))
    return out.view(_U64).copy()


def _directed_adjust(
    y: np.ndarray, direction: np.ndarray, mode: str, finite_inputs: np.ndarray
) -> np.ndarray:
    """From y = RN(exact) and sign(exact - y), the directed rounding of exact."""
    direction = np.where(np.isinf(y) & finite_inputs, -np.sign(y), direction)
    direction = np.where(np.isnan(direction), 0.0, direction)
    if mode == "rz":
        move = np.where(y > 0, direction < 0, direction > 0) & (y != 0)
        target = np.zeros_like(y)
    elif mode == "rp":
        move = direction > 0
        target = np.full_like(y, np.inf)
    else:  # rm
        move = direction < 0
        target = np.full_like(y, -np.inf)
    return np.where(move, np.nextafter(y, target), y)


def _op_sub(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    return _op_add(op, fmt, xs, negate_b=True)


def _op_mul(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    a, b = xs
    p = a * b
    if fmt is not _F64:
        return _finish(p, fmt, op)  # exact in float64 for every narrow format
    if _mode(op) == "rn":
        return p.view(_U64).copy()
    return _f64_exact(op, xs, p, lambda x, y: x * y)


def _op_fma(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    a, b, c = xs
    mode = _mode(op)
    if fmt is not _F64:
        p = a * b
        s, err = _two_sum(p, c)
        s = _zero_sum_sign(s, p, c, mode)
        return _finish(_to_odd(s, err), fmt, op)
    # Right for every lane with a non-finite input (an infinite c wins over a
    # finite product even if the rounded product overflows), and for a*b == 0.
    naive = np.where(np.isinf(c) & np.isfinite(a) & np.isfinite(b), c, a * b + c)
    naive = _zero_sum_sign(naive, a * b, c, mode)
    if mode != "rn":
        return _f64_exact(op, xs, naive, lambda x, y, z: x * y + z)
    # Boldo-Melquiond: RN(th + RO(tl + ul)) is the correctly rounded a*b+c.
    uh, ul = _two_prod(a, b)
    th, tl = _two_sum(c, uh)
    v, verr = _two_sum(tl, ul)
    result = th + _to_odd(v, verr)
    result = np.where((result == 0) | (a == 0) | (b == 0), naive, result)
    bits = np.where(np.isfinite(a) & np.isfinite(b) & np.isfinite(c), result, naive).view(_U64).copy()
    _, ea = np.frexp(a)
    _, eb = np.frexp(b)
    _, ec = np.frexp(c)
    _, et = np.frexp(th)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    nonzero = (a != 0) & (b != 0)
    risky = finite & nonzero & ((ea > 990) | (eb > 990) | (ea + eb < -960) | (ea + eb > 1020) | (ec > 1020))
    risky |= finite & (th != 0) & (et < -960)
    risky |= finite & ~np.isfinite(result)
    # Risky lanes get the exact rounding; an exact zero keeps `naive`, which is
    # then exactly zero (a*b = -c is representable) with the IEEE sign.
    bits = np.where(risky, naive.view(_U64), bits)
    return _apply(bits, _exact_lanes(risky, xs, lambda x, y, z: x * y + z or None, _F64, "rn"))


def _op_div(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    a, b = xs
    q = a / b
    if op.approx:
        return _finish(q, fmt, replace(op, rounding=None))
    if fmt is not _F64:
        p, perr = _two_prod(q, b)
        residual = (a - p) - perr  # exact sign of a - q*b
        ok = np.isfinite(q) & (b != 0) & np.isfinite(a) & (q != 0)
        direction = np.where(ok, np.sign(residual) * np.sign(b), 0.0)
        return _finish(_to_odd(q, direction), fmt, op)
    if _mode(op) == "rn":
        return q.view(_U64).copy()
    return _f64_exact(op, xs, q, lambda x, y: x / y if y != 0 else Fraction(0))


def _op_sqrt(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    (x,) = xs
    y = np.sqrt(x)
    if op.approx:
        return _finish(y, fmt, replace(op, rounding=None))
    if fmt is not _F64:
        p, perr = _two_prod(y, y)
        residual = (x - p) - perr
        ok = np.isfinite(y) & (y > 0)
        return _finish(_to_odd(y, np.where(ok, np.sign(residual), 0.0)), fmt, op)
    mode = _mode(op)
    bits = y.view(_U64).copy()
    if mode == "rn":
        return bits
    lanes = np.isfinite(x) & (x > 0)
    return _apply(bits, _exact_lanes(lanes, xs, lambda v: _round_sqrt(v, _F64, mode), _F64, mode))


def _op_rcp(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    if op.approx and op.ftz and fmt is _F64:
        return _approx_f64_ftz(lambda v: 1.0 / v, xs[0].view(_U64))
    return _op_div(op, fmt, [np.ones_like(xs[0]), xs[0]])


def _approx(
    fn: Callable[[np.ndarray], np.ndarray],
) -> Callable[[FpOp, FloatFormat, list[np.ndarray]], np.ndarray]:
    def handler(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
        if op.ftz and fmt is _F64:
            return _approx_f64_ftz(fn, xs[0].view(_U64))
        return _finish(fn(xs[0]), fmt, replace(op, rounding=None))

    return handler


def _min_max(is_max: bool) -> Callable[[FpOp, FloatFormat, list[np.ndarray]], np.ndarray]:
    def handler(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
        a, b = xs
        # -0 orders below +0; the chosen input is returned exactly.
        a_first = (a > b) | ((a == b) & ~np.signbit(a)) if is_max else (a < b) | ((a == b) & np.signbit(a))
        na, nb = np.isnan(a), np.isnan(b)
        r = np.where(a_first, a, b)
        r = np.where(na | nb, np.nan, r) if op.nan else np.where(na, b, np.where(nb, a, r))
        return encode_f64(r, fmt)

    return handler


def _op_abs(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    return encode_f64(np.abs(xs[0]), fmt)


def _op_neg(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    return encode_f64(-xs[0], fmt)


def _op_copysign(op: FpOp, fmt: FloatFormat, xs: list[np.ndarray]) -> np.ndarray:
    return encode_f64(np.copysign(xs[1], xs[0]), fmt)


class _FastFp:
    """One round-to-nearest ``add``/``sub``/``mul`` on raw bits, in NumPy's own arithmetic.

    Why: an atomic chain on one word makes 32 dependent one-lane `fp` calls
    per warp, and the general path (error-free transformations, round to
    odd, the integer encoder) costs tens of microseconds a call whatever
    the lane count. NumPy's float32 and float64 arithmetic is IEEE's,
    correctly rounded to nearest with subnormals, so for these forms it is
    the answer itself; what the general path adds is kept:

    * ``.f32`` NaN results are the canonical ``0x7fffffff``;
    * ``.ftz`` (``.f32``) flushes subnormal inputs, and results that are
      tiny before rounding. A sum of two normals (or zeros) is a multiple
      of 2**-149, so a tiny sum is exact: it is tiny iff the float32 sum is
      subnormal. A product is exact in float64, flushed there (`_flush_tiny`)
      and then rounded once to float32;
    * ``.f64`` ``sub`` is ``a + (-b)``, as in the general path (the sign of
      a NaN payload from b flips).
    """

    def __init__(self, op: str, ptx_type: str, ftz: bool) -> None:
        self.op, self.ftz = op, ftz
        self.width = 64 if ptx_type == ".f64" else 32
        self.run = self._f64 if self.width == 64 else self._f32

    def _f64(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        x, y = a.view(np.float64), b.view(np.float64)
        r = x * y if self.op == "mul" else x + (-y if self.op == "sub" else y)
        return r.view(_U64)

    def _f32(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        xb, yb = a.astype(np.uint32), b.astype(np.uint32)
        if self.ftz:
            xb, yb = _flush32(xb), _flush32(yb)
        x, y = xb.view(np.float32), yb.view(np.float32)
        if self.op == "mul":
            p = x.astype(np.float64) * y.astype(np.float64)  # exact
            if self.ftz:
                p = _flush_tiny(p, _F32, "rn")
            r = p.astype(np.float32).view(np.uint32)
        else:
            r = (x + y if self.op == "add" else x - y).view(np.uint32)
            if self.ftz:
                r = _flush32(r)
        nan = (r & _U32(0x7FFF_FFFF)) > _U32(0x7F80_0000)
        return np.where(nan, _U32(0x7FFF_FFFF), r).astype(_U64)


_U32 = np.uint32


def _flush32(bits: np.ndarray) -> np.ndarray:
    """float32 subnormals (uint32 patterns) to zero of their sign."""
    return np.where((bits & _U32(0x7F80_0000)) == 0, bits & _U32(0x8000_0000), bits)


_FAST_FP: dict[FpOp, _FastFp] = {
    FpOp(op, t, rounding=rounding, ftz=ftz): _FastFp(op, t, ftz)
    for op in ("add", "sub", "mul")
    for t, ftzs in ((".f32", (False, True)), (".f64", (False,)))
    for ftz in ftzs
    for rounding in (None, ".rn")
}


_FP_OPS: dict[str, Callable[[FpOp, FloatFormat, list[np.ndarray]], np.ndarray]] = {
    "add": _op_add,
    "sub": _op_sub,
    "mul": _op_mul,
    "fma": _op_fma,
    "mad": _op_fma,
    "div": _op_div,
    "sqrt": _op_sqrt,
    "rcp": _op_rcp,
    "rsqrt": _approx(lambda x: 1.0 / np.sqrt(x)),
    "sin": _approx(np.sin),
    "cos": _approx(np.cos),
    "lg2": _approx(np.log2),
    "ex2": _approx(np.exp2),
    "tanh": _approx(np.tanh),
    "min": _min_max(False),
    "max": _min_max(True),
    "abs": _op_abs,
    "neg": _op_neg,
    "copysign": _op_copysign,
}
