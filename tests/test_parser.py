"""The front end on hand-written PTX: every construct, its IR, and its round trip."""

from __future__ import annotations

import textwrap

import pytest

from ptxasw import ir
from ptxasw.errors import PtxSyntaxError
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx

HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"


def roundtrip(text: str) -> ir.Module:
    """Parse, print, parse again; the two modules must be equal."""
    module = parse_ptx(text, "t.ptx")
    printed = print_module(module)
    again = parse_ptx(printed, "printed.ptx")
    assert again == module, printed
    # Printing is a fixed point after one round.
    assert print_module(again) == printed
    return module


def body_of(text: str) -> list[ir.Statement]:
    module = roundtrip(HEADER + ".visible .entry k()\n{\n" + textwrap.dedent(text) + "\n}\n")
    body = module.function("k").body
    assert body is not None
    return body.body


def only_instruction(text: str) -> ir.Instruction:
    stmts = [s for s in body_of(text) if isinstance(s, ir.Instruction)]
    assert len(stmts) == 1
    return stmts[0]


def test_module_header_and_globals() -> None:
    module = roundtrip(
        HEADER.replace("sm_90", "sm_90a, debug")
        + textwrap.dedent(
            """
            .file 1 "/tmp/a.cu", 1700000000, 1234
            .file 2 "/usr/include/x.h"
            .const .align 4 .b8 coef[16] = {0, 0, 128, 63, 0, 0, 0, 64};
            .global .align 4 .b8 table[12] = {1, 0, 0, 0, 2};
            .global .align 8 .u64 ptr = generic(table);
            .global .align 8 .u64 ptrs[2] = {generic(table)+4, table};
            .visible .global .attribute(.managed) .align 4 .u32 managed_counter;
            .extern .shared .align 16 .b8 dyn_smem[];
            .global .texref tex0;
            .global .samplerref samp = { filter_mode = nearest, addr_mode_0 = clamp_to_edge };
            .global .f32 arr2d[2][3] = {{1.0, 2.0, 3.0}, {0f3F800000, 0d3FF0000000000000, -1.5}};
            .weak .global .align 4 .u32 weak_one = 0x10 + 3 * (2 - 1);
            .common .global .u32 common_one;
            .global .v4 .f32 vec4;
            .shared::cta .align 8 .b64 cta_scoped;
            .alias aliased, target_fn;
            """
        )
    )
    version = module.items[0]
    assert isinstance(version, ir.Version) and (version.major, version.minor) == (9, 0)
    target = module.items[1]
    assert isinstance(target, ir.Target) and target.targets == ("sm_90a", "debug")
    files = [i for i in module.items if isinstance(i, ir.FileDirective)]
    assert files[0].extra == (1700000000, 1234) and files[1].path == "/usr/include/x.h"
    decls = {d.names[0].name: d for d in module.items if isinstance(d, ir.VarDecl)}
    assert (
        decls["coef"].space == ".const" and decls["coef"].align == 4 and decls["coef"].names[0].array == (16,)
    )
    assert decls["ptr"].names[0].init == ir.CallExpr("generic", (ir.Symbol("table"),))
    assert decls["managed_counter"].linkage == (".visible",)
    assert decls["managed_counter"].attributes == (".attribute(.managed)",)
    assert decls["dyn_smem"].names[0].array == (None,)
    assert decls["samp"].names[0].init == [
        ir.SamplerField("filter_mode", "nearest"),
        ir.SamplerField("addr_mode_0", "clamp_to_edge"),
    ]
    assert decls["arr2d"].names[0].array == (2, 3)
    weak = decls["weak_one"].names[0].init
    # Precedence: 0x10 + (3 * (2 - 1)).
    assert isinstance(weak, ir.BinaryExpr) and weak.op == "+"
    assert isinstance(weak.rhs, ir.BinaryExpr) and weak.rhs.op == "*"
    assert decls["vec4"].vector == ".v4"
    assert decls["cta_scoped"].space == ".shared::cta"
    assert any(isinstance(i, ir.Alias) and i.alias == "aliased" for i in module.items)


