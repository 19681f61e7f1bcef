"""Tests of the control-flow graph and its analyses (ptxasw.analysis.cfg).

Small functions are written as PTX text and parsed, so each test reads like
the code it is about; the corpus test then checks the invariants on every
function nvcc and llc produced, and a synthetic 100k-instruction function
(built directly as IR: parsing it would dominate) keeps the analyses linear.
"""

from __future__ import annotations

import pytest

from ptxasw.analysis.cfg import CFG, CFGError, EdgeKind, build_cfg, is_special_register
from ptxasw.ir import (
    Address,
    Block,
    Function,
    Guard,
    Instruction,
    IntImm,
    Label,
    ParamSpec,
    Register,
    Statement,
    Symbol,
    VarDecl,
    VarName,
)
from ptxasw.parser import parse_file, parse_ptx
from tests.corpus.build import CorpusFile

HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"


def kernel(body: str, decls: str | None = None) -> Function:
    """A kernel ``k`` with the given body (registers declared for it)."""
    if decls is None:
        decls = ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<8>;\n"
    text = f"{HEADER}.visible .entry k(.param .u64 a)\n{{\n{decls}{body}\n}}\n"
    return parse_ptx(text).function("k")


def cfg_of(body: str) -> CFG:
    return build_cfg(kernel(body))


def edges(cfg: CFG) -> dict[tuple[int, int], str]:
    return {(u, v): str(d["kind"]) for u, v, d in cfg.graph.edges(data=True)}


def opcodes(cfg: CFG, block: int) -> list[str]:
    return [i.opcode for i in cfg.blocks[block].instructions]


# --------------------------------------------------------------------------
# Blocks and edges


def test_straight_line_is_one_block() -> None:
    cfg = cfg_of(
        """
        ld.param.u64 %rd1, [a];
        mov.u32 %r1, %tid.x;
        add.s32 %r2, %r1, 1;
        st.global.u32 [%rd1], %r2;
        ret;
        """
    )
    assert len(cfg.blocks) == 1
    assert cfg.entry == 0 and cfg.exit == 1
    assert opcodes(cfg, 0) == ["ld", "mov", "add", "st", "ret"]
    assert cfg.blocks[0].index_range == range(0, 5)
    assert edges(cfg) == {(0, 1): "exit"}
    assert cfg.reverse_postorder() == [0]
    assert cfg.idom == {0: None, 1: 0}
    assert cfg.ipdom == {0: 1, 1: None}
    assert cfg.loops == () and cfg.is_reducible and cfg.unreachable == ()


def test_falling_off_the_end_reaches_exit() -> None:
    cfg = cfg_of("mov.u32 %r1, 1;")
    assert edges(cfg) == {(0, 1): "fallthrough"}
    assert cfg.blocks[0].fallthrough == cfg.exit


def test_empty_body_has_an_entry_block() -> None:
    cfg = cfg_of("")
    assert len(cfg.blocks) == 1 and cfg.blocks[0].instructions == []
    assert cfg.ipdom[0] == cfg.exit


DIAMOND = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra ELSE;
    add.s32 %r2, %r1, 1;
    bra.uni JOIN;
ELSE:
    sub.s32 %r2, %r1, 1;
JOIN:
    ld.param.u64 %rd1, [a];
    st.global.u32 [%rd1], %r2;
    ret;
