"""The questions shuffle synthesis asks Z3, and the facts it may assume.

Detection and proof both ask "does this equality hold for every thread?"
under a flow's path condition and the executor's facts about special
registers. Two things are added here:

- **Moving a value to another thread** of the same row: ``%tid.x`` becomes
  ``%tid.x + N`` (and ``%laneid`` follows). This is the paper's
  ``A(tid.x + N)``; the generated code's range checks make the source lane
  hold exactly that thread, and the proof checks that with the lane model.
- **Index arithmetic that does not wrap.** nvcc computes ``a[i + 1]`` as
  ``a + 4*sext64(i + 1)``: in PTX the 32-bit sum may wrap, so ``a[(i+1)]``
  of thread ``t`` and ``a[i]`` of thread ``t + 1`` are different addresses
  when ``i`` is ``INT_MAX``. C makes signed overflow undefined, which is what
  lets the compiler use 32-bit indices at all; we assume the same of every
  32-bit term under a sign or zero extension in an address (`no_wrap_facts`)
  and say so in the report as an assumption of the rewrite.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import z3

from ptxasw.emulator.symbolic.affine import overlap_condition
from ptxasw.emulator.symbolic.domain import simplify
from ptxasw.emulator.symbolic.executor import RLIMIT_PER_MS, Access
from ptxasw.emulator.symbolic.independence import Symbols
from ptxasw.emulator.symbolic.intervals import extension, interval, normalize_extensions

__all__ = [
    "NO_WRAP",
    "Prover",
    "TermConstants",
    "clear_memos",
    "conjuncts",
    "lanes_may_write",
    "nonlinear",
    "normal_form",
    "other_thread",
    "outermost",
    "shift_thread",
    "without_signed_wrap",
    "without_wrap",
]

BV = z3.BitVecRef

# How the no-wrap assumption reads in reports.
NO_WRAP = (
    "32-bit index arithmetic under a sign/zero extension, or compared signed in a load's predicate, "
    "does not wrap (C makes signed overflow undefined; unsigned indices, their constants read as C's int, "
    "are taken to stay below 2^32)"
)

# Symbols of the block's geometry: thread ids, block shape, lane.
_GEOMETRY = ("%tid.", "%ntid.", "%laneid", "%lanemask_")

_TID_X = z3.BitVec("%tid.x", 32)
_LANEID = z3.BitVec("%laneid", 32)

# How many threads of one block `Prover.refuted` evaluates (a row wrap of a
# collapsed loop's inner extent falls in the first few warps).
_REFUTING_THREADS = 128
# ``%tid.x % 32`` as the executor's lane axiom writes it, simplified: the ids
# `Prover._lane_is_tid_x` looks for (the terms are kept alive with them).
_LOW_BITS_TERMS = (simplify(_TID_X & 31), simplify(z3.ZeroExt(27, z3.Extract(4, 0, _TID_X))))
_LOW_BITS_OF_TID_X = frozenset(t.get_id() for t in _LOW_BITS_TERMS)

#: The launches whose models `Prover.refuted` evaluates a claim in, as
#: (size of the first unknown, step to the next, threads along x, blocks):
#: the fourth of four blocks of 128 threads; one block of 64 (a gang loop
#: that splits its rows among the blocks leaves a late block of a large grid
#: none); and sizes past four warps' widths, where nvcc's 4x unrolled
#: grid-stride loop (remainder iterations first) has lanes of one warp in
#: the unrolled body at different iterations. Small odd sizes, rising in the
#: unknowns' order, then falling, so that one of the two meets a bound
#: between two of them; odd, so that rows do not align with warps.
_PLAUSIBLE_LAUNCHES = ((37, 2, 128, 4), (131, -2, 64, 1), (517, 2, 128, 4))


class _DagFold:
    """A value of every node of a term's DAG, made from the node and its
    operands' values, memoised per node and walked through Z3's C API: the
    Python wrappers cost ten times more per node, and the same terms are
    asked about again and again. Subclasses say what a leaf is worth
    (`leaf`) and how a node combines its operands' values (`combine`)."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.keep: list[z3.ExprRef] = []  # ids stay theirs while memoised

    def clear(self) -> None:
        self.memo.clear()
        self.keep.clear()

    def leaf(self) -> Any:
        raise NotImplementedError

    def combine(self, ctx: Any, node: Any, app: Any, kids: list[Any], context: z3.Context) -> Any:
        raise NotImplementedError

    def value(self, e: z3.ExprRef) -> Any:
        ctx, memo = e.ctx.ref(), self.memo
        root = e.as_ast()
        rid = z3.Z3_get_ast_id(ctx, root)
        if rid in memo:
            return memo[rid]
        self.keep.append(e)
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            nid = z3.Z3_get_ast_id(ctx, node)
            if nid in memo:
                continue
            if z3.Z3_get_ast_kind(ctx, node) != z3.Z3_APP_AST:
                memo[nid] = self.leaf()
                continue
            app = z3.Z3_to_app(ctx, node)
            kids = [z3.Z3_get_app_arg(ctx, app, i) for i in range(z3.Z3_get_app_num_args(ctx, app))]
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if z3.Z3_get_ast_id(ctx, k) not in memo)
                continue
            values = [memo[z3.Z3_get_ast_id(ctx, k)] for k in kids]
            memo[nid] = self.combine(ctx, node, app, values, e.ctx)
        return memo[rid]


class _Property(_DagFold):
    """A property of terms that holds when it holds of some node of the DAG
    (a load, a product of unknowns...)."""

    def __init__(self, node_has: Callable[[Any, Any], bool]) -> None:
        super().__init__()
        self.node_has = node_has

    def leaf(self) -> bool:
        return False

    def combine(self, ctx: Any, node: Any, app: Any, kids: list[bool], context: z3.Context) -> bool:
        return self.node_has(ctx, app) or any(kids)

    def __call__(self, e: z3.ExprRef) -> bool:
        return bool(self.value(e))


def clear_memos() -> None:
    """Forget the memoised term properties (between kernels: their terms go)."""
    folds = (_nots_below, _has_extension, _mentions_memory, _nonlinear, _mentions_thread, _mentions_stride)
    for fold in folds:
        fold.clear()
    _WIDE_MEMO.clear()
    _SHIFT_MEMO.clear()


def _decl_kind(ctx: Any, app: Any) -> int:
    return z3.Z3_get_decl_kind(ctx, z3.Z3_get_app_decl(ctx, app))


def _is_not_node(ctx: Any, app: Any) -> bool:
    return _decl_kind(ctx, app) == z3.Z3_OP_BNOT


def _is_extension_node(ctx: Any, app: Any) -> bool:
    kind = _decl_kind(ctx, app)
    if kind == z3.Z3_OP_CONCAT and z3.Z3_get_app_num_args(ctx, app) == 2:
        high = z3.Z3_get_app_arg(ctx, app, 0)
        return z3.Z3_is_numeral_ast(ctx, high) and z3.Z3_get_numeral_string(ctx, high) == "0"
    return kind in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT)


def _is_function_node(ctx: Any, app: Any) -> bool:
    return _decl_kind(ctx, app) == z3.Z3_OP_UNINTERPRETED and z3.Z3_get_app_num_args(ctx, app) > 0


def _is_product_node(ctx: Any, app: Any) -> bool:
    if _decl_kind(ctx, app) not in _NONLINEAR:
        return False
    sort = z3.Z3_get_sort(ctx, z3.Z3_app_to_ast(ctx, app))
    if z3.Z3_get_bv_sort_size(ctx, sort) <= 8:
        return False
    unknown = 0
    for i in range(z3.Z3_get_app_num_args(ctx, app)):
        arg = z3.Z3_get_app_arg(ctx, app, i)
        if not z3.Z3_is_numeral_ast(ctx, arg):
            unknown += 1
    return unknown > 1


