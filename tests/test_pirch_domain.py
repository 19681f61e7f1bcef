"""The LLVM-emitting domain against the concrete domain, operation by operation.

Each operation is emitted by `LLVMDomain` into a function of one module
(compiled once, natively, by the runtime's JIT) and run on the same lanes
as `ConcreteDomain`: integer arithmetic with the GPU's answers where LLVM
has undefined behaviour (division by zero, MIN/-1, shifts by the width),
every floating-point form the domain lifts (f32 with and without ``.ftz``,
f64, ``.approx`` forms the interpreter evaluates in double, conversions)
on data full of NaN payloads, infinities, zeros of both signs and
subnormals, and the lane primitives (constant and run-time lanes, packed
work groups). Bit patterns must be identical. Forms the domain does not
lift exactly must raise, not approximate.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
import pytest
from llvmlite import ir

from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.semantics import collectives
from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.pirch_bridge.domain import LLVMDomain, Vec
from ptxasw.pirch_bridge.jit import compile_ir

LANES = 16
_DTYPES = {1: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

Op = Callable[..., object]


class Batch:
    """Operations emitted as functions ``fN(out, in...)`` of one module."""

    def __init__(self, wg_size: int = LANES, wg_pack: int = 1) -> None:
        self.module = ir.Module(name="domain_test")
        self.wg_size, self.wg_pack = wg_size, wg_pack
        self.lanes = wg_size * wg_pack
        self.cases: list[tuple[str, Op, list[int], int]] = []

    def add(self, fn: Op, widths: list[int]) -> int:
        """Emit ``fn(domain, *inputs)``; inputs of width 1 arrive as bytes (truncated)."""
        d = LLVMDomain(self.module, self.wg_size, self.wg_pack)
        loaded = [8 if w == 1 else w for w in widths]
        ptrs = [ir.PointerType(d.vtype(w)) for w in loaded]
        self.emitted = getattr(self, "emitted", 0) + 1
        name = f"f{self.emitted}"
        f = ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(d.vtype(64)), *ptrs]), name
        )
        b = ir.IRBuilder(f.append_basic_block())
        d.builder = b
        vecs = [Vec(b.load(p, align=1), w) for p, w in zip(f.args[1:], loaded, strict=True)]
        vecs = [d.extract(v, 0, 0) if w == 1 else v for v, w in zip(vecs, widths, strict=True)]
        r = fn(d, *vecs)
        assert isinstance(r, Vec)
        b.store(d.zext(r, 64).value if r.width < 64 else r.value, f.args[0], align=1)
        b.ret_void()
        self.cases.append((name, fn, widths, r.width))
        return len(self.cases) - 1

    def compile(self) -> None:
        self.compiled = compile_ir(str(self.module))

    def run(self, index: int, inputs: list[np.ndarray]) -> np.ndarray:
        name, _, widths, _ = self.cases[index]
        bufs = [np.ascontiguousarray(x.astype(_DTYPES[w])) for x, w in zip(inputs, widths, strict=True)]
        out = np.zeros(self.lanes, dtype=np.uint64)
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (1 + len(bufs))))
        proto(self.compiled.address(name))(out.ctypes.data, *[x.ctypes.data for x in bufs])
        return out

    def expect(self, index: int, inputs: list[np.ndarray]) -> np.ndarray:
        """The concrete domain's answer, one work group at a time (its warps are the groups)."""
        _, fn, widths, width = self.cases[index]
        w = self.wg_size
        parts = []
        for g in range(self.wg_pack):
            cd = ConcreteDomain(w)
            args = [
                Bits(x[g * w : (g + 1) * w].astype(np.uint64) & np.uint64((1 << wd) - 1), wd)
                for x, wd in zip(inputs, widths, strict=True)
            ]
            r = fn(cd, *args)
            assert isinstance(r, Bits) and r.width == width
            parts.append(r.data)
        return np.concatenate(parts)


_F32_SPECIAL = [0x7FC00000, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0, 0x80000000, 1, 0x80000001]
_F32_SPECIAL += [0x007FFFFF, 0x00800000, 0x80800000, 0x3F800000, 0x7F7FFFFF, 0x00400000, 0x00FFFFFF]
_F64_SPECIAL = [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000012345, 0x7FF0000000000000]
_F64_SPECIAL += [0xFFF0000000000000, 0, 1 << 63, 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000]
_F64_SPECIAL += [0x3FF0000000000000, 0x7FEFFFFFFFFFFFFF, 0xBFF0000000000000, 0x36A0000000000000]


