"""Instruction semantics on a tiny fake machine, one PTX snippet at a time.

The machine keeps registers in a dict and memory as a byte dict; each test
parses a few instructions with `parse_ptx`, runs them through `Semantics`
with the concrete domain (several lanes at once) and checks the registers
against the PTX ISA. Warp, barrier and unknown calls are recorded.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw import ir
from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.semantics import domain as dm
from ptxasw.emulator.semantics.instructions import CARRY, Semantics, handled_opcodes
from ptxasw.ir import isa
from ptxasw.parser import parse_ptx

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


class FakeMachine:
    """Registers in a dict, memory as bytes; records warp/barrier/unknown calls."""

    def __init__(self, lanes: int) -> None:
        self.dom = ConcreteDomain(lanes)
        self.regs: dict[tuple[str, str | None], Bits] = {}
        self.mem: dict[int, int] = {}
        self.symbols = {"gv": 0x1000, "arr": 0x2000}
        self.unknowns: list[tuple[str, str]] = []
        self.barriers: list[str] = []
        self.warps: list[tuple[str, list[Bits]]] = []
        self.loads: list[tuple[str, int]] = []

    def read(self, reg: ir.Register, width: int) -> Bits:
        value = self.regs.get((str(reg.name), reg.selector))
        if value is None:
            return self.dom.const(0, width)
        return dm.resize(self.dom, value, width, False)

    def write(self, reg: ir.Register, value: Bits) -> None:
        self.regs[(str(reg.name), reg.selector)] = value

    def symbol_address(self, name: str, width: int) -> Bits:
        return self.dom.const(self.symbols[name], width)

    def load(self, inst: ir.Instruction, space: str, address: Bits, nbytes: int, cond: Bits | None) -> Bits:
        out = []
        for lane, addr in enumerate(address.data):
            if cond is not None and not cond.data[lane]:
                out.append(0)
                continue
            self.loads.append((space, int(addr)))
            out.append(int.from_bytes(bytes(self.mem.get(int(addr) + k, 0) for k in range(nbytes)), "little"))
        return self.dom.from_ints(out, 8 * nbytes)

    def store(
        self, inst: ir.Instruction, space: str, address: Bits, value: Bits, nbytes: int, cond: Bits | None
    ) -> None:
        for lane, addr in enumerate(address.data):
            if cond is not None and not cond.data[lane]:
                continue
            v = int(value.data[lane])
            for k in range(nbytes):
                self.mem[int(addr) + k] = (v >> (8 * k)) & 0xFF

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: Bits,
        operands: list[Bits],
        nbytes: int,
        cond: Bits | None,
    ) -> Bits:
        d = self.dom
        old = self.load(inst, space, address, nbytes, cond)
        new = {
            "add": lambda: d.add(old, operands[0]),
            "exch": lambda: operands[0],
            "cas": lambda: d.ite(d.eq(old, operands[0]), operands[1], old),
        }[op]()
        self.store(inst, space, address, new, nbytes, cond)
        return old

    def warp(self, inst: ir.Instruction, operands: list[Bits], cond: Bits | None) -> list[Bits]:
        self.warps.append((inst.opcode, operands))
        return [self.dom.const(0x77, 32), self.dom.const(1, 1)]

    def barrier(self, inst: ir.Instruction, cond: Bits | None) -> None:
        self.barriers.append(inst.mnemonic)

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        self.unknowns.append((inst.opcode, reason))


def run(body: str, lanes: int = 1, **regs: tuple[int | list[int], int]) -> FakeMachine:
    """Run the instructions of ``body``; ``regs`` preset registers as (value(s), width)."""
    src = f".version 8.6\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n"
    module = parse_ptx(src)
    machine = FakeMachine(lanes)
    for name, (value, width) in regs.items():
        values = value if isinstance(value, list) else [value] * lanes
        machine.regs[(f"%{name}", None)] = machine.dom.from_ints(values, width)
    sem = Semantics(machine)
    for inst in module.kernels[0].instructions():
        sem.execute(inst)
    return machine


def reg(m: FakeMachine, name: str, width: int | None = None) -> list[int]:
    value = m.regs[(f"%{name}", None)]
    if width is not None:
        value = dm.resize(m.dom, value, width, False)
    return m.dom.to_ints(value)


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def s32(x: int) -> int:
    return x & M32


# --------------------------------------------------------------------------
# Integer arithmetic


def test_add_sub_wrap_and_saturate() -> None:
    m = run(
        "add.s32 %r1, %r2, %r3; add.sat.s32 %r4, %r2, %r3; sub.sat.s32 %r5, %r6, %r3;"
        "sub.u64 %rd1, %rd2, 1; add.s32 %r7, %r2, -5;",
        lanes=2,
        r2=([0x7FFFFFFF, 5], 32),
        r3=([1, 3], 32),
        r6=([0x80000000, 5], 32),
        rd2=(0, 64),
    )
    assert reg(m, "r1") == [0x80000000, 8]
    assert reg(m, "r4") == [0x7FFFFFFF, 8]
    assert reg(m, "r5") == [0x80000000, 2]
    assert reg(m, "rd1") == [M64, M64]
    assert reg(m, "r7") == [s32(0x7FFFFFFF - 5), s32(0)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, M64), st.integers(0, M64)), min_size=4, max_size=4))
def test_mul_hi_wide_lo(pairs: list[tuple[int, int]]) -> None:
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]

    def sgn(x: int, w: int) -> int:
        return x - (1 << w) if x >> (w - 1) else x

    m = run(
        "mul.hi.u64 %rd3, %rd1, %rd2; mul.hi.s64 %rd4, %rd1, %rd2; mul.lo.s64 %rd5, %rd1, %rd2;"
        "mul.wide.s32 %rd6, %r1, %r2; mul.wide.u32 %rd7, %r1, %r2; mul.hi.s32 %r3, %r1, %r2;",
        lanes=4,
        rd1=(a, 64),
        rd2=(b, 64),
        r1=([x & M32 for x in a], 32),
        r2=([x & M32 for x in b], 32),
    )
    assert reg(m, "rd3") == [(x * y) >> 64 for x, y in pairs]
    assert reg(m, "rd4") == [((sgn(x, 64) * sgn(y, 64)) >> 64) & M64 for x, y in pairs]
    assert reg(m, "rd5") == [(x * y) & M64 for x, y in pairs]
    lo = [(x & M32, y & M32) for x, y in pairs]
    assert reg(m, "rd6") == [(sgn(x, 32) * sgn(y, 32)) & M64 for x, y in lo]
    assert reg(m, "rd7") == [x * y for x, y in lo]
    assert reg(m, "r3") == [((sgn(x, 32) * sgn(y, 32)) >> 32) & M32 for x, y in lo]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, (1 << 96) - 1), st.integers(0, (1 << 96) - 1), st.integers(0, M32), st.integers(0, M32))
def test_extended_precision_chains(x: int, y: int, p: int, q: int) -> None:
    """96-bit add/sub through .cc/addc/subc, and a 32x32->64 mad.cc/madc product."""
    words = {f"a{i}": ((x >> (32 * i)) & M32, 32) for i in range(3)}
    words |= {f"b{i}": ((y >> (32 * i)) & M32, 32) for i in range(3)}
    m = run(
        "add.cc.u32 %s0, %a0, %b0; addc.cc.u32 %s1, %a1, %b1; addc.u32 %s2, %a2, %b2;"
        "sub.cc.u32 %d0, %a0, %b0; subc.cc.u32 %d1, %a1, %b1; subc.u32 %d2, %a2, %b2;"
        "mad.lo.cc.u32 %m0, %p, %q, 0; madc.hi.u32 %m1, %p, %q, 0;",
        **words,
        p=(p, 32),
        q=(q, 32),
    )
    total = sum(reg(m, f"s{i}")[0] << (32 * i) for i in range(3))
    diff = sum(reg(m, f"d{i}")[0] << (32 * i) for i in range(3))
    assert total == (x + y) & ((1 << 96) - 1)
    assert diff == (x - y) & ((1 << 96) - 1)
    assert reg(m, "m0")[0] | reg(m, "m1")[0] << 32 == p * q


def test_carry_flag_is_a_guarded_register() -> None:
    m = run(
        "add.cc.u32 %r1, %r2, %r2; @%p1 add.cc.u32 %r3, %r4, %r4; addc.u32 %r5, 0, 0;",
        lanes=2,
        r2=(0x80000000, 32),
        r4=(1, 32),
        p1=([0, 1], 1),
    )
    assert reg(m, "r5") == [1, 0]  # lane 0 keeps the carry of the first add
    assert m.dom.to_ints(m.regs[(CARRY.name, None)]) == [1, 0]


def test_mad_forms() -> None:
    m = run(
        "mad.lo.s32 %r1, %r2, %r3, %r4; mad.hi.sat.s32 %r5, %r6, %r6, %r7; mad.wide.u32 %rd1, %r2, %r3, %rd2;"
        "mad24.lo.s32 %r8, %r9, %r3, 1; mul24.hi.u32 %r10, %r11, %r11; sad.s32 %r12, %r2, %r4, 10;",
        r2=(-3 & M32, 32),
        r3=(7, 32),
        r4=(100, 32),
        r6=(0x7FFFFFFF, 32),
        r7=(0x7FFFFFFF, 32),
        rd2=(1 << 40, 64),
        r9=(0x01800001, 32),  # low 24 bits: 0x800001 = -8388607
        r11=(0xFFFFFF, 32),
    )
    assert reg(m, "r1") == [79]
    assert reg(m, "r5") == [0x7FFFFFFF]
    assert reg(m, "rd1") == [(0xFFFFFFFD * 7 + (1 << 40)) & M64]
    assert reg(m, "r8") == [s32(-8388607 * 7 + 1)]
    assert reg(m, "r10") == [(0xFFFFFF * 0xFFFFFF) >> 16 & M32]
    assert reg(m, "r12") == [10 + 103]


def test_division_and_remainder() -> None:
    m = run(
        "div.s32 %r3, %r1, %r2; rem.s32 %r4, %r1, %r2; div.u32 %r5, %r1, %r2; rem.u64 %rd3, %rd1, %rd2;",
        lanes=3,
        r1=([s32(-7), 0x80000000, 9], 32),
        r2=([2, M32, 0], 32),
        rd1=([10, 11, 12], 64),
        rd2=([3, 0, 5], 64),
    )
    assert reg(m, "r3") == [s32(-3), 0x80000000, M32]
    assert reg(m, "r4") == [s32(-1), 0, M32]
    assert reg(m, "r5") == [s32(-7) // 2, 0, M32]
    assert reg(m, "rd3") == [1, M64, 2]


def test_abs_neg_min_max() -> None:
    m = run(
        "abs.s32 %r2, %r1; neg.s32 %r3, %r1; min.s32 %r4, %r1, 0; max.u32 %r5, %r1, 5;"
        "max.relu.s32 %r6, %r1, -9;"
        "min.s16x2 %r7, %r8, %r9; max.relu.s16x2 %r10, %r8, %r9;",
        lanes=2,
        r1=([0x80000000, s32(-4)], 32),
        r8=(0xFFFF0005, 32),
        r9=(0x0001FFF0, 32),
    )
    assert reg(m, "r2") == [0x80000000, 4]
    assert reg(m, "r3") == [0x80000000, 4]
    assert reg(m, "r4") == [0x80000000, s32(-4)]
    assert reg(m, "r5") == [0x80000000, s32(-4)]
    assert reg(m, "r6") == [0, 0]
    assert reg(m, "r7") == [0xFFFFFFF0] * 2
    assert reg(m, "r10") == [0x00010005] * 2


def test_bit_counting() -> None:
    m = run(
        "popc.b64 %r2, %rd1; clz.b32 %r3, %r1; bfind.u32 %r4, %r1; bfind.s32 %r5, %r1;"
        "bfind.shiftamt.u32 %r6, %r1; brev.b32 %r7, %r1; clz.b64 %r8, %rd1;",
        lanes=3,
        r1=([0, 0x00F00000, 0xFFFFFFFF], 32),
        rd1=([0, 0xFF, M64], 64),
    )
    assert reg(m, "r2") == [0, 8, 64]
    assert reg(m, "r3") == [32, 8, 0]
    assert reg(m, "r4") == [M32, 23, 31]
    assert reg(m, "r5") == [M32, 23, M32]  # -1 has no non-sign bit
    assert reg(m, "r6") == [M32, 8, 0]
    assert reg(m, "r7") == [0, 0x00000F00, M32]
    assert reg(m, "r8") == [64, 56, 0]


def test_bfe_bfi() -> None:
    m = run(
        "bfe.u32 %r2, %r1, 4, 8; bfe.s32 %r3, %r1, 4, 8; bfe.s32 %r4, %r1, 28, 8; bfe.u32 %r5, %r1, 260, 8;"
        "bfe.s32 %r6, %r1, 4, 0; bfi.b32 %r7, 0xF, %r1, 30, 8; bfi.b32 %r8, 0, %r1, 8, 256;"
        "bfe.u64 %rd2, %rd1, 0, 257; bfi.b64 %rd3, 3, 0, 63, 256;",
        r1=(0x8765A4F0, 32),
        rd1=(0xFF, 64),
    )
    assert reg(m, "r2") == [0x4F]
    assert reg(m, "r3") == [0x4F]
    assert reg(m, "r4") == [0xFFFFFFF8]  # field runs past the msb: sign of a
    assert reg(m, "r5") == [0x4F]  # positions use their low byte (32-bit forms)
    assert reg(m, "r6") == [0]
    assert reg(m, "r7") == [0xC765A4F0]
    assert reg(m, "r8") == [0x8765A4F0]  # length 256 & 0xff = 0: b unchanged
    assert reg(m, "rd2") == [0xFF]  # 64-bit forms clamp instead (GPU)
    assert reg(m, "rd3") == [1 << 63]


def test_szext_bmsk_fns_isa_examples() -> None:
    m = run(
        "szext.wrap.u32 %r1, 0xffffffff, 0; szext.clamp.s32 %r2, 0x80, 8; szext.wrap.s32 %r3, 0x80, 40;"
        "bmsk.wrap.b32 %r4, 1, 2; bmsk.clamp.b32 %r5, 30, 8; bmsk.clamp.b32 %r6, 32, 1;"
        "fns.b32 %r7, 0xaaaaaaaa, 3, 1; fns.b32 %r8, 0xaaaaaaaa, 3, -1; fns.b32 %r9, 0xaaaaaaaa, 2, 1;"
        "fns.b32 %r10, 0xaaaaaaaa, 2, -1; fns.b32 %r11, 0xaaaaaaaa, 2, 0; fns.b32 %r12, 0xaaaaaaaa, 30, 2;",
    )
    assert reg(m, "r1") == [0]
    assert reg(m, "r2") == [0xFFFFFF80]
    assert reg(m, "r3") == [0xFFFFFF80]  # N = 40 wraps to 8: bit 7 is the sign
    assert reg(m, "r4") == [0x6]
    assert reg(m, "r5") == [0xC0000000]  # 30 + 8 runs past bit 31: bits 30..31
    assert reg(m, "r6") == [0]
    assert reg(m, "r7") == [3]
    assert reg(m, "r8") == [3]
    assert reg(m, "r9") == [3]
    assert reg(m, "r10") == [1]
    assert reg(m, "r11") == [M32]
    assert reg(m, "r12") == [M32]


def test_dot_products() -> None:
    m = run(
        "dp4a.s32.s32 %r3, %r1, %r2, 10; dp4a.u32.u32 %r4, %r1, %r2, 0; dp2a.hi.s32.u32 %r5, %r1, %r2, 0;",
        r1=(0xFF02FE01, 32),  # bytes -1, 2, -2, 1 (signed)
        r2=(0x04030201, 32),
    )
    assert reg(m, "r3") == [10 + 1 * 1 + (-2) * 2 + 2 * 3 + (-1) * 4]
    assert reg(m, "r4") == [1 * 1 + 0xFE * 2 + 2 * 3 + 0xFF * 4]
    # a halves: 0xFE01 (-511), 0xFF02 (-254); b bytes 2, 3: 3, 4
    assert reg(m, "r5") == [s32(-511 * 3 + -254 * 4)]


# --------------------------------------------------------------------------
# Logic, shifts, permutes


def _prmt_ref(a: int, b: int, c: int, mode: str | None) -> int:
    pool = (b << 32) | a
    rules = {
        "f4e": lambda k, i: (k + i) & 7,
        "b4e": lambda k, i: (k - i) & 7,
        "rc8": lambda k, i: k,
        "ecl": lambda k, i: max(i, k),
        "ecr": lambda k, i: min(i, k),
        "rc16": lambda k, i: (i & 1) + 2 * (k & 1),
    }
    out = 0
    for i in range(4):
        if mode is None:
            sel = (c >> (4 * i)) & 0xF
            byte = (pool >> (8 * (sel & 7))) & 0xFF
            if sel & 8:
                byte = 0xFF if byte & 0x80 else 0
        else:
            byte = (pool >> (8 * rules[mode](c & 3, i))) & 0xFF
        out |= byte << (8 * i)
    return out


@pytest.mark.parametrize("mode", [None, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"])
def test_prmt_all_modes(mode: str | None) -> None:
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 1 << 32, 16, dtype=np.uint64).tolist() for _ in range(3))
    c[:4] = [0, 1, 2, 3]
    c[4:6] = [0x3210, 0x8888]
    suffix = f".{mode}" if mode else ""
    m = run(f"prmt.b32{suffix} %r4, %r1, %r2, %r3;", lanes=16, r1=(a, 32), r2=(b, 32), r3=(c, 32))
    assert reg(m, "r4") == [_prmt_ref(x, y, z, mode) for x, y, z in zip(a, b, c, strict=True)]


def test_lop3_every_table() -> None:
    a, b, c = 0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA
    body = "".join(f"lop3.b32 %t{lut}, %ra, %rb, %rc, {lut};" for lut in range(256))
    m = run(body, ra=(0x12345678, 32), rb=(0x9ABCDEF0, 32), rc=(0x0F1E2D3C, 32))
    for lut in range(256):
        got = reg(m, f"t{lut}")[0]
        bits = 0
        x, y, z = 0x12345678, 0x9ABCDEF0, 0x0F1E2D3C
        for i in range(32):
            idx = ((x >> i & 1) << 2) | ((y >> i & 1) << 1) | (z >> i & 1)
            bits |= ((lut >> idx) & 1) << i
        assert got == bits, lut
    assert (a & b & c) == 0x80808080  # the selector constants the LUT is defined over


def test_shifts_and_funnel() -> None:
    m = run(
        "shl.b32 %r2, %r1, %r9; shr.u32 %r3, %r1, %r9; shr.s32 %r4, %r1, %r9; shl.b16 %rs1, %rs2, %r9;"
        "shf.l.wrap.b32 %r5, %r6, %r7, %r9; shf.r.clamp.b32 %r8, %r6, %r7, %r9;",
        lanes=4,
        r1=(0x80000001, 32),
        r9=([0, 4, 32, 0x10004], 32),
        rs2=(0x8001, 16),
        r6=(0x11223344, 32),
        r7=(0xAABBCCDD, 32),
    )
    assert reg(m, "r2") == [0x80000001, 0x10, 0, 0]
    assert reg(m, "r3") == [0x80000001, 0x08000000, 0, 0]
    assert reg(m, "r4") == [0x80000001, 0xF8000000, M32, M32]
    assert reg(m, "rs1") == [0x8001, 0x0010, 0, 0]  # a u32 count >= 16 is >= width
    assert reg(m, "r5") == [0xAABBCCDD, 0xABBCCDD1, 0xAABBCCDD, 0xABBCCDD1]
    assert reg(m, "r8") == [0x11223344, 0xD1122334, 0xAABBCCDD, 0xAABBCCDD]


def test_logic_and_predicates() -> None:
    m = run(
        "and.b32 %r3, %r1, %r2; or.b32 %r4, %r1, %r2; xor.b32 %r5, %r1, %r2; not.b32 %r6, %r1;"
        "cnot.b32 %r7, %r1;"
        "and.pred %p3, %p1, %p2; xor.pred %p4, %p1, %p2; not.pred %p5, %p1;",
        lanes=2,
        r1=([0, 0xF0], 32),
        r2=(0x3C, 32),
        p1=([0, 1], 1),
        p2=(1, 1),
    )
    assert reg(m, "r3") == [0, 0x30]
    assert reg(m, "r4") == [0x3C, 0xFC]
    assert reg(m, "r5") == [0x3C, 0xCC]
    assert reg(m, "r6") == [M32, 0xFFFFFF0F]
    assert reg(m, "r7") == [1, 0]
    assert reg(m, "p3") == [0, 1]
    assert reg(m, "p4") == [1, 0]
    assert reg(m, "p5") == [1, 0]


# --------------------------------------------------------------------------
# Comparison and selection


def test_setp_pairs_and_bool_ops() -> None:
    m = run(
        "setp.lt.and.s32 %p1|%p2, %r1, %r2, %p9; setp.lo.u32 %p3, %r1, %r2;"
        "setp.ge.or.s32 %p4|%p5, %r1, %r2, !%p9;"
        "setp.ne.xor.u64 %p6, %rd1, 0, %p9;",
        lanes=3,
        r1=([s32(-1), 5, 5], 32),
        r2=([1, 5, 1], 32),
        p9=([1, 1, 0], 1),
        rd1=([0, 1, 1], 64),
    )
    assert reg(m, "p1") == [1, 0, 0]
    assert reg(m, "p2") == [0, 1, 0]
    assert reg(m, "p3") == [0, 0, 0]
    assert reg(m, "p4") == [0, 1, 1]
    assert reg(m, "p5") == [1, 0, 1]
    assert reg(m, "p6") == [1, 0, 1]


def test_float_compare_nan_and_half_pairs() -> None:
    nan = 0x7FC00000
    m = run(
        "setp.lt.f32 %p1, %f1, %f2; setp.ltu.f32 %p2, %f1, %f2; setp.ne.f32 %p3, %f1, %f2;"
        "setp.nan.f32 %p4, %f1, %f2;"
        "setp.lt.ftz.f32 %p5, %f3, 0f00000000; setp.lt.f32 %p6, %f3, 0f00000000;"
        "setp.gt.f16x2 %p7|%p8, %r1, %r2;",
        lanes=2,
        f1=([nan, f32(1.0)], 32),
        f2=([f32(1.0), f32(2.0)], 32),
        f3=(0x80000001, 32),
        r1=(0x3C004000, 32),  # hi 1.0, lo 2.0
        r2=(0x3C003C00, 32),
    )
    assert reg(m, "p1") == [0, 1]
    assert reg(m, "p2") == [1, 1]
    assert reg(m, "p3") == [0, 1]  # ordered ne is false on NaN
    assert reg(m, "p4") == [1, 0]
    assert reg(m, "p5") == [0, 0]  # -subnormal flushes to -0, not < 0
    assert reg(m, "p6") == [1, 1]
    assert reg(m, "p7") == [1, 1]  # low half: 2.0 > 1.0
    assert reg(m, "p8") == [0, 0]  # high half: 1.0 > 1.0


def test_set_selp_slct() -> None:
    m = run(
        "set.lt.u32.s32 %r3, %r1, %r2; set.lt.f32.s32 %r4, %r1, %r2; set.lt.and.u32.s32 %r5, %r1, %r2, %p1;"
        "selp.b32 %r6, 10, 20, %p1; slct.s32.s32 %r7, 1, 2, %r1; slct.u32.f32 %r8, 1, 2, %f1;"
        "set.gt.f16x2.f16x2 %r9, %r10, %r11;",
        lanes=2,
        r1=([s32(-1), 3], 32),
        r2=(0, 32),
        p1=([0, 1], 1),
        f1=([0x80000000, 0xBF800000], 32),
        r10=(0x40003C00, 32),
        r11=(0x3C003C00, 32),
    )
    assert reg(m, "r3") == [M32, 0]
    assert reg(m, "r4") == [f32(1.0), 0]
    assert reg(m, "r5") == [0, 0]
    assert reg(m, "r6") == [20, 10]
    assert reg(m, "r7") == [2, 1]
    assert reg(m, "r8") == [1, 2]  # -0.0 >= 0
    assert reg(m, "r9") == [0x3C000000] * 2


def test_testp_copysign() -> None:
    vals = [0, 0x80000000, 0x7F800000, 0x7FC00000, 0x00000001, 0x3F800000]
    props = ["finite", "infinite", "number", "notanumber", "normal", "subnormal"]
    body = "".join(f"testp.{p}.f32 %p{i}, %f1;" for i, p in enumerate(props)) + "copysign.f32 %f2, %f3, %f1;"
    m = run(body, lanes=6, f1=(vals, 32), f3=(0xBF800000, 32))
    assert reg(m, "p0") == [1, 1, 0, 0, 1, 1]
    assert reg(m, "p1") == [0, 0, 1, 0, 0, 0]
    assert reg(m, "p2") == [1, 1, 1, 0, 1, 1]
    assert reg(m, "p3") == [0, 0, 0, 1, 0, 0]
    assert reg(m, "p4") == [1, 1, 0, 0, 0, 1]  # zero counts as normal
    assert reg(m, "p5") == [0, 0, 0, 0, 1, 0]
    assert reg(m, "f2") == [v | 0x80000000 for v in vals]


# --------------------------------------------------------------------------
# Floating point through the domain


def test_float_arithmetic_and_immediates() -> None:
    m = run(
        "add.f32 %f2, %f1, 0f3F800000; add.f32 %f3, %f1, 1.5; mul.rz.f32 %f4, %f1, 0f3EAAAAAB;"
        "fma.rn.f32 %f5, %f1, %f1, %f1; add.f64 %fd2, %fd1, 0d3FF0000000000000; mul.f64 %fd3, %fd1, 0.1;"
        "div.rn.f32 %f6, 1.0, 3.0; sqrt.rn.f64 %fd4, %fd1; add.sat.f32 %f7, %f1, %f1; abs.ftz.f32 %f8, %f9;"
        "neg.f16x2 %r1, %r2; min.NaN.f32 %f10, %f1, %f11; max.xorsign.abs.f16 %h1, %h2, %h3;"
        "cvt.rn.f16.f32 %h4, %f1; add.f16 %h5, %h4, %h4;",
        f1=(f32(2.0), 32),
        fd1=(f64(4.0), 64),
        f9=(0x80000010, 32),
        r2=(0x3C00BC00, 32),
        f11=(0x7FC00000, 32),
        h2=(0xC000, 16),  # -2
        h3=(0x3C00, 16),  # 1
    )
    assert reg(m, "f2") == [f32(3.0)]
    assert reg(m, "f3") == [f32(3.5)]
    assert reg(m, "f4") == [0x3F2AAAAB]  # exact: twice 0x3EAAAAAB
    assert reg(m, "f5") == [f32(6.0)]
    assert reg(m, "fd2") == [f64(5.0)]
    assert reg(m, "fd3") == [f64(4.0 * 0.1)]
    assert reg(m, "f6") == [0x3EAAAAAB]
    assert reg(m, "fd4") == [f64(2.0)]
    assert reg(m, "f7") == [f32(1.0)]
    assert reg(m, "f8") == [0]
    assert reg(m, "r1") == [0xBC003C00]
    assert reg(m, "f10") == [0x7FFFFFFF]
    assert reg(m, "h1") == [0xC000]  # |-2| with sign(-2) ^ sign(1)
    assert reg(m, "h5") == [0x4400]


def test_approx_and_special_functions() -> None:
    m = run(
        "rcp.approx.f32 %f2, %f1; sqrt.approx.f32 %f3, %f1; ex2.approx.ftz.f32 %f4, %f1;"
        "lg2.approx.f32 %f5, %f1;"
        "sin.approx.f32 %f6, 0f00000000; tanh.approx.f32 %f7, 0f00000000; rsqrt.approx.f32 %f8, %f1;",
        f1=(f32(4.0), 32),
    )
    assert reg(m, "f2") == [f32(0.25)]
    assert reg(m, "f3") == [f32(2.0)]
    assert reg(m, "f4") == [f32(16.0)]
    assert reg(m, "f5") == [f32(2.0)]
    assert reg(m, "f6") == [0]
    assert reg(m, "f7") == [0]
    assert reg(m, "f8") == [f32(0.5)]


# --------------------------------------------------------------------------
# Conversions


def test_cvt_integer_saturation_and_extension() -> None:
    m = run(
        "cvt.sat.s8.s32 %rs1, %r1; cvt.sat.u8.s32 %rs2, %r1; cvt.s32.s8 %r2, %rs3; cvt.u32.u16 %r3, %rs3;"
        "cvt.sat.s32.u32 %r4, %r5; cvt.sat.u32.s64 %r6, %rd1; cvt.s64.s32 %rd2, %r1; cvt.u8.u32 %rs4, %r1;",
        lanes=3,
        r1=([300, s32(-300), 5], 32),
        rs3=(0x80FF, 16),
        r5=([0x80000000, 7, M32], 32),
        rd1=([1 << 40, M64, 9], 64),
    )
    assert reg(m, "rs1", 16) == [127, 0xFF80, 5]
    assert reg(m, "rs2", 16) == [255, 0, 5]
    assert reg(m, "r2") == [M32] * 3  # low byte 0xFF sign-extended
    assert reg(m, "r3") == [0x80FF] * 3
    assert reg(m, "r4") == [0x7FFFFFFF, 7, 0x7FFFFFFF]
    assert reg(m, "r6") == [M32, 0, 9]
    assert reg(m, "rd2") == [300, (-300) & M64, 5]
    assert reg(m, "rs4", 16) == [300 & 0xFF, (-300) & 0xFF, 5]


def test_cvt_float_rounding_and_saturation() -> None:
    m = run(
        "cvt.rni.s32.f32 %r1, %f1; cvt.rzi.s32.f32 %r2, %f1; cvt.rmi.s32.f32 %r3, %f1;"
        "cvt.rpi.u32.f32 %r4, %f1;"
        "cvt.rn.f32.s32 %f2, %r9; cvt.rz.f32.s32 %f3, %r9; cvt.rn.f16.f32 %h1, %f1; cvt.f64.f32 %fd1, %f1;"
        "cvt.rn.sat.f32.f32 %f4, %f1; cvt.rni.f32.f32 %f5, %f1; cvt.rn.bf16x2.f32 %r5, %f1, %f6;"
        "cvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f6; cvt.pack.sat.s16.s32 %r6, %r9, %r10;"
        "cvt.pack.sat.u8.s32.b32 %r7, %r9, %r10, 0xABCD;",
        lanes=3,
        f1=([f32(-2.5), f32(3.5e9), 0x7FC00000], 32),
        f6=(f32(1.0), 32),
        r9=([(1 << 24) + 1, 100000, s32(-7)], 32),
        r10=([5, s32(-100000), 300], 32),
    )
    assert reg(m, "r1") == [s32(-2), 0x7FFFFFFF, 0]
    assert reg(m, "r2") == [s32(-2), 0x7FFFFFFF, 0]
    assert reg(m, "r3") == [s32(-3), 0x7FFFFFFF, 0]
    assert reg(m, "r4") == [0, 3500000000, 0]
    assert reg(m, "f2")[0] == f32(16777216.0)
    assert reg(m, "f3")[0] == f32(16777216.0)
    assert reg(m, "h1") == [0xC100, 0x7C00, 0x7FFF]
    assert reg(m, "fd1")[:2] == [f64(-2.5), f64(3.5e9)]
    assert reg(m, "f4") == [0, f32(1.0), 0]
    assert reg(m, "f5") == [f32(-2.0), f32(3.5e9), 0x7FFFFFFF]
    assert reg(m, "r5")[0] == 0xC0203F80
    assert reg(m, "rs1", 16) == [0xC238, 0x7E38, 0x7F38]
    assert reg(m, "r6") == [0x7FFF0005, 0x7FFF8000, 0xFFF9012C]
    assert reg(m, "r7") == [0xABCDFF05, 0xABCDFF00, 0xABCD00FF]


# --------------------------------------------------------------------------
# Data movement, memory, guards


def test_mov_pack_unpack_symbols() -> None:
    m = run(
        "mov.b64 {%r1, %r2}, %rd1; mov.b64 %rd2, {%r3, %r4}; mov.b32 {%rs1, %rs2}, %r5; mov.u64 %rd3, gv;"
        "mov.u64 %rd4, arr+16; mov.u32 %r6, %tid.x; mov.pred %p1, 1; mov.b32 %r7, 0f3F800000;",
        rd1=(0x1122334455667788, 64),
        r3=(0xAAAA, 32),
        r4=(0xBBBB, 32),
        r5=(0x12345678, 32),
    )
    m.regs[("%tid", "x")] = m.dom.const(9, 32)
    assert reg(m, "r1") == [0x55667788] and reg(m, "r2") == [0x11223344]
    assert reg(m, "rd2") == [0x0000BBBB0000AAAA]
    assert reg(m, "rs1") == [0x5678] and reg(m, "rs2") == [0x1234]
    assert reg(m, "rd3") == [0x1000]
    assert reg(m, "rd4") == [0x2010]
    assert reg(m, "p1") == [1]
    assert reg(m, "r7") == [0x3F800000]


def test_special_register_read() -> None:
    src = ".version 8.6\n.target sm_90\n.address_size 64\n.visible .entry k()\n{ mov.u32 %r1, %tid.x; }\n"
    machine = FakeMachine(2)
    machine.regs[("%tid", "x")] = machine.dom.from_ints([3, 4], 32)
    inst = next(parse_ptx(src).kernels[0].instructions())
    Semantics(machine).execute(inst)
    assert reg(machine, "r1") == [3, 4]


def test_loads_stores_vectors_and_subwords() -> None:
    m = run(
        "st.global.u32 [%rd1], %r1; st.global.v2.u32 [%rd1+8], {%r1, %r2};"
        "st.shared.v4.u8 [%rd1+16], {1, 2, 3, 0xF0};"
        "ld.global.u32 %r3, [%rd1]; ld.global.v2.u32 {%r4, %r5}, [%rd1+8]; ld.global.s8 %r6, [%rd1+19];"
        "ld.global.u8 %rs1, [%rd1+19]; ld.global.v2.u16 {%rs2, _}, [%rd1+16]; ld.param.u64 %rd2, [gv+8];"
        "st.global.f64 [%rd1+24], 0d400921FB54442D18; ldu.global.f64 %fd1, [%rd1+24];",
        rd1=(0x100, 64),
        r1=(0x80000001, 32),
        r2=(2, 32),
    )
    assert reg(m, "r3") == [0x80000001]
    assert reg(m, "r4") == [0x80000001] and reg(m, "r5") == [2]
    assert reg(m, "r6", 32) == [0xFFFFFFF0]  # sign-extended to the register
    assert reg(m, "rs1", 16) == [0xF0]
    assert reg(m, "rs2", 16) == [0x0201]
    assert reg(m, "fd1") == [0x400921FB54442D18]
    assert ("generic", 0x1008) not in m.loads and (".param", 0x1008) in m.loads


def test_atomics() -> None:
    m = run(
        "st.global.u32 [%rd1], 5; atom.global.add.u32 %r1, [%rd1], 3;"
        "atom.global.cas.b32 %r2, [%rd1], 8, 100;"
        "atom.global.exch.b32 %r3, [%rd1], 7; red.global.add.u32 [%rd1], 1; ld.global.u32 %r4, [%rd1];",
        rd1=(0x40, 64),
    )
    assert reg(m, "r1") == [5] and reg(m, "r2") == [8] and reg(m, "r3") == [100] and reg(m, "r4") == [8]


def test_cp_async_zero_fills_past_src_size() -> None:
    m = run(
        "st.global.v2.u64 [%rd2], {%rd5, %rd6}; cp.async.cg.shared.global [%rd1], [%rd2], 16, %r1;"
        "cp.async.commit_group; cp.async.wait_all; ld.shared.v2.u64 {%rd3, %rd4}, [%rd1];",
        lanes=2,
        rd1=([0x800, 0x900], 64),
        rd2=([0x100, 0x200], 64),
        rd5=(0x1111111111111111, 64),
        rd6=(0x2222222222222222, 64),
        r1=([16, 3], 32),
    )
    assert reg(m, "rd3") == [0x1111111111111111, 0x111111]
    assert reg(m, "rd4") == [0x2222222222222222, 0]
    assert ("generic", 0x208) not in m.loads and (
        ".global",
        0x208,
    ) not in m.loads  # nothing read past src-size


def test_guarded_writes_keep_old_values() -> None:
    m = run(
        "@%p1 add.s32 %r1, %r1, 1; @!%p1 mov.b32 %r2, 7; @%p1 st.global.u32 [%rd1], 9;"
        "@%p1 setp.eq.s32 %p2, 0, 0;",
        lanes=2,
        p1=([1, 0], 1),
        r1=([10, 20], 32),
        r2=([1, 2], 32),
        rd1=([0x10, 0x20], 64),
    )
    assert reg(m, "r1") == [11, 20]
    assert reg(m, "r2") == [1, 7]
    assert m.mem.get(0x10) == 9 and 0x20 not in m.mem
    assert reg(m, "p2") == [1, 0]


def test_warp_barrier_and_unknown() -> None:
    m = run(
        "shfl.sync.down.b32 %r1|%p1, %r2, 1, 31, -1; vote.sync.ballot.b32 %r3, !%p2, -1; bar.sync 0;"
        "activemask.b32 %r4; fence.acq_rel.gpu; membar.gl; prefetch.global.L2 [%rd1];"
        "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex, {%r5}];"
        "@%p3 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
        " {%f5, %f6, %f7, %f8}, {%r6, %r7, %r8, %r9}, {%r10, %r11}, {%f5, %f6, %f7, %f8};",
        lanes=2,
        p2=([0, 1], 1),
        p3=([1, 0], 1),
        f6=([5, 5], 32),
    )
    assert reg(m, "r1") == [0x77, 0x77] and reg(m, "p1") == [1, 1]
    opcodes = [w[0] for w in m.warps]
    assert opcodes == ["shfl", "vote", "activemask"]
    assert m.dom.to_ints(m.warps[1][1][0]) == [1, 0]  # the negated predicate operand
    assert m.barriers == ["bar.sync"]
    assert [u[0] for u in m.unknowns] == ["tex", "mma"]
    assert reg(m, "f1") == [0, 0]  # fresh values (zero in the concrete domain)
    assert reg(m, "f6") == [0, 5]  # the guard still protects unmodelled writes


def test_branch_condition_and_coverage() -> None:
    src = (
        ".version 8.6\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n@!%p1 bra L1;\nL1:\nret;\n}\n"
    )
    machine = FakeMachine(2)
    machine.regs[("%p1", None)] = machine.dom.from_ints([1, 0], 1)
    sem = Semantics(machine)
    bra, ret = list(parse_ptx(src).kernels[0].instructions())
    cond = sem.branch_condition(bra)
    assert cond is not None and machine.dom.to_ints(cond) == [0, 1]
    assert sem.branch_condition(ret) is None
    assert not sem.supports(bra)
    handled = set(handled_opcodes())
    table = {spec.name for spec in isa.opcodes()}
    assert handled <= table
    for opcode in ("prmt", "lop3", "shf", "bfe", "bfi", "mad", "addc", "cvt", "cvt.pack", "shfl", "atom"):
        assert opcode in handled


def test_operand_and_address_entry_points() -> None:
    machine = FakeMachine(1)
    sem: Semantics[Any] = Semantics(machine)
    expr = ir.BinaryExpr("+", ir.Symbol("gv"), ir.IntImm(8))
    assert machine.dom.to_ints(sem.operand(expr, 64)) == [0x1008]
    assert machine.dom.to_ints(sem.operand(ir.FloatImm("f", "0f3F800000"), 32)) == [0x3F800000]
    assert machine.dom.to_ints(sem.address(ir.Address(ir.Symbol("arr"), -4))) == [0x2000 - 4]
    assert machine.dom.to_ints(sem.address(ir.Address(None, 0x40))) == [0x40]
