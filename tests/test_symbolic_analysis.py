"""The symbolic executor's analysis: calls, induction variables, solver effort.

Hand-written PTX pins down one behaviour per test: loads inside called
functions are found (or the kernel says it is partial and why), pointers and
counters advanced through chains of adds and copies are ``init + stride*iter``
(checked on the Z3 terms, not on printed text), and the cheap solver paths
answer what they can without Z3 (counted, never timed). The corpus tests run
the same checks on nvcc ``-G`` builds, where every helper is a call.
"""

from __future__ import annotations

import pytest
import z3

from ptxasw import ir
from ptxasw.analysis.inline import inline_calls
from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import Access, Budget, KernelAnalysis, analyze_kernel
from ptxasw.parser import parse_file
from ptxasw.parser.frontend import parse_ptx

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"


def module(body: str) -> ir.Module:
    return parse_ptx(HEADER + body, "<test>")


def analyze(body: str, kernel: str = "k", budget: Budget | None = None) -> KernelAnalysis:
    return analyze_kernel(module(body), kernel, budget)


def accesses(result: KernelAnalysis, kind: str, space: str = ".global") -> list[Access]:
    """One access per instruction (forked flows repeat their parent's), in order."""
    seen: dict[int, Access] = {}
    for f in result.flows:
        for a in f.trace:
            if a.kind == kind and a.space == space:
                seen.setdefault(a.index, a)
    return [seen[k] for k in sorted(seen)]


def valid(formula: z3.BoolRef, *facts: z3.BoolRef) -> bool:
    """``formula`` holds for every value of its symbols."""
    solver = z3.Solver()
    solver.set("timeout", 5000)
    solver.add(*facts, z3.Not(formula))
    return solver.check() == z3.unsat


def symbols(e: z3.ExprRef) -> dict[str, z3.ExprRef]:
    out: dict[str, z3.ExprRef] = {}
    stack, seen = [e], set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_const(node) and not z3.is_bv_value(node):
            out[node.decl().name()] = node
        stack.extend(node.children())
    return out


# --------------------------------------------------------------------------
# Calls

HELPER = """
.func (.param .b32 get_retval0) get(.param .b64 get_param_0, .param .b32 get_param_1)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [get_param_0];
    ld.param.u32 %r1, [get_param_1];
    mul.wide.s32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    st.param.b32 [get_retval0+0], %r2;
    ret;
}
"""

CALLER = (
    HELPER
    + """
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u64 %rd2, [k_param_1];
    mov.u32 %r1, %tid.x;
    { // callseq 0
    .param .b64 param0;
    st.param.b64 [param0+0], %rd1;
    .param .b32 param1;
    st.param.b32 [param1+0], %r1;
    .param .b32 retval0;
    call.uni (retval0), get, (param0, param1);
    ld.param.b32 %r2, [retval0+0];
    }
    add.s32 %r3, %r1, 1;
    { // callseq 1
    .param .b64 param0;
    st.param.b64 [param0+0], %rd1;
    .param .b32 param1;
    st.param.b32 [param1+0], %r3;
    .param .b32 retval0;
    call.uni (retval0), get, (param0, param1);
    ld.param.b32 %r4, [retval0+0];
    }
    add.s32 %r5, %r2, %r4;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
}
"""
)


def test_loads_in_a_called_function_are_reported_with_the_callee_line() -> None:
    result = analyze(CALLER)
    assert result.status == "complete", result.reason
    loads = accesses(result, "ld")
    assert len(loads) == 2
    callee_line = next(
        i for i, line in enumerate((HEADER + CALLER).splitlines(), 1) if "ld.global.u32" in line
    )
    assert {a.inst.loc.line for a in loads} == {callee_line}
    # The access names the module's instruction (what a rewrite edits), not an inlined copy.
    helper = module(CALLER).function("get")
    assert all(
        a.inst == next(i for i in helper.instructions() if i.opcode == "ld" and ".global" in i.modifiers)
        for a in loads
    )
    # Arguments are bound through the .param slots: the two calls read
    # param_0[tid.x] and param_0[tid.x + 1], 4 bytes apart.
    a, b = loads
    assert valid(b.address - a.address == 4, *result.assumptions)
    assert "param_0" in symbols(a.address)
    # The return value flows back: the store writes the sum of both loads.
    (store,) = accesses(result, "st")
    assert valid(store.value == a.value + b.value)
    assert result.counts() == (2, 1)