_NONLINEAR = (z3.Z3_OP_BMUL, z3.Z3_OP_BUDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BSDIV, z3.Z3_OP_BSREM, z3.Z3_OP_BSMOD)
_has_extension = _Property(_is_extension_node)
_mentions_memory = _Property(_is_function_node)
_nonlinear = _Property(_is_product_node)
nonlinear = _nonlinear  # whether a term multiplies or divides unknowns (memoised per node)


_SHIFT_MEMO: dict[tuple[int, int], tuple[z3.ExprRef, z3.ExprRef]] = {}


def shift_thread(value: z3.ExprRef, delta: int) -> z3.ExprRef:
    """``value`` as computed by the thread ``delta`` places along x in the same row."""
    if delta == 0:
        return value
    key = (value.get_id(), delta)
    hit = _SHIFT_MEMO.get(key)
    if hit is not None:
        return hit[1]
    n = z3.BitVecVal(delta, 32)
    out = simplify(z3.substitute(value, (_TID_X, _TID_X + n), (_LANEID, _LANEID + n)))
    _SHIFT_MEMO[key] = (value, out)
    return out


def other_thread(term: z3.ExprRef, constants: Sequence[z3.ExprRef]) -> tuple[z3.ExprRef, list[z3.BoolRef]]:
    """``term`` as another thread of the block computes it, and what is
    known of that thread: its ``%tid`` (and lane) renamed ``'``-primed,
    within the block shape, and every per-thread unknown of ``constants``
    (the term's constants: a fresh value's name has a ``!``, an atomic's
    old value, an unmodelled result) renamed too, since the other thread's
    is its own. Kernel parameters, block and grid stay: a warp's lanes
    share them. Loads follow their addresses: the other thread's load of
    the same memory."""
    pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    facts: list[z3.BoolRef] = []
    for c in constants:
        name = c.decl().name()
        if name.startswith(("%tid.", "%laneid", "%lanemask_")) or "!" in name:
            primed = z3.Const(name + "'", c.sort())
            pairs.append((c, primed))
            if name.startswith("%tid."):
                facts.append(z3.ULT(primed, z3.BitVec("%ntid." + name[-1], 32)))
            elif name == "%laneid":
                facts.append(z3.ULT(primed, 32))
    return (z3.substitute(term, *pairs) if pairs else term), facts


class TermConstants:
    """The uninterpreted constants of terms, memoised per subterm.

    The addresses of a kernel's loads share most of their subterms, and
    every candidate pair evaluates both at sample points: one walk per
    distinct subterm instead of one per address. Terms are kept alive beside
    their answers so that their ids are not reused."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[z3.ExprRef, dict[str, z3.ExprRef]]] = {}

    def of(self, term: z3.ExprRef) -> list[z3.ExprRef]:
        """The constants of ``term``, in a fixed order (by name)."""
        found = self._found(term)
        return [found[k] for k in sorted(found)]

    def _found(self, term: z3.ExprRef) -> dict[str, z3.ExprRef]:
        hit = self._memo.get(term.get_id())
        if hit is not None:
            return hit[1]
        # Post-order without recursion: kernels' terms can be thousands deep.
        stack: list[tuple[z3.ExprRef, bool]] = [(term, False)]
        while stack:
            node, done = stack.pop()
            key = node.get_id()
            if key in self._memo:
                continue
            children = node.children()
            if not done and children:
                stack.append((node, True))
                stack.extend((c, False) for c in children if c.get_id() not in self._memo)
                continue
            found: dict[str, z3.ExprRef] = {}
            if z3.is_const(node) and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                found[str(node)] = node
            for c in children:
                found.update(self._memo[c.get_id()][1])
            self._memo[key] = (node, found)
        return self._memo[term.get_id()][1]


def lanes_may_write(
    prover: Prover,
    trace: Sequence[Access],
    source: int,
    load: int,
    hypotheses: Sequence[z3.BoolRef],
    constants: TermConstants,
) -> bool:
    """Whether a store or atomic of ``trace`` between positions ``source`` (a
    shuffle's source load) and ``load`` (the load it replaces) may write the
    load's address when another lane runs it.

    A warp runs them in step, so another lane's store lands between the
    source lane's load and this one, and the value the shuffle brings is
    stale: an in-place update ``x[i] = ...`` read back as ``x[i-1]``. The
    memory versions of the single-thread analysis see only the thread's own
    stores. Any thread of the block stands for the other lane, and what it
    may write is not narrowed by its path condition. Read-only memory
    (``ld.global.nc``) nothing writes while the kernel runs, and a store to
    a lane's own stack (clang's ``-O0`` locals) no other lane reads."""
    a, b = trace[source], trace[load]
    if a.readonly or b.readonly:
        return False
    if b.address is None:
        return True
    for event in trace[source + 1 : load]:
        reaches = event.memory or event.space
        if event.kind not in ("st", "atom") or reaches not in (".global", "generic", None):
            continue  # another lane's own stack, its block's shared memory: not the load's
        if event.address is None:
            return True
        theirs, facts = other_thread(event.address, constants.of(event.address))
        overlap = overlap_condition(simplify(theirs - b.address), event.nbytes, b.nbytes)
        if prover.proves([*hypotheses, *facts], z3.Not(overlap)) is not True:
            return True
    return False


def normal_form(e: z3.ExprRef) -> z3.ExprRef:
    """Z3's sum-of-monomials normalisation: equal sums of products mostly
    become one term, so equalities are settled by comparing terms instead
    of bit-blasting multiplications. A bitwise not is arithmetic first
    (``~x == -1 - x``: nvcc computes ``i - n - 1`` as ``i + ~n``)."""
    return z3.simplify(_not_as_arithmetic(e), som=True, elim_sign_ext=False)


def _not_as_arithmetic(e: z3.ExprRef) -> z3.ExprRef:
    """``e`` with each bitwise not written as ``-1 - x``."""
    pairs = [(n, -1 - n.arg(0)) for n in _nots_below(e)]
    return z3.substitute(e, *pairs) if pairs else e


class _NotsBelow(_DagFold):
    """The bitwise nots of a term (their ids per node).

    Why memoised: a store's value in a backward pass is a DAG of thousands
    of float operations, the original's and the rewrite's sharing most of
    it, and it is normalised once per comparison; a walk of the whole DAG
    per comparison through the Python wrappers once cost 18 s of a 19 s
    analysis (Inductor's layer-norm backward). Each node is now visited once
    per kernel (`clear_memos`)."""

    _NONE: frozenset[int] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self.nodes: dict[int, z3.ExprRef] = {}

    def clear(self) -> None:
        super().clear()
        self.nodes.clear()

    def leaf(self) -> frozenset[int]:
        return self._NONE

    def combine(
        self, ctx: Any, node: Any, app: Any, kids: list[frozenset[int]], context: z3.Context
    ) -> frozenset[int]:
        below = [k for k in kids if k]
        found = below[0] if len(below) == 1 else frozenset().union(*below) if below else self._NONE
        if _is_not_node(ctx, app):
            nid = z3.Z3_get_ast_id(ctx, node)
            self.nodes[nid] = z3.BitVecRef(node, context)
            found = found | {nid}
        return found

    def __call__(self, e: z3.ExprRef) -> list[z3.ExprRef]:
        return [self.nodes[i] for i in sorted(self.value(e))]


_nots_below = _NotsBelow()


# Operators whose operands may be reordered (and, for the associative ones,
# flattened) without changing the value.
_ASSOCIATIVE = frozenset({z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_AND, z3.Z3_OP_OR})
_COMMUTATIVE = _ASSOCIATIVE | {z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT}


class Fingerprints:
    """Structural hashes of terms modulo the order of commutative operands.

    Z3 orders the operands of a sum by the ids of its terms, and the ids
    depend on the order in which terms were built: the same store value,
    built by the original kernel and by its rewrite, can come out of the
    simplifier with its operands in another order. Two terms with equal
    fingerprints are equal; memoised per node, so a DAG costs its size.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[z3.ExprRef, bytes]] = {}
        # The flattened operand hashes of each associative node, for its parents.
        self._operands: dict[int, list[bytes]] = {}

    def of(self, e: z3.ExprRef) -> bytes:
        import hashlib

        memo = self._memo
        stack: list[tuple[z3.ExprRef, bool]] = [(e, False)]
        while stack:
            node, done = stack.pop()
            key = node.get_id()
            if key in memo:
                continue
            if not z3.is_app(node) or node.num_args() == 0:
                memo[key] = (node, hashlib.sha1(node.sexpr().encode()).digest())
                continue
            kids = node.children()
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if k.get_id() not in memo)
                continue
            decl = node.decl()
            kind = decl.kind()
            parts = [memo[k.get_id()][1] for k in kids]
            if kind in _ASSOCIATIVE:
                flat: list[bytes] = []
                for k, part in zip(kids, parts, strict=True):
                    if z3.is_app(k) and k.decl().kind() == kind and k.num_args() > 0:
                        flat.extend(self._operands.get(k.get_id(), [part]))
                    else:
                        flat.append(part)
                parts = sorted(flat)
                self._operands[key] = parts
            elif kind == z3.Z3_OP_EQ and z3.is_bv(kids[0]):
                # a == b as a - b == 0, the sign of the difference chosen by its
                # hash: x == 3 - y and y == 3 - x are one equation.
                diff, neg = normal_form(kids[0] - kids[1]), normal_form(kids[1] - kids[0])
                parts = [min(self.of(diff), self.of(neg))]
            elif kind in _COMMUTATIVE:
                parts = sorted(parts)
            head = f"{decl.name()}/{kind}/{decl.params() if decl.arity() else ''}/{node.sort()}".encode()
            memo[key] = (node, hashlib.sha1(head + b"(" + b",".join(parts) + b")").digest())
        return memo[e.get_id()][1]


