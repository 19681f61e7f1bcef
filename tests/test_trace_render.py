"""Trace rendering: the printed text means what the analysis computed, and
printing a kernel costs one visit per distinct subterm.

The printer's notation is exact (bit-vector arithmetic at the operands'
width; widths change only at ``zextN``/``sextN``/``x[hi:lo]``/``concat``).
The property tests check that with a small evaluator of that notation written
here: for random terms over the operators the symbolic domain builds, the
evaluated text equals Z3's value of the term, for random variable values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import z3
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxasw.emulator.symbolic.domain import Printer, SymbolicDomain, pretty, simplify
from ptxasw.emulator.symbolic.executor import KernelAnalysis, analyze_kernel
from ptxasw.parser.frontend import parse_ptx

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"

# --------------------------------------------------------------------------
# An evaluator of the printed notation

_TOKEN = re.compile(
    r"\s*(?:(?P<sized>\d+'h[0-9a-f]+)|(?P<num>-?0x[0-9a-f]+)|(?P<int>\d+)|(?P<name>[%A-Za-z_$][\w.$#%!@]*)"
    r"|(?P<op>>>u|>=u|<=u|<u|>u|/u|%u|<<|>>|>=|<=|==|!=|&&|\|\||[-+*/%&|^~!<>?:()\[\],]))"
)

_CMP_OPS = ("==", "!=", "<u", "<=u", ">u", ">=u", "<", "<=", ">", ">=")
_BIN_OPS = ("<<", ">>u", ">>", "&", "|", "^", "/u", "%u", "/", "%", *_CMP_OPS)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None and m.end() > pos, f"cannot lex {text[pos:]!r} in {text!r}"
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
    return out


class _Val:
    """A bit-vector value (``width`` None: a literal whose width comes from
    its context) or a Boolean (``width`` 0)."""

    def __init__(self, value: int, width: int | None) -> None:
        self.value, self.width = value, width

    def sized(self, width: int) -> _Val:
        if self.width == 0:  # a predicate used as a 1-bit value
            assert width == 1
            return _Val(self.value, 1)
        assert self.width in (None, width), (self.width, width)
        return _Val(self.value % (1 << width), width)


def _unify(a: _Val, b: _Val, arithmetic: bool = False) -> tuple[_Val, _Val, int]:
    """Operands at one width; two predicates stay Booleans (width 0) unless
    ``arithmetic`` (a sum, product or bit operation of two 1-bit values)."""
    if a.width == 0 and b.width == 0 and not arithmetic:
        return a, b, 0
    # A predicate next to a bit-vector is the 1-bit value 0 or 1.
    a, b = (_Val(x.value, 1) if x.width == 0 else x for x in (a, b))
    w = a.width or b.width
    assert w is not None, "two literals: width unknown"
    return a.sized(w), b.sized(w), w


def _signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) else v


class _Evaluator:
    def __init__(self, text: str, env: dict[str, _Val]) -> None:
        self.toks = _tokens(text)
        self.pos = 0
        self.env = env

    def peek(self) -> str | None:
        return self.toks[self.pos][1] if self.pos < len(self.toks) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        tok = self.toks[self.pos]
        assert expected is None or tok[1] == expected, (tok, expected)
        self.pos += 1
        return tok

    def run(self) -> _Val:
        v = self.expr()
        assert self.pos == len(self.toks), f"trailing {self.toks[self.pos :]}"
        return v

    def expr(self) -> _Val:
        v = self.logic()
        if self.peek() == "?":
            self.take()
            a = self.expr()
            self.take(":")
            b = self.expr()
            assert v.width == 0
            a, b, _ = _unify(a, b)
            return a if v.value else b
        return v

    def logic(self) -> _Val:
        v = self.binary()
        op = self.peek()
        if op in ("&&", "||"):
            vals = [v]
            while self.peek() == op:
                self.take()
                vals.append(self.binary())
            assert all(x.width == 0 for x in vals)
            bits = [bool(x.value) for x in vals]
            return _Val(int(all(bits) if op == "&&" else any(bits)), 0)
        return v

    def binary(self) -> _Val:
        a = self.sum()
        op = self.peek()
        if op not in _BIN_OPS:
            return a
        self.take()
        b = self.sum()
        if op in ("&", "|", "^"):  # associative: chains of one operator
            while self.peek() == op:
                self.take()
                a, b, w = _unify(a, b, arithmetic=True)
                a = _Val({"&": a.value & b.value, "|": a.value | b.value, "^": a.value ^ b.value}[op], w)
                b = self.sum()
        assert self.peek() not in _BIN_OPS, "binary operators chained without parentheses"
        a, b, w = _unify(a, b, arithmetic=op not in _CMP_OPS)
        x, y = a.value, b.value
        if op in _CMP_OPS:
            if w and op in ("<", "<=", ">", ">="):
                x, y = _signed(x, w), _signed(y, w)
            result = {
                "==": x == y,
                "!=": x != y,
                "<u": x < y,
                "<=u": x <= y,
                ">u": x > y,
                ">=u": x >= y,
                "<": x < y,
                "<=": x <= y,
                ">": x > y,
                ">=": x >= y,
            }[op]
            return _Val(int(result), 0)
        mask = (1 << w) - 1
        if op == "<<":
            r = 0 if y >= w else x << y
        elif op == ">>u":
            r = 0 if y >= w else x >> y
        elif op == ">>":
            r = _signed(x, w) >> min(y, w - 1)
        elif op == "&":
            r = x & y
        elif op == "|":
            r = x | y
        elif op == "^":
            r = x ^ y
        elif op == "/u":
            r = mask if y == 0 else x // y
        elif op == "%u":
            r = x if y == 0 else x % y
        else:
            raise AssertionError(f"operator {op} not generated")
        return _Val(r & mask, w)

    def sum(self) -> _Val:
        v = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            rhs = self.product()
            v, rhs, w = _unify(v, rhs, arithmetic=True)
            v = _Val((v.value + rhs.value if op == "+" else v.value - rhs.value) % (1 << w), w)
        return v

    def product(self) -> _Val:
        v = self.unary()
        while self.peek() == "*":
            self.take()
            rhs = self.unary()
            v, rhs, w = _unify(v, rhs, arithmetic=True)
            v = _Val(v.value * rhs.value % (1 << w), w)
        return v

    def unary(self) -> _Val:
        op = self.peek()
        if op in ("-", "~", "!"):
            self.take()
            v = self.unary()
            if op == "!":
                assert v.width == 0
                return _Val(1 - v.value, 0)
            if v.width == 0:
                v = _Val(v.value, 1)
            assert v.width, "unary operator on a literal"
            return _Val((-v.value if op == "-" else ~v.value) % (1 << v.width), v.width)
        return self.postfix()

    def postfix(self) -> _Val:
        v = self.primary()
        while self.peek() == "[":
            self.take()
            hi = lo = self.number()
            if self.peek() == ":":
                self.take()
                lo = self.number()
            self.take("]")
            if v.width == 0:
                v = _Val(v.value, 1)
            assert v.width, "slice of a literal"
            v = _Val((v.value >> lo) & ((1 << (hi - lo + 1)) - 1), hi - lo + 1)
        return v

    def number(self) -> int:
        kind, text = self.take()
        assert kind == "int", text
        return int(text)

    def primary(self) -> _Val:
        kind, text = self.take()
        if kind == "num":
            return _Val(int(text, 16), None)
        if kind == "sized":
            width, digits = text.split("'h")
            return _Val(int(digits, 16), int(width))
        if text == "(":
            v = self.expr()
            self.take(")")
            return v
        if text in ("true", "false"):
            return _Val(int(text == "true"), 0)
        assert kind == "name", text
        if self.peek() == "(":
            self.take()
            args = [self.expr()]
            while self.peek() == ",":
                self.take()
                args.append(self.expr())
            self.take(")")
            return self.call(text, args)
        return self.env[text]

    def call(self, name: str, args: list[_Val]) -> _Val:
        m = re.fullmatch(r"(zext|sext)(\d+)", name)
        args = [_Val(x.value, 1) if x.width == 0 else x for x in args]  # predicates are 1-bit values
        if m:
            (x,) = args
            assert x.width, f"{name} of a literal"
            w = int(m.group(2))
            value = x.value if m.group(1) == "zext" else _signed(x.value, x.width) % (1 << w)
            return _Val(value, w)
        assert name == "concat", f"unknown function {name}"
        value, width = 0, 0
        for x in args:
            assert x.width, "concat of a literal"
            value, width = (value << x.width) | x.value, width + x.width
        return _Val(value, width)


def evaluate(text: str, env: dict[str, _Val], definitions: Sequence[tuple[str, str]] = ()) -> _Val:
    env = dict(env)
    for name, body in definitions:
        env[name] = _Evaluator(body, env).run()
    return _Evaluator(text, env).run()


def truth(term: z3.ExprRef, values: dict[z3.ExprRef, int]) -> int:
    ground = z3.simplify(z3.substitute(term, *[(v, z3.BitVecVal(x, v.size())) for v, x in values.items()]))
    if z3.is_true(ground) or z3.is_false(ground):
        return int(z3.is_true(ground))
    assert z3.is_bv_value(ground), ground
    return ground.as_long()


# --------------------------------------------------------------------------
# Random terms over the domain's operators

VARS = {w: (z3.BitVec(f"a{w}", w), z3.BitVec(f"b{w}", w)) for w in (8, 32, 64)}
ALL_VARS = [v for pair in VARS.values() for v in pair]


@st.composite
def bv_terms(draw: st.DrawFn, width: int, depth: int) -> z3.BitVecRef:
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(_leaf(width))
    choices = ["arith", "unary", "ext", "extract", "concat", "ite", "sext_concat", "zero_concat"]
    if width == 1:
        choices.append("pred")
    kind = draw(st.sampled_from(choices))
    sub = depth - 1
    if kind == "arith":
        op = draw(st.sampled_from(["+", "-", "*", "&", "|", "^", "<<", ">>u", ">>", "/u", "%u"]))
        a = draw(bv_terms(width, sub))
        if draw(st.booleans()):
            b = z3.BitVecVal(draw(st.integers(0, (1 << width) - 1)), width)
        else:
            b = draw(bv_terms(width, sub))
        return {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "&": lambda: a & b,
            "|": lambda: a | b,
            "^": lambda: a ^ b,
            "<<": lambda: a << b,
            ">>u": lambda: z3.LShR(a, b),
            ">>": lambda: a >> b,
            "/u": lambda: z3.UDiv(a, b),
            "%u": lambda: z3.URem(a, b),
        }[op]()
    if kind == "unary":
        a = draw(bv_terms(width, sub))
        return -a if draw(st.booleans()) else ~a
    if kind == "ext" and width > 1:
        inner = draw(st.sampled_from([w for w in (1, 2, 8, 16, 32) if w < width]))
        a = draw(bv_terms(inner, sub))
        return z3.ZeroExt(width - inner, a) if draw(st.booleans()) else z3.SignExt(width - inner, a)
    if kind == "extract":
        inner = draw(st.sampled_from([w for w in (8, 32, 64) if w > width] or [width]))
        lo = draw(st.integers(0, inner - width))
        return z3.Extract(lo + width - 1, lo, draw(bv_terms(inner, sub)))
    if kind == "concat" and width > 1:
        hi = draw(st.integers(1, width - 1))
        return z3.Concat(draw(bv_terms(hi, sub)), draw(bv_terms(width - hi, sub)))
    if kind == "sext_concat" and width > 2:
        # The rewriter's spelling of a sign extension: copies of the top bit.
        inner = draw(st.integers(max(1, width - 4), width - 1))
        a = draw(bv_terms(inner, sub))
        top = z3.Extract(inner - 1, inner - 1, a)
        return z3.Concat(*([top] * (width - inner)), a)
    if kind == "zero_concat" and width > 1:
        inner = draw(st.integers(1, width - 1))
        return z3.Concat(z3.BitVecVal(0, width - inner), draw(bv_terms(inner, sub)))
    if kind == "pred":
        c = draw(bool_terms(sub))
        one, zero = z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
        return z3.If(c, one, zero) if draw(st.booleans()) else z3.If(c, zero, one)
    if kind == "ite":
        return z3.If(draw(bool_terms(sub)), draw(bv_terms(width, sub)), draw(bv_terms(width, sub)))
    return draw(_leaf(width))


@st.composite
def _leaf(draw: st.DrawFn, width: int) -> z3.BitVecRef:
    if width in VARS:
        return draw(st.sampled_from(VARS[width]))
    inner = draw(st.sampled_from([w for w in VARS if w > width]))
    lo = draw(st.integers(0, inner - width))
    return z3.Extract(lo + width - 1, lo, draw(st.sampled_from(VARS[inner])))


@st.composite
def bool_terms(draw: st.DrawFn, depth: int) -> z3.BoolRef:
    kind = draw(st.sampled_from(["cmp", "cmp", "not", "and", "or"] if depth > 0 else ["cmp"]))
    if kind == "cmp":
        width = draw(st.sampled_from([8, 32]))
        a = draw(bv_terms(width, max(depth - 1, 0)))
        b = draw(bv_terms(width, max(depth - 1, 0))) if draw(st.booleans()) else z3.BitVecVal(3, width)
        op = draw(st.sampled_from([z3.ULT, z3.ULE, z3.UGT, z3.UGE, "<", "<=", ">", ">=", "==", "!="]))
        if isinstance(op, str):
            return {
                "<": lambda: a < b,
                "<=": lambda: a <= b,
                ">": lambda: a > b,
                ">=": lambda: a >= b,
                "==": lambda: a == b,
                "!=": lambda: a != b,
            }[op]()
        return op(a, b)
    if kind == "not":
        return z3.Not(draw(bool_terms(depth - 1)))
    parts = draw(st.lists(bool_terms(depth - 1), min_size=2, max_size=3))
    return z3.And(*parts) if kind == "and" else z3.Or(*parts)


def _env(values: dict[z3.ExprRef, int]) -> dict[str, _Val]:
    return {str(v): _Val(x, v.size()) for v, x in values.items()}


@st.composite
def assignments(draw: st.DrawFn) -> dict[z3.ExprRef, int]:
    special = st.sampled_from([0, 1, 2, 3])
    out = {}
    for v in ALL_VARS:
        top = (1 << v.size()) - 1
        out[v] = draw(
            st.one_of(st.integers(0, top), special, st.sampled_from([top, top >> 1, (top >> 1) + 1]))
        )
    return out


def _check(term: z3.ExprRef, values: dict[z3.ExprRef, int]) -> None:
    expected = truth(term, values)
    width = term.size() if z3.is_bv(term) else 0
    for candidate in (term, simplify(term)):
        text = pretty(candidate, max_len=None)
        got = evaluate(text, _env(values))
        if got.width is None:  # the whole term is a constant
            got = got.sized(width)
        assert got.value == expected, (text, candidate.sexpr())
        # The same with every repeated subterm named (DAG-aware sharing).
        printer = Printer(share_min=1)
        printer.count_uses([candidate])
        text = printer.text(candidate)
        got = evaluate(text, _env(values), printer.definitions)
        if got.width is None:
            got = got.sized(width)
        assert got.value == expected, (printer.definitions, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 8, 32, 64]).flatmap(lambda w: bv_terms(w, 4)), assignments())
def test_printed_bitvector_terms_mean_what_z3_computes(term: z3.BitVecRef, values: dict) -> None:
    _check(term, values)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bool_terms(3), assignments())
def test_printed_conditions_mean_what_z3_computes(term: z3.BoolRef, values: dict) -> None:
    _check(term, values)


# --------------------------------------------------------------------------
# Specific shapes


def test_negations_print_every_conjunct() -> None:
    """Negations built while printing once had their ids reused under the
    printer's id-keyed cache: three negated bounds printed the first twice."""
    v = z3.BitVecs("i j nz", 32)
    cond = z3.And(*[z3.Not(z3.ULT(x, k + 1)) for k, x in enumerate(v)])
    assert pretty(cond) == "i >=u 0x1 && j >=u 0x2 && nz >=u 0x3"
    many = z3.BitVecs(" ".join(f"v{k}" for k in range(12)), 32)
    text = pretty(z3.Or(*[z3.Not(z3.ULT(x, k + 1)) for k, x in enumerate(many)]))
    assert text == " || ".join(f"v{k} >=u {k + 1:#x}" for k in range(12))
    assert pretty(z3.Not(z3.Or(z3.ULT(v[0], 1), z3.ULT(v[2], 3)))) == "i >=u 0x1 && nz >=u 0x3"


