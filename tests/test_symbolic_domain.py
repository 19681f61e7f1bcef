"""The Z3 domain agrees with the NumPy domain, operation by operation.

Every integer, bitwise, shift, comparison, selection, width-changing and
bit-counting operation of `SymbolicDomain` is built over fresh variables,
the variables are replaced by random (and edge-case) lane values, and the
constant Z3 folds it to must equal what `ConcreteDomain` computes on the same
lanes. The concrete domain is the reference interpreter, so this ties the
analysis to the same semantics the CPU runs. Edge values are drawn often: 0,
1, all ones, INT_MIN/INT_MAX, shift amounts at and beyond the width, and
division by zero.

At the instruction level the same comparison runs the shared `Semantics`
twice per instruction text: once on a machine whose registers are Z3
variables and once on a machine whose registers hold random lane values.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.emulator.symbolic.domain import SymbolicDomain, as_bool, from_bool, pretty, simplify

concrete_mod = pytest.importorskip("ptxasw.emulator.concrete.domain")
ConcreteDomain = concrete_mod.ConcreteDomain

WIDTHS = (1, 8, 16, 32, 64)
LANES = 4
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def edges(width: int) -> list[int]:
    top = (1 << width) - 1
    values = {0, 1, top, 1 << (width - 1), (1 << (width - 1)) - 1, top - 1, width, width + 1, 2}
    return sorted(v & top for v in values)


@st.composite
def lane_values(draw: st.DrawFn, width: int) -> list[int]:
    """One value per lane, edge values about half of the time."""
    top = (1 << width) - 1
    value = st.one_of(st.sampled_from(edges(width)), st.integers(0, top))
    return [draw(value) for _ in range(LANES)]


def evaluate(expr: z3.BitVecRef, bindings: list[tuple[z3.BitVecRef, int]]) -> int:
    """``expr`` with the variables replaced by constants, folded to an int."""
    pairs = [(v, z3.BitVecVal(x, v.size())) for v, x in bindings]
    folded = z3.simplify(z3.substitute(expr, *pairs))
    assert z3.is_bv_value(folded), f"did not fold to a constant: {folded}"
    return folded.as_long()


def check_lanes(
    sym_result: z3.BitVecRef, conc_result: Any, variables: list[z3.BitVecRef], lanes: list[list[int]]
) -> None:
    conc = ConcreteDomain(LANES)
    expected = conc.to_ints(conc_result)
    assert sym_result.size() == conc.width(conc_result)
    for lane in range(LANES):
        got = evaluate(sym_result, [(v, values[lane]) for v, values in zip(variables, lanes, strict=True)])
        assert got == expected[lane], (
            f"lane {lane}: inputs {[values[lane] for values in lanes]}: symbolic {got:#x}, "
            f"concrete {expected[lane]:#x}; expression {sym_result}"
        )


# Every property runs with the cheap rewriter on every result and without it.
MODES = pytest.mark.parametrize("simplified", [True, False], ids=["simplified", "raw"])


BINARY = ["add", "sub", "mul", "udiv", "urem", "sdiv", "srem", "and_", "or_", "xor", "shl", "lshr", "ashr"]
COMPARE = ["eq", "ult", "slt"]
UNARY = ["neg", "not_", "popc", "clz", "brev"]


@pytest.mark.parametrize("op", BINARY + COMPARE)
@MODES
@SETTINGS
@given(data=st.data())
def test_binary_ops_match_concrete(simplified: bool, op: str, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    a_vals = data.draw(lane_values(width), label="a")
    b_vals = data.draw(lane_values(width), label="b")
    conc = ConcreteDomain(LANES)
    x, y = sym.fresh("x", width), sym.fresh("y", width)
    result = getattr(sym, op)(x, y)
    expected = getattr(conc, op)(conc.from_ints(a_vals, width), conc.from_ints(b_vals, width))
    check_lanes(result, expected, [x, y], [a_vals, b_vals])


@pytest.mark.parametrize("op", UNARY)
@MODES
@SETTINGS
@given(data=st.data())
def test_unary_ops_match_concrete(simplified: bool, op: str, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    a_vals = data.draw(lane_values(width), label="a")
    conc = ConcreteDomain(LANES)
    x = sym.fresh("x", width)
    result = getattr(sym, op)(x)
    expected = getattr(conc, op)(conc.from_ints(a_vals, width))
    check_lanes(result, expected, [x], [a_vals])


@MODES
@SETTINGS
@given(data=st.data())
def test_ite_matches_concrete(simplified: bool, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    c_vals = data.draw(lane_values(1), label="cond")
    a_vals = data.draw(lane_values(width), label="a")
    b_vals = data.draw(lane_values(width), label="b")
    conc = ConcreteDomain(LANES)
    c, x, y = sym.fresh("c", 1), sym.fresh("x", width), sym.fresh("y", width)
    result = sym.ite(c, x, y)
    expected = conc.ite(
        conc.from_ints(c_vals, 1), conc.from_ints(a_vals, width), conc.from_ints(b_vals, width)
    )
    check_lanes(result, expected, [c, x, y], [c_vals, a_vals, b_vals])


@MODES
@SETTINGS
@given(data=st.data())
def test_ite_of_comparison_matches_concrete(simplified: bool, data: st.DataObject) -> None:
    """Predicates made by comparisons, as the semantics build them (``selp``)."""
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    a_vals = data.draw(lane_values(width), label="a")
    b_vals = data.draw(lane_values(width), label="b")
    conc = ConcreteDomain(LANES)
    x, y = sym.fresh("x", width), sym.fresh("y", width)
    result = sym.ite(sym.not_(sym.slt(x, y)), sym.sub(x, y), sym.xor(x, y))
    ca, cb = conc.from_ints(a_vals, width), conc.from_ints(b_vals, width)
    expected = conc.ite(conc.not_(conc.slt(ca, cb)), conc.sub(ca, cb), conc.xor(ca, cb))
    check_lanes(result, expected, [x, y], [a_vals, b_vals])


@pytest.mark.parametrize("op", ["zext", "sext"])
@MODES
@SETTINGS
@given(data=st.data())
def test_extensions_match_concrete(simplified: bool, op: str, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    target = data.draw(st.sampled_from([w for w in WIDTHS if w >= width] + [width + 3][: 64 - width]))
    a_vals = data.draw(lane_values(width), label="a")
    conc = ConcreteDomain(LANES)
    x = sym.fresh("x", width)
    result = getattr(sym, op)(x, target)
    expected = getattr(conc, op)(conc.from_ints(a_vals, width), target)
    check_lanes(result, expected, [x], [a_vals])


@MODES
@SETTINGS
@given(data=st.data())
def test_extract_matches_concrete(simplified: bool, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from(WIDTHS), label="width")
    lo = data.draw(st.integers(0, width - 1), label="lo")
    hi = data.draw(st.integers(lo, width - 1), label="hi")
    a_vals = data.draw(lane_values(width), label="a")
    conc = ConcreteDomain(LANES)
    x = sym.fresh("x", width)
    result = sym.extract(x, hi, lo)
    expected = conc.extract(conc.from_ints(a_vals, width), hi, lo)
    check_lanes(result, expected, [x], [a_vals])


@MODES
@SETTINGS
@given(data=st.data())
def test_extract_of_extension_matches_concrete(simplified: bool, data: st.DataObject) -> None:
    """Truncating an extended value (``cvt.u32.u64`` of a widened index) takes
    the folding path of `simplify_extract`."""
    sym = SymbolicDomain(simplified)
    width = data.draw(st.sampled_from([8, 16, 32]), label="width")
    hi = data.draw(st.integers(0, 2 * width - 1), label="hi")
    lo = data.draw(st.integers(0, hi), label="lo")
    a_vals = data.draw(lane_values(width), label="a")
    b_vals = data.draw(lane_values(width), label="b")
    conc = ConcreteDomain(LANES)
    x, y = sym.fresh("x", width), sym.fresh("y", width)
    result = sym.extract(sym.add(sym.sext(sym.add(x, y), 2 * width), sym.zext(y, 2 * width)), hi, lo)
    cx, cy = conc.from_ints(a_vals, width), conc.from_ints(b_vals, width)
    expected = conc.extract(
        conc.add(conc.sext(conc.add(cx, cy), 2 * width), conc.zext(cy, 2 * width)), hi, lo
    )
    check_lanes(result, expected, [x, y], [a_vals, b_vals])


@MODES
@SETTINGS
@given(data=st.data())
def test_concat_matches_concrete(simplified: bool, data: st.DataObject) -> None:
    sym = SymbolicDomain(simplified)
    wa = data.draw(st.sampled_from(WIDTHS[:-1]), label="hi width")
    wb = data.draw(st.sampled_from([w for w in WIDTHS if w + wa <= 64]), label="lo width")
    a_vals = data.draw(lane_values(wa), label="hi")
    b_vals = data.draw(lane_values(wb), label="lo")
    conc = ConcreteDomain(LANES)
    x, y = sym.fresh("x", wa), sym.fresh("y", wb)
    result = sym.concat(x, y)
    expected = conc.concat(conc.from_ints(a_vals, wa), conc.from_ints(b_vals, wb))
    check_lanes(result, expected, [x, y], [a_vals, b_vals])


@pytest.mark.parametrize("width", WIDTHS)
def test_edge_values_exhaustively(width: int) -> None:
    """Every pair of edge values through every binary operation, both modes."""
    conc = ConcreteDomain(1)
    values = edges(width)
    for simplify_results in (True, False):
        sym = SymbolicDomain(simplify_results)
        x, y = sym.fresh("x", width), sym.fresh("y", width)
        exprs = {op: getattr(sym, op)(x, y) for op in BINARY + COMPARE}
        for a in values:
            for b in values:
                ca, cb = conc.from_ints([a], width), conc.from_ints([b], width)
                for op, expr in exprs.items():
                    want = conc.to_ints(getattr(conc, op)(ca, cb))[0]
                    got = evaluate(expr, [(x, a), (y, b)])
                    assert got == want, f"{op}.{width}({a:#x}, {b:#x}): {got:#x} != {want:#x}"


def test_division_by_zero_and_overflow_follow_the_gpu() -> None:
    sym = SymbolicDomain()
    for width in (8, 32):
        top = (1 << width) - 1
        x = sym.fresh("x", width)
        zero = sym.const(0, width)
        for v in (0, 5, 1 << (width - 1), top):
            # All ones for every x/0 and x%0 (the domain contract, measured on an H200).
            assert evaluate(sym.udiv(x, zero), [(x, v)]) == top
            assert evaluate(sym.urem(x, zero), [(x, v)]) == top
            assert evaluate(sym.sdiv(x, zero), [(x, v)]) == top  # -1, also for negative x
            assert evaluate(sym.srem(x, zero), [(x, v)]) == top
        int_min = 1 << (width - 1)
        assert evaluate(sym.sdiv(x, sym.const(-1, width)), [(x, int_min)]) == int_min
        assert evaluate(sym.srem(x, sym.const(-1, width)), [(x, int_min)]) == 0


def test_shift_amounts_beyond_the_width() -> None:
    sym = SymbolicDomain()
    x, n = sym.fresh("x", 32), sym.fresh("n", 32)
    for amount in (32, 33, 1000, 0xFFFFFFFF):
        assert evaluate(sym.shl(x, n), [(x, 0x1234), (n, amount)]) == 0
        assert evaluate(sym.lshr(x, n), [(x, 0x80001234), (n, amount)]) == 0
        assert evaluate(sym.ashr(x, n), [(x, 0x80001234), (n, amount)]) == 0xFFFFFFFF
        assert evaluate(sym.ashr(x, n), [(x, 0x70001234), (n, amount)]) == 0
    # A constant shift becomes a multiplication (affine addresses) and stays right.
    assert sym.shl(x, sym.const(2, 32)).eq(simplify(x * 4))
    assert z3.is_bv_value(sym.shl(x, sym.const(40, 32)))


def test_fresh_values_are_distinct_and_sized() -> None:
    a, b = SymbolicDomain(), SymbolicDomain()
    values = [a.fresh("v", 32), a.fresh("v", 32), b.fresh("v", 32), b.fresh("v", 16)]
    names = {v.decl().name() for v in values}
    assert len(names) == 4
    assert [v.size() for v in values] == [32, 32, 32, 16]


def test_float_operations_are_opaque_functions_of_the_whole_fpop() -> None:
    sym = SymbolicDomain()
    x, y = sym.fresh("x", 32), sym.fresh("y", 32)
    add_rn = FpOp("add", ".f32", rounding=".rn")
    add_rz = FpOp("add", ".f32", rounding=".rz")
    first = sym.fp(add_rn, x, y)
    assert first.size() == 32
    assert first.eq(sym.fp(add_rn, x, y)), "the same computation must be the same term"
    assert not first.eq(sym.fp(add_rz, x, y)), "another rounding is another function"
    assert not first.eq(sym.fp(FpOp("add", ".f32", rounding=".rn", ftz=True), x, y))
    # Nothing arithmetic is claimed: add(x, y) == add(y, x) is not provable.
    solver = z3.Solver()
    solver.add(sym.fp(add_rn, x, y) != sym.fp(add_rn, y, x))
    assert solver.check() == z3.sat
    # Conversions size their result by the destination type.
    cvt = sym.fp(FpOp("cvt", ".s64", src=".f32", rounding=".rzi"), x)
    assert cvt.size() == 64
    half = sym.fp(FpOp("cvt", ".f16", src=".f32", rounding=".rn"), x)
    assert half.size() == 16
    assert sym.fp(FpOp("neg", ".f64"), sym.fresh("d", 64)).size() == 64


def test_float_compare_is_a_predicate() -> None:
    sym = SymbolicDomain()
    x, y = sym.fresh("x", 32), sym.fresh("y", 32)
    lt = sym.fp_compare("lt", ".f32", x, y)
    assert lt.size() == 1
    assert lt.eq(sym.fp_compare("lt", ".f32", x, y))
    assert not lt.eq(sym.fp_compare("ltu", ".f32", x, y))
    chosen = sym.ite(lt, x, y)
    assert chosen.size() == 32


def test_predicates_keep_boolean_shape() -> None:
    """Comparisons stay ``If(b, 1, 0)`` so path conditions print as comparisons."""
    sym = SymbolicDomain()
    x = z3.BitVec("%tid.x", 32)
    p = sym.or_(sym.slt(x, sym.const(5, 32)), sym.eq(x, sym.const(9, 32)))
    assert p.size() == 1
    b = as_bool(p)
    assert z3.is_bool(b)
    assert pretty(p) == "%tid.x < 0x5 || %tid.x == 0x9"
    assert pretty(sym.not_(sym.eq(x, sym.const(9, 32)))) == "%tid.x != 0x9"
    assert from_bool(z3.BoolVal(True)).as_long() == 1


def test_pretty_prints_addresses_like_listing_5() -> None:
    sym = SymbolicDomain()
    tid = z3.BitVec("%tid.x", 32)
    base = z3.BitVec("param_0", 64)
    index = sym.sext(sym.add(tid, sym.const(-1, 32)), 64)
    address = sym.add(sym.add(base, sym.shl(index, sym.const(2, 64))), sym.const(12, 64))
    # Extensions are part of the meaning (the 32-bit index may wrap): always shown.
    listing = "0xc + load(param_0) + 0x4*sext64(-0x1 + %tid.x)"
    assert pretty(address, names={"param_0": "load(param_0)"}) == listing
    assert pretty(sym.sub(base, sym.zext(tid, 64))) == "param_0 - zext64(%tid.x)"


# --------------------------------------------------------------------------
# Instruction level: the shared semantics on both domains

from ptxasw import ir  # noqa: E402
from ptxasw.emulator.semantics import instructions as semantics_mod  # noqa: E402
from ptxasw.ir import isa  # noqa: E402
from ptxasw.parser.frontend import parse_ptx  # noqa: E402

INT_TYPES = {".u16": 16, ".s16": 16, ".u32": 32, ".s32": 32, ".u64": 64, ".s64": 64}
BIT_TYPES = {".b16": 16, ".b32": 32, ".b64": 64}


def _forms() -> list[str]:
    """Instruction texts over registers %a, %b, %c (sources) and %d, %p
    (destinations), register names carrying their width (``%a32``)."""
    out: list[str] = []
    for t, w in INT_TYPES.items():
        r = f"{w}"
        ops3 = f"%d{r}, %a{r}, %b{r}"
        for op in ("add", "sub", "mul.lo", "mul.hi", "div", "rem", "min", "max"):
            out.append(f"{op}{t} {ops3};")
        out.append(f"add{t} %d{r}, %a{r}, 7;")
        out.append(f"mad.lo{t} %d{r}, %a{r}, %b{r}, %c{r};")
        out.append(f"mad.hi{t} %d{r}, %a{r}, %b{r}, %c{r};")
        out.append(f"abs{t} %d{r}, %a{r};" if t.startswith(".s") else f"neg.s{w} %d{r}, %a{r};")
        if w < 64:
            out.append(f"mul.wide{t} %d{2 * w}, %a{r}, %b{r};")
            out.append(f"mad.wide{t} %d{2 * w}, %a{r}, %b{r}, %c{2 * w};")
        out.append(f"shr{t} %d{r}, %a{r}, %b32;")
        for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
            out.append(f"setp.{cmp}{t} %p, %a{r}, %b{r};")
            out.append(f"set.{cmp}.u32{t} %d32, %a{r}, %b{r};")
        for cmp in ("lo", "ls", "hi", "hs"):
            if t.startswith(".u"):
                out.append(f"setp.{cmp}{t} %p, %a{r}, %b{r};")
        out.append(f"selp{t} %d{r}, %a{r}, %b{r}, %p1;")
        out.append(f"slct{t}.s32 %d{r}, %a{r}, %b{r}, %c32;")
        for src, sw in INT_TYPES.items():
            out.append(f"cvt{t}{src} %d{r}, %a{sw};")
    for t, w in BIT_TYPES.items():
        r = f"{w}"
        for op in ("and", "or", "xor"):
            out.append(f"{op}{t} %d{r}, %a{r}, %b{r};")
        out.append(f"not{t} %d{r}, %a{r};")
        out.append(f"shl{t} %d{r}, %a{r}, %b32;")
        out.append(f"shr{t} %d{r}, %a{r}, %b32;")
        out.append(f"shl{t} %d{r}, %a{r}, 3;")
        if w >= 32:
            out.append(f"popc{t} %d32, %a{r};")
            out.append(f"clz{t} %d32, %a{r};")
            out.append(f"brev{t} %d{r}, %a{r};")
            out.append(f"bfind.u{w} %d32, %a{r};")
            out.append(f"bfind.s{w} %d32, %a{r};")
            out.append(f"bfe.u{w} %d{r}, %a{r}, %b32, %c32;")
            out.append(f"bfe.s{w} %d{r}, %a{r}, %b32, %c32;")
            out.append(f"bfi{t} %d{r}, %a{r}, %b{r}, %c32, %e32;")
        out.append(f"mov{t} %d{r}, %a{r};")
    out += [
        "and.pred %q, %p1, %p2;",
        "or.pred %q, %p1, %p2;",
        "xor.pred %q, %p1, %p2;",
        "not.pred %q, %p1;",
        "setp.lt.and.s32 %p, %a32, %b32, %p1;",
        "setp.ge.or.u32 %p|%q, %a32, %b32, !%p2;",
        "prmt.b32 %d32, %a32, %b32, %c32;",
        "mov.b64 %d64, {%a32, %b32};",
        "mov.b32 %d32, {%a16, %b16};",
        "mov.b64 {%d32, %e32}, %a64;",
        "@%p1 add.s32 %d32, %a32, %b32;",
        "@!%p2 mov.u32 %d32, %a32;",
        "sad.u32 %d32, %a32, %b32, %c32;",
        "add.cc.u32 %d32, %a32, %b32;",
        "mul24.lo.s32 %d32, %a32, %b32;",
        "shf.l.wrap.b32 %d32, %a32, %b32, %c32;",
        "shf.r.clamp.b32 %d32, %a32, %b32, %c32;",
        "cvt.u32.u32.sat.s32 %d32, %a32;",
        "cnot.b32 %d32, %a32;",
        "lop3.b32 %d32, %a32, %b32, %c32, 0x96;",
        "dp4a.u32.u32 %d32, %a32, %b32, %c32;",
    ]
    return out


FORMS = _forms()


def _reg_width(reg: ir.Register) -> int:
    name = reg.name.lstrip("%")
    digits = "".join(ch for ch in name if ch.isdigit())
    if name.startswith(("p", "q")):
        return 1
    return int(digits) if digits else 32


class _RegMachine:
    """A `Machine` with registers only; memory and warp operations fail the
    test (no form above touches them)."""

    def __init__(self, dom: Any, initial: Callable[[ir.Register, int], Any]) -> None:
        self.dom = dom
        self.regs: dict[str, Any] = {}
        self.initial = initial
        self.unknowns: list[str] = []

    def _key(self, reg: ir.Register) -> str:
        return reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"

    def read(self, reg: ir.Register, width: int) -> Any:
        key = self._key(reg)
        if key not in self.regs:
            self.regs[key] = self.initial(reg, _reg_width(reg))
        value = self.regs[key]
        w = self.dom.width(value)
        if w == width:
            return value
        return self.dom.extract(value, width - 1, 0) if w > width else self.dom.zext(value, width)

    def write(self, reg: ir.Register, value: Any) -> None:
        self.regs[self._key(reg)] = value

    def symbol_address(self, name: str, width: int) -> Any:
        raise AssertionError(f"unexpected symbol {name}")

    def load(self, *args: Any) -> Any:
        raise AssertionError("unexpected load")

    def store(self, *args: Any) -> None:
        raise AssertionError("unexpected store")

    def atomic(self, *args: Any) -> Any:
        raise AssertionError("unexpected atomic")

    def warp(self, *args: Any) -> Any:
        raise AssertionError("unexpected warp operation")

    def barrier(self, *args: Any) -> None:
        raise AssertionError("unexpected barrier")

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        self.unknowns.append(reason)


def _instruction(text: str) -> ir.Instruction:
    regs = sorted(
        {tok.strip("{}!,;|") for tok in text.replace(",", " ").replace("|", " ").split() if "%" in tok}
    )
    decls = []
    for name in regs:
        name = name.strip("{}!,;|@")
        w = _reg_width(ir.Register(name))
        decls.append(f".reg .{'pred' if w == 1 else f'b{w}'} {name};")
    ptx = (
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
        + "\n".join(sorted(set(decls)))
        + f"\n{text}\nret;\n}}\n"
    )
    module = parse_ptx(ptx, "<form>")
    return next(module.kernels[0].instructions())


def _compare_form(text: str, rng: random.Random) -> tuple[list[str], int]:
    """Run one instruction on both domains; (failures, registers checked)."""
    try:
        inst = _instruction(text)
    except Exception as exc:  # a form the parser refuses is a bug in this list
        return [f"{text}: does not parse: {exc}"], 0
    sym = SymbolicDomain()
    conc = ConcreteDomain(LANES)
    variables: dict[str, z3.BitVecRef] = {}
    lane_inputs: dict[str, list[int]] = {}
    for reg in [*isa.uses(inst), *isa.defs(inst)]:  # defs too: guarded writes merge
        if reg.name not in lane_inputs:
            width = _reg_width(reg)
            top = (1 << width) - 1
            pool = edges(width)
            lane_inputs[reg.name] = [
                rng.choice(pool) if rng.random() < 0.4 else rng.randint(0, top) for _ in range(LANES)
            ]
            variables[reg.name] = sym.fresh(reg.name.lstrip("%"), width)
    msym = _RegMachine(sym, lambda reg, width: variables[reg.name])
    mconc = _RegMachine(conc, lambda reg, width: conc.from_ints(lane_inputs[reg.name], width))
    semantics_mod.Semantics(msym).execute(inst)
    semantics_mod.Semantics(mconc).execute(inst)
    if msym.unknowns or mconc.unknowns:
        return [f"{text}: not modelled: {msym.unknowns or mconc.unknowns}"], 0
    failures: list[str] = []
    checked = 0
    for reg in isa.defs(inst):
        sym_value, conc_value = msym.regs.get(reg.name), mconc.regs.get(reg.name)
        if sym_value is None or conc_value is None:
            failures.append(f"{text}: {reg.name} written by one domain only")
            continue
        expected = conc.to_ints(conc_value)
        for lane in range(LANES):
            bindings = [(var, lane_inputs[name][lane]) for name, var in variables.items()]
            got = evaluate(sym_value, bindings)
            if got != expected[lane]:
                inputs = {n: hex(v[lane]) for n, v in lane_inputs.items()}
                failures.append(f"{text}: {reg.name} lane {lane} {inputs}: {got:#x} != {expected[lane]:#x}")
                break
        checked += 1
    return failures, checked


def test_instruction_semantics_agree_between_domains() -> None:
    """Every form, on Z3 variables and on random lanes, gives equal results."""
    rng = random.Random(1234)
    failures: list[str] = []
    checked = 0
    for _ in range(3):  # three rounds of random lane values
        for text in FORMS:
            bad, n = _compare_form(text, rng)
            failures += bad
            checked += n
    assert not failures, "\n".join(sorted(set(failures))[:40])
    assert checked > 600


def test_an_extract_inside_an_extension_is_found_under_other_terms() -> None:
    """`simplify_extract`'s search (through Z3's C API): an extract whose
    slice lies inside an extended value is found however deep; one reaching
    into the extension bits, or of no extension, is not, and a search that
    finds none records what it walked as clean."""
    from ptxasw.emulator.symbolic.domain import _has_extract_of_ext

    x, y = z3.BitVec("x", 8), z3.BitVec("y", 32)
    inside = z3.Extract(7, 0, z3.SignExt(24, x))
    beyond = z3.Extract(15, 0, z3.ZeroExt(24, x))
    assert _has_extract_of_ext(z3.Concat(y, z3.ZeroExt(24, inside) + y), {})
    clean: dict[int, z3.ExprRef] = {}
    assert not _has_extract_of_ext(z3.Concat(beyond, z3.Extract(3, 0, y + y)), clean)
    assert len(clean) >= 5
    assert not _has_extract_of_ext(z3.Concat(beyond, z3.Extract(3, 0, y + y)), clean)
