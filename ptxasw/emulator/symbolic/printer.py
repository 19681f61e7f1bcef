"""Z3 terms printed in the style of the paper's Listing 5.

The notation is exact: arithmetic is on bit-vectors at the width of its
operands (wrapping), and widths change only where the text says so:
``zext64(x)``, ``sext64(x)``, ``x[7:0]``, ``concat(a, b)``. Unsigned
operators carry a ``u`` (``<u``, ``/u``, ``>>u``); plain ``<``, ``/``, ``>>``
are signed. Constants are hex, negative when their top bit is set; inside
``concat`` (where nothing else gives their width) they are sized as in
Verilog, ``7'h7f``, and so are the two constants of a conditional
(``c ? 2'h3 : 2'h0``). A comparison used as a value is the 1-bit 0 or 1.

Terms are read once into plain nodes (`snapshot`), so printing a kernel
costs one pass of Z3 calls per distinct subterm and the rest is Python.
A rendering never builds Z3 terms: temporaries would be collected and their
ids reused under caches keyed by id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import z3

from ptxasw.emulator.symbolic.snapshot import Node, Snapshot

__all__ = ["Printer", "pretty"]


def pretty(e: z3.ExprRef, names: dict[str, str] | None = None, max_len: int | None = 4000) -> str:
    """A compact infix rendering: hex constants, ``a + b - c``, ``4*x``,
    ``sext64(i)``, uninterpreted applications as ``f(args)``. ``names``
    renames symbols for display (``param_0`` -> ``load(param_0)``).

    ``max_len`` caps the text of every subterm (cut, ending in ``...``): Z3
    terms are DAGs, and a chain of values each used twice would otherwise
    print exponentially long. Traces avoid the cut by naming shared subterms
    (`Printer` with ``share_min``). Extensions are always shown: leaving
    them out changes what the text means."""
    return Printer(names, max_len=max_len).text(e)


class Printer:
    """Renders Z3 terms; one instance memoises across calls, so rendering a
    kernel's terms costs one visit per distinct subterm (Z3 terms are DAGs).

    With ``share_min``, `count_uses` first counts how often each subterm
    occurs under the terms to be printed; a subterm used more than once whose
    text is at least ``share_min`` characters then prints as a name ``t1``,
    ``t2``... defined once in `definitions` (in an order where every name is
    defined before it is used). The printed text stays exact and its size
    linear in the DAG's.
    """

    def __init__(
        self,
        names: dict[str, str] | None = None,
        max_len: int | None = None,
        share_min: int | None = None,
        snapshot: Snapshot | None = None,
    ) -> None:
        self.names = names or {}
        self.max_len = max_len
        self.share_min = share_min
        # Keeps every term given alive, so their addresses (the nodes' ids)
        # stay theirs; may be shared with the printers of other kernels
        # (`snapshot.shared`).
        self._snapshot = snapshot if snapshot is not None else Snapshot()
        self._text: dict[int, str] = {}
        self._negated: dict[int, str] = {}
        self._uses: dict[int, int] = {}
        self._counted: set[int] = set()
        self._named: dict[int, str] = {}
        self.definitions: list[tuple[str, str]] = []

    # ---- sharing ---------------------------------------------------------
    def count_uses(self, roots: Iterable[z3.ExprRef]) -> None:
        """Count each subterm's occurrences (as a root or as an argument)."""
        uses = self._uses
        visited = self._counted
        stack: list[Node] = []
        for root in roots:
            node = self._snapshot.node(root)
            if node.id not in visited:
                uses[node.id] = uses.get(node.id, 0) + 1  # printed in full once: one use
                visited.add(node.id)
                stack.append(node)
        while stack:
            node = stack.pop()
            for child in node.args:
                key = child.id
                uses[key] = uses.get(key, 0) + 1
                if key not in visited:
                    visited.add(key)
                    stack.append(child)

    def text(self, e: z3.ExprRef) -> str:
        """``e``'s full text (never just its own name)."""
        return self._full(self._snapshot.node(e))

    def smtlib(self, e: z3.ExprRef) -> str:
        """``e`` as one SMT-LIB 2 term, a subterm it uses more than once bound
        once by ``let`` (``a!1``, ``a!2``...): what ``e.sexpr()`` says, from
        the nodes already read instead of Z3's pretty-printer, which costs
        about half a millisecond per address."""
        return smtlib(self._snapshot.node(e))

    # ---- over nodes --------------------------------------------------------
    def _full(self, n: Node) -> str:
        hit = self._text.get(n.id)
        if hit is not None:
            return hit
        # Render the subterms not seen yet children first, from an explicit
        # stack: kernels build chains thousands of terms deep, and a
        # recursive walk would overflow Python's stack.
        done = self._text
        stack: list[tuple[Node, bool]] = [(n, False)]
        while stack:
            node, expanded = stack.pop()
            if node.id in done:
                continue
            if expanded or not node.args:
                self._store(node, self._render(node))
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.args) if c.id not in done)
        return done[n.id]

    def _store(self, n: Node, text: str) -> None:
        if self.max_len is not None and len(text) > self.max_len:
            text = text[: self.max_len] + "..."
        self._text[n.id] = text
        if (
            self.share_min is not None
            and len(text) >= self.share_min
            and self._uses.get(n.id, 0) > 1
            and n.args
        ):
            name = f"t{len(self.definitions) + 1}"
            self._named[n.id] = name
            self.definitions.append((name, text))

    def _ref(self, n: Node) -> str:
        """``n`` as an argument: its name if it is shared, else its text."""
        text = self._full(n)
        name = self._named.get(n.id)
        return name if name is not None else text

    def _atom(self, n: Node) -> str:
        """``n`` parenthesised unless its text is atomic."""
        text = self._ref(n)
        if n.id in self._named or _is_atomic(n):
            return text
        return f"({text})"

    def _operand(self, n: Node) -> str:
        """An operand of ``&&``/``||``: comparisons bind tighter, no parentheses."""
        return self._ref(n) if _is_comparison(n) or n.id in self._named else self._atom(n)

    # ---- rendering -------------------------------------------------------
    def _render(self, e: Node) -> str:
        kind = e.kind
        if e.is_bv_value:
            return _hex(e.value or 0, e.size)
        if kind == z3.Z3_OP_TRUE:
            return "true"
        if kind == z3.Z3_OP_FALSE:
            return "false"
        if kind is None:
            return e.text
        if e.value is not None:  # a numeral of another sort
            return str(e.value)
        if not e.args:
            return self.names.get(e.name, e.name)
        args = e.args
        if kind == z3.Z3_OP_BADD:
            return self._sum(args)
        if kind == z3.Z3_OP_BMUL:
            return "*".join(self._atom(a) for a in args)
        if kind == z3.Z3_OP_BSUB:
            lhs, rhs = args
            return f"{self._sum((lhs,))} - {self._ref(rhs) if rhs.kind == z3.Z3_OP_BMUL else self._atom(rhs)}"
        binop = _BINOPS.get(kind)
        if binop is not None and kind in _ASSOCIATIVE and len(args) > 2:
            return f" {binop} ".join(self._atom(a) for a in args)
        if binop is not None and len(args) == 2:
            lhs, rhs = args
            mirrored = _MIRROR.get(binop)
            if mirrored is not None and lhs.is_bv_value and not rhs.is_bv_value:
                # Put the constant on the right: ``x < 0x5``, not ``0x5 > x``.
                lhs, rhs, binop = rhs, lhs, mirrored
            return f"{self._atom(lhs)} {binop} {self._atom(rhs)}"
        if kind == z3.Z3_OP_BNEG:
            return f"-{self._atom(args[0])}"
        if kind == z3.Z3_OP_BNOT:
            return f"~{self._atom(args[0])}"
        if kind in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
            name = "sext" if kind == z3.Z3_OP_SIGN_EXT else "zext"
            return f"{name}{e.size}({self._ref(args[0])})"
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = e.params
            bits = f"{hi}" if hi == lo else f"{hi}:{lo}"
            return f"{self._atom(args[0])}[{bits}]"
        if kind == z3.Z3_OP_CONCAT:
            return self._concat(e, args)
        if kind == z3.Z3_OP_ITE:
            c, a, b = args
            if a.is_bv_value and b.is_bv_value and a.size == 1:
                pair = (a.value, b.value)
                if pair == (1, 0):  # a predicate kept as If(b, 1, 0)
                    return self._ref(c)
                if pair == (0, 1):
                    return self._negated_text(c)
            if a.is_bv_value and b.is_bv_value:  # nothing else says their width
                return f"({self._ref(c)} ? {_sized(a)} : {_sized(b)})"
            return f"({self._ref(c)} ? {self._ref(a)} : {self._ref(b)})"
        if kind == z3.Z3_OP_NOT:
            return self._negated_text(args[0])
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            sep = " && " if kind == z3.Z3_OP_AND else " || "
            return sep.join(self._operand(a) for a in args)
        if kind == z3.Z3_OP_DISTINCT and len(args) == 2:
            return f"{self._atom(args[0])} != {self._atom(args[1])}"
        return f"{e.name}({', '.join(self._ref(a) for a in args)})"

    def _negated_text(self, c: Node) -> str:
        """The text of ``!c``: comparisons flipped, De Morgan through
        ``&&``/``||``, ``!x`` otherwise."""
        hit = self._negated.get(c.id)
        if hit is not None:
            return hit
        text = self._render_negated(c)
        name = self._named.get(c.id)
        if name is not None and self.share_min is not None and len(text) > 4 * self.share_min:
            # A shared term's negation spelt out, unless long: bounded either way.
            text = f"!{name}"
        self._negated[c.id] = text
        return text

    def _render_negated(self, c: Node) -> str:
        kind = c.kind
        if kind == z3.Z3_OP_TRUE:
            return "false"
        if kind == z3.Z3_OP_FALSE:
            return "true"
        if kind is None:
            return f"!{self._atom(c)}"
        if kind == z3.Z3_OP_NOT:
            return self._ref(c.args[0])
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            # De Morgan: a negated disjunction reads better as a conjunction.
            sep = " || " if kind == z3.Z3_OP_AND else " && "
            return sep.join(self._negated_operand(x) for x in c.args)
        flipped = _NEGATED.get(kind)
        if flipped is not None and len(c.args) == 2 and c.args[0].size:
            lhs, rhs = c.args
            if lhs.is_bv_value and not rhs.is_bv_value:
                lhs, rhs, flipped = rhs, lhs, _MIRROR[flipped]
            return f"{self._atom(lhs)} {flipped} {self._atom(rhs)}"
        return f"!{self._atom(c)}"

    def _negated_operand(self, x: Node) -> str:
        text = self._negated_text(x)
        if _negates_to_comparison(x) or (text.startswith("!") and " " not in text):
            return text
        return f"({text})"

    def _concat(self, e: Node, args: tuple[Node, ...]) -> str:
        # A zero extension the rewriter spelt as concat(0, x).
        if len(args) == 2 and args[0].is_bv_value and args[0].value == 0:
            return f"zext{e.size}({self._ref(args[1])})"
        # A sign extension spelt as concat(x[m], ..., x[m], x[m:lo]) (or x
        # itself as the last part): sextN of the slice.
        parts = _sign_extension_groups(self._flat_concat(args))
        if len(parts) == 1 and parts[0][0] > 0:
            return self._sext_group(parts[0])
        return f"concat({', '.join(self._concat_part(p) for p in parts)})"

    def _flat_concat(self, args: Iterable[Node]) -> list[Node]:
        """``concat(concat(a, b), c)`` as ``[a, b, c]`` (Z3's API nests binary
        concats); a shared part stays whole so that it prints as its name."""
        out: list[Node] = []
        for a in args:
            if a.kind == z3.Z3_OP_CONCAT and self._uses.get(a.id, 0) <= 1:
                out.extend(self._flat_concat(a.args))
            else:
                out.append(a)
        return out

    def _concat_part(self, group: tuple[int, Node, int]) -> str:
        if group[0] > 0:
            return self._sext_group(group)
        part = group[1]
        if part.is_bv_value:  # nothing else says its width: Verilog's 7'h7f
            return _sized(part)
        return self._ref(part)

    def _sext_group(self, group: tuple[int, Node, int]) -> str:
        _, base, width = group
        return f"sext{width}({self._ref(base)})"

    def _sum(self, args: Iterable[Node]) -> str:
        # Constants first, as in Listing 5 (``0xc + (...)``); negative
        # constants and terms with a negative constant factor print as
        # subtractions.
        ordered = [a for a in args if a.is_bv_value] + [a for a in args if not a.is_bv_value]
        out = ""
        for a in ordered:
            negative, text = self._signed_term(a)
            if not out:
                out = f"-{text}" if negative else text
            else:
                out += f" - {text}" if negative else f" + {text}"
        return out

    def _signed_term(self, a: Node) -> tuple[bool, str]:
        w = a.size
        if a.is_bv_value:
            v = a.value or 0
            if w >= 8 and v >> (w - 1):
                return True, f"{(1 << w) - v:#x}"
            return False, f"{v:#x}"
        if a.id not in self._named and a.kind == z3.Z3_OP_BMUL and len(a.args) == 2 and a.args[0].is_bv_value:
            c = a.args[0].value or 0
            if w >= 8 and c >> (w - 1):
                mag = (1 << w) - c
                rest = self._atom(a.args[1])
                return True, rest if mag == 1 else f"{mag:#x}*{rest}"
        text = self._ref(a)
        if a.id in self._named:
            return False, text
        return False, f"({text})" if _needs_paren_in_sum(a) else text


