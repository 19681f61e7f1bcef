"""Property: the symbolic domain, evaluated on concrete values, agrees with the concrete domain.

One instruction at a time, through the shared `Semantics`: registers are Z3
variables on one side and drawn values on the other. Integer work is compared
after substituting the values; float work, which the symbolic domain keeps
opaque, is evaluated by `SymbolicDomain.evaluate` with the concrete domain's
arithmetic, so what is checked there is that both domains reach the same
float operation (rounding, flush-to-zero, saturation, type) and treat its
surroundings (predicates, selection, conversions, guards) identically.
"""

from __future__ import annotations

import functools
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxasw import ir
from ptxasw.emulator.concrete.domain import ConcreteDomain
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.emulator.symbolic.domain import SymbolicDomain
from ptxasw.ir import isa
from tests.test_symbolic_domain import FORMS as INTEGER_FORMS
from tests.test_symbolic_domain import _instruction, _reg_width, _RegMachine


def _float_forms() -> list[str]:
    forms: list[str] = []
    for t, w in ((".f32", 32), (".f64", 64)):
        r = f"{w}"
        for op in ("add", "sub", "mul"):
            for rnd in (".rn", ".rz", ".rm", ".rp"):
                forms.append(f"{op}{rnd}{t} %d{r}, %a{r}, %b{r};")
        forms += [
            f"fma.rn{t} %d{r}, %a{r}, %b{r}, %c{r};",
            f"fma.rz{t} %d{r}, %a{r}, %b{r}, %c{r};",
            f"div.rn{t} %d{r}, %a{r}, %b{r};",
            f"sqrt.rn{t} %d{r}, %a{r};",
            f"rcp.rn{t} %d{r}, %a{r};",
            f"min{t} %d{r}, %a{r}, %b{r};",
            f"max{t} %d{r}, %a{r}, %b{r};",
            f"abs{t} %d{r}, %a{r};",
            f"neg{t} %d{r}, %a{r};",
            f"selp{t} %d{r}, %a{r}, %b{r}, %p1;",
            f"testp.finite{t} %p, %a{r};",
            f"testp.notanumber{t} %p, %a{r};",
            f"copysign{t} %d{r}, %a{r}, %b{r};",
            f"@%p1 add.rn{t} %d{r}, %a{r}, %b{r};",
        ]
        for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "geu", "num", "nan"):
            forms.append(f"setp.{cmp}{t} %p, %a{r}, %b{r};")
        forms.append(f"setp.lt.and{t} %p, %a{r}, %b{r}, %p1;")
        forms.append(f"set.gt.u32{t} %d32, %a{r}, %b{r};")
        for it, iw in (("s32", 32), ("u32", 32), ("s64", 64), ("u64", 64)):
            for rnd in (".rni", ".rzi", ".rmi", ".rpi"):
                forms.append(f"cvt{rnd}.{it}{t} %d{iw}, %a{r};")
            forms.append(f"cvt.rn{t}.{it} %d{r}, %a{iw};")
            forms.append(f"cvt.rz{t}.{it} %d{r}, %a{iw};")
    forms += [
        "add.rn.ftz.f32 %d32, %a32, %b32;",
        "mul.rn.sat.f32 %d32, %a32, %b32;",
        "fma.rn.ftz.sat.f32 %d32, %a32, %b32, %c32;",
        "div.approx.f32 %d32, %a32, %b32;",
        "div.full.f32 %d32, %a32, %b32;",
        "sqrt.approx.f32 %d32, %a32;",
        "rcp.approx.ftz.f64 %d64, %a64;",
        "ex2.approx.f32 %d32, %a32;",
        "lg2.approx.f32 %d32, %a32;",
        "sin.approx.f32 %d32, %a32;",
        "tanh.approx.f32 %d32, %a32;",
        "min.NaN.f32 %d32, %a32, %b32;",
        "max.ftz.f32 %d32, %a32, %b32;",
        "cvt.f64.f32 %d64, %a32;",
        "cvt.rn.f32.f64 %d32, %a64;",
        "cvt.rz.ftz.f32.f64 %d32, %a64;",
        "cvt.rn.f16.f32 %d16, %a32;",
        "cvt.f32.f16 %d32, %a16;",
        "cvt.rn.bf16.f32 %d16, %a32;",
        "cvt.rn.satfinite.f16.f32 %d16, %a32;",
        "cvt.rni.f32.f32 %d32, %a32;",
        "cvt.rn.f16x2.f32 %d32, %a32, %b32;",
        "add.rn.f16 %d16, %a16, %b16;",
        "fma.rn.f16 %d16, %a16, %b16, %c16;",
        "mul.rn.f16x2 %d32, %a32, %b32;",
        "add.rn.bf16 %d16, %a16, %b16;",
        "fma.rn.bf16x2 %d32, %a32, %b32, %c32;",
        "setp.lt.f16 %p, %a16, %b16;",
        "max.f16x2 %d32, %a32, %b32;",
        "neg.bf16 %d16, %a16;",
    ]
    return forms