def test_without_following_calls_the_loads_are_missing() -> None:
    """What the fix is for: the kernel's own instructions hold no load."""
    m = module(CALLER)
    kernel = m.function("k")
    own = [i for i in kernel.instructions() if i.opcode == "ld" and "global" in "".join(i.modifiers)]
    assert own == []
    inlined = inline_calls(m, kernel)
    assert inlined.inlined == 2 and not inlined.skipped
    pasted = [i for i in inlined.function.instructions() if i.opcode == "ld" and ".global" in i.modifiers]
    assert len(pasted) == 2


def chain(depth: int) -> str:
    """Functions f0 -> f1 -> ... -> f<depth-1>; the last one loads."""
    funcs = []
    for i in range(depth - 1, -1, -1):
        if i == depth - 1:
            body = "ld.param.u64 %rd1, [p];\n    ld.global.u32 %r1, [%rd1];\n    st.global.u32 [%rd1+4], %r1;"
        else:
            body = (
                "ld.param.u64 %rd1, [p];\n    { .param .b64 a; st.param.b64 [a+0], %rd1;\n"
                f"    call.uni f{i + 1}, (a); }}"
            )
        decls = ".reg .b32 %r<2>;\n    .reg .b64 %rd<2>;"
        funcs.append(f".func f{i}(.param .b64 p)\n{{\n    {decls}\n    {body}\n    ret;\n}}\n")
    kernel = """
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    { .param .b64 a; st.param.b64 [a+0], %rd1; call.uni f0, (a); }
    ret;
}
"""
    return "".join(funcs) + kernel


def test_calls_within_the_depth_bound_are_followed() -> None:
    result = analyze(chain(4))
    assert result.status == "complete", result.reason
    (load,) = accesses(result, "ld")
    assert str(load.address) == "param_0"


def test_calls_beyond_the_depth_bound_make_the_kernel_partial() -> None:
    result = analyze(chain(6))
    assert result.status == "partial"
    assert result.reason is not None
    assert result.reason.startswith("call to f4 not followed: call depth bound of 4 reached")
    assert accesses(result, "ld") == []


RECURSIVE = """
.func (.param .b32 r) fact(.param .b32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [n];
    setp.lt.u32 %p1, %r1, 2;
    @%p1 bra DONE;
    sub.s32 %r2, %r1, 1;
    { .param .b32 a; st.param.b32 [a+0], %r2; .param .b32 b;
      call.uni (b), fact, (a); ld.param.b32 %r3, [b+0]; }
    mul.lo.s32 %r1, %r1, %r3;
DONE:
    st.param.b32 [r+0], %r1;
    ret;
}
.extern .func ext(.param .b64 q);
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    { .param .b32 a; st.param.b32 [a+0], %r1; .param .b32 b;
      call.uni (b), fact, (a); ld.param.b32 %r2, [b+0]; }
    st.global.u32 [%rd1], %r2;
    ret;
}
.visible .entry e(.param .u64 e_param_0)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [e_param_0];
    { .param .b64 q; st.param.b64 [q+0], %rd1; call.uni ext, (q); }
    ret;
}
"""


def test_recursion_and_unknown_callees_make_the_kernel_partial() -> None:
    m = module(RECURSIVE)
    rec = analyze_kernel(m, "k")
    assert rec.status == "partial"
    assert rec.reason == "call to fact not followed: recursive"
    ext = analyze_kernel(m, "e")
    assert ext.status == "partial"
    assert ext.reason == "call to ext not followed: no body in this module"


