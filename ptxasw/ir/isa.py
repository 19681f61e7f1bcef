"""The PTX instruction table: what every opcode reads, writes and touches.

The parser lexes a mnemonic such as ``ld.global.nc.v4.f32`` as one token and
asks :func:`split_mnemonic` to cut it into the opcode (``ld``) and its
modifiers. Every later stage (emulator, CFG, liveness, shuffle synthesis)
asks this module what an instruction means instead of looking at its text:
which operands are written (:func:`defs`), which are read (:func:`uses`),
their PTX types (:func:`operand_infos`), the state space and width of a
memory access, and whether the instruction branches, synchronises or needs
the other lanes of its warp.

Design
------
The table is data: one :class:`OpcodeSpec` per opcode, built by :func:`_op`
from a short operand signature such as ``"=d, a:S, b:S"``. Signatures are a
tiny language so that the irregular instructions (``setp p|q``,
``shfl d|p``, ``mul.wide``, ``cvt``, ``mma``...) are still one line each:

* operands are separated by ``,``; ``;`` separates alternative forms, which
  are chosen by operand count (and by whether the operands in address
  positions really are ``[...]``);
* ``=x`` is written (DEF), ``+x`` is read and written (DEFUSE), a bare name
  is read (USE); ``[x]`` is an address (always read);
* ``x|y`` is the two-result form (``%p|%q``); each side has its own role
  and type, and a plain operand in that position is the first side;
* ``:TYPE`` gives the operand's type: a literal PTX type (``.pred``,
  ``.u32``), ``-`` for none, or a *type token* resolved from the
  instruction's type modifiers (``T`` the first type, ``S`` the second or
  first, ``T2``/``T3`` the third/fourth, ``W`` twice the width of ``T``,
  ``SPLIT`` the element type of a ``mov`` pack/unpack, ``MD``/``MA``/``MB``/
  ``MC`` the register types of matrix fragments...). No ``:`` means ``T``;
* ``*`` accepts any number of further read operands.

Conditional forms (``when``) apply only when a modifier is present, e.g.
``atom.cas`` takes one more source than the other atomic operations.

Opcode names follow one rule: a dotted name is a separate opcode only when
its later parts name a different instruction (``cp.async.bulk``,
``bar.warp.sync``, ``mbarrier.arrive``, ``tcgen05.wait::ld``), never when they
are modifiers that ptxas accepts in any order (``bar.sync`` is ``bar`` with
``.sync``, ``shfl.sync`` is ``shfl`` with ``.sync``, ``add.cc`` is ``add`` with
``.cc``). Since type modifiers keep their relative order (``cvt.f32.s32``
converts from ``.s32`` to ``.f32``), the order of *types* is significant and
everything else is a set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from enum import Flag, StrEnum
from functools import lru_cache

from ptxasw.ir import (
    Address,
    BinaryExpr,
    CallExpr,
    FloatImm,
    Instruction,
    IntImm,
    ListOperand,
    Negated,
    Operand,
    PairOperand,
    ParenExpr,
    ParenOperand,
    Register,
    Sink,
    Symbol,
    UnaryExpr,
    VectorOperand,
)

__all__ = [
    "Family",
    "MemoryEffect",
    "ModifierKind",
    "OpcodeSpec",
    "OperandInfo",
    "Role",
    "UnknownOpcode",
    "access_bytes",
    "allows_wide_registers",
    "branch_targets",
    "classify_modifier",
    "computes_registers",
    "defs",
    "immediate_fits",
    "instruction_family",
    "instruction_problems",
    "instruction_type",
    "instruction_types",
    "is_atomic",
    "is_branch",
    "is_call",
    "is_load",
    "is_return",
    "is_special_register",
    "is_store",
    "lookup",
    "memory_effect",
    "opcodes",
    "operand_infos",
    "reads_carry",
    "register_fits",
    "source_type",
    "special_register_type",
    "split_mnemonic",
    "state_space",
    "state_spaces",
    "type_bits",
    "typed_defs",
    "typed_uses",
    "unknown_modifiers",
    "uses",
    "vector_width",
    "writes_carry",
]


# --------------------------------------------------------------------------
# Enumerations


class Family(StrEnum):
    """The ISA chapter an opcode belongs to (see :func:`instruction_family`
    for the per-instruction refinement into FLOAT/HALF by type)."""

    INTEGER = "integer"
    FLOAT = "float"
    HALF = "half"
    COMPARISON = "comparison"
    LOGIC = "logic"
    DATA = "data"
    CONVERSION = "conversion"
    MEMORY = "memory"
    ASYNC_COPY = "async_copy"
    ATOMIC = "atomic"
    TEXTURE = "texture"
    SURFACE = "surface"
    CONTROL = "control"
    SYNC = "sync"
    WARP = "warp"
    MATRIX = "matrix"
    VIDEO = "video"
    STACK = "stack"
    MISC = "misc"


class Role(StrEnum):
    """How an instruction treats one operand."""

    DEF = "def"
    USE = "use"
    DEFUSE = "defuse"


class MemoryEffect(Flag):
    """What an opcode does to memory.

    ATOMIC marks a read-modify-write (always together with READ|WRITE);
    ASYNC marks an effect that completes after the instruction retires
    (cp.async*, wgmma, tcgen05, st.async...); FENCE marks ordering of other
    memory operations (fences, barriers, waits on asynchronous groups).
    """

    NONE = 0
    READ = 1
    WRITE = 2
    ATOMIC = 4
    ASYNC = 8
    PREFETCH = 16
    FENCE = 32


class ModifierKind(StrEnum):
    TYPE = "type"
    STATE_SPACE = "state_space"
    VECTOR = "vector"
    ROUNDING = "rounding"
    COMPARE = "compare"
    BOOL_OP = "bool_op"
    CACHE = "cache"
    EVICTION = "eviction"
    SCOPE = "scope"
    SEMANTICS = "semantics"
    SATURATE = "saturate"
    FTZ = "ftz"
    APPROX = "approx"
    MODE = "mode"
    SHAPE = "shape"
    LAYOUT = "layout"
    OTHER = "other"


class UnknownOpcode(ValueError):
    """Raised by :func:`split_mnemonic` when no dotted prefix names an opcode."""

    def __init__(self, text: str) -> None:
        super().__init__(f"unknown PTX opcode in mnemonic {text!r}")
        self.text = text


_M = MemoryEffect
_RW = _M.READ | _M.WRITE
_RMW = _M.READ | _M.WRITE | _M.ATOMIC


# --------------------------------------------------------------------------
# Types and modifier vocabulary


def _set(words: str) -> frozenset[str]:
    """A vocabulary set written as one space-separated string."""
    return frozenset(words.split())


def _bits_table() -> dict[str, int | None]:
    table: dict[str, int | None] = {".pred": 1, ".b1": 1}
    for w in (8, 16, 32, 64):
        table[f".b{w}"] = table[f".u{w}"] = table[f".s{w}"] = w
    table.update({".b128": 128, ".b1024": 1024, ".u2": 2, ".s2": 2, ".u4": 4, ".s4": 4})
    table.update({".u16x2": 32, ".s16x2": 32})
    table.update({".f16": 16, ".bf16": 16, ".f16x2": 32, ".bf16x2": 32})
    table.update({".f32": 32, ".f64": 64, ".tf32": 32, ".f32x2": 64})
    # Narrow floating-point formats and their x2/x4 packs; fp6 (e2m3, e3m2)
    # values take a byte each in registers, fp4 (e2m1) half a byte.
    for name, bits in (
        ("e4m3", 8),
        ("e5m2", 8),
        ("e2m3", 8),
        ("e3m2", 8),
        ("e2m1", 4),
        ("ue8m0", 8),
        ("ue4m3", 8),
    ):
        table[f".{name}"] = bits
        table[f".{name}x2"] = 2 * bits if bits == 8 else 8
        table[f".{name}x4"] = 4 * bits if bits == 8 else 16
    # Packed tensor-core source formats (ldmatrix / tcgen05.cp decompression).
    table.update({".b8x16": 128, ".b6x16_p32": 128, ".b4x16_p64": 128, ".b6p2x16": 128})
    # Opaque handle types (istypep).
    table.update({".texref": None, ".samplerref": None, ".surfref": None})
    return table


_TYPE_BITS: dict[str, int | None] = _bits_table()
_TYPES = frozenset(_TYPE_BITS)

_STATE_SPACES = _set(
    ".global .shared .shared::cta .shared::cluster .local .const .param "
    ".param::entry .param::func .tex .reg .sreg"
)
_VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}
_ROUNDING = _set(".rn .rz .rm .rp .rni .rzi .rmi .rpi .rna .rs")
_COMPARE = _set(".eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan")
_BOOL = frozenset({".and", ".or", ".xor"})
_CACHE = _set(".ca .cg .cs .lu .cv .wb .wt .nc .L1 .L2 .L2::cache_hint .L2::64B .L2::128B .L2::256B")
_EVICTION = _set(
    ".L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last "
    ".L1::no_allocate .L2::evict_normal .L2::evict_first .L2::evict_last "
    ".L2::evict_unchanged"
)
_SCOPE = _set(".cta .cluster .gpu .sys .gl")
_SEMANTICS = _set(".relaxed .acquire .release .acq_rel .sc .volatile .weak .mmio")
_SATURATE = frozenset({".sat", ".satfinite"})
_FTZ = frozenset({".ftz", ".noftz"})
_APPROX = frozenset({".approx", ".full"})
_LAYOUT = frozenset({".row", ".col", ".trans"})
_GEOMETRY = _set(".1d .2d .3d .4d .5d .a1d .a2d .cube .acube .2dms .a2dms")
_SHAPE_RE = re.compile(r"\.(?:m\d+n\d+(?:k\d+)?|x\d+|\d+x\d+b(?:x2)?|[1-5]d|a[12]d|a?cube|a?2dms)")
# Operation words of atomics and reductions: with these opcodes .and/.or/.xor
# name an operation (MODE), not the boolean combiner of setp (BOOL_OP).
_OP_WORD_OPCODES = _set(
    "atom red red.async redux multimem.ld_reduce multimem.red "
    "cp.reduce.async.bulk cp.reduce.async.bulk.tensor sured"
)
_COMPARE_OPCODES = _set("set setp vset vset2 vset4")


def type_bits(ptx_type: str | None) -> int | None:
    """Bits of one value of a PTX type (``.f16x2`` -> 32, ``.e2m1x2`` -> 8)."""
    if ptx_type is None:
        return None
    return _TYPE_BITS.get(ptx_type)


@lru_cache(maxsize=4096)
def classify_modifier(modifier: str, opcode: str | None = None) -> ModifierKind:
    """Classify one modifier (with its leading dot).

    A few words mean different things to different opcodes: ``.lo``/``.hi``
    are MODE (``mul.lo``) except for comparisons where they are unsigned
    compare operators (``setp.lo``); ``.and``/``.or``/``.xor`` are BOOL_OP
    except for atomics and reductions where they are the operation (MODE).
    Pass ``opcode`` to get the context-dependent answer.
    """
    if modifier in _TYPES:
        return ModifierKind.TYPE
    if modifier in _STATE_SPACES:
        return ModifierKind.STATE_SPACE
    if modifier in _VECTORS:
        return ModifierKind.VECTOR
    if modifier in _ROUNDING:
        return ModifierKind.ROUNDING
    if modifier in _COMPARE:
        if modifier in (".lo", ".hi") and opcode not in _COMPARE_OPCODES:
            return ModifierKind.MODE
        return ModifierKind.COMPARE
    if modifier in _BOOL:
        return ModifierKind.MODE if opcode in _OP_WORD_OPCODES else ModifierKind.BOOL_OP
    if modifier in _EVICTION:
        return ModifierKind.EVICTION
    if modifier in _CACHE:
        return ModifierKind.CACHE
    if modifier in _SCOPE:
        return ModifierKind.SCOPE
    if modifier in _SEMANTICS:
        return ModifierKind.SEMANTICS
    if modifier in _SATURATE:
        return ModifierKind.SATURATE
    if modifier in _FTZ:
        return ModifierKind.FTZ
    if modifier in _APPROX:
        return ModifierKind.APPROX
    if modifier in _LAYOUT:
        return ModifierKind.LAYOUT
    if modifier in _GEOMETRY or _SHAPE_RE.fullmatch(modifier):
        return ModifierKind.SHAPE
    if modifier in _ALL_MODE_WORDS:
        return ModifierKind.MODE
    return ModifierKind.OTHER


# --------------------------------------------------------------------------
# Operand signatures


@dataclass(frozen=True, slots=True)
class OperandInfo:
    """What one operand is to its instruction.

    ``type`` is the PTX type of the register(s) in that position (for a
    vector, of each element); None for labels, symbols, addresses and
    positions that mix types (``shfl``'s ``d|p``).
    """

    role: Role
    type: str | None
    is_address: bool = False


@dataclass(frozen=True, slots=True)
class _Slot:
    """One position of a signature (see the module docstring)."""

    role: Role
    type: str  # a type token or a literal PTX type; "-" for none
    is_address: bool = False
    second: _Slot | None = None  # the right-hand side of ``x|y``
    rest: bool = False  # ``*``: any number of further read operands


_Sig = tuple[_Slot, ...]
_Form = tuple[str | None, tuple[_Sig, ...]]
_REST = _Slot(Role.USE, "-", rest=True)


def _parse_slot(token: str) -> _Slot:
    token = token.strip()
    if token == "*":
        return _REST
    if "|" in token:
        left, right = token.split("|", 1)
        return replace(_parse_slot(left), second=_parse_slot(right))
    role = Role.USE
    if token.startswith("="):
        role, token = Role.DEF, token[1:]
    elif token.startswith("+"):
        role, token = Role.DEFUSE, token[1:]
    if token.startswith("["):
        return _Slot(role, "-", is_address=True)
    _, _, typ = token.partition(":")
    return _Slot(role, typ or "T")


def _parse_sigs(text: str) -> tuple[_Sig, ...]:
    """``"=d, a; =d, a, b"`` -> two signatures. An empty text is one empty form."""
    sigs = []
    for form in text.split(";"):
        form = form.strip()
        sigs.append(tuple(_parse_slot(t) for t in form.split(",")) if form else ())
    return tuple(sigs)


# --------------------------------------------------------------------------
# The opcode specification


_SlotsFn = Callable[[tuple[str, ...], tuple[str, ...]], tuple[_Slot, ...]]


@dataclass(frozen=True, slots=True)
class OpcodeSpec:
    """Everything the table knows about one opcode.

    ``forms`` holds the parsed operand signatures, conditional ones first
    (``(modifier, sigs)``; ``None`` for the default); ``signature`` is the
    default signature as written, for documentation. ``modifiers`` and
    ``modifier_patterns`` are what ``unknown_modifiers`` accepts besides type
    modifiers, which every opcode accepts. ``implicit_space`` names the
    memory an instruction touches without naming it (texture, surface and
    tensor memory). ``slots_fn`` replaces the signature for instructions
    whose operand roles depend on their operands' shapes (``call``).
    """

    name: str
    family: Family
    summary: str
    min_ptx: tuple[int, int]
    memory: MemoryEffect
    control_flow: bool
    warp_collective: bool
    barrier: bool
    signature: str = ""
    forms: tuple[_Form, ...] = ()
    modifiers: frozenset[str] = frozenset()
    modifier_patterns: tuple[re.Pattern[str], ...] = ()
    implicit_space: str | None = None
    slots_fn: _SlotsFn | None = None


# Modifier groups usable in the ``mods`` string of _op (the words without a leading dot).
_GROUPS: dict[str, frozenset[str]] = {
    "RND": _set(".rn .rz .rm .rp"),
    "IRND": _set(".rni .rzi .rmi .rpi"),
    "SEM": _SEMANTICS,
    "SCOPE": _set(".cta .cluster .gpu .sys"),
    "SPACE": _STATE_SPACES,
    "VEC": frozenset(_VECTORS),
    "COP": _set(".ca .cg .cs .lu .cv .wb .wt .nc"),
    "EVICT": _EVICTION,
    "L2": _set(".L2::cache_hint .L2::64B .L2::128B .L2::256B"),
    "CMP": _COMPARE,
    "BOOL": _BOOL,
    "AOP": _set(".and .or .xor .cas .exch .add .inc .dec .min .max"),
    "SYNC": frozenset({".sync", ".aligned"}),
    "LAYOUT": frozenset({".row", ".col"}),
    "GEOM": _GEOMETRY,
    "CTAG": frozenset({".cta_group::1", ".cta_group::2"}),
    "TXQ": _set(
        ".width .height .depth .channel_data_type .channel_order "
        ".normalized_coords .filter_mode .addr_mode_0 .addr_mode_1 .addr_mode_2 "
        ".num_samples .array_size .num_mipmap_levels .force_unnormalized_coords "
        ".memory_layout .level"
    ),
    "LOADMODE": _set(
        ".tile .tile::gather4 .tile::scatter4 .im2col .im2col::w .im2col::w::128 .im2col_no_offs"
    ),
    "BULK": _set(".mbarrier::complete_tx::bytes .bulk_group .multicast::cluster .L2::cache_hint .cp_mask"),
    "KIND": _set(
        ".kind::f16 .kind::tf32 .kind::f8f6f4 .kind::i8 .kind::mxf8f6f4 .kind::mxf4 .kind::mxf4nvf4"
    ),
    "SCALE": _set(".block_scale .scale_vec::1X .scale_vec::2X .scale_vec::4X .block16 .block32"),
    "SURF": _set(".b .p .trap .clamp .zero"),
}

# Regex patterns usable in ``mods`` (words starting with "~" name one here).
_PATTERNS: dict[str, re.Pattern[str]] = {
    "~MMASHAPE": re.compile(r"\.m\d+n\d+k\d+"),
    "~MATSHAPE": re.compile(r"\.m\d+n\d+"),
    "~COUNT": re.compile(r"\.x\d+"),
    "~TMEMSHAPE": re.compile(r"\.\d+x\d+b(?:x2)?"),
    "~COLLECTOR": re.compile(r"\.collector::(?:a|b[0-3])::(?:fill|use|lastuse|discard)"),
}

_TABLE: dict[str, OpcodeSpec] = {}
_ALL_MODE_WORDS: set[str] = set()


def _words(text: str) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    words: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for word in text.split():
        if word.startswith("~"):
            patterns.append(_PATTERNS[word])
        elif word[0].isalpha():
            words |= _GROUPS[word]
        else:
            words.add(word)
    return frozenset(words), tuple(patterns)


def _op(
    name: str,
    family: Family,
    summary: str,
    min_ptx: tuple[int, int],
    sig: str = "",
    *,
    when: Iterable[tuple[str, str]] = (),
    mods: str = "",
    mem: MemoryEffect = _M.NONE,
    cf: bool = False,
    warp: bool = False,
    bar: bool = False,
    space: str | None = None,
    slots_fn: _SlotsFn | None = None,
) -> None:
    """Add one opcode to the table (see the module docstring for ``sig``)."""
    if name in _TABLE:
        raise ValueError(f"duplicate opcode {name}")
    forms: list[_Form] = [(cond, _parse_sigs(text)) for cond, text in when]
    forms.append((None, _parse_sigs(sig)))
    allowed, patterns = _words(mods)
    for word in allowed:
        if word not in _TYPES and word not in _STATE_SPACES:
            _ALL_MODE_WORDS.add(word)
    _TABLE[name] = OpcodeSpec(
        name=name,
        family=family,
        summary=summary,
        min_ptx=min_ptx,
        memory=mem,
        control_flow=cf,
        warp_collective=warp,
        barrier=bar,
        signature=sig,
        forms=tuple(forms),
        modifiers=allowed,
        modifier_patterns=patterns,
        implicit_space=space,
        slots_fn=slots_fn,
    )


def _call_slots(_modifiers: tuple[str, ...], kinds: tuple[str, ...]) -> tuple[_Slot, ...]:
    """``call`` operands depend on their shapes, not on modifiers.

    ``call (r1, r2), f, (a, b), proto;`` -- the first parenthesised list
    is the return list (written) only when it comes first; ``call f, (a);``
    and ``call (r), f;`` both exist. Everything else (callee, arguments,
    prototype or target list) is read.
    """
    slots: list[_Slot] = []
    for i, kind in enumerate(kinds):
        if i == 0 and kind == "(":
            slots.append(_Slot(Role.DEF, "-"))
        else:
            slots.append(_Slot(Role.USE, "-"))
    return tuple(slots)


_F = Family

# The table is laid out by hand, one entry per opcode, so the formatter keeps out.
# fmt: off
# ---- Integer arithmetic (also the float forms of the shared opcodes) ----
_ARITH = "RND .ftz .sat"
_op("add", _F.INTEGER, "Add; integer, float, packed and mixed-precision forms.", (1, 0),
    "=d, a:S, b", mods=f"{_ARITH} .cc")
_op("sub", _F.INTEGER, "Subtract; integer, float, packed and mixed-precision forms.", (1, 0),
    "=d, a:S, b", mods=f"{_ARITH} .cc")
_op("mul", _F.INTEGER, "Multiply; .lo/.hi halves or .wide full product for integers.", (1, 0),
    "=d, a, b", when=[(".wide", "=d:W, a, b")], mods=f"{_ARITH} .lo .hi .wide")
_op("mad", _F.INTEGER, "Multiply-add; .lo/.hi/.wide for integers, rounded for floats.", (1, 0),
    "=d, a, b, c", when=[(".wide", "=d:W, a, b, c:W")], mods=f"{_ARITH} .lo .hi .wide .cc")
_op("mul24", _F.INTEGER, "Multiply the low 24 bits of two integers.", (1, 0), "=d, a, b",
    mods=".lo .hi")
_op("mad24", _F.INTEGER, "Multiply the low 24 bits of two integers and add.", (1, 0), "=d, a, b, c",
    mods=".lo .hi .sat")
_op("sad", _F.INTEGER, "Sum of absolute difference: d = c + |a - b|.", (1, 0), "=d, a, b, c")
_op("div", _F.INTEGER, "Divide; integer or float (.approx/.full/.rn...).", (1, 0), "=d, a, b",
    mods="RND .ftz .approx .full")
_op("rem", _F.INTEGER, "Integer remainder.", (1, 0), "=d, a, b")
_op("abs", _F.INTEGER, "Absolute value.", (1, 0), "=d, a", mods=".ftz")
_op("neg", _F.INTEGER, "Arithmetic negation.", (1, 0), "=d, a", mods=".ftz .sat")
_op("min", _F.INTEGER, "Minimum (two inputs, or three for .f32 from PTX 8.8).", (1, 0),
    "=d, a, b; =d, a, b, c", mods=".ftz .NaN .xorsign .abs .relu")
_op("max", _F.INTEGER, "Maximum (two inputs, or three for .f32 from PTX 8.8).", (1, 0),
    "=d, a, b; =d, a, b, c", mods=".ftz .NaN .xorsign .abs .relu")
_op("popc", _F.INTEGER, "Population count.", (2, 0), "=d:.u32, a")
_op("clz", _F.INTEGER, "Count leading zeros.", (2, 0), "=d:.u32, a")
_op("bfind", _F.INTEGER, "Find the most significant non-sign bit.", (2, 0), "=d:.u32, a",
    mods=".shiftamt")
_op("fns", _F.INTEGER, "Find the n-th set bit of a mask.", (6, 0),
    "=d:.b32, m:.b32, b:.u32, o:.s32")
_op("brev", _F.INTEGER, "Reverse the bits.", (2, 0), "=d, a")
_op("bfe", _F.INTEGER, "Extract a bit field (position b, length c).", (2, 0),
    "=d, a, b:.u32, c:.u32")
_op("bfi", _F.INTEGER, "Insert bit field a into b at position c with length d.", (2, 0),
    "=f, a, b, c:.u32, d:.u32")
_op("szext", _F.INTEGER, "Sign- or zero-extend from a bit position.", (7, 6), "=d, a, b:.u32",
    mods=".clamp .wrap")
_op("bmsk", _F.INTEGER, "Build a bit mask from a position and width.", (7, 6), "=d, a:.u32, b:.u32",
    mods=".clamp .wrap")
_op("dp4a", _F.INTEGER, "Four-way byte dot product with 32-bit accumulate.", (5, 0),
    "=d:DP, a:T, b:S, c:DP")
_op("dp2a", _F.INTEGER, "Two-way 16x8-bit dot product with 32-bit accumulate.", (5, 0),
    "=d:DP, a:T, b:S, c:DP", mods=".lo .hi")
_op("addc", _F.INTEGER, "Add with carry-in (and carry-out with .cc).", (1, 2), "=d, a, b",
    mods=".cc")
_op("subc", _F.INTEGER, "Subtract with borrow-in (and borrow-out with .cc).", (1, 3), "=d, a, b",
    mods=".cc")
_op("madc", _F.INTEGER, "Multiply-add with carry-in (and carry-out with .cc).", (3, 0),
    "=d, a, b, c", mods=".lo .hi .cc")

# ---- Floating point ----
_op("fma", _F.FLOAT, "Fused multiply-add, also packed/half and mixed precision.", (1, 4),
    "=d, a:S, b:S, c", mods="RND .ftz .sat .relu .oob")
_op("rcp", _F.FLOAT, "Reciprocal.", (1, 0), "=d, a", mods="RND .ftz .approx")
_op("sqrt", _F.FLOAT, "Square root.", (1, 0), "=d, a", mods="RND .ftz .approx")
_op("rsqrt", _F.FLOAT, "Reciprocal square root (approximate).", (1, 0), "=d, a",
    mods=".ftz .approx")
_op("sin", _F.FLOAT, "Sine (approximate).", (1, 0), "=d, a", mods=".ftz .approx")
_op("cos", _F.FLOAT, "Cosine (approximate).", (1, 0), "=d, a", mods=".ftz .approx")
_op("lg2", _F.FLOAT, "Base-2 logarithm (approximate).", (1, 0), "=d, a", mods=".ftz .approx")
_op("ex2", _F.FLOAT, "Base-2 exponential (approximate).", (1, 0), "=d, a", mods=".ftz .approx")
_op("tanh", _F.FLOAT, "Hyperbolic tangent (approximate).", (7, 0), "=d, a", mods=".approx")
_op("copysign", _F.FLOAT, "Copy the sign of a onto b.", (2, 0), "=d, a, b")
_op("testp", _F.FLOAT, "Test a float for a property (finite, NaN, normal...).", (2, 0),
    "=p:.pred, a", mods=".finite .infinite .number .notanumber .normal .subnormal")

# ---- Comparison and selection ----
_op("set", _F.COMPARISON, "Compare and write a boolean or integer mask.", (1, 0),
    "=d, a:S, b:S; =d, a:S, b:S, c:.pred", mods="CMP BOOL .ftz")
_op("setp", _F.COMPARISON, "Compare and set one predicate and optionally its negation.", (1, 0),
    "=p:.pred|=q:.pred, a, b; =p:.pred|=q:.pred, a, b, c:.pred", mods="CMP BOOL .ftz")
_op("selp", _F.COMPARISON, "Select a or b on a predicate.", (1, 0), "=d, a, b, c:.pred")
_op("slct", _F.COMPARISON, "Select a or b on the sign of c.", (1, 0), "=d, a, b, c:S", mods=".ftz")

# ---- Logic and shift ----
_op("and", _F.LOGIC, "Bitwise AND.", (1, 0), "=d, a, b")
_op("or", _F.LOGIC, "Bitwise OR.", (1, 0), "=d, a, b")
_op("xor", _F.LOGIC, "Bitwise XOR.", (1, 0), "=d, a, b")
_op("not", _F.LOGIC, "Bitwise complement.", (1, 0), "=d, a")
_op("cnot", _F.LOGIC, "C-style logical negation (1 if zero else 0).", (1, 0), "=d, a")
_op("lop3", _F.LOGIC, "Arbitrary three-input logic from an 8-bit truth table.", (4, 3),
    "=d, a, b, c, l:.b32; =d|=p:.pred, a, b, c, l:.b32, q:.pred", mods="BOOL")
_op("shf", _F.LOGIC, "Funnel shift of the 64-bit pair b:a.", (3, 1),
    "=d:.b32, a:.b32, b:.b32, c:.u32", mods=".l .r .clamp .wrap")
_op("shl", _F.LOGIC, "Shift left.", (1, 0), "=d, a, b:.u32")
_op("shr", _F.LOGIC, "Shift right (arithmetic for signed types).", (1, 0), "=d, a, b:.u32")

# ---- Data movement and conversion ----
_LDST = "SPACE COP EVICT L2 SEM SCOPE VEC"
_op("mov", _F.DATA,
    "Move a register, immediate, special register or address; also packs and unpacks vectors.",
    (1, 0), "=d:SPLIT, a:SPLIT", mods="VEC")
_op("shfl", _F.WARP, "Exchange registers between lanes of a warp.", (3, 0),
    "=d|=p:.pred, a, b:.b32, c:.b32; =d|=p:.pred, a, b:.b32, c:.b32, m:.b32",
    mods=".sync .up .down .bfly .idx", warp=True)
_op("prmt", _F.DATA, "Permute bytes from two 32-bit registers.", (2, 0), "=d, a, b, c:.b32",
    mods=".f4e .b4e .rc8 .ecl .ecr .rc16")
_op("ld", _F.MEMORY, "Load from a state space (also ld.global.nc).", (1, 0),
    "=d, [a]; =d, [a], p:.b64", mods=_LDST, mem=_M.READ)
_op("ldu", _F.MEMORY, "Load a value uniform across the warp.", (2, 0), "=d, [a]", mods="SPACE VEC",
    mem=_M.READ)
_op("st", _F.MEMORY, "Store to a state space.", (1, 0), "[a], b; [a], b, p:.b64", mods=_LDST,
    mem=_M.WRITE)
_op("st.async", _F.MEMORY,
    "Asynchronous store to distributed shared memory (completes on an mbarrier) or release store.",
    (8, 1), "[a], b, [m]; [a], b", mods="SPACE SEM SCOPE VEC .mbarrier::complete_tx::bytes",
    mem=_M.WRITE | _M.ASYNC)
_op("st.bulk", _F.MEMORY, "Initialise a shared-memory range (bulk store of zero).", (8, 6),
    "[a], s:.b64, v:.b64", mods="SPACE .weak", mem=_M.WRITE)
_op("multimem.ld_reduce", _F.MEMORY, "Load from all locations of a multimem address and reduce.",
    (8, 1), "=d, [a]", mods="SPACE SEM SCOPE AOP VEC .acc::f32 .acc::f16", mem=_M.READ)
_op("multimem.st", _F.MEMORY, "Store to all locations of a multimem address.", (8, 1), "[a], b",
    mods="SPACE SEM SCOPE VEC", mem=_M.WRITE)
_op("multimem.red", _F.ATOMIC, "Reduce into all locations of a multimem address.", (8, 1), "[a], b",
    mods="SPACE SEM SCOPE AOP VEC", mem=_RMW)
_op("prefetch", _F.MEMORY, "Prefetch a line into a cache level (or a tensormap).", (2, 0), "[a]",
    mods="SPACE EVICT .L1 .L2 .tensormap", mem=_M.PREFETCH)
_op("prefetchu", _F.MEMORY, "Prefetch a line into the uniform cache.", (2, 0), "[a]", mods=".L1",
    mem=_M.PREFETCH)
_op("applypriority", _F.MEMORY, "Change the L2 eviction priority of a range.", (7, 4),
    "[a], s:.u64", mods="SPACE EVICT .L2", mem=_M.PREFETCH)
_op("discard", _F.MEMORY, "Discard an L2 line; its memory becomes indeterminate.", (7, 4),
    "[a], s:.u64", mods="SPACE .L2", mem=_M.WRITE)
_op("createpolicy", _F.MEMORY, "Create a 64-bit cache eviction policy.", (7, 4),
    "=p:.b64; =p:.b64, f:.f32; =p:.b64, [a], s:.u32, t:.u32", when=[(".cvt", "=p:.b64, a:.b64")],
    mods="SPACE EVICT .fractional .range .cvt .L2")
_op("isspacep", _F.DATA, "Test whether a generic address falls in a state space.", (2, 0),
    "=p:.pred, a:-", mods="SPACE")
_op("cvta", _F.CONVERSION, "Convert an address between a state space and generic.", (2, 0), "=d, a",
    mods="SPACE .to")
_op("cvt", _F.CONVERSION, "Convert between types (destination type first).", (1, 0),
    "=d, a:S; =d, a:S, b:S", when=[(".rs", "=d, a:S, b:S, r:.b32; =d, a:S, r:.b32")],
    mods="RND IRND .rna .rs .ftz .sat .satfinite .relu")
_op("cvt.pack", _F.CONVERSION, "Convert two integers to narrow fields and pack them.", (6, 5),
    "=d:T2, a:S, b:S; =d:T2, a:S, b:S, c:T2", mods=".sat")
_op("mapa", _F.DATA, "Map a shared address to the same variable in another CTA.", (7, 8),
    "=d, a, b:.u32", mods="SPACE")
_op("getctarank", _F.DATA, "CTA rank in the cluster of a shared::cluster address.", (7, 8),
    "=d:.u32, a", mods="SPACE")

# ---- Asynchronous copies ----
_op("cp.async", _F.ASYNC_COPY, "Start an asynchronous global-to-shared copy.", (7, 0),
    "[d], [s], n:.u32; [d], [s], n:.u32, *", mods="SPACE .ca .cg L2", mem=_RW | _M.ASYNC)
_op("cp.async.commit_group", _F.ASYNC_COPY, "Close the current group of cp.async.", (7, 0))
_op("cp.async.wait_group", _F.ASYNC_COPY, "Wait until at most N cp.async groups are pending.",
    (7, 0), "n:.u32", mem=_M.FENCE, bar=True)
_op("cp.async.wait_all", _F.ASYNC_COPY, "Wait for every pending cp.async.", (7, 0), mem=_M.FENCE,
    bar=True)
_op("cp.async.mbarrier.arrive", _F.ASYNC_COPY,
    "Arrive on an mbarrier when the thread's cp.async operations complete.", (7, 0), "[a]",
    mods="SPACE .noinc", mem=_RMW | _M.ASYNC)
_BULK = "SPACE BULK .multicast::cluster"
_op("cp.async.bulk", _F.ASYNC_COPY, "Bulk asynchronous copy between global and shared memory.",
    (8, 0), "[d], [s], n:.u32, *", mods=_BULK, mem=_RW | _M.ASYNC)
_op("cp.reduce.async.bulk", _F.ASYNC_COPY,
    "Bulk asynchronous reduction into global or shared memory.", (8, 0), "[d], [s], n:.u32, *",
    mods=f"{_BULK} AOP .noftz", mem=_RMW | _M.ASYNC)
_op("cp.async.bulk.tensor", _F.ASYNC_COPY,
    "Asynchronous tensor (TMA) copy described by a tensor map.", (8, 0), "[d], [s], *",
    mods=f"{_BULK} GEOM LOADMODE CTAG", mem=_RW | _M.ASYNC)
_op("cp.reduce.async.bulk.tensor", _F.ASYNC_COPY,
    "Asynchronous tensor (TMA) reduction described by a tensor map.", (8, 0), "[d], [s], *",
    mods=f"{_BULK} GEOM LOADMODE AOP .noftz", mem=_RMW | _M.ASYNC)
_op("cp.async.bulk.prefetch", _F.ASYNC_COPY, "Bulk prefetch of global memory into L2.", (8, 0),
    "[s], n:.u32, *", mods="SPACE .L2 .L2::cache_hint", mem=_M.PREFETCH | _M.ASYNC)
_op("cp.async.bulk.prefetch.tensor", _F.ASYNC_COPY, "Tensor (TMA) prefetch into L2.", (8, 0),
    "[s], *", mods="SPACE GEOM LOADMODE .L2 .L2::cache_hint", mem=_M.PREFETCH | _M.ASYNC)
_op("cp.async.bulk.commit_group", _F.ASYNC_COPY, "Close the current bulk async-group.", (8, 0))
_op("cp.async.bulk.wait_group", _F.ASYNC_COPY,
    "Wait until at most N bulk async-groups are pending.", (8, 0), "n:.u32", mods=".read",
    mem=_M.FENCE, bar=True)
_op("tensormap.replace", _F.MEMORY, "Replace one field of a tensor map in memory.", (8, 3),
    "[a], v:S; [a], o:.b32, v:S",
    mods="SPACE .tile .global_address .rank .box_dim .global_dim .global_stride .element_stride "
    ".elemtype .interleave_layout .swizzle_mode .swizzle_atomicity .fill_mode",
    mem=_RW)
_op("tensormap.cp_fenceproxy", _F.MEMORY, "Copy a tensor map and fence the tensormap proxy.",
    (8, 3), "[d], [s], n:.u32", mods="SPACE SEM SCOPE SYNC .tensormap::generic", mem=_RW | _M.FENCE,
    warp=True, bar=True)

# ---- Texture and surface ----
_op("tex", _F.TEXTURE, "Texture fetch (sampled lookup).", (1, 0), "=d|=p:.pred, [a], *",
    mods="GEOM VEC .base .level .grad", mem=_M.READ, space=".tex")
_op("tld4", _F.TEXTURE, "Fetch the four texels of a bilinear footprint.", (2, 2),
    "=d|=p:.pred, [a], *", mods="GEOM VEC .r .g .b .a", mem=_M.READ, space=".tex")
_op("txq", _F.TEXTURE, "Query a texture or sampler attribute.", (1, 5), "=d, [a]; =d, [a], l:.s32",
    mods="TXQ")
_op("istypep", _F.TEXTURE, "Test whether a handle is a texref/samplerref/surfref.", (4, 0),
    "=p:.pred, a:-")
_op("suld", _F.SURFACE, "Load from a surface.", (1, 5), "=d, [a]", mods="SURF GEOM VEC COP",
    mem=_M.READ, space=".surf")
_op("sust", _F.SURFACE, "Store to a surface.", (1, 5), "[a], b", mods="SURF GEOM VEC COP",
    mem=_M.WRITE, space=".surf")
_op("sured", _F.SURFACE, "Reduction into a surface.", (1, 5), "[a], b", mods="SURF GEOM AOP",
    mem=_RMW, space=".surf")
_op("suq", _F.SURFACE, "Query a surface attribute.", (1, 5), "=d, [a]", mods="TXQ")

# ---- Control flow ----
_op("bra", _F.CONTROL, "Branch to a label.", (1, 0), "l:-", mods=".uni", cf=True)
_op("brx.idx", _F.CONTROL, "Branch to the index-th label of a .branchtargets list.", (6, 0),
    "i:.u32, t:-", mods=".uni", cf=True)
_op("call", _F.CONTROL, "Call a function (direct or through a pointer).", (1, 0), "*", mods=".uni",
    cf=True, slots_fn=_call_slots)
_op("ret", _F.CONTROL, "Return from a function.", (1, 0), mods=".uni", cf=True)
_op("exit", _F.CONTROL, "Terminate the thread.", (1, 0), cf=True)

# ---- Synchronisation and communication ----
_BAR = ".cta .sync .arrive .red .popc .and .or .aligned"
_BAR_SIG = "; a:.u32; a:.u32, b:.u32"
_BAR_RED = "=d, a:.u32, c:.pred; =d, a:.u32, b:.u32, c:.pred"
_op("bar", _F.SYNC, "CTA barrier (aligned): sync, arrive or reduce.", (1, 0), _BAR_SIG,
    when=[(".red", _BAR_RED)], mods=_BAR, mem=_M.FENCE, warp=True, bar=True)
_op("barrier", _F.SYNC, "CTA barrier (optionally non-aligned): sync, arrive or reduce.", (6, 0),
    _BAR_SIG, when=[(".red", _BAR_RED)], mods=_BAR, mem=_M.FENCE, warp=True, bar=True)
_op("bar.warp.sync", _F.SYNC, "Barrier among the lanes of a warp named by a mask.", (6, 0),
    "m:.b32", mem=_M.FENCE, warp=True, bar=True)
_op("barrier.cluster", _F.SYNC, "Cluster-wide barrier: arrive or wait.", (7, 8),
    mods=".arrive .wait .relaxed .release .acquire .aligned", mem=_M.FENCE, warp=True, bar=True)
_op("membar", _F.SYNC, "Memory barrier at a level (cta, gl, sys) or proxy fence.", (1, 4),
    mods="SCOPE SPACE .gl .proxy .alias .async", mem=_M.FENCE, bar=True)
_op("fence", _F.SYNC, "Memory fence (thread, operation-restricted or proxy).", (6, 0),
    "; [a], n:.u32",
    mods="SEM SCOPE SPACE .proxy .alias .async .async::generic .tensormap::generic .mbarrier_init "
    ".sync_restrict::shared::cta .sync_restrict::shared::cluster",
    mem=_M.FENCE, bar=True)
_ATOM = "SPACE SEM SCOPE AOP VEC .noftz .L2::cache_hint"
_op("atom", _F.ATOMIC, "Atomic read-modify-write returning the old value.", (1, 1),
    "=d, [a], b; =d, [a], b, p:.b64", when=[(".cas", "=d, [a], b, c; =d, [a], b, c, p:.b64")],
    mods=_ATOM, mem=_RMW)
_op("red", _F.ATOMIC, "Atomic reduction without a result.", (1, 2), "[a], b; [a], b, p:.b64",
    mods=_ATOM, mem=_RMW)
_op("red.async", _F.ATOMIC, "Asynchronous reduction into distributed shared memory.", (8, 1),
    "[a], b, [m]; [a], b", mods="SPACE SEM SCOPE AOP .mbarrier::complete_tx::bytes",
    mem=_RMW | _M.ASYNC)
_MBAR = "SPACE SEM SCOPE"
_op("mbarrier.init", _F.SYNC, "Initialise an mbarrier object with an expected count.", (7, 0),
    "[a], n:.u32", mods=_MBAR, mem=_M.WRITE, bar=True)
_op("mbarrier.inval", _F.SYNC, "Invalidate an mbarrier object.", (7, 0), "[a]", mods=_MBAR,
    mem=_M.WRITE, bar=True)
_op("mbarrier.arrive", _F.SYNC,
    "Arrive on an mbarrier (optionally expecting tx bytes); returns the phase state.", (7, 0),
    "=s:.b64, [a]; =s:.b64, [a], n:.u32", mods=f"{_MBAR} .expect_tx .noComplete", mem=_RMW,
    bar=True)
_op("mbarrier.arrive_drop", _F.SYNC, "Arrive on an mbarrier and drop out of future phases.", (7, 0),
    "=s:.b64, [a]; =s:.b64, [a], n:.u32", mods=f"{_MBAR} .expect_tx .noComplete", mem=_RMW,
    bar=True)
_op("mbarrier.test_wait", _F.SYNC, "Test (non-blocking) whether an mbarrier phase completed.",
    (7, 0), "=p:.pred, [a], s:.b64", when=[(".parity", "=p:.pred, [a], s:.b32")],
    mods=f"{_MBAR} .parity", mem=_M.READ, bar=True)
_op("mbarrier.try_wait", _F.SYNC, "Wait (bounded, potentially blocking) for an mbarrier phase.",
    (7, 8), "=p:.pred, [a], s:.b64; =p:.pred, [a], s:.b64, t:.u32",
    when=[(".parity", "=p:.pred, [a], s:.b32; =p:.pred, [a], s:.b32, t:.u32")],
    mods=f"{_MBAR} .parity", mem=_M.READ, bar=True)
_op("mbarrier.pending_count", _F.SYNC, "Pending arrival count from an mbarrier state.", (7, 0),
    "=n:.u32, s:.b64", mods=_MBAR)
_op("mbarrier.expect_tx", _F.SYNC, "Increase the expected transaction bytes of an mbarrier.",
    (8, 0), "[a], n:.u32", mods=_MBAR, mem=_RMW, bar=True)
_op("mbarrier.complete_tx", _F.SYNC, "Complete transaction bytes on an mbarrier.", (8, 0),
    "[a], n:.u32", mods=_MBAR, mem=_RMW, bar=True)
_op("vote", _F.WARP, "Warp vote: all, any, uni or ballot of a predicate.", (1, 2),
    "=d:.pred, a:.pred; =d:.pred, a:.pred, m:.b32",
    when=[(".ballot", "=d:.b32, a:.pred; =d:.b32, a:.pred, m:.b32")],
    mods=".sync .all .any .uni .ballot", warp=True)
_op("match", _F.WARP, "Mask of lanes holding the same value (any), or whether all do.", (6, 0),
    "=d:.b32|=p:.pred, a, m:.b32", mods=".sync .any .all", warp=True)
_op("activemask", _F.WARP, "Mask of the currently active lanes of the warp.", (6, 2), "=d",
    warp=True)
_op("redux", _F.WARP, "Reduction across the lanes of a warp.", (7, 0), "=d, a, m:.b32",
    mods=".sync .add .min .max .and .or .xor .abs .NaN", warp=True)
_op("griddepcontrol", _F.SYNC,
    "Programmatic dependent launch: launch dependents or wait for prerequisites.", (7, 8),
    mods=".launch_dependents .wait", mem=_M.FENCE, bar=True)
_op("elect", _F.WARP, "Elect one leader lane among the lanes of a mask.", (8, 0),
    "=d:.b32|=p:.pred, m:.b32", mods=".sync", warp=True)

# ---- Warp-level matrix instructions ----
_MMA = "SYNC LAYOUT ~MMASHAPE .satfinite .xor .and .popc RND KIND SCALE"
_op("wmma.load", _F.MATRIX, "Collectively load a matrix fragment.", (6, 0),
    "=d:FRAG, [p]; =d:FRAG, [p], s:.u32", mods="SYNC LAYOUT ~MMASHAPE SPACE .a .b .c", mem=_M.READ,
    warp=True)
_op("wmma.store", _F.MATRIX, "Collectively store a matrix fragment.", (6, 0),
    "[p], r:FRAG; [p], r:FRAG, s:.u32", mods="SYNC LAYOUT ~MMASHAPE SPACE .d", mem=_M.WRITE,
    warp=True)
_op("wmma.mma", _F.MATRIX, "Warp-level matrix multiply-accumulate on fragments.", (6, 0),
    "=d:MD, a:MA, b:MB, c:MC", mods=_MMA, warp=True)
_op("mma", _F.MATRIX, "Warp-level matrix multiply-accumulate D = A*B + C.", (6, 4),
    "=d:MD, a:MA, b:MB, c:MC; =d:MD, a:MA, b:MB, c:MC, *", mods=_MMA, warp=True)
_MMA_SP = "=d:MD, a:MA, b:MB, c:MC, e:.b32, f:.u32; =d:MD, a:MA, b:MB, c:MC, e:.b32, f:.u32, *"
_op("mma.sp", _F.MATRIX, "Sparse warp-level matrix multiply-accumulate.", (7, 1), _MMA_SP,
    mods=_MMA, warp=True)
_op("mma.sp::ordered_metadata", _F.MATRIX, "Sparse warp-level MMA with ordered metadata.", (8, 5),
    _MMA_SP, mods=_MMA, warp=True)
_op("ldmatrix", _F.MATRIX, "Collectively load 8x8 (or 16x16) matrices from shared memory.", (6, 5),
    "=d:.b32, [p]", mods="SYNC ~MATSHAPE ~COUNT SPACE .trans", mem=_M.READ, warp=True)
_op("stmatrix", _F.MATRIX, "Collectively store 8x8 matrices to shared memory.", (7, 8),
    "[p], r:.b32", mods="SYNC ~MATSHAPE ~COUNT SPACE .trans", mem=_M.WRITE, warp=True)
_op("movmatrix", _F.MATRIX, "Transpose a matrix held in the registers of a warp.", (7, 8),
    "=d:.b32, a:.b32", mods="SYNC ~MATSHAPE .trans", warp=True)
_WGMMA = "SYNC ~MMASHAPE .satfinite .and .popc"
_op("wgmma.mma_async", _F.MATRIX, "Warpgroup MMA D = A*B (+D) from shared-memory descriptors.",
    (8, 0), "+d:MD, a:WA, b:.b64, s:.pred, *", mods=_WGMMA, mem=_M.READ | _M.ASYNC, warp=True,
    space=".shared")
_op("wgmma.mma_async.sp", _F.MATRIX, "Sparse warpgroup MMA.", (8, 2),
    "+d:MD, a:WA, b:.b64, e:.b32, f:.u32, s:.pred, *", mods=_WGMMA, mem=_M.READ | _M.ASYNC,
    warp=True, space=".shared")
_op("wgmma.fence", _F.MATRIX, "Order register accesses before wgmma.mma_async.", (8, 0),
    mods="SYNC", mem=_M.FENCE, warp=True, bar=True)
_op("wgmma.commit_group", _F.MATRIX, "Close the current wgmma-group.", (8, 0), mods="SYNC",
    warp=True)
_op("wgmma.wait_group", _F.MATRIX, "Wait until at most N wgmma-groups are pending.", (8, 0),
    "n:.u32", mods="SYNC", mem=_M.FENCE, warp=True, bar=True)
_TC = (
    "SYNC CTAG KIND SCALE ~COLLECTOR ~TMEMSHAPE ~COUNT SPACE .ashift .pack::16b "
    ".unpack::16b .warpx2::02_13 .warpx2::01_23 .warpx4 .down .mbarrier::arrive::one "
    ".multicast::cluster .min .max .abs .NaN"
)
_TC_MMA = "[d], *"
_op("tcgen05.alloc", _F.MATRIX,
    "Allocate tensor-memory columns; writes the address to shared memory.", (8, 6), "[d], n:.u32",
    mods=_TC, mem=_M.WRITE, warp=True)
_op("tcgen05.dealloc", _F.MATRIX, "Free tensor-memory columns.", (8, 6), "t:.b32, n:.u32", mods=_TC,
    warp=True)
_op("tcgen05.relinquish_alloc_permit", _F.MATRIX,
    "Give up the CTA's right to allocate tensor memory.", (8, 6), mods=_TC, warp=True)
_op("tcgen05.ld", _F.MATRIX, "Load from tensor memory into registers.", (8, 6),
    "=r, [t]; =r, [t], i:.u32", mods=_TC, mem=_M.READ | _M.ASYNC, warp=True, space=".tmem")
_op("tcgen05.ld.red", _F.MATRIX, "Load from tensor memory and reduce across columns.", (8, 8),
    "=r, =v, [t]; =r, =v, [t], i:.u32", mods=_TC, mem=_M.READ | _M.ASYNC, warp=True, space=".tmem")
_op("tcgen05.st", _F.MATRIX, "Store registers into tensor memory.", (8, 6),
    "[t], r; [t], i:.u32, r", mods=_TC, mem=_M.WRITE | _M.ASYNC, warp=True, space=".tmem")
_op("tcgen05.cp", _F.MATRIX, "Copy from shared memory into tensor memory.", (8, 6), "[t], s:.b64",
    mods=_TC, mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.shift", _F.MATRIX, "Shift rows of a tensor-memory matrix down.", (8, 6), "[t]",
    mods=_TC, mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.mma", _F.MATRIX, "Tensor-core MMA with the accumulator in tensor memory.", (8, 6),
    _TC_MMA, mods=_TC, mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.mma.sp", _F.MATRIX, "Sparse tensor-core MMA (tensor-memory accumulator).", (8, 6),
    _TC_MMA, mods=_TC, mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.mma.ws", _F.MATRIX, "Weight-stationary tensor-core MMA.", (8, 6), _TC_MMA, mods=_TC,
    mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.mma.ws.sp", _F.MATRIX, "Sparse weight-stationary tensor-core MMA.", (8, 6), _TC_MMA,
    mods=_TC, mem=_RW | _M.ASYNC, space=".tmem")
_op("tcgen05.commit", _F.MATRIX, "Arrive on an mbarrier when prior tcgen05 operations complete.",
    (8, 6), "[m]; [m], c:.b16", mods=_TC, mem=_RMW | _M.ASYNC)
_op("tcgen05.wait::ld", _F.MATRIX, "Wait for all prior tcgen05.ld of the thread.", (8, 6), mods=_TC,
    mem=_M.FENCE, warp=True, bar=True)
_op("tcgen05.wait::st", _F.MATRIX, "Wait for all prior tcgen05.st of the thread.", (8, 6), mods=_TC,
    mem=_M.FENCE, warp=True, bar=True)
_op("tcgen05.fence::before_thread_sync", _F.MATRIX,
    "Order prior tcgen05 operations before a following thread synchronisation.", (8, 6), mods=_TC,
    mem=_M.FENCE, bar=True)
_op("tcgen05.fence::after_thread_sync", _F.MATRIX,
    "Order later tcgen05 operations after a preceding thread synchronisation.", (8, 6), mods=_TC,
    mem=_M.FENCE, bar=True)

# ---- Video ----
_VOP = "=d, a:S, b:T2; =d, a:S, b:T2, c:T"
_VSIMD = "=d, a:S, b:T2, c:T"
_VSCALAR = (("vadd", "add"), ("vsub", "subtract"), ("vabsdiff", "absolute difference"),
            ("vmin", "minimum"), ("vmax", "maximum"))
for _name, _what in _VSCALAR:
    _op(_name, _F.VIDEO,
        f"Video scalar {_what} with byte/half selection and optional secondary operation.", (2, 0),
        _VOP, mods=".sat .add .min .max")
_op("vshl", _F.VIDEO, "Video scalar shift left with clamp/wrap.", (2, 0),
    "=d, a:S, b:T2; =d, a:S, b:T2, c:T", mods=".sat .clamp .wrap .add .min .max")
_op("vshr", _F.VIDEO, "Video scalar shift right with clamp/wrap.", (2, 0),
    "=d, a:S, b:T2; =d, a:S, b:T2, c:T", mods=".sat .clamp .wrap .add .min .max")
_op("vmad", _F.VIDEO, "Video scalar multiply-add with optional negation and scaling.", (2, 0),
    "=d, a:S, b:T2, c:T", mods=".sat .shr7 .shr15 .po")
_op("vset", _F.VIDEO, "Video scalar compare with optional secondary operation.", (2, 0),
    "=d:.u32, a:T, b:S; =d:.u32, a:T, b:S, c:.u32", mods="CMP .add .min .max")
for _w in ("2", "4"):
    for _name, _what in (*_VSCALAR[:2], ("vavrg", "average"), *_VSCALAR[2:]):
        _op(f"{_name}{_w}", _F.VIDEO, f"Video SIMD {_what} on {_w} lanes.", (3, 0), _VSIMD,
            mods=".sat .add")
    _op(f"vset{_w}", _F.VIDEO, f"Video SIMD compare on {_w} lanes.", (3, 0),
        "=d:.u32, a:T, b:S, c:.u32", mods="CMP .add")

# ---- Stack manipulation ----
_op("stacksave", _F.STACK, "Save the stack pointer.", (7, 3), "=d")
_op("stackrestore", _F.STACK, "Restore the stack pointer.", (7, 3), "a")
_op("alloca", _F.STACK, "Allocate memory on the stack; returns its address.", (7, 3),
    "=p, s; =p, s, n:.u32")

# ---- Miscellaneous ----
_op("trap", _F.MISC, "Abort execution with an error.", (1, 0), cf=True)
_op("brkpt", _F.MISC, "Suspend execution (breakpoint).", (1, 0))
_op("pmevent", _F.MISC, "Trigger performance-monitor events.", (1, 4), "a:-", mods=".mask")
_op("nanosleep", _F.MISC, "Suspend the thread for about t nanoseconds.", (6, 2), "t:.u32")
_op("setmaxnreg", _F.MISC, "Raise or lower the register budget of a warpgroup.", (8, 0), "n:.u32",
    mods="SYNC .inc .dec", warp=True)
_op("clusterlaunchcontrol.try_cancel", _F.MISC,
    "Request to cancel the launch of a not-yet-running cluster (asynchronous).", (8, 6), "[a], [m]",
    mods="SPACE .async .mbarrier::complete_tx::bytes .multicast::cluster::all",
    mem=_M.WRITE | _M.ASYNC)
_op("clusterlaunchcontrol.query_cancel", _F.MISC, "Decode a try_cancel response.", (8, 6),
    "=d, r:S",
    mods="VEC .is_canceled .get_first_ctaid .get_first_ctaid::x .get_first_ctaid::y .get_first_ctaid::z")
# fmt: on

del _name, _what, _w

# Longest opcode in dotted parts, to bound the prefix search.
_MAX_PARTS = max(name.count(".") + 1 for name in _TABLE)


# --------------------------------------------------------------------------
# Table access


def lookup(opcode: str) -> OpcodeSpec:
    """The spec of an opcode name as returned by :func:`split_mnemonic`."""
    return _TABLE[opcode]


def opcodes() -> list[OpcodeSpec]:
    """The whole table, in ISA-chapter order."""
    return list(_TABLE.values())


@lru_cache(maxsize=16384)
def split_mnemonic(text: str) -> tuple[str, tuple[str, ...]]:
    """Cut a mnemonic into its opcode and modifiers.

    The opcode is the longest dotted prefix that names a table entry, so
    ``cp.async.bulk.tensor.2d.shared::cluster.global.tile`` gives
    ``cp.async.bulk.tensor`` and ``bar.sync`` gives ``bar`` with ``.sync``.
    Cached because it runs once per instruction of very large files.
    """
    parts = text.split(".")
    for n in range(min(len(parts), _MAX_PARTS), 0, -1):
        name = ".".join(parts[:n])
        if name in _TABLE:
            return name, tuple("." + p for p in parts[n:])
    raise UnknownOpcode(text)


def unknown_modifiers(inst: Instruction) -> list[str]:
    """Modifiers this opcode never takes, in source order (for warnings).

    Type modifiers are accepted on every opcode: which types an opcode
    accepts is a matter for ptxas, and what matters here is catching words
    that are not PTX at all or that belong to another instruction.
    """
    spec = _TABLE.get(inst.opcode)
    if spec is None:
        return list(inst.modifiers)
    bad = []
    for mod in inst.modifiers:
        if mod in _TYPES or mod in spec.modifiers:
            continue
        if any(p.fullmatch(mod) for p in spec.modifier_patterns):
            continue
        bad.append(mod)
    return bad


# --------------------------------------------------------------------------
# Types, spaces, widths


def instruction_types(inst: Instruction) -> tuple[str, ...]:
    """The type modifiers of an instruction in source order.

    Their order carries meaning (``cvt.f32.s32``: destination, then source;
    ``mma``: D, A, B, C), so it is kept.
    """
    return _types_of(inst.modifiers)


@lru_cache(maxsize=8192)
def _types_of(modifiers: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m for m in modifiers if m in _TYPES)


def instruction_type(inst: Instruction) -> str | None:
    """The main (first) type modifier: ``.s32`` of ``add.s32``, the destination
    type of ``cvt``/``set``/``tex``, the written type of ``mul.wide`` (whose
    destination is twice as wide; see :func:`operand_infos`)."""
    types = _types_of(inst.modifiers)
    return types[0] if types else None


def source_type(inst: Instruction) -> str | None:
    """The second type modifier (``cvt``'s source, ``set``'s compared type,
    ``slct``'s selector type, ``tex``'s coordinate type); otherwise the same
    as :func:`instruction_type` (``setp.lt.s32`` compares ``.s32``)."""
    types = _types_of(inst.modifiers)
    if len(types) > 1:
        return types[1]
    return types[0] if types else None


def _touches_memory(spec: OpcodeSpec) -> bool:
    return bool(spec.memory & (_M.READ | _M.WRITE | _M.ATOMIC | _M.PREFETCH))


def state_spaces(inst: Instruction) -> tuple[str, ...]:
    """Every state-space modifier in source order (``cp.async.bulk`` names the
    destination space first, then the source)."""
    return tuple(m for m in inst.modifiers if m in _STATE_SPACES)


def state_space(inst: Instruction) -> str | None:
    """The (first) state space an instruction names.

    Instructions that access memory without naming a space use generic
    addressing and give ``"generic"``; texture, surface and tensor-memory
    instructions give their implicit space (``.tex``, ``.surf``, ``.tmem``;
    the last two are not PTX state-space keywords). Instructions that touch
    no memory and name no space give None. An instruction that names a space
    without accessing memory (``cvta.to.global``, ``isspacep.shared``,
    ``fence.proxy.async.shared::cta``) gives that space.
    """
    for mod in inst.modifiers:
        if mod in _STATE_SPACES:
            return mod
    spec = _TABLE.get(inst.opcode)
    if spec is None:
        return None
    if spec.implicit_space is not None:
        return spec.implicit_space
    return "generic" if _touches_memory(spec) else None


def vector_width(inst: Instruction) -> int:
    """1, 2, 4 or 8 from a ``.v2``/``.v4``/``.v8`` modifier."""
    for mod in inst.modifiers:
        width = _VECTORS.get(mod)
        if width is not None:
            return width
    return 1


_TYPED_ACCESS = _set(
    "ld ldu st atom red st.async red.async multimem.ld_reduce multimem.st "
    "multimem.red suld sust sured mbarrier.init mbarrier.inval "
    "mbarrier.arrive mbarrier.arrive_drop mbarrier.test_wait "
    "mbarrier.try_wait mbarrier.expect_tx mbarrier.complete_tx"
)
# Opcodes whose byte count is an operand: opcode -> operand index.
_SIZE_OPERAND = {
    "cp.async": 2,
    "cp.async.bulk": 2,
    "cp.reduce.async.bulk": 2,
    "cp.async.bulk.prefetch": 1,
    "st.bulk": 1,
    "applypriority": 1,
    "discard": 1,
}


def access_bytes(inst: Instruction) -> int | None:
    """Bytes one lane moves: vector width times element size for typed
    accesses (``ld.v4.f32`` -> 16, ``atom.cas.b128`` -> 16), the constant
    size operand of ``cp.async`` (cp-size) and the bulk copies; None when
    unknown or not a plain access (texture fetch, matrix loads)."""
    if inst.opcode in _TYPED_ACCESS:
        types = _types_of(inst.modifiers)
        if not types:
            return None
        bits = _TYPE_BITS.get(types[0])
        if bits is None or bits % 8:
            return None
        return bits // 8 * vector_width(inst)
    index = _SIZE_OPERAND.get(inst.opcode)
    if index is not None and index < len(inst.operands):
        operand = inst.operands[index]
        if isinstance(operand, IntImm):
            return operand.value
    return None


def instruction_family(inst: Instruction) -> Family:
    """The opcode's family, refined by type for the arithmetic opcodes that
    the ISA shares between integers and floats: ``add.f32`` is FLOAT,
    ``fma.rn.f16x2`` and ``add.bf16`` are HALF."""
    spec = _TABLE[inst.opcode]
    if spec.family not in (Family.INTEGER, Family.FLOAT):
        return spec.family
    t = instruction_type(inst)
    if t is None:
        return spec.family
    if t in (".f16", ".f16x2", ".bf16", ".bf16x2") or t.startswith((".e", ".ue")):
        return Family.HALF
    if t in (".f32", ".f64", ".f32x2", ".tf32"):
        return Family.FLOAT
    return spec.family


def memory_effect(inst: Instruction) -> MemoryEffect:
    """The opcode's memory effect plus FENCE when the instruction carries
    acquire/release/sc semantics (``ld.acquire``, ``atom.acq_rel``...)."""
    effect = _effect(inst)
    if effect and any(m in (".acquire", ".release", ".acq_rel", ".sc") for m in inst.modifiers):
        effect |= _M.FENCE
    return effect


_REGISTER_FAMILIES = frozenset(
    {Family.INTEGER, Family.FLOAT, Family.HALF, Family.COMPARISON, Family.LOGIC, Family.CONVERSION}
)


def computes_registers(inst: Instruction) -> bool:
    """Whether ``inst`` is register arithmetic: integer, float, comparison,
    logic or conversion, or a ``mov``/``prmt`` of data. Its memory effect,
    carry flag and guard are the caller's to check (``mov`` of a symbol or
    a special register is still a ``mov``)."""
    return instruction_family(inst) in _REGISTER_FAMILIES or inst.opcode in ("mov", "prmt")


def writes_carry(inst: Instruction) -> bool:
    """Whether the instruction writes the implicit carry flag (``add.cc``...)."""
    return inst.opcode in ("add", "sub", "mad", "addc", "subc", "madc") and ".cc" in inst.modifiers


def reads_carry(inst: Instruction) -> bool:
    """Whether the instruction reads the implicit carry flag (``addc``...)."""
    return inst.opcode in ("addc", "subc", "madc")


# --------------------------------------------------------------------------
# Operand roles and types


_KIND_OF_TYPE: dict[type, str] = {
    Address: "A",
    ListOperand: "L",
    PairOperand: "P",
    ParenOperand: "(",
    Register: "R",
    Negated: "N",
    Sink: "_",
    Symbol: "S",
    IntImm: "I",
    FloatImm: "I",
}


def _kind(op: Operand) -> str:
    """A short shape code of an operand; signatures are chosen by shape.

    ``V<n>`` is a vector of n elements, ``E`` a constant expression.
    """
    kind = _KIND_OF_TYPE.get(type(op))
    if kind is not None:
        return kind
    if isinstance(op, VectorOperand):
        return f"V{len(op.elements)}"
    return "E"


def _widen(t: str | None) -> str | None:
    if t is None or t[1] not in "usbf":
        return t
    bits = _TYPE_BITS.get(t)
    if bits is None:
        return t
    return f"{t[:2]}{bits * 2}"


def _fragment(t: str | None) -> str | None:
    """Register type holding matrix-fragment elements of type ``t``: wide
    types are held as themselves, .f16 in .f16x2 pairs, narrower ones packed
    into .b32."""
    if t in (".f32", ".f64", ".s32"):
        return t
    if t == ".f16":
        return ".f16x2"
    return None if t is None else ".b32"


def _mma_types(types: tuple[str, ...]) -> tuple[str | None, str | None, str | None, str | None]:
    """(D, A, B, C) element types from mma/wmma/wgmma type modifiers.

    Four or more types are D, A, B, C (a fifth is a block-scale type);
    ``wgmma`` writes D, A, B; ``wmma.mma`` with half inputs writes D, C.
    """
    if len(types) >= 4:
        return types[0], types[1], types[2], types[3]
    if len(types) == 3:
        return types[0], types[1], types[2], types[0]
    if len(types) == 2:
        return types[0], ".f16", ".f16", types[1]
    t = types[0] if types else None
    return t, t, t, t


def _resolve_type(token: str, types: tuple[str, ...], kind: str, vec: int) -> str | None:
    if token.startswith("."):
        return token
    first = types[0] if types else None
    if token == "T":
        return first
    if token == "S":
        return types[1] if len(types) > 1 else first
    if token == "T2":
        return types[2] if len(types) > 2 else (types[-1] if types else None)
    if token == "T3":
        return types[3] if len(types) > 3 else (types[-1] if types else None)
    if token == "W":
        return _widen(first)
    if token == "DP":
        # dp4a/dp2a accumulate unsigned only when both inputs are unsigned.
        unsigned = bool(types) and all(t.startswith(".u") for t in types[:2])
        return ".u32" if unsigned else ".s32"
    if token == "SPLIT":
        # mov.b64 {lo, hi}, %rd: each element is half as wide as the type.
        if kind.startswith("V") and vec == 1 and first is not None:
            bits = _TYPE_BITS.get(first)
            count = int(kind[1:])
            if bits and count:
                return f".b{bits // count}"
        return first
    if token == "FRAG":
        return _fragment(first)
    if token in ("MD", "MA", "MB", "MC"):
        return _fragment(_mma_types(types)[("MD", "MA", "MB", "MC").index(token)])
    if token == "WA":
        return ".b32" if kind.startswith("V") else ".b64"
    return None


def _score(sig: _Sig, kinds: tuple[str, ...]) -> tuple[int, int]:
    fixed = [s for s in sig if not s.rest]
    has_rest = len(fixed) != len(sig)
    n = len(kinds)
    if n == len(fixed):
        count = 2
    elif has_rest and n > len(fixed):
        count = 1
    else:
        count = 0
    agree = sum(
        1 for slot, kind in zip(fixed, kinds, strict=False) if slot.is_address == (kind in ("A", "L"))
    )
    return count, agree


def _choose(spec: OpcodeSpec, modifiers: tuple[str, ...], kinds: tuple[str, ...]) -> _Sig:
    best: _Sig = ()
    best_score = (-1, -1)
    for cond, sigs in spec.forms:
        if cond is not None and cond not in modifiers:
            continue
        for sig in sigs:
            score = _score(sig, kinds)
            if score > best_score:
                best, best_score = sig, score
    return best


def operand_count_problem(inst: Instruction) -> str | None:
    """Why ``inst`` has an operand count no form of its opcode takes, or None.

    The signatures were checked against every instruction of the compiler
    corpus, so a mismatch here is almost certainly malformed PTX; ``ptxasw
    check`` reports it as a warning (the parser itself stays permissive, and
    the wrapper leaves the final word to ptxas).
    """
    spec = _TABLE.get(inst.opcode)
    if spec is None or spec.slots_fn is not None:
        return None
    count = len(inst.operands)
    counts: set[int] = set()
    for cond, sigs in spec.forms:
        if cond is not None and cond not in inst.modifiers:
            continue
        for sig in sigs:
            fixed = sum(1 for slot in sig if not slot.rest)
            if count == fixed or (count > fixed and any(slot.rest for slot in sig)):
                return None
            counts.add(fixed)
    if not counts:
        return None
    expected = " or ".join(str(n) for n in sorted(counts))
    return f"'{inst.opcode}' takes {expected} operands, not {count}"


# A resolved position: (info of the whole operand, info of the first side,
# info of the second side of a pair or None).
_Resolved = tuple[OperandInfo, OperandInfo, OperandInfo | None]


@lru_cache(maxsize=16384)
def _resolve(opcode: str, modifiers: tuple[str, ...], kinds: tuple[str, ...]) -> tuple[_Resolved, ...]:
    spec = _TABLE.get(opcode)
    if spec is None:
        slots: tuple[_Slot, ...] = tuple(_Slot(Role.USE, "-") for _ in kinds)
    elif spec.slots_fn is not None:
        slots = spec.slots_fn(modifiers, kinds)
    else:
        sig = _choose(spec, modifiers, kinds)
        fixed = [s for s in sig if not s.rest]
        if len(fixed) >= len(kinds):
            slots = tuple(fixed[: len(kinds)])
        else:
            slots = tuple(fixed) + (_REST,) * (len(kinds) - len(fixed))
    types = _types_of(modifiers)
    vec = next((_VECTORS[m] for m in modifiers if m in _VECTORS), 1)
    out: list[_Resolved] = []
    for slot, kind in zip(slots, kinds, strict=True):
        is_addr = slot.is_address or kind in ("A", "L")
        first = OperandInfo(
            slot.role, None if is_addr else _resolve_type(slot.type, types, kind, vec), is_addr
        )
        second = None
        whole = first
        if slot.second is not None:
            s2 = slot.second
            second = OperandInfo(s2.role, _resolve_type(s2.type, types, kind, vec), False)
            if kind == "P":
                role = first.role if first.role == second.role else Role.DEFUSE
                whole = OperandInfo(role, first.type if first.type == second.type else None)
        out.append((whole, first, second))
    return tuple(out)


def _resolved(inst: Instruction) -> tuple[_Resolved, ...]:
    return _resolve(inst.opcode, inst.modifiers, tuple(map(_kind, inst.operands)))


def operand_infos(inst: Instruction) -> tuple[OperandInfo, ...]:
    """One :class:`OperandInfo` per operand of ``inst.operands``, by index.

    A ``%p|%q`` pair gets the role of its sides and their type when both
    sides agree (``setp``), else None (``shfl``'s ``%r|%p``); use
    :func:`typed_defs` for per-register types.
    """
    return tuple(r[0] for r in _resolved(inst))


def _registers(op: object) -> Iterator[Register]:
    """Every register read when ``op`` is read (address bases included)."""
    match op:
        case Register():
            yield op
        case Negated(operand=inner):
            yield inner
        case Address(base=base):
            if isinstance(base, Register):
                yield base
        case VectorOperand(elements=items) | ListOperand(items=items) | ParenOperand(items=items):
            for item in items:
                yield from _registers(item)
        case PairOperand(first=a, second=b):
            yield from _registers(a)
            yield from _registers(b)
        case UnaryExpr(operand=inner) | ParenExpr(inner=inner):
            yield from _registers(inner)
        case BinaryExpr(lhs=lhs, rhs=rhs):
            yield from _registers(lhs)
            yield from _registers(rhs)
        case CallExpr(args=args):
            for arg in args:
                yield from _registers(arg)
        case _:
            return


def _written(op: Operand) -> Iterator[Register]:
    """Registers written when ``op`` is a destination (vectors and the return
    list of ``call`` are flattened; ``_`` and non-registers are skipped)."""
    match op:
        case Register():
            yield op
        case VectorOperand(elements=items) | ParenOperand(items=items):
            for item in items:
                yield from _written(item)
        case _:
            return


def _sides(op: Operand, res: _Resolved) -> tuple[tuple[Operand, OperandInfo], ...]:
    """Split a pair operand into its sides with their infos."""
    _, first, second = res
    if type(op) is PairOperand:
        return ((op.first, first), (op.second, first if second is None else second))
    return ((op, first),)


def typed_defs(inst: Instruction) -> list[tuple[Register, str | None]]:
    """Registers written, each with its PTX type (see :func:`defs`)."""
    out: list[tuple[Register, str | None]] = []
    for op, res in zip(inst.operands, _resolved(inst), strict=True):
        for side, info in _sides(op, res):
            if info.role is not Role.USE and not isinstance(side, (Address, ListOperand)):
                out.extend((reg, info.type) for reg in _written(side))
    return out


def typed_uses(inst: Instruction) -> list[tuple[Register, str | None]]:
    """Registers read, each with its PTX type where known (see :func:`uses`).

    Address bases and texture handles have type None; the guard is ``.pred``.
    """
    out: list[tuple[Register, str | None]] = []
    if inst.guard is not None:
        out.append((inst.guard.predicate, ".pred"))
    for op, res in zip(inst.operands, _resolved(inst), strict=True):
        for side, info in _sides(op, res):
            if isinstance(side, (Address, ListOperand)):
                out.extend((reg, None) for reg in _registers(side))
            elif info.role is not Role.DEF:
                typ = ".pred" if isinstance(side, Negated) else info.type
                out.extend((reg, typ) for reg in _registers(side))
    return out


def defs(inst: Instruction) -> list[Register]:
    """Registers written by ``inst``, in operand order.

    Vector destinations, both sides of ``%p|%q`` and the return list of
    ``call`` are flattened; ``_`` and immediates are skipped. Implicit state
    (the carry flag of ``add.cc``) is not a register: see
    :func:`writes_carry`.
    """
    return [reg for reg, _ in typed_defs(inst)]


def uses(inst: Instruction) -> list[Register]:
    """Registers read by ``inst``: the guard predicate, sources (also inside
    vectors, ``!%p`` and constant expressions), address bases, the elements
    of stored vectors, and accumulators that are read and written."""
    return [reg for reg, _ in typed_uses(inst)]


# --------------------------------------------------------------------------
# Control flow and memory predicates


def is_branch(inst: Instruction) -> bool:
    """``bra`` and ``brx.idx`` (not ``call``/``ret``: they return or leave)."""
    return inst.opcode in ("bra", "brx.idx")


def is_call(inst: Instruction) -> bool:
    return inst.opcode == "call"


def is_return(inst: Instruction) -> bool:
    """Instructions after which the thread does not fall through or branch:
    ``ret``, ``exit`` and ``trap``."""
    return inst.opcode in ("ret", "exit", "trap")


def _effect(inst: Instruction) -> MemoryEffect:
    spec = _TABLE.get(inst.opcode)
    return _M.NONE if spec is None else spec.memory


def is_load(inst: Instruction) -> bool:
    """Reads memory without writing it and is not a prefetch (``ld``, ``ldu``,
    ``ld.global.nc``, ``tex``, ``suld``, ``ldmatrix``, ``multimem.ld_reduce``...)."""
    effect = _effect(inst)
    return bool(effect & _M.READ) and not effect & (_M.WRITE | _M.PREFETCH)


def is_store(inst: Instruction) -> bool:
    """Writes memory without reading it (``st``, ``st.async``, ``sust``...)."""
    effect = _effect(inst)
    return bool(effect & _M.WRITE) and not effect & _M.READ


def is_atomic(inst: Instruction) -> bool:
    """Read-modify-write (``atom``, ``red``, ``red.async``, ``mbarrier.arrive``...)."""
    return bool(_effect(inst) & _M.ATOMIC)


def branch_targets(inst: Instruction) -> list[str]:
    """Label of ``bra``; the ``.branchtargets`` table name of ``brx.idx``."""
    if inst.opcode == "bra" and inst.operands:
        target = inst.operands[0]
    elif inst.opcode == "brx.idx" and len(inst.operands) > 1:
        target = inst.operands[1]
    else:
        return []
    return [target.name] if isinstance(target, Symbol) else []


# --------------------------------------------------------------------------
# Checking instructions that passes build
#
# The parser stays permissive (ptxas has the final word on what compilers
# print), but a pass that builds an instruction must not hand ptxas something
# it refuses. `instruction_problems` says what the table knows to be wrong;
# type rules exist for the opcodes passes emit, and were checked against
# ptxas (CUDA 13): every other opcode gets the shape checks only.

_INT_TYPES = _set(".u16 .u32 .u64 .s16 .s32 .s64")
_BIT_TYPES = _set(".b16 .b32 .b64")
_ARITH_FLOATS = _set(".f32 .f64 .f16 .f16x2 .bf16 .bf16x2 .f32x2")
_MEMORY_TYPES = _set(".b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f32 .f64")
# opcode -> the types it takes as its one type modifier.
_TYPE_RULES: dict[str, frozenset[str]] = {
    "add": _INT_TYPES | _ARITH_FLOATS,
    "sub": _INT_TYPES | _ARITH_FLOATS,
    "mul": _INT_TYPES | _ARITH_FLOATS,
    "mad": _INT_TYPES | _ARITH_FLOATS,
    "and": _BIT_TYPES | {".pred"},
    "or": _BIT_TYPES | {".pred"},
    "xor": _BIT_TYPES | {".pred"},
    "not": _BIT_TYPES | {".pred"},
    "cnot": _BIT_TYPES,
    "shl": _BIT_TYPES,
    "shr": _BIT_TYPES | _INT_TYPES,
    "setp": _INT_TYPES | _BIT_TYPES | _set(".f32 .f64 .f16 .f16x2 .bf16 .bf16x2"),
    "selp": _INT_TYPES | _BIT_TYPES | _set(".f32 .f64"),
    "mov": _INT_TYPES | _BIT_TYPES | _set(".pred .b128 .f32 .f64"),
    "shfl": frozenset({".b32"}),
    "activemask": frozenset({".b32"}),
    "ld": _MEMORY_TYPES,
    "ldu": _MEMORY_TYPES,
    "st": _MEMORY_TYPES,
}
# Mixed-precision forms (PTX 8.6): ``add.f32.f16 d, a, c``.
_MIXED_TYPES: dict[str, frozenset[tuple[str, str]]] = {
    op: frozenset({(".f32", ".f16"), (".f32", ".bf16")}) for op in ("add", "sub", "fma", "mad")
}
_COMPARE_BY_CLASS = {
    "b": _set(".eq .ne"),
    "s": _set(".eq .ne .lt .le .gt .ge"),
    "u": _set(".eq .ne .lt .le .gt .ge .lo .ls .hi .hs"),
    "f": _set(".eq .ne .lt .le .gt .ge .equ .neu .ltu .leu .gtu .geu .num .nan"),
}
# Modifier kinds of which an instruction names at most one.
_SINGLE_KINDS = (ModifierKind.COMPARE, ModifierKind.ROUNDING, ModifierKind.VECTOR, ModifierKind.BOOL_OP)
_INT_MODES = frozenset({".lo", ".hi", ".wide"})
_SHFL_MODES = _set(".up .down .bfly .idx")
# ld, st, cvt and the surface accesses may name a register wider than their
# integer type (the value is extended or truncated); the rest want the exact size.
_WIDENING_OPCODES = _set("ld ldu st cvt suld sust")


def _type_class(t: str) -> str:
    """``"p"`` (.pred), ``"b"``, ``"u"``, ``"s"`` or ``"f"`` (every float format)."""
    if t == ".pred":
        return "p"
    return t[1] if t[1] in "bus" else "f"


def register_fits(register_type: str, operand_type: str, *, widening: bool = False) -> bool:
    """Whether a register declared ``register_type`` may stand where the
    instruction wants ``operand_type`` (PTX's operand type-compatibility rules).

    A bit-size type is compatible with every type of its size, signed and
    unsigned integers of one size with each other, a float only with its own
    format or the bit-size type of its size; predicates only with predicates.
    ``widening`` (ld, st, cvt: see `allows_wide_registers`) also accepts wider
    integer and bit-size registers for an integer or bit-size operand.
    """
    if register_type == operand_type:
        return True
    reg_class, op_class = _type_class(register_type), _type_class(operand_type)
    if "p" in (reg_class, op_class):
        return False
    reg_bits, op_bits = _TYPE_BITS.get(register_type), _TYPE_BITS.get(operand_type)
    if reg_bits is None or op_bits is None:
        return False
    if op_class == "f" or reg_class == "f":
        return reg_bits == op_bits and "b" in (reg_class, op_class)
    return reg_bits == op_bits or (widening and reg_bits > op_bits)


def allows_wide_registers(inst: Instruction) -> bool:
    """Whether ``inst`` accepts integer registers wider than its type (``ld.u8`` into a ``.b32``)."""
    return inst.opcode in _WIDENING_OPCODES


def immediate_fits(value: IntImm | FloatImm, operand_type: str) -> bool:
    """Whether a literal may stand where ``operand_type`` is read: integers in
    integer, bit-size and predicate positions; ``0f``/``0d`` literals in float
    and bit-size positions of their width (decimal floats in float positions)."""
    cls = _type_class(operand_type)
    if isinstance(value, IntImm):
        return cls != "f"
    if cls == "f":
        return value.kind == "dec" or _TYPE_BITS.get(operand_type) == (32 if value.kind == "f" else 64)
    width = 32 if value.kind == "f" else 64
    return cls == "b" and value.kind != "dec" and _TYPE_BITS.get(operand_type) == width


def _chosen_slots(inst: Instruction) -> tuple[_Slot, ...] | None:
    spec = _TABLE.get(inst.opcode)
    if spec is None or spec.slots_fn is not None:
        return None
    kinds = tuple(map(_kind, inst.operands))
    return tuple(s for s in _choose(spec, inst.modifiers, kinds) if not s.rest)


def _writable(op: Operand, slot: _Slot) -> bool:
    match op:
        case Register(name=name):
            return not is_special_register(name)
        case Sink() | Symbol():
            # A bare name may be a register that shadows a parameter of the
            # same name (GCC's ``%stack``): the parser cannot tell them apart.
            return True
        case VectorOperand(elements=items):
            return all(isinstance(e, Sink) or _writable(e, slot) for e in items)
        case PairOperand(first=a, second=b):
            second = slot.second or slot
            return _writable(a, slot) and (second.role is Role.USE or _writable(b, second))
    return False


# PTX's predefined read-only registers; a destination can never be one.
_SPECIAL_RE = re.compile(
    r"%(?:tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|smid|nsmid|gridid"
    r"|is_explicit_cluster|clusterid|nclusterid|cluster_ctaid|cluster_nctaid"
    r"|cluster_ctarank|cluster_nctarank|lanemask_(?:eq|le|lt|ge|gt)"
    r"|clock|clock_hi|clock64|pm[0-7]|pm[0-7]_64|envreg(?:[0-9]|[12][0-9]|3[01])"
    r"|globaltimer|globaltimer_lo|globaltimer_hi|reserved_smem_offset_(?:begin|end|cap|\d+)"
    r"|total_smem_size|aggr_smem_size|dynamic_smem_size|current_graph_exec)"
)


def is_special_register(name: str) -> bool:
    """True for PTX's predefined read-only registers (``%tid``, ``%laneid``, ``%clock64``...)."""
    return _SPECIAL_RE.fullmatch(name) is not None


_SPECIAL_64 = re.compile(r"%(?:clock64|globaltimer|gridid|pm[0-7]_64)")
_SPECIAL_VECTORS = _set("%tid %ntid %ctaid %nctaid %clusterid %nclusterid %cluster_ctaid %cluster_nctaid")


def special_register_type(reg: Register) -> str | None:
    """The type a special register reads as (``.u32``, ``.u64`` for ``%clock64``...);
    None when ``reg`` is not one, or names a vector (``%tid``) without its ``.x``."""
    if not is_special_register(reg.name):
        return None
    if (reg.name in _SPECIAL_VECTORS) != (reg.selector is not None):
        return None
    return ".u64" if _SPECIAL_64.fullmatch(reg.name) else ".u32"


def _shape_problems(inst: Instruction) -> Iterator[str]:
    slots = _chosen_slots(inst)
    if slots is None:
        return
    for i, (op, slot) in enumerate(zip(inst.operands, slots, strict=False)):
        where = f"operand {i + 1} of {inst.mnemonic}"
        is_addr = isinstance(op, (Address, ListOperand))
        if slot.is_address and not is_addr:
            yield f"{where} must be an address [...]"
        elif is_addr and not slot.is_address:
            yield f"{where} cannot be an address"
        elif isinstance(op, PairOperand) and slot.second is None:
            yield f"{where} cannot be a pair a|b"
        elif slot.role is not Role.USE and not slot.is_address and not _writable(op, slot):
            yield f"{where} is written and must be a register"


def _type_problems(inst: Instruction) -> Iterator[str]:
    types = _types_of(inst.modifiers)
    allowed = _TYPE_RULES.get(inst.opcode)
    if allowed is None:
        return
    if len(types) == 2 and types in _MIXED_TYPES.get(inst.opcode, ()):
        return
    if len(types) != 1:
        yield f"{inst.opcode} takes one type modifier, not {len(types)} ({' '.join(types) or 'none'})"
        return
    t = types[0]
    if t not in allowed:
        yield f"{inst.opcode} does not take type {t} (takes {' '.join(sorted(allowed))})"
        return
    mods = set(inst.modifiers)
    cls = _type_class(t)
    if inst.opcode in ("mul", "mad"):
        modes = mods & _INT_MODES
        if cls in "us" and len(modes) != 1:
            yield f"integer {inst.opcode} needs one of .lo .hi .wide"
        if cls == "f" and modes:
            yield f"float {inst.opcode} takes no {' '.join(sorted(modes))}"
        if ".wide" in modes and _TYPE_BITS[t] not in (16, 32):
            yield f"{inst.opcode}.wide takes a 16- or 32-bit type, not {t}"
    if inst.opcode == "mad" and cls == "f" and not mods & _ROUNDING:
        yield "float mad needs a rounding modifier (.rn .rz .rm .rp)"
    if inst.opcode in ("add", "sub") and cls != "f" and mods & _ROUNDING:
        yield f"integer {inst.opcode} takes no rounding modifier"
    if inst.opcode == "setp":
        cmp = [m for m in inst.modifiers if m in _COMPARE]
        if len(cmp) != 1:
            yield "setp needs one comparison (.eq .lt ...)"
        elif cmp[0] not in _COMPARE_BY_CLASS[cls]:
            yield f"setp{cmp[0]} does not compare {t}"
        if bool(mods & _BOOL) != (len(inst.operands) == 4):
            yield "setp takes a boolean operation (.and .or .xor) exactly when it has a fourth operand"
    if inst.opcode == "shfl" and len(mods & _SHFL_MODES) != 1:
        yield "shfl needs exactly one of .up .down .bfly .idx"


def instruction_problems(inst: Instruction) -> list[str]:
    """Why ptxas would refuse ``inst``, as far as the table knows; empty when
    the table has no objection.

    Checks the opcode, its modifiers (known to the opcode, not repeated, at
    most one comparison/rounding/vector/boolean), the operand count and shapes
    (addresses where the signature has them, registers where it writes) and,
    for the opcodes that passes emit (`mov`, `add`, `setp`, `selp`, `shfl`,
    `ld`...), the type modifiers. Register types need the declarations, which
    the table does not see: the builder checks them with `register_fits`.
    """
    if inst.opcode not in _TABLE:
        return [f"unknown opcode {inst.opcode!r}"]
    problems = [f"{inst.opcode} does not take {m}" for m in unknown_modifiers(inst)]
    seen: set[str] = set()
    for m in inst.modifiers:
        # Types and layouts repeat by design (``cvt.rzi.f32.f32``, ``wmma.mma.row.row``).
        if m in seen and m not in _TYPES and m not in _LAYOUT:
            problems.append(f"modifier {m} given twice")
        seen.add(m)
    for kind in _SINGLE_KINDS:
        words = [m for m in inst.modifiers if classify_modifier(m, inst.opcode) is kind]
        if len(words) > 1:
            problems.append(f"more than one {kind.value} modifier: {' '.join(words)}")
    count = operand_count_problem(inst)
    if count is not None:
        return [*problems, count]
    problems.extend(_shape_problems(inst))
    problems.extend(_type_problems(inst))
    return problems
