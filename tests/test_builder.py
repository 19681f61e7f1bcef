"""The IR editing API (`ptxasw.ir.builder`) and the pass pipeline that uses it.

Unit tests pin each operation down on small hand-written PTX; the checks on
built instructions are tested both ways: what the builder refuses, ptxas
refuses too, and the builder accepts every instruction the compilers of the
corpus wrote. Property tests apply random edit sequences to real kernels and
require the result to print, parse back to the same IR and assemble.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxasw import ir
from ptxasw.analysis.cfg import build_cfg
from ptxasw.driver.deadline import Deadline
from ptxasw.driver.pipeline import FunctionPass, PassResult, run_pipeline
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.ir import isa
from ptxasw.ir.builder import AnalysisCache, BuildError, FunctionBuilder
from ptxasw.ir.printer import format_instruction, print_module
from ptxasw.parser import parse_ptx
from tests.corpus.build import CorpusFile

ROOT = pathlib.Path(__file__).resolve().parent.parent
JACOBI = ROOT / "examples" / "jacobi.ptx"
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")

# A kernel with what editing must respect: a range declaration, a nested
# block with its own (unprefixed) register, labels, .loc directives, and a
# parameter and a label whose names look like fresh names.
SMALL = """\
.version 8.0
.target sm_80
.address_size 64

.file 1 "k.cu"
.global .align 4 .b32 gsym0;

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 %swr0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<4>;
	.reg .f32 	%f<3>;
	.reg .b32 	%swr<2>;

	ld.param.u64 	%rd1, [k_param_0];
	.loc	1 3 5
	mov.u32 	%r1, %tid.x;
	setp.gt.s32 	%p1, %r1, 31;
	@%p1 bra 	$L__BB0_2;
	{
	.reg .pred p, %swp0;
	setp.lt.s32 p, %r1, 4;
	@p mov.b32 %r2, %r1;
	}
$L__BB0_2:
	.loc	1 4 2
	add.s32 	%r3, %r1, 1;
	.loc	1 5 2
	st.global.u32 	[%rd1], %r3;
