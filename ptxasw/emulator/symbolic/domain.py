"""The symbolic value domain: Z3 bit-vector expressions for one symbolic thread.

Integer and bitwise work is bit-precise (Z3 bit-vectors of the register's
width, wrapping like the hardware); floating-point work is opaque: every
`FpOp` becomes an uninterpreted function keyed by everything that changes its
result, so two identical float computations are provably equal and nothing
else is claimed about them. That is the split DESIGN.md asks for: shuffle
detection needs exact address arithmetic, never float values.

Predicates are 1-bit vectors. Internally a predicate is kept in the shape
``If(b, 1, 0)`` around a Z3 Boolean whenever possible, so that path
conditions print as ``%tid.x < 5`` rather than as bit twiddling.

Simplification is cheap and local (``z3.simplify`` with sign extensions kept,
plus a few rewrites that keep addresses affine: shifts by constants become
multiplications, truncations of extensions fold away). It never calls the
solver; the executor does that.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import z3

if TYPE_CHECKING:
    from ptxasw.emulator.concrete.domain import Bits
from ptxasw.emulator.semantics.domain import Domain, FpOp
from ptxasw.emulator.symbolic.lanes import LaneModel
from ptxasw.ir.isa import type_bits

__all__ = [
    "Printer",
    "SymbolicDomain",
    "as_bool",
    "const_value",
    "from_bool",
    "is_const",
    "pretty",
    "simplify",
    "simplify_extract",
]

BV = z3.BitVecRef

# One counter for the whole process: two domains must never hand out the same
# name, since Z3 identifies constants by name and sort.
_FRESH = itertools.count()

_SIMPLIFY_OPTS = {"elim_sign_ext": False}


_PARAMS: z3.ParamsRef | None = None


def simplify(e: z3.ExprRef) -> z3.ExprRef:
    """Z3's rewriter with sign extensions kept: they print far better than
    the concatenations of sign bits the rewriter would make of them.

    Same as ``z3.simplify(e, elim_sign_ext=False)`` without building the
    parameter object on every call (it runs once per emulated operation)."""
    global _PARAMS
    if _PARAMS is None:
        _PARAMS = z3.ParamsRef()
        for key, value in _SIMPLIFY_OPTS.items():
            _PARAMS.set(key, value)
    ctx = e.ctx
    return z3.z3._to_expr_ref(z3.Z3_simplify_ex(ctx.ref(), e.as_ast(), _PARAMS.params), ctx)


def simplify_extract(e: z3.ExprRef, clean: dict[int, z3.ExprRef] | None = None) -> z3.ExprRef:
    """`simplify` for an expression with a fresh ``Extract`` at its top, plus
    folding ``Extract(hi, lo, SignExt(n, x))`` to ``Extract(hi, lo, x)`` when
    the slice lies inside ``x`` (the rewriter leaves those when told to keep
    sign extensions; truncating a widened index is how ``cvt.u32.u64`` of an
    address looks). Extracts arise only here, so only here is it looked for.

    ``clean``: subterms already known to hold no such extract (by id, kept
    alive), shared between calls: a kernel's terms share most of their
    structure, and each truncation would otherwise walk all of it again."""
    out = simplify(e)
    if not _has_extract_of_ext(out, {} if clean is None else clean):
        return out
    cache: dict[int, z3.ExprRef] = {}

    def walk(node: z3.ExprRef) -> z3.ExprRef:
        key = node.get_id()
        hit = cache.get(key)
        if hit is not None:
            return hit
        result = node
        if z3.is_app(node) and node.num_args() > 0:
            kids = [walk(c) for c in node.children()]
            if any(not k.eq(c) for k, c in zip(kids, node.children(), strict=True)):
                result = _rebuild(node, kids)
            if z3.is_app_of(result, z3.Z3_OP_EXTRACT):
                result = _extract_of_ext(result)
        cache[key] = result
        return result

    return simplify(walk(out))


def _has_extract_of_ext(e: z3.ExprRef, clean: dict[int, z3.ExprRef]) -> bool:
    seen: dict[int, z3.ExprRef] = {}
    stack = [e]
    while stack:
        node = stack.pop()
        key = node.get_id()
        if key in seen or key in clean or not z3.is_app(node):
            continue
        seen[key] = node
        if z3.is_app_of(node, z3.Z3_OP_EXTRACT):
            inner = node.arg(0)
            if z3.is_app_of(inner, z3.Z3_OP_SIGN_EXT) or z3.is_app_of(inner, z3.Z3_OP_ZERO_EXT):
                return True
        stack.extend(node.children())
    clean.update(seen)  # the whole walk found none: none of these hold one
    return False


def _rebuild(node: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
    return z3.substitute(node, *[(c, k) for c, k in zip(node.children(), kids, strict=True) if not c.eq(k)])


def _extract_of_ext(node: z3.ExprRef) -> z3.ExprRef:
    hi, lo = node.params()
    inner = node.arg(0)
    if not (z3.is_app_of(inner, z3.Z3_OP_SIGN_EXT) or z3.is_app_of(inner, z3.Z3_OP_ZERO_EXT)):
        return node
    x = inner.arg(0)
    if hi >= x.size():
        return node
    if lo == 0 and hi == x.size() - 1:
        return x
    return z3.Extract(hi, lo, x)


# --------------------------------------------------------------------------
# Predicates (1-bit values) and constants


_ONE1 = z3.BitVecVal(1, 1)
_ZERO1 = z3.BitVecVal(0, 1)


def from_bool(b: z3.BoolRef) -> BV:
    """A Z3 Boolean as a 1-bit predicate value (constants fold)."""
    if z3.is_true(b):
        return _ONE1
    if z3.is_false(b):
        return _ZERO1
    return z3.If(b, _ONE1, _ZERO1)


def as_bool(v: BV) -> z3.BoolRef:
    """A 1-bit predicate as a Z3 Boolean, unwrapping the ``If(b, 1, 0)`` shape."""
    if z3.is_bv_value(v):
        return z3.BoolVal(v.as_long() != 0)
    if z3.is_app_of(v, z3.Z3_OP_ITE):
        c, a, b = v.children()
        if z3.is_bv_value(a) and z3.is_bv_value(b):
            av, bv = a.as_long(), b.as_long()
            if (av, bv) == (1, 0):
                return c
            if (av, bv) == (0, 1):
                return z3.Not(c)
    return v == 1


def is_const(v: z3.ExprRef) -> bool:
    return z3.is_bv_value(v)


def const_value(v: z3.ExprRef) -> int | None:
    """The unsigned value of a constant bit-vector, else None."""
    return v.as_long() if z3.is_bv_value(v) else None


# --------------------------------------------------------------------------
# The domain


class SymbolicDomain:
    """`Domain[z3.BitVecRef]`: one symbolic thread's register values.

    ``simplify_results``: run the cheap rewriter on every result. It keeps
    expressions small and addresses readable; tests may turn it off to check
    that the raw encodings are right too.
    """

    name = "symbolic"

    def __init__(self, simplify_results: bool = True, lanes: LaneModel | None = None) -> None:
        self.simplify_results = simplify_results
        self._extract_clean: dict[int, z3.ExprRef] = {}  # see `simplify_extract`
        # The warp around the thread (block shape, lane <-> %tid): see `ptxasw.emulator.symbolic.lanes`.
        self.lanes = lanes or LaneModel()
        self._fp_funcs: dict[tuple[object, ...], z3.FuncDeclRef] = {}

    # ---- helpers ---------------------------------------------------------
    def _s(self, e: z3.ExprRef) -> BV:
        return simplify(e) if self.simplify_results else e  # type: ignore[return-value]

    @staticmethod
    def _pred(b: z3.BoolRef) -> BV:
        return from_bool(b)

    # ---- making values ---------------------------------------------------
    def const(self, value: int, width: int) -> BV:
        return z3.BitVecVal(value % (1 << width), width)

    def fresh(self, hint: str, width: int) -> BV:
        """A new variable; the counter suffix makes it unique in the process."""
        return z3.BitVec(f"{hint}!{next(_FRESH)}", width)

    def width(self, a: BV) -> int:
        return a.size()

    # ---- integer arithmetic ----------------------------------------------
    def add(self, a: BV, b: BV) -> BV:
        return self._s(a + b)

    def sub(self, a: BV, b: BV) -> BV:
        return self._s(a - b)

    def mul(self, a: BV, b: BV) -> BV:
        return self._s(a * b)

    def neg(self, a: BV) -> BV:
        return self._s(-a)

    def udiv(self, a: BV, b: BV) -> BV:
        # SMT-LIB bvudiv: x/0 is all ones, as on the GPU.
        return self._s(z3.UDiv(a, b))

    def urem(self, a: BV, b: BV) -> BV:
        # SMT-LIB bvurem gives x for x%0; the GPU (measured on an H200, and
        # the domain contract) gives all ones.
        return self._s(z3.If(b == 0, self._ones(a.size()), z3.URem(a, b)))

    def sdiv(self, a: BV, b: BV) -> BV:
        # SMT-LIB bvsdiv gives 1 for negative/0; PTX (and the domain contract)
        # wants all ones for every x/0. MIN/-1 already wraps to MIN.
        return self._s(z3.If(b == 0, self._ones(a.size()), a / b))

    def srem(self, a: BV, b: BV) -> BV:
        # SMT-LIB bvsrem takes the dividend's sign (Python's ``%`` on Z3
        # bit-vectors is bvsmod, the wrong one); x%0 is all ones on the GPU.
        return self._s(z3.If(b == 0, self._ones(a.size()), z3.SRem(a, b)))

    @staticmethod
    def _ones(width: int) -> BV:
        return z3.BitVecVal((1 << width) - 1, width)

    # ---- bitwise -----------------------------------------------------------
    def and_(self, a: BV, b: BV) -> BV:
        if a.size() == 1:
            return self._s(from_bool(z3.And(as_bool(a), as_bool(b))))
        return self._s(a & b)

    def or_(self, a: BV, b: BV) -> BV:
        if a.size() == 1:
            return self._s(from_bool(z3.Or(as_bool(a), as_bool(b))))
        return self._s(a | b)

    def xor(self, a: BV, b: BV) -> BV:
        if a.size() == 1:
            return self._s(from_bool(z3.Xor(as_bool(a), as_bool(b))))
        return self._s(a ^ b)

    def not_(self, a: BV) -> BV:
        if a.size() == 1:
            return self._s(from_bool(z3.Not(as_bool(a))))
        return self._s(~a)

    def shl(self, a: BV, b: BV) -> BV:
        # bvshl gives 0 for amounts >= width, as PTX clamps. A constant amount
        # becomes a multiplication so that addresses stay affine and readable.
        amount = const_value(self._s(b)) if self.simplify_results else None
        if amount is not None:
            w = a.size()
            if amount >= w:
                return self.const(0, w)
            return self._s(a * z3.BitVecVal(1 << amount, w))
        return self._s(a << b)

    def lshr(self, a: BV, b: BV) -> BV:
        return self._s(z3.LShR(a, b))

    def ashr(self, a: BV, b: BV) -> BV:
        # bvashr fills with the sign bit for amounts >= width.
        return self._s(a >> b)

    # ---- comparisons and selection ---------------------------------------
    def eq(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(a == b))

    def ult(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(z3.ULT(a, b)))

    def slt(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(a < b))

    def ite(self, cond: BV, a: BV, b: BV) -> BV:
        c = as_bool(cond)
        if self.simplify_results:
            c = simplify(c)
            if z3.is_true(c):
                return a
            if z3.is_false(c):
                return b
            if a.eq(b):
                return a
        return self._s(z3.If(c, a, b))

    # ---- width changes -----------------------------------------------------
    def zext(self, a: BV, width: int) -> BV:
        extra = width - a.size()
        if extra == 0:
            return a
        if extra < 0:
            return self.extract(a, width - 1, 0)
        return self._s(z3.ZeroExt(extra, a))

    def sext(self, a: BV, width: int) -> BV:
        extra = width - a.size()
        if extra == 0:
            return a
        if extra < 0:
            return self.extract(a, width - 1, 0)
        return self._s(z3.SignExt(extra, a))

    def extract(self, a: BV, hi: int, lo: int) -> BV:
        if lo == 0 and hi == a.size() - 1:
            return a
        e = z3.Extract(hi, lo, a)
        return simplify_extract(e, self._extract_clean) if self.simplify_results else e

    def concat(self, hi: BV, lo: BV) -> BV:
        return self._s(z3.Concat(hi, lo))

    # ---- bit counting --------------------------------------------------------
    def popc(self, a: BV) -> BV:
        w = a.size()
        if w == 1:
            return a
        bits: Iterable[BV] = (z3.ZeroExt(w - 1, z3.Extract(i, i, a)) for i in range(w))
        return self._s(z3.Sum(*bits))

    def clz(self, a: BV) -> BV:
        w = a.size()
        result: BV = z3.BitVecVal(w % (1 << w), w)
        # Innermost test is bit 0, outermost the top bit: the highest set bit wins.
        for i in range(w):
            result = z3.If(z3.Extract(i, i, a) == 1, z3.BitVecVal((w - 1 - i) % (1 << w), w), result)
        return self._s(result)

    def brev(self, a: BV) -> BV:
        w = a.size()
        if w == 1:
            return a
        return self._s(z3.Concat(*[z3.Extract(i, i, a) for i in range(w)]))

    # ---- floating point (opaque) ---------------------------------------------
    def fp(self, op: FpOp, *args: BV) -> BV:
        """``op`` as an uninterpreted function of the argument bit patterns.

        The function's name spells the whole `FpOp`, so e.g. ``add.rn.f32``
        and ``add.rz.f32`` never collide, and the same float computation on
        the same bits is the same term.
        """
        widths = tuple(x.size() for x in args)
        out = type_bits(op.type) or (widths[0] if widths else 32)
        key = (op, widths, out)
        fn = self._fp_funcs.get(key)
        if fn is None:
            fn = z3.Function(_fp_name(op, widths), *[z3.BitVecSort(w) for w in widths], z3.BitVecSort(out))
            self._fp_funcs[key] = fn
        if not args:
            return self.fresh(f"fp.{op.op}", out)
        return fn(*args)  # type: ignore[return-value]

    def evaluate(self, expr: z3.ExprRef, bindings: dict[str, int], concrete: Domain[Bits]) -> int:
        """The value of ``expr`` when its variables (by name) take ``bindings``.

        Float operations, opaque to the solver, are computed here by
        ``concrete`` (a one-lane `ConcreteDomain`), innermost first, so a
        symbolic result can be checked against the concrete domain for float
        instructions too, not only for integer ones.
        """
        interpretation = {fn.name(): key for key, fn in self._fp_funcs.items()}
        pairs = [
            (v, z3.BitVecVal(bindings[v.decl().name()], v.size()))
            for v in _variables(expr)
            if v.decl().name() in bindings
        ]
        term = simplify(z3.substitute(expr, *pairs)) if pairs else simplify(expr)
        while not z3.is_bv_value(term):
            apps = _ground_applications(term, interpretation)
            if not apps:
                raise ValueError(f"no value for {pretty(term)}: unbound variables")
            values = [(app, self._apply(interpretation[app.decl().name()], app, concrete)) for app in apps]
            term = simplify(z3.substitute(term, *values))
        return term.as_long()

    @staticmethod
    def _apply(key: tuple[object, ...], app: z3.ExprRef, concrete: Domain[Bits]) -> z3.ExprRef:
        args = [concrete.const(arg.as_long(), arg.size()) for arg in app.children()]
        if key[0] == "cmp":
            _, cmp, ptx_type, _ = key
            bit = concrete.to_ints(concrete.fp_compare(cmp, ptx_type, *args))[0]  # type: ignore[attr-defined]
            return z3.BoolVal(bool(bit))
        op, _, out = key
        value = concrete.to_ints(concrete.fp(op, *args))[0]  # type: ignore[arg-type,attr-defined]
        return z3.BitVecVal(value, out)  # type: ignore[arg-type]

    def fp_compare(self, cmp: str, type: str, a: BV, b: BV) -> BV:
        """A Boolean uninterpreted function of both bit patterns, as a predicate."""
        key = ("cmp", cmp, type, a.size())
        fn = self._fp_funcs.get(key)
        if fn is None:
            fn = z3.Function(
                f"setp.{cmp.lstrip('.')}{type}",
                z3.BitVecSort(a.size()),
                z3.BitVecSort(b.size()),
                z3.BoolSort(),
            )
            self._fp_funcs[key] = fn
        return from_bool(fn(a, b))  # type: ignore[arg-type]

    # ---- the other lanes of the warp (`LaneModel`: substitution of the thread ids) -------------
    def lane_index(self) -> BV:
        return self.lanes.laneid

    def lane_read(self, value: BV, src: BV) -> BV:
        """The expression with lane ``src``'s thread ids; opaque (a function of
        value and lane) when it holds per-thread unknowns."""
        return self.lanes.read(value, src)

    def lane_ballot(self, pred: BV, part: BV) -> BV:
        """Opaque (a function of ``pred`` and ``part``) unless the lane model
        expands it over the 32 lanes; the same for matches and reductions."""
        return self.lanes.ballot(pred, part)

    def lane_match(self, value: BV, part: BV) -> BV:
        return self.lanes.match(value, part)

    def lane_reduce(self, op: str, value: BV, part: BV) -> BV:
        return self.lanes.reduce(op, value, part)


def _nodes(e: z3.ExprRef) -> Iterable[z3.ExprRef]:
    """Every distinct subterm of ``e`` once (Z3 terms are DAGs)."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if node.get_id() not in seen:
            seen.add(node.get_id())
            yield node
            stack.extend(node.children())


