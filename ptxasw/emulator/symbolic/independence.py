"""Constraint independence: the part of a context a query can depend on.

A query ``Q`` asked under a context ``C1 ∧ ... ∧ Cn`` (path condition and
axioms) only depends on the conjuncts that share a symbol with it, directly
or through other conjuncts. When the context is satisfiable (the executor
only asks under path conditions it explores), ``Q ∧ C`` is satisfiable
exactly when ``Q`` with that connected part of ``C`` is: the rest mentions
other symbols and has a model of its own. Address questions of GPU kernels
(``-8*iter + 40`` against a stack slot) and branch conditions of one loop
usually need a handful of conjuncts out of a hundred, and Z3 answers the
small query in a millisecond.

Symbols are uninterpreted constants and functions, by name (two
declarations of one name count as one symbol, which can only make the
connected part larger). A read ``f(a)`` of a memory function that the
context never names, applied once in the query, is a free value: it ties
the query to ``f`` but not to what ``a`` mentions (`Symbols.of_query`).

Reads at constant offsets of one base, ``f(&frame + 456)`` and
``f(&frame + 480)``, are reads of two different places: each is a symbol of
its own (a "point", `Symbols.refined`) unless another read could meet them,
``f`` read at an address of another shape or at an offset of another base
(then they are ``f`` and the base's symbols again). GCC's -O0 code keeps
every loop counter in its frame, and a branch on two counters otherwise
drew in every branch on every counter read at that memory version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import z3

from ptxasw.emulator.symbolic import raw

__all__ = ["Symbols", "connected", "free_literal"]

_NONE: frozenset[str] = frozenset()


class Symbols:
    """Symbol sets of Z3 terms, memoised per subterm.

    Terms are kept alive beside their sets so that their ids are not reused.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[z3.ExprRef, frozenset[str]]] = {}
        self._literals: dict[int, tuple[z3.ExprRef, str | None]] = {}
        # By Python object: path conditions and axioms are the same objects
        # from query to query, and id() costs less than a Z3 call.
        self._by_object: dict[int, tuple[z3.ExprRef, frozenset[str], str | None]] = {}
        self._apps: dict[int, tuple[z3.ExprRef, dict[str, frozenset[int]]]] = {}
        # `refined` sets by term id, and by object for context conjuncts.
        self._refined: dict[int, tuple[z3.ExprRef, frozenset[str]]] = {}
        self._refined_by_object: dict[int, tuple[z3.ExprRef, frozenset[str]]] = {}
        # A point's name -> (function, base) it reads; a base is the ids of
        # its terms (the terms stay alive in `_refined`, with the read).
        self.points: dict[str, tuple[str, str]] = {}
        # A point's name -> `of` of the read: what it counts as when points merge.
        self.read_symbols: dict[str, frozenset[str]] = {}

    def conjunct(self, c: z3.BoolRef) -> tuple[frozenset[str], str | None]:
        """`of` and `literal` of a context conjunct, memoised by object."""
        hit = self._by_object.get(id(c))
        if hit is None or hit[0] is not c:
            hit = (c, self.of(c), self.literal(c))
            self._by_object[id(c)] = hit
        return hit[1], hit[2]

    def of_query(self, query: Sequence[z3.BoolRef], context: Sequence[frozenset[str]]) -> set[str]:
        """The symbols of ``query`` that tie it to a context of these symbol
        sets. A read ``f(a)`` of a function that no context conjunct names and
        that the query applies to one argument only counts as ``f``: ``f``
        can be the constant ``f(a)`` takes in any model, so what constrains
        ``a`` cannot change the answer (a loop counter loaded from GCC's
        stack at a version of its own, whose address names ``%tid.y``,
        which half the axioms name)."""
        apps: dict[str, set[int]] = {}
        for q in query:
            for name, ids in self._applications(q).items():
                apps.setdefault(name, set()).update(ids)
        opaque = {name for name, ids in apps.items() if len(ids) == 1 and not any(name in s for s in context)}
        wanted: set[str] = set()
        if not opaque:
            for q in query:
                wanted |= self.of(q)
            return wanted
        seen: set[int] = set()
        stack = list(query)
        while stack:
            node = stack.pop()
            key = node.get_id()
            if key in seen:
                continue
            seen.add(key)
            inside = self.of(node)
            if inside.isdisjoint(opaque):
                wanted |= inside
                continue
            decl = node.decl()
            if decl.kind() == z3.Z3_OP_UNINTERPRETED and decl.name() in opaque and node.num_args():
                wanted.add(decl.name())
                continue
            stack.extend(node.children())
        return wanted

    def _applications(self, f: z3.ExprRef) -> dict[str, frozenset[int]]:
        """Uninterpreted function name -> ids of its applications in ``f``,
        memoised per formula (kept alive with it). Walks the raw AST
        (`raw`): a query's terms are shared DAGs of hundreds of nodes, and
        z3py's wrapper objects for each cost more than the walk."""
        hit = self._apps.get(f.get_id())
        if hit is not None:
            return hit[1]
        ctx = f.ctx.ref()
        found: dict[str, set[int]] = {}
        seen: set[int] = set()
        stack = [f.as_ast()]
        while stack:
            node = stack.pop()
            key = raw.ast_id(ctx, node)
            if key in seen or raw.ast_kind(ctx, node) != z3.Z3_APP_AST:
                continue
            seen.add(key)
            kids = raw.args(ctx, node)
            if not kids:
                continue
            decl = raw.app_decl(ctx, node)
            if raw.decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
                name = raw.name(ctx, decl)
                found.setdefault(name, set()).add(key)
            stack.extend(kids)
        out = {name: frozenset(ids) for name, ids in found.items()}
        self._apps[f.get_id()] = (f, out)
        return out

    def refined_conjunct(self, c: z3.BoolRef) -> frozenset[str]:
        """`refined` of a context conjunct, memoised by object."""
        hit = self._refined_by_object.get(id(c))
        if hit is None or hit[0] is not c:
            hit = (c, self.refined(c))
            self._refined_by_object[id(c)] = hit
        return hit[1]

    def refined(self, e: z3.ExprRef) -> frozenset[str]:
        """`of`, with each read ``f(base + c)`` at a constant offset of a
        base (`_point`) counted as one symbol of its own, a point (named in
        `points`), instead of ``f`` and the base's symbols.

        Joined flows make queries of large shared terms: CUB's radix sort
        spent half its analysis here while the walk went through z3py."""
        return _bottom_up(e, self._refined, self._whole)

    def _whole(self, e: z3.ExprRef, ctx: Any, node: Any) -> frozenset[str] | None:
        """`refined`'s set of ``node`` (a subterm of ``e``) where it is not
        made of its arguments' sets: a point, or (as `_leaf`) no application."""
        if raw.ast_kind(ctx, node) != z3.Z3_APP_AST:
            return _NONE
        if raw.num_args(ctx, node) == 1:
            point = self._point(e, ctx, node)
            if point is not None:
                return frozenset({point})
        return None

    def _point(self, e: z3.ExprRef, ctx: Any, node: Any) -> str | None:
        """The point's name when ``node`` (an application of one argument,
        a subterm of ``e``) reads a function at a variable ``&v``, or at a
        sum with a constant term: ``&v + c``, GCC's soft-stack frame
        ``load(&__nvptx_stacks + 8*tid.y) + c`` (the base is the sum's other
        terms, by identity). A read at any other address stays as `of` has it."""
        decl = raw.app_decl(ctx, node)
        if raw.decl_kind(ctx, decl) != z3.Z3_OP_UNINTERPRETED:
            return None
        arg = raw.app_arg(ctx, node, 0)
        if raw.operator(ctx, arg) == z3.Z3_OP_BADD:
            terms = raw.args(ctx, arg)
            if not any(raw.is_numeral(ctx, t) for t in terms):
                return None  # no offset: a computed address, as `of` has it
        elif (
            raw.ast_kind(ctx, arg) == z3.Z3_APP_AST
            and raw.num_args(ctx, arg) == 0
            and raw.name(ctx, raw.app_decl(ctx, arg)).startswith("&")
        ):
            terms = [arg]
        else:
            return None
        offset = 0
        base: list[int] = []
        for term in terms:
            value = raw.numeral(ctx, term)
            if value is not None:
                offset += value
            else:
                base.append(raw.ast_id(ctx, term))
        if not base:
            return None  # a constant address: a point of no base, left to `of`
        function = raw.name(ctx, decl)
        key = ",".join(map(str, base))
        name = f"{function}[{key}+{offset % (1 << raw.bv_size(ctx, raw.sort(ctx, arg)))}]"
        self.points.setdefault(name, (function, key))
        if name not in self.read_symbols:  # what the read names, as `of` has it
            self.read_symbols[name] = self.of(_expr(node, e))
        return name

    def literal(self, c: z3.BoolRef) -> str | None:
        """`free_literal` of ``c``, memoised (path conditions repeat in every query)."""
        key = c.get_id()
        hit = self._literals.get(key)
        if hit is None:
            hit = (c, free_literal(c))
            self._literals[key] = hit
        return hit[1]

    def of(self, e: z3.ExprRef) -> frozenset[str]:
        """The names of the uninterpreted constants and functions in ``e``."""
        return _bottom_up(e, self._memo, _leaf)