$swp0:
	ret;

}
"""


def small() -> tuple[ir.Module, ir.Function, FunctionBuilder]:
    module = parse_ptx(SMALL, "small.ptx")
    fn = module.kernels[0]
    return module, fn, FunctionBuilder(fn, module)


def find(fn: ir.Function, text: str) -> ir.Instruction:
    """The instruction printed as ``text`` (tabs and spaces alike)."""
    for inst in fn.instructions():
        if " ".join(format_instruction(inst).split()) == text:
            return inst
    raise AssertionError(f"no instruction {text!r}")


def body_lines(module: ir.Module) -> list[str]:
    """The printed statements of the first kernel, whitespace-normalised."""
    text = print_module(module)
    inside = text[text.index("{", text.index(".entry")) + 1 : text.rindex("}")]
    return [" ".join(line.split()) for line in inside.splitlines() if line.strip()]


def assemble(text: str, arch: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "edited.ptx"
        path.write_text(text)
        cmd = ["ptxas", f"-arch={arch}", *flags, str(path), "-o", str(pathlib.Path(tmp) / "out.cubin")]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def round_trips(module: ir.Module) -> str:
    text = print_module(module)
    assert parse_ptx(text) == module
    return text


# --------------------------------------------------------------------------
# Positions


def test_position_finds_statements_by_identity_inside_nested_blocks() -> None:
    _, fn, b = small()
    inner = find(fn, "@p mov.b32 %r2, %r1;")
    pos = b.position(inner)
    assert pos.statement is inner and pos.depth == 1
    assert isinstance(pos.blocks[0], ir.Block) and pos.body is pos.blocks[0].body
    top = find(fn, "add.s32 %r3, %r1, 1;")
    assert b.position(top).depth == 0
    twin = ir.Instruction(top.opcode, top.modifiers, top.operands)
    assert twin == top  # equal, yet not in the function
    assert not b.contains(twin)
    with pytest.raises(BuildError, match="not in k"):
        b.position(twin)


# --------------------------------------------------------------------------
# Insertion, replacement, removal


def test_insert_before_goes_between_label_loc_and_instruction() -> None:
    module, fn, b = small()
    add = find(fn, "add.s32 %r3, %r1, 1;")
    fresh = b.fresh(".b32")
    b.insert_before(add, b.mov(fresh, 7))
    lines = body_lines(module)
    i = lines.index("$L__BB0_2:")
    assert lines[i : i + 4] == ["$L__BB0_2:", ".loc 1 4 2", "mov.b32 %swr2, 7;", "add.s32 %r3, %r1, 1;"]
    round_trips(module)


def test_insert_inside_a_nested_block_and_after() -> None:
    module, fn, b = small()
    inner = find(fn, "setp.lt.s32 p, %r1, 4;")
    r = b.fresh(".b32")
    b.insert_after(inner, b.selp(r, 1, 0, ir.Register("p")))
    block = b.position(inner).blocks[0]
    assert [format_instruction(s) for s in block.body if isinstance(s, ir.Instruction)][1] == (
        "selp.b32 \t%swr2, 1, 0, p;"
    )
    # The declaration went to the top level, not into the block.
    decl = next(s for s in fn.body.body if isinstance(s, ir.VarDecl) and s.names[0].name == "%swr2")
    assert b.position(decl).depth == 0
    round_trips(module)


def test_insert_after_a_branch_or_ret_is_refused() -> None:
    _, fn, b = small()
    r = b.fresh(".b32")
    for text in ("@%p1 bra $L__BB0_2;", "ret;"):
        with pytest.raises(BuildError, match="does not fall through"):
            b.insert_after(find(fn, text), b.mov(r, 1))


def test_an_instruction_lives_in_one_place() -> None:
    _, fn, b = small()
    add = find(fn, "add.s32 %r3, %r1, 1;")
    with pytest.raises(BuildError, match="already in k"):
        b.insert_before(add, add)
    r = b.fresh(".b32")
    mov = b.mov(r, 1)
    with pytest.raises(BuildError, match="already in k"):
        b.insert_before(add, [mov, mov])
    with pytest.raises(BuildError, match="already names something"):
        b.insert_before(add, ir.Label("$L__BB0_2"))
    with pytest.raises(BuildError, match="is text"):
        b.insert_before(add, "mov.u32 %r1, 2;")  # type: ignore[arg-type]
    # Instructions put together by hand are checked on the way in too.
    with pytest.raises(BuildError, match=r"does not take type \.b32"):
        b.insert_before(add, ir.Instruction("add", (".b32",), (R(4), R(1), R(1))))
    assert b.edits == 1  # the fresh register only


def test_fresh_label_and_branch_around_a_guarded_fallback() -> None:
    """The shape of a shuffle with its corner-case load: the label and the
    branch are built before the label is placed."""
    module, fn, b = small()
    st_inst = find(fn, "st.global.u32 [%rd1], %r3;")
    ok = b.fresh_pred()
    skip = b.fresh_label()
    branch = b.bra(skip, guard=ok)
    fallback = b.copy(st_inst, guard=ir.Guard(ok, negated=True))
    assert fallback.guard == ir.Guard(ok, negated=True) and b.copy(st_inst).guard is None
    b.insert_before(st_inst, [b.setp("ne", ok, R(3), 0), branch, fallback, skip])
    lines = body_lines(module)
    i = lines.index("setp.ne.b32 %swp1, %r3, 0;")
    assert lines[i : i + 5] == [
        "setp.ne.b32 %swp1, %r3, 0;",
        f"@%swp1 bra {skip.name};",
        "@!%swp1 st.global.u32 [%rd1], %r3;",
        f"{skip.name}:",
        "st.global.u32 [%rd1], %r3;",
    ]
    with pytest.raises(BuildError, match="already names something"):
        b.insert_after(st_inst, ir.Label(skip.name))
    round_trips(module)


@needs_ptxas
def test_module_docstring_example_assembles() -> None:
    """The rewrite of the module docstring, on jacobi: a load becomes a shuffle
    from the lane below plus the load where that lane is out of range."""
    module = parse_ptx(JACOBI.read_text(), str(JACOBI))
    fn = module.kernels[0]
    earlier_load = find(fn, "ld.global.nc.f32 %f1, [%rd6+-4];")
    load = find(fn, "ld.global.nc.f32 %f2, [%rd6];")
    dead = find(fn, "mov.u32 %r5, %ntid.x;")
    b = FunctionBuilder(fn, module)
    dst, src = load.operands[0], earlier_load.operands[0]
    in_range = b.fresh_pred()
    b.replace(
        load,
        [
            b.shfl_sync("up", dst, src, 1, 0, pred=in_range),  # type: ignore[arg-type]
            b.copy(load, guard=ir.Guard(in_range, negated=True)),
        ],
    )
    cfg = b.analyses.get(fn, build_cfg)
    b.remove(dead)
    assert not b.analyses.is_current(fn, cfg)
    lines = body_lines(module)
    i = lines.index("shfl.sync.up.b32 %f2|%swp0, %f1, 1, 0, 0xFFFFFFFF;")
    assert lines[i + 1] == "@!%swp0 ld.global.nc.f32 %f2, [%rd6];"
    result = assemble(round_trips(module), "sm_90")
    assert result.returncode == 0, result.stderr


def test_hoist_moves_a_block_declaration_to_the_top_level() -> None:
    module, fn, b = small()
    inner = find(fn, "setp.lt.s32 p, %r1, 4;")
    block = b.position(inner).blocks[0]
    decl = block.body[0]
    assert isinstance(decl, ir.VarDecl)
    b.hoist(decl)
    assert b.position(decl).depth == 0 and decl not in block.body
    assert isinstance(fn.body.body[b.position(decl).index - 1], ir.VarDecl)
    round_trips(module)
    # Hoisting the second copy of an inlined block would declare p twice.
    module, fn, b = small()
    block = b.position(find(fn, "setp.lt.s32 p, %r1, 4;")).blocks[0]
    twin = ir.Block([ir.VarDecl(".reg", ".pred", [ir.VarName("p")])])
    b.insert_after(block, twin)
    with pytest.raises(BuildError, match="cannot hoist p"):
        b.hoist(block.body[0])  # type: ignore[arg-type]
    local = ir.VarDecl(".local", ".b32", [ir.VarName("buf", array=(4,))])
    b.insert_after(twin.body[0], local)
    with pytest.raises(BuildError, match=r"only \.reg"):
        b.hoist(local)
    round_trips(module)


def test_replace_keeps_labels_and_loc_in_place() -> None:
    module, fn, b = small()
    add = find(fn, "add.s32 %r3, %r1, 1;")
    b.replace(add, [b.add(ir.Register("%r3"), 1, ir.Register("%r1")), b.mov(ir.Register("%r4"), 2)])
    lines = body_lines(module)
    i = lines.index("$L__BB0_2:")
    assert lines[i : i + 4] == ["$L__BB0_2:", ".loc 1 4 2", "add.s32 %r3, 1, %r1;", "mov.b32 %r4, 2;"]
    assert not b.contains(add)
    round_trips(module)


def test_remove_drops_an_orphaned_loc_but_never_a_label() -> None:
    module, fn, b = small()
    b.remove(find(fn, "add.s32 %r3, %r1, 1;"))
    lines = body_lines(module)
    # ".loc 1 4 2" described only the add; the label still names the next instruction.
    assert ".loc 1 4 2" not in lines
    i = lines.index("$L__BB0_2:")
    assert lines[i : i + 3] == ["$L__BB0_2:", ".loc 1 5 2", "st.global.u32 [%rd1], %r3;"]
    # A .loc that still describes something stays.
    b.remove(find(fn, "mov.u32 %r1, %tid.x;"))
    assert ".loc 1 3 5" in body_lines(module)
    round_trips(module)


def test_labels_named_by_branches_cannot_be_removed() -> None:
    module, fn, b = small()
    target = next(s for s in fn.body.body if isinstance(s, ir.Label) and s.name == "$L__BB0_2")
    with pytest.raises(BuildError, match="still the target of bra"):
        b.remove(target)
    with pytest.raises(BuildError, match="still the target"):
        b.replace(target, ir.Label("$L_other"))
    unused = next(s for s in fn.body.body if isinstance(s, ir.Label) and s.name == "$swp0")
    b.remove(unused)
    assert "$swp0:" not in body_lines(module)


# --------------------------------------------------------------------------
# Fresh names


def test_fresh_names_avoid_ranges_params_labels_and_block_names() -> None:
    module, fn, b = small()
    # %swr<2> declares %swr0 and %swr1, and a parameter is called %swr0 too.
    assert b.fresh(".b32") == ir.Register("%swr2")
    assert b.fresh(".b32") == ir.Register("%swr3")
    # The nested block declares %swp0: a top-level %swp0 would be shadowed there.
    assert b.fresh_pred() == ir.Register("%swp1")
    # Labels and module symbols are names too.
    assert b.fresh_label("$swp").name == "$swp1"
    assert b.fresh_label("$swp").name == "$swp2"  # reserved once handed out
    bare = FunctionBuilder(fn, module, prefix="")
    assert bare.fresh(".b32", hint="gsym").name == "gsym1"
    assert FunctionBuilder(fn, module, prefix="%").fresh(".pred", hint="p").name == "%p3"
    assert bare.is_declared("p") and bare.is_declared("%r5") and not bare.is_declared("%r6")
    assert bare.declared_type(ir.Register("%r5")) == ".b32"
    assert bare.declared_type(ir.Register("%tid", "x")) == ".u32"
    round_trips(module)


def test_fresh_declarations_follow_the_leading_declarations() -> None:
    module, fn, b = small()
    regs = [b.fresh(t) for t in (".pred", ".b64", ".f32", ".b16")]
    assert [r.name for r in regs] == ["%swp1", "%swrd0", "%swf0", "%swrs0"]
    decls = fn.body.body[:9]
    assert all(isinstance(s, ir.VarDecl) for s in decls)
    assert [(d.type, d.names[0].name) for d in decls[5:]] == [
        (".pred", "%swp1"),
        (".b64", "%swrd0"),
        (".f32", "%swf0"),
        (".b16", "%swrs0"),
    ]
    assert b.declared_type(regs[2]) == ".f32"
    round_trips(module)
    with pytest.raises(BuildError, match="cannot declare"):
        b.fresh(".texref")
    with pytest.raises(BuildError, match="not a PTX identifier"):
        b.fresh(".b32", hint="a-b")


def test_rollback_restores_the_original_statements() -> None:
    module, fn, b = small()
    original = print_module(module)
    statements = [id(s) for s in fn.body.body]
    instructions = [id(i) for i in fn.instructions()]
    recorder = RecordingCache()
    b.analyses.track(fn, recorder)
    add = find(fn, "add.s32 %r3, %r1, 1;")
    r = b.fresh(".b32")
    new_mov = b.mov(r, 1)
    b.insert_before(add, new_mov)
    copy = b.copy(add)
    b.replace(add, copy)
    b.remove(copy)
    b.hoist(b.position(find(fn, "setp.lt.s32 p, %r1, 4;")).blocks[0].body[0])  # type: ignore[arg-type]
    cfg = b.analyses.get(fn, build_cfg)
    assert print_module(module) != original and b.edits == 5
    b.rollback()
    assert print_module(module) == original
    assert [id(s) for s in fn.body.body] == statements
    assert [id(i) for i in fn.instructions()] == instructions
    assert b.edits == 0 and b.analyses.edits == 0 and not b.analyses.is_current(fn, cfg)
    assert {id(i) for i in recorder.forgotten} >= {id(new_mov), id(copy)}
    b.rollback()  # nothing left to undo
    assert print_module(module) == original
    # A removal that took its .loc along puts both back, in order.
    b.remove(add)
    assert ".loc 1 4 2" not in body_lines(module)
    b.rollback()
    assert print_module(module) == original and [id(s) for s in fn.body.body] == statements


# --------------------------------------------------------------------------
# Building instructions


def test_typed_helpers_build_what_the_table_describes() -> None:
    _, _, b = small()
    r, p, q = b.fresh(".b32"), b.fresh_pred(), b.fresh_pred()
    shfl = b.shfl_sync("down", r, ir.Register("%r1"), 1, 31, pred=p)
    assert format_instruction(shfl) == "shfl.sync.down.b32 \t%swr2|%swp1, %r1, 1, 31, 0xFFFFFFFF;"
    assert isa.defs(shfl) == [r, p]
    setp = b.setp("lt", p, ir.Register("%r1"), 32, negated_dst=q)
    assert format_instruction(setp) == "setp.lt.s32 \t%swp1|%swp2, %r1, 32;"
    assert format_instruction(b.setp("ne", p, r, 0)) == "setp.ne.b32 \t%swp1, %swr2, 0;"
    assert format_instruction(b.activemask(r)) == "activemask.b32 \t%swr2;"
    f = b.fresh(".f32")
    assert format_instruction(b.mov(f, b.f32(1.0))) == "mov.f32 \t%swf0, 0f3F800000;"
    sel = b.selp(f, f, ir.Register("%f1"), ir.Negated(p), guard=ir.Guard(q, negated=True))
    assert format_instruction(sel) == "@!%swp2 selp.f32 \t%swf0, %swf0, %f1, !%swp1;"
    ld = b.ld("global", r, ir.Address(ir.Register("%rd1"), 4), modifiers=[".nc"])
    assert format_instruction(ld) == "ld.global.nc.b32 \t%swr2, [%rd1+4];"
    assert b.instruction("shfl.sync", [".idx", ".b32"], [r, r, 0, 31, -1]).opcode == "shfl"
    label = b.fresh_label()
    assert format_instruction(b.bra(label, guard=p, uni=False)) == f"@%swp1 bra \t{label.name};"


# Each builder call must fail, and ptxas must refuse the same instruction:
# the checks describe ptxas, they do not invent rules.
REFUSED: list[tuple[str, Callable[[FunctionBuilder], object], str, str]] = [
    ("add.b32", lambda b: b.instruction("add", [".b32"], [R(2), R(1), R(1)]), "does not take type .b32",
     "add.b32 %r2, %r1, %r1;"),
    ("shfl.b64", lambda b: b.instruction("shfl.sync", [".down", ".b64"], [RD(2), RD(1), 1, 31, -1]),
     "does not take type .b64", "shfl.sync.down.b64 %rd2, %rd1, 1, 31, -1;"),
    ("shfl two modes",
     lambda b: b.instruction("shfl.sync", [".up", ".down", ".b32"], [R(2), R(1), 1, 31, -1]),
     "exactly one of", "shfl.sync.up.down.b32 %r2, %r1, 1, 31, -1;"),
    ("setp.lt.b32", lambda b: b.setp("lt", P(2), R(1), R(2), ".b32"), "does not compare .b32",
     "setp.lt.b32 %p2, %r1, %r2;"),
    ("setp bool without c", lambda b: b.instruction("setp", [".lt", ".and", ".s32"], [P(2), R(1), R(2)]),
     "exactly when", "setp.lt.and.s32 %p2, %r1, %r2;"),
    ("operand count", lambda b: b.instruction("add", [".s32"], [R(2), R(1)]), "takes 3 operands",
     "add.s32 %r2, %r1;"),
    ("address for value", lambda b: b.instruction("add", [".s32"], [R(2), R(1), ir.Address(RD(1))]),
     "cannot be an address", "add.s32 %r2, %r1, [%rd1];"),
    ("value for address", lambda b: b.instruction("ld", [".global", ".u32"], [R(2), RD(1)]),
     "must be an address", "ld.global.u32 %r2, %rd1;"),
    ("write a literal", lambda b: b.instruction("mov", [".u32"], [5, R(1)]), "must be a register",
     "mov.u32 5, %r1;"),
    ("write %tid", lambda b: b.instruction("mov", [".u32"], [ir.Register("%tid", "x"), R(1)]),
     "must be a register", "mov.u32 %tid.x, %r1;"),
    ("f32 register as s32", lambda b: b.instruction("add", [".s32"], [R(2), F(1), R(1)]), "%f1 is .f32",
     "add.s32 %r2, %f1, %r1;"),
    ("u32 register as f32", lambda b: b.mov(F(1), U(1), ".f32"), "%u1 is .u32", "mov.f32 %f1, %u1;"),
    ("64 for 32", lambda b: b.add(R(2), R(1), RD(1)), "%rd1 is .b64", "add.s32 %r2, %r1, %rd1;"),
    ("wide float load", lambda b: b.ld("global", FD(1), ir.Address(RD(1)), ".f32"), "%fd1 is .f64",
     "ld.global.f32 %fd1, [%rd1];"),
    ("int literal as f32", lambda b: b.add(F(2), F(1), 1), "does not fit a .f32", "add.f32 %f2, %f1, 1;"),
    ("f32 literal as u32", lambda b: b.mov(R(1), b.f32(1.0), ".u32"), "does not fit a .u32",
     "mov.u32 %r1, 0f3F800000;"),
    ("mul without half", lambda b: b.instruction("mul", [".s32"], [R(2), R(1), R(1)]), ".lo .hi .wide",
     "mul.s32 %r2, %r1, %r1;"),
    ("mul.wide.u64", lambda b: b.instruction("mul", [".wide", ".u64"], [RD(2), RD(1), RD(1)]),
     "16- or 32-bit", "mul.wide.u64 %rd2, %rd1, %rd1;"),
    ("rounded integer add", lambda b: b.instruction("add", [".rn", ".s32"], [R(2), R(1), R(1)]),
     "no rounding", "add.rn.s32 %r2, %r1, %r1;"),
    ("selp.pred", lambda b: b.selp(P(1), P(2), P(2), P(2)), "does not take type .pred",
     "selp.pred %p1, %p2, %p2, %p2;"),
    ("%tid without .x", lambda b: b.mov(R(1), ir.Register("%tid")), "selector", "mov.u32 %r1, %tid;"),
    ("%clock64 in 32 bits", lambda b: b.mov(R(1), ir.Register("%clock64"), ".u32"), "%clock64 is .u64",
     "mov.u32 %r1, %clock64;"),
    ("undeclared", lambda b: b.mov(R(1), ir.Register("%r99")), "not declared", "mov.b32 %r1, %r99;"),
    ("unknown modifier", lambda b: b.instruction("add", [".s32", ".up"], [R(2), R(1), R(1)]),
     "does not take .up", "add.s32.up %r2, %r1, %r1;"),
    ("two comparisons", lambda b: b.instruction("setp", [".lt", ".gt", ".s32"], [P(1), R(1), R(1)]),
     "more than one compare", "setp.lt.gt.s32 %p1, %r1, %r1;"),
    ("unknown label", lambda b: b.bra("$L_nowhere"), "names nothing", "bra $L_nowhere;"),
]  # fmt: skip


# Operands for the table above, named like the PTX they stand for.
def R(n: int) -> ir.Register:
    return ir.Register(f"%r{n}")


def RD(n: int) -> ir.Register:
    return ir.Register(f"%rd{n}")


def F(n: int) -> ir.Register:
    return ir.Register(f"%f{n}")


def FD(n: int) -> ir.Register:
    return ir.Register(f"%fd{n}")


def U(n: int) -> ir.Register:
    return ir.Register(f"%u{n}")


def P(n: int) -> ir.Register:
    return ir.Register(f"%p{n}")


PROBE = """\
.version 8.0
.target sm_80
.address_size 64
.visible .entry probe(.param .u64 a)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<4>;
	.reg .f64 %fd<4>;
	.reg .u32 %u<4>;
	ld.param.u64 %rd1, [a];
	{line}
	ret;
}}
"""


def test_probe_kernel_assembles_as_is() -> None:
    """The refused instructions below are checked in this kernel; it must be fine without them."""
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas not found on PATH")
    assert assemble(PROBE.format(line=""), "sm_80").returncode == 0


@pytest.mark.parametrize("name, build, message, line", REFUSED, ids=[r[0] for r in REFUSED])
def test_builder_refuses_what_ptxas_refuses(
    name: str, build: Callable[[FunctionBuilder], object], message: str, line: str
) -> None:
    module = parse_ptx(PROBE.format(line=""), "probe.ptx")
    b = FunctionBuilder(module.kernels[0], module)
    with pytest.raises(BuildError) as info:
        build(b)
    assert message in str(info.value), str(info.value)
    assert b.edits == 0
    if shutil.which("ptxas") is not None:
        result = assemble(PROBE.format(line=line), "sm_80")
        assert result.returncode != 0, f"ptxas accepts {line!r}, which the builder refuses"


@needs_ptxas
def test_builder_refuses_an_opcode_newer_than_the_module() -> None:
    older = PROBE.replace(".version 8.0", ".version 7.5").replace("sm_80", "sm_75")
    module = parse_ptx(older.format(line=""), "older.ptx")
    b = FunctionBuilder(module.kernels[0], module)
    with pytest.raises(BuildError, match=r"bmsk needs PTX ISA 7\.6; the module is \.version 7\.5"):
        b.instruction("bmsk", [".clamp", ".b32"], [R(1), R(2), R(3)])
    assert b.activemask(R(1)).opcode == "activemask"  # PTX 6.2: fine
    assert assemble(older.format(line="bmsk.clamp.b32 %r1, %r2, %r3;"), "sm_75").returncode != 0
    assert assemble(older.format(line="activemask.b32 %r1;"), "sm_75").returncode == 0


def test_builder_refuses_text_and_bools() -> None:
    _, _, b = small()
    with pytest.raises(BuildError, match="is text"):
        b.instruction("mov", [".u32"], [R(1), "%r2"])  # type: ignore[list-item]
    with pytest.raises(BuildError, match="bool"):
        b.mov(R(1), True)
    with pytest.raises(BuildError, match="with their dot"):
        b.instruction("mov", ["u32"], [R(1), R(2)])
    with pytest.raises(BuildError, match="unknown PTX opcode"):
        b.instruction("frobnicate", [], [])


def corpus_sample(corpus: list[CorpusFile]) -> list[CorpusFile]:
    return [f for f in corpus if f.compiler != "gcc"]


def test_builder_accepts_every_instruction_compilers_wrote(corpus: list[CorpusFile]) -> None:
    """No false alarms: each instruction of the corpus passes `FunctionBuilder.check`
    (its copy does too), so the checks can only be stricter where ptxas is."""
    checked = 0
    for entry in [*corpus, None]:
        path = JACOBI if entry is None else entry.ptx_path
        module = parse_ptx(path.read_text(), str(path))
        for fn in module.functions:
            if fn.body is None:
                continue
            b = FunctionBuilder(fn, module)
            for inst in fn.instructions():
                b.check(inst)
                checked += 1
    assert checked > 20_000


def test_builder_accepts_every_instruction_gcc_wrote(gcc_corpus: list[CorpusFile]) -> None:
    """The same for GCC's OpenACC/OpenMP PTX (``.version`` 6.0, registers named
    like parameters, one declaration a register)."""
    checked = 0
    for entry in gcc_corpus:
        module = parse_ptx(entry.ptx_path.read_text(), str(entry.ptx_path))
        for fn in module.functions:
            if fn.body is not None:
                b = FunctionBuilder(fn, module)
                for inst in fn.instructions():
                    b.check(inst)
                    checked += 1
    assert checked > 1_000


# --------------------------------------------------------------------------
# Invalidation


class RecordingCache:
    def __init__(self) -> None:
        self.forgotten: list[ir.Instruction] = []

    def forget(self, instructions: Any) -> None:
        self.forgotten.extend(instructions)


def test_edits_invalidate_the_cfg_and_instruction_caches() -> None:
    _, fn, b = small()
    analyses = b.analyses
    cfg = analyses.get(fn, build_cfg)
    assert analyses.get(fn, build_cfg) is cfg and analyses.is_current(fn, cfg)
    epoch = b.epoch
    recorder = RecordingCache()
    analyses.track(fn, recorder)

    add = find(fn, "add.s32 %r3, %r1, 1;")
    b.insert_before(add, b.mov(ir.Register("%r4"), 1))
    assert b.epoch == epoch + 1 and not analyses.is_current(fn, cfg)
    fresh_cfg = analyses.get(fn, build_cfg)
    assert fresh_cfg is not cfg
    assert len(fresh_cfg.instructions) == len(cfg.instructions) + 1

    replacement = b.copy(add)
    b.replace(add, replacement)
    assert recorder.forgotten == [add]
    assert not analyses.is_current(fn, fresh_cfg)
    b.remove(replacement)
    assert recorder.forgotten == [add, replacement]
    assert b.edits == 3 and analyses.edits == 3
    # Another function's results are untouched by edits to this one.
    other = ir.Function(".func", "other", [], body=ir.Block([]))
    other_cfg = analyses.get(other, build_cfg)
    b.fresh(".b32")
    assert analyses.is_current(other, other_cfg)


def test_semantics_forgets_removed_instructions() -> None:
    _, fn, b = small()
    machine = type("NoMachine", (), {"dom": None})()
    sem = Semantics(machine)  # type: ignore[arg-type]
    add = find(fn, "add.s32 %r3, %r1, 1;")
    sem._table_facts(add)
    assert id(add) in sem._facts
    b.analyses.track(fn, sem)
    b.remove(add)
    assert id(add) not in sem._facts


# --------------------------------------------------------------------------
# Passes


class ShuffleNeighbourPass(FunctionPass):
    """Gives each 32-bit global load a shuffle of its value from the next lane and
    a select of it where that lane exists: the shape shuffle synthesis emits."""

    name = "shuffle-neighbour"

    def run_on_function(self, fn: ir.Function, b: FunctionBuilder) -> dict[str, Any]:
        loads = [
            i
            for i in fn.instructions()
            if isa.is_load(i)
            and isa.state_space(i) == ".global"
            and isa.vector_width(i) == 1
            and isa.type_bits(isa.instruction_type(i)) == 32
            and isinstance(i.operands[0], ir.Register)
            and i.guard is None
        ]
        for load in loads:
            dst = load.operands[0]
            assert isinstance(dst, ir.Register)
            value, ok, out = b.fresh(".b32"), b.fresh_pred(), b.fresh(".b32")
            mask = b.fresh(".b32", "mask")
            b.insert_after(
                load,
                [
                    b.activemask(mask),
                    b.shfl_sync("down", value, dst, 1, 31, mask, pred=ok),
                    b.selp(out, value, dst, ok),
                ],
            )
        return {"shuffles": len(loads)}


class NothingPass(FunctionPass):
    name = "nothing"

    def run_on_function(self, fn: ir.Function, b: FunctionBuilder) -> None:
        b.analyses.get(fn, build_cfg)  # analyses are not edits


class SilentEditor:
    """A module pass that edits through the builder but claims it did not."""

    name = "silent"

    def run(self, module: ir.Module, analyses: AnalysisCache) -> PassResult:
        fn = module.kernels[0]
        FunctionBuilder(fn, module, analyses).fresh(".b32")
        return PassResult(False)


@needs_ptxas
def test_function_pass_output_round_trips_and_assembles() -> None:
    text = JACOBI.read_text()
    result = run_pipeline(text, str(JACOBI), [ShuffleNeighbourPass(), NothingPass()])
    records = {r["name"]: r for r in result.passes}
    assert records["shuffle-neighbour"]["changed"] and records["shuffle-neighbour"]["shuffles"] == 5
    assert not records["nothing"]["changed"] and records["nothing"]["edits"] == 0
    assert result.changed
    assert result.text.count("shfl.sync.down.b32") == 5
    assert print_module(parse_ptx(result.text)) == result.text
    done = assemble(result.text, "sm_90")
    assert done.returncode == 0, done.stderr

    unchanged = run_pipeline(text, str(JACOBI), [NothingPass()])
    assert not unchanged.changed and unchanged.text == print_module(parse_ptx(text))


def test_function_pass_past_the_deadline_skips_functions_and_edits_nothing() -> None:
    module = parse_ptx(JACOBI.read_text(), str(JACOBI))
    before = print_module(module)
    result = ShuffleNeighbourPass().run(module, AnalysisCache(), Deadline(time.monotonic() - 1))
    assert not result.changed and result.stats["functions"] == 0
    assert result.stats["skipped"] == 1 and result.stats["skipped_names"] == [module.kernels[0].name]
    assert print_module(module) == before
    # Through the pipeline: a deadline already past leaves the file as it was.
    piped = run_pipeline(before, str(JACOBI), [ShuffleNeighbourPass()], deadline=time.monotonic() - 1)
    assert not piped.changed and piped.text == before


class FailsOnSecondLoad(ShuffleNeighbourPass):
    """Edits, then asks the builder for something impossible (a bug in a pass)."""

    name = "fails"

    def run_on_function(self, fn: ir.Function, b: FunctionBuilder) -> dict[str, Any]:
        stats = super().run_on_function(fn, b)
        b.instruction("shfl.sync", [".down", ".b64"], [b.fresh(".b64"), RD(1), 1, 31, -1])
        return stats


def test_function_pass_rolls_back_a_function_it_failed_on() -> None:
    text = JACOBI.read_text()
    result = run_pipeline(text, str(JACOBI), [FailsOnSecondLoad()])
    (record,) = [r for r in result.passes if r["name"] == "fails"]
    assert record["failed"] == 1 and "shfl does not take type .b64" in record["failed_names"][0]
    assert not record["changed"] and record["edits"] == 0 and not result.changed
    assert result.text == print_module(parse_ptx(text))
    strict = FailsOnSecondLoad()
    strict.strict = True
    with pytest.raises(BuildError, match=r"\.b64"):
        strict.run(parse_ptx(text), AnalysisCache())


def test_pipeline_reports_edits_a_pass_does_not_admit() -> None:
    result = run_pipeline(JACOBI.read_text(), str(JACOBI), [SilentEditor()])
    assert result.changed and ".reg .b32 \t%swr0;" in result.text


# --------------------------------------------------------------------------
# Property: random edits keep the module printable, parseable and assemblable

# Small real kernels with nested blocks (inline asm), .loc lines, branches, an
# LLVM-built file and a relocatable one.
PROPERTY_FILES = (
    "inline_asm.sm_90",
    "stencil2d.sm_90.lineinfo",
    "control_flow.sm_90",
    "warp_shuffle.sm_90",
    "warp_shuffle.ll.sm_86",
    "calls.sm_80.rdc",
)
EDIT_TYPES = (".b32", ".f32", ".b64", ".pred", ".b16")


def _registers_of(b: FunctionBuilder, fn: ir.Function, typ: str) -> list[ir.Register]:
    """Registers of exactly ``typ`` that the function's top level declares."""
    out = []
    for stmt in fn.body.body:
        if isinstance(stmt, ir.VarDecl) and stmt.space == ".reg" and stmt.type == typ and not stmt.vector:
            for vn in stmt.names:
                if vn.count is None:
                    out.append(ir.Register(vn.name))
                else:
                    out.extend(ir.Register(f"{vn.name}{i}") for i in range(min(vn.count, 64)))
    return out