def exact_extensions(terms: Iterable[z3.ExprRef]) -> tuple[list[z3.ExprRef], bool]:
    """``terms`` with every ``sext``/``zext`` that the ISA ranges show cannot
    wrap moved inward (`normalize_extensions`), inside loads' addresses too;
    the flag says whether anything moved. Equal to ``terms`` for every value
    of their symbols: no assumption.

    Why: the row ``j + r`` of a 2-D stencil is computed in 32 bits from
    ``%ctaid.y`` and extended before it is multiplied by the pitch
    (``sext(1 + %ctaid.y) * pitch``), where the row's vector load adds the
    pitch to ``sext(%ctaid.y) * pitch``. ``%ctaid.y`` < 65535, so the two
    are one sum of monomials once the extension is inside; `without_wrap`
    leaves it alone (it widens only what mentions a thread id, under an
    assumption)."""
    memo: dict[int, tuple[int, int]] = {}

    def moved(e: z3.ExprRef, inner: z3.ExprRef, signed: bool) -> z3.ExprRef | None:
        out = normalize_extensions(e, memo)
        return None if out.eq(e) else out

    return _replace_extensions(terms, moved)


def without_wrap(terms: Iterable[z3.ExprRef]) -> tuple[list[z3.ExprRef], bool]:
    """``terms`` with every ``sext``/``zext`` of a 32-bit sum, difference or
    product that mentions a thread id replaced by the same arithmetic done in
    the wide type: what they equal when the index arithmetic does not wrap.
    The flag says whether anything was replaced."""

    def widened(e: z3.ExprRef, inner: z3.ExprRef, signed: bool) -> z3.ExprRef | None:
        if not _is_arith(inner) or not (_mentions_thread(inner) or _mentions_stride(inner)):
            return None
        return _wide(inner, e.size(), signed)

    return _replace_extensions(terms, widened)


def _replace_extensions(
    terms: Iterable[z3.ExprRef],
    replace: Callable[[z3.ExprRef, z3.ExprRef, bool], z3.ExprRef | None],
) -> tuple[list[z3.ExprRef], bool]:
    """``terms`` with each outermost extension ``e`` (of ``inner``, by its
    sign or not) that ``replace`` gives a term for replaced by it; the walk
    goes on inside those it leaves. The flag says whether anything was."""
    terms = list(terms)
    pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    seen: set[int] = set()
    stack = [t for t in terms if _has_extension(t)]
    while stack:
        e = stack.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        extended = extension(e)
        if extended is not None:
            out = replace(e, *extended)
            if out is not None:
                pairs.append((e, out))
                continue
        stack.extend(k for k in e.children() if _has_extension(k))
    if not pairs:
        return terms, False
    return [z3.substitute(t, *pairs) for t in terms], True


_SIGNED_COMPARISONS = (z3.Z3_OP_SLT, z3.Z3_OP_SLEQ, z3.Z3_OP_SGT, z3.Z3_OP_SGEQ)


def without_signed_wrap(terms: Iterable[z3.ExprRef]) -> tuple[list[z3.ExprRef], bool]:
    """``terms`` with every signed comparison of 32-bit sums, differences or
    products (``offs + 1 < n - 1``, as masks are written) made on the same
    arithmetic done in 64 bits: what it means when the arithmetic does not
    wrap. A predicate's bounds check then implies another's the way the
    integers do (``0 < i < n - 1`` gives ``i + 1 < n``, false at
    ``n = INT_MIN`` in 32 bits). The flag says whether anything was replaced."""

    def widened(e: z3.ExprRef) -> z3.ExprRef | None:
        kind = e.decl().kind()
        if kind not in _SIGNED_COMPARISONS or e.arg(0).size() != 32 or not any(map(_is_arith, e.children())):
            return None
        x, y = (_wide_sum(k) for k in e.children())
        return {z3.Z3_OP_SLT: x < y, z3.Z3_OP_SLEQ: x <= y, z3.Z3_OP_SGT: x > y, z3.Z3_OP_SGEQ: x >= y}[kind]

    return _replaced(terms, widened)


def _wide_sum(e: z3.ExprRef) -> BV:
    """``e``'s sums, differences and products by constants done in 64 bits
    (``(ctaid * ntid + tid) * 4``, as a tile's index is written), anything
    else (a product of unknowns: without wrap it is its 32-bit value)
    sign-extended as a whole, so that the comparison stays linear for the
    solver."""
    kind = e.decl().kind() if z3.is_app(e) else None
    if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB):
        kids = [_wide_sum(k) for k in e.children()]
        out = kids[0]
        for k in kids[1:]:
            out = out + k if kind == z3.Z3_OP_BADD else out - k
        return out
    if kind == z3.Z3_OP_BMUL:
        unknown = [k for k in e.children() if not z3.is_bv_value(k)]
        if len(unknown) == 1:
            factor = 1
            for k in e.children():
                if z3.is_bv_value(k):
                    factor *= k.as_signed_long()
            return _wide_sum(unknown[0]) * z3.BitVecVal(factor, 64)
    return z3.SignExt(64 - e.size(), e)


#: Special registers whose values lie in [0, 2^31): thread, block, grid and
#: cluster coordinates and sizes, lane and warp numbers.
_COORDINATES = re.compile(
    r"%(?:n?tid|n?ctaid|n?cluster_ctaid|n?clusterid|laneid|n?warpid|n?smid|cluster_ctarank)(?:\.[xyz])?"
)


