"""PTX text -> typed IR, in one LALR pass.

The transformer runs inside the Lark LALR parser (no parse tree is built),
which is what makes 100k-line compiler output parse in seconds. Opcodes are
resolved against the instruction table while parsing, so an unknown
instruction is reported with its exact position.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ptxasw import collector, ir
from ptxasw.errors import PtxError, PtxSyntaxError
from ptxasw.ir import isa
from ptxasw.ir.printer import format_expr
from ptxasw.parser.kernel_names import resolve_kernels
from ptxasw.parser.lexer import INIT_LITERAL, SIMPLE_INSTRUCTION, SIMPLE_OPERAND, LexError, PtxLexer
from ptxasw.parser.outline import kernel_spans, select_kernels

GRAMMAR_PATH = Path(__file__).with_name("ptx.lark")


LINKAGE = frozenset({".visible", ".extern", ".weak", ".common"})
STATE_SPACES = frozenset(
    {".reg", ".sreg", ".const", ".global", ".local", ".param", ".shared", ".tex", ".surf"}
)
VECTORS = frozenset({".v2", ".v4", ".v8", ".v16"})

# C precedence of the binary operators of PTX constant expressions.
PRECEDENCE = {
    "*": 10, "/": 10, "%": 10,
    "+": 9, "-": 9,
    "<<": 8, ">>": 8,
    "<": 7, ">": 7, "<=": 7, ">=": 7,
    "==": 6, "!=": 6,
    "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1,
}  # fmt: skip


# Token kinds whose operand depends only on the text (and the declared names):
# built once per parse and shared.
_INIT_LITERAL = re.compile(INIT_LITERAL)
_CACHED_KINDS = frozenset({"REG", "IDENT", "INT", "HEX_FLOAT", "DEC_FLOAT"})


def _loc(path: str, tok: Token) -> ir.SourceLoc:
    return ir.SourceLoc(path, tok.line or 0, tok.column or 0)


def parse_int(text: str) -> int:
    """PTX integer literal: hex, binary, octal (leading 0) or decimal, optional U.

    The lexer takes any run of digits, so ``09`` reaches here; it is a
    `_BadInteger`, which `parse_ptx` reports at the literal.
    """
    body = text[:-1] if text.endswith("U") else text
    try:
        if body[:2] in ("0x", "0X"):
            return int(body[2:], 16)
        if body[:2] in ("0b", "0B"):
            return int(body[2:], 2)
        if len(body) > 1 and body[0] == "0":
            return int(body, 8)
        return int(body)
    except ValueError:
        raise _BadInteger(text) from None


class _BadInteger(ValueError):
    """An integer literal that is not one (``09``: a leading 0 means octal).

    Keeps the token's position when the literal is a lexer token; literals
    cut out of a larger token (an address offset) are found in the text.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = str(text)
        self.line: int | None = getattr(text, "line", None)
        self.col: int | None = getattr(text, "column", None)

    def loc(self, source: str, path: str) -> ir.SourceLoc:
        if self.line is not None:
            return ir.SourceLoc(path, self.line, self.col or 1)
        m = re.search(rf"(?<![0-9A-Za-z_.$%]){re.escape(self.text)}(?![0-9A-Za-z_.])", source)
        if m is None:
            return ir.SourceLoc(path, 1, 1)
        line_start = source.rfind("\n", 0, m.start()) + 1
        return ir.SourceLoc(path, source.count("\n", 0, m.start()) + 1, m.start() - line_start + 1)