"""


def test_if_else_diamond() -> None:
    cfg = cfg_of(DIAMOND)
    assert [b.label for b in cfg.blocks] == [None, None, "ELSE", "JOIN"]
    assert opcodes(cfg, 0) == ["mov", "setp", "bra"]
    assert opcodes(cfg, 1) == ["add", "bra"]
    assert edges(cfg) == {
        (0, 2): "taken",
        (0, 1): "fallthrough",
        (1, 3): "jump",
        (2, 3): "fallthrough",
        (3, 4): "exit",
    }
    assert cfg.blocks[0].targets == (2,) and cfg.blocks[0].fallthrough == 1
    assert cfg.blocks[1].targets == (3,) and cfg.blocks[1].fallthrough is None
    assert cfg.idom == {0: None, 1: 0, 2: 0, 3: 0, 4: 3}
    assert cfg.ipdom[0] == 3 and cfg.ipdom[1] == 3 and cfg.ipdom[2] == 3
    assert cfg.reconvergence_point(0) == 3
    assert cfg.dominates(0, 3) and not cfg.dominates(1, 3)
    assert cfg.post_dominates(3, 0) and not cfg.post_dominates(1, 0)
    assert cfg.reverse_postorder() == [0, 1, 2, 3]
    assert cfg.edge_kind(0, 2) is EdgeKind.TAKEN
    assert cfg.block_of(cfg.instructions[4]) == 1 and cfg.block_of(5) == 2
    assert cfg.block_of_label("JOIN") == 3
    dot = cfg.to_dot()
    assert dot.startswith('digraph "k"') and "0 -> 2" in dot and "taken" in dot


def test_guarded_bra_falls_through() -> None:
    cfg = cfg_of(
        """
        setp.eq.u32 %p1, %r1, 0;
        @!%p1 bra SKIP;
        mov.u32 %r2, 7;
    SKIP:
        ret;
        """
    )
    assert edges(cfg) == {(0, 2): "taken", (0, 1): "fallthrough", (1, 2): "fallthrough", (2, 3): "exit"}
    assert cfg.reconvergence_point(0) == 2


def test_guarded_bra_to_the_next_block_keeps_both_kinds() -> None:
    cfg = cfg_of("@%p1 bra NEXT;\nNEXT:\nret;")
    assert cfg.blocks[0].targets == (1,) and cfg.blocks[0].fallthrough == 1
    assert cfg.graph.edges[0, 1]["kinds"] == ("taken", "fallthrough")


def test_consecutive_labels_name_one_block() -> None:
    cfg = cfg_of("bra.uni B;\nA:\n// comment\nB:\nC:\nret;")
    assert len(cfg.blocks) == 2
    assert cfg.blocks[1].label == "A" and cfg.blocks[1].labels == ("A", "B", "C")
    assert edges(cfg) == {(0, 1): "jump", (1, 2): "exit"}


def test_call_does_not_end_a_block() -> None:
    text = (
        HEADER
        + ".func (.param .b32 r) f(.param .b32 x)\n{\n.reg .b32 %t;\nld.param.b32 %t, [x];\n"
        + "st.param.b32 [r], %t;\nret;\n}\n"
        + ".visible .entry k()\n{\n.reg .b32 %r<3>;\nmov.u32 %r1, 1;\n"
        + "{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r1;\n"
        + "call (r0), f, (p0);\nld.param.b32 %r2, [r0];\n}\nret;\n}\n"
    )
    cfg = build_cfg(parse_ptx(text).function("k"))
    assert len(cfg.blocks) == 1
    assert opcodes(cfg, 0) == ["mov", "st", "call", "ld", "ret"]


def test_unreachable_code_after_an_unguarded_branch() -> None:
    cfg = cfg_of("bra.uni END;\nmov.u32 %r1, 1;\nEND:\nret;")
    assert len(cfg.blocks) == 3
    assert cfg.unreachable == (1,)
    assert 1 not in cfg.idom  # no dominator: no path from the entry
    assert cfg.ipdom[1] == 2  # but it does reach the exit
    assert cfg.reverse_postorder() == [0, 2]


# --------------------------------------------------------------------------
# Returns and exits


def test_ret_inside_a_branch() -> None:
    cfg = cfg_of(
        """
        setp.eq.u32 %p1, %r1, 0;
        @%p1 bra DONE;
        ret;
    DONE:
        st.global.u32 [%rd1], %r1;
        exit;
        """
    )
    assert edges(cfg) == {(0, 2): "taken", (0, 1): "fallthrough", (1, 3): "exit", (2, 3): "exit"}
    # The two sides only meet by leaving: the reconvergence point is the exit.
    assert cfg.reconvergence_point(0) == cfg.exit
    assert cfg.ipdom[1] == cfg.exit and cfg.ipdom[2] == cfg.exit


def test_guarded_ret_falls_through() -> None:
    cfg = cfg_of("@%p1 ret;\nmov.u32 %r1, 1;\n@%p2 exit;\n@%p3 trap;\nret;")
    assert len(cfg.blocks) == 4
    assert edges(cfg) == {
        (0, 4): "exit",
        (0, 1): "fallthrough",
        (1, 4): "exit",
        (1, 2): "fallthrough",
        (2, 4): "exit",
        (2, 3): "fallthrough",
        (3, 4): "exit",
    }
    assert cfg.blocks[0].targets == (cfg.exit,) and cfg.blocks[0].fallthrough == 1
    assert cfg.ipdom[0] == cfg.exit


def test_trap_ends_a_block() -> None:
    cfg = cfg_of("trap;\nbra.uni L;\nL:\nret;")
    assert edges(cfg) == {(0, 3): "exit", (1, 2): "jump", (2, 3): "exit"}
    assert cfg.unreachable == (1, 2)


# --------------------------------------------------------------------------
# Loops


LOOP = """
    mov.u32 %r1, 0;
    mov.u32 %r2, 0;