def _nonnegative(e: z3.ExprRef) -> bool:
    """Whether ``e`` is at least 0 as a signed value wherever index arithmetic
    does not wrap: coordinates, zero-extended narrower values, non-negative
    constants, and sums and products of those."""
    if z3.is_bv_value(e):
        return e.as_signed_long() >= 0
    if not z3.is_app(e):
        return False
    kind = e.decl().kind()
    if kind == z3.Z3_OP_UNINTERPRETED:
        return e.num_args() == 0 and _COORDINATES.fullmatch(e.decl().name()) is not None
    if kind == z3.Z3_OP_ZERO_EXT:
        return True
    if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BMUL):
        return all(_nonnegative(k) for k in e.children())
    return False


def _products_as_symbols(terms: list[z3.ExprRef]) -> tuple[list[z3.ExprRef], list[z3.BoolRef]]:
    """``terms`` with each product of two non-constants replaced by one fresh
    symbol per distinct product, and what is known of the symbols: a product
    of coordinates (``ctaid * ntid``) is not negative where it does not wrap."""
    names = itertools.count()
    facts: list[z3.BoolRef] = []

    def symbol(e: z3.ExprRef) -> z3.ExprRef | None:
        if not z3.is_app_of(e, z3.Z3_OP_BMUL) or sum(not z3.is_bv_value(k) for k in e.children()) < 2:
            return None
        product = z3.BitVec(f"product!{next(names)}", e.size())
        if _nonnegative(e):
            facts.append(product >= 0)
        return product

    return _replaced(terms, symbol)[0], facts


def outermost(
    terms: Iterable[z3.ExprRef],
    stop: Callable[[z3.ExprRef], bool],
    enter: Callable[[z3.ExprRef], bool] = lambda node: True,
) -> list[z3.ExprRef]:
    """The subterms of ``terms`` where ``stop`` holds and holds of none on
    the way down to them, each once, looking only into subterms where
    ``enter`` holds. Depth first in a fixed order, so that what is built
    from the answer (fresh names, substitutions) does not vary."""
    found: list[z3.ExprRef] = []
    stack, seen = list(terms), set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen or not enter(node):
            continue
        seen.add(node.get_id())
        if stop(node):
            found.append(node)
            continue
        stack.extend(node.children())
    return found


def _is_product(node: z3.ExprRef) -> bool:
    """A product of two or more unknowns (`_is_product_node` on a wrapped term)."""
    return _is_product_node(node.ctx_ref(), node.as_ast())


def _is_application(node: z3.ExprRef) -> bool:
    """An application of an uninterpreted function to arguments: a load or a float operation."""
    return z3.is_app(node) and node.num_args() > 0 and node.decl().kind() == z3.Z3_OP_UNINTERPRETED


def _rejoined(term: z3.ExprRef) -> z3.ExprRef:
    """``term`` with each value that was split into halves and put back
    together (``Concat(Extract(63, 32, 2*s), 2*Extract(31, 0, s))``, as
    64-bit products of a loop's step come out of the executor) written as
    the one value it is (``2*s``): Z3's simplifier leaves the halves, and two
    sides that differ only by them are not equal as terms."""

    def whole(node: z3.ExprRef) -> z3.ExprRef | None:
        if not z3.is_app_of(node, z3.Z3_OP_CONCAT) or node.num_args() != 2:
            return None
        high, low = node.children()
        if not z3.is_app_of(high, z3.Z3_OP_EXTRACT):
            return None
        top, cut = high.params()
        inner = high.arg(0)
        if top != inner.size() - 1 or cut != low.size():
            return None
        return inner if simplify(z3.Extract(cut - 1, 0, inner)).eq(simplify(low)) else None

    return _replaced([term], whole)[0][0]


def _replaced(
    terms: Iterable[z3.ExprRef], replace: Callable[[z3.ExprRef], z3.ExprRef | None]
) -> tuple[list[z3.ExprRef], bool]:
    """``terms`` with each outermost node that ``replace`` maps (asked once
    per node) put for what it maps to; the flag says whether any was."""
    pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    seen: set[int] = set()
    terms = list(terms)
    stack = list(terms)
    while stack:
        e = stack.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        new = replace(e)
        if new is not None:
            pairs.append((e, new))
            continue
        stack.extend(e.children())
    if not pairs:
        return terms, False
    return [z3.substitute(t, *pairs) for t in terms], True


def _without_wrap_query(
    hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef
) -> tuple[list[z3.BoolRef], z3.BoolRef] | None:
    """The hypotheses and claim with signed comparisons widened
    (`without_signed_wrap`) and products of unknowns as symbols (one value to
    the bounds checks: it spares the solver the multiplier, and a claim true
    of any value is true of the product); None where nothing was widened."""
    (*wide_hypotheses, wide_claim), changed = without_signed_wrap([*hypotheses, claim])
    if not changed:
        return None
    (*wide_hypotheses, wide_claim), facts = _products_as_symbols([*wide_hypotheses, wide_claim])
    return [*wide_hypotheses, *facts], wide_claim


def _has_functions(claim: z3.ExprRef, hypotheses: Sequence[z3.ExprRef]) -> bool:
    """Whether uninterpreted functions (loads, float operations) occur: then
    the solver needs more than bit-vectors."""
    return any(_mentions_memory(e) for e in (claim, *hypotheses))


def _launch(c: z3.ExprRef, size: int, threads: int, blocks: int) -> z3.ExprRef:
    """The value of unknown ``c`` in a plausible launch: ``threads`` along
    x, one along y and z (so thread 0 there), a grid of ``blocks`` at its
    last block, the first iteration of every loop, and ``size`` for a kernel
    parameter or other value (odd, so that rows do not align with warps)."""
    name = c.decl().name()
    if name == "%ntid.x":
        value = threads
    elif name.startswith("%ntid."):
        value = 1
    elif name.startswith("%tid."):
        value = 0
    elif name.startswith("%nctaid."):
        value = blocks
    elif name.startswith("%ctaid."):
        value = blocks - 1
    elif name.startswith("iter_"):
        value = 0
    else:
        value = size
    return z3.BitVecVal(value, c.sort().size()) if z3.is_bv(c) else z3.BoolVal(bool(value))


def _broken(claim: z3.BoolRef) -> bool:
    """Whether a claim without unknowns (numbers, and loads at addresses
    that are numbers or a number apart) fails: false, or an equality of two
    applications of one uninterpreted function (a load, a float operation)
    whose arguments differ by a number other than 0, which its values need
    not satisfy. (GCC's arrays hang off a pointer loaded from the argument
    block: two elements are ``load(2120 + p) == load(4264 + p)``, a
    different address whatever ``p`` is.)"""
    if z3.is_false(claim):
        return True
    if not z3.is_eq(claim):
        return False
    a, b = claim.arg(0), claim.arg(1)
    if not (z3.is_app(a) and z3.is_app(b)) or not a.decl().eq(b.decl()):
        return False
    if a.decl().kind() != z3.Z3_OP_UNINTERPRETED or a.num_args() == 0:
        return False
    return any(_a_number_apart(x, y) for x, y in zip(a.children(), b.children(), strict=True))


def _a_number_apart(x: z3.ExprRef, y: z3.ExprRef) -> bool:
    """Whether two arguments differ by a number other than 0 whatever their unknowns."""
    if not (z3.is_bv(x) and z3.is_bv(y)):
        return False
    difference = simplify(x - y)
    return z3.is_bv_value(difference) and difference.as_long() != 0


