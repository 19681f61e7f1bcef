"""Which loads run only where loaded data says so (`ptxasw.analysis.gating`):
the cost model refuses their shuffles, which would run on every path."""

from __future__ import annotations

import pytest

from ptxasw.analysis.cfg import build_cfg
from ptxasw.analysis.gating import DataGates, loaded_registers
from ptxasw.parser.frontend import parse_ptx

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"

# %r2 = x[tid] (the source), %r9 = x[tid + 1] (the load whose gate is asked),
# %r5 a value loaded from y, %r6 the param n; {body} decides where the load runs.
KERNEL = """
.visible .entry k(.param .u64 x, .param .u64 y, .param .u32 n)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u32 %r6, [n];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r5, [%rd5];
{before}
    ld.global.u32 %r2, [%rd4];
    mov.u32 %r9, 0;
{body}
    add.s32 %r10, %r2, %r9;
    st.global.u32 [%rd5], %r10;
    ret;
}}
"""

LOAD = "ld.global.u32 %r9, [%rd4+4];"


def _gate(body: str, before: str = "") -> str | None:
    """The gate `DataGates` names for the load of ``x[tid + 1]``: "guard",
    "branch" (with the predicate's name) or None."""
    module = parse_ptx(HEADER + KERNEL.format(before=before, body=body), "gating.ptx")
    fn = module.function("k")
    loads = [i for i in fn.instructions() if i.opcode == "ld" and ".global" in i.modifiers]
    source = next(i for i in loads if i.operands[0].name == "%r2")  # type: ignore[union-attr]
    load = next(i for i in loads if i.operands[0].name == "%r9")  # type: ignore[union-attr]
    gate = DataGates(fn, build_cfg(fn)).gate(source, load)
    if gate is None:
        return None
    if gate is load:
        return "guard"
    assert gate.opcode == "bra" and gate.guard is not None
    return f"branch {gate.guard.predicate.name}"


def test_a_branch_on_a_loaded_value_gates_the_load() -> None:
    body = f"""
    setp.gt.s32 %p1, %r5, 100;
    @!%p1 bra SKIP;
    {LOAD}
SKIP:"""
    assert _gate(body) == "branch %p1"


def test_a_bounds_check_does_not() -> None:
    body = f"""
    add.s32 %r7, %r1, 1;
    setp.ge.u32 %p1, %r7, %r6;
    @%p1 bra SKIP;
    {LOAD}
SKIP:"""
    assert _gate(body) is None


def test_a_guard_on_a_loaded_value_gates_the_load() -> None:
    data = f"setp.ne.s32 %p2, %r5, 0;\n    @%p2 {LOAD}"
    bounds = f"setp.lt.u32 %p2, %r1, %r6;\n    @%p2 {LOAD}"
    assert _gate(data) == "guard"
    assert _gate(bounds) is None


def test_the_data_may_reach_the_test_through_arithmetic_and_other_lanes() -> None:
    """A value computed from a load, a shuffled value and a predicate set
    under a data guard are all data."""
    through_add = f"""
    add.s32 %r11, %r5, %r1;
    shl.b32 %r12, %r11, 1;
    setp.gt.s32 %p1, %r12, 100;
    @!%p1 bra SKIP;
    {LOAD}
SKIP:"""
    through_shuffle = f"""
    shfl.sync.idx.b32 %r11, %r1, 0, 31, -1;
    setp.eq.s32 %p1, %r11, %r1;
    @!%p1 bra SKIP;
    {LOAD}
SKIP:"""
    through_guard = f"""
    setp.gt.s32 %p3, %r5, 0;
    mov.u32 %r11, 0;
    @%p3 mov.u32 %r11, 1;
    setp.eq.s32 %p1, %r11, 1;
    @!%p1 bra SKIP;
    {LOAD}
SKIP:"""
    assert _gate(through_add) == "branch %p1"
    assert _gate(through_shuffle) == "branch %p1"
    assert _gate(through_guard) == "branch %p1"


def test_a_test_of_data_anywhere_on_the_way_gates_it() -> None:
    """``if (i < n && y[i] > 100)``: the second test decides too, though it
    does not dominate the load (``||`` the same, either side)."""
    both = f"""
    setp.ge.u32 %p1, %r1, %r6;
    @%p1 bra SKIP;
    setp.le.s32 %p2, %r5, 100;
    @%p2 bra SKIP;
    {LOAD}
SKIP:"""
    either = f"""
    setp.lt.u32 %p1, %r1, %r6;
    @%p1 bra TAKE;
    setp.le.s32 %p2, %r5, 100;
    @%p2 bra SKIP;
TAKE:
    {LOAD}
SKIP:"""
    assert _gate(both) == "branch %p2"
    assert _gate(either) == "branch %p2"


@pytest.mark.parametrize(
    "where",
    ["a diamond that joins before the load", "a test above the source", "a loop's exit test"],
)
def test_tests_that_do_not_decide_the_load_do_not_gate_it(where: str) -> None:
    """A data test whose sides meet again before the load, one above the
    source (the source and the load run under it alike) and the exit test
    of a loop whose body holds both: none decides whether the load runs
    once its source has."""
    diamond = f"""
    setp.gt.s32 %p1, %r5, 100;
    @%p1 bra ELSE;
    add.s32 %r9, %r9, 1;
    bra.uni JOIN;
ELSE:
    add.s32 %r9, %r9, 2;
JOIN:
    {LOAD}"""
    above = """
    setp.gt.s32 %p1, %r5, 100;
    @!%p1 bra SKIP;"""
    loop_head = "LOOP:"
    loop_tail = f"""
    setp.ge.u32 %p2, %r1, %r6;
    @%p2 bra NEXT;
    {LOAD}
NEXT:
    add.s32 %r5, %r5, -1;
    setp.gt.s32 %p1, %r5, 0;
    @%p1 bra LOOP;"""
    cases = {
        "a diamond that joins before the load": (diamond, ""),
        "a test above the source": (f"    {LOAD}\nSKIP:", above),
        "a loop's exit test": (loop_tail, loop_head),
    }
    body, before = cases[where]
    assert _gate(body, before) is None


def test_parameters_and_positions_are_not_data() -> None:
    module = parse_ptx(HEADER + KERNEL.format(before="", body=LOAD), "gating.ptx")
    loaded = loaded_registers(module.function("k"))
    assert {"%r2", "%r5", "%r9", "%r10"} <= loaded
    assert not {"%r1", "%r6", "%rd1", "%rd3", "%rd4"} & loaded


def test_a_calls_result_is_data_and_a_parameter_named_as_gcc_names_it_is_not() -> None:
    """The ``ld.param`` of a call's return value reads what the callee
    computed (data, as far as anyone here knows); GCC names a kernel's
    parameters as registers (``[%in_ar0]``), and they are bounds all the same."""
    text = (
        HEADER
        + """
.func (.param .b32 out) f(.param .b32 in)
{
    .reg .b32 %r<2>;
    ld.param.b32 %r1, [in];
    st.param.b32 [out], %r1;
    ret;
}

.visible .entry g(.param .u32 %in_ar0)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    ld.param.u32 %r1, [%in_ar0];
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, %r1;
    {
    .param .b32 param0;
    .param .b32 retval0;
    st.param.b32 [param0], %r2;
    call (retval0), f, (param0);
    ld.param.b32 %r3, [retval0];
    }
    setp.gt.s32 %p2, %r3, 0;
    ret;
}
"""
    )
    loaded = loaded_registers(parse_ptx(text, "gating.ptx").function("g"))
    assert "%r3" in loaded and "%p2" in loaded
    assert not {"%r1", "%r2", "%p1"} & loaded
