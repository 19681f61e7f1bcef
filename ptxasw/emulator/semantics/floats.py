"""Floating-point formats as PTX uses them, and exact encoding into them.

The semantics need a format's layout to build float immediates and to test
classes (``testp``), and every domain rounds a real value into a format the
same way; so the formats and the reference rounding (`encode_f64`, exact
`_round_rational`) live in the shared layer. NumPy here is a calculator for
constants and for the concrete domain's arrays, not a value domain.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

from ptxasw.emulator.semantics.formats import FORMATS, FloatFormat

_U64 = np.uint64
_ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF


def _mask(width: int) -> np.uint64:
    return np.uint64((1 << width) - 1)


_F64, _F32, _F16, _BF16 = FORMATS[".f64"], FORMATS[".f32"], FORMATS[".f16"], FORMATS[".bf16"]


def _decode_scalar(bits: int, fmt: FloatFormat) -> float:
    """The value of one encoding (the reference definition of each format)."""
    bits >>= fmt.shift
    sign = -1.0 if (bits >> fmt.sign_pos) & 1 else 1.0
    exp = (bits >> fmt.mbits) & ((1 << fmt.ebits) - 1)
    man = bits & ((1 << fmt.mbits) - 1)
    magnitude = bits & ((1 << fmt.sign_pos) - 1)
    if fmt.nan is not None and not fmt.ieee and magnitude == fmt.nan:
        return math.nan
    if fmt.ieee and exp == (1 << fmt.ebits) - 1:
        return sign * math.inf if man == 0 else math.nan
    if exp == 0:
        return sign * math.ldexp(man, 1 - fmt.bias - fmt.mbits)
    return sign * math.ldexp(man + (1 << fmt.mbits), exp - fmt.bias - fmt.mbits)


@cache
def _decode_table(name: str) -> np.ndarray:
    fmt = FORMATS[name]
    return np.array([_decode_scalar(i, fmt) for i in range(1 << fmt.storage_bits)], dtype=np.float64)


def decode(data: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Bit patterns (uint64) -> exact float64 values."""
    if fmt is _F64:
        return data.astype(_U64).view(np.float64).copy()
    with np.errstate(invalid="ignore"):  # signalling NaNs widen quietly
        if fmt.name in (".f32", ".tf32"):
            return data.astype(np.uint32).view(np.float32).astype(np.float64)
        if fmt is _F16:
            return data.astype(np.uint16).view(np.float16).astype(np.float64)
        if fmt is _BF16:
            return (data.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return _decode_table(fmt.name)[(data & _mask(fmt.storage_bits)).astype(np.intp)]


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of each uint64 (0 for 0), as int64."""
    x = x.astype(_U64)
    n = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= _U64(1 << s)
        n += np.where(big, s, 0)
        x = np.where(big, x >> _U64(s), x)
    return n + (x != 0)


def _overflow_bits(fmt: FloatFormat, neg: np.ndarray, mode: str, satfinite: bool) -> np.ndarray:
    """Magnitude encoding of an overflowed result (before the sign is added)."""
    to_max = np.full(neg.shape, satfinite or mode == "rz")
    if mode == "rp":
        to_max |= neg
    elif mode == "rm":
        to_max |= ~neg
    if fmt.ieee:
        big = ((1 << fmt.ebits) - 1) << fmt.mbits
    elif fmt.nan is not None:
        big = fmt.nan
    else:
        big = fmt.max_finite
    return np.where(to_max, _U64(fmt.max_finite), _U64(big))


def _encode(
    neg: np.ndarray, mant: np.ndarray, exp: np.ndarray, fmt: FloatFormat, mode: str, satfinite: bool
) -> np.ndarray:
    """Round the finite values ``(-1)**neg * mant * 2**exp`` to ``fmt``.

    ``mant`` is uint64, ``exp`` int64. Exact when the value is exact; when it
    is a round-to-odd approximation with at least two bits more than the
    format, the result is still the correctly rounded one (see module doc).
    """
    m, bias = fmt.mbits, fmt.bias
    emin = 1 - bias
    bl = _bit_length(mant)
    qe = np.maximum(exp + bl - 1 - m, emin - m)  # exponent of the result's last bit
    shift = qe - exp
    right = np.clip(shift, 0, 63).astype(_U64)
    left = np.clip(-shift, 0, 63).astype(_U64)
    exact = shift <= 0
    huge = shift >= 64
    q = np.where(huge, _U64(0), mant >> right)
    low = np.where(huge, _U64(_ALL_ONES), (_U64(1) << right) - _U64(1))
    rem = np.where(exact, _U64(0), mant & low)
    half = np.where((shift >= 1) & (shift <= 64), _U64(1) << np.clip(shift - 1, 0, 63).astype(_U64), _U64(0))
    above = (rem > half) & ~exact & (shift <= 64)
    tie = (rem == half) & (shift >= 1) & (shift <= 64)
    inexact = rem != 0
    if mode == "rn":
        up = above | (tie & ((q & _U64(1)) == 1))
    elif mode == "rna":
        up = above | tie
    elif mode == "rz":
        up = np.zeros(neg.shape, dtype=bool)
    elif mode == "rp":
        up = inexact & ~neg
    elif mode == "rm":
        up = inexact & neg
    else:
        raise NotImplementedError(f"rounding mode {mode}")
    n = np.where(exact, mant << left, q + up.astype(_U64))
    field = (qe + (m + bias - 1)).astype(np.int64)
    mag = (np.maximum(field, 0).astype(_U64) << _U64(m)) + n
    mag = np.where(mant == 0, _U64(0), mag)
    over = mag >= _U64((1 << fmt.ebits) - 1 << m) if fmt.ieee else mag > _U64(fmt.max_finite)
    # A huge exponent can make `field << m` wrap; it is an overflow all the same.
    over |= field >= (1 << fmt.ebits)
    over &= mant != 0
    mag = np.where(over, _overflow_bits(fmt, neg, mode, satfinite), mag)
    out = mag | (neg.astype(_U64) << _U64(fmt.sign_pos))
    return out << _U64(fmt.shift) if fmt.shift else out


def _decompose(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Finite float64 -> (negative, integer mantissa, exponent), exactly."""
    bits = x.view(_U64)
    neg = (bits >> _U64(63)) != 0
    e = ((bits >> _U64(52)) & _U64(0x7FF)).astype(np.int64)
    f = bits & _U64((1 << 52) - 1)
    mant = np.where(e == 0, f, f | _U64(1 << 52))
    exp = np.where(e == 0, -1074, e - 1075)
    return neg, mant, exp


def encode_f64(x: np.ndarray, fmt: FloatFormat, mode: str = "rn", satfinite: bool = False) -> np.ndarray:
    """Round float64 values (exact, or rounded to odd) to ``fmt`` bit patterns."""
    x = np.asarray(x, dtype=np.float64)
    if fmt is _F64:
        return x.view(_U64).copy()
    if mode == "rn" and not satfinite and fmt.name in (".f32", ".f16"):
        # NumPy's float64 -> float32/float16 casts round correctly to nearest.
        with np.errstate(all="ignore"):
            narrow = x.astype(np.float32 if fmt is _F32 else np.float16)
        out = narrow.view(np.uint32 if fmt is _F32 else np.uint16).astype(_U64)
        return np.where(np.isnan(x), _U64(fmt.nan or 0), out)
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    neg, mant, exp = _decompose(safe)
    out = _encode(neg, mant, exp, fmt, mode, satfinite)
    sign = (np.signbit(x).astype(_U64)) << _U64(fmt.sign_pos + fmt.shift)
    if fmt.ieee and not satfinite:
        inf = _U64(((1 << fmt.ebits) - 1) << (fmt.mbits + fmt.shift))
    elif fmt.nan is not None and not satfinite:
        inf = _U64(fmt.nan << fmt.shift)
    else:
        inf = _U64(fmt.max_finite << fmt.shift)
    out = np.where(np.isinf(x), inf | sign, out)
    nan = fmt.nan if fmt.nan is not None else fmt.max_finite
    return np.where(np.isnan(x), _U64(nan << fmt.shift), out)


# ---- the same rounding on Python integers (per-lane exact fallbacks) ----


def _encode_int(neg: bool, mant: int, exp: int, fmt: FloatFormat, mode: str, satfinite: bool) -> int:
    """Scalar twin of `_encode` on Python integers (value = mant * 2**exp)."""
    m, bias = fmt.mbits, fmt.bias
    sign = int(neg) << fmt.sign_pos
    if mant == 0:
        return sign << fmt.shift
    qe = max(exp + mant.bit_length() - 1 - m, 1 - bias - m)
    shift = qe - exp
    if shift <= 0:
        n = mant << -shift
    else:
        q, rem = mant >> shift, mant & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if mode == "rn":
            up = rem > half or (rem == half and q & 1)
        elif mode == "rna":
            up = rem >= half
        elif mode == "rz":
            up = False
        elif mode == "rp":
            up = rem != 0 and not neg
        else:
            up = rem != 0 and neg
        n = q + int(up)
    mag = ((qe + m + bias - 1) << m) + n
    limit = ((1 << fmt.ebits) - 1) << m if fmt.ieee else fmt.max_finite + 1
    if mag >= limit:
        to_max = satfinite or mode == "rz" or (mode == "rp" and neg) or (mode == "rm" and not neg)
        if to_max:
            mag = fmt.max_finite
        elif fmt.ieee:
            mag = limit
        else:
            mag = fmt.nan if fmt.nan is not None else fmt.max_finite
    return (mag | sign) << fmt.shift


def _round_rational(value: Fraction, fmt: FloatFormat, mode: str, satfinite: bool = False) -> int:
    """Correctly round a nonzero rational to ``fmt`` (round to odd, then `_encode_int`)."""
    neg = value < 0
    n, d = abs(value.numerator), value.denominator
    k = n.bit_length() - d.bit_length()
    if (n << max(0, -k)) < (d << max(0, k)):
        k -= 1  # now 2**k <= n/d < 2**(k+1)
    t = fmt.mbits + 3 - k
    q, r = divmod(n << t, d) if t >= 0 else divmod(n, d << -t)
    return _encode_int(neg, q | (1 if r else 0), -t, fmt, mode, satfinite)


def _round_sqrt(value: Fraction, fmt: FloatFormat, mode: str) -> int:
    """Correctly rounded square root of a positive dyadic rational."""
    n, d = value.numerator, value.denominator
    j = d.bit_length() - 1  # d is a power of two (the value came from a float)
    extra = max(0, -((n.bit_length() + j - 2 * (fmt.mbits + 5)) // 2))
    s = j + 2 * extra
    big = n << s
    root = math.isqrt(big)
    sticky = 1 if root * root != big else 0
    return _encode_int(False, root | sticky, -(j + extra), fmt, mode, False)
