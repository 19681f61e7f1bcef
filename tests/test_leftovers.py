"""Leftovers of the house-keeping issue, one behaviour per test.

- Registers and variables follow their declarations, not their spelling
  (GCC's ``.param.u64 %P<2>`` and ``.reg.u64 %stack``).
- Vector ``mov`` of immediates and registers (GCC's ``mov.v2.u32 %r, {0,0}``).
- Strict mode: ``bar.red`` and ``isspacep`` are modelled, and ``trace --strict``.
- The concrete domain's fast path for round-to-nearest add/sub/mul is
  bit-exact against the general path.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import z3
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxasw import ir
from ptxasw.cli import main
from ptxasw.emulator.concrete.domain import _FAST_FP, Bits, ConcreteDomain
from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.emulator.symbolic.batch import iter_analyses
from ptxasw.emulator.symbolic.domain import const_value
from ptxasw.emulator.symbolic.executor import analyze_kernel
from ptxasw.errors import UnsupportedInstruction
from ptxasw.parser.frontend import parse_ptx

GCC_HEADER = ".version 6.0\n.target sm_30\n.address_size 64\n\n"
HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"


def always(formula: z3.BoolRef) -> bool:
    """``formula`` holds for every value of its symbols."""
    solver = z3.Solver()
    solver.add(z3.Not(formula))
    return solver.check() == z3.unsat


def variables(e: z3.ExprRef) -> set[str]:
    """Names of the uninterpreted constants in ``e`` (walked, not printed: printing truncates)."""
    out, stack, seen = set(), [e], set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_const(node) and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(node.decl().name())
        stack.extend(node.children())
    return out


def operands(module: ir.Module, function: str) -> list[tuple[ir.Operand, ...]]:
    (fn,) = [f for f in module.items if isinstance(f, ir.Function) and f.name == function and f.body]
    return [i.operands for i in fn.instructions()]


def leaves(op: object) -> list[object]:
    """Registers and symbols inside an operand (addresses, lists, vectors)."""
    if isinstance(op, ir.Register | ir.Symbol):
        return [op]
    if isinstance(op, ir.Address):
        return leaves(op.base)
    if isinstance(op, ir.ParenOperand):
        return [x for item in op.items for x in leaves(item)]
    if isinstance(op, ir.VectorOperand):
        return [x for item in op.elements for x in leaves(item)]
    return []


def names(module: ir.Module, function: str) -> dict[str, type]:
    """How each name used in ``function`` was read: Register or Symbol."""
    out: dict[str, type] = {}
    for ops in operands(module, function):
        for op in ops:
            for leaf in leaves(op):
                assert out.setdefault(leaf.name, type(leaf)) is type(leaf), leaf  # type: ignore[union-attr]
    return out


# --------------------------------------------------------------------------
# 1. Registers and variables follow their declarations

GCC_OMP = (
    GCC_HEADER
    + """.extern .func gomp_nvptx_main (.param.u64 %in_ar0, .param.u64 %in_ar1);
