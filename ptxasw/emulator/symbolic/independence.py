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
connected part larger).
"""

from __future__ import annotations

from collections.abc import Sequence

import z3

__all__ = ["Symbols", "connected"]


class Symbols:
    """Symbol sets of Z3 terms, memoised per subterm.

    Terms are kept alive beside their sets so that their ids are not reused.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[z3.ExprRef, frozenset[str]]] = {}

    def of(self, e: z3.ExprRef) -> frozenset[str]:
        hit = self._memo.get(e.get_id())
        if hit is not None:
            return hit[1]
        # Post-order without recursion: kernels' terms can be thousands deep.
        stack: list[tuple[z3.ExprRef, bool]] = [(e, False)]
        while stack:
            node, done = stack.pop()
            key = node.get_id()
            if key in self._memo:
                continue
            if not z3.is_app(node):
                self._memo[key] = (node, frozenset())
                continue
            children = node.children()
            if not done:
                stack.append((node, True))
                stack.extend((c, False) for c in children if c.get_id() not in self._memo)
                continue
            decl = node.decl()
            own = {decl.name()} if decl.kind() == z3.Z3_OP_UNINTERPRETED else set()
            parts = [self._memo[c.get_id()][1] for c in children]
            self._memo[key] = (node, frozenset(own.union(*parts)) if parts or own else frozenset())
        return self._memo[e.get_id()][1]


def connected(
    symbols: Symbols, query: Sequence[z3.BoolRef], context: Sequence[z3.BoolRef]
) -> list[z3.BoolRef]:
    """The conjuncts of ``context`` that share symbols with ``query``,
    directly or through other conjuncts, in their original order."""
    wanted: set[str] = set()
    for q in query:
        wanted |= symbols.of(q)
    sets = [symbols.of(c) for c in context]
    chosen = [False] * len(context)
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(sets):
            if not chosen[i] and not wanted.isdisjoint(s):
                chosen[i] = True
                wanted |= s
                changed = True
    return [c for c, keep in zip(context, chosen, strict=True) if keep]
