"""`parser.outline`: with ``-k``, only the kernels asked for are parsed.

Each kernel parsed from the blanked text must be the kernel of the whole
parse, at the same positions; whenever the outline cannot be sure of a
kernel's lines it must say so (None) and the whole file is parsed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw import ir
from ptxasw.cli import main as cli
from ptxasw.parser import parse_ptx, read_kernels
from ptxasw.parser.outline import kernel_spans, select_kernels

# nvcc's shape: "// .globl NAME" comments, braces in comments, a device
# function both kernels call, a module variable with a brace initialiser.
NVCC = r"""
.version 8.0
.target sm_80
.address_size 64

.global .align 4 .b32 table[3] = {1, 2, 3};
// a comment with a brace { that is not one

.func (.param .b32 ret) twice(.param .b32 x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [ret], %r2;
    ret;
}

    // .globl	first
.visible .entry first(
    .param .u64 p
)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    /* } a closing brace in a block comment */
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {
    .reg .b32 %inner;
    mov.u32 %inner, %r1;
    }
    ld.global.u32 %r2, [%rd2];
    { // a call in a scope of its own
    .param .b32 a;
    .param .b32 r;
    st.param.b32 [a], %r2;
    call.uni (r), twice, (a);
    ld.param.b32 %r3, [r];
    }
    st.global.u32 [%rd2+4], %r3;
    ret;
}
    // .globl	second
.visible .entry second(
    .param .u64 p
)
.maxntid 128, 1, 1
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.u32 %r1, [%rd2+8];
    st.global.u32 [%rd2+12], %r1;
    ret;
}
"""

# GCC's nvptx shape: a declaration of each kernel before its definition.
GCC = r"""
.version 7.0
.target sm_70
.address_size 64

// BEGIN FUNCTION DECL: a$_omp_fn$0
.entry a$_omp_fn$0 (.param.u64 %in_ar0);

// BEGIN FUNCTION DEF: a$_omp_fn$0
.entry a$_omp_fn$0 (.param.u64 %in_ar0)
{
	.reg.u64 %ar0;
	ld.param.u64 %ar0, [%in_ar0];
	ret;
}

// BEGIN FUNCTION DECL: b$_omp_fn$0
.entry b$_omp_fn$0 (.param.u64 %in_ar0);

// BEGIN FUNCTION DEF: b$_omp_fn$0
.entry b$_omp_fn$0 (.param.u64 %in_ar0)
{
	.reg.u64 %ar0;
	ld.param.u64 %ar0, [%in_ar0];
	ret;
}
"""


# The device functions each kernel above reaches.
CALLS = {"first": ["twice"]}

# Device functions reached through a chain of calls, through a ``mov`` of
# their address, and not at all; GCC-style declarations of each.
FUNCS = r"""
.version 7.0
.target sm_70
.address_size 64

// BEGIN FUNCTION DECL: leaf
.func (.param .u32 %value_out) leaf (.param .u32 %in_ar0);
// BEGIN FUNCTION DECL: middle
.func (.param .u32 %value_out) middle (.param .u32 %in_ar0);
// BEGIN FUNCTION DECL: pointed
.func pointed (.param .u64 %in_ar0);
// BEGIN FUNCTION DECL: unused
.func unused;

.func (.param .u32 %value_out) leaf (.param .u32 %in_ar0)
{
	.reg.u32 %r;
	ld.param.u32 %r, [%in_ar0];
	st.param.u32 [%value_out], %r;
	ret;
}

.func (.param .u32 %value_out) middle (.param .u32 %in_ar0)
{
	.reg.u32 %r;
	ld.param.u32 %r, [%in_ar0];
	{
		.param .u32 %out;
		.param .u32 %in;
		st.param.u32 [%in], %r;
		call (%out), leaf, (%in);
		ld.param.u32 %r, [%out];
	}
	st.param.u32 [%value_out], %r;
	ret;
}

.func pointed (.param .u64 %in_ar0)
{
	ret;
}

.func unused
{
	ret;
}

.entry calls (.param.u64 %in_ar0)
{
	.reg.u32 %r;
	mov.u32 %r, 7;
	{
		.param .u32 %out;
		.param .u32 %in;
		st.param.u32 [%in], %r;
		call (%out), middle, (%in);
		ld.param.u32 %r, [%out];
	}
	ret;
}