.visible .entry k (.param.u64 %arg, .param.u64 %stack)
{
	.reg.u64 %R<2>;
	ld.param.u64 %R0, [%stack];
	ld.param.u64 %R1, [%arg];
	{
		.param.u64 %P<2>;
		st.param.u64 [%P0], %R0;
		st.param.u64 [%P1], %R1;
		call.uni gomp_nvptx_main, (%P0, %P1);
	}
	ret.uni;
}
.visible .entry f (.param.u64 %in_ar0)
{
	.reg.u64 %stack;
	.reg.u64 %frame;
	.reg.u32 %r<2>;
	.local .align 8 .b8 %frame_ar[16];
	.reg.u64 %outargs;
	ld.param.u64 %frame, [%in_ar0];
	sub.u64 %stack, %frame, 16;
	mov.u32 %r0, %tid.x;
	st.global.u32 [%stack+4], %r0;
	mov.u64 %outargs, %frame_ar;
	ret;
}
"""
)


def test_percent_params_with_a_count_are_variables() -> None:
    """``.param.u64 %P<2>`` declares the variables ``%P0`` and ``%P1``."""
    read = names(parse_ptx(GCC_OMP, "<gcc>"), "k")
    assert read["%P0"] is ir.Symbol and read["%P1"] is ir.Symbol
    assert read["%stack"] is ir.Symbol and read["%arg"] is ir.Symbol  # the entry's parameters
    assert read["%R0"] is ir.Register


def test_a_reg_named_like_an_earlier_param_is_a_register() -> None:
    """A kernel's ``.param.u64 %stack`` ends with the kernel: the next
    function's ``.reg.u64 %stack`` is a register; a ``%``-named ``.local``
    is a variable."""
    read = names(parse_ptx(GCC_OMP, "<gcc>"), "f")
    assert read["%stack"] is ir.Register and read["%frame"] is ir.Register
    assert read["%outargs"] is ir.Register and read["%r0"] is ir.Register
    assert read["%in_ar0"] is ir.Symbol and read["%frame_ar"] is ir.Symbol


def test_declarations_follow_scope_and_order() -> None:
    """Bare ``.reg`` names (inline asm) with a count are registers until the
    function ends; a huge count is not expanded."""
    text = (
        GCC_HEADER
        + """.visible .entry a (.param .u64 p)
{
	.reg .pred q<3>;
	.reg .b32 r<4000000000>;
	setp.eq.u32 q2, r3999999999, 0;
	@q2 bra $L;
$L:
	ret;
}
.visible .entry b (.param .u64 q2)
{
	.reg .b64 %rd;
	ld.param.u64 %rd, [q2];
	ret;
}
"""
    )
    m = parse_ptx(text, "<t>")
    a = names(m, "a")
    assert a["q2"] is ir.Register and a["r3999999999"] is ir.Register
    assert names(m, "b")["q2"] is ir.Symbol


def test_gcc_stack_register_is_written_by_the_symbolic_executor() -> None:
    """Before: ``sub.u64 %stack, ...`` was 'cannot write to Symbol('%stack')'
    and the store through it had an unknown address."""
    result = analyze_kernel(parse_ptx(GCC_OMP, "<gcc>"), "f")
    assert result.complete, result.reason
    assert not result.unknown, result.unknown
    (store,) = [a for f in result.flows for a in f.trace if a.kind == "st"]
    assert "in_ar0" in result.show(store.address) and "undef" not in result.show(store.address)


# --------------------------------------------------------------------------
# 2. Vector movs (GCC: ``mov.v2.u32 %v, {0, 0}`` then ``mov.u32 %v.x, ...``)

VECTOR_MOV = (
    GCC_HEADER
    + """.visible .entry vmov (.param .u64 out)
{
	.reg.u64 %rd;
	.reg.u32 %t;
	.reg.v2.u32 %v;
	.reg.v2.u32 %w;
	.reg.v4.u32 %q;
	.reg.u32 %a;
	.reg.u32 %b;
	ld.param.u64 %rd, [out];
	mov.u32 %t, %tid.x;
	mov.v2.u32 %v, { 0, 0 };
	st.global.v2.u32 [%rd], %v;
	mov.u32 %v.y, %t;
	mov.v2.u32 %w, %v;
	st.global.v2.u32 [%rd+8], %w;
	mov.v4.u32 %q, { 7, %t, 9, %t };
	mov.v2.u32 { %a, %b }, %w;
	st.global.v4.u32 [%rd+16], %q;
	st.global.v2.u32 [%rd+32], { %b, %a };
	ret;
}
"""
)


def test_vector_movs_run_concretely() -> None:
    from ptxasw.emulator.concrete.interpreter import launch

    out = np.full(10, 0xDEAD, dtype=np.uint32)
    launch(parse_ptx(VECTOR_MOV, "<v>"), "vmov", 1, 1, [out], strict=True)
    assert out.tolist() == [0, 0, 0, 0, 7, 0, 9, 0, 0, 0]
    out = np.full(10, 0xDEAD, dtype=np.uint32)
    # %t = %tid.x + 5, so that an element copied from %t differs from a zero
    shifted = VECTOR_MOV.replace("mov.u32 %t, %tid.x;", "add.u32 %t, %tid.x, 5;")
    launch(parse_ptx(shifted, "<v>"), "vmov", 1, 1, [out], strict=True)
    assert out.tolist() == [0, 0, 0, 5, 7, 5, 9, 5, 5, 0]


def test_vector_movs_are_modelled_symbolically() -> None:
    result = analyze_kernel(parse_ptx(VECTOR_MOV, "<v>"), "vmov", strict=True)
    assert result.complete and not result.unknown, result.unknown
    stores = [a for f in result.flows for a in f.trace if a.kind == "st"]
    values = [result.show(a.value) if const_value(a.value) is None else const_value(a.value) for a in stores]
    assert values == [0, 0, 0, "%tid.x", 7, "%tid.x", 9, "%tid.x", "%tid.x", 0]


# --------------------------------------------------------------------------
# 3. Strict mode: bar.red and isspacep are modelled; trace --strict

BAR_RED = (
    HEADER
    + """.visible .entry red(.param .u64 in, .param .u64 out) .reqntid 64, 1, 1
{
	.reg .b64 %rd<4>;
	.reg .b32 %r<6>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 4;
	add.u64 %rd3, %rd1, %rd3;
	ld.global.u32 %r2, [%rd3];
	setp.ne.u32 %p1, %r2, 0;
	bar.red.popc.u32 %r3, 0, %p1;
	bar.red.and.pred %p2, 0, %p1;
	bar.red.or.pred %p3, 1, !%p1;
	selp.u32 %r4, 1, 0, %p2;
	selp.u32 %r5, 1, 0, %p3;
	st.global.u32 [%rd2], %r3;
	st.global.u32 [%rd2+4], %r4;
	st.global.u32 [%rd2+8], %r5;
	ret;
}
"""
)


def test_bar_red_is_a_cta_uniform_reduction_symbolically() -> None:
    """Before: an unknown value (and an error in strict mode). Now the
    result is the same term in every thread (no thread id in it) and, with
    the block shape known, bar_reduce's bound: popc <= 64 threads."""
    result = analyze_kernel(parse_ptx(BAR_RED, "<red>"), "red", strict=True)
    assert result.complete and not result.unknown, result.unknown
    popc, all_, any_ = [a.value for f in result.flows for a in f.trace if a.kind == "st"]
    for value in (popc, all_, any_):
        assert not {"%tid.x", "%laneid"} & variables(value)
    assert always(z3.ULE(popc, 64)) and not always(z3.ULE(popc, 63))
    assert always(z3.ULE(all_, 1)) and not always(all_ == 0) and not always(all_ == 1)


