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

Ballots, matches and reductions expand over the 32 lanes (one substitution
each): exact, and evaluable lane by lane, at 32 times the expression size.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

BV = z3.BitVecRef

LANES = 32
_DIMS = ("x", "y", "z")
_LANEMASKS = ("eq", "lt", "le", "gt", "ge")
# Names of variables the same in every lane of a warp (besides the
# thread-id ones, which are substituted): special registers, symbol
# addresses, kernel parameters, loop iteration counters.
_UNIFORM_PREFIXES = ("%", "&", "param_", "iter_")
_PER_THREAD_FUNCS = ("load_local_",)


class LaneModel:
    """The threads of a warp, from what is known of the block shape.

    ``block``: the exact shape (``.reqntid``), dimensions past those given
    being 1; None when unknown. With it, ``%ntid`` are constants and a
    dimension of 1 has ``%tid`` 0.
    """

    def __init__(self, block: tuple[int, int, int] | None = None) -> None:
        self.block = block
        self._opaque: dict[int, z3.FuncDeclRef] = {}

    # ---- the thread's ids --------------------------------------------------------------------
    def ntid(self, sel: str) -> BV:
        if self.block is not None:
            return z3.BitVecVal(self.block[_DIMS.index(sel)], 32)
        return z3.BitVec(f"%ntid.{sel}", 32)

    def tid(self, sel: str) -> BV:
        if self.block is not None and self.block[_DIMS.index(sel)] == 1:
            return z3.BitVecVal(0, 32)
        return z3.BitVec(f"%tid.{sel}", 32)

    @property
    def laneid(self) -> BV:
        return z3.BitVec("%laneid", 32)

    @property
    def rows_whole(self) -> bool:
        """Whether every warp lies within one row of the block (``%ntid.x``
        a known multiple of 32): then lane l's thread is ``%tid.x - %laneid + l``
        of the same ``%tid.y``/``%tid.z``, and every lane exists."""
        return self.block is not None and self.block[0] % LANES == 0

    def linear(self) -> BV:
        """The thread's linear id in its block."""
        x, y, z = (self.tid(s) for s in _DIMS)
        return z3.simplify(x + self.ntid("x") * (y + self.ntid("y") * z))

    def lane_of_thread(self) -> BV:
        """What ``%laneid`` equals, in terms of ``%tid`` (an axiom of the executor)."""
        if self.rows_whole:
            return z3.simplify(self.tid("x") & 31)
        return z3.simplify(z3.URem(self.linear(), 32))

    # ---- another lane ------------------------------------------------------------------------
    def thread_in_lane(self, src: BV) -> list[tuple[BV, BV]]:
        """Substitution pairs from this thread's ids to those of lane ``src``'s thread."""
        lane = self.laneid
        pairs: list[tuple[BV, BV]] = [(lane, src)]
        if self.rows_whole:
            pairs.append((z3.BitVec("%tid.x", 32), z3.simplify(self.tid("x") - lane + src)))
        else:
            other = self.linear() - lane + src
            nx, ny = self.ntid("x"), self.ntid("y")
            ids = {
                "x": z3.URem(other, nx),
                "y": z3.URem(z3.UDiv(other, nx), ny),
                "z": z3.UDiv(other, nx * ny),
            }
            for sel in _DIMS:
                if not z3.is_bv_value(self.tid(sel)):
                    pairs.append((z3.BitVec(f"%tid.{sel}", 32), z3.simplify(ids[sel])))
        one = z3.BitVecVal(1, 32)
        eq = one << src
        masks = {"eq": eq, "lt": eq - 1, "le": (eq << 1) - 1, "gt": ~((eq << 1) - 1), "ge": ~(eq - 1)}
        pairs.extend((z3.BitVec(f"%lanemask_{k}", 32), z3.simplify(masks[k])) for k in _LANEMASKS)
        return pairs

    def exists(self, src: BV) -> z3.BoolRef:
        """Whether lane ``src`` of this warp holds a thread (a partial last warp has fewer)."""
        if self.rows_whole:
            return z3.BoolVal(True)
        size = self.ntid("x") * self.ntid("y") * self.ntid("z")
        return z3.simplify(z3.ULT(self.linear() - self.laneid + src, size))

    def existing(self) -> BV:
        """The 32-bit mask of lanes that hold a thread: the active lanes of a converged warp."""
        if self.rows_whole:
            return z3.BitVecVal(0xFFFFFFFF, 32)
        bits = [
            z3.If(self.exists(z3.BitVecVal(lane, 32)), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            for lane in range(LANES)
        ]
        return z3.simplify(z3.Concat(*reversed(bits)))

    def read(self, value: BV, src: BV) -> BV:
        """``value`` in lane ``src`` (see the module docstring)."""
        return self._mover(value)(src)

    def _mover(self, value: BV) -> Callable[[BV], BV]:
        """``src -> value in lane src``; the DAG walk that classifies ``value``
        is done once, whatever number of lanes it is then moved to."""
        variables, functions = _free_names(value)
        if any(_per_thread_variable(n) for n in variables) or any(
            n.startswith(_PER_THREAD_FUNCS) for n in functions
        ):
            return lambda src: self._opaque_read(value, src)
        if not variables & _PER_LANE_NAMES:
            return lambda src: value  # the same in every lane

        def move(src: BV) -> BV:
            moved = z3.simplify(z3.substitute(value, *self.thread_in_lane(src)))
            if self.rows_whole:
                return moved
            # Past the end of a partial warp there is no thread: the lane keeps its own value.
            return z3.simplify(z3.If(self.exists(src), moved, value))

        return move

    def _opaque_read(self, value: BV, src: BV) -> BV:
        w = value.size()
        fn = self._opaque.get(w)
        if fn is None:
            fn = self._opaque[w] = z3.Function(
                f"lane_read{w}", z3.BitVecSort(w), z3.BitVecSort(32), z3.BitVecSort(w)
            )
        return fn(value, src)  # type: ignore[return-value]

    # ---- expansions over the 32 lanes ----------------------------------------------------------
    def each_lane(self, value: BV) -> list[BV]:
        """``value`` in lanes 0..31."""
        move = self._mover(value)
        return [move(z3.BitVecVal(lane, 32)) for lane in range(LANES)]

    def ballot(self, pred: BV, part: BV) -> BV:
        bits = [
            z3.If(z3.And(z3.Extract(lane, lane, part) == 1, v == 1), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            for lane, v in enumerate(self.each_lane(pred))
        ]
        return z3.simplify(z3.Concat(*reversed(bits)))

    def match(self, value: BV, part: BV) -> BV:
        bits = [
            z3.If(
                z3.And(z3.Extract(lane, lane, part) == 1, v == value), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
            )
            for lane, v in enumerate(self.each_lane(value))
        ]
        return z3.simplify(z3.Concat(*reversed(bits)))

    def reduce(self, op: str, value: BV, part: BV) -> BV:
        w = value.size()
        identity = {"and": -1, "umin": -1, "smin": (1 << (w - 1)) - 1, "smax": 1 << (w - 1)}.get(op, 0)
        result: BV = z3.BitVecVal(identity % (1 << w), w)
        combine = _COMBINE.get(op)
        if combine is None:
            raise NotImplementedError(f"lane reduction {op}")
        for lane, v in enumerate(self.each_lane(value)):
            result = z3.If(z3.Extract(lane, lane, part) == 1, combine(result, v), result)
        return z3.simplify(z3.If(part == 0, z3.BitVecVal(0, w), result))


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


def _free_names(e: z3.ExprRef) -> tuple[set[str], set[str]]:
    """Names of the uninterpreted constants and of the uninterpreted functions in ``e``."""
    seen: set[int] = set()
    variables: set[str] = set()
    functions: set[str] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_app(node) and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            (variables if node.num_args() == 0 else functions).add(node.decl().name())
        stack.extend(node.children())
    return variables, functions
