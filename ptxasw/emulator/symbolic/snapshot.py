"""Z3 terms read once into plain Python nodes, for code that walks them often.

Each z3py accessor (``e.children()``, ``z3.is_bv_value(e)``, ``e.decl().kind()``)
builds wrapper objects and makes two or more foreign calls; a printer that
asks a dozen such questions per subterm spends more time in them than the
executor spent building the terms. A `Snapshot` reads every distinct subterm
once through Z3's C API (id, kind, sort width, arguments, name, value) into
a `Node`, and what walks the nodes afterwards is plain Python.

Nodes are memoised by Z3's AST id, which Z3 reuses once a term is
collected: a snapshot therefore keeps every root it was given alive for as
long as it lives, and its nodes hold no Z3 objects of their own (the
subterms are owned by their roots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from ptxasw.emulator.symbolic import raw

__all__ = ["Node", "Snapshot"]


_INT_PARAMETER = z3.Z3_PARAMETER_INT
_APP = z3.Z3_APP_AST
_NUMERAL = z3.Z3_NUMERAL_AST
_BV_SORT = z3.Z3_BV_SORT


@dataclass(slots=True, eq=False)
class Node:
    """One distinct subterm. ``kind`` is Z3's declaration kind (``Z3_OP_*``)
    for applications and numerals, None for anything else (bound variables,
    quantifiers: printed through Z3). ``size`` is the bit-vector width (0 for
    other sorts); ``value`` a numeral's value; ``name`` the declaration's
    name and ``params`` its integer parameters (an extract's ``(high, low)``,
    a sign extension's bit count)."""

    id: int
    kind: int | None
    size: int
    args: tuple[Node, ...]
    name: str = ""
    value: int | None = None
    params: tuple[int, ...] = ()
    text: str = ""  # Z3's own rendering, for kind None

    @property
    def is_bv_value(self) -> bool:
        return self.value is not None and self.size > 0

    @property
    def is_const(self) -> bool:
        """An application without arguments (a symbol, a numeral, ``true``),
        as ``z3.is_const``."""
        return self.kind is not None and not self.args


class Snapshot:
    """Nodes of the terms given to `node`, each distinct subterm read once."""

    def __init__(self) -> None:
        self._nodes: dict[int, Node] = {}
        # Python wrapper identity -> node: callers pass the same wrapper
        # objects again and again (a forked flow repeats its parent's
        # accesses). Every wrapper in it is kept alive in `_roots`, so
        # neither its Python id nor its term's Z3 id can be reused.
        self._by_object: dict[int, Node] = {}
        self._roots: list[z3.ExprRef] = []
        # Declaration id -> (name, integer parameters); a declaration lives
        # as long as a term applying it, and the terms are kept in `_roots`.
        self._decls: dict[int, tuple[str, tuple[int, ...]]] = {}

    def node(self, e: z3.ExprRef) -> Node:
        hit = self._by_object.get(id(e))
        if hit is not None:
            return hit
        ctx = e.ctx_ref()
        root = e.as_ast()
        hit = self._nodes.get(raw.ast_id(ctx, root))
        if hit is None:
            hit = self._read(ctx, root)
        self._roots.append(e)
        self._by_object[id(e)] = hit
        return hit

    def _read(self, ctx: Any, root: Any) -> Node:
        """Read ``root`` and its unread subterms, children first, from an
        explicit stack (kernels build chains thousands of terms deep)."""
        nodes = self._nodes
        stack: list[tuple[Any, int, list[Any] | None]] = [(root, raw.ast_id(ctx, root), None)]
        while stack:
            ast, key, kids = stack[-1]
            if key in nodes:
                stack.pop()
                continue
            if kids is None:
                kids = []
                if raw.ast_kind(ctx, ast) == _APP:
                    kids = raw.args(ctx, ast)
                stack[-1] = (ast, key, kids)
                pending = [(k, raw.ast_id(ctx, k), None) for k in kids]
                pending = [p for p in pending if p[1] not in nodes]
                if pending:
                    stack.extend(reversed(pending))
                    continue
            stack.pop()
            nodes[key] = self._make(ctx, ast, key, tuple(nodes[raw.ast_id(ctx, k)] for k in kids))
        return nodes[raw.ast_id(ctx, root)]

    def _make(self, ctx: Any, ast: Any, key: int, args: tuple[Node, ...]) -> Node:
        ast_kind = raw.ast_kind(ctx, ast)
        if ast_kind not in (_APP, _NUMERAL):
            return Node(key, None, 0, (), text=z3.Z3_ast_to_string(ctx, ast))
        sort = raw.sort(ctx, ast)
        size = raw.bv_size(ctx, sort) if raw.sort_kind(ctx, sort) == _BV_SORT else 0
        decl = raw.app_decl(ctx, ast)
        kind = raw.decl_kind(ctx, decl)
        if ast_kind == _NUMERAL:
            return Node(key, kind, size, (), value=int(raw.numeral_string(ctx, ast)))
        decl_key = raw.ast_id(ctx, decl)
        known = self._decls.get(decl_key)
        if known is None:
            # Name and integer parameters, once per declaration (a term's
            # thousands of additions share one): the name is a string the
            # checked wrapper converts, the costliest read of a node.
            name = raw.symbol_string(ctx, raw.decl_name(ctx, decl))
            params = tuple(
                raw.int_param(ctx, decl, i)
                for i in range(raw.num_params(ctx, decl))
                if raw.param_kind(ctx, decl, i) == _INT_PARAMETER
            )
            known = self._decls[decl_key] = (name, params)
        return Node(key, kind, size, args, name=known[0], params=known[1])
