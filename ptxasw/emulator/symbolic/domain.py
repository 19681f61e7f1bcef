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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import z3

if TYPE_CHECKING:
    from ptxasw.emulator.concrete.domain import Bits
from ptxasw.emulator.semantics.domain import Domain, FpOp
from ptxasw.emulator.symbolic import raw
from ptxasw.emulator.symbolic.lanes import LaneModel
from ptxasw.emulator.symbolic.printer import Printer, pretty
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


_T = TypeVar("_T")


def remember(table: dict[Any, tuple[Any, _T]], key: Any, term: Any, compute: Callable[[], _T]) -> _T:
    """``compute()``, once per ``key`` of ``table``; ``term`` (whose Z3 id
    the key holds) is kept with the answer, so that the id is not reused."""
    hit = table.get(key)
    if hit is None:
        hit = (term, compute())
        table[key] = hit
    return hit[1]


def bv_width(e: z3.ExprRef) -> int:
    """A bit-vector term's width, straight from Z3's C API (`raw`):
    ``e.size()`` builds a Python sort object first, which the executor paid
    on every register read."""
    ctx = e.ctx.ref()
    return int(raw.bv_size(ctx, raw.sort(ctx, e.as_ast())))


def apply(fn: z3.FuncDeclRef, args: Sequence[z3.ExprRef]) -> z3.ExprRef:
    """``fn(*args)`` for arguments already of ``fn``'s sorts, without the
    Python API's per-argument coercion (an FP-heavy kernel applies its
    float functions tens of thousands of times)."""
    ctx = fn.ctx
    array = (z3.Ast * len(args))()
    for i, a in enumerate(args):
        array[i] = a.as_ast()
    return z3.z3._to_expr_ref(z3.Z3_mk_app(ctx.ref(), fn.ast, len(args), array), ctx)