def test_bar_red_without_a_block_shape_is_opaque_but_consistent() -> None:
    """The same reduction of the same predicate is the same term."""
    text = BAR_RED.replace(" .reqntid 64, 1, 1", "").replace(
        "bar.red.and.pred %p2, 0, %p1;", "bar.red.popc.u32 %r4, 0, %p1;"
    )
    text = text.replace("selp.u32 %r4, 1, 0, %p2;", "")
    result = analyze_kernel(parse_ptx(text, "<red>"), "red", strict=True)
    first, second, _ = [a.value for f in result.flows for a in f.trace if a.kind == "st"]
    assert always(first == second)


def test_isspacep_of_declared_variables_is_known() -> None:
    text = (
        HEADER
        + """.shared .align 4 .b8 smem[64];
.visible .entry sp(.param .u64 out)
{
	.reg .b64 %rd<4>;
	.reg .b32 %r<4>;
	.reg .pred %p<4>;
	.local .align 4 .b8 frame[8];
	ld.param.u64 %rd1, [out];
	mov.u64 %rd2, smem;
	cvta.shared.u64 %rd2, %rd2;
	mov.u64 %rd3, frame;
	isspacep.shared %p1, %rd2;
	isspacep.global %p2, %rd2;
	isspacep.local %p3, %rd3;
	selp.u32 %r1, 1, 0, %p1;
	selp.u32 %r2, 1, 0, %p2;
	selp.u32 %r3, 1, 0, %p3;
	st.global.u32 [%rd1], %r1;
	st.global.u32 [%rd1+4], %r2;
	st.global.u32 [%rd1+8], %r3;
	ret;
}
"""
    )
    result = analyze_kernel(parse_ptx(text, "<sp>"), "sp", strict=True)
    assert [const_value(a.value) for f in result.flows for a in f.trace if a.kind == "st"] == [1, 0, 1]