.entry points (.param.u64 %in_ar0)
{
	.reg.u64 %p;
	mov.u64 %p, pointed;
	ret;
}
"""


def test_device_functions_stay_when_something_kept_names_them() -> None:
    whole = parse_ptx(FUNCS)
    for kernel, reached in (("calls", ["leaf", "middle"]), ("points", ["pointed"])):
        selected = select_kernels(FUNCS, {kernel})
        assert selected is not None
        alone = parse_ptx(selected[0])
        defined = sorted(f.name for f in alone.functions if not f.is_kernel and f.body is not None)
        assert defined == reached
        (k,) = alone.kernels
        assert k == next(f for f in whole.kernels if f.name == kernel)
        assert selected[0].count("\n") == FUNCS.count("\n")


@pytest.mark.parametrize("text", [NVCC, GCC], ids=["nvcc", "gcc"])
def test_each_kernel_alone_parses_as_in_the_whole_file(text: str) -> None:
    whole = parse_ptx(text)
    names = [k.name for k in whole.kernels]
    assert len(names) == 2
    for name in names:
        selected = select_kernels(text, {name})
        assert selected is not None
        kept, every = selected
        assert every == names
        assert kept.count("\n") == text.count("\n")  # every position stays
        alone = parse_ptx(kept)
        assert [k.name for k in alone.kernels] == [name]
        (kernel,) = alone.kernels
        original = next(k for k in whole.kernels if k.name == name)
        assert kernel == original
        assert [i.loc for i in kernel.instructions()] == [i.loc for i in original.instructions()]
        # A device function stays when the kernel calls it; module variables always.
        assert [f.name for f in alone.functions if not f.is_kernel] == CALLS.get(name, [])
        assert [i for i in alone.items if isinstance(i, ir.VarDecl)] == [
            i for i in whole.items if isinstance(i, ir.VarDecl)
        ]


def test_declarations_are_spans_of_their_own() -> None:
    spans = kernel_spans(GCC)
    assert spans is not None
    assert [(s.name, s.defined) for s in spans] == [
        ("a$_omp_fn$0", False),
        ("a$_omp_fn$0", True),
        ("b$_omp_fn$0", False),
        ("b$_omp_fn$0", True),
    ]


@pytest.mark.parametrize(
    "text",
    [
        # a kernel that shares its first line with the end of another
        NVCC.replace("}\n    // .globl\tsecond\n.visible .entry second(", "} .visible .entry second("),
        # one that shares its last line with the next item
        NVCC.replace("    ret;\n}\n    // .globl\tsecond", "    ret;\n} .global .b32 x;\n// .globl\tsecond"),
        # unbalanced braces
        NVCC + "\n}\n",
        # a kept kernel takes the address of a blanked one (a device-side launch)
        NVCC.replace("mov.u32 %r1, %tid.x;", "mov.u64 %rd3, second;\n    mov.u32 %r1, %tid.x;"),
    ],
    ids=["shared-first-line", "shared-last-line", "unbalanced", "names-a-blanked-kernel"],
)
def test_the_outline_refuses_what_it_cannot_be_sure_of(text: str) -> None:
    assert select_kernels(text, {"first"}) is None


def test_a_name_that_is_not_a_kernel_is_left_to_the_full_parse() -> None:
    assert select_kernels(NVCC, {"twice"}) is None
    assert select_kernels(NVCC, {"third"}) is None


def test_trace_k_prints_what_the_whole_parse_prints(tmp_path: Path) -> None:
    path = tmp_path / "two.ptx"
    path.write_text(NVCC)
    module, every = read_kernels(str(path), ["second"])
    assert every == ["first", "second"]
    assert [k.name for k in module.kernels] == ["second"]
    runner = CliRunner()
    alone = runner.invoke(cli, ["trace", "-k", "second", str(path)])
    assert alone.exit_code == 0, alone.output
    both = runner.invoke(cli, ["trace", str(path)])
    assert both.exit_code == 0, both.output
    text = alone.output.split(", 0.")[0]  # the header line ends in the time
    assert text in both.output
    assert "LD.global.32" in alone.output and "second" in alone.output
    # A name that is no kernel of the file: the error lists the file's kernels.
    missing = runner.invoke(cli, ["trace", "-k", "third", str(path)])
    assert missing.exit_code != 0
    assert "first" in missing.output and "second" in missing.output


def test_called_only_keeps_the_bodies_of_called_functions_and_declares_the_rest() -> None:
    # FUNCS declares every function apart (GCC's shape): ``pointed``, whose
    # address ``points`` takes, keeps that declaration and loses its body.
    whole = parse_ptx(FUNCS)
    for kernel, called in (("calls", ["leaf", "middle"]), ("points", [])):
        selected = select_kernels(FUNCS, {kernel}, called_only=True)
        assert selected is not None
        alone = parse_ptx(selected[0])
        assert sorted(f.name for f in alone.functions if not f.is_kernel and f.body is not None) == called
        assert selected[0].count("\n") == FUNCS.count("\n")
        (k,) = alone.kernels
        assert k == next(f for f in whole.kernels if f.name == kernel)
    kept = select_kernels(FUNCS, {"points"}, called_only=True)
    assert kept is not None
    assert "pointed (.param .u64 %in_ar0);" in kept[0]
    assert ".func unused" not in kept[0]


# clang's OpenMP shape: the kernel hands its parallel region, defined once
# with no declaration apart, to the runtime by address.
OUTLINED = r"""
.version 8.0
.target sm_80
.address_size 64

