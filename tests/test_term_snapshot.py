"""`snapshot.Snapshot` reads Z3 terms as z3py would, and its memo by id is
safe when Z3 reuses the ids of collected terms."""

from __future__ import annotations

import gc

import z3

from ptxasw.emulator.symbolic import raw, snapshot
from ptxasw.emulator.symbolic.printer import Printer


def test_nodes_agree_with_z3py() -> None:
    x, y = z3.BitVecs("%tid.x y", 32)
    load = z3.Function("load_global_32", z3.BitVecSort(64), z3.BitVecSort(32))
    term = z3.If(z3.ULT(x, 5), z3.Extract(7, 0, x * y + load(z3.ZeroExt(32, x))), z3.BitVecVal(255, 8))
    snap = snapshot.Snapshot()
    stack = [(snap.node(term), term)]
    seen = 0
    while stack:
        node, e = stack.pop()
        seen += 1
        assert node.id == e.as_ast().value  # the address: its identity while it lives
        assert node.kind == e.decl().kind()
        assert node.size == (e.size() if z3.is_bv(e) else 0)
        assert node.is_const == z3.is_const(e)
        assert node.is_bv_value == z3.is_bv_value(e)
        if z3.is_bv_value(e):
            assert node.value == e.as_long()
        if z3.is_app_of(e, z3.Z3_OP_EXTRACT):
            assert node.params == tuple(e.params())
        if (z3.is_const(e) and not z3.is_bv_value(e)) or z3.is_app_of(e, z3.Z3_OP_UNINTERPRETED):
            assert node.name == e.decl().name()
        assert len(node.args) == e.num_args()
        stack.extend(zip(node.args, e.children(), strict=True))
    assert seen >= 10
    # One node per distinct subterm: %tid.x is shared by three parents.
    assert snap.node(x) is snap.node(term).args[0].args[0]


def test_a_printer_survives_z3_reusing_the_ids_of_collected_terms() -> None:
    """Terms built, printed and dropped, then others built: Z3 hands the
    freed ids to the new terms. A printer that kept only ids would print
    the old texts for them; one that keeps its terms alive cannot be fooled."""
    printer = Printer()
    texts = {}
    for round_ in range(3):
        xs = [z3.BitVec(f"v{round_}_{i}", 32) for i in range(20)]
        terms = [x + (round_ * 100 + i) for i, x in enumerate(xs)]
        for i, t in enumerate(terms):
            texts[(round_, i)] = printer.text(t)
        del xs, terms
        gc.collect()
    for (round_, i), text in texts.items():
        assert text == f"{round_ * 100 + i:#x} + v{round_}_{i}"


def test_raw_falls_back_to_the_wrapper() -> None:
    def wrapper(a: int) -> int:
        return a + 1

    assert raw._unchecked(wrapper) is wrapper
    unchecked = raw._unchecked(z3.z3core.Z3_get_ast_id)
    x = z3.BitVec("x", 8)
    assert unchecked(x.ctx_ref(), x.as_ast()) == x.get_id()


def _declarations(e: z3.ExprRef) -> dict[str, z3.FuncDeclRef]:
    out: dict[str, z3.FuncDeclRef] = {}
    stack = [e]
    while stack:
        node = stack.pop()
        if z3.is_app(node):
            if node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out[node.decl().name()] = node.decl()
            stack.extend(node.children())
    return out