def _variables(e: z3.ExprRef) -> list[z3.ExprRef]:
    """The uninterpreted constants (variables) of ``e``."""
    return [n for n in _nodes(e) if z3.is_const(n) and n.decl().kind() == z3.Z3_OP_UNINTERPRETED]


def _ground_applications(e: z3.ExprRef, interpretation: dict[str, object]) -> list[z3.ExprRef]:
    """Applications of float functions whose arguments are all constants."""
    return [
        n
        for n in _nodes(e)
        if n.decl().name() in interpretation and all(z3.is_bv_value(c) for c in n.children())
    ]


def _fp_name(op: FpOp, widths: tuple[int, ...]) -> str:
    parts = [op.op]
    if op.rounding:
        parts.append(op.rounding.lstrip("."))
    for flag in ("ftz", "sat", "approx", "relu", "nan", "satfinite"):
        if getattr(op, flag, False):
            parts.append(flag)
    parts.append(op.type.lstrip("."))
    if op.src:
        parts.append(op.src.lstrip("."))
    name = ".".join(parts)
    # The argument widths take part in the sort; keep distinct sorts apart by name.
    if len(set(widths)) > 1:
        name += "/" + ",".join(map(str, widths))
    return name


# --------------------------------------------------------------------------
# Printing in the style of the paper's Listing 5
#
# The notation is exact: arithmetic is on bit-vectors at the width of its
# operands (wrapping), and widths change only where the text says so:
# ``zext64(x)``, ``sext64(x)``, ``x[7:0]``, ``concat(a, b)``. Unsigned
# operators carry a ``u`` (``<u``, ``/u``, ``>>u``); plain ``<``, ``/``, ``>>``
# are signed. Constants are hex, negative when their top bit is set; inside
# ``concat`` (where nothing else gives their width) they are sized as in
# Verilog, ``7'h7f``, and so are the two constants of a conditional
# (``c ? 2'h3 : 2'h0``). A comparison used as a value is the 1-bit 0 or 1. A
# rendering never builds Z3 terms (temporaries would be collected and their
# ids reused under a cache keyed by id), and every cache entry keeps its term
# alive for the same reason.


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
        self, names: dict[str, str] | None = None, max_len: int | None = None, share_min: int | None = None
    ) -> None:
        self.names = names or {}
        self.max_len = max_len
        self.share_min = share_min
        # id -> (term, text): holding the term keeps its id from being reused.
        self._text: dict[int, tuple[z3.ExprRef, str]] = {}
        self._negated: dict[int, tuple[z3.ExprRef, str]] = {}
        self._uses: dict[int, int] = {}
        self._counted: dict[int, z3.ExprRef] = {}
        self._named: dict[int, str] = {}
        self._children: dict[int, list[z3.ExprRef]] = {}
        self.definitions: list[tuple[str, str]] = []

    def _kids(self, e: z3.ExprRef) -> list[z3.ExprRef]:
        """``e.children()``, once per term: each call builds new Python objects."""
        key = e.get_id()
        kids = self._children.get(key)
        if kids is None:
            kids = e.children() if z3.is_app(e) else []
            self._children[key] = kids
        return kids

    # ---- sharing ---------------------------------------------------------
    def count_uses(self, roots: Iterable[z3.ExprRef]) -> None:
        """Count each subterm's occurrences (as a root or as an argument)."""
        uses = self._uses
        visited = self._counted
        stack: list[z3.ExprRef] = []
        for root in roots:
            key = root.get_id()
            if key not in visited:
                uses[key] = uses.get(key, 0) + 1  # printed in full once: one use
                visited[key] = root
                stack.append(root)
        while stack:
            node = stack.pop()
            if not z3.is_app(node):
                continue
            for child in self._kids(node):
                key = child.get_id()
                uses[key] = uses.get(key, 0) + 1
                if key not in visited:
                    visited[key] = child  # holding the term keeps its id from being reused
                    stack.append(child)

    def ref(self, e: z3.ExprRef) -> str:
        """``e`` as an argument: its name if it is shared, else its text."""
        text = self.text(e)
        name = self._named.get(e.get_id())
        return name if name is not None else text

    def text(self, e: z3.ExprRef) -> str:
        """``e``'s full text (never just its own name)."""
        hit = self._text.get(e.get_id())
        if hit is not None:
            return hit[1]
        # Render the subterms not seen yet children first, from an explicit
        # stack: kernels build chains thousands of terms deep, and a
        # recursive walk would overflow Python's stack.
        stack: list[tuple[z3.ExprRef, bool]] = [(e, False)]
        while stack:
            node, expanded = stack.pop()
            if node.get_id() in self._text:
                continue
            if expanded or not z3.is_app(node) or node.num_args() == 0:
                self._store(node, self._render(node))
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(self._kids(node)) if c.get_id() not in self._text)
        return self._text[e.get_id()][1]

    def _store(self, e: z3.ExprRef, text: str) -> None:
        key = e.get_id()
        if self.max_len is not None and len(text) > self.max_len:
            text = text[: self.max_len] + "..."
        self._text[key] = (e, text)
        if (
            self.share_min is not None
            and len(text) >= self.share_min
            and self._uses.get(key, 0) > 1
            and z3.is_app(e)
            and e.num_args() > 0
        ):
            name = f"t{len(self.definitions) + 1}"
            self._named[key] = name
            self.definitions.append((name, text))

    def atom(self, e: z3.ExprRef) -> str:
        """``e`` parenthesised unless its text is atomic."""
        text = self.ref(e)
        if e.get_id() in self._named or _is_atomic(e):
            return text
        return f"({text})"

    def operand(self, e: z3.ExprRef) -> str:
        """An operand of ``&&``/``||``: comparisons bind tighter, no parentheses."""
        return self.ref(e) if _is_comparison(e) or e.get_id() in self._named else self.atom(e)

    # ---- rendering -------------------------------------------------------
    def _render(self, e: z3.ExprRef) -> str:
        if z3.is_bv_value(e):
            return _hex(e.as_long(), e.size())
        if z3.is_true(e):
            return "true"
        if z3.is_false(e):
            return "false"
        if not z3.is_app(e):
            return str(e)
        if z3.is_const(e):
            name = e.decl().name()
            return self.names.get(name, name)
        kind = e.decl().kind()
        args = self._kids(e)
        if kind == z3.Z3_OP_BADD:
            return self._sum(args)
        if kind == z3.Z3_OP_BMUL:
            return "*".join(self.atom(a) for a in args)
        if kind == z3.Z3_OP_BSUB:
            lhs, rhs = args
            return f"{self._sum([lhs])} - {self.ref(rhs) if _is_product(rhs) else self.atom(rhs)}"
        binop = _BINOPS.get(kind)
        if binop is not None and kind in _ASSOCIATIVE and len(args) > 2:
            return f" {binop} ".join(self.atom(a) for a in args)
        if binop is not None and len(args) == 2:
            lhs, rhs = args
            mirrored = _MIRROR.get(binop)
            if mirrored is not None and z3.is_bv_value(lhs) and not z3.is_bv_value(rhs):
                # Put the constant on the right: ``x < 0x5``, not ``0x5 > x``.
                lhs, rhs, binop = rhs, lhs, mirrored
            return f"{self.atom(lhs)} {binop} {self.atom(rhs)}"
        if kind == z3.Z3_OP_BNEG:
            return f"-{self.atom(args[0])}"
        if kind == z3.Z3_OP_BNOT:
            return f"~{self.atom(args[0])}"
        if kind in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
            name = "sext" if kind == z3.Z3_OP_SIGN_EXT else "zext"
            return f"{name}{e.size()}({self.ref(args[0])})"
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = e.params()
            bits = f"{hi}" if hi == lo else f"{hi}:{lo}"
            return f"{self.atom(args[0])}[{bits}]"
        if kind == z3.Z3_OP_CONCAT:
            return self._concat(e, args)
        if kind == z3.Z3_OP_ITE:
            c, a, b = args
            if z3.is_bv_value(a) and z3.is_bv_value(b) and a.size() == 1:
                pair = (a.as_long(), b.as_long())
                if pair == (1, 0):  # a predicate kept as If(b, 1, 0)
                    return self.ref(c)
                if pair == (0, 1):
                    return self.negated(c)
            if z3.is_bv_value(a) and z3.is_bv_value(b):  # nothing else says their width
                return f"({self.ref(c)} ? {_sized(a)} : {_sized(b)})"
            return f"({self.ref(c)} ? {self.ref(a)} : {self.ref(b)})"
        if kind == z3.Z3_OP_NOT:
            return self.negated(args[0])
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            sep = " && " if kind == z3.Z3_OP_AND else " || "
            return sep.join(self.operand(a) for a in args)
        if kind == z3.Z3_OP_DISTINCT and len(args) == 2:
            return f"{self.atom(args[0])} != {self.atom(args[1])}"
        if kind == z3.Z3_OP_UNINTERPRETED:
            return f"{e.decl().name()}({', '.join(self.ref(a) for a in args)})"
        return f"{e.decl().name()}({', '.join(self.ref(a) for a in args)})"

    def negated(self, c: z3.ExprRef) -> str:
        """The text of ``!c``: comparisons flipped, De Morgan through
        ``&&``/``||``, ``!x`` otherwise. Builds no Z3 terms."""
        key = c.get_id()
        hit = self._negated.get(key)
        if hit is not None:
            return hit[1]
        text = self._render_negated(c)
        name = self._named.get(key)
        if name is not None and self.share_min is not None and len(text) > 4 * self.share_min:
            # A shared term's negation spelt out, unless long: bounded either way.
            text = f"!{name}"
        self._negated[key] = (c, text)
        return text

    def _render_negated(self, c: z3.ExprRef) -> str:
        if z3.is_true(c):
            return "false"
        if z3.is_false(c):
            return "true"
        if not z3.is_app(c):
            return f"!{self.atom(c)}"
        kind = c.decl().kind()
        if kind == z3.Z3_OP_NOT:
            return self.ref(c.arg(0))
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            # De Morgan: a negated disjunction reads better as a conjunction.
            sep = " || " if kind == z3.Z3_OP_AND else " && "
            return sep.join(self._negated_operand(x) for x in c.children())
        flipped = _NEGATED.get(kind)
        if flipped is not None and c.num_args() == 2 and z3.is_bv(c.arg(0)):
            lhs, rhs = c.children()
            if z3.is_bv_value(lhs) and not z3.is_bv_value(rhs):
                lhs, rhs, flipped = rhs, lhs, _MIRROR[flipped]
            return f"{self.atom(lhs)} {flipped} {self.atom(rhs)}"
        return f"!{self.atom(c)}"

    def _negated_operand(self, x: z3.ExprRef) -> str:
        text = self.negated(x)
        if _negates_to_comparison(x) or (text.startswith("!") and " " not in text):
            return text
        return f"({text})"

    def _concat(self, e: z3.ExprRef, args: list[z3.ExprRef]) -> str:
        # A zero extension the rewriter spelt as concat(0, x).
        if len(args) == 2 and z3.is_bv_value(args[0]) and args[0].as_long() == 0:
            return f"zext{e.size()}({self.ref(args[1])})"
        # A sign extension spelt as concat(x[m], ..., x[m], x[m:lo]) (or x
        # itself as the last part): sextN of the slice.
        parts = _sign_extension_groups(self._flat_concat(args))
        if len(parts) == 1 and parts[0][0] > 0:
            return self._sext_group(parts[0])
        return f"concat({', '.join(self._concat_part(p) for p in parts)})"

    def _flat_concat(self, args: list[z3.ExprRef]) -> list[z3.ExprRef]:
        """``concat(concat(a, b), c)`` as ``[a, b, c]`` (Z3's API nests binary
        concats); a shared part stays whole so that it prints as its name."""
        out: list[z3.ExprRef] = []
        for a in args:
            if z3.is_app_of(a, z3.Z3_OP_CONCAT) and self._uses.get(a.get_id(), 0) <= 1:
                out.extend(self._flat_concat(a.children()))
            else:
                out.append(a)
        return out

    def _concat_part(self, group: tuple[int, z3.ExprRef, int]) -> str:
        if group[0] > 0:
            return self._sext_group(group)
        part = group[1]
        if z3.is_bv_value(part):  # nothing else says its width: Verilog's 7'h7f
            return _sized(part)
        return self.ref(part)

    def _sext_group(self, group: tuple[int, z3.ExprRef, int]) -> str:
        _, base, width = group
        return f"sext{width}({self.ref(base)})"

    def _sum(self, args: list[z3.ExprRef]) -> str:
        # Constants first, as in Listing 5 (``0xc + (...)``); negative
        # constants and terms with a negative constant factor print as
        # subtractions.
        ordered = [a for a in args if z3.is_bv_value(a)] + [a for a in args if not z3.is_bv_value(a)]
        out = ""
        for a in ordered:
            negative, text = self._signed_term(a)
            if not out:
                out = f"-{text}" if negative else text
            else:
                out += f" - {text}" if negative else f" + {text}"
        return out

    def _signed_term(self, a: z3.ExprRef) -> tuple[bool, str]:
        w = a.size()
        if z3.is_bv_value(a):
            v = a.as_long()
            if w >= 8 and v >> (w - 1):
                return True, f"{(1 << w) - v:#x}"
            return False, f"{v:#x}"
        if (
            a.get_id() not in self._named
            and z3.is_app_of(a, z3.Z3_OP_BMUL)
            and a.num_args() == 2
            and z3.is_bv_value(a.arg(0))
        ):
            c = a.arg(0).as_long()
            if w >= 8 and c >> (w - 1):
                mag = (1 << w) - c
                rest = self.atom(a.arg(1))
                return True, rest if mag == 1 else f"{mag:#x}*{rest}"
        text = self.ref(a)
        if a.get_id() in self._named:
            return False, text
        return False, f"({text})" if _needs_paren_in_sum(a) else text