def _leaf(e: z3.ExprRef, ctx: Any, node: Any) -> frozenset[str] | None:
    """`of`'s set of a subterm that is no application (a numeral, a bound
    variable, a quantifier): nothing; None for an application."""
    return None if raw.ast_kind(ctx, node) == z3.Z3_APP_AST else _NONE


def _expr(node: object, within: z3.ExprRef) -> z3.ExprRef:
    """A z3py term for the raw subterm ``node`` of ``within`` (for `Symbols.of`)."""
    return z3.z3._to_expr_ref(node, within.ctx)


def _bottom_up(
    e: z3.ExprRef,
    table: dict[int, tuple[z3.ExprRef, frozenset[str]]],
    whole: Callable[[z3.ExprRef, Any, Any], frozenset[str] | None],
) -> frozenset[str]:
    """The symbol set of ``e``, memoised in ``table`` per subterm id:
    ``whole(e, ctx, node)`` when it gives one, else the name of the
    node's uninterpreted function and the sets of its arguments.

    Walks the raw AST (`raw`), as `_applications` does: z3py's wrapper for
    each subterm costs more than the walk. A subterm's set is kept with the
    root it was reached from, which keeps the subterm (and its id) alive.
    Post-order without recursion: kernels' terms can be thousands deep."""
    ctx = e.ctx.ref()
    root = e.as_ast()
    root_key = raw.ast_id(ctx, root)
    hit = table.get(root_key)
    if hit is not None:
        return hit[1]
    # A node is pushed first without its arguments (to expand it), then with
    # them (to combine their sets).
    stack: list[tuple[Any, int, list[tuple[Any, int]] | None]] = [(root, root_key, None)]
    while stack:
        node, key, kids = stack.pop()
        if key in table:
            continue
        if kids is None:
            given = whole(e, ctx, node)
            if given is not None:
                table[key] = (e, given)
                continue
            kids = [(kid, raw.ast_id(ctx, kid)) for kid in raw.args(ctx, node)]
            stack.append((node, key, kids))
            stack.extend((kid, kid_key, None) for kid, kid_key in kids if kid_key not in table)
            continue
        decl = raw.app_decl(ctx, node)
        own = {raw.name(ctx, decl)} if raw.decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED else set()
        table[key] = (e, frozenset(own.union(*(table[kid_key][1] for _, kid_key in kids))))
    return table[root_key][1]