def test_extensions_and_slices_print_distinctly() -> None:
    x, y = z3.BitVec("x", 32), z3.BitVec("y", 32)
    sym = SymbolicDomain()
    pairs = [
        (z3.ZeroExt(30, z3.Extract(1, 0, x)) + y, z3.Extract(1, 0, x) + z3.Extract(1, 0, y)),
        (z3.ZeroExt(32, x + y), z3.ZeroExt(32, x) + z3.ZeroExt(32, y)),
        (z3.SignExt(32, x), z3.ZeroExt(32, x)),
        (sym.sext(x, 64), sym.zext(x, 64)),
    ]
    for a, b in pairs:
        assert pretty(a) != pretty(b), (a, b)
    assert pretty(z3.ZeroExt(30, z3.Extract(1, 0, x)) + y) == "zext32(x[1:0]) + y"
    # The rewriter spells a sign extension as copies of the sign bit: print it compactly.
    spelt = z3.simplify(z3.SignExt(32, x), elim_sign_ext=True)
    assert z3.is_app_of(spelt, z3.Z3_OP_CONCAT)
    assert pretty(spelt) == "sext64(x)"
    assert pretty(z3.simplify(z3.ZeroExt(32, x))) == "zext64(x)"


def test_a_negated_shared_condition_is_spelt_out() -> None:
    """A path condition ``!(a || b)`` whose ``a || b`` is shared prints as
    ``!a && !b`` with the comparisons flipped, not as ``!t1``."""
    x, y = z3.BitVecs("x y", 32)
    c = z3.Or(z3.ULT(x, 5), z3.ULT(y, 7))
    roots = [z3.Not(c), z3.And(c, z3.ULT(x, y))]
    printer = Printer(share_min=10)
    printer.count_uses(roots)
    assert printer.text(roots[1]) == "t1 && x <u y"
    assert printer.definitions == [("t1", "x <u 0x5 || y <u 0x7")]
    assert printer.text(roots[0]) == "x >=u 0x5 && y >=u 0x7"