def _sign_extension_groups(args: list[z3.ExprRef]) -> list[tuple[int, z3.ExprRef, int]]:
    """Concat arguments as ``(copies, base, width)`` groups: ``copies`` leading
    1-bit extracts of ``base``'s top bit folded into a sign extension of
    ``base`` to ``width`` bits (``copies == 0``: a plain part)."""
    groups: list[tuple[int, z3.ExprRef, int]] = []
    i = 0
    while i < len(args):
        j = i
        while j < len(args) and _top_bit_of(args[j], args[-1] if j == len(args) - 1 else args[j + 1]):
            j += 1
        if j > i and j < len(args):
            base = args[j]
            groups.append((j - i, base, base.size() + (j - i)))
            i = j + 1
        else:
            groups.append((0, args[i], args[i].size()))
            i += 1
    return groups


def _top_bit_of(bit: z3.ExprRef, nxt: z3.ExprRef) -> bool:
    """``bit`` is the top bit of ``nxt`` (``nxt[m]`` for ``nxt = y[m:lo]`` or
    ``nxt = y`` with ``m`` its top), or equal to ``nxt`` when both are that bit."""
    if not (z3.is_app_of(bit, z3.Z3_OP_EXTRACT) and bit.size() == 1):
        return False
    (b,) = bit.params()[:1]
    y = bit.arg(0)
    if z3.is_app_of(nxt, z3.Z3_OP_EXTRACT) and nxt.arg(0).eq(y):
        return nxt.params()[0] == b
    return nxt.eq(y) and b == y.size() - 1