def conjuncts(hypotheses: Sequence[z3.BoolRef]) -> list[z3.BoolRef]:
    """The hypotheses split at ``And`` and ``Not(Or(...))``, so that a
    conjunct the query does not need can be left out."""
    out: list[z3.BoolRef] = []
    stack = list(reversed(hypotheses))
    while stack:
        h = stack.pop()
        if z3.is_and(h):
            stack.extend(reversed(h.children()))
        elif z3.is_not(h) and z3.is_or(h.arg(0)):
            stack.extend(reversed([z3.Not(c) for c in h.arg(0).children()]))
        else:
            out.append(h)
    return out


# Conditions of more nodes than this are split on rather than decided: a
# fallback predicate (activemask, room, incomplete warp) is rarely decided
# by the context, and asking costs two large queries.
_DECIDE_LIMIT = 40


def _size(e: z3.ExprRef, limit: int = _DECIDE_LIMIT + 1) -> int:
    """Distinct nodes of ``e``, counted up to ``limit``."""
    stack, seen = [e], set()
    while stack and len(seen) < limit:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        stack.extend(node.children())
    return len(seen)


# Operations that move bits without looking at them: an ``If`` under one
# of them can be taken outside (`_if_outside`).
_BIT_MOVES = (z3.Z3_OP_EXTRACT, z3.Z3_OP_ZERO_EXT, z3.Z3_OP_SIGN_EXT, z3.Z3_OP_CONCAT)


def _if_outside(e: z3.ExprRef) -> z3.ExprRef:
    """``e`` with an ``If`` under extractions, extensions and concatenations
    taken outside them: ``Concat(0, If(c, x, y))`` becomes ``If(c, Concat(0,
    x), Concat(0, y))``. A narrow value in a wide register (a byte shuffled
    in a 32-bit register, a half packed for its shuffle) is such a term, and
    `Prover.equal_by_cases` splits at an outer ``If`` with the cheap test for
    large conditions rather than handing them to the solver whole."""
    if not z3.is_app(e) or e.decl().kind() not in _BIT_MOVES:
        return e
    kids = [_if_outside(k) for k in e.children()]
    ifs = [k for k, kid in enumerate(kids) if z3.is_app_of(kid, z3.Z3_OP_ITE)]
    if len(ifs) != 1:
        return e
    k = ifs[0]
    cond, then, other = kids[k].arg(0), kids[k].arg(1), kids[k].arg(2)
    rebuild = e.decl()
    return z3.If(
        cond,
        _if_outside(simplify(rebuild(*kids[:k], then, *kids[k + 1 :]))),
        _if_outside(simplify(rebuild(*kids[:k], other, *kids[k + 1 :]))),
    )


def _inner_condition(e: z3.ExprRef) -> z3.BoolRef | None:
    """The condition of the first ``If`` inside ``e`` (outside loads and other
    functions) that is small and reads no memory: one the context can decide."""
    stack, seen = [e], set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen or not z3.is_app(node):
            continue
        seen.add(node.get_id())
        if node.num_args() and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            continue
        if z3.is_app_of(node, z3.Z3_OP_ITE):
            cond = node.arg(0)
            if not _mentions_memory(cond) and _size(cond) <= _DECIDE_LIMIT:
                return cond
        stack.extend(reversed(node.children()))
    return None


def _is_arith(e: z3.ExprRef) -> bool:
    return z3.is_app(e) and e.decl().kind() in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_BMUL)


def _constant_named(test: Callable[[str], bool]) -> Callable[[Any, Any], bool]:
    """A node test for `_Property`: a constant (no arguments, uninterpreted)
    whose name passes ``test``."""

    def node_has(ctx: Any, app: Any) -> bool:
        if z3.Z3_get_app_num_args(ctx, app) or _decl_kind(ctx, app) != z3.Z3_OP_UNINTERPRETED:
            return False
        return test(z3.Z3_get_symbol_string(ctx, z3.Z3_get_decl_name(ctx, z3.Z3_get_app_decl(ctx, app))))

    return node_has


_mentions_thread = _Property(_constant_named(lambda name: name in ("%tid.x", "%laneid")))
# Block and grid sizes and iteration counts: what strides an index (a grid-stride loop's).
_mentions_stride = _Property(_constant_named(lambda name: name.startswith(("%ntid.", "%nctaid.", "iter_"))))

_WIDE_MEMO: dict[tuple[int, int, bool], tuple[z3.ExprRef, BV]] = {}


def _wide(e: z3.ExprRef, width: int, signed: bool) -> BV:
    """``e`` computed exactly in ``width`` bits (its leaves extended); memoised
    per node (index terms share their subterms)."""
    key = (e.get_id(), width, signed)
    hit = _WIDE_MEMO.get(key)
    if hit is not None:
        return hit[1]
    extra = width - e.size()
    kind = e.decl().kind() if z3.is_app(e) else None
    if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_BMUL):
        kids = [_wide(k, width, signed) for k in e.children()]
        out = kids[0]
        for k in kids[1:]:
            out = out + k if kind == z3.Z3_OP_BADD else out - k if kind == z3.Z3_OP_BSUB else out * k
    elif z3.is_bv_value(e):
        # A constant as C's int arithmetic wrote it: ``i - 2`` is ``i +
        # 0xfffffffe`` in PTX, and an index that does not wrap is i - 2, also
        # where a compiler that knows it is not negative zero-extends it.
        out = z3.BitVecVal(e.as_signed_long(), width)
    elif _is_truncated_count(e, width):
        # A loop's iteration count in 32-bit index arithmetic (an ``int``
        # induction variable stepped once an iteration): without wrap, the
        # count itself, as the 64-bit side of the same index counts it.
        out = e.arg(0)
    elif signed and interval(e)[1] < 1 << (e.size() - 1):
        # Below the sign bit (a thread or block coordinate): the zero extension,
        # as the unsigned side of a comparison writes the same leaf.
        out = z3.ZeroExt(extra, e)
    else:
        out = z3.SignExt(extra, e) if signed else z3.ZeroExt(extra, e)
    _WIDE_MEMO[key] = (e, out)
    return out


def _is_truncated_count(e: z3.ExprRef, width: int) -> bool:
    """Whether ``e`` is the low bits of an iteration count (``iter_*``, the
    symbolic executor's, as wide as ``width``)."""
    if not z3.is_app_of(e, z3.Z3_OP_EXTRACT) or e.params()[1] != 0:
        return False
    count = e.arg(0)
    return z3.is_const(count) and count.size() == width and count.decl().name().startswith("iter_")