FLOAT_FORMS = _float_forms()

_SPECIAL_F32 = [
    struct.unpack("<I", struct.pack("<f", x))[0] for x in (0.0, -0.0, 1.0, -1.5, 3.4e38, 1e-45, 1e-40)
]
_SPECIAL_F32 += [0x7F800000, 0xFF800000, 0x7FC00000, 0x00800000, 0x007FFFFF, 0x3F800001, 0x4B000000]
_SPECIAL_F64 = [
    struct.unpack("<Q", struct.pack("<d", x))[0] for x in (0.0, -0.0, 1.0, -2.5, 1e308, 5e-324, 1e-310)
]
_SPECIAL_F64 += [0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x0010000000000000]
_SPECIAL_16 = [0x0000, 0x8000, 0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x7BFF, 0x3F80, 0x7F80, 0x0080]


def values(width: int) -> st.SearchStrategy[int]:
    """Bit patterns of a register: special values, ordinary floats of nearby
    magnitudes (where rounding modes differ), and anything at all."""
    top = (1 << width) - 1
    specials = {32: _SPECIAL_F32, 64: _SPECIAL_F64, 16: _SPECIAL_16}.get(width, [])
    edges = st.sampled_from([e & top for e in [0, 1, top, top >> 1, (top >> 1) + 1, *specials]])
    choices = [edges, st.integers(0, top)]
    if width in (16, 32, 64):
        fmt = {16: "<e", 32: "<f", 64: "<d"}[width]
        ordinary = st.floats(-1e4, 1e4, width=width).map(
            lambda x: int.from_bytes(struct.pack(fmt, x), "little")
        )
        choices.append(ordinary)
    return st.one_of(*choices)


@functools.cache
def instruction(text: str) -> ir.Instruction:
    return _instruction(text)


def registers(inst: ir.Instruction) -> list[ir.Register]:
    seen: dict[str, ir.Register] = {}
    for reg in [*isa.uses(inst), *isa.defs(inst)]:  # defs too: guarded writes merge with them
        seen.setdefault(reg.name, reg)
    return list(seen.values())


def check(text: str, data: st.DataObject) -> None:
    inst = instruction(text)
    sym, conc = SymbolicDomain(), ConcreteDomain(1)
    inputs = {r.name: data.draw(values(_reg_width(r)), label=r.name) for r in registers(inst)}
    variables = {name: sym.fresh(name.lstrip("%"), _reg_width(ir.Register(name))) for name in inputs}
    on_symbols = _RegMachine(sym, lambda reg, width: variables[reg.name])
    on_values = _RegMachine(conc, lambda reg, width: conc.from_ints([inputs[reg.name]], width))
    Semantics(on_symbols).execute(inst)
    Semantics(on_values).execute(inst)
    assert not on_symbols.unknowns and not on_values.unknowns, (on_symbols.unknowns, on_values.unknowns)
    bindings = {variables[name].decl().name(): value for name, value in inputs.items()}
    for reg in isa.defs(inst):
        expected = conc.to_ints(on_values.regs[reg.name])[0]
        got = sym.evaluate(on_symbols.regs[reg.name], bindings, conc)
        assert got == expected, f"{text} {reg.name}: symbolic {got:#x} != concrete {expected:#x} on {inputs}"


QUICK = [HealthCheck.too_slow, HealthCheck.differing_executors]


@pytest.mark.parametrize("text", INTEGER_FORMS)
@settings(max_examples=12, deadline=None, suppress_health_check=QUICK)
@given(data=st.data())
def test_integer_instructions_agree(text: str, data: st.DataObject) -> None:
    check(text, data)


@pytest.mark.parametrize("text", FLOAT_FORMS)
@settings(max_examples=25, deadline=None, suppress_health_check=QUICK)
@given(data=st.data())
def test_float_instructions_agree(text: str, data: st.DataObject) -> None:
    check(text, data)


def test_every_form_is_modelled_by_both_domains() -> None:
    """No form above falls back to an unknown value (which would make agreement vacuous)."""
    for text in INTEGER_FORMS + FLOAT_FORMS:
        inst = instruction(text)
        machine = _RegMachine(ConcreteDomain(1), lambda reg, width: ConcreteDomain(1).const(0, width))
        Semantics(machine).execute(inst)
        assert not machine.unknowns, (text, machine.unknowns)