def test_functions_params_and_performance_directives() -> None:
    module = roundtrip(
        HEADER
        + textwrap.dedent(
            """
            .extern .func (.param .b32 func_retval0) vprintf
            (
                .param .b64 vprintf_param_0,
                .param .b64 vprintf_param_1
            )
            ;
            .func (.param .align 16 .b8 ret[16]) f(.reg .b32 a, .param .v2 .f32 b) .noreturn
            {
                ret;
            }
            .weak .func g()
            {
                ret;
            }
            .visible .entry k(
                .param .u64 .ptr .global .align 16 k_param_0,
                .param .align 8 .b8 k_param_1[24]
            )
            .maxntid 256, 1, 1
            .minnctapersm 2
            .maxnreg 64
            .explicitcluster
            .reqnctapercluster 2, 1, 1
            .pragma "nounroll";
            {
                ret;
            }
            .entry decl_only(.param .u32 n);
            """
        )
    )
    vprintf = module.function("vprintf")
    assert vprintf.body is None and vprintf.linkage == (".extern",)
    assert vprintf.returns is not None and vprintf.returns[0].name == "func_retval0"
    f = module.function("f")
    assert f.returns is not None and f.returns[0].array == (16,) and f.returns[0].align == 16
    assert f.params[0].space == ".reg" and f.params[1].vector == ".v2"
    assert [d.name for d in f.directives if isinstance(d, ir.PerfDirective)] == [".noreturn"]
    k = module.function("k")
    assert k.is_kernel and k.params[0].ptr_attrs == (".ptr", ".global", ".align 16")
    assert k.params[1].array == (24,)
    directives = [(d.name, d.values) for d in k.directives if isinstance(d, ir.PerfDirective)]
    assert directives == [
        (".maxntid", (256, 1, 1)),
        (".minnctapersm", (2,)),
        (".maxnreg", (64,)),
        (".explicitcluster", ()),
        (".reqnctapercluster", (2, 1, 1)),
    ]
    assert isinstance(k.directives[-1], ir.Pragma)
    assert module.function("decl_only").body is None
    assert [fn.name for fn in module.kernels] == ["k"]