class _ToIR(Transformer):  # type: ignore[type-arg]
    """Callbacks, one per grammar rule, building `ir` nodes bottom-up."""

    def __init__(self, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.path = path
        self.comments: list[ir.Comment] = []
        # Whether a name is a register or a variable follows its declaration,
        # not its spelling: inline asm declares registers without '%' (``.reg
        # .pred p;``) and GCC names variables like registers (``.param.u64
        # %stack``, ``.param.u64 %P<2>``, ``.local .b8 %frame_ar[8]``), while
        # another GCC function of the same file declares ``.reg.u64 %stack``.
        # `.reg` and `.param` names live until the end of their function;
        # other variables also stay for the rest of the module.
        self.function_names = _Declarations()
        self.module_names = _Declarations()
        # Operands and guards by their text. IR operands are immutable, so one
        # object can stand for every occurrence: a 50 MB file names the same
        # few hundred registers a million times, and sharing them (and their
        # name strings) is most of the difference between 20x and 10x the
        # input size in memory. The meaning of a name depends on the
        # declarations above, so the cache is emptied whenever one of them
        # changes how a name reads (never for nvcc's ``.reg .b32 %r<9>``).
        self.operand_cache: dict[str, ir.Operand] = {}
        self.guard_cache: dict[str, ir.Guard] = {}
        self.clear_at_function_end = False

    def reset(self, path: str) -> None:
        """Forget everything of the previous parse."""
        self.path = path
        self.comments = []
        self.function_names = _Declarations()
        self.module_names = _Declarations()
        self.operand_cache = {}
        self.guard_cache = {}
        self.clear_at_function_end = False

    def _is_register(self, name: str) -> bool:
        """How a use of ``name`` reads here: the latest declaration, else its spelling."""
        for scope in (self.function_names, self.module_names):
            kind = scope.get(name)
            if kind is not None:
                return kind
        return name.startswith("%")

    def _declare(self, space: str | None, name: str, count: int | None) -> None:
        """Record one declaration (``count`` for ``%r<9>``; see `operand_cache`)."""
        is_register = space == ".reg"
        if count is None:
            if self._is_register(name) == is_register:
                return  # reads as declared already: nothing to record (nvcc's every register)
        elif is_register == name.startswith("%") and not (self.function_names or self.module_names):
            return
        if space not in (".reg", ".param"):
            self.module_names.add(name, count, is_register)
        self.function_names.add(name, count, is_register)
        self.operand_cache.clear()
        self.clear_at_function_end = True

    def _end_function(self) -> None:
        """Forget the function's registers and parameters (see `_declare`)."""
        self.function_names = _Declarations()
        if self.clear_at_function_end:
            self.operand_cache.clear()
            self.clear_at_function_end = False

    def collect_comment(self, tok: Token) -> None:
        """Lexer callback for whole-line comments between top-level items."""
        self.comments.append(ir.Comment(tok.value.rstrip(), _loc(self.path, tok)))

    # ---- atoms and expressions ------------------------------------------

    def atom(self, tok: Any) -> ir.Operand:
        if not isinstance(tok, Token):
            return tok
        kind = tok.type
        if kind in _CACHED_KINDS:
            key = str(tok)
            value = self.operand_cache.get(key)
            if value is None:
                value = self.operand_cache[key] = self._new_atom(kind, key)
            return value
        return self._new_atom(kind, tok)

    def _new_atom(self, kind: str, tok: Any) -> ir.Operand:
        if kind == "REG":
            name, _, selector = tok.partition(".")
            if not self._is_register(name):
                return ir.Symbol(sys.intern(name))
            return ir.Register(sys.intern(name), selector or None)
        if kind == "IDENT":
            if self._is_register(tok):
                return ir.Register(str(tok))
            return ir.Symbol(str(tok))
        if kind == "INT":
            return ir.IntImm(parse_int(tok), str(tok))
        if kind == "HEX_FLOAT":
            return ir.FloatImm("f" if tok[1] in "fF" else "d", str(tok))
        if kind == "DEC_FLOAT":
            return ir.FloatImm("dec", str(tok))
        if kind == "SINK":
            return ir.Sink()
        if kind == "QUAL":  # section names used as values: `.b32 .debug_abbrev`
            return ir.Symbol(str(tok))
        raise PtxSyntaxError(f"unexpected {tok!s}", _loc(self.path, tok))

    def cexpr(self, children: list[Any]) -> ir.Operand:
        if len(children) == 1:
            return self.atom(children[0])
        # Flat chain `a op b op c`: apply C precedence with an operator stack.
        operands: list[Any] = [_as_expr(self.atom(children[0]))]
        operators: list[str] = []
        for i in range(1, len(children), 2):
            op = str(children[i])
            while operators and PRECEDENCE[operators[-1]] >= PRECEDENCE[op]:
                rhs = operands.pop()
                operands.append(ir.BinaryExpr(operators.pop(), operands.pop(), rhs))
            operators.append(op)
            operands.append(_as_expr(self.atom(children[i + 1])))
        while operators:
            rhs = operands.pop()
            operands.append(ir.BinaryExpr(operators.pop(), operands.pop(), rhs))
        return operands[0]

    def ternary(self, children: list[Any]) -> ir.Operand:
        cond, then, other = (_as_expr(self.atom(c)) for c in children)
        return ir.CallExpr("?:", (cond, then, other))

    def unary(self, children: list[Any]) -> ir.Operand:
        op, operand = children
        value = _as_expr(self.atom(operand))
        if op == "-" and isinstance(value, ir.IntImm):
            # Negative literals are values, not expressions, for every later stage.
            return ir.IntImm(-value.value, "-" + (value.text or str(value.value)))
        return ir.UnaryExpr(str(op), value)

    def call_expr(self, children: list[Any]) -> ir.Operand:
        func, *args = children
        return ir.CallExpr(str(func), tuple(self.atom(a) for a in args))

    def paren(self, children: list[Any]) -> ir.Operand:
        return ir.ParenOperand(tuple(self.atom(c) for c in children if c is not None))

    def vector(self, children: list[Any]) -> ir.Operand:
        return ir.VectorOperand(tuple(self.atom(c) for c in children if c is not None))

    def vector_pair(self, children: list[Any]) -> ir.Operand:
        *elements, second = children
        return ir.PairOperand(self.vector(elements), self.atom(second))

    def address(self, children: list[Any]) -> ir.Address:
        """The folded ``[base+offset]`` token of the lexer."""
        body = children[0].value[1:-1].replace(" ", "").replace("\t", "")
        base_text, plus, offset_text = body.partition("+")
        base = self.atom(Token("REG" if base_text[0] == "%" else "IDENT", base_text))
        assert isinstance(base, ir.Register | ir.Symbol)
        if not plus:
            return ir.Address(base, 0)
        return ir.Address(
            base, parse_int(offset_text.lstrip("-")) * (-1 if offset_text[0] == "-" else 1), "+" + offset_text
        )

    def _simple_operand(self, text: str) -> ir.Operand:
        """One operand of an OPERANDS token, built as the full grammar would (shared by text)."""
        if text == "_":  # the sink; as a name (IDENT) the same text means a symbol
            return ir.Sink()
        value = self.operand_cache.get(text)
        if value is None:
            value = self.operand_cache[text] = self._new_simple_operand(text)
        return value

    def _new_simple_operand(self, text: str) -> ir.Operand:
        first = text[0]
        if first == "%":
            return self.atom(Token("REG", text))
        if first == "[":
            return self.address([Token("ADDRESS", text)])
        if first == "-":
            return self.unary([Token("MINUS", "-"), self._simple_operand(text[1:])])
        if first.isdigit():
            kind = "HEX_FLOAT" if text[1:2] in ("f", "F", "d", "D") else "INT"
            return self.atom(Token(kind, text))
        return self.atom(Token("SINK" if text == "_" else "IDENT", text))

    def bracket(self, children: list[Any]) -> ir.Operand:
        items = [self.atom(c) for c in children]
        if len(items) > 1:
            return ir.ListOperand(tuple(items))
        return _address(items[0])

    # ---- instructions ---------------------------------------------------

    def instruction(self, children: list[Any]) -> ir.Instruction:
        first = children[0]
        if first.type == "INSTRUCTION":
            return self._whole_instruction(first)
        guard: ir.Guard | None = None
        if first.type == "GUARD":
            guard = self._guard(first.value)
            children = children[1:]
        mnemonic = children[0]
        loc = _loc(self.path, mnemonic)
        try:
            opcode, modifiers = isa.split_mnemonic(str(mnemonic))
        except isa.UnknownOpcode:
            raise PtxSyntaxError(f"unknown instruction '{mnemonic}'", loc) from None
        operands: tuple[ir.Operand, ...] = ()
        if len(children) > 1:
            items = children[1]
            if isinstance(items, Token):  # the lexer's run of simple operands: each its own top level
                operands = tuple(self._simple_operand(t) for t in SIMPLE_OPERAND.findall(items.value))
            else:
                operands = tuple(_top_level_operand(c, opcode) for c in items)
        for op in operands:
            if isinstance(op, _InvalidAddress):
                raise PtxSyntaxError(
                    f"[{format_expr(op.value)}] is not an address: PTX takes [reg], [symbol], [imm] "
                    "or [base+constant]",
                    loc,
                )
            if opcode != "call" and _register_in_arithmetic(op):
                raise PtxSyntaxError(
                    f"'{format_expr(op)}': a register takes no arithmetic in an operand "
                    "(only [reg+constant] in an address)",
                    loc,
                )
        return ir.Instruction(opcode, modifiers, operands, guard, loc)

    def _whole_instruction(self, tok: Token) -> ir.Instruction:
        """The lexer's one-token instruction, built as the full grammar would."""
        match = SIMPLE_INSTRUCTION.match(tok.value)
        assert match is not None
        guard_text, mnemonic, run = match.groups()
        loc = ir.SourceLoc(self.path, tok.line or 0, (tok.column or 0) + match.start(2))
        try:
            opcode, modifiers = isa.split_mnemonic(mnemonic)
        except isa.UnknownOpcode:
            raise PtxSyntaxError(f"unknown instruction '{mnemonic}'", loc) from None
        guard = self._guard(guard_text) if guard_text else None
        operands: tuple[ir.Operand, ...] = ()
        if run:
            # A simple operand (register, symbol, literal, [base+offset]) is
            # already what `_top_level_operand` would make of it.
            simple = self._simple_operand
            operands = tuple(simple(t) for t in SIMPLE_OPERAND.findall(run))
        return ir.Instruction(opcode, modifiers, operands, guard, loc)

    def _guard(self, text: str) -> ir.Guard:
        """``@%p``, ``@!%p``, and GCC's ``@ %p`` (shared by text, as operands are)."""
        guard = self.guard_cache.get(text)
        if guard is None:
            body = text[1:].replace(" ", "").replace("\t", "")
            negated = body.startswith("!")
            name = sys.intern(body[1:] if negated else body)
            guard = self.guard_cache[text] = ir.Guard(ir.Register(name), negated)
        return guard

    def label(self, children: list[Any]) -> ir.Label:
        tok = children[0]
        return ir.Label(_label_name(tok), _loc(self.path, tok))

    def block(self, children: list[Any]) -> ir.Block:
        return ir.Block(children[0] if children else [])

    def body(self, children: list[Any]) -> list[ir.Statement]:
        if len(children) == 1:
            return children
        children[0].append(children[1])
        return children[0]

    def operands(self, children: list[Any]) -> list[ir.Operand]:
        if len(children) == 1:
            return [self.atom(children[0])]
        children[0].append(self.atom(children[1]))
        return children[0]

    def prototype(self, children: list[Any]) -> ir.CallPrototype:
        label = children[0]
        # Parameter lists before the `_` are the returns, the one after it the parameters.
        sink_at = next(i for i, c in enumerate(children) if isinstance(c, Token) and c.type == "SINK")
        returns = next((c for c in children[1:sink_at] if isinstance(c, list)), None)
        params = next((c for c in children[sink_at + 1 :] if isinstance(c, list)), [])
        noreturn = any(isinstance(c, Token) and c.type == "PERF_DIRECTIVE" for c in children)
        return ir.CallPrototype(_label_name(label), returns, params, noreturn, _loc(self.path, label))

    def target_list(self, children: list[Any]) -> ir.TargetList:
        label, kind, *targets = children
        return ir.TargetList(str(kind), _label_name(label), tuple(map(str, targets)), _loc(self.path, label))

    # ---- declarations ---------------------------------------------------

    def quals(self, children: list[Any]) -> list[Any]:
        return children

    def align(self, children: list[Any]) -> tuple[str, int, Token]:
        """``("align", N, the token of N)``: the token locates a declaration
        that has no other qualifier to point at (``.align 4 x[4];``, where
        a `var_decl` found no token to name before)."""
        return ("align", parse_int(children[0]), children[0])

    def attribute(self, children: list[tuple[str, Token]]) -> tuple[str, str, Token]:
        return ("attribute", ".attribute(" + ", ".join(text for text, _ in children) + ")", children[0][1])

    def attr_item(self, children: list[Any]) -> tuple[str, Token]:
        name, *args = children
        return str(name) + (f"({', '.join(args)})" if args else ""), name

    def reg_count(self, children: list[Any]) -> tuple[str, int]:
        return ("count", parse_int(children[0]))

    def array_dim(self, children: list[Any]) -> tuple[str, int | None]:
        return ("dim", parse_int(children[0]) if children and children[0] is not None else None)

    def initializer(self, children: list[Any]) -> ir.Initializer:
        return _as_expr(self.atom(children[0]))

    def init_list(self, children: list[Any]) -> ir.Initializer:
        return [c for c in children if c is not None]

    def init_literals(self, children: list[Any]) -> ir.Initializer:
        """The items of an INIT_LITERALS token, as `init_list` gives them:
        each literal is a simple operand (shared by text)."""
        return [self._simple_operand(text) for text in _INIT_LITERAL.findall(children[0])]

    def sampler_field(self, children: list[Any]) -> ir.SamplerField:
        return ir.SamplerField(str(children[0]), str(children[1]))

    def var_name(self, children: list[Any]) -> ir.VarName:
        name_tok, *rest = children
        var = ir.VarName(sys.intern(str(name_tok)))
        dims: list[int | None] = []
        for item in rest:
            if isinstance(item, tuple) and item[0] == "count":
                var.count = item[1]
            elif isinstance(item, tuple) and item[0] == "dim":
                dims.append(item[1])
            else:
                var.init = item
        var.array = tuple(dims)
        return var

    def var_decl(self, children: list[Any]) -> ir.VarDecl:
        quals, *names = children
        # The first qualifier word, as always; else the token an .align or
        # .attribute carries (kind, value, token).
        first = next((q for q in quals if isinstance(q, Token)), None) or quals[0][2]
        decl = _sort_qualifiers(quals, _loc(self.path, first))
        decl.names = names
        for v in names:
            self._declare(decl.space, v.name, v.count)
        return decl

    def param(self, children: list[Any]) -> ir.ParamSpec:
        quals, name, *dims = children
        # A parameter has no linkage: ptxas rejects ``.param .b32 .extern r``,
        # and a ParamSpec has no field for it (dropping the word would make a
        # printed module that ptxas accepts).
        decl = _sort_qualifiers(quals, _loc(self.path, name), of_parameter=True)
        self._declare(decl.space, str(name), None)
        return ir.ParamSpec(
            space=decl.space,
            type=decl.type,
            name=str(name),
            align=decl.align,
            vector=decl.vector,
            array=tuple(d[1] for d in dims),
            ptr_attrs=decl.ptr_attrs,
            loc=decl.loc,
        )

    def param_list(self, children: list[Any]) -> list[ir.ParamSpec]:
        return [c for c in children if c is not None]

    # ---- functions --------------------------------------------------------

    def fn_directive(self, children: list[Any]) -> ir.PerfDirective | ir.Pragma:
        head = children[0]
        if isinstance(head, ir.Pragma):
            return head
        values = tuple(parse_int(v) for v in children[1:] if v is not None)
        return ir.PerfDirective(str(head), values, _loc(self.path, head))

    def fn_end(self, children: list[Any]) -> ir.Block | None:
        return children[0] if children else None

    def function(self, children: list[Any]) -> ir.Function:
        linkage: tuple[str, ...] = ()
        if isinstance(children[0], list):
            linkage = tuple(str(q) for q in children[0])
            children = children[1:]
        kind_tok = children[0]
        name_at = next(i for i, c in enumerate(children) if isinstance(c, Token) and c.type == "IDENT")
        returns = children[1] if name_at > 1 else None
        rest = children[name_at + 1 :]
        params: list[ir.ParamSpec] = []
        if rest and isinstance(rest[0], list):
            params = rest[0]
            rest = rest[1:]
        *directives, body = rest
        bad = [q for q in linkage if q not in LINKAGE]
        if bad:
            raise PtxSyntaxError(f"unexpected '{bad[0]}' before {kind_tok}", _loc(self.path, kind_tok))
        self._end_function()
        return ir.Function(
            kind=str(kind_tok),
            name=str(children[name_at]),
            params=params,
            returns=returns,
            linkage=linkage,
            directives=directives,
            body=body,
            loc=_loc(self.path, kind_tok),
        )

    # ---- top level ----------------------------------------------------------

    def version(self, children: list[Any]) -> ir.Version:
        tok = children[0]
        major, dot, minor = str(tok).partition(".")
        if not (dot and major.isdigit() and minor.isdigit()):  # the lexer's number may be 9. or 9.0e1
            raise PtxSyntaxError(f"bad .version '{tok}': expected MAJOR.MINOR", _loc(self.path, tok))
        return ir.Version(int(major), int(minor), _loc(self.path, tok))

    def target(self, children: list[Any]) -> ir.Target:
        return ir.Target(tuple(map(str, children)), _loc(self.path, children[0]))

    def address_size(self, children: list[Any]) -> ir.AddressSize:
        return ir.AddressSize(parse_int(children[0]), _loc(self.path, children[0]))

    def file_dir(self, children: list[Any]) -> ir.FileDirective:
        index, path, *extra = children
        return ir.FileDirective(
            parse_int(index),
            _unquote(path),
            tuple(parse_int(e) for e in extra),
            _loc(self.path, index),
        )

    def alias(self, children: list[Any]) -> ir.Alias:
        return ir.Alias(str(children[0]), str(children[1]), _loc(self.path, children[0]))

    def pragma(self, children: list[Any]) -> ir.Pragma:
        return ir.Pragma(tuple(_unquote(s) for s in children), _loc(self.path, children[0]))

    def loc_dir(self, children: list[Any]) -> ir.LocDirective:
        file, line, col, *extra = children
        return ir.LocDirective(
            parse_int(file),
            parse_int(line),
            parse_int(col),
            ", ".join(extra) if extra else None,
            _loc(self.path, file),
        )

    def loc_extra(self, children: list[Any]) -> str:
        attr, *values = children
        separator = " " if attr == "inlined_at" else ""  # `inlined_at 1 20 3`, `function_name f+4`
        return f"{attr} " + separator.join(values)

    def section(self, children: list[Any]) -> ir.SectionDirective:
        name, *body = children
        return ir.SectionDirective(str(name), body, _loc(self.path, name))

    def section_data(self, children: list[Any]) -> ir.SectionData:
        kind, values = children
        return ir.SectionData(str(kind), tuple(values), _loc(self.path, kind))

    def section_label(self, children: list[Any]) -> ir.Label:
        return self.label(children)

    def section_values(self, children: list[Any]) -> list[ir.Expr]:
        return [_as_expr(self.atom(c)) for c in children]

    def section_symbol(self, children: list[Any]) -> ir.Expr:
        symbol = ir.Symbol(str(children[0]))
        if len(children) == 1:
            return symbol
        return ir.BinaryExpr(str(children[1]), symbol, self.atom(children[2]))  # type: ignore[arg-type]

    def section_value(self, children: list[Any]) -> ir.Expr:
        return _as_expr(self.atom(children[0]))

    def start(self, children: list[Any]) -> ir.Module:
        return ir.Module(_merge_by_line(children, self.comments), self.path)


# ---- helpers shared by the callbacks ----------------------------------------


def _merge_by_line(items: list[Any], comments: list[ir.Comment]) -> list[Any]:
    """Put each comment before the first item that starts below it."""
    if not comments:
        return items
    merged: list[Any] = []
    pending = iter(comments)
    comment = next(pending, None)
    for item in items:
        while comment is not None and comment.loc.line < item.loc.line:
            merged.append(comment)
            comment = next(pending, None)
        merged.append(item)
    if comment is not None:
        merged.append(comment)
        merged.extend(pending)
    return merged


def _label_name(tok: Token) -> str:
    return tok[:-1].rstrip()


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\")


def _as_expr(value: Any) -> Any:
    """Inside an expression, a one-item parenthesised list is a ParenExpr."""
    if isinstance(value, ir.ParenOperand) and len(value.items) == 1:
        return ir.ParenExpr(value.items[0])  # type: ignore[arg-type]
    return value


def _top_level_operand(value: ir.Operand, opcode: str) -> ir.Operand:
    """Give the instruction-level meaning to operand shapes the grammar shares.

    ``%p|%q`` parses as a bitwise-or chain and ``!%p`` as a logical not; at the
    top of an operand they are the pair-result and negated-predicate forms.
    """
    if isinstance(value, ir.BinaryExpr) and value.op == "|" and isinstance(value.lhs, ir.Register | ir.Sink):
        return ir.PairOperand(value.lhs, value.rhs)
    if isinstance(value, ir.UnaryExpr) and value.op == "!" and isinstance(value.operand, ir.Register):
        return ir.Negated(value.operand)
    if opcode != "call":
        return _as_expr(value)
    return value


def _register_in_arithmetic(value: object) -> bool:
    """Whether ``value`` (an operand outside brackets) computes with a
    register (``%r12 % 8452``). ptxas refuses it, and the printer's
    ``%r12%8452`` would not read back."""
    if isinstance(value, ir.BinaryExpr):
        return _mentions_register(value.lhs) or _mentions_register(value.rhs)
    if isinstance(value, ir.UnaryExpr):
        return _register_in_arithmetic(value.operand)
    if isinstance(value, ir.VectorOperand):
        return any(_register_in_arithmetic(v) for v in value.elements)
    return False


def _mentions_register(value: object) -> bool:
    if isinstance(value, ir.Register):
        return True
    if isinstance(value, ir.BinaryExpr):
        return _mentions_register(value.lhs) or _mentions_register(value.rhs)
    if isinstance(value, ir.UnaryExpr):
        return _mentions_register(value.operand)
    return False


def _address(value: ir.Operand) -> ir.Address | _InvalidAddress:
    """``[x]`` with x a register, symbol, integer or ``base+offset`` sum.

    The offset may be a constant expression (``[sym+4*3]``); it is folded, and
    its spelling kept for the printer. Anything else (``[%r1+%r2]``) is not
    PTX; the instruction that holds it reports the error with its position.
    """
    if isinstance(value, ir.Register | ir.Symbol):
        return ir.Address(value, 0)
    if isinstance(value, ir.IntImm):
        return ir.Address(None, value.value, value.text)
    if isinstance(value, ir.BinaryExpr) and value.op in "+-":
        base, off = value.lhs, value.rhs
        offset = _constant(off)
        if isinstance(base, ir.Register | ir.Symbol) and offset is not None:
            sign = 1 if value.op == "+" else -1
            text = off.text if isinstance(off, ir.IntImm) and off.text else format_expr(off)
            return ir.Address(base, sign * offset, value.op + text)
    return _InvalidAddress(value)


class _Declarations:
    """Names of one scope that read as registers (True) or variables (False).

    A counted declaration (``%P<2>``: ``%P0``, ``%P1``) is kept as its prefix
    and count, not expanded: a count may be in the millions. A later
    declaration wins over an earlier one of the same name.
    """

    def __init__(self) -> None:
        self.names: dict[str, bool] = {}
        self.counted: list[tuple[str, int, bool]] = []

    def __bool__(self) -> bool:
        return bool(self.names or self.counted)

    def add(self, name: str, count: int | None, is_register: bool) -> None:
        if count is None:
            self.names[name] = is_register
            return
        self.counted.append((name, count, is_register))
        for old in [n for n in self.names if _counted_index(n, name, count) is not None]:
            del self.names[old]

    def get(self, name: str) -> bool | None:
        kind = self.names.get(name)
        if kind is not None:
            return kind
        for prefix, count, is_register in reversed(self.counted):
            if _counted_index(name, prefix, count) is not None:
                return is_register
        return None


def _counted_index(name: str, prefix: str, count: int) -> int | None:
    """i when ``name`` is ``prefix`` + i with i < count (``%r<9>`` names ``%r0``..``%r8``)."""
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    if not (digits.isascii() and digits.isdigit()) or (digits[0] == "0" and digits != "0"):
        return None
    index = int(digits)
    return index if index < count else None


class _InvalidAddress:
    """A bracketed operand that is not an address; reported by `instruction`."""

    def __init__(self, value: ir.Operand) -> None:
        self.value = value


def _constant(e: ir.Operand) -> int | None:
    """The value of an integer constant expression, or None if it is not one."""
    if isinstance(e, ir.IntImm):
        return e.value
    if isinstance(e, ir.ParenExpr):
        return _constant(e.inner)
    if isinstance(e, ir.UnaryExpr) and e.op in "-~":
        inner = _constant(e.operand)
        return None if inner is None else (-inner if e.op == "-" else ~inner)
    if isinstance(e, ir.BinaryExpr):
        lhs, rhs = _constant(e.lhs), _constant(e.rhs)
        if lhs is None or rhs is None:
            return None
        folded = {
            "+": lambda: lhs + rhs, "-": lambda: lhs - rhs, "*": lambda: lhs * rhs,
            "<<": lambda: lhs << rhs, ">>": lambda: lhs >> rhs,
            "&": lambda: lhs & rhs, "|": lambda: lhs | rhs, "^": lambda: lhs ^ rhs,
        }  # fmt: skip
        return folded[e.op]() if e.op in folded else None
    return None


def _sort_qualifiers(quals: list[Any], loc: ir.SourceLoc, of_parameter: bool = False) -> ir.VarDecl:
    """Split a declaration's qualifier run into linkage, space, type, ...

    After ``.ptr`` the remaining space and alignment qualifiers describe the
    pointee (kernel parameter attributes) and are kept in ``ptr_attrs``.
    ``of_parameter``: the run declares a parameter, which takes no linkage.
    """
    decl = ir.VarDecl(space="", type="", names=[], loc=loc)
    linkage: list[str] = []
    attributes: list[str] = []
    ptr_attrs: list[str] | None = None
    for q in quals:
        if isinstance(q, tuple):
            kind, value = q[0], q[1]
            if ptr_attrs is not None and kind == "align":
                ptr_attrs.append(f".align {value}")
            elif kind == "align":
                decl.align = value
            else:
                attributes.append(value)
            continue
        word = sys.intern(str(q))  # a few dozen distinct words over a whole file
        if of_parameter and word in LINKAGE:
            raise PtxSyntaxError(f"unexpected '{word}' in a parameter", _tok_loc(q, loc))
        if ptr_attrs is not None:
            ptr_attrs.append(word)
        elif word == ".ptr":
            ptr_attrs = [word]
        elif word in LINKAGE:
            linkage.append(word)
        elif word.split("::")[0] in STATE_SPACES and not decl.space:  # .shared::cta too
            decl.space = word
        elif word in VECTORS:
            decl.vector = word
        elif not decl.type:
            decl.type = word
        else:
            raise PtxSyntaxError(f"unexpected qualifier '{word}' after type '{decl.type}'", _tok_loc(q, loc))
    if not decl.space:
        raise PtxSyntaxError("declaration without a state space (.reg, .global, ...)", loc)
    decl.linkage = tuple(linkage)
    decl.attributes = tuple(attributes)
    decl.ptr_attrs = tuple(ptr_attrs or ())
    return decl


def _tok_loc(tok: Any, default: ir.SourceLoc) -> ir.SourceLoc:
    if isinstance(tok, Token) and tok.line is not None:
        return ir.SourceLoc(default.file, tok.line, tok.column or 0)
    return default


# ---- entry points ------------------------------------------------------------


@functools.cache
def _grammar_text() -> str:
    return GRAMMAR_PATH.read_text()


def _cache_path() -> str | bool:
    """Where Lark keeps the compiled LALR tables between processes.

    Building the tables takes ~100 ms, more than the parse of a typical file,
    and the ``ptxas`` wrapper starts a new process per compilation. Lark
    validates the file against a hash of the grammar and its own version, so a
    stale cache is rebuilt, not trusted.
    """
    from ptxasw.driver.cache import cache_dir, default_cache_dir

    # PTXASW_CACHE_DIR=off turns off the drop-in's result cache, not these tables.
    base = str(cache_dir() or default_cache_dir())
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return False
    if not os.access(base, os.W_OK):
        return False
    tag = f"{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(base, f"ptx-grammar-{tag}.lark-cache")


class _Parser:
    """A Lark LALR parser bound to one transformer instance per parse."""

    def __init__(self) -> None:
        self.transformer = _ToIR("<string>")
        self.lark = Lark(
            _grammar_text(),
            parser="lalr",
            lexer=PtxLexer,
            transformer=self.transformer,
            lexer_callbacks={"COMMENT": self.transformer.collect_comment},
            maybe_placeholders=True,
            cache=_cache_path(),
        )


@functools.cache
def _parser() -> _Parser:
    return _Parser()


def load_parser() -> None:
    """Build (or load from the cache) the LALR tables now rather than at the first parse."""
    _parser()


def parse_ptx(text: str, path: str = "<string>") -> ir.Module:
    """Parse PTX text into a Module; raises PtxError with file:line:col.

    Empty (or all-blank) text is an error here, in the one reader every
    command and the drop-in share, so that all of them give the same answer.
    """
    if not text or text.isspace():
        raise PtxError("empty input: a PTX module starts with .version", ir.SourceLoc(path, 1, 1))
    parser = _parser()
    parser.transformer.reset(path)
    # The parse allocates one object per operand and none of them form cycles;
    # pausing the cyclic collector meanwhile saves a fifth of the time.
    try:
        with collector.paused():
            module = parser.lark.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text, path) from None
    except LexError as exc:
        raise PtxSyntaxError(str(exc), ir.SourceLoc(path, exc.line, exc.col)) from None
    except _BadInteger as exc:
        message = f"bad integer '{exc.text}' (a leading 0 means octal)"
        raise PtxSyntaxError(message, exc.loc(text, path)) from None
    finally:
        parser.transformer.reset("<string>")  # the caches would keep the last module's operands alive
    assert isinstance(module, ir.Module)
    module.path = path
    return module


