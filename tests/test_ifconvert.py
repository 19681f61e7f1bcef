"""If-conversion (`ptxasw.analysis.ifconvert`): which regions are taken, that
the guarded code computes what the branches did (concrete interpreter on
random kernels and inputs, original against converted, bit for bit; the
converted text assembles), and what it saves the symbolic analysis."""

from __future__ import annotations

import dataclasses
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import z3

from ptxasw import ir
from ptxasw.analysis.ifconvert import MAX_REGION, if_convert
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.symbolic import executor
from ptxasw.emulator.symbolic.executor import analyze_kernel
from ptxasw.ir.printer import print_module
from ptxasw.parser.frontend import parse_ptx
from tests.cubin import assert_assembles

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"

KERNEL = """
.visible .entry k(.param .u64 in, .param .u64 out)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    mov.u32 %r3, 7;
{body}
    st.global.u32 [%rd5], %r3;
    ret;
{tail}
}}
"""


def module(body: str, tail: str = "") -> ir.Module:
    """The kernel with ``body`` before its store and ``tail`` after its ``ret``
    (where GCC puts the out-of-line side of a branch)."""
    return parse_ptx(HEADER + KERNEL.format(body=body, tail=tail), "ifconvert.ptx")


def converted_module(mod: ir.Module, *, visible_memory: bool = True) -> tuple[ir.Module, int]:
    """``mod`` with its kernel if-converted, printed and parsed again."""
    fn = mod.function("k")
    result = if_convert(fn, visible_memory=visible_memory)
    items = [result.function if item is fn else item for item in mod.items]
    text = print_module(dataclasses.replace(mod, items=items))
    return parse_ptx(text, "converted.ptx"), result.regions


def guards(mod: ir.Module) -> list[str]:
    return [
        f"{'!' if i.guard.negated else ''}{i.guard.predicate.name} {i.opcode}"
        for i in mod.function("k").instructions()
        if i.guard is not None
    ]


TRIANGLE = """
    setp.lt.u32 %p1, %r2, 100;
    @%p1 bra $SKIP;
    add.u32 %r3, %r2, 5;
    mul.lo.u32 %r3, %r3, 3;
$SKIP:
"""

DIAMOND = """
    setp.lt.u32 %p1, %r2, 100;
    @!%p1 bra $ELSE;
    add.u32 %r3, %r2, 5;
    bra.uni $JOIN;
$ELSE:
    sub.u32 %r3, %r2, 5;
$JOIN:
"""


def test_a_triangle_becomes_guarded_instructions() -> None:
    mod, regions = converted_module(module(TRIANGLE))
    assert regions == 1
    assert guards(mod) == ["!%p1 add", "!%p1 mul"]
    assert not any(i.opcode == "bra" for i in mod.function("k").instructions())


def test_a_diamond_guards_each_side_with_its_condition() -> None:
    mod, regions = converted_module(module(DIAMOND))
    assert regions == 1
    # @!%p1 bra ELSE: the fall-through runs when %p1 holds, ELSE when it does not.
    assert guards(mod) == ["%p1 add", "!%p1 sub"]


# GCC's OpenMP static schedule (npb_bt's x_solve at -O3): the first
# `rem` teams take one iteration more; that side is out of line, and the other
# side leaves early when its chunk is empty.
SCHEDULE_BODY = """
    rem.u32 %r29, %r2, 7;
    div.u32 %r28, %r2, 7;
    setp.lt.u32 %p1, %r1, %r29;
    @%p1 bra $LONGER;
    mad.lo.u32 %r32, %r1, %r28, %r29;
    add.u32 %r34, %r28, %r32;
    setp.ge.u32 %p2, %r32, %r34;
    @%p2 bra $EMPTY;
$CHUNK:
    sub.u32 %r3, %r34, %r32;
    add.u32 %r3, %r3, %r32;
$EMPTY:
"""
SCHEDULE_TAIL = """
$LONGER:
    add.u32 %r30, %r28, 1;
    mul.lo.u32 %r32, %r1, %r30;
    add.u32 %r34, %r30, %r32;
    bra $CHUNK;
"""