def test_shared_subterms_are_named_once_and_text_stays_linear() -> None:
    """A chain of values each used twice prints exponentially long inline;
    named, it is linear and exact (no elision)."""
    x = z3.BitVec("x", 32)
    terms = [x]
    for k in range(60):
        prev = terms[-1]
        terms.append(prev * prev + prev + k)
    top = terms[-1]
    printer = Printer(share_min=8)
    printer.count_uses([top])
    text = printer.text(top)
    total = len(text) + sum(len(body) for _, body in printer.definitions)
    assert total < 60 * 40 and "..." not in text
    assert all("..." not in body for _, body in printer.definitions)
    values = {x: 7}
    assert evaluate(text, {"x": _Val(7, 32)}, printer.definitions).value == truth(top, values)


# --------------------------------------------------------------------------
# Whole traces

STENCIL_1D = """
.visible .entry stencil3(.param .u64 in, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<6>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.s32 %rd4, %r5, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5+-4];
    ld.global.f32 %f2, [%rd5];
    ld.global.f32 %f3, [%rd5+4];
    add.f32 %f4, %f1, %f2;
    add.f32 %f5, %f4, %f3;
    cvta.to.global.u64 %rd6, %rd2;
    add.s64 %rd7, %rd6, %rd4;
    st.global.f32 [%rd7], %f5;
    ld.global.f32 %f1, [%rd5];
DONE:
    ret;
}
"""