def test_register_declarations_and_nested_scopes() -> None:
    body = body_of(
        """
        .reg .pred %p<5>;
        .reg .b32 %r<13>, %tmp;
        .reg .v4 .f32 %v;
        .local .align 8 .b8 __local_depot0[8];
        .shared .align 4 .b8 smem[1024];
        {
            .reg .pred p;
            .reg .b32 inner;
            setp.ne.s32 p, inner, 0;
            @p bra $L__end;
            {
                .reg .b64 deeper;
            }
        }
        $L__end:
        ret;
        """
    )
    decls = [s for s in body if isinstance(s, ir.VarDecl)]
    assert decls[0].names[0].count == 5 and decls[0].type == ".pred"
    assert [n.name for n in decls[1].names] == ["%r", "%tmp"]
    assert decls[2].vector == ".v4"
    block = next(s for s in body if isinstance(s, ir.Block))
    setp = next(s for s in block.body if isinstance(s, ir.Instruction))
    # A register declared without '%' is still a register where it is used.
    assert setp.operands[0] == ir.Register("p") and setp.operands[1] == ir.Register("inner")
    bra = [s for s in block.body if isinstance(s, ir.Instruction)][1]
    assert bra.guard == ir.Guard(ir.Register("p"))
    assert isinstance(block.body[-1], ir.Block)
    assert isinstance(body[-2], ir.Label) and body[-2].name == "$L__end"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("add.s32 %r1, %r2, -1;", (ir.Register("%r1"), ir.Register("%r2"), ir.IntImm(-1))),
        ("mov.u32 %r1, %tid.x;", (ir.Register("%r1"), ir.Register("%tid", "x"))),
        ("mov.f32 %f1, 0f3F800000;", (ir.Register("%f1"), ir.FloatImm("f", "0f3F800000"))),
        ("mov.f64 %fd1, 0d3FF0000000000000;", (ir.Register("%fd1"), ir.FloatImm("d", "0d3FF0000000000000"))),
        ("mov.f32 %f1, 1.5e3;", (ir.Register("%f1"), ir.FloatImm("dec", "1.5e3"))),
        ("mov.u32 %r1, 0xFFFFFFFF;", (ir.Register("%r1"), ir.IntImm(0xFFFFFFFF))),
        ("mov.u32 %r1, 017;", (ir.Register("%r1"), ir.IntImm(15))),
        ("mov.u32 %r1, 0b101U;", (ir.Register("%r1"), ir.IntImm(5))),
        ("ld.global.f32 %f1, [%rd1+-4];", (ir.Register("%f1"), ir.Address(ir.Register("%rd1"), -4))),
        ("ld.global.f32 %f1, [%rd1 + 0x10];", (ir.Register("%f1"), ir.Address(ir.Register("%rd1"), 16))),
        ("ld.param.u64 %rd1, [k_param_0];", (ir.Register("%rd1"), ir.Address(ir.Symbol("k_param_0")))),
        ("ld.param.b32 %r1, [retval0+0];", (ir.Register("%r1"), ir.Address(ir.Symbol("retval0"), 0))),
        ("ld.global.u32 %r1, [64];", (ir.Register("%r1"), ir.Address(None, 64))),
        ("mov.u64 %rd1, smem;", (ir.Register("%rd1"), ir.Symbol("smem"))),
        ("ld.global.u32 %r1, [sym+4*3];", (ir.Register("%r1"), ir.Address(ir.Symbol("sym"), 12))),
        ("ld.global.u32 %r1, [%rd1-(1<<4)];", (ir.Register("%r1"), ir.Address(ir.Register("%rd1"), -16))),
        ("mov.u64 %rd1, smem+8;", (ir.Register("%rd1"), ir.BinaryExpr("+", ir.Symbol("smem"), ir.IntImm(8)))),
        (
            "setp.lt.s32 %p1|%p2, %r1, 1;",
            (ir.PairOperand(ir.Register("%p1"), ir.Register("%p2")), ir.Register("%r1"), ir.IntImm(1)),
        ),
        (
            "shfl.sync.down.b32 %r11|%p4, %r7, %r9, %r8, %r10;",
            (
                ir.PairOperand(ir.Register("%r11"), ir.Register("%p4")),
                ir.Register("%r7"),
                ir.Register("%r9"),
                ir.Register("%r8"),
                ir.Register("%r10"),
            ),
        ),
        (
            "selp.b32 %r1, %r2, %r3, !%p1;",
            (ir.Register("%r1"), ir.Register("%r2"), ir.Register("%r3"), ir.Negated(ir.Register("%p1"))),
        ),
        (
            "ld.global.v4.f32 {%f1, %f2, _, %f4}, [%rd1];",
            (
                ir.VectorOperand((ir.Register("%f1"), ir.Register("%f2"), ir.Sink(), ir.Register("%f4"))),
                ir.Address(ir.Register("%rd1")),
            ),
        ),
        (
            "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];",
            (
                ir.VectorOperand(tuple(ir.Register(f"%f{i}") for i in range(1, 5))),
                ir.ListOperand(
                    (ir.Symbol("tex0"), ir.VectorOperand((ir.Register("%f5"), ir.Register("%f6"))))
                ),
            ),
        ),
        (
            "mov.u32 %r1, (4*3)+1;",
            (
                ir.Register("%r1"),
                ir.BinaryExpr(
                    "+", ir.ParenExpr(ir.BinaryExpr("*", ir.IntImm(4), ir.IntImm(3))), ir.IntImm(1)
                ),
            ),
        ),
    ],
)
def test_operand_forms(text: str, expected: tuple[ir.Operand, ...]) -> None:
    assert only_instruction(text).operands == expected


