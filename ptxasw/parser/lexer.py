"""A fast, parser-driven lexer for the PTX grammar.

Lark's own lexers try every terminal pattern at every position and build a
token object through several layers; on 100k-line compiler output that is
half of the parse time. PTX lexes with a single master regular expression,
and the few lexemes whose terminal depends on context (a bare word is an
instruction at the start of a statement and a symbol elsewhere; ``9.0`` is a
version after ``.version`` and a float elsewhere; ``<`` opens a register
count in a declaration and compares in an expression) are decided by asking
the LALR parser which terminals it accepts in its current state, exactly as a
contextual lexer would, but only for those lexemes.

It also folds the most common memory operand, ``[%rd1+-8]`` / ``[sym]``,
into one ADDRESS token when the parser accepts one, which cuts the token
count of memory instructions by half.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark import Token
from lark.lexer import Lexer, LexerState

# Order matters: the first alternative that matches wins.
_MASTER = re.compile(
    r"""
    (?P<WS>[ \t\r\n]+)
  | (?P<COMMENT>//[^\n]*|/\*(?:.|\n)*?\*/)
  | (?P<LABEL>[A-Za-z_$%][A-Za-z0-9_$]*[ \t]*:(?!:))
  | (?P<ADDRESS>\[[ \t]*(?:%[A-Za-z0-9_$]+|[A-Za-z_$][A-Za-z0-9_$]*)
        (?:[ \t]*\+[ \t]*-?(?:0[xX][0-9A-Fa-f]+|[0-9]+))?[ \t]*\])
  | (?P<DOTWORD>\.[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z0-9_]+)*)
  | (?P<REG>%[A-Za-z0-9_$]+(?:\.[xyzwrgba](?![A-Za-z0-9_]))?)
  | (?P<HEX_FLOAT>0[fF][0-9A-Fa-f]{8}(?![0-9A-Za-z_])|0[dD][0-9A-Fa-f]{16}(?![0-9A-Za-z_]))
  | (?P<DECIMAL>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<INT>0[xX][0-9A-Fa-f]+U?|0[bB][01]+U?|[0-9]+U?)
  | (?P<WORD>[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*)*)
  | (?P<GUARD>@[ \t]*!?[ \t]*[%A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<STRING>"(?:\\.|[^"\\\n])*")
  | (?P<PUNCT><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:;,{}\[\]()=])
    """,
    re.VERBOSE,
)

# One simple operand: register, symbol, integer or float literal, or a folded
# address. A run of them up to the ';' of an instruction (the shape of nearly
# every compiler-generated instruction) becomes one OPERANDS token.
_SIMPLE_OPERAND = (
    r"(?:%[A-Za-z0-9_$]+(?:\.[xyzwrgba](?![A-Za-z0-9_]))?"
    r"|-?(?:0[fF][0-9A-Fa-f]{8}|0[dD][0-9A-Fa-f]{16}|0[xX][0-9A-Fa-f]+U?|[0-9]+U?)(?![0-9A-Za-z_.])"
    r"|[A-Za-z_$][A-Za-z0-9_$]*"
    r"|\[[ \t]*(?:%[A-Za-z0-9_$]+|[A-Za-z_$][A-Za-z0-9_$]*)"
    r"(?:[ \t]*\+[ \t]*-?(?:0[xX][0-9A-Fa-f]+|[0-9]+))?[ \t]*\])"
)
_RUN = rf"{_SIMPLE_OPERAND}(?:[ \t]*,[ \t]*{_SIMPLE_OPERAND})*"
_OPERAND_RUN = re.compile(rf"[ \t]+({_RUN})[ \t]*(?=;)")
SIMPLE_OPERAND = re.compile(_SIMPLE_OPERAND)

# A whole instruction on one line whose operands are all simple, guard and ';'
# included: one INSTRUCTION token, so one shift and one reduction a line.
_MNEMONIC = r"[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*)*"
_GUARD = r"@[ \t]*!?[ \t]*[%A-Za-z_$][A-Za-z0-9_$]*"
SIMPLE_INSTRUCTION = re.compile(rf"(?:({_GUARD})[ \t]+)?({_MNEMONIC})(?:[ \t]+({_RUN}))?[ \t]*;")

# A brace list of plain literals, integers or hexadecimal floats (a table's
# bytes or coefficients), newlines and all: one INIT_LITERALS token instead
# of two per item. Octal-looking decimals (``09``) are left to the slow
# path, which reports them at the literal.
INIT_LITERAL = (
    r"(?:0[fF][0-9A-Fa-f]{8}|0[dD][0-9A-Fa-f]{16}"
    r"|0[xX][0-9A-Fa-f]+U?|0[bB][01]+U?|0[0-7]*U?|[1-9][0-9]*U?)(?![0-9A-Za-z_.$])"
)
_INIT_LITERALS = re.compile(
    rf"\{{[ \t\r\n]*{INIT_LITERAL}(?:[ \t\r\n]*,[ \t\r\n]*{INIT_LITERAL})*[ \t\r\n]*\}}"
)

_BINOPS = frozenset({"*", "/", "%", "<<", ">>", "<=", ">=", "<", ">", "==", "!=", "&&", "||", "&", "^", "|"})
_PERF_DIRECTIVES = frozenset(
    {
        ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".noreturn",
        ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters",
        ".abi_preserve", ".abi_preserve_control",
    }
)  # fmt: skip


def _past_newlines(lexeme: str, pos: int, line: int) -> tuple[int, int]:
    """The line number and the offset of the line's start after ``lexeme``,
    which starts at ``pos`` on ``line`` and holds a newline."""
    return line + lexeme.count("\n"), pos + lexeme.rindex("\n") + 1


class LexError(Exception):
    """A character that starts no PTX token."""

    def __init__(self, char: str, line: int, col: int) -> None:
        super().__init__(f"unexpected character {char!r}")
        self.char, self.line, self.col = char, line, col


class PtxLexer(Lexer):
    """Lark custom lexer (interface 2: it sees the parser state)."""

    __future_interface__ = 2

    def __init__(self, lexer_conf: Any) -> None:
        # Lark's way of handing comments to the user: a callback per terminal.
        self.on_comment = lexer_conf.callbacks.get("COMMENT")
        # Map literal strings of the grammar (";", ".version", "<" ...) to the
        # names Lark gave their terminals.
        self.literal_names: dict[str, str] = {}
        for term in lexer_conf.terminals:
            if term.pattern.type == "str":
                self.literal_names[term.pattern.value] = term.name

    def _candidates(self, kind: str, value: str) -> tuple[str, ...]:
        """Terminal names a lexeme may stand for, most specific first."""
        if kind == "DOTWORD":
            names = [self.literal_names[value]] if value in self.literal_names else []
            if value in (".entry", ".func"):
                names.append("FUNC_KIND")
            elif value in _PERF_DIRECTIVES:
                names.append("PERF_DIRECTIVE")
            elif value in (".calltargets", ".branchtargets"):
                names.append("TARGET_LIST_KIND")
            names.append("QUAL")
            return tuple(names)
        if kind == "WORD":
            if "." in value:
                return ("MNEMONIC",)
            if value == "_":
                return ("SINK", "IDENT")
            if value in ("function_name", "inlined_at"):
                return ("LOC_ATTR", "IDENT")
            return ("IDENT", "MNEMONIC")
        if kind == "DECIMAL":
            return ("DEC_FLOAT", "VERSION_NUMBER")
        if kind == "PUNCT":
            names = [self.literal_names[value]] if value in self.literal_names else []
            if value in _BINOPS:
                names.append("BINOP")
            if value == "-":
                names.append("MINUS")
            elif value == "+":
                names.append("PLUS")
            elif value in ("!", "~"):
                names.append("UNOP")
            return tuple(names) or (value,)
        return (kind,)

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        text: str = lexer_state.text.text
        states = parser_state.parse_conf.parse_table.states
        match = _MASTER.match
        candidates_cache: dict[tuple[str, str], tuple[str, ...]] = {}
        pos, end = 0, len(text)
        line, line_start = 1, 0
        depth = 0  # brace nesting; comments are reported only at the top level
        while pos < end:
            m = match(text, pos)
            if m is None:
                raise LexError(text[pos], line, pos - line_start + 1)
            kind = m.lastgroup
            value = m.group()
            whole_line = kind == "COMMENT" and not text[line_start:pos].strip()
            if whole_line and depth == 0 and self.on_comment is not None:
                self.on_comment(Token("COMMENT", value, pos, line, pos - line_start + 1))
            if kind == "WS" or kind == "COMMENT":
                if "\n" in value:
                    line, line_start = _past_newlines(value, pos, line)
                pos = m.end()
                continue
            col = pos - line_start + 1
            accepted = states[parser_state.position]
            if (kind == "WORD" or kind == "GUARD") and "INSTRUCTION" in accepted:
                whole = SIMPLE_INSTRUCTION.match(text, pos)
                if whole is not None:
                    yield Token("INSTRUCTION", whole.group(), pos, line, col)
                    pos = whole.end()
                    continue
            if kind == "ADDRESS":
                if "ADDRESS" not in accepted:
                    # Not an operand position (e.g. an array dimension): lex '[' alone.
                    yield Token(self.literal_names["["], "[", pos, line, col)
                    pos += 1
                    continue
                name = "ADDRESS"
            elif kind in ("LABEL", "REG", "HEX_FLOAT", "INT", "GUARD", "STRING"):
                name = kind
            elif value == "{":
                table = _INIT_LITERALS.match(text, pos) if "INIT_LITERALS" in accepted else None
                if table is not None:
                    folded = table.group()
                    yield Token("INIT_LITERALS", folded, pos, line, col)
                    if "\n" in folded:
                        line, line_start = _past_newlines(folded, pos, line)
                    pos = table.end()
                    continue
                depth += 1
                name = self.literal_names[value]
            elif value == "}":
                depth -= 1
                name = self.literal_names[value]
            else:
                key = (kind, value)
                names = candidates_cache.get(key)
                if names is None:
                    names = candidates_cache[key] = self._candidates(kind, value)
                name = next((n for n in names if n in accepted), names[0])
            yield Token(name, value, pos, line, col)
            pos = m.end()
            if name == "MNEMONIC" and "OPERANDS" in states[parser_state.position]:
                run = _OPERAND_RUN.match(text, pos)
                if run is not None:
                    yield Token("OPERANDS", run.group(1), run.start(1), line, run.start(1) - line_start + 1)
                    pos = run.end()
