"""Keys under which queries that differ only in the names of their symbols meet.

Two flows that reach the same call of ``omp_get_num_threads`` on different
paths (the two sides of a team-chunk branch), or enter one loop twice, ask
the same questions over fresh symbols: ``omp_get_num_threads!2`` on one,
``omp_get_num_threads!11`` on the other; loads of one memory version are
``load_global_32@3`` on one and ``@7`` on the other. Satisfiability does not
depend on names, so such a query has the answer of the first one. GCC's
OpenMP offload kernels repeat a third to half of their solver questions
this way, and those are their slowest (a chunk bound divided by a team
size, which Z3 mostly leaves undecided after its full effort).

The key renames every uninterpreted symbol to its *base* (the name with
the numbers after ``!``, ``#`` and ``@`` taken out) and its rank among the
query's symbols of that base (in the order of those numbers, which is the
order they were made in). The renaming is injective on one query, so the
renamed formulas are equisatisfiable with the query; Z3 shares equal terms,
so equal renamed formulas have equal ids. Queries whose symbols were made
in another relative order get another key: a miss, never a wrong answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import z3

from ptxasw.emulator.symbolic.independence import Symbols

__all__ = ["AlphaKeys"]

# The numbers that make a symbol fresh: ``name!12``, ``iter_$L4#3``,
# ``load_global_32@7``, ``loop_$L4#3.%rd5``.
_ORDINAL = re.compile(r"(?<=[!#@])\d+")


class AlphaKeys:
    """Alpha-renamed keys of queries. ``symbols`` gives each formula's
    symbol names (memoised per subterm: the connected part was computed
    from the same sets) and each name's term or declaration.

    Renamed formulas are kept alive, so that no id in a key can be reused
    by a later term.
    """

    def __init__(self, symbols: Symbols) -> None:
        self.symbols = symbols
        self._bases: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.kept: list[z3.ExprRef] = []

    def key(self, formulas: Sequence[z3.BoolRef]) -> tuple[int, ...]:
        """The ids of ``formulas`` with their symbols renamed canonically."""
        names: set[str] = set()
        for f in formulas:
            names |= self.symbols.of(f)
        by_base: dict[str, list[tuple[tuple[int, ...], str]]] = {}
        for name in sorted(names):  # not set order: Z3 terms made in one order each run
            base, ordinal = self._split(name)
            by_base.setdefault(base, []).append((ordinal, name))
        constants: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        functions: list[tuple[z3.FuncDeclRef, z3.ExprRef]] = []
        for base, named in by_base.items():
            for rank, (_, name) in enumerate(sorted(named)):
                leaf = self.symbols.leaves[name]
                fresh = f"{base}~{rank}"
                if isinstance(leaf, z3.FuncDeclRef):
                    domain = [leaf.domain(i) for i in range(leaf.arity())]
                    renamed = z3.Function(fresh, *domain, leaf.range())
                    functions.append((leaf, renamed(*(z3.Var(i, s) for i, s in enumerate(domain)))))
                else:
                    constants.append((leaf, z3.Const(fresh, leaf.sort())))
        out = []
        for f in formulas:
            g = z3.substitute_funs(f, *functions) if functions else f
            g = z3.substitute(g, *constants) if constants else g
            out.append(g)
        self.kept.extend(out)
        return tuple(g.get_id() for g in out)

    def _split(self, name: str) -> tuple[str, tuple[int, ...]]:
        hit = self._bases.get(name)
        if hit is None:
            hit = (_ORDINAL.sub("", name), tuple(int(m) for m in _ORDINAL.findall(name)))
            self._bases[name] = hit
        return hit