def float_lanes(rng: np.random.Generator, width: int, n: int = LANES) -> np.ndarray:
    """Random bit patterns, half of them special values, a third of the rest ordinary numbers."""
    x = rng.integers(0, 2**width, n, dtype=np.uint64)
    special = np.array(_F32_SPECIAL if width == 32 else _F64_SPECIAL, dtype=np.uint64)
    pick = rng.random(n) < 0.5
    x[pick] = rng.choice(special, pick.sum())
    nice = rng.random(n) < 0.3
    normal = rng.normal(size=nice.sum())
    x[nice] = normal.astype(np.float32).view(np.uint32) if width == 32 else normal.view(np.uint64)
    return x


def _float_ops() -> list[tuple[FpOp, int]]:
    ops: list[tuple[FpOp, int]] = []
    for t in (".f32", ".f64"):
        for ftz in (False, True) if t == ".f32" else (False,):
            for name in ("add", "sub", "mul", "fma", "div"):
                ops.append((FpOp(name, t, rounding=".rn", ftz=ftz), 3 if name == "fma" else 2))
            for name in ("sqrt", "rcp"):
                ops.append((FpOp(name, t, rounding=".rn", ftz=ftz), 1))
            ops += [(FpOp("min", t, ftz=ftz), 2), (FpOp("max", t, ftz=ftz), 2), (FpOp("max", t, nan=True), 2)]
            # .sat clamps into [+0, 1] (NaN -> +0): nvcc's __saturatef, cvt.sat.f32.f32
            ops += [(FpOp(name, t, rounding=".rn", ftz=ftz, sat=True), 3 if name == "fma" else 2)
                    for name in ("add", "mul", "fma")]  # fmt: skip
            ops.append((FpOp("cvt", t, t, None, ftz=ftz, sat=True), 1))
            if t == ".f32":
                ops += [
                    (FpOp(n, t, approx=True, ftz=ftz), 2 if n == "div" else 1) for n in ("div", "sqrt", "rcp")
                ]
                ops.append((FpOp("rsqrt", t, approx=True, ftz=ftz), 1))
                ops += [(FpOp(n, t, approx=True, ftz=ftz), 1) for n in ("ex2", "lg2", "sin", "cos", "tanh")]
        if t == ".f64":
            ops.append((FpOp("rsqrt", t, approx=True), 1))
    return ops


def _conversions() -> list[tuple[FpOp, int]]:
    ops: list[tuple[FpOp, int]] = []
    for src, sw in ((".f32", 32), (".f64", 64)):
        for dst in (".s32", ".u32", ".s64", ".u64", ".s16", ".u8"):
            for rounding in (None, ".rni", ".rmi", ".rpi"):
                ops.append((FpOp("cvt", dst, src, rounding, ftz=src == ".f32"), sw))
        for dst in (".f32", ".f64"):
            for rounding in (".rni", ".rzi") if dst == src else (None,):
                for ftz in (False, True):
                    ops.append((FpOp("cvt", dst, src, rounding, ftz=ftz), sw))
    for src, sw in ((".s32", 32), (".u32", 32), (".s64", 64), (".u64", 64), (".s16", 16)):
        for dst in (".f32", ".f64"):
            ops.append((FpOp("cvt", dst, src, ".rn"), sw))
    return ops


_INT_BINARY = ["add", "sub", "mul", "udiv", "urem", "sdiv", "srem", "shl", "lshr", "ashr", "eq", "ult", "slt"]
_INT_BINARY += ["and_", "or_", "xor"]