STRICT = (
    HEADER
    + """.visible .entry ok(.param .u64 p)
{
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	st.global.u32 [%rd1], 1;
	ret;
}

.visible .entry bad(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .pred %q;
	ld.param.u64 %rd1, [p];
	isspacep.global %q, %rd1;
	@%q st.global.u32 [%rd1], 1;
	ret;
}
"""
)


def test_isspacep_of_a_pointer_is_reported_unknown() -> None:
    """Before: a fresh bit that strict mode did not notice."""
    module = parse_ptx(STRICT, "<s>")
    assert [why for _, _, why in analyze_kernel(module, "bad").unknown]
    with pytest.raises(UnsupportedInstruction):
        analyze_kernel(module, "bad", strict=True)
    with pytest.raises(UnsupportedInstruction):
        list(iter_analyses(module, strict=True, catch=True))


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_trace_strict_is_one_line_and_exit_1(tmp_path: Path, extra: list[str]) -> None:
    path = tmp_path / "s.ptx"
    path.write_text(STRICT)
    runner = CliRunner()
    plain = runner.invoke(main, ["trace", *extra, str(path)])
    assert plain.exit_code == 0, plain.output
    strict = runner.invoke(main, ["trace", "--strict", *extra, str(path)])
    assert strict.exit_code == 1
    (line,) = strict.stderr.splitlines()
    assert line == f"ptxasw: error: {path}:18:2: unsupported instruction isspacep.global: " + (
        "isspacep of an address not based on a declared variable"
    )
    if extra:
        assert json.loads(strict.stdout)["status"] == "error"


# --------------------------------------------------------------------------
# 4. The concrete domain's fast path for round-to-nearest add/sub/mul


def _specials(bits: int) -> list[int]:
    """Zeros, infinities, NaNs (quiet, signalling, with payloads), the
    subnormal/normal boundary and the extremes, both signs."""
    if bits == 32:
        values = [0, 1, 2, 0x7FFFFF, 0x800000, 0x800001, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001]
        values += [0x7FFFFFFF, 0x3F800000, 0x3F800001, 0x33800000, 0x00FFFFFF, 0x4B000000, 0x1F800000]
    else:
        values = [0, 1, 0xFFFFFFFFFFFFF, 0x10000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000]
        values += [0x7FF8000000000000, 0x7FF0000000000001, 0x7FF8DEADBEEF0001, 0x3FF0000000000000]
        values += [0x3FF0000000000001, 0x3CA0000000000000, 0x001FFFFFFFFFFFFF, 0x4330000000000000]
    sign = 1 << (bits - 1)
    return values + [v | sign for v in values]


def _patterns(bits: int) -> st.SearchStrategy[int]:
    """Bit patterns where rounding is delicate: specials, subnormals and the
    smallest normals, values whose products land there, anything."""
    mbits, ebits = (23, 8) if bits == 32 else (52, 11)
    sign = st.sampled_from([0, 1 << (bits - 1)])
    mantissa = st.integers(0, (1 << mbits) - 1)
    half_emin = (1 << (ebits - 2)) + 1  # 2**(emin/2): products of two such are near 2**emin
    exponent = st.one_of(st.integers(0, 3), st.integers(half_emin - 13, half_emin + 13))
    shaped = st.builds(lambda s, e, m: s | (e << mbits) | m, sign, exponent, mantissa)
    return st.one_of(st.sampled_from(_specials(bits)), st.integers(0, (1 << bits) - 1), shaped)


# Each form once: the default rounding (None) is the same entry as .rn.
_FAST_FORMS = sorted((op for op in _FAST_FP if op.rounding == ".rn"), key=repr)