def _is_product(e: z3.ExprRef) -> bool:
    return z3.is_app_of(e, z3.Z3_OP_BMUL)


def _is_atomic(e: z3.ExprRef) -> bool:
    """Text that needs no parentheses as an operand: a name, a constant,
    a call ``f(...)``, a slice ``x[..]`` (negative constants are atomic too:
    ``-0x1`` reads as one literal)."""
    if z3.is_bv_value(e) or z3.is_const(e):
        return True
    if not z3.is_app(e):
        return False
    kind = e.decl().kind()
    if kind in (z3.Z3_OP_UNINTERPRETED, z3.Z3_OP_EXTRACT, z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
        return True
    if kind == z3.Z3_OP_CONCAT:
        return True  # zextN(..), sextN(..) or concat(..)
    if kind == z3.Z3_OP_ITE:
        return not _is_predicate_ite(e)  # printed "(c ? a : b)"
    return False


def _is_predicate_ite(e: z3.ExprRef) -> bool:
    _, a, b = e.children()
    return (
        z3.is_bv_value(a)
        and z3.is_bv_value(b)
        and a.size() == 1
        and (a.as_long(), b.as_long()) in ((1, 0), (0, 1))
    )


def _needs_paren_in_sum(a: z3.ExprRef) -> bool:
    if not z3.is_app(a):
        return False
    kind = a.decl().kind()
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


def _is_comparison(e: z3.ExprRef) -> bool:
    """A bit-vector comparison, or the negation of one (printed flipped)."""
    if z3.is_not(e):
        return _negates_to_comparison(e.arg(0))
    if z3.is_app_of(e, z3.Z3_OP_ITE) and _is_predicate_ite(e):
        c, a, _ = e.children()
        return _is_comparison(c) if a.as_long() == 1 else _negates_to_comparison(c)
    if not z3.is_app(e) or e.num_args() != 2:
        return False
    op = _BINOPS.get(e.decl().kind())
    return op is not None and op in _MIRROR and z3.is_bv(e.arg(0))


def _negates_to_comparison(e: z3.ExprRef) -> bool:
    """``!e`` prints as a single comparison."""
    if z3.is_not(e):
        return _is_comparison(e.arg(0))
    return z3.is_app(e) and e.decl().kind() in _NEGATED and e.num_args() == 2 and z3.is_bv(e.arg(0))


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


def _sized(value: z3.BitVecNumRef) -> str:
    """A constant with its width, Verilog's ``7'h7f``: where no operand gives it."""
    return f"{value.size()}'h{value.as_long():x}"