def test_gccs_out_of_line_side_is_guarded_and_its_early_exit_kept() -> None:
    """The out-of-line side after the ``ret`` is one region with the code it
    returns to: each side guarded by its condition, the chunk by the
    condition of reaching it (the longer side, or the shorter one when its
    chunk is not empty); nothing branches any more."""
    mod, regions = converted_module(module(SCHEDULE_BODY, SCHEDULE_TAIL))
    assert regions == 1
    fn = mod.function("k")
    insts = list(fn.instructions())
    assert not any(i.opcode == "bra" for i in insts)
    assert "$LONGER" not in print_module(mod)
    defs = {i.operands[0]: i for i in insts if i.opcode in ("not", "and", "or")}

    def means(reg: ir.Register) -> z3.BoolRef:
        """The added predicate as a formula over the kernel's own."""
        if reg not in defs:
            return z3.Bool(reg.name)
        inst = defs[reg]
        args = [means(op) for op in inst.operands[1:]]
        return {"not": lambda: z3.Not(args[0]), "and": lambda: z3.And(*args), "or": lambda: z3.Or(*args)}[
            inst.opcode
        ]()

    def guard_of(opcode: str, dst: str) -> z3.BoolRef:
        (inst,) = [i for i in insts if i.opcode == opcode and i.operands[0] == ir.Register(dst) and i.guard]
        assert inst.guard is not None
        value = means(inst.guard.predicate)
        return z3.Not(value) if inst.guard.negated else value

    p1, p2 = z3.Bool("%p1"), z3.Bool("%p2")

    def same(a: z3.BoolRef, b: z3.BoolRef) -> bool:
        solver = z3.Solver()
        solver.add(a != b)
        return solver.check() == z3.unsat

    assert same(guard_of("mad", "%r32"), z3.Not(p1))
    assert same(guard_of("setp", "%p2"), z3.Not(p1))
    assert same(guard_of("mul", "%r32"), p1)  # the out-of-line side
    assert same(guard_of("sub", "%r3"), z3.Or(p1, z3.Not(p2)))  # $CHUNK: the early exit not taken


@pytest.mark.parametrize("tid", [0, 1, 2, 5, 6, 40])
def test_gccs_schedule_converted_computes_the_same_bits(tid: int) -> None:
    original = module(SCHEDULE_BODY, SCHEDULE_TAIL)
    converted, _ = converted_module(original)
    data = np.arange(0, 77 * 3, 3, dtype=np.uint32)
    outs = []
    for mod in (original, converted):
        out = np.zeros_like(data)
        launch(mod, "k", (1,), (77,), [data.copy(), out])
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])


def test_the_schedule_runs_on_one_flow_to_its_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the conversion the two sides of the schedule and the early
    exit make three flows down to the end of the kernel; with it, one."""
    mod = module(SCHEDULE_BODY, SCHEDULE_TAIL)
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    forked = analyze_kernel(mod, "k")
    monkeypatch.setattr(executor, "IF_CONVERT", True)
    guarded = analyze_kernel(mod, "k")
    assert len(forked.flows) == 3 and len(guarded.flows) == 1


INLINED_SCHEDULE = (
    HEADER
    + """
.func (.param .u32 r) chunk(.param .u32 n, .param .u32 t)
{
    .reg .pred %p<4>;
    .reg .b32 %r<40>;
    ld.param.u32 %r2, [n];
    ld.param.u32 %r1, [t];
    mov.u32 %r3, 0;
"""
    + SCHEDULE_BODY
    + """
    st.param.u32 [r], %r3;
    ret;
"""
    + SCHEDULE_TAIL
    + """
}

