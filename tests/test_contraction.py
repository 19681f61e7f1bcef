"""Open sums (`ptxasw.analysis.contraction`) and pinning them (`ptxasw.synth.pinning`).

ptxas may fuse a contractible ``mul`` into the ``add``/``sub`` that reads
it; in ``a*b - c*d`` it picks one product, by its schedule. These tests
check which sums are found open, that each pin computes what its rounding
says (in the interpreter, on values where the three choices differ), and,
with NVIDIA's ptxas installed, that `settle` finds pins that leave the
original's cubin unchanged (asking about one kernel of a file of two).
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxasw import ir
from ptxasw.analysis.contraction import open_sums
from ptxasw.cli.common import synthesis_assembler
from ptxasw.driver.assembler import assembler
from ptxasw.driver.ptxas import find_real_ptxas
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.pinning import Choice, choices_for, fuses_nothing, pin, pin_like, round_apart, settle

KERNEL = """\
.version 9.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 pa, .param .u64 pout)
{
	.reg .f32 	%f<22>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd1, [pa];
	ld.param.u64 	%rd2, [pout];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd5, %r1, 16;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd6];
	mul.f32 	%f5, %f1, %f2;
	mul.f32 	%f6, %f3, %f4;
	sub.f32 	%f7, %f5, %f6;
	mul.f32 	%f8, %f1, %f3;
	add.f32 	%f9, %f8, %f4;
	mul.f32 	%f10, %f2, %f4;
	add.f32 	%f11, %f10, %f1;
	add.f32 	%f12, %f10, %f3;
	mul.rn.f32 	%f13, %f1, %f4;
	mul.f32 	%f14, %f2, %f3;
	add.f32 	%f15, %f13, %f14;
	mul.f32 	%f16, %f1, %f1;
	mul.f32 	%f16, %f16, %f2;
	add.f32 	%f17, %f16, %f16;
	mul.f32 	%f18, %f4, 0f41F00000;
	sub.f32 	%f19, %f2, %f18;
	sub.f32 	%f20, %f3, %f18;
	sub.f32 	%f21, %f18, 0f3F800000;
	mul.wide.u32 	%rd7, %r1, 36;
	add.s64 	%rd8, %rd4, %rd7;
	st.global.v4.f32 	[%rd8], {%f7, %f9, %f11, %f12};
	st.global.v4.f32 	[%rd8+16], {%f15, %f17, %f19, %f20};
	st.global.f32 	[%rd8+32], %f21;
	ret;
}