def _source(data: st.DataObject, b: FunctionBuilder, fn: ir.Function, typ: str) -> ir.Operand:
    """A register of ``typ`` or a literal that fits it."""
    regs = _registers_of(b, fn, typ)
    if regs and data.draw(st.booleans()):
        return data.draw(st.sampled_from(regs))
    if typ == ".pred":
        return ir.IntImm(data.draw(st.integers(0, 1)))
    if typ == ".f32":
        return b.f32(data.draw(st.floats(-1e6, 1e6, allow_nan=False, width=32)))
    bits = isa.type_bits(typ) or 32
    return ir.IntImm(data.draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)))


def _anchor(data: st.DataObject, fn: ir.Function, *, after: bool) -> ir.Instruction | None:
    insts = [i for i in fn.instructions() if not (after and (isa.is_branch(i) or isa.is_return(i)))]
    return data.draw(st.sampled_from(insts)) if insts else None


def _place(data: st.DataObject, b: FunctionBuilder, fn: ir.Function, new: list[ir.Statement]) -> None:
    after = data.draw(st.booleans())
    anchor = _anchor(data, fn, after=after)
    assert anchor is not None
    (b.insert_after if after else b.insert_before)(anchor, new)


def _edit_insert(data: st.DataObject, b: FunctionBuilder, fn: ir.Function) -> str:
    typ = data.draw(st.sampled_from(EDIT_TYPES))
    kind = data.draw(st.sampled_from(["mov", "add", "setp", "selp", "shfl"]))
    if typ == ".pred" and kind in ("add", "selp"):
        kind = "mov"
    if kind == "mov":
        new: list[ir.Statement] = [b.mov(b.fresh(typ), _source(data, b, fn, typ))]
    elif kind == "add":
        new = [b.add(b.fresh(typ), _source(data, b, fn, typ), _source(data, b, fn, typ))]
    elif kind == "setp":
        cmp = data.draw(st.sampled_from(["eq", "ne", "lt", "ge"]))
        typ = ".b32" if typ == ".pred" else typ
        ctype = {".b32": ".s32", ".b64": ".s64", ".b16": ".s16", ".f32": ".f32"}[typ]
        a = data.draw(st.sampled_from(_registers_of(b, fn, typ) or [b.fresh(typ)]))
        new = [b.setp(cmp, b.fresh_pred(), a, _source(data, b, fn, typ), ctype)]
    elif kind == "selp":
        pred = _source(data, b, fn, ".pred")
        if not isinstance(pred, ir.Register):
            pred = b.fresh_pred()
        new = [b.selp(b.fresh(typ), _source(data, b, fn, typ), _source(data, b, fn, typ), pred)]
    else:
        src = data.draw(st.sampled_from(_registers_of(b, fn, ".b32") or [b.fresh(".b32")]))
        mode = data.draw(st.sampled_from(["up", "down", "bfly", "idx"]))
        lane = data.draw(st.integers(0, 31))
        mask = b.fresh(".b32", "mask")
        pred = b.fresh_pred() if data.draw(st.booleans()) else None
        clamp = 0 if mode == "up" else 31
        new = [b.activemask(mask), b.shfl_sync(mode, b.fresh(".b32"), src, lane, clamp, mask, pred=pred)]
    _place(data, b, fn, new)
    return f"insert {kind}{typ}"