def _analysis() -> KernelAnalysis:
    return analyze_kernel(parse_ptx(HEADER + STENCIL_1D, "<test>"), "stencil3")


def test_overwritten_loads_are_reported_as_may_alias_store() -> None:
    result = _analysis()
    flows = [
        f for f in result.flows if f.trace and f.trace[-1].kind == "ld" and f.trace[-1].space == ".global"
    ]
    (flow,) = flows
    store = next(i for i, a in enumerate(flow.trace) if a.kind == "st")
    loads = [i for i, a in enumerate(flow.trace) if a.kind == "ld" and a.space == ".global"]
    assert all(flow.may_alias_store[i] == store for i in loads[:3])
    doc = result.to_json()
    accesses = next(f for f in doc["flows"] if f["id"] == flow.id)["accesses"]
    by_index = {a["index"]: a for a in accesses}
    assert by_index[loads[0]]["may_alias_store"] == store
    assert all("killed_by" not in a for a in accesses)
    text = result.format()
    assert f"may alias store #{store}" in text and "overwritten" not in text


def test_shared_prefix_summary_counts_only_the_accesses_shown(tmp_path: Path) -> None:
    from ptxasw.cli.trace import trace_command

    result = _analysis()
    forked = [f for f in result.flows if f.parent is not None and f.fork_index]
    assert forked, "the bounds check forks the flow after the parameter loads"
    ptx = tmp_path / "k.ptx"
    ptx.write_text(HEADER + STENCIL_1D)
    runner = CliRunner()
    every = runner.invoke(trace_command, [str(ptx)])
    assert every.exit_code == 0, every.output
    assert re.search(r"\.\.\. 3 accesses as in flow 0", every.output), every.output
    only_global = runner.invoke(trace_command, [str(ptx), "--space", "global"])
    assert only_global.exit_code == 0, only_global.output
    # The three shared accesses are parameter loads: none of them is shown.
    assert "accesses as in flow" not in only_global.output, only_global.output


