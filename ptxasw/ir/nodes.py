"""The typed PTX IR that every stage of ptxasw shares.

The IR is deliberately close to the text: a module is a list of top-level
statements, a function body is a list of statements with nested blocks, and an
instruction keeps its opcode, its modifiers in source order, its operands and
its guard. Meaning (which operand is written, which type, which state space)
is never stored twice: it lives in the instruction table (`ptxasw.ir.isa`)
and every later stage asks that table.

Source positions and the spelling of literals are kept for error messages and
for a faithful printer, but they do not take part in equality: two modules are
equal when they mean the same PTX, which is what the round-trip tests check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# Source positions


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A 1-based position in a PTX file, used only for diagnostics."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_LOC = SourceLoc("<generated>", 0, 0)


# --------------------------------------------------------------------------
# Operands and constant expressions


@dataclass(frozen=True, slots=True)
class Register:
    """A register or special register, with an optional vector selector.

    ``%tid.x`` is ``Register("%tid", "x")``; ``%r7`` is ``Register("%r7")``.
    """

    name: str
    selector: str | None = None


@dataclass(frozen=True, slots=True)
class Symbol:
    """A reference to a label, variable or function by name."""

    name: str


@dataclass(frozen=True, slots=True)
class IntImm:
    """An integer literal. ``text`` keeps the source spelling (hex, octal, U suffix)."""

    value: int
    text: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class FloatImm:
    """A floating-point literal.

    ``kind`` is ``"f"`` for ``0fXXXXXXXX`` (32-bit pattern), ``"d"`` for
    ``0dXXXXXXXXXXXXXXXX`` (64-bit pattern) and ``"dec"`` for a decimal literal,
    whose value is kept as its text because PTX rounds it per instruction type.
    """

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class UnaryExpr:
    """``-x``, ``~x`` or ``!x`` inside a constant expression."""

    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class BinaryExpr:
    """A binary constant expression such as ``sym+8`` or ``4*3``."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True, slots=True)
class CallExpr:
    """``generic(sym)`` and the other address operators of initialisers."""

    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class ParenExpr:
    """A parenthesised constant expression, kept so the printer can repeat it."""

    inner: Expr


Expr = IntImm | FloatImm | Symbol | Register | UnaryExpr | BinaryExpr | CallExpr | ParenExpr


@dataclass(frozen=True, slots=True)
class Address:
    """A memory operand ``[base]``, ``[base+offset]`` or ``[imm]``.

    ``base`` is a register, a symbol or None for an absolute address; ``offset``
    is the signed byte offset. ``offset_text`` keeps how the offset was written
    (e.g. ``"+-4"``) so that the printer can reproduce compiler output.
    """

    base: Register | Symbol | None
    offset: int = 0
    offset_text: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ListOperand:
    """A bracketed list ``[a, b, {c, d}]`` as used by texture/surface instructions."""

    items: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class VectorOperand:
    """A brace-enclosed vector ``{%r1, %r2, _, %r4}``."""

    elements: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class ParenOperand:
    """A parenthesised operand list, as in ``call (retval), f, (a, b);``."""

    items: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Negated:
    """A negated predicate operand ``!%p``."""

    operand: Register


@dataclass(frozen=True, slots=True)
class PairOperand:
    """The two-result form ``%p|%q`` (``setp``) or ``%r|%p`` (``shfl``)."""

    first: Operand
    second: Operand


@dataclass(frozen=True, slots=True)
class Sink:
    """The bit bucket ``_``."""


Operand = (
    Register
    | Symbol
    | IntImm
    | FloatImm
    | UnaryExpr
    | BinaryExpr
    | CallExpr
    | ParenExpr
    | Address
    | ListOperand
    | VectorOperand
    | ParenOperand
    | Negated
    | PairOperand
    | Sink
)


# --------------------------------------------------------------------------
# Statements inside function bodies


@dataclass(frozen=True, slots=True)
class Guard:
    """The guard ``@%p`` or ``@!%p`` of an instruction."""

    predicate: Register
    negated: bool = False


@dataclass(slots=True)
class Instruction:
    """One PTX instruction.

    ``opcode`` is the table's name for it, which may span several dotted parts
    (``cp.async.bulk``); ``modifiers`` are the remaining dotted parts, each with
    its leading dot, in source order (ptxas accepts them in any order and so do
    we; the table classifies them).
    """

    opcode: str
    modifiers: tuple[str, ...]
    operands: tuple[Operand, ...]
    guard: Guard | None = None
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)

    @property
    def mnemonic(self) -> str:
        """The opcode with its modifiers as written, e.g. ``ld.global.nc.f32``."""
        return self.opcode + "".join(self.modifiers)

    def has(self, modifier: str) -> bool:
        return modifier in self.modifiers