def smtlib(root: Node) -> str:
    """``root`` as an SMT-LIB 2 term (see `Printer.smtlib`)."""
    uses: dict[int, int] = {}
    order: list[Node] = []  # children before parents
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        uses[node.id] = uses.get(node.id, 0) + 1
        if uses[node.id] > 1:
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.args))
    text: dict[int, str] = {}
    bindings: list[tuple[str, str]] = []
    for node in order:
        own = _smt_own(node, text)
        if node is not root and uses[node.id] > 1 and node.args:
            name = f"a!{len(bindings) + 1}"
            bindings.append((name, own))
            own = name
        text[node.id] = own
    body = text[root.id]
    for name, bound in reversed(bindings):
        body = f"(let (({name} {bound})) {body})"
    return body


def _smt_own(node: Node, text: dict[int, str]) -> str:
    if node.kind is None:
        return node.text
    if node.value is not None:
        if node.size % 4 == 0:
            return f"#x{node.value:0{node.size // 4}x}"
        if node.size:
            return f"#b{node.value:0{node.size}b}"
        return str(node.value)
    head = _smt_symbol(node.name)
    if node.params:
        head = f"(_ {head} {' '.join(map(str, node.params))})"
    if not node.args:
        return head
    return f"({head} {' '.join(text[a.id] for a in node.args)})"