.visible .entry k(.param .u64 in, .param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    {
        .param .u32 a;
        .param .u32 b;
        .param .u32 r;
        st.param.u32 [a], %r2;
        st.param.u32 [b], %r1;
        call (r), chunk, (a, b);
        ld.param.u32 %r3, [r];
    }
    st.global.u32 [%rd5], %r3;
    ret;
}
"""
)


def test_the_schedule_in_an_inlined_callee_runs_on_one_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    """GCC's schedule sits in the outlined region's function, inlined before
    the analysis, whose registers the inliner renames without declarations:
    the added predicates are checked against the instruction table alone."""
    mod = parse_ptx(INLINED_SCHEDULE, "inlined.ptx")
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    forked = analyze_kernel(mod, "k")
    monkeypatch.setattr(executor, "IF_CONVERT", True)
    guarded = analyze_kernel(mod, "k")
    assert forked.complete and guarded.complete
    assert len(forked.flows) == 3 and len(guarded.flows) == 1


@pytest.mark.parametrize(
    "body, why",
    [
        (TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "st.shared.u32 [%rd5], %r3;"), "a shared-memory store"),
        (
            TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "st.volatile.global.u32 [%rd5], %r3;"),
            "a volatile store",
        ),
        (
            TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "ld.volatile.global.u32 %r3, [%rd4];"),
            "a volatile load",
        ),
        (TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "ret;"), "a return"),
        (
            TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "$L:\n    add.u32 %r3, %r3, 3;\n    @%p2 bra $L;"),
            "a loop",
        ),
        (TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "shfl.sync.up.b32 %r3, %r3, 1, 0, -1;"), "a collective"),
        (TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "add.cc.u32 %r3, %r3, 3;"), "the carry flag"),
        (
            TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", "\n".join(["add.u32 %r3, %r3, 1;"] * MAX_REGION)),
            "too long",
        ),
        (DIAMOND.replace("$JOIN:", "$JOIN:\n    @%p1 bra $ELSE;"), "the else label has another branch"),
    ],
)
def test_regions_that_must_stay_branches(body: str, why: str) -> None:
    _, regions = converted_module(module(body))
    assert regions == 0, why


@pytest.mark.parametrize(
    "access",
    [
        "st.global.u32 [%rd5], %r3;",
        "st.u32 [%rd5], %r3;",
        "ld.u32 %r3, [%rd4];",
        "ld.global.u32 %r3, [%rd4];",
    ],
)
def test_memory_other_threads_see_converts_for_the_trace_only(access: str) -> None:
    """Global and generic accesses are guarded for the trace (one flow, the
    store kept with its guard) and stay branches for the synthesis, which
    places shuffles where loads were and counts stores between loads."""
    body = TRIANGLE.replace("mul.lo.u32 %r3, %r3, 3;", access)
    converted, regions = converted_module(module(body))
    assert regions == 1
    assert any(i.guard is not None and i.opcode == access[:2] for i in converted.function("k").instructions())
    _, regions = converted_module(module(body), visible_memory=False)
    assert regions == 0


BOUNDS_CHECK = """
.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $DONE;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r3, [%rd4];
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r3;
$DONE:
{after}
    ret;
}}
"""


@pytest.mark.parametrize("after, converts", [("", False), ("    st.global.u32 [%rd2], %r2;", True)])
def test_a_bounds_check_around_a_store_that_ends_the_kernel_stays_a_fork(after: str, converts: bool) -> None:
    """``if (i < n) {...; out[i] = ...}`` at the end of a kernel keeps its
    fork (one empty flow; the trace keeps a plain path condition); with
    code after the join, the region converts (each fork would double it)."""
    mod = parse_ptx(HEADER + BOUNDS_CHECK.format(after=after), "bounds.ptx")
    assert if_convert(mod.function("k")).regions == int(converts)
    flows = analyze_kernel(mod, "k").flows
    assert len(flows) == (1 if converts else 2)


def test_guarded_stores_give_what_the_branches_gave() -> None:
    """A store under a branch, then a load of the same place: guarded on one
    flow, the load reads ``If(guard, stored, older)``; every thread's memory
    afterwards is what the branching kernel left (concrete interpreter)."""
    body = TRIANGLE.replace(
        "mul.lo.u32 %r3, %r3, 3;", "st.global.u32 [%rd5], %r2;\n    ld.global.u32 %r3, [%rd5];"
    )
    original = module(body)
    converted, regions = converted_module(original)
    assert regions == 1
    assert _same_outputs(original, converted, np.arange(0, 77 * 3, 3, dtype=np.uint32))
    (flow,) = analyze_kernel(original, "k").flows
    guarded_store, last_store = [a for a in flow.trace if a.kind == "st"]
    assert guarded_store.guard is not None and last_store.guard is None
    assert "If(" in str(last_store.value)


@pytest.mark.parametrize(
    "body, tail, why",
    [
        (SCHEDULE_BODY, SCHEDULE_TAIL.replace("$LONGER:", "add.u32 %r3, %r3, 1;\n$LONGER:"), "falls into"),
        (SCHEDULE_BODY.replace("$CHUNK:", "$CHUNK:\n    @%p1 bra $LONGER;"), SCHEDULE_TAIL, "two branches"),
        (
            SCHEDULE_BODY,
            SCHEDULE_TAIL.replace("mul.lo", "st.volatile.global.u32 [%rd5], %r3;\n    mul.lo"),
            "a volatile store",
        ),
    ],
)
def test_out_of_line_sides_that_must_stay_branches(body: str, tail: str, why: str) -> None:
    """The out-of-line side stays where it is (triangles around it may still
    be converted); the kernel computes what it did."""
    original = module(body, tail)
    converted, _ = converted_module(original)
    assert "bra $LONGER" in print_module(converted).replace("\t", " ").replace("  ", " "), why
    if why != "two branches":  # that one loops forever where %p1 holds
        assert _same_outputs(original, converted, np.arange(0, 77 * 3, 3, dtype=np.uint32))


_OPS = [
    "add.u32 {d}, {a}, {b};",
    "sub.u32 {d}, {a}, {b};",
    "mul.lo.u32 {d}, {a}, {b};",
    "xor.b32 {d}, {a}, {b};",
    "shl.b32 {d}, {a}, 3;",
    "min.s32 {d}, {a}, {b};",
    "selp.b32 {d}, {a}, {b}, %p2;",
    "mad.lo.u32 {d}, {a}, {b}, 11;",
]


def random_body(rng: random.Random, regions: int, tail: list[str] | None = None) -> str:
    """Register computations in triangles and diamonds on conditions of the
    loaded value, nested in sequence; %p2 is set inside some regions. With
    ``tail``, also GCC's shape: the taken side appended to ``tail`` (after
    the ``ret``), the fall-through side maybe leaving early (%p3)."""
    regs = ["%r2", "%r3"]
    lines: list[str] = ["    setp.gt.u32 %p2, %r2, 1000;"]

    def op() -> str:
        d = f"%r{len(regs) + 2}" if len(regs) < 28 and rng.random() < 0.5 else rng.choice(regs[1:])
        text = rng.choice(_OPS).format(d=d, a=rng.choice(regs), b=rng.choice(regs))
        if d not in regs:
            regs.append(d)
        return f"    {text}"

    for n in range(regions):
        lines.append(f"    and.b32 %r30, %r2, {1 << rng.randrange(8)};")
        lines.append("    setp.eq.u32 %p1, %r30, 0;")
        guard = rng.choice(["@%p1", "@!%p1"])
        if tail is not None and rng.random() < 0.5:
            lines.append(f"    {guard} bra $O{n};")
            exits = rng.randint(0, 2)
            for _ in range(exits):
                lines += [op() for _ in range(rng.randint(0, 2))]
                lines.append(f"    setp.lt.u32 %p3, {rng.choice(regs)}, {rng.randrange(1 << 32)};")
                lines.append(f"    {rng.choice(['@%p3', '@!%p3'])} bra $X{n};")
            lines += [op() for _ in range(rng.randint(0, 2))]
            lines.append(f"$J{n}:")
            lines.append(f"    add.u32 %r3, %r3, {rng.choice(regs)};")
            lines.append(f"$X{n}:")
            tail.append(f"$O{n}:")
            tail += [op() for _ in range(rng.randint(1, 3))]
            tail.append(f"    bra.uni $J{n};")
        elif rng.random() < 0.5:
            lines.append(f"    {guard} bra $T{n};")
            lines += [op() for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.3:
                lines.append(f"    setp.lt.u32 %p2, {rng.choice(regs)}, 77;")
            lines.append(f"$T{n}:")
        else:
            lines.append(f"    {guard} bra $E{n};")
            lines += [op() for _ in range(rng.randint(1, 3))]
            lines.append(f"    bra.uni $J{n};")
            lines.append(f"$E{n}:")
            lines += [op() for _ in range(rng.randint(1, 3))]
            lines.append(f"$J{n}:")
        lines.append(f"    add.u32 %r3, %r3, {rng.choice(regs)};")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(24))
def test_converted_kernels_compute_the_same_bits(seed: int) -> None:
    rng = random.Random(seed)
    tail: list[str] | None = [] if seed % 2 else None
    original = module(random_body(rng, rng.randint(2, 6), tail), "\n".join(tail or []))
    converted, regions = converted_module(original)
    assert regions >= 2
    assert "$O" not in print_module(converted), "every out-of-line side is converted"
    data = np.random.default_rng(seed).integers(0, 2**32, 77, dtype=np.uint64).astype(np.uint32)
    data[::5] = np.arange(0, 2000, 130, dtype=np.uint32)[: len(data[::5])]
    outs = []
    for mod in (original, converted):
        out = np.zeros_like(data)
        launch(mod, "k", (1,), (77,), [data.copy(), out])
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs NVIDIA's ptxas")
def test_converted_text_assembles(tmp_path: Path) -> None:
    tail: list[str] = []
    converted, _ = converted_module(module(random_body(random.Random(3), 8, tail), "\n".join(tail)))
    opcodes = {i.opcode for i in converted.function("k").instructions()}
    assert "and" in opcodes, "an early exit is converted"
    assert_assembles(print_module(converted), tmp_path, "sm_80")


SEQUENCE = "\n".join(
    f"""
    and.b32 %r30, %r2, {1 << n};
    setp.eq.u32 %p1, %r30, 0;
    @%p1 bra $S{n};
    add.u32 %r3, %r3, {n + 1};
