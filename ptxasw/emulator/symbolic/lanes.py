"""The warp around one symbolic thread: which thread sits in lane l, and what a value is there.

The symbolic executor follows one thread, whose ids are the Z3 constants
``%tid.x %tid.y %tid.z`` and ``%laneid`` (the executor's special registers
have exactly these names). Its warp holds the threads of linear ids
``linear - %laneid + l`` for lanes l = 0..31, where
``linear = %tid.x + %ntid.x * (%tid.y + %ntid.y * %tid.z)`` and
``%laneid == linear % 32``. A value in lane ``src`` is the same expression
with the thread's ids replaced by that lane's (``z3.substitute``): the
thread's ``%tid`` comes back from its linear id by division by the block
shape, which folds to ``%tid.x - %laneid + src`` in the same row when
``%ntid.x`` is known to be a multiple of 32 (``.reqntid``).

What a substitution cannot move is a per-thread unknown: a fresh value, a
register read before it was written, a loop's clipped initial value, a
``.local`` load. A value holding one becomes an opaque function of the value
and the source lane (``lane_read<w>(value, src)``), consistent across calls
and claiming nothing else. Loop iteration counters (``iter_*``) are taken to
be warp-uniform: a ``.sync`` collective executes with its lanes converged,
in the same iteration.

Ballots, matches and reductions are opaque by default: uninterpreted
functions of the value and the lane mask (``lane_ballot32(p, mask)``,
``lane_add32(v, mask)``...), so the same collective of the same value is the
same term and nothing else is claimed; the analysis stays as fast as when
these were fresh values. With ``expand=True`` they expand over the 32 lanes
(one substitution each): exact and evaluable lane by lane, at 32 times the
expression size and far more solver work; the agreement tests use that.
Shuffles are always exact: one substitution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from ptxasw.emulator.symbolic import raw

BV = z3.BitVecRef

LANES = 32


def _simplify(e: z3.ExprRef) -> z3.ExprRef:
    """Z3's simplifier, keeping sign extensions (expanded, each is a 32-way
    ``concat`` of the sign bit: large terms the pretty-printer cannot read)."""
    return z3.simplify(e, elim_sign_ext=False)


_DIMS = ("x", "y", "z")
_LANEMASKS = ("eq", "lt", "le", "gt", "ge")
# Names of variables the same in every lane of a warp (besides the
# thread-id ones, which are substituted): special registers, symbol
# addresses, kernel parameters, loop iteration counters.
_UNIFORM_PREFIXES = ("%", "&", "param_", "iter_")
_PER_THREAD_FUNCS = ("load_local_",)
_MOVE_LIMIT = 400  # nodes of a value whose per-thread unknowns are moved one by one


class LaneModel:
    """The threads of a warp, from what is known of the block shape.

    ``block``: the exact shape (``.reqntid``), dimensions past those given
    being 1; None when unknown. With it, ``%ntid`` are constants and a
    dimension of 1 has ``%tid`` 0. ``expand``: ballots, matches and
    reductions as exact 32-lane expansions instead of opaque functions.
    """

    def __init__(self, block: tuple[int, int, int] | None = None, expand: bool = False) -> None:
        self.block = block
        self.expand = expand
        self._functions: dict[str, z3.FuncDeclRef] = {}
        # Classification of terms by Z3 id (see `_classify`); the roots are kept
        # alive so that no id is reused while its entry is here.
        self._kinds: dict[int, int] = {}
        self._roots: list[z3.ExprRef] = []
        # Terms built once: building Z3 terms from Python is what costs here.
        self._ntid = {s: self._make_ntid(s) for s in _DIMS}
        self._tid = {s: self._make_tid(s) for s in _DIMS}
        self._laneid = z3.BitVec("%laneid", 32)
        x, y, z = (self._tid[s] for s in _DIMS)
        self._linear = _simplify(x + self._ntid["x"] * (y + self._ntid["y"] * z))
        size = self._ntid["x"] * self._ntid["y"] * self._ntid["z"]
        # Threads of the warp from this lane's lane 0 on: lane l exists iff l < remaining.
        self._remaining = _simplify(size - (self._linear - self._laneid))
        self._pairs: dict[int, list[tuple[BV, BV]]] = {}

    # ---- the thread's ids --------------------------------------------------------------------
    def _make_ntid(self, sel: str) -> BV:
        if self.block is not None:
            return z3.BitVecVal(self.block[_DIMS.index(sel)], 32)
        return z3.BitVec(f"%ntid.{sel}", 32)

    def _make_tid(self, sel: str) -> BV:
        if self.block is not None and self.block[_DIMS.index(sel)] == 1:
            return z3.BitVecVal(0, 32)
        return z3.BitVec(f"%tid.{sel}", 32)

    def ntid(self, sel: str) -> BV:
        """``%ntid.<sel>``: a constant when the block shape is known."""
        return self._ntid[sel]

    def tid(self, sel: str) -> BV:
        """``%tid.<sel>``: 0 in a dimension the known shape makes 1."""
        return self._tid[sel]

    @property
    def laneid(self) -> BV:
        return self._laneid

    @property
    def rows_whole(self) -> bool:
        """Whether every warp lies within one row of the block (``%ntid.x``
        a known multiple of 32): then lane l's thread is ``%tid.x - %laneid + l``
        of the same ``%tid.y``/``%tid.z``, and every lane exists."""
        return self.block is not None and self.block[0] % LANES == 0

    def linear(self) -> BV:
        """The thread's linear id in its block."""
        return self._linear

    def lane_of_thread(self) -> BV:
        """What ``%laneid`` equals, in terms of ``%tid`` (an axiom of the executor)."""
        if self.rows_whole:
            return _simplify(self._tid["x"] & 31)
        # linear % 32 needs only the low 5 bits of every factor: 5-bit
        # multiplications, which the solver bit-blasts cheaply.
        x, y, z = (z3.Extract(4, 0, self._tid[s]) for s in _DIMS)
        nx, ny = (z3.Extract(4, 0, self._ntid[s]) for s in ("x", "y"))
        return _simplify(z3.ZeroExt(27, x + nx * (y + ny * z)))

    # ---- another lane ------------------------------------------------------------------------
    def thread_in_lane(self, src: BV) -> list[tuple[BV, BV]]:
        """Substitution pairs from this thread's ids to those of lane ``src``'s thread."""
        key = src.as_long() if z3.is_bv_value(src) else None
        if key is not None and key in self._pairs:
            return self._pairs[key]
        lane = self._laneid
        pairs: list[tuple[BV, BV]] = [(lane, src)]
        if self.rows_whole and self.block is not None and self.block[0] == LANES:
            pairs.append((self._tid["x"], src))  # a row is a warp: %tid.x is the lane
        elif self.rows_whole:
            pairs.append((self._tid["x"], _simplify(self._tid["x"] - lane + src)))
        else:
            other = self._linear - lane + src
            nx, ny = self._ntid["x"], self._ntid["y"]
            ids = {
                "x": z3.URem(other, nx),
                "y": z3.URem(z3.UDiv(other, nx), ny),
                "z": z3.UDiv(other, nx * ny),
            }
            for sel in _DIMS:
                if not z3.is_bv_value(self._tid[sel]):
                    pairs.append((self._tid[sel], _simplify(ids[sel])))
        pairs.extend(self._lanemask_pairs(src))
        if key is not None:
            self._pairs[key] = pairs
        return pairs

    def thread_in_row(self, src: BV) -> list[tuple[BV, BV]]:
        """Substitution pairs to lane ``src``'s thread when it is in this
        thread's row (`in_row`): only ``%tid.x`` (and the lane) move. The
        same ids `thread_in_lane` gives there, without a division."""
        lane = self._laneid
        return [
            (lane, src),
            (self._tid["x"], _simplify(self._tid["x"] - lane + src)),
            *self._lanemask_pairs(src),
        ]

    def in_row(self, src: BV) -> z3.BoolRef:
        """Whether lane ``src``'s thread is in this thread's row of the block
        (then it exists, and differs from this thread in ``%tid.x`` only)."""
        if self.rows_whole:
            return z3.BoolVal(True)
        return _simplify(z3.ULT(self._tid["x"] - self._laneid + src, self._ntid["x"]))

    @staticmethod
    def _lanemask_pairs(src: BV) -> list[tuple[BV, BV]]:
        eq = z3.BitVecVal(1, 32) << src
        masks = {"eq": eq, "lt": eq - 1, "le": (eq << 1) - 1, "gt": ~((eq << 1) - 1), "ge": ~(eq - 1)}
        return [(z3.BitVec(f"%lanemask_{k}", 32), _simplify(masks[k])) for k in _LANEMASKS]

    def exists(self, src: BV) -> z3.BoolRef:
        """Whether lane ``src`` of this warp holds a thread (a partial last warp has fewer)."""
        if self.rows_whole:
            return z3.BoolVal(True)
        return _simplify(z3.ULT(src, self._remaining))

    def existing(self) -> BV:
        """The 32-bit mask of lanes that hold a thread: the active lanes of a converged warp."""
        if self.rows_whole:
            return z3.BitVecVal(0xFFFFFFFF, 32)
        rem = self._remaining
        low = (z3.BitVecVal(1, 32) << rem) - 1
        return _simplify(z3.If(z3.ULT(rem, 32), low, z3.BitVecVal(0xFFFFFFFF, 32)))

    def read(self, value: BV, src: BV) -> BV:
        """``value`` in lane ``src`` (see the module docstring)."""
        return self._mover(value)(src)

    def _mover(self, value: BV) -> Callable[[BV], BV]:
        """``src -> value in lane src``; the DAG walk that classifies ``value``
        is done once, whatever number of lanes it is then moved to."""
        kind = self._classify(value)
        if kind & _PER_THREAD:
            found = self._per_thread_leaves(value) if kind & _PER_LANE else None
            if found is None:
                return lambda src: self._opaque("lane_read", value, src)
            leaves, reads = found

            # A small value that mixes thread ids with per-thread unknowns
            # (GCC's OpenACC code: lane 0 loads the arguments under ``tid.x
            # == 0``, the others take them from lane 0, so each lane holds
            # ``If(tid.x == 0, loaded, undefined)``): the ids move, each
            # unknown becomes what it is in lane src, opaque. Where the
            # moved condition decides, the unknown drops out.
            def move_parts(src: BV) -> BV:
                ids = self.thread_in_lane(src)
                # What another lane held (``lane_read32(x, 0)``: lane 0's x)
                # moves with its lane argument only; the unknowns inside it
                # are that lane's already. Set aside while the rest moves.
                unknowns = [(leaf, self._opaque("lane_read", leaf, src)) for leaf in leaves]
                if not reads:
                    return _simplify(z3.substitute(value, *ids, *unknowns))
                holes = [(read, z3.FreshConst(read.sort(), "lane_hole")) for read in reads]
                moved = z3.substitute(z3.substitute(value, *holes), *ids, *unknowns)
                back = [(hole, z3.substitute(read, *ids)) for read, hole in holes]
                return _simplify(z3.substitute(moved, *back))

            return move_parts
        if not kind & _PER_LANE:
            return lambda src: value  # the same in every lane

        def move(src: BV) -> BV:
            # A moved copy holds what ``value`` and ``src`` hold (and thread
            # ids): its kind is told, not walked. A warp reduction shuffles
            # the sum of such copies again at each level, and walking them
            # made most of its analysis (`_told`).
            copies = kind | self._classify(src) | _PER_LANE
            moved = self._told(_simplify(z3.substitute(value, *self.thread_in_lane(src))), copies)
            if self.rows_whole:
                return moved
            # Past the end of a partial warp there is no thread: the lane keeps
            # its own value. A thread of the same row is the common case, and
            # the one a solver can reason about without dividing: give it apart.
            same_row = self._told(_simplify(z3.substitute(value, *self.thread_in_row(src))), copies)
            other = _simplify(z3.If(self.exists(src), moved, value))
            return _simplify(z3.If(self.in_row(src), same_row, other))

        return move

    def _per_thread_leaves(self, value: BV) -> tuple[list[BV], list[BV]] | None:
        """The per-thread unknowns in ``value`` (variables, ``.local`` loads)
        and the values of other lanes in it (``lane_read``, not looked
        into), or None past `_MOVE_LIMIT` nodes: a warp reduction shuffles
        its sum again at each level, and the sums of moved parts would
        double each time where one opaque read stays one node."""
        ctx = value.ctx.ref()
        leaves: list[BV] = []
        reads: list[BV] = []

        def visit(node: Any, nid: int, args: list[Any]) -> bool:
            if not self._kinds.get(nid, _PER_THREAD) & _PER_THREAD:
                return False  # nothing per-thread below
            decl = raw.app_decl(ctx, node)
            if raw.decl_kind(ctx, decl) != z3.Z3_OP_UNINTERPRETED:
                return True
            name = raw.name(ctx, decl)
            if (not args and _per_thread_variable(name)) or (args and name.startswith(_PER_THREAD_FUNCS)):
                leaves.append(z3.z3._to_expr_ref(node, value.ctx))  # type: ignore[attr-defined]
                return False
            if args and name.startswith("lane_read"):
                reads.append(z3.z3._to_expr_ref(node, value.ctx))  # type: ignore[attr-defined]
                return False
            return True

        if not raw.walk_apps(ctx, value.as_ast(), visit, _MOVE_LIMIT):
            return None
        return leaves, reads

    def _told(self, term: BV, kind: int) -> BV:
        """``term`` with its `_classify` kind recorded as ``kind`` unless
        already known: an over-approximation (a kind bit too many makes a
        later move substitute where it need not, never the other way)."""
        key = raw.ast_id(term.ctx.ref(), term.as_ast())
        if key not in self._kinds:
            self._kinds[key] = kind
            self._roots.append(term)
        return term

    def _opaque(self, name: str, value: BV, arg: BV) -> BV:
        """``name<w>(value, arg)``: an uninterpreted function, so equal inputs
        give equal results and nothing else is claimed."""
        w = value.size()
        key = f"{name}{w}"
        fn = self._functions.get(key)
        if fn is None:
            fn = self._functions[key] = z3.Function(
                key,
                z3.BitVecSort(w),
                z3.BitVecSort(arg.size()),
                z3.BitVecSort(w if name != "lane_ballot" else 32),
            )
        return fn(value, arg)  # type: ignore[return-value]

    def _classify(self, e: z3.ExprRef) -> int:
        """`_PER_LANE` if ``e`` mentions the thread's ids, `_PER_THREAD` if it
        holds a per-thread unknown (a variable other than the uniform ones, or
        a ``.local`` load). Walks the DAG once per new node, through Z3's C
        API without z3py's error checks (`raw`: the Python wrappers cost ten
        times more per node)."""
        ctx = e.ctx.ref()
        kinds = self._kinds
        root = e.as_ast()
        root_id = raw.ast_id(ctx, root)
        if root_id in kinds:
            return kinds[root_id]
        self._roots.append(e)
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            nid = raw.ast_id(ctx, node)
            if nid in kinds and not done:
                continue
            if raw.ast_kind(ctx, node) != z3.Z3_APP_AST:
                kinds[nid] = 0
                continue
            args = raw.args(ctx, node)
            if not done:
                stack.append((node, True))
                stack.extend((a, False) for a in args if raw.ast_id(ctx, a) not in kinds)
                continue
            kind = 0
            for a in args:
                kind |= kinds[raw.ast_id(ctx, a)]
            decl = raw.app_decl(ctx, node)
            if raw.decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
                name = raw.name(ctx, decl)
                if not args:
                    kind |= (
                        _PER_LANE
                        if name in _PER_LANE_NAMES
                        else _PER_THREAD
                        if _per_thread_variable(name)
                        else 0
                    )
                elif name.startswith(_PER_THREAD_FUNCS):
                    kind |= _PER_THREAD
            kinds[nid] = kind
        return kinds[root_id]

    # ---- expansions over the 32 lanes ----------------------------------------------------------
    def each_lane(self, value: BV) -> list[BV]:
        """``value`` in lanes 0..31."""
        move = self._mover(value)
        return [move(z3.BitVecVal(lane, 32)) for lane in range(LANES)]

    def ballot(self, pred: BV, part: BV) -> BV:
        if not self.expand:
            return self._opaque("lane_ballot", pred, part)
        bits = [
            z3.If(z3.And(z3.Extract(lane, lane, part) == 1, v == 1), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            for lane, v in enumerate(self.each_lane(pred))
        ]
        return _simplify(z3.Concat(*reversed(bits)))

    def match(self, value: BV, part: BV) -> BV:
        if not self.expand:
            return self._opaque("lane_match", value, part)
        bits = [
            z3.If(
                z3.And(z3.Extract(lane, lane, part) == 1, v == value), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
            )
            for lane, v in enumerate(self.each_lane(value))
        ]
        return _simplify(z3.Concat(*reversed(bits)))

    def reduce(self, op: str, value: BV, part: BV) -> BV:
        if op not in _COMBINE:
            raise NotImplementedError(f"lane reduction {op}")
        if not self.expand:
            return self._opaque(f"lane_{op}", value, part)
        w = value.size()
        identity = {"and": -1, "umin": -1, "smin": (1 << (w - 1)) - 1, "smax": 1 << (w - 1)}.get(op, 0)
        result: BV = z3.BitVecVal(identity % (1 << w), w)
        combine = _COMBINE[op]
        for lane, v in enumerate(self.each_lane(value)):
            result = z3.If(z3.Extract(lane, lane, part) == 1, combine(result, v), result)
        return _simplify(z3.If(part == 0, z3.BitVecVal(0, w), result))


# Flags of `LaneModel._classify`.
_PER_LANE = 1
_PER_THREAD = 2

_PER_LANE_NAMES = frozenset(
    {"%laneid", *(f"%tid.{s}" for s in _DIMS), *(f"%lanemask_{k}" for k in _LANEMASKS)}
)

_COMBINE = {
    "add": lambda a, b: a + b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "umin": lambda a, b: z3.If(z3.ULT(b, a), b, a),
    "umax": lambda a, b: z3.If(z3.ULT(a, b), b, a),
    "smin": lambda a, b: z3.If(b < a, b, a),
    "smax": lambda a, b: z3.If(a < b, b, a),
}


def _per_thread_variable(name: str) -> bool:
    """A variable that may differ between threads and is not a thread id:
    fresh values (``name!n``), registers read before written, loop values."""
    return "!" in name or not name.startswith(_UNIFORM_PREFIXES)