.visible .entry other()
{
	ret;
}
"""

# a = b = c = d = 1 + 2**-12: a*b = 1 + 2**-11 + 2**-24 rounds (a tie, to even)
# to 1 + 2**-11, so the three ways of rounding a*b - c*d differ.
X = np.float32(1 + 2.0**-12)
EXPECTED = {Choice.LEFT: 2.0**-24, Choice.RIGHT: -(2.0**-24), Choice.NEITHER: 0.0}


def _sum_of(module_text: str, choice: Choice | None) -> float:
    module = parse_ptx(module_text, "k.ptx")
    if choice is not None:
        s = open_sums(module.function("k")).pinnable[0]
        pin(FunctionBuilder(module.function("k"), module), s, choice)
        module = parse_ptx(print_module(module), "pinned.ptx")  # the printed text is what ptxas gets
    out = np.zeros(9, np.float32)
    result = launch(module, "k", (1,), (1,), [np.full(4, X, np.float32), out])
    return float(result.buffers[1][0])


def test_the_sums_whose_fusion_ptxas_chooses_are_found() -> None:
    found = open_sums(parse_ptx(KERNEL, "k.ptx").function("k"))
    first, twice_a, twice_b, literal_a, literal_b, minus_one = found.pinnable
    assert [op.name for op in first.total.operands] == ["%f7", "%f5", "%f6"]
    assert (first.left.operands[0].name, first.right.operands[0].name) == ("%f5", "%f6")
    # %f10 is read by two sums: fused into either, both or none (ptxas's call).
    assert (twice_a.left.operands[0].name, twice_a.right) == ("%f10", None)
    assert (twice_b.left.operands[0].name, twice_b.right) == ("%f10", None)
    assert [choice.value for choice in choices_for(twice_a)] == ["left", "neither"]
    # 30*%f4 read by two subtractions: fused on the right, the literal is negated in place.
    assert (literal_a.left, literal_b.right.operands[0].name) == (None, "%f18")
    assert (minus_one.left.operands[0].name, minus_one.right) == ("%f18", None)  # 30*%f4 - 1
    # %f16 is written twice (as -G and GCC code reuse names): not pinned.
    assert [total.operands[0].name for total, _ in found.other] == ["%f17"]
    # %f9 (one product read once, and a value) and %f15 (one product is .rn) are not open.


@pytest.mark.parametrize("choice", list(Choice))
def test_each_pin_rounds_as_it_says(choice: Choice) -> None:
    assert _sum_of(KERNEL, None) == 0.0  # the interpreter rounds each operation: no fusion
    assert _sum_of(KERNEL, choice) == EXPECTED[choice]


def test_settle_finds_what_ptxas_does() -> None:
    module = parse_ptx(KERNEL, "k.ptx")
    assemble = synthesis_assembler(module, "ptxas")
    if assemble is None:
        pytest.skip("no ptxas")
    fn = module.function("k")
    sums = open_sums(fn).pinnable
    choices = settle(module, fn, sums, assemble)
    assert set(choices) == {0, 1, 2, 3, 4, 5}
    # The pins found leave ptxas's code as it was, byte for byte.
    pinned = parse_ptx(KERNEL, "k.ptx")
    pin_like(pinned, "k", sorted(choices.items()))
    assert assemble(print_module(pinned)) == assemble(KERNEL)


def test_settle_without_an_answer_pins_nothing() -> None:
    module = parse_ptx(KERNEL, "k.ptx")
    fn = module.function("k")
    assert settle(module, fn, open_sums(fn).pinnable, lambda text: None) == {}


def test_a_pin_that_ptxas_did_not_choose_is_refused() -> None:
    """An assembler that only accepts the unpinned text (every pin changes
    its output) settles nothing: no pin is taken on trust."""
    module = parse_ptx(KERNEL, "k.ptx")
    fn = module.function("k")
    assert settle(module, fn, open_sums(fn).pinnable, lambda text: text.encode()) == {}


def test_where_ptxas_fuses_nothing_every_product_is_written_apart() -> None:
    """Under ``--fmad=false`` (and in ``-G`` builds) ptxas fuses no product:
    the rewrite then writes every one with ``.rn`` rather than pinning sums
    one by one, and refuses no load."""
    module = parse_ptx(KERNEL, "k.ptx")
    assemble = synthesis_assembler(module, "ptxas")
    if assemble is None:
        pytest.skip("no ptxas")
    real = find_real_ptxas()
    fn = module.function("k")
    assert not fuses_nothing(module, fn, assemble)
    assert fuses_nothing(module, fn, assembler([str(real), "-arch=sm_90", "--fmad=false"]))
    round_apart(FunctionBuilder(fn, module))
    text = print_module(module)
    assert "mul.f32" not in text and "add.f32" not in text and "sub.rn.f32" in text
    assert _sum_of(text, None) == EXPECTED[Choice.NEITHER]


SHARED = """\
.version 9.0
.target sm_90
.address_size 64

.visible .entry shared_product(.param .u64 pa, .param .u64 pout)
{
	.reg .f32 	%f<8>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [pa];
	ld.param.u64 	%rd2, [pout];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r1, %r2, %r3;
	mul.wide.s32 	%rd5, %r4, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd6+4];
	mul.f32 	%f3, %f2, 0f41F00000;
	sub.f32 	%f4, %f1, %f3;
	sub.f32 	%f5, %f3, %f1;
	mul.f32 	%f6, %f4, %f5;
	add.s64 	%rd7, %rd4, %rd5;
	st.global.f32 	[%rd7], %f6;
	ret;
}
"""


def test_a_product_two_sums_read_is_pinned_or_its_loads_stay() -> None:
    """``30*a[i+1]`` read by two subtractions: with ptxas to ask, the load of
    ``a[i+1]`` becomes a shuffle and both sums are pinned, and the rewrite
    computes the pinned original's bits; without, it stays a load, and the
    report says why. (A sum with one product side once crashed the refusal.)"""
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    def rewrite(assemble: object) -> tuple[object, ir.Module]:
        module = parse_ptx(SHARED, "s.ptx")
        synthesis = ShuffleSynthesisPass(Options(rounding="ptxas", assemble=assemble))  # type: ignore[arg-type]
        synthesis.run(module)
        (plan,) = synthesis.plans
        return plan, module

    alone, _ = rewrite(None)
    assert not alone.chosen and not alone.pins  # type: ignore[attr-defined]
    assert any((v.reason or "").startswith("rounding: ") for v in alone.verdicts)  # type: ignore[attr-defined]
    assemble = synthesis_assembler(parse_ptx(SHARED, "s.ptx"), "ptxas")
    if assemble is None:
        pytest.skip("no ptxas")
    asked, rewritten = rewrite(assemble)
    assert len(asked.chosen) == 1 and len(asked.pins) == 2  # type: ignore[attr-defined]
    original = parse_ptx(SHARED, "s.ptx")
    pin_like(original, "shared_product", [(s.index, c) for s, c in asked.pins])  # type: ignore[attr-defined]
    again = parse_ptx(print_module(rewritten), "r.ptx")
    data = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    for grid, block in (((3,), (32,)), ((2,), (48,))):
        outs = []
        for module in (original, again):
            result = launch(module, "shared_product", grid, block, [data.copy(), np.zeros(99, np.float32)])
            outs.append(result.buffers[1])
        assert np.count_nonzero(outs[0]) > 90 and outs[0].tobytes() == outs[1].tobytes(), (grid, block)


CALLED = """\
.version 9.0
.target sm_90
.address_size 64