@pytest.mark.parametrize("op", _FAST_FORMS, ids=lambda op: f"{op.op}{op.rounding}{op.type}{'.ftz' * op.ftz}")
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_fp_fast_path_is_bit_exact(op: FpOp, data: st.DataObject) -> None:
    """Every fast-path form against the general path, lane by lane."""
    bits = 64 if op.type == ".f64" else 32
    lanes = data.draw(st.integers(1, 16))
    a = np.array(data.draw(st.lists(_patterns(bits), min_size=lanes, max_size=lanes)), dtype=np.uint64)
    b = np.array(data.draw(st.lists(_patterns(bits), min_size=lanes, max_size=lanes)), dtype=np.uint64)
    d = ConcreteDomain(lanes)
    fast = d.fp(op, Bits(a, bits), Bits(b, bits))
    general = d.fp_general(op, Bits(a, bits), Bits(b, bits))
    assert fast.width == general.width == bits
    assert [hex(v) for v in fast.data] == [hex(v) for v in general.data]


def test_fp_fast_path_covers_the_atomic_add() -> None:
    """The forms atomics chain (``atom.add.f32``: .rn with .ftz) take the fast path."""
    for ftz, t in ((True, ".f32"), (False, ".f64")):
        assert FpOp("add", t, rounding=".rn", ftz=ftz) in _FAST_FP
    assert FpOp("add", ".f32", rounding=".rz") not in _FAST_FP
    for op in _FAST_FORMS:
        default = _FAST_FP[FpOp(op.op, op.type, ftz=op.ftz)]
        assert (default.op, default.width, default.ftz) == (op.op, _FAST_FP[op].width, op.ftz)


# --------------------------------------------------------------------------
# Counted variables (``%P<2>``) in the concrete interpreter and isspacep

GCC_CALL = (
    GCC_HEADER
    + """.func (.param.u64 %value_out) add2 (.param.u64 %in_ar0, .param.u64 %in_ar1)
{
	.reg.u64 %a;
	.reg.u64 %b;
	ld.param.u64 %a, [%in_ar0];
	ld.param.u64 %b, [%in_ar1];
	add.u64 %a, %a, %b;
	st.param.u64 [%value_out], %a;
	ret;
}
.visible .entry k (.param.u64 %out)
{
	.reg.u64 %R<4>;
	.reg.u32 %r;
	.reg.pred %p<3>;
	.shared .align 4 .b32 %S<3>;
	ld.param.u64 %R3, [%out];
	mov.u32 %r, %tid.x;
	cvt.u64.u32 %R0, %r;
	mov.u64 %R1, 100;
	{
		.param.u64 %P<2>;
		.param.u64 %retval;
		st.param.u64 [%P0], %R0;
		st.param.u64 [%P1], %R1;
		call.uni (%retval), add2, (%P0, %P1);
		ld.param.u64 %R2, [%retval];
	}
	mov.u64 %R1, %S2;
	isspacep.shared %p1, %R1;
	isspacep.global %p2, %R1;
	@%p2 mov.u64 %R2, 0;
	@!%p1 mov.u64 %R2, 0;
	mul.wide.u32 %R1, %r, 8;
	add.u64 %R3, %R3, %R1;
	st.global.u64 [%R3], %R2;
	ret;
}
"""
)


def test_gcc_call_through_counted_params_runs_concretely() -> None:
    """Before: ``%P0`` was a register and the call's arguments were lost
    (every thread stored 0)."""
    from ptxasw.emulator.concrete.interpreter import launch

    # (without the isspacep part: the interpreter does not lay out counted .shared variables)
    text = "\n".join(line for line in GCC_CALL.splitlines() if "%S" not in line and "%p" not in line)
    out = np.zeros(4, dtype=np.uint64)
    launch(parse_ptx(text, "<call>"), "k", 1, 4, [out], strict=True)
    assert out.tolist() == [100, 101, 102, 103]


def test_gcc_call_through_counted_params_symbolically() -> None:
    """The same kernel symbolically, strict: the call is followed and
    isspacep of a counted ``.shared`` variable (``%S2``) is known."""
    result = analyze_kernel(parse_ptx(GCC_CALL, "<call>"), "k", strict=True)
    assert result.complete and not result.unknown
    (store,) = [a for f in result.flows for a in f.trace if a.kind == "st" and a.space == ".global"]
    assert always(store.value == 100 + z3.ZeroExt(32, z3.BitVec("%tid.x", 32)))