def test_integer_operations_match() -> None:
    rng = np.random.default_rng(1)
    batch = Batch()
    cases = []
    for width in (16, 32, 64):
        for name in _INT_BINARY:
            cases.append(
                (batch.add(lambda d, a, b, name=name: getattr(d, name)(a, b), [width, width]), width, 2)
            )
        for name in ("popc", "clz", "brev", "not_", "neg"):
            cases.append((batch.add(lambda d, a, name=name: getattr(d, name)(a), [width]), width, 1))
        cases.append(
            (
                batch.add(lambda d, a, b: d.concat(d.extract(a, 7, 3), d.extract(b, 4, 0)), [width] * 2),
                width,
                2,
            )
        )
    batch.compile()
    for index, width, arity in cases:
        for _ in range(4):
            edge = np.array(
                [0, 1, 2**width - 1, 2 ** (width - 1), 2 ** (width - 1) - 1, width, width + 1, 7], np.uint64
            )
            ins = []
            for _ in range(arity):
                x = rng.integers(0, 2**width, LANES, dtype=np.uint64)
                pick = rng.random(LANES) < 0.5
                x[pick] = rng.choice(edge, pick.sum())
                ins.append(x)
            np.testing.assert_array_equal(
                batch.run(index, ins), batch.expect(index, ins), err_msg=str(batch.cases[index])
            )


@pytest.mark.parametrize("which", ["arithmetic", "conversions"])
def test_float_operations_are_bit_exact(which: str) -> None:
    rng = np.random.default_rng(2 if which == "arithmetic" else 3)
    batch = Batch()
    cases = []
    if which == "arithmetic":
        for op, arity in _float_ops():
            width = 32 if op.type == ".f32" else 64
            cases.append(
                (batch.add(lambda d, *xs, op=op: d.fp(op, *xs), [width] * arity), op, [width] * arity)
            )
        for cmp in (
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "equ",
            "neu",
            "ltu",
            "leu",
            "gtu",
            "geu",
            "num",
            "nan",
        ):
            for t, width in ((".f32", 32), (".f64", 64)):
                fn = lambda d, a, b, cmp=cmp, t=t: d.fp_compare(cmp, t, a, b)  # noqa: E731
                cases.append((batch.add(fn, [width, width]), (cmp, t), [width, width]))
    else:
        for op, sw in _conversions():
            cases.append((batch.add(lambda d, x, op=op: d.fp(op, x), [sw]), op, [sw]))
    batch.compile()
    for index, op, widths in cases:
        for _ in range(12):
            ins = [
                float_lanes(rng, w) if w >= 32 else rng.integers(0, 2**w, LANES, dtype=np.uint64)
                for w in widths
            ]
            got, want = batch.run(index, ins), batch.expect(index, ins)
            if not np.array_equal(got, want):
                i = int(np.flatnonzero(got != want)[0])
                pytest.fail(
                    f"{op}: inputs {[hex(int(x[i])) for x in ins]} gave {got[i]:#x}, want {want[i]:#x}"
                )


def test_forms_not_lifted_exactly_are_refused() -> None:
    batch = Batch()
    for op, widths in (
        (FpOp("add", ".f32", rounding=".rz"), [32, 32]),
        (FpOp("sin", ".f64", approx=True), [64]),
        (FpOp("add", ".f16", rounding=".rn"), [16, 16]),
        (FpOp("rcp", ".f64", approx=True, ftz=True), [64]),
    ):
        with pytest.raises(NotImplementedError):
            batch.add(lambda d, *xs, op=op: d.fp(op, *xs), widths)


def test_constant_lanes_fold_to_constants() -> None:
    d = LLVMDomain(ir.Module(), 8, 2)
    lane = d.lane_index()
    assert lane.known == tuple(i % 8 for i in range(16))
    x = d.add(d.shl(lane, d.const(2, 32)), d.const(1, 32))
    assert x.known == tuple(4 * (i % 8) + 1 for i in range(16))
    assert isinstance(x.value, ir.Constant)