def test_no_kernel_is_complete_when_a_call_was_skipped() -> None:
    """A call that stays a call is reported wherever a flow reaches it."""
    m = module(RECURSIVE)
    for name in ("k", "e"):
        result = analyze_kernel(m, name)
        assert not result.complete
        assert any("not followed" in why for _, _, why in result.unknown)


@pytest.mark.parametrize("libm", ["fmaxf", "fmin", "log2f", "tanh"])
def test_calls_to_pure_maths_functions_do_not_make_the_kernel_partial(libm: str) -> None:
    """GCC's OpenACC stencil calls ``fmaxf`` (newlib, pure on the device): it was
    reported as an unfollowed call, so the kernel was partial."""
    text = f"""
.extern .func (.param .f32 r) {libm}(.param .f32 x);
.visible .entry m(.param .u64 m_param_0)
{{
    .reg .f32 %f<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [m_param_0];
    ld.global.f32 %f1, [%rd1];
    {{ .param .f32 x; st.param.f32 [x+0], %f1; .param .f32 r;
      call.uni (r), {libm}, (x); ld.param.f32 %f2, [r+0]; }}
    st.global.f32 [%rd1+4], %f2;
    ret;
}}
"""
    result = analyze_kernel(module(text), "m")
    assert result.status == "complete", result.reason
    assert result.counts() == (1, 1)


# --------------------------------------------------------------------------
# Induction variables


def loop_iter(result: KernelAnalysis, access: Access) -> z3.ExprRef:
    (name,) = access.loops
    return symbols(access.address)[name]


ADD_CHAIN = """
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r2, 0;
LOOP:
    ld.global.u32 %r3, [%rd1];
    add.s64 %rd2, %rd1, 8;
    ld.global.u32 %r3, [%rd2];
    add.s64 %rd3, %rd2, 8;
    mov.b64 %rd1, %rd3;
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    ret;
}
"""


def test_pointer_advanced_by_a_chain_of_adds_is_an_induction_variable() -> None:
    result = analyze(ADD_CHAIN)
    first, second = accesses(result, "ld")
    it = loop_iter(result, first)
    base = z3.BitVec("param_0", 64)
    # addr = param_0 + 16*iter, the stride of the whole chain: no opaque loop_ term.
    assert not any(n.startswith("loop_") for n in symbols(first.address))
    assert valid(first.address == base + 16 * it)
    assert valid(second.address - first.address == 8)
    assert valid(z3.URem(first.address - base, 16) == 0)


MOV_COUNTER = """
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r6, 3;
LOOP:
    mov.u32 %r5, %r6;
    mul.wide.s32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r7, [%rd3];
    cvt.u32.s32 %r4, %r5;
    add.s32 %r6, %r4, 2;
    setp.lt.s32 %p1, %r6, %r1;
    @%p1 bra LOOP;
    ret;
}
"""


def test_counter_kept_through_a_mov_copy_is_an_induction_variable() -> None:
    result = analyze(MOV_COUNTER)
    (load,) = accesses(result, "ld")
    it = loop_iter(result, load)
    assert not any(n.startswith("loop_") for n in symbols(load.address))
    base = z3.BitVec("param_0", 64)
    # index = 3 + 2*iter (32-bit, sign-extended by mul.wide.s32).
    index = z3.SignExt(32, 3 + 2 * z3.Extract(31, 0, it))
    assert valid(load.address == base + 4 * index)
    # Two iterations apart the load is 16 bytes further (where the 32-bit
    # counter does not wrap).
    nxt = z3.substitute(load.address, (it, it + 2))
    small = z3.ULT(it, 1000)
    assert valid(nxt - load.address == 16, small)


def test_guarded_or_twice_defined_registers_are_not_induction_variables() -> None:
    """Soundness: an add that does not run on every iteration is no stride."""
    body = MOV_COUNTER.replace("    add.s32 %r6, %r4, 2;", "    @%p1 add.s32 %r6, %r4, 2;")
    result = analyze(body)
    (load,) = accesses(result, "ld")
    assert any(n.startswith("loop_") for n in symbols(load.address))


# --------------------------------------------------------------------------
# Solver effort