def test_smtlib_reads_back_as_the_same_term() -> None:
    """`Printer.smtlib` (the trace JSON's ``address_smt``) parses back, with
    the term's own declarations, to the very term: shared subterms as
    ``let``, symbols that need quoting quoted, indexed operators with their
    indices, numerals at their width."""
    x = z3.BitVec("%tid.x", 32)
    it = z3.BitVec("iter_$L__BB1_5#1", 64)
    p = z3.Bool("p")
    load = z3.Function("load_global_32@3", z3.BitVecSort(64), z3.BitVecSort(32))
    shared = x * 4 + 7
    terms = [
        z3.SignExt(32, shared) + z3.SignExt(32, shared) * it,
        load(z3.ZeroExt(32, shared) + it) + z3.Extract(31, 0, it),
        z3.If(
            z3.And(p, z3.ULT(x, 5)), z3.RotateLeft(x, 3), z3.Concat(z3.BitVecVal(5, 3), z3.Extract(28, 0, x))
        ),
        z3.Or(z3.Not(p), z3.Distinct(x, shared, shared + 1)),
        z3.UDiv(x, shared) + z3.SRem(x, z3.BitVecVal(3, 32)),
    ]
    printer = Printer()
    for term in terms:
        text = printer.smtlib(term)
        decls = _declarations(term)
        if z3.is_bool(term):
            back = z3.parse_smt2_string(f"(assert {text})", decls=decls)[0]
        else:
            back = z3.parse_smt2_string(f"(assert (= {text} {text}))", decls=decls)[0].arg(0)
        assert back.eq(term), (text, term.sexpr())
    # A subterm used twice is bound once.
    assert printer.smtlib(terms[0]).count("(bvmul") == 2  # x * 4 once, and the product with it
    assert "(let ((a!1" in printer.smtlib(terms[0])


def test_terms_without_an_application_keep_z3s_text() -> None:
    """A quantifier is read at its address and printed by Z3 (the reader
    hands Z3 addresses, never a context it would take for a C int)."""
    x = z3.BitVec("x", 32)
    term = z3.And(z3.ForAll([x], z3.UGE(x + 1, x)), z3.BitVec("y", 32) == 3)
    node = snapshot.Snapshot().node(term)
    assert node.args[0].kind is None
    assert node.args[0].text == z3.Z3_ast_to_string(term.ctx_ref(), term.arg(0).as_ast())
    assert node.args[1].args[1].value == 3


def test_declarations_and_sorts_are_read_once_per_snapshot() -> None:
    """Nodes of the same declaration share its name and parameters (read once
    by address), and widths come from the sort (read once by address)."""
    xs = [z3.BitVec(f"x{i}", 16) for i in range(5)]
    parts = [z3.Extract(11, 4, x) for x in xs]
    snap = snapshot.Snapshot()
    nodes = [snap.node(p) for p in parts]
    assert {n.params for n in nodes} == {(11, 4)}
    assert all(n.size == 8 and n.args[0].size == 16 for n in nodes)
    assert [n.args[0].name for n in nodes] == [f"x{i}" for i in range(5)]
    assert len(snap._decls) == 6  # one extract, five constants
    assert {d[3] for d in snap._decls.values()} == {8, 16}  # the width comes with the declaration


def test_a_snapshot_shared_by_printers_prints_what_each_alone_prints() -> None:
    """Kernels printed in turn share one snapshot (`snapshot.shared`): each
    printer's texts and named subterms are those of a printer with a
    snapshot of its own (uses are counted per printer), and the shared
    snapshot is replaced once it holds its limit of nodes."""
    x, y = z3.BitVecs("%tid.x %ctaid.x", 32)
    kernels = [
        [x * 4 + y, z3.ULT(x * 4 + y, 9) == (y * 4 == x)],
        [(x * 4 + y) * 2, z3.UGT(x * 4 + y, 3), (x * 4 + y) * 2 + 1],
    ]

    def printed(terms: list[z3.ExprRef], snap: snapshot.Snapshot | None) -> tuple[list[str], list]:
        printer = Printer(share_min=1, snapshot=snap)
        printer.count_uses(terms)
        return [printer.text(t) for t in terms], list(printer.definitions)

    terms_read = None
    for terms in kernels:
        terms_read = snapshot.shared(terms_read)
        assert printed(terms, terms_read) == printed(terms, None)
    assert printed(kernels[1], None)[1]  # the second kernel names a shared subterm
    assert snapshot.shared(terms_read) is terms_read
    full = snapshot.shared(None, limit=3)
    full.node(x * 4 + y)
    assert len(full) >= 3
    assert snapshot.shared(full, limit=3) is not full