def test_kernels_of_one_file_print_as_each_alone(tmp_path: Path) -> None:
    """``trace FILE`` reads the terms of its kernels through one shared
    snapshot; every kernel's text and JSON are still what ``trace -k`` of
    that kernel alone prints (but for the times measured)."""
    from ptxasw.cli.trace import trace_command

    kernels = [STENCIL_1D.replace("stencil3", f"stencil{i}") for i in range(3)] + [CHAIN]
    ptx = tmp_path / "many.ptx"
    ptx.write_text(HEADER + "".join(kernels))
    runner = CliRunner()

    def untimed(text: str) -> str:
        return re.sub(r'(, [0-9.]+ s$|"[a-z_]*seconds": [0-9.e-]+)', "", text, flags=re.M)

    names = ["stencil0", "stencil1", "stencil2", "chain"]
    every = runner.invoke(trace_command, [str(ptx)])
    assert every.exit_code == 0, every.output
    alone = [runner.invoke(trace_command, [str(ptx), "-k", k]).output.rstrip("\n") for k in names]
    assert untimed(every.output.rstrip("\n")) == untimed("\n\n".join(alone))
    lines = runner.invoke(trace_command, [str(ptx), "--json-lines"]).output.splitlines()
    for line, name in zip(lines, names, strict=True):
        one = runner.invoke(trace_command, [str(ptx), "-k", name, "--json-lines"]).output
        assert untimed(line) == untimed(one.strip())