def test_guards_and_modifier_order() -> None:
    body = body_of(
        """
        @%p1 bra.uni $L1;
        @!%p2 st.global.u32 [%rd1], %r1;
        $L1:
        ld.f32.global %f1, [%rd1];
        ld.global.f32 %f2, [%rd1];
        """
    )
    insts = [s for s in body if isinstance(s, ir.Instruction)]
    assert insts[0].guard == ir.Guard(ir.Register("%p1"), False)
    assert insts[0].opcode == "bra" and insts[0].modifiers == (".uni",)
    assert insts[1].guard == ir.Guard(ir.Register("%p2"), True)
    # Modifiers keep their source order and mean the same in any order.
    assert insts[2].modifiers == (".f32", ".global")
    assert set(insts[2].modifiers) == set(insts[3].modifiers)


def test_calls_prototypes_and_branch_tables() -> None:
    body = body_of(
        """
        .reg .b32 %r<4>;
        .reg .b64 %rd<3>;
        { // callseq 0, 0
        .param .b64 param0;
        st.param.b64 [param0+0], %rd1;
        .param .b32 retval0;
        prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);
        call (retval0),
        %rd2,
        (
        param0
        )
        , prototype_0;
        call.uni (retval0), vprintf, (param0, param1);
        call.uni noargs, ();
        call.uni (retval0), noparams;
        ld.param.b32 %r1, [retval0+0];
        }
        $L_brx_0: .branchtargets $L__BB0_1, $L__BB0_2;
        brx.idx %r2, $L_brx_0;
        $L__BB0_1:
        $L__BB0_2:
        $L_ct: .calltargets f1, f2;
        ret;
        """
    )
    block = next(s for s in body if isinstance(s, ir.Block))
    proto = next(s for s in block.body if isinstance(s, ir.CallPrototype))
    assert proto.label == "prototype_0"
    assert proto.returns is not None and proto.returns[0].type == ".b32"
    assert proto.params[0].type == ".b64" and proto.params[0].name == "_"
    calls = [s for s in block.body if isinstance(s, ir.Instruction) and s.opcode == "call"]
    assert calls[0].operands == (
        ir.ParenOperand((ir.Symbol("retval0"),)),
        ir.Register("%rd2"),
        ir.ParenOperand((ir.Symbol("param0"),)),
        ir.Symbol("prototype_0"),
    )
    assert calls[2].operands == (ir.Symbol("noargs"), ir.ParenOperand(()))
    tables = [s for s in body if isinstance(s, ir.TargetList)]
    assert tables[0].kind == ".branchtargets" and tables[0].targets == ("$L__BB0_1", "$L__BB0_2")
    assert tables[1].kind == ".calltargets"


def test_debug_sections_and_loc() -> None:
    module = roundtrip(
        HEADER
        + textwrap.dedent(
            """
            .visible .entry k()
            {
            .loc 1 4 0
            $L__func_begin0:
            .loc 1 5 3, function_name $L__info_string0, inlined_at 1 20 3
            ret;
            $L__func_end0:
            }
            .file 1 "k.cu"
            .section .debug_abbrev
            {
            .b8 1
            .b8 17,1,37
            }
            .section .debug_info
            {
            .b32 641
            .b32 .debug_abbrev
            .b64 $L__func_begin0
            $L__info_string0:
            .b8 95,90,0
            .b32 $L__func_end0-$L__func_begin0
            }
            """
        )
    )
    body = module.function("k").body
    assert body is not None
    locs = [s for s in body.body if isinstance(s, ir.LocDirective)]
    assert (locs[0].file, locs[0].line, locs[0].col) == (1, 4, 0)
    assert locs[1].extra == "function_name $L__info_string0, inlined_at 1 20 3"
    sections = [i for i in module.items if isinstance(i, ir.SectionDirective)]
    assert [s.name for s in sections] == [".debug_abbrev", ".debug_info"]
    data = [d for d in sections[1].body if isinstance(d, ir.SectionData)]
    assert data[1].values == (ir.Symbol(".debug_abbrev"),)
    assert any(isinstance(d, ir.Label) and d.name == "$L__info_string0" for d in sections[1].body)


