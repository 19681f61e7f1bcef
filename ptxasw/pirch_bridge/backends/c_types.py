"""How each LLVM type of a lifted module is held in C with AVX-512 intrinsics.

An InfReg ``<L x T>`` is split into native 512-bit chunks, each a C local
(``__m512i``/``__m512``/``__m512d``) so that gcc keeps it in a register;
a vector narrower than 512 bits is one chunk whose spare lanes are
don't-care. Lane masks ``<L x i1>`` are 64-lane words (``uint64_t``), whose
bits past ``L`` are always zero, so ``bitcast <L x i1> to iL`` is free and
an ``__mmask`` for a data chunk is a shift of one word. Scalars are C
integers zero-extended to their width, integers wider than 64 bits words
like masks. `Layout` records that; `layout_of` builds it from the type.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxasw.errors import PtxError

__all__ = ["ELEMENTS", "Element", "Layout", "layout_of", "mask_type"]


@dataclass(frozen=True)
class Element:
    """A vector element type: width, C chunk type, GCC vector type (subscripts),
    intrinsic suffix, scalar C type, and whether it is a float."""

    name: str
    bits: int
    chunk: str
    gvec: str
    suffix: str
    scalar: str
    is_float: bool = False

    @property
    def per(self) -> int:
        """Lanes per 512-bit chunk."""
        return 512 // self.bits

    @property
    def isuffix(self) -> str:
        """The integer suffix of the same width (masks, blends of the bits)."""
        return f"epi{self.bits}"


ELEMENTS = {
    "i8": Element("i8", 8, "__m512i", "__v64qi", "epi8", "uint8_t"),
    "i16": Element("i16", 16, "__m512i", "__v32hi", "epi16", "uint16_t"),
    "i32": Element("i32", 32, "__m512i", "__v16si", "epi32", "uint32_t"),
    "i64": Element("i64", 64, "__m512i", "__v8di", "epi64", "uint64_t"),
    "float": Element("float", 32, "__m512", "__v16sf", "ps", "float", True),
    "double": Element("double", 64, "__m512d", "__v8df", "pd", "double", True),
}


def mask_type(per: int) -> str:
    """The ``__mmask`` type of a chunk of ``per`` lanes."""
    return {8: "__mmask8", 16: "__mmask16", 32: "__mmask32", 64: "__mmask64"}[per]


@dataclass(frozen=True)
class Layout:
    """The C variables (``parts``, each of C type ``ctype``) holding one LLVM value.

    ``kind``: ``vec`` (data chunks of `element`), ``mask`` (64-lane words),
    ``int`` (a scalar of ``bits``; ``parts`` > 1: 64-bit words), ``float``,
    ``double``, ``ptr``, ``struct`` (one part per field, ``fields``), ``void``."""

    kind: str
    ctype: str
    parts: int
    bits: int = 0
    lanes: int = 0
    element: Element | None = None
    fields: tuple[Layout, ...] = ()

    @property
    def per(self) -> int:
        return 64 if self.kind == "mask" else self.element.per if self.element else 1

    def valid(self, chunk: int) -> int:
        """How many lanes of ``chunk`` are lanes of the vector."""
        return max(0, min(self.per, self.lanes - chunk * self.per))


def _element_of(t: ll.Type) -> Element | None:
    if isinstance(t, ll.IntType) and t.width in (8, 16, 32, 64):
        return ELEMENTS[f"i{t.width}"]
    if isinstance(t, ll.PointerType):
        return ELEMENTS["i64"]
    if isinstance(t, ll.FloatType):
        return ELEMENTS["float"]
    if isinstance(t, ll.DoubleType):
        return ELEMENTS["double"]
    return None


def layout_of(t: ll.Type) -> Layout:
    """The C representation of ``t``; a type it cannot hold is a `PtxError`."""
    if isinstance(t, ll.VoidType):
        return Layout("void", "void", 0)
    if isinstance(t, ll.VectorType):
        n = t.count
        if isinstance(t.element, ll.IntType) and t.element.width == 1:
            return Layout("mask", "uint64_t", -(-n // 64), 1, n)
        el = _element_of(t.element)
        if el is None:
            raise PtxError(f"avx512: vectors of {t.element} are not translated")
        return Layout("vec", el.chunk, -(-n // el.per), el.bits, n, el)
    if isinstance(t, ll.IntType):
        w = t.width
        if w <= 32:
            return Layout("int", "uint32_t", 1, w)
        if w <= 64:
            return Layout("int", "uint64_t", 1, w)
        return Layout("int", "uint64_t", -(-w // 64), w)
    if isinstance(t, ll.FloatType):
        return Layout("float", "float", 1, 32)
    if isinstance(t, ll.DoubleType):
        return Layout("double", "double", 1, 64)
    if isinstance(t, ll.PointerType):
        return Layout("ptr", "uint8_t *", 1, 64)
    if isinstance(t, ll.LiteralStructType):
        fields = tuple(layout_of(e) for e in t.elements)
        if any(f.parts != 1 or f.kind in ("vec", "mask", "struct") for f in fields):
            raise PtxError(f"avx512: the aggregate {t} is not translated")
        return Layout("struct", "", len(fields), fields=fields)
    raise PtxError(f"avx512: values of type {t} are not translated")