def _edit_remove_dead(data: st.DataObject, b: FunctionBuilder, fn: ir.Function) -> str:
    """Remove an instruction whose results nothing reads (and that touches no memory)."""
    read = {r.name for i in fn.instructions() for r in isa.uses(i)}
    dead = [
        i
        for i in fn.instructions()
        if isa.defs(i)
        and not isa.memory_effect(i)
        and not isa.is_call(i)
        and not isa.lookup(i.opcode).warp_collective
        and not isa.writes_carry(i)
        and all(r.name not in read for r in isa.defs(i))
    ]
    if not dead:
        return "remove: nothing dead"
    b.remove(data.draw(st.sampled_from(dead)))
    return "remove dead"


def _edit_replace(data: st.DataObject, b: FunctionBuilder, fn: ir.Function) -> str:
    """Replace an instruction by an equal copy, or an add by its commuted form."""
    insts = list(fn.instructions())
    inst = data.draw(st.sampled_from(insts))
    if inst.opcode == "add" and len(inst.operands) == 3 and not isa.writes_carry(inst):
        d, x, y = inst.operands
        new = b.copy(inst, operands=[d, y, x])
    else:
        new = b.copy(inst)
    b.replace(inst, new)
    return "replace"


def _edit_duplicate(data: st.DataObject, b: FunctionBuilder, fn: ir.Function) -> str:
    """Compute an instruction's single result a second time, into a fresh register."""
    candidates = []
    for i in fn.instructions():
        defs = isa.typed_defs(i)
        if (
            len(defs) == 1
            and isinstance(i.operands[0], ir.Register)
            and i.operands[0] == defs[0][0]
            and b.declared_type(defs[0][0]) is not None
            and not isa.is_atomic(i)
            and not isa.is_call(i)
            and not isa.writes_carry(i)
            and not isa.reads_carry(i)
            and not isa.lookup(i.opcode).warp_collective
            and not isa.is_branch(i)
        ):
            candidates.append(i)
    if not candidates:
        return "duplicate: nothing"
    inst = data.draw(st.sampled_from(candidates))
    fresh = b.fresh(b.declared_type(inst.operands[0]))  # type: ignore[arg-type]
    b.insert_after(inst, b.copy(inst, operands=[fresh, *inst.operands[1:]]))
    return "duplicate"


