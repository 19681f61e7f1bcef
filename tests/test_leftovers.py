"""Leftovers of the house-keeping issue, one behaviour per test.

- Registers and variables follow their declarations, not their spelling
  (GCC's ``.param.u64 %P<2>`` and ``.reg.u64 %stack``).
- Vector ``mov`` of immediates and registers (GCC's ``mov.v2.u32 %r, {0,0}``).
- Strict mode: ``bar.red`` and ``isspacep`` are modelled, and ``trace --strict``.
- The concrete domain's fast path for round-to-nearest add/sub/mul is
  bit-exact against the general path.
"""

from __future__ import annotations

import numpy as np

from ptxasw import ir
from ptxasw.emulator.symbolic.domain import const_value
from ptxasw.emulator.symbolic.executor import analyze_kernel
from ptxasw.parser.frontend import parse_ptx

GCC_HEADER = ".version 6.0\n.target sm_30\n.address_size 64\n\n"


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