_SIMPLE_SYMBOL = re.compile(r"[A-Za-z~!@$%^&*_+=<>.?/-][A-Za-z0-9~!@$%^&*_+=<>.?/-]*")


def _smt_symbol(name: str) -> str:
    """A symbol as SMT-LIB writes it: quoted in bars unless simple."""
    return name if _SIMPLE_SYMBOL.fullmatch(name) else f"|{name}|"


def _sign_extension_groups(args: list[Node]) -> list[tuple[int, Node, int]]:
    """Concat arguments as ``(copies, base, width)`` groups: ``copies`` leading
    1-bit extracts of ``base``'s top bit folded into a sign extension of
    ``base`` to ``width`` bits (``copies == 0``: a plain part)."""
    groups: list[tuple[int, Node, int]] = []
    i = 0
    while i < len(args):
        j = i
        while j < len(args) and _top_bit_of(args[j], args[-1] if j == len(args) - 1 else args[j + 1]):
            j += 1
        if j > i and j < len(args):
            base = args[j]
            groups.append((j - i, base, base.size + (j - i)))
            i = j + 1
        else:
            groups.append((0, args[i], args[i].size))
            i += 1
    return groups


def _top_bit_of(bit: Node, nxt: Node) -> bool:
    """``bit`` is the top bit of ``nxt`` (``nxt[m]`` for ``nxt = y[m:lo]`` or
    ``nxt = y`` with ``m`` its top), or equal to ``nxt`` when both are that bit."""
    if not (bit.kind == z3.Z3_OP_EXTRACT and bit.size == 1):
        return False
    b = bit.params[0]
    y = bit.args[0]
    if nxt.kind == z3.Z3_OP_EXTRACT and nxt.args[0] is y:
        return nxt.params[0] == b
    return nxt is y and b == y.size - 1