$S{n}:"""
    for n in range(6)
)


def test_the_analysis_runs_a_branch_sequence_on_one_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six independent register-only branches: dozens of flows as branches
    (64 paths, some merged where the sums meet), one guarded flow; the
    stored value is the same function of the input on every path."""
    mod = module(SEQUENCE)
    monkeypatch.setattr(executor, "IF_CONVERT", False)
    monkeypatch.setattr(executor, "JOIN_FLOWS", False)
    forked = analyze_kernel(mod, "k")
    monkeypatch.setattr(executor, "IF_CONVERT", True)
    guarded = analyze_kernel(mod, "k")
    assert len(forked.flows) > 32 and len(guarded.flows) == 1
    (store,) = guarded.flows[0].stores
    assert store.value is not None
    for flow in forked.flows:
        if flow.end != "ret":
            continue  # merged into a flow in the same state
        (other,) = flow.stores
        assert other.value is not None
        solver = z3.Solver()
        solver.add(*flow.condition, *forked.assumptions, store.value != other.value)
        assert solver.check() == z3.unsat
    # The trace names the module's instructions, not the guarded copies.
    module_insts = {id(i) for i in mod.function("k").instructions()}
    assert all(id(a.inst) in module_insts for a in guarded.flows[0].trace)


def test_a_region_that_writes_its_own_predicate_tests_the_old_value() -> None:
    """`@%p1 bra S; ...; setp %p1; @%p1 ...; S:`: the region's guard still
    means the branch's %p1 (a copy made before the write), the inner guard
    the new one."""
    body = TRIANGLE.replace(
        "mul.lo.u32 %r3, %r3, 3;", "setp.eq.u32 %p1, %r3, 105;\n    @%p1 add.u32 %r3, %r3, 1;"
    )
    original = module(body)
    converted, regions = converted_module(original)
    assert regions == 1
    assert "mov.pred" in print_module(converted)
    assert _same_outputs(original, converted, np.arange(0, 77 * 3, 3, dtype=np.uint32))