def _ite(c: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    """``z3.If(c, a, b)`` for a Boolean and two terms of one sort, without
    the Python API's coercions (a guarded write in if-converted code makes one)."""
    ctx = a.ctx
    return z3.z3._to_expr_ref(z3.Z3_mk_ite(ctx.ref(), c.as_ast(), a.as_ast(), b.as_ast()), ctx)


def simplify_extract(e: z3.ExprRef, clean: dict[int, z3.ExprRef] | None = None) -> z3.ExprRef:
    """`simplify` for an expression with a fresh ``Extract`` at its top, plus
    folding ``Extract(hi, lo, SignExt(n, x))`` to ``Extract(hi, lo, x)`` when
    the slice lies inside ``x`` (the rewriter leaves those when told to keep
    sign extensions; truncating a widened index is how ``cvt.u32.u64`` of an
    address looks). Extracts arise only here, so only here is it looked for.

    ``clean``: subterms already known to hold no such extract (by AST
    address, with a term that keeps them alive), shared between calls: a kernel's terms share most of their
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
    """Whether a subterm of ``e`` is an extract that `_extract_of_ext`
    folds. Walked through Z3's C API by AST address (`raw.by_address`:
    z3py's wrappers cost most of a many-kernel file's analysis here); a walk
    that finds none records its subterms in ``clean``, with ``e``, which
    keeps their addresses alive."""
    c = raw.by_address
    ctx, root = e.ctx_ref().value, e.as_ast().value
    seen: set[int] = set()
    stack = [root]
    while stack:
        ast = stack.pop()
        if ast in seen or ast in clean or c.ast_kind(ctx, ast) != z3.Z3_APP_AST:
            continue
        seen.add(ast)
        if c.decl_kind(ctx, c.app_decl(ctx, ast)) == z3.Z3_OP_EXTRACT and _folds(ctx, ast):
            return True
        stack.extend(c.app_arg(ctx, ast, i) for i in range(c.num_args(ctx, ast)))
    clean.update(dict.fromkeys(seen, e))  # the whole walk found none that folds: none of these hold one
    return False


def _folds(ctx: int, extract: int) -> bool:
    """Whether ``extract`` (an extract's raw AST) is ``Extract(hi, lo, ext(x))``
    with the slice inside ``x``: the one rule, for the raw walk and `_extract_of_ext`."""
    c = raw.by_address
    inner = c.app_arg(ctx, extract, 0)
    if c.ast_kind(ctx, inner) != z3.Z3_APP_AST:
        return False
    if c.decl_kind(ctx, c.app_decl(ctx, inner)) not in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
        return False
    x = c.app_arg(ctx, inner, 0)
    hi = c.int_param(ctx, c.app_decl(ctx, extract), 0)
    return bool(hi < c.bv_size(ctx, c.sort(ctx, x)))


def _rebuild(node: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
    return z3.substitute(node, *[(c, k) for c, k in zip(node.children(), kids, strict=True) if not c.eq(k)])


def _extract_of_ext(node: z3.ExprRef) -> z3.ExprRef:
    """``Extract(hi, lo, ext(x))`` as a slice of ``x`` where `_folds`; else ``node``."""
    if not _folds(node.ctx_ref().value, node.as_ast().value):
        return node
    hi, lo = node.params()
    x = node.arg(0).arg(0)
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


def _upper_half(a: z3.ExprRef) -> z3.ExprRef | None:
    """``h`` with ``a == h * 2^(w/2)`` (``w``, ``a``'s width), read off a sum
    of constants and constant multiples of ``2^(w/2)`` (a ``shl`` by half
    the width is such a multiple in the domain); None where ``a`` is not
    written so. Only ``h``'s low half is ``a``'s high half; the rest is
    whatever the sum made of it."""
    half = a.size() // 2
    unit = 1 << half
    parts = a.children() if z3.is_app_of(a, z3.Z3_OP_BADD) else [a]
    terms: list[z3.ExprRef] = []
    for part in parts:
        value = const_value(part)
        if value is not None:
            if value % unit:
                return None
            terms.append(z3.BitVecVal(value >> half, a.size()))
            continue
        if not z3.is_app_of(part, z3.Z3_OP_BMUL):
            return None
        factor, *rest = part.children()
        value = const_value(factor)
        if value is None or value % unit or not rest:
            return None
        product = rest[0] if len(rest) == 1 else z3.Product(*rest)
        terms.append(product if value == unit else z3.BitVecVal(value >> half, a.size()) * product)
    return simplify(z3.Sum(*terms)) if len(terms) > 1 else simplify(terms[0])


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
        self._conditions: dict[int, tuple[BV, z3.BoolRef]] = {}  # see `_condition`
        self._negations: dict[int, tuple[BV, BV]] = {}  # see `not_`
        self._constants: dict[tuple[int, int], BV] = {}  # see `const`
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
        key = (value % (1 << width), width)
        known = self._constants.get(key)
        if known is None:
            known = self._constants[key] = z3.BitVecVal(*key)
        return known

    def fresh(self, hint: str, width: int) -> BV:
        """A new variable; the counter suffix makes it unique in the process."""
        return z3.BitVec(f"{hint}!{next(_FRESH)}", width)

    def width(self, a: BV) -> int:
        return bv_width(a)

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
            # Remembered by term, as `_condition`: ``@!%p`` guards a run of instructions.
            return remember(self._negations, a.get_id(), a, lambda: self._s(from_bool(z3.Not(as_bool(a)))))
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
        amount = const_value(self._s(b)) if self.simplify_results else None
        half = a.size() // 2
        if amount is not None and amount <= half:
            high = _upper_half(a)
            if high is not None:
                # LLVM's sign extension of a 32-bit index, ``(x << 32) >> c``
                # (clang's OpenMP loops, ``(long)(i + 1)`` after strength
                # reduction): exactly ``sext(x) << (32 - c)``, which leaves the
                # index a sum the prover can widen, not a shift it gives up on.
                wide = self.sext(self.extract(high, half - 1, 0), a.size())
                return self._s(wide * z3.BitVecVal(1 << (half - amount), a.size()))
        return self._s(a >> b)

    # ---- comparisons and selection ---------------------------------------
    def eq(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(a == b))

    def ult(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(z3.ULT(a, b)))

    def slt(self, a: BV, b: BV) -> BV:
        return self._s(from_bool(a < b))

    def ite(self, cond: BV, a: BV, b: BV) -> BV:
        c = self._condition(cond)
        if self.simplify_results:
            if z3.is_true(c):
                return a
            if z3.is_false(c):
                return b
            if a.eq(b):
                return a
        return self._s(_ite(c, a, b))

    def _condition(self, cond: BV) -> z3.BoolRef:
        """``cond`` as a (simplified) Boolean, remembered by term: if-converted
        code guards run after run of instructions by one predicate, and each
        guarded write asks for it again."""

        def boolean() -> z3.BoolRef:
            c = as_bool(cond)
            return simplify(c) if self.simplify_results else c  # type: ignore[return-value]

        return remember(self._conditions, cond.get_id(), cond, boolean)

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
        widths = tuple(bv_width(x) for x in args)
        out = type_bits(op.type) or (widths[0] if widths else 32)
        key = (op, widths, out)
        fn = self._fp_funcs.get(key)
        if fn is None:
            fn = z3.Function(_fp_name(op, widths), *[z3.BitVecSort(w) for w in widths], z3.BitVecSort(out))
            self._fp_funcs[key] = fn
        if not args:
            return self.fresh(f"fp.{op.op}", out)
        return apply(fn, args)  # type: ignore[return-value]

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