EDITS = (_edit_insert, _edit_remove_dead, _edit_replace, _edit_duplicate)


@pytest.fixture(scope="module")
def property_files(corpus: list[CorpusFile]) -> list[tuple[str, str, str, tuple[str, ...]]]:
    by_name = {f.name: f for f in corpus}
    files = [("jacobi", JACOBI.read_text(), "sm_90", ())]
    for name in PROPERTY_FILES:
        entry = by_name[name]
        files.append((name, entry.ptx_path.read_text(), entry.arch, entry.ptxas_flags))
    return files


@needs_ptxas
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_edits_keep_the_module_printable_parseable_and_assemblable(
    property_files: list[tuple[str, str, str, tuple[str, ...]]], data: st.DataObject
) -> None:
    name, text, arch, flags = data.draw(st.sampled_from(property_files))
    module = parse_ptx(text, name)
    fn = data.draw(st.sampled_from([f for f in module.functions if f.body is not None]))
    # With the bare "%" prefix fresh names are nvcc's own (%r15 after %r<15>),
    # so any name the builder failed to see would be declared twice.
    b = FunctionBuilder(fn, module, prefix=data.draw(st.sampled_from(["%", "%sw"])))
    log = [data.draw(st.sampled_from(EDITS))(data, b, fn) for _ in range(data.draw(st.integers(1, 8)))]
    printed = round_trips(module)
    result = assemble(printed, arch, flags)
    assert result.returncode == 0, f"{name} after {log}: {result.stderr}"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_edits_round_trip_through_the_printer(
    property_files: list[tuple[str, str, str, tuple[str, ...]]], data: st.DataObject
) -> None:
    """The same edits, more of them, without ptxas: print and parse back; then
    roll them back to the very statements the module had."""
    name, text, _, _ = data.draw(st.sampled_from(property_files))
    module = parse_ptx(text, name)
    fn = data.draw(st.sampled_from([f for f in module.functions if f.body is not None]))
    # With the bare "%" prefix fresh names are nvcc's own (%r15 after %r<15>),
    # so any name the builder failed to see would be declared twice.
    b = FunctionBuilder(fn, module, prefix=data.draw(st.sampled_from(["%", "%sw"])))
    before = [id(i) for i in fn.instructions()]
    for _ in range(data.draw(st.integers(1, 20))):
        data.draw(st.sampled_from(EDITS))(data, b, fn)
    round_trips(module)
    b.rollback()
    assert module == parse_ptx(text, name) and [id(i) for i in fn.instructions()] == before