def connected(
    symbols: Symbols, query: Sequence[z3.BoolRef], context: Sequence[z3.BoolRef]
) -> list[z3.BoolRef]:
    """The conjuncts of ``context`` that share symbols with ``query``,
    directly or through other conjuncts, in their original order."""
    known = [symbols.conjunct(c) for c in context]
    sets = [symbol_set for symbol_set, _ in known]
    refined = _refined_sets(symbols, query, context)
    if refined is None:
        wanted = symbols.of_query(query, sets)
    else:
        # Points apart (the free-read rule of `of_query` is left out here:
        # a larger part is never wrong).
        wanted, sets = refined
    chosen = [False] * len(context)
    # A free literal (see `free_literal`) is satisfied by a constant
    # interpretation of its function: it is neither chosen nor a bridge.
    for i, (_, name) in enumerate(known):
        if name is not None and name not in wanted and sum(name in s for s in sets) == 1:
            sets[i] = frozenset()
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(sets):
            if not chosen[i] and not wanted.isdisjoint(s):
                chosen[i] = True
                wanted |= s
                changed = True
    return [c for c, keep in zip(context, chosen, strict=True) if keep]


def _refined_sets(
    symbols: Symbols, query: Sequence[z3.BoolRef], context: Sequence[z3.BoolRef]
) -> tuple[set[str], list[frozenset[str]]] | None:
    """The query's and the context's symbols with points kept apart
    (`Symbols.refined`), or None when no point is read anywhere.

    A point stays a symbol of its own only while nothing could make its
    place meet another read of its function: the function is read nowhere
    but at points of one base. Two parts that share none of these symbols
    then have models that combine: the base's symbols as the part naming
    them (if one does) has them (the other part names them only inside
    points), and the function's values at each part's offsets, which
    differ, as each part's model has them. Otherwise a point of that
    function counts as the function and the base's symbols, as in
    `Symbols.of`."""
    context_sets = [symbols.refined_conjunct(c) for c in context]
    query_set: set[str] = set()
    for q in query:
        query_set |= symbols.refined(q)
    everything = query_set.union(*context_sets)
    points = [name for name in everything if name in symbols.points]
    if not points:
        return None
    bases: dict[str, set[str]] = {}
    for name in points:
        function, base = symbols.points[name]
        bases.setdefault(function, set()).add(base)
    merged = {function for function, seen in bases.items() if function in everything or len(seen) > 1}

    def plain(names: frozenset[str] | set[str]) -> frozenset[str]:
        out = set(names)
        for name in names:
            where = symbols.points.get(name)
            if where is not None and where[0] in merged:
                out.discard(name)
                out |= symbols.read_symbols[name]
        return frozenset(out)

    if merged:
        context_sets = [plain(s) if any(n in symbols.points for n in s) else s for s in context_sets]
        query_set = set(plain(query_set))
    return query_set, context_sets


def free_literal(c: z3.BoolRef) -> str | None:
    """The function's name when ``c`` is an uninterpreted predicate applied
    to arguments, or its negation (a floating-point comparison of loaded
    values: ``setp.lt.f64(x, y)``); else None.

    A conjunct that is such a literal, of a function no other conjunct or
    the query mentions, is satisfiable beside any model of the rest (the
    function can be the constant that makes it true): it cannot change the
    answer, and leaving it out keeps sibling flows, which differ in such
    branches, on one slice and one cached answer."""
    while z3.is_not(c):
        c = c.arg(0)
    if z3.is_app_of(c, z3.Z3_OP_UNINTERPRETED) and c.num_args() > 0:
        return c.decl().name()
    return None