def test_source_positions() -> None:
    module = parse_ptx(HEADER + ".visible .entry k()\n{\n\tadd.s32 %r1, %r2, 1;\n}\n", "pos.ptx")
    inst = next(module.instructions())
    assert inst.loc == ir.SourceLoc("pos.ptx", 6, 2)


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            ".visible .entry k()\n{\n\tfrobnicate.b32 %r1;\n}\n",
            "bad.ptx:6:2",
            "unknown instruction 'frobnicate.b32'",
        ),
        (".visible .entry k()\n{\n\tadd.s32 %r1, %r2 %r3;\n}\n", "bad.ptx:6:19", "unexpected '%r3'"),
        (".visible .entry k()\n{\n\tadd.s32 %r1, %r2, #;\n}\n", "bad.ptx:6:20", "unexpected character '#'"),
        (".visible .entry k()\n{\n\tret;\n", "bad.ptx:7:1", "unexpected end of file"),
        (".global .b32 .u32 x;\n", "bad.ptx:4:14", "unexpected qualifier '.u32'"),
        # ptxas rejects linkage on a parameter; printing it without the word would not.
        (
            ".extern .func (.param .b32.extern r) f\n();\n",
            "bad.ptx:4:27",
            "unexpected '.extern' in a parameter",
        ),
        (".visible .entry k(.param .u64 .weak p)\n{\n\tret;\n}\n", "bad.ptx:4:31", "unexpected '.weak'"),
        (
            ".visible .entry k()\n{\n\tld.u32 %r1, [%rd1+%rd2];\n}\n",
            "bad.ptx:6:2",
            "[%rd1+%rd2] is not an address",
        ),
    ],
)
def test_errors_have_positions(text: str, where: str, message: str) -> None:
    with pytest.raises(PtxSyntaxError) as info:
        parse_ptx(HEADER + text, "bad.ptx")
    assert str(info.value).startswith(f"{where}: {message}"), str(info.value)


def test_gcc_shapes_guard_spacing_and_percent_params() -> None:
    module = roundtrip(
        HEADER
        + textwrap.dedent(
            """
            // BEGIN GLOBAL FUNCTION DECL: vprintf
            .extern .func (.param .u32 %value_out) vprintf (.param .u64 %in_ar0, .param .u64 %in_ar1);
            // BEGIN GLOBAL FUNCTION DEF: main$_omp_fn$0
            .visible .entry main$_omp_fn$0 (.param .u64 %in_ar0)
            {
            .reg .u64 %ar0;
            .reg .pred %r38;
            ld.param.u64 %ar0, [%in_ar0];
            @ %r38 bra $L58;
            {
            .param .u32 %value_in;
            .param .u64 %out_arg1;
            st.param.u64 [%out_arg1], %ar0;
            call (%value_in), vprintf, (%out_arg1, %out_arg1);
            }
            $L58:
            ret;
            }
            """
        )
    )
    comments = [i.text for i in module.items if isinstance(i, ir.Comment)]
    assert comments == [
        "// BEGIN GLOBAL FUNCTION DECL: vprintf",
        "// BEGIN GLOBAL FUNCTION DEF: main$_omp_fn$0",
    ]
    # Each marker stays right before the item it names.
    kinds = [type(i).__name__ for i in module.items[3:]]
    assert kinds == ["Comment", "Function", "Comment", "Function"]
    insts = list(module.instructions())
    assert insts[0].operands[1] == ir.Address(ir.Symbol("%in_ar0"))
    assert insts[1].guard == ir.Guard(ir.Register("%r38"))
    call = insts[3]
    assert call.operands[0] == ir.ParenOperand((ir.Symbol("%value_in"),))