def _same_outputs(a: ir.Module, b: ir.Module, data: np.ndarray) -> bool:
    outs = []
    for mod in (a, b):
        out = np.zeros_like(data)
        launch(mod, "k", (1,), (len(data),), [data.copy(), out])
        outs.append(out)
    return bool(np.array_equal(outs[0], outs[1]))


LOCAL_KERNEL = KERNEL.replace(
    "    .reg .pred %p<4>;", "    .local .align 4 .b8 buf[32];\n    .reg .pred %p<4>;"
)


def random_acyclic_body(rng: random.Random, blocks: int, tail: list[str] | None = None) -> str:
    """A random forward-branching region: each block ends in nothing, a
    conditional or an unconditional branch to any later block or the end;
    conditions are set and overwritten inside (%p1, %p2), some instructions
    are already guarded, and some read and write a local array. With
    ``tail``, blocks that nothing falls into may be laid out there instead,
    after the ``ret`` (as nvcc places rare sides), each ending in a jump."""
    regs = ["%r2", "%r3", "%r4", "%r5"]
    lines = [f"    st.local.u32 [buf+{4 * k}], {k};" for k in range(8)]
    lines += ["    mov.u32 %r4, 3;", "    mov.u32 %r5, 5;", "    setp.gt.u32 %p2, %r2, 1000;"]

    def op() -> str:
        d = rng.choice(regs[1:])
        kind = rng.random()
        if kind < 0.15:
            return f"    st.local.u32 [buf+{4 * rng.randrange(8)}], {rng.choice(regs)};"
        if kind < 0.3:
            return f"    ld.local.u32 {d}, [buf+{4 * rng.randrange(8)}];"
        text = rng.choice(_OPS).format(d=d, a=rng.choice(regs), b=rng.choice(regs))
        if kind < 0.4:
            text = f"{rng.choice(['@%p1', '@!%p1', '@%p2', '@!%p2'])} {text}"
        return f"    {text}"

    targeted: set[int] = set()
    jumps_away = False  # whether the previous block ends in an unconditional branch
    for n in range(blocks):
        block = [f"$B{n}:"]
        block += [op() for _ in range(rng.randint(0, 3))]
        kind = rng.random()
        target = rng.randint(n + 1, blocks)
        ends_in_jump = False
        if kind < 0.6:
            pred = rng.choice(["%p1", "%p2"])
            block.append(f"    and.b32 %r30, {rng.choice(regs)}, {1 << rng.randrange(8)};")
            block.append(f"    setp.eq.u32 {pred}, %r30, 0;")
            block.append(f"    {rng.choice(['@', '@!'])}{pred} bra $B{target};")
            targeted.add(target)
        elif kind < 0.75 and n + 1 in targeted:  # no dead code: the next block is reached by a branch
            block.append(f"    bra.uni $B{target};")
            targeted.add(target)
            ends_in_jump = True
        if tail is not None and jumps_away and rng.random() < 0.6:
            tail += block if ends_in_jump else [*block, f"    bra.uni $B{n + 1};"]
        else:
            lines += block
            jumps_away = ends_in_jump
            continue
        # Moved out: what was laid out before it still does not fall through.
    lines.append(f"$B{blocks}:")
    for k in range(8):
        lines += [f"    ld.local.u32 %r31, [buf+{4 * k}];", "    add.u32 %r3, %r3, %r31;"]
    lines += ["    add.u32 %r3, %r3, %r4;", "    xor.b32 %r3, %r3, %r5;"]
    return "\n".join(lines)