def test_the_module_index_follows_the_items_it_was_taken_of() -> None:
    """`ir.Module.index`: names, definitions, aliases and ``.file`` paths
    taken once, and again when the module's list of items is another list
    or another length (a copy made with `dataclasses.replace`, a pass that
    builds a new list)."""
    import dataclasses

    from ptxasw.ir.builder import copy_function
    from ptxasw.parser import parse_ptx

    text = """.version 8.0
.target sm_80
.address_size 64
.file 1 "k.cu"
.global .u32 counter;
.func helper;
.func helper
{
    ret;
}
.alias other, helper;
.visible .entry k()
{
    call helper;
    ret;
}
"""
    module = parse_ptx(text, "index.ptx")
    index = module.index()
    assert module.index() is index
    assert {"counter", "helper", "k"} <= index.names
    assert module.function("helper").body is None  # the first of the name: the declaration
    assert index.definitions["helper"].body is not None
    assert index.aliases == {"other": "helper"} and index.files == {1: "k.cu"}
    assert [fn.name for fn in module.kernels] == ["k"]
    twin, copy, _ = copy_function(module, module.function("k"))
    assert copy.function("k") is twin and module.function("k") is not twin
    fewer = dataclasses.replace(module, items=[i for i in module.items if not isinstance(i, ir.Alias)])
    assert fewer.index().aliases == {} and module.index().aliases == {"other": "helper"}
    module.items.append(ir.Alias("again", "helper"))
    assert module.index() is not index and module.index().aliases["again"] == "helper"