@pytest.mark.parametrize(("wg", "pack"), [(8, 2), (16, 1), (4, 4), (32, 1)])
def test_lane_primitives_and_shuffles(wg: int, pack: int) -> None:
    rng = np.random.default_rng(wg * 10 + pack)
    batch = Batch(wg, pack)
    n = wg * pack
    cases: list[tuple[int, str]] = []
    cases.append((batch.add(lambda d, x, s: d.lane_read(x, s), [32, 32]), "values,lanes"))
    cases.append((batch.add(lambda d, p, m: d.lane_ballot(p, m), [1, 32]), "pred,group_mask"))
    cases.append((batch.add(lambda d, x, m: d.lane_match(x, m), [32, 32]), "few,group_mask"))
    for op in ("add", "and", "or", "xor", "smin", "smax", "umin", "umax"):
        cases.append(
            (batch.add(lambda d, x, m, op=op: d.lane_reduce(op, x, m), [32, 32]), "values,lane_mask")
        )
        fixed = lambda d, x, op=op: d.lane_reduce(op, x, d.const(0b1011, 32))  # noqa: E731
        cases.append((batch.add(fixed, [32]), "values"))
    for mode in (".up", ".down", ".bfly", ".idx"):
        for c in (0x1F, ((32 - wg) << 8) | 0x1F, ((32 - max(wg // 2, 1)) << 8) | 0x1F):

            def const(d: LLVMDomain, x: Vec, mode: str = mode, c: int = c) -> Vec:
                return collectives.shuffle(d, mode, x, d.const(3, 32), d.const(c, 32))[0]

            cases.append((batch.add(const, [32]), "values"))
            rt = lambda d, x, s, mode=mode, c=c: collectives.shuffle(d, mode, x, s, d.const(c, 32))[0]  # noqa: E731
            cases.append((batch.add(rt, [32, 32]), "values,lanes"))
    batch.compile()
    full = (1 << wg) - 1
    for index, kinds in cases:
        for _ in range(4):
            data = {
                "values": rng.integers(0, 2**32, n, dtype=np.uint64),
                "few": rng.integers(0, 3, n, dtype=np.uint64),
                "lanes": rng.integers(0, 40, n, dtype=np.uint64),
                "pred": rng.integers(0, 2, n, dtype=np.uint64),
                "group_mask": np.repeat(rng.integers(0, full + 1, pack, dtype=np.uint64), wg),
                "lane_mask": rng.integers(0, full + 1, n, dtype=np.uint64),
            }
            ins = [data[k] for k in kinds.split(",")]
            np.testing.assert_array_equal(batch.run(index, ins), batch.expect(index, ins), err_msg=kinds)


@pytest.mark.parametrize(("wg", "pack"), [(8, 2), (32, 1)])
def test_shuffled_halves_of_a_64_bit_value_rejoin(wg: int, pack: int) -> None:
    """nvcc's 64-bit shuffle (split, two ``shfl.sync``, merge) as one ``<L x i64>``
    permutation when both halves went through the same lanes (`Part`); halves read
    through different lanes, or merged the other way round, stay separate. Every
    case equals the concrete domain bit for bit."""
    rng = np.random.default_rng(wg + pack)
    batch = Batch(wg, pack)
    n = wg * pack

    def halves(d: LLVMDomain, x: Vec, mode: str, c: int, lanes: tuple[int, int], swap: bool = False) -> Vec:
        lo, hi = d.extract(x, 31, 0), d.extract(x, 63, 32)
        s_lo = collectives.shuffle(d, mode, lo, d.const(lanes[0], 32), d.const(c, 32))[0]
        s_hi = collectives.shuffle(d, mode, hi, d.const(lanes[1], 32), d.const(c, 32))[0]
        return d.concat(s_lo, s_hi) if swap else d.concat(s_hi, s_lo)

    cases: list[tuple[int, bool]] = []
    for mode in (".up", ".down", ".bfly", ".idx"):
        clamp = 0 if mode == ".up" else 0x1F  # .up's clamp is the lowest lane
        for c in (clamp, ((32 - max(wg // 2, 1)) << 8) | clamp):
            for lanes, swap, joined in (((3, 3), False, True), ((3, 2), False, False), ((1, 1), True, False)):
                fn = lambda d, x, m=mode, c=c, ln=lanes, sw=swap: halves(d, x, m, c, ln, sw)  # noqa: E731
                count = lambda: str(batch.module).count(f"shufflevector <{n} x i64>")  # noqa: E731
                merges = lambda: str(batch.module).count(f"shl <{n} x i64>")  # noqa: E731
                before, merges_before = count(), merges()
                cases.append((batch.add(fn, [64]), joined))
                wide, merged = count() - before, merges() - merges_before
                assert (wide, merged) == ((1, 0) if joined else (0, 1)), (mode, c, lanes, swap)
    batch.compile()
    for index, _ in cases:
        for _ in range(3):
            x = [float_lanes(rng, 64, n)]
            np.testing.assert_array_equal(batch.run(index, x), batch.expect(index, x))