.func  (.param .b32 func_retval0) cross(
	.param .b32 cross_param_0,
	.param .b32 cross_param_1,
	.param .b32 cross_param_2,
	.param .b32 cross_param_3
)
{
	.reg .f32 	%f<8>;

	ld.param.f32 	%f1, [cross_param_0];
	ld.param.f32 	%f2, [cross_param_1];
	ld.param.f32 	%f3, [cross_param_2];
	ld.param.f32 	%f4, [cross_param_3];
	mul.f32 	%f5, %f1, %f2;
	mul.f32 	%f6, %f3, %f4;
	sub.f32 	%f7, %f5, %f6;
	st.param.f32 	[func_retval0+0], %f7;
	ret;
}

.func  (.param .b32 func_retval0) outer(
	.param .b32 outer_param_0
)
{
	.reg .f32 	%f<3>;

	ld.param.f32 	%f1, [outer_param_0];
	{
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 param1;
	st.param.f32 	[param1+0], %f1;
	.param .b32 param2;
	st.param.f32 	[param2+0], %f1;
	.param .b32 param3;
	st.param.f32 	[param3+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), cross, (param0, param1, param2, param3);
	ld.param.f32 	%f2, [retval0+0];
	}
	st.param.f32 	[func_retval0+0], %f2;
	ret;
}

.extern .func  (.param .b32 func_retval0) elsewhere(
	.param .b32 elsewhere_param_0
)
;

.visible .entry cross_call(.param .u64 px, .param .u64 py, .param .u64 pout, .param .u32 pn)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<8>;
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [px];
	ld.param.u64 	%rd2, [py];
	ld.param.u64 	%rd3, [pout];
	ld.param.u32 	%r3, [pn];
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %tid.x;
	mad.lo.s32 	%r1, %r5, %r4, %r6;
	add.s32 	%r2, %r1, 1;
	setp.ge.s32 	%p1, %r2, %r3;
	@%p1 bra 	$L__BB1_2;
	cvta.to.global.u64 	%rd4, %rd3;
	cvta.to.global.u64 	%rd5, %rd1;
	mul.wide.s32 	%rd6, %r2, 4;
	add.s64 	%rd7, %rd5, %rd6;
	cvta.to.global.u64 	%rd8, %rd2;
	mul.wide.s32 	%rd9, %r1, 4;
	add.s64 	%rd10, %rd8, %rd9;
	ld.global.f32 	%f1, [%rd10+4];
	ld.global.f32 	%f2, [%rd7+-4];
	ld.global.f32 	%f3, [%rd10];
	ld.global.f32 	%f4, [%rd7];
	{
	.param .b32 param0;
	st.param.f32 	[param0+0], %f4;
	.param .b32 param1;
	st.param.f32 	[param1+0], %f3;
	.param .b32 param2;
	st.param.f32 	[param2+0], %f2;
	.param .b32 param3;
	st.param.f32 	[param3+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), CALLEE, (param0, param1, param2, param3);
	ld.param.f32 	%f5, [retval0+0];
	}
	add.s64 	%rd11, %rd4, %rd9;
	st.global.f32 	[%rd11], %f5;