CHAIN = (
    """
.visible .entry chain(.param .u64 out)
{
    .reg .b32 %r<20>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
"""
    + "".join(
        f"    mul.lo.s32 %r{2 * k}, %r{2 * k - 1}, %r{2 * k - 1};\n"
        f"    add.s32 %r{2 * k + 1}, %r{2 * k}, %r{2 * k - 1};\n"
        for k in range(1, 8)
    )
    + """
    mul.wide.u32 %rd2, %r15, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r15;
    ret;
}
"""
)


def test_shared_subterms_in_a_trace_are_named_and_mean_the_same() -> None:
    """A value used twice per step (``x*x + x``, 7 steps): the trace names the
    long shared subterms once, and with those definitions the store's address
    and value evaluate to what the unshared rendering evaluates to."""
    result = analyze_kernel(parse_ptx(HEADER + CHAIN, "<test>"), "chain")
    (flow,) = result.flows
    store = flow.trace[-1]
    assert store.kind == "st" and store.value is not None and store.address is not None
    doc = json.loads(json.dumps(result.to_json()))
    terms = doc["terms"]
    assert terms, "long subterms used more than once are named"
    access = doc["flows"][0]["accesses"][-1]
    refs = set(re.findall(r"\bt\d+\b", access["address"] + access["value"]))
    assert refs and refs <= set(terms)
    text = result.format()
    assert all(f"let {name} = {body}" in text for name, body in terms.items())
    names = {"param_out": "out"}
    for tid in (0, 1, 5, 1000, 0xFFFFFFFF):
        env = {"%tid.x": _Val(tid, 32), "out": _Val(0x1000, 64)}
        for key, term in (("value", store.value), ("address", store.address)):
            unshared = pretty(term, names=names, max_len=None)
            shared = access[key].replace("load(param_out)", "out")
            definitions = [(k, v.replace("load(param_out)", "out")) for k, v in terms.items()]
            assert evaluate(shared, env, definitions).value == evaluate(unshared, env).value


def test_conditional_of_two_constants_says_their_width() -> None:
    """Hypothesis found ``concat((c ? 0x3 : 0x0), ...)``: inside a concat
    nothing gave the two constants a width, so the text was ambiguous."""
    a8 = z3.BitVec("a8", 8)
    x = z3.Concat(z3.If(z3.ULT(a8, 3), z3.BitVecVal(0, 1), z3.BitVecVal(1, 1)), z3.Extract(2, 0, a8))
    top = z3.Extract(3, 3, x)
    term = z3.Concat(top, top, top, top, x)
    for value in (0, 2, 3, 200):
        _check(term, {a8: value})