.extern .func __kmpc_parallel_51
(
	.param .b64 __kmpc_parallel_51_param_0
)
;
.func region(
	.param .b64 region_param_0
)
{
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [region_param_0];
	ld.global.u64 %rd2, [%rd1];
	st.global.u64 [%rd1+8], %rd2;
	ret;
}

.visible .entry kernel(
	.param .u64 kernel_param_0
)
{
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [kernel_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.u64 %rd3, [%rd2];
	mov.u64 %rd1, region;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	call.uni __kmpc_parallel_51, (param0);
	}
	st.global.u64 [%rd2+8], %rd3;
	ret;
}
"""


def test_called_only_turns_an_address_taken_definition_into_its_declaration(tmp_path: Path) -> None:
    selected = select_kernels(OUTLINED, None, called_only=True)
    assert selected is not None
    kept, every = selected
    assert every == ["kernel"]
    assert kept.count("\n") == OUTLINED.count("\n")
    assert "ld.global.u64 %rd2, [%rd1];" not in kept  # the region's body
    module = parse_ptx(kept)
    region = next(f for f in module.functions if f.name == "region")
    assert region.body is None and [p.name for p in region.params] == ["region_param_0"]
    whole = parse_ptx(OUTLINED)
    assert module.kernels[0] == whole.kernels[0]
    # Without called_only, the body stays: it is named.
    named = select_kernels(OUTLINED, None)
    assert named is not None and "ld.global.u64 %rd2, [%rd1];" in named[0]
    # The trace (which follows direct calls only) says the same either way.
    path = tmp_path / "outlined.ptx"
    path.write_text(OUTLINED)
    out = CliRunner().invoke(cli, ["trace", str(path)])
    assert out.exit_code == 0, out.output
    from ptxasw.emulator.symbolic.executor import analyze_kernel

    expected = analyze_kernel(whole, "kernel").format()
    assert expected.split(", 0.")[0] in out.output
    assert "__kmpc_parallel_51 not followed" in out.output


def test_called_only_keeps_what_a_trampoline_caller_names() -> None:
    # GCC's kernels hand their region to libgomp's gomp_nvptx_main, which the
    # analysis follows into the function argument: that body must stay.
    text = OUTLINED.replace("__kmpc_parallel_51", "gomp_nvptx_main")
    kept = select_kernels(text, None, called_only=True, trampolines=("gomp_nvptx_main",))
    assert kept is not None and "ld.global.u64 %rd2, [%rd1];" in kept[0]
    assert select_kernels(text, None, called_only=True) is not None


def test_called_only_leaves_out_the_debug_sections() -> None:
    # -G builds end in DWARF: most of the file, and nothing the analysis reads.
    dwarf = "\t.section\t.debug_abbrev\n\t{\n.b8 1\n.b8 17\n.b8 1\n\t}\n"
    text = NVCC + dwarf + "\t.section\t.debug_info\n\t{\n.b32 10\n\t}\n"
    selected = select_kernels(text, None, called_only=True)
    assert selected is not None
    kept, _ = selected
    assert kept.count("\n") == text.count("\n")
    assert ".debug_" not in kept and ".b8 17" not in kept
    assert parse_ptx(kept).kernels == parse_ptx(text).kernels
    named = select_kernels(text, None)
    assert named is not None and ".section\t.debug_info" in named[0]


def test_named_finds_the_names_asked_about_as_words_outside_comments() -> None:
    """`_named` is `_words` asked about a few names (which the outline uses
    to check what a kept text still names): a name inside a longer word, or
    only in a comment, is not named; a dotted or bracketed use is."""
    from ptxasw.parser.outline import _named, _words

    text = (
        "call.uni (retval0), helper, (param0);\n"
        "// helper2 and gone only in a comment\n"
        "mov.u64 %rd1, table; ld.global.u32 %r1, [table+4]; /* gone */\n"
        "st.global.u32 [%rd2], %r3; cvta.global.u64 %rd3, helper_x;\n"
    )
    asked = {"helper", "helper2", "gone", "table", "helper_x", "%rd2", "absent"}
    assert _named(text, asked) == asked & _words(text) == {"helper", "table", "helper_x", "%rd2"}
    assert _named(text, set()) == set()