$L__BB1_2:
	ret;
}
"""


def _called(callee: str) -> str:
    text = CALLED.replace("CALLEE", callee)
    if callee != "cross":  # the other callees take one argument
        text = text.replace("(param0, param1, param2, param3)", "(param0)")
    return text


def test_calls_that_reach_open_sums_are_found() -> None:
    """A call reaches open sums when its callee has some, or calls one that
    has (at any depth); a function declared without a body is compiled
    apart and reaches none. Each comes with the stores that pass its
    arguments."""
    from ptxasw.analysis.contraction import calls_into_sums

    for callee, reaching in (("cross", True), ("outer", True), ("elsewhere", False)):
        module = parse_ptx(_called(callee), "c.ptx")
        found = calls_into_sums(module, module.function("cross_call"))
        if not reaching:
            assert found == [], callee
            continue
        ((call, passing),) = found
        assert call.opcode == "call" and passing[0] is call
        stored = sorted(op.name for st in passing[1:] for op in st.operands if isinstance(op, ir.Register))
        assert stored == (["%f1", "%f2", "%f3", "%f4"] if callee == "cross" else ["%f4"]), callee


def test_loads_that_reach_a_device_functions_sums_stay_loads() -> None:
    """``cross(x[i+1], y[i], x[i], y[i+1])`` with ``a*b - c*d`` in ``cross``:
    x[i] and y[i+1] are neighbours' loads, but ptxas may inline ``cross`` and
    fuse the other product once they arrive by shuffle; the sums of device
    functions are not pinned, so the loads stay (with the call named in the
    reason). Where ptxas fuses nothing anywhere (``--fmad=false``) they are
    shuffled."""
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    def plan(assemble: object) -> object:
        module = parse_ptx(_called("cross"), "c.ptx")
        synthesis = ShuffleSynthesisPass(Options(rounding="ptxas", assemble=assemble))  # type: ignore[arg-type]
        synthesis.run(module)
        (found,) = synthesis.plans
        return found

    def reasons(found: object) -> list[str]:
        return [v.reason or "" for v in found.verdicts]  # type: ignore[attr-defined]

    alone = plan(None)
    assert not alone.chosen  # type: ignore[attr-defined]
    assert sum("reaches a call to cross" in r for r in reasons(alone)) == 2, reasons(alone)
    assemble = synthesis_assembler(parse_ptx(_called("cross"), "c.ptx"), "ptxas")
    if assemble is None:
        pytest.skip("no ptxas")
    asked = plan(assemble)
    assert not asked.chosen and sum("reaches a call to cross" in r for r in reasons(asked)) == 2  # type: ignore[attr-defined]
    real = find_real_ptxas()
    apart = plan(assembler([str(real), "-arch=sm_90", "--fmad=false"]))
    assert len(apart.chosen) == 2 and apart.apart  # type: ignore[attr-defined]


def test_the_pinned_text_is_proved_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shuffles are proved on the text as emitted, pins included: a second
    proof runs on the rewrite with the pins against the original with the
    same pins, and where it fails no site is emitted."""
    from ptxasw.synth import synthesize
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    assemble = synthesis_assembler(parse_ptx(SHARED, "s.ptx"), "ptxas")
    if assemble is None:
        pytest.skip("no ptxas")
    proved_texts: list[tuple[str, str]] = []
    real_prove = synthesize.prove_sites

    def spy(original: object, module: ir.Module, fn: ir.Function, *rest: object) -> object:
        result = real_prove(original, module, fn, *rest)  # type: ignore[arg-type]
        proved_texts.append((print_module(module), result.outcomes[0]))
        return result

    monkeypatch.setattr(synthesize, "prove_sites", spy)

    def plan() -> object:
        synthesis = ShuffleSynthesisPass(Options(rounding="ptxas", assemble=assemble))
        synthesis.run(parse_ptx(SHARED, "s.ptx"))
        (found,) = synthesis.plans
        return found

    kept = plan()
    assert len(kept.chosen) == 1 and len(kept.pins) == 2  # type: ignore[attr-defined]
    (first, ok1), (second, ok2) = proved_texts
    assert ok1 == ok2 == "proved"
    assert "fma.rn.f32" not in first and second.count("fma.rn.f32") + second.count("sub.rn.f32") == 2
    assert "shfl.sync" in first and "shfl.sync" in second

    def refuted(*args: object) -> object:
        result = real_prove(*args)  # type: ignore[arg-type]
        if len(proved_texts) == 1:
            result.outcomes = ["failed: the store at line 24 may differ"] * len(result.outcomes)
        proved_texts.append(("", result.outcomes[0]))
        return result

    proved_texts.clear()
    monkeypatch.setattr(synthesize, "prove_sites", refuted)
    blocked = plan()
    assert not blocked.chosen  # type: ignore[attr-defined]
    assert any(
        (v.reason or "").startswith("proof with the rounding pinned failed")
        for v in blocked.verdicts  # type: ignore[attr-defined]
    )