class Prover:
    """Validity checks with a deterministic effort limit.

    ``proves(hypotheses, claim)`` is True when ``claim`` follows, False when
    a counterexample exists, None when the solver gave up within its limit
    (callers treat None as "not proved").
    """

    def __init__(self, timeout_ms: int = 500) -> None:
        self.rlimit = RLIMIT_PER_MS * timeout_ms
        self.timeout_ms = timeout_ms
        # The effort limit decides, the same on every machine; the clock only
        # guards against a tactic that does not count it. A loaded machine
        # (CI's two cores running two test workers) stretched a detection
        # query that ends in 0.12 s past 5x its 50 ms: gfortran's lap3d lost
        # a proven shuffle there and not here. Two seconds at the least.
        self.wall_ms = max(5 * timeout_ms, 2000)
        self.calls = 0
        self.unknown = 0
        self.symbols = Symbols()
        self.fingerprints = Fingerprints()
        self._conjunct_memo: dict[tuple[int, ...], tuple[list[z3.BoolRef], list[z3.BoolRef]]] = {}
        # Per hypothesis list, its conjuncts as (stated, true/false) pairs (`_known`).
        self._known_memo: dict[tuple[int, ...], list[tuple[z3.BoolRef, z3.BoolRef]]] = {}
        self._cache: dict[tuple[int, ...], tuple[bool | None, z3.ExprRef, tuple[z3.ExprRef, ...]]] = {}
        # Per hypothesis list, the plausible launches' models found so far (None: no fit), for `refuted`.
        self._models: dict[tuple[int, ...], tuple[list[z3.ModelRef | None], tuple[z3.BoolRef, ...]]] = {}
        self._constants = TermConstants()

    def equal(
        self, hypotheses: Sequence[z3.BoolRef], a: z3.ExprRef, b: z3.ExprRef
    ) -> tuple[bool | None, bool]:
        """Whether ``a == b`` holds, and whether that needed the no-wrap
        assumption. Cheapest first: equal normal forms, equal normal forms
        with the extensions that cannot wrap moved inward (exact), equal normal
        forms without wrap, the solver, the solver without wrap.

        In rows of one warp (`_lane_is_tid_x`) ``%laneid`` is written as
        ``%tid.x`` first: a shuffle's shifted source (lane ids) and the load
        (thread ids) then compare as terms. Left to the solver, gfortran's
        lap3d's ``u(i-1)`` took most of detection's effort limit, and so
        held or not by the order Z3 gave the operands, which depends on
        every term the process made before (CI's full run lost it)."""
        a, b = self._lanes_as_threads(hypotheses, a, b)
        a, b = _rejoined(a), _rejoined(b)
        if self._same(a, b):
            return True, False
        (ea, eb), moved = exact_extensions([a, b])
        if moved and self._same(ea, eb):
            return True, False
        (wa, wb), changed = without_wrap([_not_as_arithmetic(ea), _not_as_arithmetic(eb)])
        if changed and self._same(wa, wb):
            return True, True
        # Loads and float operations as opaque values: a claim that holds
        # for any values holds for the real ones (one solver query without
        # the address arithmetic inside them).
        if _mentions_memory(a) or _mentions_memory(b):
            oa, ob = self._opaque(ea, eb)
            if self._check([], oa == ob):
                return True, False
            if changed:
                oa, ob = self._opaque(wa, wb)
                if self._check([], oa == ob):
                    return True, True
        nonlinear_claim = _nonlinear(ea) or _nonlinear(eb)
        if (
            nonlinear_claim
            and self.refuted(hypotheses, ea == eb)
            and (not changed or self.refuted(hypotheses, wa == wb))
        ):
            return False, False
        plain = self.proves(hypotheses, ea == eb)
        if plain or not changed:
            return plain, False
        wide = self.proves(hypotheses, wa == wb)
        return (True, True) if wide else (plain if wide is False else None, False)

    def refuted(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> bool:
        """Whether a thread of one block is seen to break ``claim``, an
        equality of loaded values, where the hypotheses hold: True only on a
        counterexample (a load at another address, another number).

        Why: a collapsed loop (``collapse(2)``, OpenMP's and OpenACC's usual
        2-D and 3-D form) divides the linear index into coordinates, so lane
        ``laneid + N`` loads the next element except where its row wraps,
        and with the grid's stride products in the terms the solver spends
        its whole limit (0.2 s a question, twice per flow and variant) to
        answer "unknown": a clang ``collapse(3)`` stencil took 14 s for no
        shuffle, reported as "solver gave up". A found thread
        (`_at_threads`) is a counterexample, so the answer is the solver's
        own ("does not hold"); finding none proves nothing and the solver is
        asked as before."""
        return any(_broken(value) for value in self._at_threads(hypotheses, claim))

    def _splits(self, hypotheses: Sequence[z3.BoolRef], cond: z3.BoolRef) -> bool:
        """Whether ``cond`` is seen true at one thread and false at another
        where the hypotheses hold (so `decide` can only answer None).

        A proof splits the rewritten value at the lane model's conditions
        (source lane in the warp, in the row); in a collapsed loop's kernel
        each one the hypotheses leave open cost the solver its limit twice
        (GCC's Fortran ``lap3d``: 14 s of proof for one shuffle)."""
        seen = set()
        for value in self._at_threads(hypotheses, cond):
            if z3.is_true(value) or z3.is_false(value):
                seen.add(z3.is_true(value))
                if len(seen) == 2:
                    return True
        return False

    def _at_threads(self, hypotheses: Sequence[z3.BoolRef], term: z3.ExprRef) -> Iterator[z3.ExprRef]:
        """``term`` evaluated at the threads of one block where the
        hypotheses hold, for each plausible launch that fits them: every
        unknown but the thread's x position (and its lane) takes its value
        from that launch's model of the hypotheses (`_models_of`), then the
        block's threads are taken one by one (at most `_REFUTING_THREADS`):
        numbers and loads at numbered addresses only, no solving. A load
        in the hypotheses whose address is the same in every thread (GCC's
        argument block, a Fortran descriptor's stride) takes the model's
        value too; where one depends on the thread, nothing is evaluated."""
        loaded = self._thread_free_loads(hypotheses)
        if loaded is None:
            return
        for model in self._models_of(hypotheses, term):
            yield from self._at_threads_of(model, hypotheses, term, loaded)

    def _at_threads_of(
        self,
        model: z3.ModelRef,
        hypotheses: Sequence[z3.BoolRef],
        term: z3.ExprRef,
        loaded: list[z3.ExprRef],
    ) -> Iterator[z3.ExprRef]:
        """`_at_threads` for one model."""
        if loaded:
            fixed = [(app, model.eval(app, model_completion=True)) for app in loaded]
            hypotheses = [z3.substitute(h, *fixed) for h in hypotheses]
            term = z3.substitute(term, *fixed)
        names = {}
        for e in (term, *hypotheses):
            for c in self._constants.of(e):
                names.setdefault(c.decl().name(), c)
        moving = {_TID_X.decl().name(), _LANEID.decl().name()}
        pins = [(c, model.eval(c, model_completion=True)) for n, c in names.items() if n not in moving]
        facts = [simplify(z3.substitute(h, *pins)) for h in hypotheses] if pins else list(hypotheses)
        if any(z3.is_false(f) for f in facts):
            return
        facts = [f for f in facts if not z3.is_true(f)]
        at_block = simplify(z3.substitute(term, *pins)) if pins else term
        tid0 = model.eval(_TID_X, model_completion=True).as_long()
        lane0 = model.eval(_LANEID, model_completion=True).as_long()
        # A block known to the lane model has its size in the hypotheses
        # (``%tid.x < 32``), not as an unknown: they keep out what is not a thread.
        ntid = (
            model.eval(z3.BitVec("%ntid.x", 32), model_completion=True).as_long()
            if "%ntid.x" in names
            else _REFUTING_THREADS
        )
        for t in range(min(ntid, _REFUTING_THREADS)):
            thread = [(_TID_X, z3.BitVecVal(t, 32)), (_LANEID, z3.BitVecVal((lane0 + t - tid0) % 32, 32))]
            if all(z3.is_true(simplify(z3.substitute(f, *thread))) for f in facts):
                yield simplify(z3.substitute(at_block, *thread))

    def _thread_free_loads(self, hypotheses: Sequence[z3.BoolRef]) -> list[z3.ExprRef] | None:
        """The outermost applications of uninterpreted functions (loads,
        float operations) in the hypotheses, where none of their arguments
        names the thread; None where one does."""
        found = outermost(hypotheses, _is_application, _mentions_memory)
        return None if any(_mentions_thread(node) for node in found) else found

    def _models_of(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> Iterator[z3.ModelRef]:
        """Models of the hypotheses, one per plausible launch that fits them,
        for evaluating ``claim``; each found when asked for (so a claim the
        first one breaks costs one) and memoised per hypothesis list and the
        unknowns of the claim's products.

        A model of a grid's index arithmetic (row pitch times row, the
        collapsed loop's divisions) is as hard for the solver as a proof, so
        the unknowns inside products first take the values of a plausible
        launch (`_PLAUSIBLE_LAUNCHES`, `_launch`) and the solver finds the
        rest, linear. Where none fits there is no model: asked as is, the
        solver would spend its limit. Where nothing is inside a product the
        solver finds the one model itself."""
        in_products = self._in_products([claim, *hypotheses])
        key = (*(h.get_id() for h in hypotheses), *(c.get_id() for c in in_products))
        found, _ = self._models.setdefault(key, ([], tuple(hypotheses)))
        launches = _PLAUSIBLE_LAUNCHES if in_products else _PLAUSIBLE_LAUNCHES[:1]
        for n, launch in enumerate(launches):
            if n == len(found):
                found.append(self._launch_model(hypotheses, in_products, *launch))
            if found[n] is not None:
                yield found[n]

    def _launch_model(
        self,
        hypotheses: Sequence[z3.BoolRef],
        in_products: list[z3.ExprRef],
        size: int,
        step: int,
        threads: int,
        blocks: int,
    ) -> z3.ModelRef | None:
        """A model of the hypotheses with the unknowns in ``in_products``
        pinned to one launch, and then the loads left inside products (a
        collapsed loop's bounds, read from GCC's argument block) to the
        sizes after theirs: a product of two loaded bounds cost the solver
        0.1 s a model (gfortran's ``lap3d``)."""
        pins = [(c, _launch(c, size + step * n, threads, blocks)) for n, c in enumerate(in_products)]
        facts = [simplify(z3.substitute(h, *pins)) for h in hypotheses] if pins else list(hypotheses)
        if any(z3.is_false(f) for f in facts):
            return None
        first = size + step * len(pins)
        loaded = [
            (app, z3.BitVecVal(first + step * n, app.size()))
            for n, app in enumerate(self._loads_in_products(facts))
        ]
        if loaded:
            pinned = [simplify(z3.substitute(f, *loaded)) for f in facts]
            if not any(z3.is_false(f) for f in pinned):
                facts = pinned
                pins += loaded
        s = z3.SolverFor("QF_BV") if not _has_functions(z3.BoolVal(True), facts) else z3.Solver()
        s.set("rlimit", self.rlimit)
        s.add(*facts, *(c == v for c, v in pins))
        return s.model() if s.check() == z3.sat else None

    @staticmethod
    def _loads_in_products(terms: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
        """The outermost bit-vector loads inside products of unknowns that do not name the thread."""
        products = outermost(terms, _is_product, _nonlinear)
        return [
            app for app in outermost(products, _is_application) if z3.is_bv(app) and not _mentions_thread(app)
        ]

    def _in_products(self, terms: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
        """The unknowns (but the thread's x position) inside products of unknowns."""
        found: dict[str, z3.ExprRef] = {}
        for product in outermost(terms, _is_product, _nonlinear):
            for c in self._constants.of(product):
                found.setdefault(c.decl().name(), c)
        moving = (_TID_X.decl().name(), _LANEID.decl().name())
        return [c for name, c in sorted(found.items()) if name not in moving]

    def _same(self, a: z3.ExprRef, b: z3.ExprRef) -> bool:
        """Equal as terms, after normalisation and modulo operand order."""
        na, nb = normal_form(a), normal_form(b)
        return na.eq(nb) or self.fingerprints.of(na) == self.fingerprints.of(nb)

    def _opaque(self, a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """``a`` and ``b`` with every outermost application of an uninterpreted
        function replaced by a variable, one per application modulo operand
        order (`Fingerprints`)."""
        names: dict[bytes, z3.ExprRef] = {}
        pairs = []
        for node in outermost([a, b], _is_application):
            key = self.fingerprints.of(normal_form(node))
            var = names.get(key)
            if var is None:
                var = names[key] = z3.Const(f"opaque!{len(names)}", node.sort())
            pairs.append((node, var))
        if not pairs:
            return a, b
        return z3.substitute(a, *pairs), z3.substitute(b, *pairs)

    def equal_by_cases(
        self, hypotheses: Sequence[z3.BoolRef], a: z3.ExprRef, b: z3.ExprRef, depth: int = 0
    ) -> tuple[bool | None, bool]:
        """`equal`, splitting ``a`` at its ``If``s first.

        A rewritten value is a nest of conditionals: the fallback load under
        its predicate, the shuffle under the lane model's cases (source lane
        in range, in the same row, existing). Deciding each condition from
        the hypotheses and the conditions above it (a small query about
        thread ids), and comparing the branches that remain, is what a
        person proving the rewrite would do; handed the whole term at once,
        the solver would bit-blast divisions it never needs.
        """
        if depth > 16:
            return self.equal(hypotheses, a, b)
        if depth == 0:
            # The conditions split on below name lanes too (`equal`, which
            # the cases end in, writes its own sides so as well).
            a, b = self._lanes_as_threads(hypotheses, a, b)
        a = _if_outside(a)
        if z3.is_app_of(a, z3.Z3_OP_ITE):
            cond, then, other = a.arg(0), a.arg(1), a.arg(2)
            if not _mentions_memory(cond):
                cond = self._reduced(hypotheses, cond)
            big = _mentions_memory(cond) or _size(cond) > _DECIDE_LIMIT
        else:
            # An If inside (a 64-bit value is two shuffled halves, each under
            # its own lane cases): split on its condition, in the whole term.
            inner = _inner_condition(a)
            if inner is None:
                return self.equal(hypotheses, a, b)
            then = simplify(z3.substitute(a, (inner, z3.BoolVal(True))))
            other = simplify(z3.substitute(a, (inner, z3.BoolVal(False))))
            cond, big = self._reduced(hypotheses, inner), False
        decided = None if big else self.decide(hypotheses, cond)
        needs_no_wrap = False
        if decided is None and not big:
            # A predicated source under the load's own predicate: the two
            # bounds checks meet where their arithmetic does not wrap.
            decided = self.decide_without_wrap(hypotheses, cond)
            needs_no_wrap = decided is not None
        if decided is True:
            sides = [(then, list(hypotheses))]
        elif decided is False:
            sides = [(other, list(hypotheses))]
        else:
            sides = [(then, [*hypotheses, cond]), (other, [*hypotheses, z3.Not(cond)])]
        for branch, context in sides:
            if branch.eq(b):
                continue
            holds, no_wrap = self.equal_by_cases(context, branch, b, depth + 1)
            if not holds:
                return holds, False
            needs_no_wrap |= no_wrap
        return True, needs_no_wrap

    def _lanes_as_threads(
        self, hypotheses: Sequence[z3.BoolRef], a: z3.ExprRef, b: z3.ExprRef
    ) -> tuple[z3.ExprRef, z3.ExprRef]:
        """``a`` and ``b`` with ``%laneid`` written ``%tid.x`` where the
        hypotheses make them one number (`_lane_is_tid_x`): rows of one warp
        (GCC's vector loops), where the two sides compare as terms only once
        they are written alike (gfortran's lap3d: the stride times ``laneid -
        1`` against the stride times ``tid.x``)."""
        if not self._lane_is_tid_x(hypotheses):
            return a, b
        return z3.substitute(a, (_LANEID, _TID_X)), z3.substitute(b, (_LANEID, _TID_X))

    def _lane_is_tid_x(self, hypotheses: Sequence[z3.BoolRef]) -> bool:
        """Whether the hypotheses make ``%laneid`` equal ``%tid.x``: they
        state the executor's axiom ``%laneid == %tid.x % 32`` and bound
        ``%tid.x`` below 32 (a block 32 threads wide)."""
        facts = self._facts(hypotheses)
        axiom = any(
            z3.is_eq(f) and f.arg(0).eq(_LANEID) and simplify(f.arg(1)).get_id() in _LOW_BITS_OF_TID_X
            for f in facts
        )
        bounded = any(
            z3.is_app_of(f, z3.Z3_OP_ULT)
            and f.arg(0).eq(_TID_X)
            and z3.is_bv_value(f.arg(1))
            and f.arg(1).as_long() <= 32
            for f in facts
        )
        return axiom and bounded

    def decide(self, hypotheses: Sequence[z3.BoolRef], cond: z3.BoolRef) -> bool | None:
        """Whether the hypotheses make ``cond`` true, false, or neither (None).

        Both sides are asked at each stage of `proves` (linear facts,
        geometry, everything) before the next, more expensive, stage."""
        cond = simplify(cond)
        if not (z3.is_true(cond) or z3.is_false(cond)):
            cond = self._known(hypotheses, cond)
        if z3.is_true(cond) or z3.is_false(cond):
            return z3.is_true(cond)
        *cheaper, everything = self._stages(hypotheses, cond)
        for facts in cheaper:
            if self._check(facts, cond):
                return True
            if self._check(facts, z3.Not(cond)):
                return False
        if (_nonlinear(cond) or any(_nonlinear(f) for f in everything)) and self._splits(hypotheses, cond):
            return None
        if self._check(everything, cond):
            return True
        if self._check(everything, z3.Not(cond)):
            return False
        return None

    def decide_without_wrap(self, hypotheses: Sequence[z3.BoolRef], cond: z3.BoolRef) -> bool | None:
        """`decide` with the signed comparisons taken without wrap
        (`without_signed_wrap`); None also where nothing was widened."""
        query = _without_wrap_query(hypotheses, cond)
        return None if query is None else self.decide(*query)

    def proves_without_wrap(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> bool:
        """Whether `proves` holds with the signed comparisons taken without wrap
        (False also where nothing was widened)."""
        query = _without_wrap_query(hypotheses, claim)
        return query is not None and self.proves(*query) is True

    def _facts(self, hypotheses: Sequence[z3.BoolRef]) -> list[z3.BoolRef]:
        """The conjuncts of ``hypotheses`` (memoised per hypothesis list)."""
        key = tuple(h.get_id() for h in hypotheses)
        cached = self._conjunct_memo.get(key)
        if cached is None:
            cached = self._conjunct_memo[key] = (list(hypotheses), conjuncts(hypotheses))
        return cached[1]

    def _known(self, hypotheses: Sequence[z3.BoolRef], cond: z3.BoolRef) -> z3.BoolRef:
        """``cond`` with each part that a hypothesis states (or denies)
        written as true (false), simplified: equal to ``cond`` wherever the
        hypotheses hold (see `_reduced`)."""
        key = tuple(h.get_id() for h in hypotheses)
        pairs = self._known_memo.get(key)
        if pairs is None:
            pairs = self._known_memo[key] = [
                (fact.arg(0), z3.BoolVal(False)) if z3.is_not(fact) else (fact, z3.BoolVal(True))
                for fact in self._facts(hypotheses)
                if not z3.is_true(fact)
            ]
        return simplify(z3.substitute(cond, *pairs)) if pairs else cond

    def _reduced(self, hypotheses: Sequence[z3.BoolRef], cond: z3.BoolRef) -> z3.BoolRef:
        """``cond`` with what the hypotheses state of it written out
        (`_known`), and of a conjunction each small conjunct the hypotheses
        decide dropped (or the whole false): equal to ``cond`` wherever the
        hypotheses hold.

        Why: a fallback load raised above its branch runs under the corner
        test and the branch's condition (`ptxasw.synth.codegen`). The flow's
        path implies the branch's part, though not always in its words (a
        bound ``e + 5 < n`` gives ``e + 1 < n``); left in, the conjunction
        is too big to decide and every case below it carries it, each a
        solver question of its own (a random masked kernel's proof: 33 s
        against 3 s with the load in the branch)."""
        cond = self._known(hypotheses, cond)
        if not z3.is_and(cond):
            return cond
        kept: list[z3.BoolRef] = []
        for part in cond.children():
            decided = None if _size(part) > _DECIDE_LIMIT else self.decide(hypotheses, part)
            if decided is False:
                return z3.BoolVal(False)
            if decided is None:
                kept.append(part)
        return z3.And(kept) if len(kept) > 1 else kept[0] if kept else z3.BoolVal(True)

    def _stages(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> list[list[z3.BoolRef]]:
        """The hypothesis sets `proves` tries, cheapest first (each a subset of the last)."""
        facts = self._facts(hypotheses)
        stages = []
        if not _nonlinear(claim):
            linear = [h for h in facts if not _nonlinear(h)]
            if len(linear) < len(facts):
                stages.append(linear)
        if self._geometric(claim):
            geometric = [h for h in facts if self._geometric(h)]
            if len(geometric) < len(facts):
                stages.append(geometric)
        stages.append(facts)
        return stages

    def proves(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> bool | None:
        """Whether ``claim`` follows from ``hypotheses`` (None: the solver gave up).

        A claim without products of two unknowns is first tried under the
        hypotheses without them (bit-blasting a 32-bit multiplication is most
        of what a query costs). A claim about the block's geometry alone
        (thread ids, block shape, lane) is then tried under the hypotheses
        about the geometry alone:
        fewer conjuncts, no products of kernel parameters, and the same
        question for every flow and every site of the same delta, so the
        answer is mostly cached. Dropping hypotheses never makes a false
        claim provable; a failure falls back to all of them.
        """
        claim = simplify(claim)
        if z3.is_true(claim):
            return True
        *cheaper, facts = self._stages(hypotheses, claim)
        for stage in cheaper:
            if self._check(stage, claim):
                return True
        return self._check(facts, claim)

    def follows_from_geometry(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> bool:
        """Whether the hypotheses about the block's geometry alone (thread
        ids, block shape, lane) prove ``claim``, itself about the geometry:
        `proves`'s cheap stage without its fall-back to every hypothesis,
        which costs most where the claim does not follow. False also where
        it might follow from the others."""
        claim = simplify(claim)
        if not self._geometric(claim):
            return False
        geometric = [h for h in self._facts(hypotheses) if self._geometric(h) and not _nonlinear(h)]
        return z3.is_true(claim) or self._check(geometric, claim) is True

    def _geometric(self, e: z3.ExprRef) -> bool:
        return all(n.startswith(_GEOMETRY) for n in self.symbols.of(e))

    def _check(self, hypotheses: Sequence[z3.BoolRef], claim: z3.BoolRef) -> bool | None:
        key = (claim.get_id(), *(h.get_id() for h in hypotheses))
        hit = self._cache.get(key)
        if hit is not None:
            return hit[0]
        self.calls += 1
        s = z3.SolverFor("QF_BV") if not _has_functions(claim, hypotheses) else z3.Solver()
        s.set("rlimit", self.rlimit)
        s.set("timeout", self.wall_ms)
        s.add(*hypotheses)
        s.add(z3.Not(claim))
        result = s.check()
        answer = True if result == z3.unsat else False if result == z3.sat else None
        if answer is None:
            self.unknown += 1
        # The terms are kept with the answer so that their ids stay theirs.
        self._cache[key] = (answer, claim, tuple(hypotheses))
        return answer