BRANCHY = """
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
    .reg .pred %p<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    setp.lt.u32 %p2, %r2, 2000;
    @%p2 bra A;
    st.global.u32 [%rd1], %r2;
A:
    add.s32 %r3, %r2, 1;
    setp.gt.u32 %p3, %r3, 0;
    @!%p3 bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r4, [%rd3];
    st.global.u32 [%rd3+4], %r4;
    ld.global.u32 %r5, [%rd3+8];
DONE:
    ret;
}
"""


@pytest.mark.parametrize("if_convert", [False, True])
def test_branch_decided_by_ranges_needs_no_solver_call(
    monkeypatch: pytest.MonkeyPatch, if_convert: bool
) -> None:
    """``%tid.x < 2000`` always holds (``%tid.x < %ntid.x <= 1024``), and the
    store to ``[p+4]`` is disjoint from ``[p+8]`` by constant offsets: the
    cheap paths decide both, so the count of real solver calls is small and
    fixed. If-converted, the store under ``%tid.x >= 2000`` is guarded by a
    condition the ranges refute: it is dropped as the branch was pruned."""
    monkeypatch.setattr(executor, "IF_CONVERT", if_convert)
    result = analyze(BRANCHY)
    assert result.complete
    s = result.stats
    # Only the first branch (%tid.x against a parameter) needs Z3; before the
    # interval pass it took 4 calls.
    assert s.solver_calls <= 3, vars(s)
    assert s.cheap_answers >= 2
    # Same answers as before: the branch at A was taken (no store to [p]).
    stores = accesses(result, "st")
    assert len(stores) == 1


# --------------------------------------------------------------------------
# Corpus: -G builds put helpers behind calls


def test_debug_build_kernels_report_the_loads_of_their_helpers(corpus) -> None:  # type: ignore[no-untyped-def]
    """nvcc -G keeps ``thomas_step``/``load_coef`` as called functions: the
    sweep kernel's global loads are all inside callees."""
    debug = [f for f in corpus if "-G" in f.flags and f.source_path.name == "adi_solver.cu"]
    if not debug:
        pytest.skip("adi_solver.cu has no -G build in this corpus")
    m = parse_file(debug[0].ptx_path)
    (fn,) = [k for k in m.kernels if "adi_x_sweep" in k.name]
    own = {id(i) for i in fn.instructions()}
    assert any(i.opcode == "call" for i in fn.instructions())
    result = analyze_kernel(m, fn.name, Budget(time_s=30))
    assert result.complete, result.reason
    loads = accesses(result, "ld") + accesses(result, "ld", "generic")
    in_callees = [a for a in loads if id(a.inst) not in own]
    # thomas_step reads a, b, c, d through load_coef and cp/dp itself.
    assert len(in_callees) >= 6
    assert {a.source.split(":")[0] for a in in_callees if a.source} == {"adi_solver.cu"}


def test_gcc_openmp_kernels_are_followed_through_libgomp(gcc_corpus) -> None:  # type: ignore[no-untyped-def]
    """GCC's OpenMP entry kernels only call ``gomp_nvptx_main(fn, data)``
    (libgomp, not in the PTX): the outlined region ``fn`` is followed, so the
    kernel reports the region's loads instead of none."""
    files = [f for f in gcc_corpus if f.source_path.name == "omp_realworld.c"]
    if not files:
        pytest.skip("gcc-12 with nvptx offloading is not installed")
    m = parse_file(files[0].ptx_path)
    (fn,) = [k for k in m.kernels if k.name.startswith("lbm$")]
    assert not [i for i in fn.instructions() if i.opcode == "ld" and ".param" not in i.modifiers]
    inlined = inline_calls(m, fn)
    assert inlined.inlined >= 2  # the region's $impl, and the parallel body through GOMP_parallel
    result = analyze_kernel(m, fn.name, Budget(time_s=60))
    assert not any("gomp_nvptx_main" in why or "GOMP_parallel" in why for _, _, why in result.unknown)
    assert len(accesses(result, "ld", "generic")) + len(accesses(result, "ld")) >= 9