def test_texture_vector_and_predicate_result() -> None:
    inst = only_instruction("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}|%p1, [tex0, {%f5, %f6}];")
    pair = inst.operands[0]
    assert isinstance(pair, ir.PairOperand) and pair.second == ir.Register("%p1")
    assert pair.first == ir.VectorOperand(tuple(ir.Register(f"%f{i}") for i in range(1, 5)))


def test_one_token_instructions_equal_the_full_grammar() -> None:
    """The lexer's whole-instruction token must build exactly what the grammar builds.

    A trailing comment keeps the lexer off the one-token path, so the same
    instruction goes through both paths.
    """
    lines = [
        "@!%p1 ld.global.nc.v2.f32 {%f1, %f2}, [%rd1+8];",
        "@%p2 st.global.f32 [%rd2+-4], %f3;",
        "add.s32 %r1, %r2, -7;",
        "mov.u64 %rd1, __local_depot0;",
        "mov.f32 %f1, 0fBF800000;",
        "shfl.sync.bfly.b32 %r1|%p1, %r2, 16, 31, -1;",
        "ret;",
        "bar.sync 0;",
        "mov.u32 %r1, %tid.x;",
        "ld.param.u32 %r1, [k_param_0];",
    ]
    fast = body_of("\n".join(lines))
    slow = body_of("\n".join(line.replace(";", " /* slow */ ;", 1) for line in lines))
    assert fast == slow
    assert [i.loc.col for i in fast if isinstance(i, ir.Instruction)][:2] == [7, 6]


def _table_module(table: str) -> str:
    header = ".version 8.0\n.target sm_80\n.address_size 64\n"
    return header + table + "\n.visible .entry k() { bogus %r1; }\n"


def test_literal_tables_parse_as_their_items() -> None:
    """A brace list of plain integers or hexadecimal floats (a table's bytes
    or coefficients) is lexed as one token; its items are the literals as
    written, nested lists too, and the lines after a table that spans
    several keep their numbers."""
    text = _table_module(
        ".global .align 4 .b8 t[8] = {0, 1, 0x10, 255,\n   7, 8U, 0b101, 017};\n"
        ".global .u32 q[2][2] = {{1, 2},\n {3, 4}};\n"
        ".global .u32 mixed[3] = {1, -2, 2+3};\n"
        ".global .f64 c[2] = {0d3FF0000000000000, 0D4000000000000000};"
    )
    with pytest.raises(PtxSyntaxError) as err:
        parse_ptx(text, "t.ptx")
    assert str(err.value).startswith("t.ptx:10:23: unknown instruction 'bogus'")
    module = parse_ptx(text.replace("bogus %r1;", "ret;"), "t.ptx")
    inits = {n.name: n.init for it in module.items if isinstance(it, ir.VarDecl) for n in it.names}
    assert [(i.value, i.text) for i in inits["t"]] == [  # type: ignore[union-attr]
        (0, "0"),
        (1, "1"),
        (16, "0x10"),
        (255, "255"),
        (7, "7"),
        (8, "8U"),
        (5, "0b101"),
        (15, "017"),
    ]
    assert [[i.value for i in row] for row in inits["q"]] == [[1, 2], [3, 4]]  # type: ignore[union-attr]
    assert isinstance(inits["mixed"][2], ir.BinaryExpr)  # type: ignore[index]
    assert inits["c"] == [ir.FloatImm("d", "0d3FF0000000000000"), ir.FloatImm("d", "0D4000000000000000")]
    assert "t[8] = {0, 1, 0x10, 255, 7, 8U, 0b101, 017};" in print_module(module)


def test_a_bad_integer_in_a_table_is_located_at_the_literal() -> None:
    text = _table_module(".global .b8 t[3] = {1,\n 2,\n 3};\n.global .b8 u[2] = {1, 09};")
    with pytest.raises(PtxSyntaxError) as err:
        parse_ptx(text, "t.ptx")
    assert str(err.value).startswith("t.ptx:7:24: bad integer '09'")