def acyclic_module(body: str, tail: list[str] | None = None) -> ir.Module:
    text = LOCAL_KERNEL.format(body=body, tail="\n".join(tail or []))
    return parse_ptx(HEADER + text, "acyclic.ptx")


@pytest.mark.parametrize("seed", range(60))
def test_converted_acyclic_regions_compute_the_same_bits(seed: int) -> None:
    """Any forward-branching code of convertible instructions, laid out in
    order or partly after the ``ret`` (odd seeds), becomes guarded code
    without a conditional branch, bit-identical in the interpreter."""
    rng = random.Random(seed)
    tail: list[str] | None = [] if seed % 2 else None
    body = random_acyclic_body(rng, rng.randint(2, 9), tail)
    original = acyclic_module(body, tail)
    converted, regions = converted_module(original)
    assert regions >= 1 or "bra" not in body
    # An unconditional branch before the first conditional one runs on one flow anyway and stays.
    assert not any(i.opcode == "bra" and i.guard for i in converted.function("k").instructions())
    data = np.random.default_rng(seed).integers(0, 2**32, 77, dtype=np.uint64).astype(np.uint32)
    data[::3] = np.arange(0, 26 * 40, 40, dtype=np.uint32)
    assert _same_outputs(original, converted, data)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs NVIDIA's ptxas")
def test_converted_acyclic_region_assembles(tmp_path: Path) -> None:
    converted, regions = converted_module(acyclic_module(random_acyclic_body(random.Random(7), 9)))
    assert regions >= 1
    assert_assembles(print_module(converted), tmp_path, "sm_80")


def test_an_early_exit_on_the_sides_own_predicate_converts() -> None:
    """`@%p1 bra $EMPTY` on the side that runs where %p1 is false: never
    taken; its formula is false and the region converts whole."""
    original = module(SCHEDULE_BODY.replace("@%p2 bra", "@%p1 bra"), SCHEDULE_TAIL)
    converted, regions = converted_module(original)
    assert regions == 1 and "$LONGER" not in print_module(converted)
    assert _same_outputs(original, converted, np.arange(0, 77 * 3, 3, dtype=np.uint32))


def test_an_out_of_line_side_joining_past_the_chunk_converts() -> None:
    """The out-of-line side jumps back to $EMPTY, past $CHUNK: $EMPTY is
    where every path meets, and the whole of it is one region."""
    original = module(SCHEDULE_BODY, SCHEDULE_TAIL.replace("bra $CHUNK;", "bra $EMPTY;"))
    converted, regions = converted_module(original)
    assert regions == 1
    assert "$LONGER" not in print_module(converted)
    assert _same_outputs(original, converted, np.arange(0, 77 * 3, 3, dtype=np.uint32))