@dataclass(slots=True)
class Label:
    name: str
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Pragma:
    """``.pragma "nounroll";`` (a list of strings)."""

    strings: tuple[str, ...]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class LocDirective:
    """``.loc file line col [, function_name label+off, inlined_at f l c]``.

    The optional trailing parts of DWARF inlining info are kept as text tokens
    because no stage interprets them.
    """

    file: int
    line: int
    col: int
    extra: str | None = None
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Block:
    """A nested ``{ ... }`` scope; declarations inside are local to it."""

    body: list[Statement]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class ParamSpec:
    """A parameter of a function, entry or call prototype.

    ``ptr_attrs`` holds the ``.ptr.space.align N`` attributes of kernel
    parameters; ``name`` is ``_`` for the anonymous parameters of prototypes.
    """

    space: str  # ".param" or ".reg"
    type: str  # ".b32", ".u64", ".pred", ...
    name: str
    align: int | None = None
    vector: str | None = None  # ".v2", ".v4"
    array: tuple[int | None, ...] = ()
    ptr_attrs: tuple[str, ...] = ()
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class CallPrototype:
    """``label: .callprototype (.param .b32 _) _ (.param .b32 _, ...);``"""

    label: str
    returns: list[ParamSpec] | None
    params: list[ParamSpec]
    noreturn: bool = False
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class TargetList:
    """``label: .calltargets f1, f2;`` or ``.branchtargets L1, L2;``."""

    kind: str  # ".calltargets" | ".branchtargets"
    label: str
    targets: tuple[str, ...]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


# --------------------------------------------------------------------------
# Declarations (registers and variables, at module or function scope)


@dataclass(slots=True)
class VarDecl:
    """A state-space declaration: ``.reg``, ``.global``, ``.shared``, ``.param``...

    ``count`` is the ``<N>`` of a parameterised register range (``%r<12>``).
    ``array`` holds the dimensions (``None`` for ``[]``). ``init`` is the
    initialiser: an expression or a (nested) list of them.
    ``linkage`` holds ``.visible/.extern/.weak/.common`` in source order;
    ``attributes`` holds ``.attribute(...)`` and other qualifiers verbatim.
    """

    space: str
    type: str
    names: list[VarName]
    linkage: tuple[str, ...] = ()
    align: int | None = None
    vector: str | None = None
    attributes: tuple[str, ...] = ()
    ptr_attrs: tuple[str, ...] = ()
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class VarName:
    name: str
    count: int | None = None
    array: tuple[int | None, ...] = ()
    init: Initializer | None = None


@dataclass(frozen=True, slots=True)
class SamplerField:
    """``filter_mode = nearest`` inside a ``.samplerref`` initialiser."""

    name: str
    value: str


Initializer = Expr | SamplerField | list["Initializer"]


# --------------------------------------------------------------------------
# Top-level directives


@dataclass(slots=True)
class Version:
    major: int
    minor: int
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Target:
    targets: tuple[str, ...]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class AddressSize:
    bits: int
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class FileDirective:
    """``.file 1 "path" [, timestamp, size]``."""

    index: int
    path: str
    extra: tuple[int, ...] = ()
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class SectionDirective:
    """``.section .debug_xxx { data }``: DWARF sections of ``-G`` builds.

    The body is a list of data lines (``.b8 1, 2``, ``.b32 label+4``) and labels.
    """

    name: str
    body: list[SectionData | Label]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class SectionData:
    type: str  # ".b8", ".b16", ".b32", ".b64"
    values: tuple[Expr, ...]
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Comment:
    """A whole-line ``//`` comment between top-level items, kept verbatim.

    Tools read some of them: GCC's nvptx-tools link by the ``// BEGIN GLOBAL
    FUNCTION DEF: name`` lines, so dropping them would break offloaded builds.
    """

    text: str
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Alias:
    """``.alias alias_fn, target_fn;``"""

    alias: str
    target: str
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class PerfDirective:
    """A performance-tuning directive of a function header or body.

    ``.maxntid 256, 1, 1``, ``.reqntid``, ``.minnctapersm``, ``.maxnctapersm``,
    ``.maxnreg``, ``.noreturn``, ``.explicitcluster``, ``.reqnctapercluster``,
    ``.maxclusterrank``, ``.abi_preserve``... ``values`` are the numbers after it.
    """

    name: str
    values: tuple[int, ...] = ()
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)


@dataclass(slots=True)
class Function:
    """A ``.entry`` kernel or a ``.func`` device function.

    ``body`` is None for a declaration (prototype) such as
    ``.extern .func (.param .b32 r) vprintf (.param .b64 a, .param .b64 b);``.
    ``directives`` holds the performance directives between the signature and
    the body, in source order.
    """

    kind: str  # ".entry" | ".func"
    name: str
    params: list[ParamSpec]
    returns: list[ParamSpec] | None = None
    linkage: tuple[str, ...] = ()
    directives: list[PerfDirective | Pragma] = field(default_factory=list)
    body: Block | None = None
    loc: SourceLoc = field(default=NO_LOC, compare=False, repr=False)

    @property
    def is_kernel(self) -> bool:
        return self.kind == ".entry"

    def instructions(self) -> Iterator[Instruction]:
        """All instructions of the body, nested blocks included, in text order."""
        if self.body is not None:
            yield from iter_instructions(self.body.body)

    def declarations(self, space: str | None = None) -> Iterator[VarDecl]:
        """The body's declarations (of state space ``space``, or all), nested blocks
        included, in text order."""
        if self.body is not None:
            yield from (d for d in iter_declarations(self.body.body) if space is None or d.space == space)


