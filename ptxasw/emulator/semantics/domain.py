"""The abstract value domain that PTX semantics are written over.

Instruction semantics (``semantics.py``) are written once, against this
protocol, and run in two domains:

- ``concrete.ConcreteDomain``: a value is the bit pattern of one register in
  every lane of a warp (a NumPy ``uint64`` array, masked to the width); this is
  the reference interpreter that runs kernels on the CPU in CI.
- ``symbolic.SymbolicDomain``: a value is a Z3 bit-vector expression for one
  symbolic thread; this is what the shuffle analysis reasons with.

Everything is a fixed-width bit vector, as in PTX registers. Integer
operations wrap modulo 2**width; comparisons return 1-bit values (predicates).
Floating-point operations act on bit patterns through one entry point,
`Domain.fp`, so that the symbolic domain can keep them opaque (uninterpreted
functions) while the concrete domain computes IEEE results. An operation a
domain cannot express returns a fresh unknown value (``fresh``) and the
caller warns; no domain ever crashes on valid input.

What another lane of the warp holds is reached through five lane primitives
(`Domain.lane_index`, `lane_read`, `lane_ballot`, `lane_match`,
`lane_reduce`), over which ``semantics/collectives.py`` writes ``shfl``,
``vote``, ``match``, ``redux``, ``elect`` and ``bar.red`` once.

Widths above 64 bits (``.b128``) are not supported by the concrete domain;
they become unknown values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class FpOp:
    """A floating-point operation, identified by everything that changes its result.

    ``op``: add sub mul fma div sqrt rsqrt rcp min max abs neg sin cos lg2 ex2
    tanh copysign, cvt (conversion; see ``src``), setp-style compares go
    through `Domain.fp_compare` instead.
    ``type``: the PTX type of the result (``.f32``, ``.f64``, ``.f16``,
    ``.bf16``, ``.f16x2``, ``.bf16x2``; for conversions to integers the integer
    type). ``src``: the source type of a conversion, else None.
    ``rounding``: ``.rn .rz .rm .rp`` (float rounding), ``.rni .rzi .rmi .rpi``
    (round to integral), or None (the instruction's default).
    ``ftz``/``sat``/``approx``/``relu``/``nan``/``satfinite``: the modifiers of that name.
    """

    op: str
    type: str
    src: str | None = None
    rounding: str | None = None
    ftz: bool = False
    sat: bool = False
    approx: bool = False
    relu: bool = False
    nan: bool = False
    # Minimal addition (semantics/concrete work): ``.satfinite`` of conversions
    # to .f16/.bf16/.tf32 and the narrow formats clamps infinities and
    # overflows to the largest finite value, which ``sat`` ([0, 1]) cannot say.
    satfinite: bool = False


class Domain(Protocol[V]):
    """Operations on fixed-width bit vectors, the same for every domain."""

    name: str

    # ---- making values ---------------------------------------------------
    def const(self, value: int, width: int) -> V:
        """The constant ``value mod 2**width`` (negative values wrap)."""
        ...

    def fresh(self, hint: str, width: int) -> V:
        """A value nothing is known about (symbolic: a new variable)."""
        ...

    def width(self, a: V) -> int: ...

    # ---- integer arithmetic (operands of equal width; results wrap) ----------
    def add(self, a: V, b: V) -> V: ...
    def sub(self, a: V, b: V) -> V: ...
    def mul(self, a: V, b: V) -> V: ...
    def neg(self, a: V) -> V: ...

    def udiv(self, a: V, b: V) -> V:
        """Unsigned quotient; x/0 is all ones (what the GPU returns)."""
        ...

    def urem(self, a: V, b: V) -> V:
        """Unsigned remainder; x%0 is all ones (corrected: measured on an H200)."""
        ...

    def sdiv(self, a: V, b: V) -> V:
        """Signed quotient rounded towards zero; x/0 is -1 (all ones); MIN/-1 is MIN."""
        ...

    def srem(self, a: V, b: V) -> V:
        """Signed remainder with the sign of the dividend; x%0 is all ones
        (corrected from "x": the GPU returns -1, measured on an H200)."""
        ...

    # ---- bitwise ---------------------------------------------------------------
    def and_(self, a: V, b: V) -> V: ...
    def or_(self, a: V, b: V) -> V: ...
    def xor(self, a: V, b: V) -> V: ...
    def not_(self, a: V) -> V: ...

    def shl(self, a: V, b: V) -> V:
        """``a << b``; b is an unsigned amount of a's width; b >= width gives 0."""
        ...

    def lshr(self, a: V, b: V) -> V:
        """Logical right shift; b >= width gives 0."""
        ...

    def ashr(self, a: V, b: V) -> V:
        """Arithmetic right shift; b >= width gives all sign bits."""
        ...

    # ---- comparisons and selection (1-bit results) -----------------------------
    def eq(self, a: V, b: V) -> V: ...
    def ult(self, a: V, b: V) -> V: ...
    def slt(self, a: V, b: V) -> V: ...

    def ite(self, cond: V, a: V, b: V) -> V:
        """``cond ? a : b`` with a 1-bit ``cond``, lane by lane."""
        ...

    # ---- width changes -------------------------------------------------------------
    def zext(self, a: V, width: int) -> V: ...
    def sext(self, a: V, width: int) -> V: ...

    def extract(self, a: V, hi: int, lo: int) -> V:
        """Bits ``hi..lo`` inclusive (width ``hi - lo + 1``)."""
        ...

    def concat(self, hi: V, lo: V) -> V: ...

    # ---- bit counting ----------------------------------------------------------------
    def popc(self, a: V) -> V:
        """Number of set bits, as a value of a's width."""
        ...

    def clz(self, a: V) -> V:
        """Leading zeros (width for 0), as a value of a's width."""
        ...

    def brev(self, a: V) -> V: ...

    # ---- floating point on bit patterns --------------------------------------------------
    def fp(self, op: FpOp, *args: V) -> V:
        """The IEEE (or approximate, per PTX) result of ``op`` applied to ``args``."""
        ...

    def fp_compare(self, cmp: str, type: str, a: V, b: V) -> V:
        """A ``setp``-style float comparison (``eq ne lt le gt ge equ neu ltu leu gtu geu num nan``)."""
        ...

    # ---- the other lanes of the warp -------------------------------------------------------
    # Warp collectives (``semantics/collectives.py``) are written over these four
    # primitives. A lane mask (``part``) is a 32-bit value whose bit l names lane l
    # of this lane's warp; each lane may hold its own (the collectives pass
    # ``active & guard & membermask``, which is warp-uniform in valid PTX).
    def lane_index(self) -> V:
        """This lane's index in its warp (``%laneid``), 32 bits."""
        ...

    def lane_read(self, value: V, src: V) -> V:
        """``value`` as held by lane ``src`` (32 bits, 0..31) of this lane's warp;
        for ``src`` past 31 the result is unspecified (the concrete domain reads
        lane ``src & 31``), so callers select it only where ``src`` is in range.

        Concrete: a gather within each warp. Symbolic: the expression with
        the thread's ids (``%tid``, ``%laneid``, ``%lanemask_*``) replaced by
        those of the source lane's thread.
        """
        ...

    def lane_ballot(self, pred: V, part: V) -> V:
        """The 32-bit mask of lanes l in ``part`` whose 1-bit ``pred`` is 1."""
        ...

    def lane_match(self, value: V, part: V) -> V:
        """The 32-bit mask of lanes l in ``part`` whose ``value`` equals this lane's."""
        ...

    def lane_reduce(self, op: str, value: V, part: V) -> V:
        """``op`` over ``value`` of the lanes in ``part``, the same in every lane.

        ``op``: ``add and or xor smin smax umin umax`` (``add`` wraps to the
        value's width). An empty ``part`` gives 0 (what the interpreter has
        always returned; valid PTX never reduces over no lanes).
        """
        ...


# Derived operations, written once for every domain.


def ne(d: Domain[V], a: V, b: V) -> V:
    return d.not_(d.eq(a, b))


def ule(d: Domain[V], a: V, b: V) -> V:
    return d.not_(d.ult(b, a))


def ugt(d: Domain[V], a: V, b: V) -> V:
    return d.ult(b, a)


def uge(d: Domain[V], a: V, b: V) -> V:
    return d.not_(d.ult(a, b))


def sle(d: Domain[V], a: V, b: V) -> V:
    return d.not_(d.slt(b, a))


def sgt(d: Domain[V], a: V, b: V) -> V:
    return d.slt(b, a)


def sge(d: Domain[V], a: V, b: V) -> V:
    return d.not_(d.slt(a, b))


def resize(d: Domain[V], a: V, width: int, signed: bool) -> V:
    """Truncate or extend ``a`` to ``width`` bits."""
    current = d.width(a)
    if current == width:
        return a
    if current > width:
        return d.extract(a, width - 1, 0)
    return d.sext(a, width) if signed else d.zext(a, width)