HEAD:
    add.s32 %r2, %r2, %r5;
    add.s32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, %r6;
    @%p1 bra HEAD;
    st.global.u32 [%rd1], %r2;
    ret;
"""


def test_loop_with_back_edge() -> None:
    cfg = cfg_of(LOOP)
    assert [b.label for b in cfg.blocks] == [None, "HEAD", None]
    assert edges(cfg) == {(0, 1): "fallthrough", (1, 1): "taken", (1, 2): "fallthrough", (2, 3): "exit"}
    assert cfg.back_edges == ((1, 1),)
    (loop,) = cfg.natural_loops()
    assert loop.header == 1 and loop.body == {1} and loop.latches == (1,)
    assert loop.exits == ((1, 2),) and loop.parent is None and loop.depth == 1
    assert [cfg.loop_depth(b) for b in range(3)] == [0, 1, 0]
    assert cfg.reconvergence_point(1) == 2


def test_while_loop_with_separate_latch() -> None:
    cfg = cfg_of(
        """
    HEAD:
        setp.ge.u32 %p1, %r1, %r6;
        @%p1 bra OUT;
        add.s32 %r1, %r1, 1;
        bra.uni HEAD;
    OUT:
        ret;
        """
    )
    (loop,) = cfg.loops
    assert loop.header == 0 and loop.body == {0, 1} and loop.latches == (1,)
    assert loop.back_edges == ((1, 0),) and loop.exits == ((0, 2),)
    assert 1 in loop and 2 not in loop


NESTED = """
    mov.u32 %r1, 0;
OUTER:
    mov.u32 %r2, 0;
INNER:
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, 8;
    @%p1 bra INNER;
    add.s32 %r1, %r1, 1;
    setp.lt.u32 %p2, %r1, 8;
    @%p2 bra OUTER;
    setp.eq.u32 %p3, %r1, 3;
    @%p3 bra OUTER2;
    ret;
OUTER2:
    add.s32 %r3, %r3, 1;
INNER2:
    setp.eq.u32 %p4, %r3, 0;
    @%p4 ret;
    bra.uni INNER2;
"""


def test_nested_loops() -> None:
    cfg = cfg_of(NESTED)
    labels = {b.label: b.id for b in cfg.blocks if b.label}
    outer = cfg.loop_of(labels["OUTER"])
    inner = cfg.loop_of(labels["INNER"])
    assert outer is not None and inner is not None and inner is not outer
    assert inner.parent is outer and outer.parent is None and outer.children == [inner]
    assert inner.body < outer.body and inner.depth == 2 and outer.depth == 1
    assert cfg.loop_depth(labels["INNER"]) == 2
    assert cfg.loop_depth(labels["OUTER"]) == 1
    assert cfg.loop_depth(0) == 0
    inner2 = cfg.loop_of(labels["INNER2"])
    assert inner2 is not None and inner2.parent is None and inner2.depth == 1
    # INNER2's only way out is a guarded ret: an exit edge to the exit node.
    assert any(v == cfg.exit for _, v in inner2.exits)
    outermost = sorted([labels["OUTER"], labels["INNER2"]])
    assert [loop.header for loop in cfg.loops] == [*outermost, labels["INNER"]]
    for loop in cfg.loops:
        assert all(cfg.dominates(loop.header, b) for b in loop.body)


def test_infinite_loop_does_not_break_post_dominators() -> None:
    cfg = cfg_of("mov.u32 %r1, 1;\n$L:\nbra $L;")
    assert edges(cfg) == {(0, 1): "fallthrough", (1, 1): "jump"}
    assert cfg.virtual_exit_edges == ((1, 2),)
    assert (1, 2) not in cfg.graph.edges  # virtual: not in the real graph
    assert cfg.ipdom == {0: 1, 1: 2, 2: None}
    (loop,) = cfg.loops
    assert loop.header == 1 and loop.exits == ()
    assert cfg.live_in(1) == frozenset()


def test_infinite_loop_after_a_branch() -> None:
    cfg = cfg_of(
        """
        @%p1 bra SPIN;
        ret;
    SPIN:
        add.s32 %r1, %r1, 1;
    SPIN2:
        @%p2 bra SPIN;
        bra.uni SPIN2;
        """
    )
    assert len(cfg.blocks) == 5  # SPIN2 holds the guarded bra, block 4 the bra.uni
    assert cfg.virtual_exit_edges == ((4, cfg.exit),)
    assert set(cfg.ipdom) == {*range(len(cfg.blocks)), cfg.exit}
    assert cfg.reconvergence_point(0) == cfg.exit


EARLY_RETURN = """
        mov.u32 %r1, 0;
    LOOP:
        setp.eq.u32 %p1, %r1, 5;
        @%p1 bra OUT;
        add.u32 %r1, %r1, 1;
        setp.lt.u32 %p2, %r1, 10;
        @%p2 bra LOOP;
        mov.u32 %r2, 1;
    OUT:
        ret;