Statement = (
    Instruction | Label | VarDecl | Block | Pragma | LocDirective | CallPrototype | TargetList | PerfDirective
)

TopLevel = (
    Version
    | Target
    | AddressSize
    | FileDirective
    | SectionDirective
    | VarDecl
    | Function
    | Alias
    | Pragma
    | LocDirective
    | Comment
)


@dataclass(frozen=True, slots=True)
class ModuleIndex:
    """What a module's top level holds, by kind and name: taken once per
    module (`Module.index`), since every kernel's analysis asks and a
    generated file holds 12,000 of them."""

    items: list[TopLevel]  # the list indexed (see `Module.index`)
    length: int
    functions: tuple[Function, ...]
    by_name: dict[str, Function]  # the first function of each name (a declaration may come first)
    definitions: dict[str, Function]  # functions with a body, by name
    aliases: dict[str, str]  # ``.alias`` name -> target
    variables: tuple[VarDecl, ...]  # the module-level declarations
    names: frozenset[str]  # every name declared at the top level: variables and functions
    files: dict[int, str]  # ``.file`` index -> path
    launch_blocks: dict[str, tuple[int, int, int]]  # kernel -> block GCC's offload map fixes

    @staticmethod
    def of(items: list[TopLevel]) -> ModuleIndex:
        functions = tuple(item for item in items if isinstance(item, Function))
        by_name: dict[str, Function] = {}
        for fn in functions:
            by_name.setdefault(fn.name, fn)
        variables = tuple(item for item in items if isinstance(item, VarDecl))
        names = {fn.name for fn in functions} | {n.name for decl in variables for n in decl.names}
        return ModuleIndex(
            items=items,
            length=len(items),
            functions=functions,
            by_name=by_name,
            definitions={fn.name: fn for fn in functions if fn.body is not None},
            aliases={item.alias: item.target for item in items if isinstance(item, Alias)},
            variables=variables,
            names=frozenset(names),
            files={item.index: item.path for item in items if isinstance(item, FileDirective)},
            launch_blocks=_offload_map_blocks(items),
        )


_FUNC_MAP = re.compile(r'//:FUNC_MAP "([^"]+)"((?:\s*,\s*\w+)*)')


def _offload_map_blocks(items: list[TopLevel]) -> dict[str, tuple[int, int, int]]:
    """The block each OpenACC kernel of GCC's offloaded PTX is launched with.

    GCC's nvptx back end writes ``//:FUNC_MAP "kernel", gangs, workers,
    vector`` for mkoffload; libgomp's nvptx plugin launches the kernel with
    a block of (vector, workers, 1), taking each dimension that is not 0
    from this map (0: chosen at run time). Where both are given the shape
    is as fixed as a ``.reqntid`` would make it; OpenMP kernels (no
    dimensions) and a run-time worker count give none."""
    blocks: dict[str, tuple[int, int, int]] = {}
    for item in items:
        if not isinstance(item, Comment) or not item.text.startswith("//:FUNC_MAP"):
            continue
        found = _FUNC_MAP.match(item.text)
        if found is None:
            continue
        try:
            dims = [int(d.strip(), 0) for d in found.group(2).split(",")[1:]]
        except ValueError:
            continue
        if len(dims) == 3 and dims[1] > 0 and dims[2] > 0:
            blocks[found.group(1)] = (dims[2], dims[1], 1)
    return blocks


@dataclass(slots=True)
class Module:
    """A whole PTX file: the top-level statements in source order."""

    items: list[TopLevel]
    path: str = field(default="<string>", compare=False)
    _index: ModuleIndex | None = field(default=None, init=False, repr=False, compare=False)

    def index(self) -> ModuleIndex:
        """The top level by kind and name, taken again when ``items`` is
        another list or another length (the passes replace the list; none
        swaps an item inside it)."""
        index = self._index
        if index is None or index.items is not self.items or index.length != len(self.items):
            index = self._index = ModuleIndex.of(self.items)
        return index

    @property
    def functions(self) -> list[Function]:
        return list(self.index().functions)

    def function(self, name: str) -> Function:
        return self.index().by_name[name]

    @property
    def kernels(self) -> list[Function]:
        return [fn for fn in self.index().functions if fn.is_kernel and fn.body is not None]

    @property
    def version(self) -> tuple[int, int] | None:
        for item in self.items:
            if isinstance(item, Version):
                return (item.major, item.minor)
        return None

    def instructions(self) -> Iterator[Instruction]:
        for fn in self.functions:
            yield from fn.instructions()


def iter_declarations(body: list[Statement]) -> Iterator[VarDecl]:
    for stmt in body:
        if isinstance(stmt, VarDecl):
            yield stmt
        elif isinstance(stmt, Block):
            yield from iter_declarations(stmt.body)


def iter_instructions(body: list[Statement]) -> Iterator[Instruction]:
    for stmt in body:
        if isinstance(stmt, Instruction):
            yield stmt
        elif isinstance(stmt, Block):
            yield from iter_instructions(stmt.body)