def parse_file(path: str | Path) -> ir.Module:
    """Parse a PTX file, as its bytes are (no newline translation).

    An unreadable or non-UTF-8 file is a `PtxError` with the file's position.
    """
    source = str(path)
    return parse_ptx(read_text(source), source)


def read_text(source: str) -> str:
    """The text of a file named on a command line (``-``: standard input), as its
    bytes are: no newline translation, and bad UTF-8 is a `PtxError` at its byte."""
    if source == "-":
        return _decode(sys.stdin.buffer.read(), "<stdin>")
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        # No position: the file has none. Said like the commands' output errors.
        raise PtxError(f"cannot read {source}: {exc.strerror or exc}") from None
    return _decode(data, source)  # the bytes are not kept beside the text and the IR


def _decode(data: bytes, source: str) -> str:
    """UTF-8 text, or a `PtxError` at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PtxError("file is not UTF-8 text", _byte_loc(source, data, exc.start)) from None


def _byte_loc(source: str, data: bytes, offset: int) -> ir.SourceLoc:
    """The line and column (in characters, as the parser counts) of byte ``offset``.

    Everything before the first undecodable byte is valid UTF-8, so the
    column counts the characters of its line up to that byte.
    """
    line_start = data.rfind(b"\n", 0, offset) + 1
    col = len(data[line_start:offset].decode("utf-8")) + 1
    return ir.SourceLoc(source, data.count(b"\n", 0, offset) + 1, col)


def read_ptx(source: str) -> ir.Module:
    """Parse a file named on a command line, or standard input for ``-``."""
    return parse_ptx(read_text(source), "<stdin>" if source == "-" else source)


def read_kernels(
    source: str, kernels: Collection[str], called_only: bool = False, trampolines: Collection[str] = ()
) -> tuple[ir.Module, list[str] | None]:
    """`read_ptx` that parses, of the file's kernels, only ``kernels`` (the
    others' lines blanked, `outline.select_kernels`: positions unchanged),
    and every kernel's name in file order. When the outline is unsure, or no
    kernel is asked for, the whole file is parsed and the names are None
    (the module's own kernels are all of them).

    ``called_only`` (for an analysis, which follows direct calls only):
    the device functions that are not called by name keep only their
    declarations, with or without kernels asked for. clang's OpenMP
    offload code hands each parallel region to the runtime by address, and
    those bodies are most of the file. ``trampolines``: runtime calls that
    the analysis follows into their function argument (GCC's libgomp entry
    points), whose callers keep every function they name."""
    text = read_text(source)
    path = "<stdin>" if source == "-" else source
    wanted = _by_function_name(text, kernels) if kernels else None
    selected = select_kernels(text, wanted, called_only, trampolines) if kernels or called_only else None
    if selected is None:
        return parse_ptx(text, path), None
    kept, names = selected
    return parse_ptx(kept, path), names


def _by_function_name(text: str, kernels: Collection[str]) -> set[str]:
    """The kernels of ``text`` that ``kernels`` name, by their own name or
    their function name (`kernel_names.resolve_kernels`), and the names that
    name none (so that the outline refuses them and the caller says so)."""
    spans = kernel_spans(text)
    if spans is None:
        return set(kernels)
    chosen, missing = resolve_kernels([s.name for s in spans if s.kind == ".entry"], list(kernels))
    return {*chosen, *missing}


def _syntax_error(exc: UnexpectedInput, text: str, path: str) -> PtxError:
    line = getattr(exc, "line", 0) or 0
    col = getattr(exc, "column", 0) or 0
    if isinstance(exc, UnexpectedEOF) or line < 0:
        line = text.count("\n") + 1
        col = len(text) - (text.rfind("\n") + 1) + 1
        return PtxSyntaxError("unexpected end of file", ir.SourceLoc(path, line, col))
    loc = ir.SourceLoc(path, line, col)
    if isinstance(exc, UnexpectedCharacters):
        return PtxSyntaxError(f"unexpected character {exc.char!r}", loc)
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            return _syntax_error(UnexpectedEOF([]), text, path)
        return PtxSyntaxError(f"unexpected '{tok}'{_expected(exc)}", loc)
    return PtxSyntaxError(str(exc).splitlines()[0], loc)


_TERMINAL_NAMES = {
    "SEMICOLON": "';'",
    "COMMA": "','",
    "RBRACE": "'}'",
    "LBRACE": "'{'",
    "RSQB": "']'",
    "RPAR": "')'",
    "LPAR": "'('",
    "REG": "a register",
    "IDENT": "a name",
    "INT": "an integer",
    "MNEMONIC": "an instruction",
    "QUAL": "a qualifier",
    "LABEL": "a label",
}


def _expected(exc: UnexpectedToken) -> str:
    names = sorted({_TERMINAL_NAMES[t] for t in exc.expected if t in _TERMINAL_NAMES})
    if not names or len(names) > 4:
        return ""
    return "; expected " + " or ".join(names)
