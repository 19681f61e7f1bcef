"""Property: printing any IR the parser can produce, then parsing it, gives the same IR.

The corpus tests cover what compilers print; this covers operand and
declaration shapes in combinations no compiler happened to print.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw import ir
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx

HEADER = [ir.Version(9, 0), ir.Target(("sm_90",)), ir.AddressSize(64)]

names = st.from_regex(r"[a-z_$][a-z0-9_$]{0,6}", fullmatch=True).filter(lambda s: s != "_")
registers = st.builds(
    ir.Register,
    st.from_regex(r"%(r|rd|f|fd|p|h)[0-9]{1,4}", fullmatch=True),
    st.sampled_from([None, None, None, "x", "y"]),
)
symbols = st.builds(ir.Symbol, names.filter(lambda s: s not in ("function_name", "inlined_at")))
ints = st.integers(-(2**63), 2**64 - 1).map(lambda v: ir.IntImm(v))
floats = st.one_of(
    st.integers(0, 2**32 - 1).map(lambda b: ir.FloatImm("f", f"0f{b:08X}")),
    st.integers(0, 2**64 - 1).map(lambda b: ir.FloatImm("d", f"0d{b:016X}")),
)
addresses = st.one_of(
    st.builds(ir.Address, st.one_of(registers, symbols), st.integers(-4096, 4096)),
    st.builds(ir.Address, st.none(), st.integers(0, 4096)),
)
scalars = st.one_of(registers, symbols, ints, floats)
vector_elements = st.one_of(registers, st.just(ir.Sink()), ints)
vectors = st.lists(vector_elements, min_size=1, max_size=4).map(lambda xs: ir.VectorOperand(tuple(xs)))
operands = st.one_of(
    scalars,
    addresses,
    vectors,
    st.builds(ir.Negated, registers.filter(lambda r: r.selector is None)),
    st.builds(ir.PairOperand, registers, registers),
    st.builds(ir.BinaryExpr, st.just("+"), symbols, ints.filter(lambda i: i.value >= 0)),
    st.lists(st.one_of(symbols, vectors), min_size=2, max_size=3).map(lambda xs: ir.ListOperand(tuple(xs))),
)
mnemonics = st.sampled_from(
    [
        ("add", (".s32",)),
        ("ld", (".global", ".nc", ".v4", ".f32")),
        ("st", (".shared", ".b64")),
        ("setp", (".lt", ".and", ".s32")),
        ("shfl", (".sync", ".bfly", ".b32")),
        ("mov", (".b64",)),
        ("tex", (".2d", ".v4", ".f32", ".f32")),
        ("cp.async.bulk", (".shared::cluster", ".global", ".mbarrier::complete_tx::bytes")),
        ("ret", ()),
    ]
)


@st.composite
def instructions(draw: st.DrawFn) -> ir.Instruction:
    opcode, modifiers = draw(mnemonics)
    ops = tuple(draw(st.lists(operands, max_size=5)))
    predicates = registers.filter(lambda r: r.selector is None)
    guard = draw(st.none() | st.builds(ir.Guard, predicates, st.booleans()))
    return ir.Instruction(opcode, modifiers, ops, guard)


@settings(max_examples=300, deadline=None)
@given(st.lists(instructions(), min_size=1, max_size=8))
def test_printed_instructions_parse_back_equal(body: list[ir.Instruction]) -> None:
    fn = ir.Function(".entry", "k", [], body=ir.Block(list(body)))
    module = ir.Module([*HEADER, fn])
    assert parse_ptx(print_module(module)) == module


decl_types = st.sampled_from([".b8", ".u32", ".s64", ".f32", ".f64", ".pred", ".b16"])


@st.composite
def declarations(draw: st.DrawFn) -> ir.VarDecl:
    space = draw(st.sampled_from([".global", ".shared", ".const", ".local"]))
    dims = tuple(draw(st.lists(st.integers(1, 64), max_size=2)))
    init = None
    if space in (".global", ".const") and dims:
        init = draw(st.lists(ints, min_size=1, max_size=4))
    elif space in (".global", ".const"):
        init = draw(st.none() | ints)
    return ir.VarDecl(
        space=space,
        type=draw(decl_types),
        names=[ir.VarName(draw(names.map(lambda s: "v" + s)), None, dims, init)],
        linkage=draw(st.sampled_from([(), (".visible",), (".extern",), (".weak",)])),
        align=draw(st.none() | st.sampled_from([1, 4, 8, 16])),
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(declarations(), min_size=1, max_size=6))
def test_printed_declarations_parse_back_equal(decls: list[ir.VarDecl]) -> None:
    module = ir.Module([*HEADER, *decls])
    assert parse_ptx(print_module(module)) == module