def _is_atomic(e: Node) -> bool:
    """Text that needs no parentheses as an operand: a name, a constant,
    a call ``f(...)``, a slice ``x[..]`` (negative constants are atomic too:
    ``-0x1`` reads as one literal)."""
    kind = e.kind
    if e.is_bv_value or e.is_const:
        return True
    if kind is None:
        return False
    if kind in (z3.Z3_OP_UNINTERPRETED, z3.Z3_OP_EXTRACT, z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
        return True
    if kind == z3.Z3_OP_CONCAT:
        return True  # zextN(..), sextN(..) or concat(..)
    if kind == z3.Z3_OP_ITE:
        return not _is_predicate_ite(e)  # printed "(c ? a : b)"
    return False


def _is_predicate_ite(e: Node) -> bool:
    _, a, b = e.args
    return a.is_bv_value and b.is_bv_value and a.size == 1 and (a.value, b.value) in ((1, 0), (0, 1))


def _needs_paren_in_sum(a: Node) -> bool:
    kind = a.kind
    if kind is None:
        return False
    return (
        kind in _BINOPS
        or kind in (z3.Z3_OP_BADD, z3.Z3_OP_NOT, z3.Z3_OP_AND, z3.Z3_OP_OR)
        or (kind == z3.Z3_OP_ITE and _is_predicate_ite(a))
    )


_MIRROR = {
    "==": "==",
    "!=": "!=",
    "<u": ">u",
    "<=u": ">=u",
    ">u": "<u",
    ">=u": "<=u",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
}

# The operator of !(a op b), as text.
_NEGATED = {
    z3.Z3_OP_ULT: ">=u",
    z3.Z3_OP_ULEQ: ">u",
    z3.Z3_OP_UGT: "<=u",
    z3.Z3_OP_UGEQ: "<u",
    z3.Z3_OP_SLT: ">=",
    z3.Z3_OP_SLEQ: ">",
    z3.Z3_OP_SGT: "<=",
    z3.Z3_OP_SGEQ: "<",
    z3.Z3_OP_EQ: "!=",
}


def _is_comparison(e: Node) -> bool:
    """A bit-vector comparison, or the negation of one (printed flipped)."""
    if e.kind == z3.Z3_OP_NOT:
        return _negates_to_comparison(e.args[0])
    if e.kind == z3.Z3_OP_ITE and _is_predicate_ite(e):
        c, a, _ = e.args
        return _is_comparison(c) if a.value == 1 else _negates_to_comparison(c)
    if e.kind is None or len(e.args) != 2:
        return False
    op = _BINOPS.get(e.kind)
    return op is not None and op in _MIRROR and e.args[0].size > 0


def _negates_to_comparison(e: Node) -> bool:
    """``!e`` prints as a single comparison."""
    if e.kind == z3.Z3_OP_NOT:
        return _is_comparison(e.args[0])
    return e.kind in _NEGATED and len(e.args) == 2 and e.args[0].size > 0


def _hex(value: int, width: int) -> str:
    if width >= 8 and value >> (width - 1):
        return f"-{(1 << width) - value:#x}"
    return f"{value:#x}"


# Z3 makes these n-ary: ``a & b & c`` reads the same grouped either way.
_ASSOCIATIVE = frozenset({z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR})

_BINOPS = {
    z3.Z3_OP_BSHL: "<<",
    z3.Z3_OP_BLSHR: ">>u",
    z3.Z3_OP_BASHR: ">>",
    z3.Z3_OP_BAND: "&",
    z3.Z3_OP_BOR: "|",
    z3.Z3_OP_BXOR: "^",
    z3.Z3_OP_BUDIV: "/u",
    z3.Z3_OP_BUDIV_I: "/u",
    z3.Z3_OP_BSDIV: "/",
    z3.Z3_OP_BSDIV_I: "/",
    z3.Z3_OP_BUREM: "%u",
    z3.Z3_OP_BUREM_I: "%u",
    z3.Z3_OP_BSREM: "%",
    z3.Z3_OP_BSREM_I: "%",
    z3.Z3_OP_EQ: "==",
    z3.Z3_OP_ULT: "<u",
    z3.Z3_OP_ULEQ: "<=u",
    z3.Z3_OP_UGT: ">u",
    z3.Z3_OP_UGEQ: ">=u",
    z3.Z3_OP_SLT: "<",
    z3.Z3_OP_SLEQ: "<=",
    z3.Z3_OP_SGT: ">",
    z3.Z3_OP_SGEQ: ">=",
}


def _sized(value: Node) -> str:
    """A constant with its width, Verilog's ``7'h7f``: where no operand gives it."""
    return f"{value.size}'h{(value.value or 0):x}"