"""


def test_reconvergence_ignoring_exit_branches() -> None:
    cfg = cfg_of(EARLY_RETURN)
    b = {blk.label: blk.id for blk in cfg.blocks if blk.label}
    assert [blk.id for blk in cfg.blocks] == [0, 1, 2, 3, 4] and b == {"LOOP": 1, "OUT": 4}
    # The branch to the block that starts with `ret` is an exit branch.
    assert cfg.exit_branches == frozenset({1})
    # With it, both branches of the loop meet only at the `ret` block...
    assert cfg.reconvergence_point(1) == 4 and cfg.reconvergence_point(2) == 4
    # ...without it, the loop's own branch reconverges after the loop.
    assert cfg.reconvergence_point(1, ignoring_exit_branches=True) == 2
    assert cfg.reconvergence_point(2, ignoring_exit_branches=True) == 3
    assert cfg.ipdom[2] == 4  # the plain post-dominators are unchanged


def test_reconvergence_ignoring_the_only_way_out() -> None:
    # The loop leaves only through the exit branch: without it the blocks
    # that no longer reach the exit still get a reconvergence point (the exit).
    cfg = cfg_of("LOOP:\n@%p1 bra OUT;\nbra.uni LOOP;\nOUT:\nret;")
    assert cfg.exit_branches == frozenset({0})
    assert cfg.reconvergence_point(0) == 2
    assert cfg.reconvergence_point(0, ignoring_exit_branches=True) == cfg.exit
    assert cfg_of(LOOP).exit_branches == frozenset()  # a plain loop has none
    with pytest.raises(ValueError):
        cfg.reconvergence_point(cfg.exit, ignoring_exit_branches=True)


def test_irreducible_flow_is_reported() -> None:
    # Two entries into the cycle A <-> B: neither header dominates the other.
    cfg = cfg_of(
        """
        @%p1 bra B;
    A:
        add.s32 %r1, %r1, 1;
        @%p2 ret;
    B:
        add.s32 %r1, %r1, 2;
        @%p3 bra A;
        ret;
        """
    )
    assert not cfg.is_reducible
    assert len(cfg.irreducible_edges) == 1
    assert cfg.loops == ()  # not a natural loop
    assert set(cfg.ipdom) >= set(range(len(cfg.blocks)))


# --------------------------------------------------------------------------
# brx.idx and scopes


def test_brx_idx_with_branchtargets() -> None:
    cfg = cfg_of(
        """
        ld.param.u32 %r1, [a];
        ts: .branchtargets L2, L0, L1, L0;
        brx.idx %r1, ts;
    L0:
        mov.u32 %r2, 0;
        bra.uni DONE;
    L1:
        mov.u32 %r2, 1;
        bra.uni DONE;
    L2:
        mov.u32 %r2, 2;
    DONE:
        ret;
        """
    )
    b = {blk.label: blk.id for blk in cfg.blocks}
    assert cfg.blocks[0].targets == (b["L2"], b["L0"], b["L1"], b["L0"])
    assert cfg.blocks[0].fallthrough is None
    assert {v: k for (u, v), k in edges(cfg).items() if u == 0} == {
        b["L0"]: "table",
        b["L1"]: "table",
        b["L2"]: "table",
    }
    assert cfg.reconvergence_point(0) == b["DONE"]


def test_nested_scopes_are_flattened() -> None:
    cfg = cfg_of(
        """
        mov.u32 %r1, 1;
        {
            .reg .b32 %t;
            mov.u32 %t, 2;
            {
                .reg .pred %q;
                setp.eq.u32 %q, %t, %r1;
                @%q bra OUT;
            }
            add.s32 %r1, %r1, %t;
        }
    OUT:
        ret;
        """
    )
    assert [opcodes(cfg, b.id) for b in cfg.blocks] == [["mov", "mov", "setp", "bra"], ["add"], ["ret"]]
    assert not any(isinstance(s, Block) for s in cfg.statements)
    assert sum(isinstance(s, VarDecl) for s in cfg.statements) == 5  # 3 outer + 2 nested
    b0 = cfg.blocks[0]
    assert [s for s in cfg.statements[b0.stmt_start : b0.stmt_stop] if isinstance(s, Instruction)] == (
        b0.instructions
    )
    assert cfg.reconvergence_point(0) == 2


def test_labels_are_scoped() -> None:
    # The same inline-asm block inlined twice: each `bra WAIT` is its own loop.
    asm = "{\n.reg .pred %d;\nWAIT:\nsetp.eq.u32 %d, %r1, 0;\n@!%d bra WAIT;\n}\n"
    cfg = cfg_of(asm + "add.s32 %r1, %r1, 1;\n" + asm + "ret;")
    assert len(cfg.loops) == 2
    assert sorted(loop.back_edges for loop in cfg.loops) == [((0, 0),), ((2, 2),)]
    with pytest.raises(CFGError):
        cfg.block_of_label("WAIT")


def test_unknown_label_is_an_error() -> None:
    with pytest.raises(CFGError, match="NOWHERE"):
        cfg_of("bra.uni NOWHERE;")
    with pytest.raises(CFGError, match="inner"):
        cfg_of("{\ninner:\nret;\n}\nbra.uni inner;")
    with pytest.raises(CFGError, match="branchtargets"):
        cfg_of("brx.idx %r1, nolist;")


def test_declaration_without_body_is_rejected() -> None:
    fn = parse_ptx(HEADER + ".extern .func f(.param .b32 x);\n").function("f")
    with pytest.raises(ValueError):
        build_cfg(fn)


# --------------------------------------------------------------------------
# Liveness


def test_liveness_around_a_loop() -> None:
    cfg = cfg_of(LOOP)
    # %r5 (loop-invariant, defined before the function body) and %r6 are read
    # in the loop: live around it; %r1/%r2 are carried by the back edge.
    assert cfg.live_in(1) == {"%r1", "%r2", "%r5", "%r6", "%rd1"}
    assert cfg.live_out(1) == {"%r1", "%r2", "%r5", "%r6", "%rd1"}
    assert cfg.live_out(0) == cfg.live_in(1)
    assert cfg.live_in(0) == {"%r5", "%r6", "%rd1"}  # %r1, %r2 are defined in block 0
    assert cfg.live_in(2) == {"%r2", "%rd1"}
    assert cfg.live_out(2) == frozenset()
    setp = cfg.instructions[4]
    assert setp.opcode == "setp"
    assert cfg.live_after(setp) == {"%p1", "%r1", "%r2", "%r5", "%r6", "%rd1"}
    assert "%p1" not in cfg.live_before(setp)
    assert cfg.live_after(cfg.instructions[-1]) == cfg.live_after(-1) == frozenset()
    assert cfg.live_after(0) == {"%r1", "%r5", "%r6", "%rd1"}


def test_guarded_definition_does_not_kill() -> None:
    cfg = cfg_of(
        """
        setp.eq.u32 %p1, %r1, 0;
        @%p1 mov.u32 %r2, 5;
        st.global.u32 [%rd1], %r2;
        mov.u32 %r3, 1;
        st.global.u32 [%rd1], %r3;
        ret;
        """
    )
    # %r2 may keep its old value: live on entry. %r3 is certainly written first.
    assert cfg.live_in(0) == {"%r1", "%r2", "%rd1"}
    assert "%r2" in cfg.live_before(1) and "%r2" in cfg.live_after(1)


def test_liveness_ignores_special_registers() -> None:
    cfg = cfg_of("mov.u32 %r1, %tid.x;\nmov.u32 %r2, %laneid;\nadd.s32 %r3, %r1, %r2;\nret;")
    assert cfg.live_in(0) == frozenset()
    assert cfg.live_after(1) == {"%r1", "%r2"}
    assert is_special_register("%clock64") and is_special_register("%envreg31")
    assert not is_special_register("%r1") and not is_special_register("%rd7")


def test_reg_return_parameters_are_live_at_exit() -> None:
    text = HEADER + ".func (.reg .b32 %ret) f(.reg .b32 %x)\n{\nadd.s32 %ret, %x, 1;\nret;\n}\n"
    cfg = build_cfg(parse_ptx(text).function("f"))
    assert cfg.live_in(0) == {"%x"}
    assert cfg.live_after(0) == {"%ret"}


def test_vector_register_element_write_does_not_kill() -> None:
    decls = ".reg .v2 .b32 %v;\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
    fn = kernel("mov.b32 %v.x, 1;\nst.global.v2.b32 [%rd1], %v;\nret;", decls)
    cfg = build_cfg(fn)
    assert cfg.live_in(0) == {"%v", "%rd1"}


# --------------------------------------------------------------------------
# The real corpus


def check_invariants(cfg: CFG) -> None:
    nodes = set(cfg.graph.nodes)
    assert nodes == {*range(len(cfg.blocks)), cfg.exit}
    assert [b.id for b in cfg.blocks] == list(range(len(cfg.blocks)))
    # Blocks tile the instruction list in text order.
    assert cfg.blocks[0].start == 0 and cfg.blocks[-1].stop == len(cfg.instructions)
    for prev, nxt in zip(cfg.blocks, cfg.blocks[1:], strict=False):
        assert prev.stop == nxt.start
    for b in cfg.blocks:
        succs = set(cfg.graph.successors(b.id))
        assert succs, f"block {b.id} has no successor"
        assert succs <= nodes
        assert succs == set(b.targets) | ({b.fallthrough} if b.fallthrough is not None else set())
        for inst in b.instructions[:-1]:
            assert inst.opcode not in ("bra", "brx.idx", "ret", "exit", "trap")
        assert (b.id in cfg.reachable) != (b.id in cfg.unreachable)
        assert cfg.ipdom[b.id] is not None
        assert cfg.reconvergence_point(b.id) in nodes
        if b.id in cfg.reachable and b.id != cfg.entry:
            assert cfg.idom[b.id] is not None
    assert list(cfg.graph.successors(cfg.exit)) == []
    rpo = cfg.reverse_postorder()
    assert rpo[0] == cfg.entry and set(rpo) == {b.id for b in cfg.blocks} - set(cfg.unreachable)
    pos = {b: i for i, b in enumerate(rpo)}
    back = set(cfg.back_edges) | set(cfg.irreducible_edges)
    for u, v in cfg.graph.edges:
        if u in pos and v in pos and (u, v) not in back:
            assert pos[u] < pos[v]
    for loop in cfg.loops:
        assert all(cfg.dominates(loop.header, b) for b in loop.body)
        assert all((u, loop.header) in cfg.back_edges for u in loop.latches)
        if loop.parent is not None:
            assert loop.body < loop.parent.body
        for b in loop.body:
            assert cfg.loop_depth(b) >= loop.depth
    for b in cfg.blocks:
        if b.instructions:
            assert cfg.live_after(b.instructions[-1]) == cfg.live_out(b.id)
            assert cfg.live_before(b.instructions[0]) == cfg.live_in(b.id)


def test_corpus_cfgs(corpus: list[CorpusFile]) -> None:
    functions = 0
    unreachable = 0
    irreducible = []
    for item in corpus:
        module = parse_file(item.ptx_path)
        for fn in module.functions:
            if fn.body is None:
                continue
            cfg = build_cfg(fn)
            check_invariants(cfg)
            functions += 1
            unreachable += len(cfg.unreachable)
            if not cfg.is_reducible:
                irreducible.append((item.name, fn.name))
            # Every instruction of the function is in exactly one block.
            assert sum(len(b.instructions) for b in cfg.blocks) == sum(1 for _ in fn.instructions())
    assert functions > 100
    # Compilers emit structured code: nothing irreducible in the corpus.
    assert irreducible == []


# --------------------------------------------------------------------------
# Scale


def _big_function(groups: int) -> Function:
    """``groups`` copies of an 18-instruction pattern: a loop holding a diamond,
    followed by straight code."""
    r = Register
    body: list[Statement] = [
        VarDecl(".reg", ".b32", [VarName("%r", 64)]),
        VarDecl(".reg", ".pred", [VarName("%p", 8)]),
        VarDecl(".reg", ".b64", [VarName("%rd", 4)]),
    ]

    def add(dst: int, a: int, b: int) -> Instruction:
        return Instruction("add", (".s32",), (r(f"%r{dst}"), r(f"%r{a}"), r(f"%r{b}")))

    for g in range(groups):
        head, els, join = f"H{g}", f"E{g}", f"J{g}"
        body += [
            Instruction("mov", (".u32",), (r("%r1"), IntImm(0))),
            Label(head),
            Instruction("setp", (".lt", ".u32"), (r("%p1"), r("%r1"), r(f"%r{10 + g % 40}"))),
            Instruction("bra", (), (Symbol(els),), Guard(r("%p1"))),
            add(2, 2, 3),
            add(4, 2, 5),
            Instruction("bra", (".uni",), (Symbol(join),)),
            Label(els),
            add(2, 2, 6),
            Instruction("mov", (".u32",), (r("%r4"), IntImm(1)), Guard(r("%p2"))),
            Label(join),
            add(1, 1, 7),
            Instruction("setp", (".lt", ".u32"), (r("%p3"), r("%r1"), r("%r8"))),
            Instruction("bra", (), (Symbol(head),), Guard(r("%p3"))),
            *[add(20 + (g + k) % 40, 2, 4) for k in range(6)],
            Instruction("st", (".global", ".u32"), (Address(r("%rd1")), r("%r2"))),
        ]
    body.append(Instruction("ret", (), ()))
    return Function(".entry", "big", [ParamSpec(".param", ".u64", "a")], body=Block(body))


def test_large_function_analyses_are_right() -> None:
    """100k instructions, 5600 loops: every analysis finishes and is right
    (its speed is a benchmark's business, not a test's)."""
    fn = _big_function(5600)  # 18 instructions a group: ~100k
    cfg = build_cfg(fn)
    assert len(cfg.instructions) > 95_000
    ipdom = cfg.ipdom
    loops = cfg.loops
    cfg.reverse_postorder()
    live = [cfg.live_after(i) for i in range(len(cfg.instructions))]
    assert len(ipdom) == len(cfg.blocks) + 1
    assert len(loops) == 5600 and cfg.is_reducible and not cfg.unreachable
    assert all(loop.depth == 1 for loop in loops)
    assert "%r8" in cfg.live_in(cfg.blocks[1].id) and live


def test_loop_left_only_by_an_early_return_keeps_its_joins() -> None:
    """nvcc -G writes ``while (base < n)`` as a loop whose only way out is a
    branch to ``ret``. Ignoring that exit branch (its lanes retire at once),
    the if inside the loop must still reconverge inside the loop, not at the
    exit: a shuffle after it needs the whole warp."""
    cfg = cfg_of(
        """
        mov.u32 %r1, 0;
    $LOOP:
        setp.ge.s32 %p1, %r1, %r9;
        @%p1 bra $DONE;
        setp.lt.u32 %p2, %r2, 2;
        @%p2 bra $SKIP;
        add.s32 %r3, %r3, 1;
    $SKIP:
        shfl.sync.up.b32 %r4, %r3, 1, 0, -1;
        add.s32 %r1, %r1, 4;
        bra.uni $LOOP;
    $DONE:
        ret;
        """
    )
    inner = cfg.block_of_label("$SKIP")
    branch = next(b.id for b in cfg.blocks if b.terminator is not None and list(b.targets[:1]) == [inner])
    assert cfg.exit_branches  # the loop's only way out
    assert cfg.reconvergence_point(branch, ignoring_exit_branches=True) == inner


def test_structured_order_puts_a_loop_before_its_exit() -> None:
    """The loop (body, then head with the test) is laid out below the code after it;
    the structured order runs the loop, head first, before that code."""
    from tests.test_pirch_lift import LOOP_BELOW_EXIT

    fn = parse_ptx(LOOP_BELOW_EXIT, "below.ptx").kernels[0]
    cfg = build_cfg(fn)
    labels = {b.label: b.id for b in cfg.blocks}
    order = list(cfg.structured_order)
    assert order.index(labels["$L_head"]) < order.index(labels["$L_body"]) < order.index(labels["$L_done"])
    assert order[0] == 0 and sorted(order) == sorted(cfg.reachable - {cfg.exit})
