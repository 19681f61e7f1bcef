"""Z3 terms read once into plain Python nodes, for code that walks them often.

Each z3py accessor (``e.children()``, ``z3.is_bv_value(e)``, ``e.decl().kind()``)
builds wrapper objects and makes two or more foreign calls; a printer that
asks a dozen such questions per subterm spends more time in them than the
executor spent building the terms. A `Snapshot` reads every distinct subterm
once through Z3's C API (kind, sort width, arguments, name, value) into a
`Node`, and what walks the nodes afterwards is plain Python.

Nodes are memoised by the term's address: Z3 builds each distinct term
once, so while a term lives its address is its identity, and it is reused
once the term is collected. A snapshot therefore keeps every root it was
given alive for as long as it lives, and its nodes hold no Z3 objects of
their own (the subterms are owned by their roots).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from ptxasw.emulator.symbolic import raw

__all__ = ["SHARED_NODES", "Node", "Snapshot", "shared"]

# Nodes a snapshot shared by the kernels of one command may hold before it
# is replaced: it keeps every term it read alive, so without a bound a file
# of thousands of kernels would keep all their terms (about 150 bytes of
# Python and Z3 each; this bound keeps it under 10 MB).
SHARED_NODES = 50_000


_C = raw.by_address
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
        # neither its Python id nor its term's address can be reused.
        self._by_object: dict[int, Node] = {}
        self._roots: list[z3.ExprRef] = []
        # Declaration address -> (kind, name, integer parameters, width of
        # its range): Z3 builds each distinct declaration once (``bvadd`` of
        # 32 bits is another than of 64), and one lives as long as a term
        # that applies it, which `_roots` keeps alive; so the address stays
        # its own, and a term's thousands of additions ask one question
        # instead of seven.
        self._decls: dict[int, tuple[int, str, tuple[int, ...], int]] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    def node(self, e: z3.ExprRef) -> Node:
        hit = self._by_object.get(id(e))
        if hit is not None:
            return hit
        root = e.as_ast().value
        hit = self._nodes.get(root)
        if hit is None:
            hit = self._read(e.ctx_ref().value, root)
        self._roots.append(e)
        self._by_object[id(e)] = hit
        return hit

    def _read(self, ctx: int, root: int) -> Node:
        """Read ``root`` and its unread subterms, children first, from an
        explicit stack (kernels build chains thousands of terms deep). Every
        AST is an address (`raw.by_address`), which is also its key; each
        is asked its kind once."""
        nodes = self._nodes
        ast_kind, num_args, app_arg = _C.ast_kind, _C.num_args, _C.app_arg
        # (address, kind, argument addresses or None before they were read)
        stack: list[tuple[int, int, list[int] | None]] = [(root, ast_kind(ctx, root), None)]
        while stack:
            ast, kind, kids = stack[-1]
            if ast in nodes:
                stack.pop()
                continue
            if kids is None:
                kids = [app_arg(ctx, ast, i) for i in range(num_args(ctx, ast))] if kind == _APP else []
                pending = [(kid, ast_kind(ctx, kid), None) for kid in kids if kid not in nodes]
                stack[-1] = (ast, kind, kids)
                if pending:
                    stack.extend(reversed(pending))
                    continue
            stack.pop()
            nodes[ast] = self._make(ctx, ast, kind, tuple(nodes[k] for k in kids))
        return nodes[root]

    def _make(self, ctx: int, ast: int, ast_kind: int, args: tuple[Node, ...]) -> Node:
        if ast_kind not in (_APP, _NUMERAL):
            return Node(ast, None, 0, (), text=_C.ast_to_string(ctx, ast).decode())
        decl = _C.app_decl(ctx, ast)
        known = self._decls.get(decl)
        if known is None:
            name = _C.symbol_string(ctx, _C.decl_name(ctx, decl)).decode()
            params = tuple(
                _C.int_param(ctx, decl, i)
                for i in range(_C.num_params(ctx, decl))
                if _C.param_kind(ctx, decl, i) == _INT_PARAMETER
            )
            sort = _C.decl_range(ctx, decl)
            width = _C.bv_size(ctx, sort) if _C.sort_kind(ctx, sort) == _BV_SORT else 0
            known = self._decls[decl] = (_C.decl_kind(ctx, decl), name, params, width)
        kind, name, params, width = known
        if ast_kind == _NUMERAL:
            return Node(ast, kind, width, (), value=int(_C.numeral_string(ctx, ast)))
        return Node(ast, kind, width, args, name=name, params=params)


def shared(snapshot: Snapshot | None, limit: int = SHARED_NODES) -> Snapshot:
    """``snapshot`` again while it holds fewer than ``limit`` nodes, else a
    new one. The kernels of one file share most of their terms (the thread
    index, the parameters, the address arithmetic), and Z3 builds each
    distinct term once: a command that prints them in turn reads those
    terms once, and its memory stays bounded by ``limit``."""
    if snapshot is None or len(snapshot) >= limit:
        return Snapshot()
    return snapshot
