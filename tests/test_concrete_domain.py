"""The NumPy concrete domain against the PTX ISA, IEEE 754 and the GPU.

Hand-written expectations cover the edge values (0, -1, INT_MIN, INT_MAX,
shift counts >= width, division by zero, NaN, infinities, subnormals, -0);
property tests compare the vectorised float paths with exact rational
arithmetic (`fractions.Fraction`) in every rounding mode. Behaviours that the
ISA leaves open are pinned to what an H200 returned (benchmarks/gpu_semantics.py).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw.emulator.concrete.domain import FORMATS, Bits, ConcreteDomain
from ptxasw.emulator.semantics import floats as fl
from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.ir import isa

D = ConcreteDomain(4)
MASK = {w: (1 << w) - 1 for w in (1, 8, 16, 32, 64)}


def ints(values: list[int], width: int) -> Bits:
    return ConcreteDomain(len(values)).from_ints(values, width)


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def val32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def fp(op: str, typ: str, *args: list[int], **mods: object) -> list[int]:
    src = mods.get("src") or typ
    width = isa.type_bits(str(src)) or 32
    d = ConcreteDomain(len(args[0]))
    return d.to_ints(d.fp(FpOp(op, typ, **mods), *(d.from_ints(a, width) for a in args)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Integers


def test_const_wraps_and_masks() -> None:
    assert D.to_ints(D.const(-1, 8)) == [0xFF] * 4
    assert D.to_ints(D.const(-1, 64)) == [MASK[64]] * 4
    assert D.to_ints(D.const(0x1FF, 8)) == [0xFF] * 4
    assert D.width(D.const(0, 17)) == 17
    assert list(D.to_signed(D.const(0x80, 8))) == [-128] * 4
    with pytest.raises(NotImplementedError):
        D.const(0, 128)


def test_fresh_is_zero() -> None:
    assert D.to_ints(D.fresh("x", 32)) == [0] * 4


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_wraparound(width: int) -> None:
    m = MASK[width]
    a = ints([m, m, 1 << (width - 1), 0], width)
    b = ints([1, m, 1 << (width - 1), 1], width)
    assert D.to_ints(D.add(a, b)) == [0, m - 1, 0, 1]
    assert D.to_ints(D.sub(b, a)) == [2, 0, 0, 1]
    assert D.to_ints(D.mul(a, b)) == [m, 1, 0, 0]
    assert D.to_ints(D.neg(a)) == [1, 1, 1 << (width - 1), 0]


@pytest.mark.parametrize("width", [32, 64])
def test_division_edges(width: int) -> None:
    m, top = MASK[width], 1 << (width - 1)
    a = ints([7, (-7) & m, 7, (-7) & m, top, 5, 0], width)
    b = ints([2, 2, (-2) & m, (-2) & m, m, 0, 0], width)
    assert list(D.to_signed(D.sdiv(a, b))) == [3, -3, -3, 3, -top, -1, -1]  # MIN/-1 = MIN; x/0 = -1
    assert list(D.to_signed(D.srem(a, b))) == [1, -1, 1, -1, 0, -1, -1]  # x%0 = all ones (GPU)
    assert D.to_ints(D.udiv(a, b))[5:] == [m, m]
    assert D.to_ints(D.urem(a, b))[5:] == [m, m]
    assert D.to_ints(D.udiv(ints([m], width), ints([2], width))) == [m >> 1]


@pytest.mark.parametrize("width", [16, 32, 64])
def test_shifts_past_width(width: int) -> None:
    m = MASK[width]
    a = ints([1, m, 1 << (width - 1), 0x5A], width)
    for count, expect_shl, expect_lshr, expect_ashr in [
        (0, [1, m, 1 << (width - 1), 0x5A], [1, m, 1 << (width - 1), 0x5A], [1, m, 1 << (width - 1), 0x5A]),
        (width - 1, [1 << (width - 1), 1 << (width - 1), 0, 0], [0, 1, 1, 0], [0, m, m, 0]),
        (width, [0] * 4, [0] * 4, [0, m, m, 0]),
        (width + 1, [0] * 4, [0] * 4, [0, m, m, 0]),
        (m, [0] * 4, [0] * 4, [0, m, m, 0]),
    ]:
        c = D.const(count, width)
        assert D.to_ints(D.shl(a, c)) == expect_shl, count
        assert D.to_ints(D.lshr(a, c)) == expect_lshr, count
        assert D.to_ints(D.ashr(a, c)) == expect_ashr, count


def test_comparisons_and_select() -> None:
    a = ints([0x80000000, 0x7FFFFFFF, 5, 0xFFFFFFFF], 32)
    b = ints([0x7FFFFFFF, 0x80000000, 5, 0], 32)
    assert D.to_ints(D.eq(a, b)) == [0, 0, 1, 0]
    assert D.to_ints(D.ult(a, b)) == [0, 1, 0, 0]
    assert D.to_ints(D.slt(a, b)) == [1, 0, 0, 1]
    assert D.to_ints(D.ite(D.slt(a, b), a, b)) == [0x80000000, 0x80000000, 5, 0xFFFFFFFF]


def test_width_changes() -> None:
    a = ints([0x80, 0x7F, 0xFF, 0], 8)
    assert D.to_ints(D.zext(a, 32)) == [0x80, 0x7F, 0xFF, 0]
    assert D.to_ints(D.sext(a, 32)) == [0xFFFFFF80, 0x7F, 0xFFFFFFFF, 0]
    assert D.to_ints(D.sext(a, 64)) == [0xFFFFFFFFFFFFFF80, 0x7F, MASK[64], 0]
    w = ints([0x1122334455667788] * 4, 64)
    assert D.to_ints(D.extract(w, 63, 32)) == [0x11223344] * 4
    assert D.to_ints(D.extract(w, 11, 4)) == [0x78] * 4
    assert D.to_ints(D.concat(D.extract(w, 31, 0), D.extract(w, 63, 32))) == [0x5566778811223344] * 4
    with pytest.raises(NotImplementedError):
        D.concat(w, w)


def test_bit_counting() -> None:
    a = ints([0, 1, 0x80000000, 0xFFFFFFFF], 32)
    assert D.to_ints(D.popc(a)) == [0, 1, 1, 32]
    assert D.to_ints(D.clz(a)) == [32, 31, 0, 0]
    assert D.to_ints(D.brev(a)) == [0, 0x80000000, 1, 0xFFFFFFFF]
    b = ints([0x0123456789ABCDEF, 0, 1, MASK[64]], 64)
    assert D.to_ints(D.brev(b))[0] == int(f"{0x0123456789ABCDEF:064b}"[::-1], 2)
    assert D.to_ints(D.clz(b)) == [7, 64, 63, 0]


_WIDTHS = st.sampled_from([1, 8, 16, 32, 64])


@settings(max_examples=150, deadline=None)
@given(_WIDTHS, st.data())
def test_integer_ops_match_python(width: int, data: st.DataObject) -> None:
    m = MASK[width]
    xs = data.draw(st.lists(st.integers(0, m), min_size=6, max_size=6))
    ys = data.draw(st.lists(st.integers(0, m), min_size=6, max_size=6))
    a, b = ints(xs, width), ints(ys, width)

    def signed(v: int) -> int:
        return v - (1 << width) if v >> (width - 1) else v

    d = ConcreteDomain(6)
    assert d.to_ints(d.add(a, b)) == [(x + y) & m for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.mul(a, b)) == [(x * y) & m for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.udiv(a, b)) == [x // y if y else m for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.urem(a, b)) == [x % y if y else m for x, y in zip(xs, ys, strict=True)]

    def tdiv(x: int, y: int) -> int:  # C division: truncate towards zero
        q = abs(x) // abs(y)
        return -q if (x < 0) != (y < 0) else q

    if width > 1:
        q = [tdiv(signed(x), signed(y)) if y else -1 for x, y in zip(xs, ys, strict=True)]
        assert d.to_ints(d.sdiv(a, b)) == [v & m for v in q]
        r = [
            signed(x) - signed(y) * tdiv(signed(x), signed(y)) if y else -1
            for x, y in zip(xs, ys, strict=True)
        ]
        assert d.to_ints(d.srem(a, b)) == [v & m for v in r]
    assert d.to_ints(d.slt(a, b)) == [int(signed(x) < signed(y)) for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.shl(a, b)) == [(x << y) & m if y < width else 0 for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.ashr(a, b)) == [(signed(x) >> min(y, 64)) & m for x, y in zip(xs, ys, strict=True)]
    assert d.to_ints(d.popc(a)) == [bin(x).count("1") for x in xs]
    assert d.to_ints(d.clz(a)) == [width - x.bit_length() for x in xs]


# --------------------------------------------------------------------------
# Floating point: special values


NAN32, INF32, MAX32, MIN_SUB32, MIN_NORM32 = 0x7FC00000, 0x7F800000, 0x7F7FFFFF, 1, 0x00800000
CANON32 = 0x7FFFFFFF  # the NaN single-precision results carry


def test_f32_rn_matches_numpy_on_specials() -> None:
    specials = [0, 0x80000000, 0x3F800000, 0xBF800000, INF32, 0xFF800000, NAN32, MIN_SUB32, 0x807FFFFF]
    specials += [MIN_NORM32, MAX32, 0xFF7FFFFF, f32(1.5), f32(-2.75), f32(3.0e-39)]
    pairs = [(x, y) for x in specials for y in specials]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    nx = np.array(xs, dtype=np.uint32).view(np.float32)
    ny = np.array(ys, dtype=np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        refs = {"add": nx + ny, "sub": nx - ny, "mul": nx * ny, "div": nx / ny}
    for op, ref in refs.items():
        got = np.array(fp(op, ".f32", xs, ys, rounding=".rn"), dtype=np.uint32)
        ref_bits = ref.view(np.uint32)
        nan = np.isnan(ref)
        assert np.array_equal(got[~nan], ref_bits[~nan]), op
        assert np.all(got[nan] == CANON32), op
    with np.errstate(all="ignore"):
        sq = np.sqrt(nx)
    got = np.array(fp("sqrt", ".f32", xs, rounding=".rn"), dtype=np.uint32)
    ok = ~np.isnan(sq)
    assert np.array_equal(got[ok], sq.view(np.uint32)[ok])
    assert val32(fp("sqrt", ".f32", [0x80000000], rounding=".rn")[0]) == 0.0
    assert fp("sqrt", ".f32", [0x80000000], rounding=".rn") == [0x80000000]  # sqrt(-0) = -0


def test_f64_rn_matches_numpy() -> None:
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        math.inf,
        -math.inf,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
    ]
    vals += [0.1, -3.5, 1e300, 1e-300]
    xs = [f64(v) for v in vals for _ in vals]
    ys = [f64(w) for _ in vals for w in vals]
    nx = np.array(xs, dtype=np.uint64).view(np.float64)
    ny = np.array(ys, dtype=np.uint64).view(np.float64)
    with np.errstate(all="ignore"):
        for op, ref in {"add": nx + ny, "mul": nx * ny, "div": nx / ny}.items():
            got = np.array(fp(op, ".f64", xs, ys, rounding=".rn"), dtype=np.uint64).view(np.float64)
            assert np.array_equal(got, ref, equal_nan=True), op


def test_directed_rounding_of_one_third() -> None:
    one, three = [f32(1.0), f32(-1.0)], [f32(3.0)] * 2
    assert fp("div", ".f32", one, three, rounding=".rn") == [0x3EAAAAAB, 0xBEAAAAAB]
    assert fp("div", ".f32", one, three, rounding=".rz") == [0x3EAAAAAA, 0xBEAAAAAA]
    assert fp("div", ".f32", one, three, rounding=".rm") == [0x3EAAAAAA, 0xBEAAAAAB]
    assert fp("div", ".f32", one, three, rounding=".rp") == [0x3EAAAAAB, 0xBEAAAAAA]
    d1, d3 = [f64(1.0)], [f64(3.0)]
    assert fp("div", ".f64", d1, d3, rounding=".rz") == [0x3FD5555555555555]
    assert fp("div", ".f64", d1, d3, rounding=".rp") == [0x3FD5555555555556]


def test_overflow_by_rounding_mode() -> None:
    big = [MAX32, MAX32 | 0x80000000]
    assert fp("add", ".f32", big, big, rounding=".rn") == [INF32, 0xFF800000]
    assert fp("add", ".f32", big, big, rounding=".rz") == [MAX32, 0xFF7FFFFF]
    assert fp("add", ".f32", big, big, rounding=".rm") == [MAX32, 0xFF800000]
    assert fp("add", ".f32", big, big, rounding=".rp") == [INF32, 0xFF7FFFFF]
    huge = [0x7FEFFFFFFFFFFFFF]
    assert fp("mul", ".f64", huge, huge, rounding=".rz") == huge
    assert fp("mul", ".f64", huge, huge, rounding=".rn") == [0x7FF0000000000000]


def test_exact_zero_sign() -> None:
    one, neg = [f32(1.0)], [f32(-1.0)]
    assert fp("add", ".f32", one, neg, rounding=".rn") == [0]
    assert fp("add", ".f32", one, neg, rounding=".rm") == [0x80000000]
    assert fp("fma", ".f32", one, one, neg, rounding=".rm") == [0x80000000]
    assert fp("add", ".f64", [f64(1.0)], [f64(-1.0)], rounding=".rm") == [1 << 63]
    assert fp("add", ".f32", [0x80000000], [0x80000000], rounding=".rn") == [0x80000000]


def test_fma_rounds_once() -> None:
    # a*b = 1 + 2**-11 + 2**-24 exactly; separately rounded it loses the 2**-24.
    a = b = f32(1 + 2**-12)
    c = f32(-1.0)
    assert fp("fma", ".f32", [a], [b], [c], rounding=".rn") == [f32(2**-11 + 2**-24)]
    # f64: x*x - x*x exactly is the rounding error of the product.
    x = 1 + 2**-30
    p = x * x
    got = fp("fma", ".f64", [f64(x)], [f64(x)], [f64(-p)], rounding=".rn")
    assert struct.unpack("<d", struct.pack("<Q", got[0]))[0] == float(Fraction(x) * Fraction(x) - Fraction(p))


def test_fma_f64_extremes() -> None:
    big, neg_big, one = 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, f64(1.0)
    assert fp("fma", ".f64", [one], [neg_big], [big], rounding=".rn") == [0]  # exact zero, not NaN
    assert fp("fma", ".f64", [big], [0], [one], rounding=".rn") == [one]
    assert fp("fma", ".f64", [big], [f64(2.0)], [0xFFF0000000000000], rounding=".rz") == [0xFFF0000000000000]
    assert fp("fma", ".f64", [big], [f64(2.0)], [neg_big], rounding=".rn") == [big]


def test_ftz_and_saturation() -> None:
    sub = 0x00000010
    assert fp("add", ".f32", [sub], [0], rounding=".rn", ftz=True) == [0]
    assert fp("add", ".f32", [sub | 0x80000000], [0x80000000], rounding=".rn", ftz=True) == [0x80000000]
    assert fp("add", ".f32", [sub], [0], rounding=".rn") == [sub]
    # Tininess after rounding with an unbounded exponent (what the GPU does):
    # (1 - 2**-24) * 2**-126 flushes though it rounds to the smallest normal ...
    assert fp("mul", ".f32", [f32(1 - 2**-24)], [MIN_NORM32], rounding=".rn", ftz=True) == [0]
    # ... while -(2**-126 - 2**-151) rounds to -2**-126 at full precision and stays.
    got = fp("fma", ".f32", [MIN_NORM32], [f32(2**-25)], [MIN_NORM32 | 1 << 31], rounding=".rn", ftz=True)
    assert got == [0x80800000]
    vals = [f32(2.0), f32(-0.5), NAN32, 0x80000000, f32(0.25)]
    assert fp("add", ".f32", vals, [0] * 5, rounding=".rn", sat=True) == [f32(1.0), 0, 0, 0, f32(0.25)]


def test_min_max_nan_and_zero_rules() -> None:
    a = [NAN32, f32(1.0), NAN32, 0x80000000, 0]
    b = [f32(2.0), NAN32, NAN32, 0, 0x80000000]
    assert fp("min", ".f32", a, b) == [f32(2.0), f32(1.0), CANON32, 0x80000000, 0x80000000]
    assert fp("max", ".f32", a, b) == [f32(2.0), f32(1.0), CANON32, 0, 0]
    assert fp("min", ".f32", a, b, nan=True)[:3] == [CANON32] * 3
    assert fp("max", ".f32", [0x00000010], [0], ftz=True) == [0]


def test_compare_ordered_and_unordered() -> None:
    a = ints([NAN32, f32(1.0), 0x80000000, INF32], 32)
    b = ints([f32(1.0), NAN32, 0, INF32], 32)
    expect = {
        "eq": [0, 0, 1, 1],
        "ne": [0, 0, 0, 0],
        "lt": [0, 0, 0, 0],
        "equ": [1, 1, 1, 1],
        "neu": [1, 1, 0, 0],
        "geu": [1, 1, 1, 1],
        "num": [0, 0, 1, 1],
        "nan": [1, 1, 0, 0],
    }
    for cmp, want in expect.items():
        assert D.to_ints(D.fp_compare(cmp, ".f32", a, b)) == want, cmp


# --------------------------------------------------------------------------
# Conversions


def test_float_to_int_saturates() -> None:
    xs = [f32(2.5), f32(-2.5), f32(3.5), f32(1e10), f32(-1e10), NAN32, f32(-0.5), INF32]
    assert fp("cvt", ".s32", xs, src=".f32", rounding=".rni") == [
        2, (-2) & MASK[32], 4, 0x7FFFFFFF, 0x80000000, 0, 0, 0x7FFFFFFF,
    ]  # fmt: skip
    assert fp("cvt", ".u32", xs, src=".f32", rounding=".rzi") == [2, 0, 3, MASK[32], 0, 0, 0, MASK[32]]
    assert fp("cvt", ".s32", xs[:2], src=".f32", rounding=".rmi") == [2, (-3) & MASK[32]]
    assert fp("cvt", ".s32", xs[:2], src=".f32", rounding=".rpi") == [3, (-2) & MASK[32]]
    # NaN: 0 for narrow results of f32; 1 << (w-1) from f64 or into 64 bits (H200).
    assert fp("cvt", ".s32", [0x7FF8000000000000], src=".f64", rounding=".rzi") == [0x80000000]
    assert fp("cvt", ".u64", [NAN32], src=".f32", rounding=".rni") == [1 << 63]
    assert fp("cvt", ".u64", [f64(2.0**64)], src=".f64", rounding=".rzi") == [MASK[64]]
    assert fp("cvt", ".s64", [f64(-(2.0**63))], src=".f64", rounding=".rzi") == [1 << 63]
    assert fp("cvt", ".u64", [f64(2.0**63 + 2048)], src=".f64", rounding=".rzi") == [2**63 + 2048]


def test_int_to_float_rounding() -> None:
    n = (1 << 24) + 1
    d = ConcreteDomain(1)
    for rnd, want in ((".rn", 1 << 24), (".rz", 1 << 24), (".rm", 1 << 24), (".rp", (1 << 24) + 2)):
        got = d.fp(FpOp("cvt", ".f32", ".s32", rnd), d.from_ints([n], 32))
        assert val32(d.to_ints(got)[0]) == want, rnd
    got = d.fp(FpOp("cvt", ".f32", ".s32", ".rm"), d.from_ints([-n], 32))
    assert val32(d.to_ints(got)[0]) == -((1 << 24) + 2)
    got = d.fp(FpOp("cvt", ".f64", ".u64", ".rn"), d.from_ints([MASK[64]], 64))
    assert d.to_ints(got) == [f64(2.0**64)]
    got = d.fp(FpOp("cvt", ".f16", ".s32", ".rn"), d.from_ints([70000], 32))
    assert d.to_ints(got) == [0x7C00]


def test_narrow_float_conversions() -> None:
    assert fp("cvt", ".f16", [f32(65520.0), f32(65519.0)], src=".f32", rounding=".rn") == [0x7C00, 0x7BFF]
    assert fp("cvt", ".f16", [f32(1e6)], src=".f32", rounding=".rn", satfinite=True) == [0x7BFF]
    assert fp("cvt", ".f16", [f32(2**-25)], src=".f32", rounding=".rn") == [0]  # tie to even
    assert fp("cvt", ".f16", [f32(2**-25)], src=".f32", rounding=".rp") == [1]
    # bf16 round to nearest even
    assert fp("cvt", ".bf16", [0x3F808000, 0x3F818000, 0x3F808001], src=".f32", rounding=".rn") == [
        0x3F80,
        0x3F82,
        0x3F81,
    ]
    assert fp("cvt", ".bf16", [0x3F81FFFF], src=".f32", rounding=".rz") == [0x3F81]
    assert fp("cvt", ".f32", [0x3C00, 0x0001, 0xFC00], src=".f16") == [f32(1.0), f32(2**-24), 0xFF800000]
    assert fp("cvt", ".f32", [f32(-1.5)], src=".f32", rounding=".rni", relu=True) == [0]
    assert fp("cvt", ".tf32", [0x3F801000, 0x3F800FFF], src=".f32", rounding=".rna") == [
        0x3F802000,
        0x3F800000,
    ]


def test_packed_and_fp8_conversions() -> None:
    d = ConcreteDomain(1)
    a, b = d.from_ints([f32(1.0)], 32), d.from_ints([f32(-2.0)], 32)
    assert d.to_ints(d.fp(FpOp("cvt", ".f16x2", ".f32", ".rn"), a, b)) == [0x3C00C000]
    e4 = FpOp("cvt", ".e4m3x2", ".f32", ".rn", satfinite=True)
    big, nan = d.from_ints([f32(1000.0)], 32), d.from_ints([NAN32], 32)
    assert d.to_ints(d.fp(e4, big, a)) == [0x7E38]  # 448 (max finite) and 1.0
    assert d.to_ints(d.fp(e4, nan, a)) == [0x7F38]
    e5 = FpOp("cvt", ".e5m2x2", ".f32", ".rn", satfinite=True)
    assert d.to_ints(d.fp(e5, big, a)) == [0x643C]  # 1000 -> 1024 = 0x64
    back = FpOp("cvt", ".f16x2", ".e4m3x2", ".rn")
    assert d.to_ints(d.fp(back, d.from_ints([0x7E38], 16))) == [0x5F003C00]  # 448.0, 1.0
    assert fl._decode_scalar(0x7E, FORMATS[".e4m3"]) == 448.0
    assert fl._decode_scalar(0x7B, FORMATS[".e5m2"]) == 57344.0


def test_approximations_within_an_ulp() -> None:
    xs = [f32(v) for v in (0.5, 2.0, 3.0, 100.0, 1e-3)]
    for op, fn in (("rcp", lambda v: 1 / v), ("sqrt", math.sqrt), ("rsqrt", lambda v: 1 / math.sqrt(v))):
        got = fp(op, ".f32", xs, approx=True)
        for x, g in zip(xs, got, strict=True):
            assert abs(val32(g) - fn(val32(x))) <= abs(fn(val32(x))) * 2**-23, op
    specials = fp("rsqrt", ".f32", [0x80000000, 0, INF32], approx=True)
    assert specials == [0xFF800000, INF32, 0]
    assert fp("lg2", ".f32", [0], approx=True) == [0xFF800000]
    assert fp("ex2", ".f32", [0xFF800000], approx=True) == [0]
    assert fp("sin", ".f32", [0x80000000], approx=True) == [0x80000000]
    # rsqrt.approx.ftz.f64 works on the upper word: a NaN whose payload is in
    # the lower word reads as +inf (ISA semantics; GPU result 0).
    assert fp("rsqrt", ".f64", [0x7FF0000000000001], approx=True, ftz=True) == [0]
    assert fp("rcp", ".f64", [f64(4.0)], approx=True, ftz=True) == [f64(0.25)]


def test_half_and_packed_arithmetic() -> None:
    h = [0x3C00, 0x7BFF, 0x0001]
    assert fp("add", ".f16", h, h, rounding=".rn") == [0x4000, 0x7C00, 0x0002]
    assert fp("add", ".f16", h, h, rounding=".rn", ftz=True)[2] == 0
    packed = [(0x3C00 << 16) | 0x4000]
    assert fp("mul", ".f16x2", packed, packed, rounding=".rn") == [(0x3C00 << 16) | 0x4400]
    assert fp("fma", ".bf16", [0x3F80], [0x4000], [0x3F80], rounding=".rn") == [0x4040]
    assert fp("fma", ".bf16", [0xBF80], [0x4000], [0x3F80], rounding=".rn", relu=True) == [0]


# --------------------------------------------------------------------------
# Property tests: vectorised paths against exact rational arithmetic

_MODES = [".rn", ".rz", ".rm", ".rp"]


def _exact(op: str, vals: list[float]) -> Fraction | None:
    q = [Fraction(v) for v in vals]
    if op == "add":
        r = q[0] + q[1]
    elif op == "sub":
        r = q[0] - q[1]
    elif op == "mul":
        r = q[0] * q[1]
    elif op == "fma":
        r = q[0] * q[1] + q[2]
    else:
        if q[1] == 0:
            return None
        r = q[0] / q[1]
    return None if r == 0 else r


_F32_BITS = st.one_of(
    st.integers(0, MASK[32]),
    st.integers(0x3E000000, 0x41000000).map(lambda x: x | 0),
    st.integers(0xBE000000, 0xC1000000),
    st.integers(0, 0x01000000),
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["add", "sub", "mul", "fma", "div"]),
    st.sampled_from(_MODES),
    st.lists(st.tuples(_F32_BITS, _F32_BITS, _F32_BITS), min_size=8, max_size=8),
)
def test_f32_arithmetic_is_correctly_rounded(op: str, mode: str, triples: list[tuple[int, int, int]]) -> None:
    arity = 3 if op == "fma" else 2
    cols = [[t[k] for t in triples] for k in range(arity)]
    got = fp(op, ".f32", *cols, rounding=mode)
    for i, g in enumerate(got):
        vals = [val32(c[i]) for c in cols]
        if not all(math.isfinite(v) for v in vals):
            continue
        r = _exact(op, vals)
        if r is None:
            continue
        assert g == fl._round_rational(r, FORMATS[".f32"], mode[1:]), (op, mode, [hex(c[i]) for c in cols])


_F64_VALUES = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["add", "mul", "fma", "div"]),
    st.sampled_from(_MODES),
    st.lists(st.tuples(_F64_VALUES, _F64_VALUES, _F64_VALUES), min_size=4, max_size=4),
)
def test_f64_arithmetic_is_correctly_rounded(op: str, mode: str, triples: list[tuple[float, ...]]) -> None:
    arity = 3 if op == "fma" else 2
    cols = [[f64(t[k]) for t in triples] for k in range(arity)]
    got = fp(op, ".f64", *cols, rounding=mode)
    for i, g in enumerate(got):
        r = _exact(op, [t for t in triples[i][:arity]])
        if r is None:
            continue
        assert g == fl._round_rational(r, FORMATS[".f64"], mode[1:]), (op, mode, triples[i])


@settings(max_examples=100, deadline=None)
@given(st.fractions().filter(lambda q: q != 0))
def test_round_rational_matches_python_float(q: Fraction) -> None:
    """Python's Fraction -> float conversion is correctly rounded to nearest."""
    try:
        expect = f64(float(q))
    except OverflowError:
        expect = 0x7FF0000000000000 | ((q < 0) << 63)
    assert fl._round_rational(q, FORMATS[".f64"], "rn") == expect


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(sorted(FORMATS)),
    st.sampled_from(["rn", "rz", "rm", "rp", "rna"]),
    st.booleans(),
    st.lists(
        st.tuples(st.booleans(), st.integers(0, MASK[64]), st.integers(-1200, 1100)), min_size=5, max_size=5
    ),
)
def test_vector_rounding_matches_scalar(
    name: str, mode: str, satfinite: bool, values: list[tuple[bool, int, int]]
) -> None:
    fmt = FORMATS[name]
    if fmt.name == ".f64":
        values = [(n, m, max(e, -1100)) for n, m, e in values]
    neg = np.array([v[0] for v in values])
    mant = np.array([v[1] for v in values], dtype=np.uint64)
    exp = np.array([v[2] for v in values], dtype=np.int64)
    got = fl._encode(neg, mant, exp, fmt, mode, satfinite)
    for i, (n, m, e) in enumerate(values):
        assert int(got[i]) == fl._encode_int(n, m, e, fmt, mode, satfinite), (name, mode, n, m, e)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_MODES), st.lists(st.integers(0, 0x7F7FFFFF), min_size=6, max_size=6))
def test_sqrt_is_correctly_rounded(mode: str, xs: list[int]) -> None:
    got = fp("sqrt", ".f32", xs, rounding=mode)
    for x, g in zip(xs, got, strict=True):
        v = Fraction(val32(x))
        if v == 0:
            assert g == x
            continue
        assert g == fl._round_sqrt(v, FORMATS[".f32"], mode[1:])
        lo = Fraction(val32(g))
        assert (lo * lo <= v) if mode in (".rz", ".rm") else True
