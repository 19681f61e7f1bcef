"""Guard formulas for if-conversion: when a block of a converted region runs.

A region's blocks are reached along its branch edges, so the condition for
a block is a Boolean formula over the branch predicates: the disjunction,
over its incoming edges, of the edge's source condition and the branch's
own (possibly negated) predicate. The formulas are kept in disjunctive normal
form over predicate registers and simplified as they are built, so the join
of a diamond, ``(a && p) || (a && !p)``, is ``a`` again and costs nothing.

`GuardBuilder` turns a formula into a guard: a predicate register (with
``!`` where one literal suffices) and the ``and``/``or``/``not``
instructions that compute it, remembering what it built so a formula used
again reuses its register. A formula names registers, not values: when the
region writes a register that a live formula mentions, the caller first
copies the register (`GuardBuilder.snapshot`) and renames it in its formulas
(`rename`), so every formula still means the value the branch tested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ptxasw import ir
from ptxasw.ir.builder import table_checked

__all__ = [
    "FALSE",
    "TRUE",
    "Formula",
    "GuardBuilder",
    "conj",
    "disj",
    "literal",
    "mentions",
    "negate",
    "rename",
]

Literal = tuple[ir.Register, bool]  # (predicate, negated)
Cube = frozenset[Literal]
Formula = frozenset[Cube]

TRUE: Formula = frozenset({frozenset()})
FALSE: Formula = frozenset()


def literal(guard: ir.Guard) -> Formula:
    """The formula of a guard ``@p`` or ``@!p``."""
    return frozenset({frozenset({(guard.predicate, guard.negated)})})


def negate(guard: ir.Guard) -> Formula:
    return literal(ir.Guard(guard.predicate, not guard.negated))


def conj(a: Formula, b: Formula) -> Formula:
    cubes = {x | y for x in a for y in b}
    return _simplified(c for c in cubes if not _contradictory(c))


def disj(a: Formula, b: Formula) -> Formula:
    return _simplified([*a, *b])


def mentions(f: Formula, reg: ir.Register) -> bool:
    return any(lit[0] == reg for cube in f for lit in cube)


def rename(f: Formula, old: ir.Register, new: ir.Register) -> Formula:
    return frozenset(frozenset((new if r == old else r, n) for r, n in cube) for cube in f)


def _contradictory(cube: Cube) -> bool:
    return any((r, not n) in cube for r, n in cube)


def _simplified(cubes: Iterable[Cube]) -> Formula:
    """Absorption (``x || x&&y`` is ``x``) and merging of cubes that differ in
    one complementary literal (``x&&p || x&&!p`` is ``x``), to a fixed point."""
    current = set(cubes)
    changed = True
    while changed:
        changed = False
        for a in list(current):
            if a not in current:
                continue
            for lit in a:
                twin = (a - {lit}) | {(lit[0], not lit[1])}
                if twin in current:
                    current -= {a, twin}
                    current.add(a - {lit})
                    changed = True
                    break
        kept = {c for c in current if not any(o < c for o in current)}
        if kept != current:
            current = kept
            changed = True
    return frozenset(current)


def _order(lit: Literal) -> tuple[str, str, bool]:
    return (lit[0].name, lit[0].selector or "", lit[1])


class GuardBuilder:
    """Materialises formulas as predicate registers; ``fresh`` names new ones."""

    def __init__(self, fresh: Callable[[], ir.Register]) -> None:
        self._fresh = fresh
        self._built: dict[Formula, ir.Register] = {}

    def guard(self, f: Formula, out: list[object]) -> ir.Guard | None:
        """The guard that holds exactly where ``f`` does (None for TRUE),
        appending to ``out`` the instructions that compute it."""
        assert f != FALSE, "dead code has no guard"
        if f == TRUE:
            return None
        if len(f) == 1:
            (cube,) = f
            if len(cube) == 1:
                ((reg, negated),) = cube
                return ir.Guard(reg, negated)
        return ir.Guard(self._register(f, out))

    def snapshot(self, reg: ir.Register, out: list[object]) -> ir.Register:
        """A copy of ``reg``'s current value, made before something overwrites
        it; what was built from ``reg`` is now known as built from the copy."""
        copy = self._fresh()
        out.append(table_checked(ir.Instruction("mov", (".pred",), (copy, reg))))
        self._built = {rename(f, reg, copy) if mentions(f, reg) else f: r for f, r in self._built.items()}
        return copy

    def forget(self, reg: ir.Register) -> None:
        """``reg`` is about to be overwritten: nothing built from it stays
        reusable (what a live formula still needs was `snapshot` first)."""
        self._built = {f: r for f, r in self._built.items() if not mentions(f, reg)}

    def _register(self, f: Formula, out: list[object]) -> ir.Register:
        known = self._built.get(f)
        if known is not None:
            return known
        cubes = sorted(f, key=lambda c: sorted(map(_order, c)))
        reg = self._cube(cubes[0], out)
        for cube in cubes[1:]:
            reg = self._emit("or", reg, self._cube(cube, out), out)
        self._built[f] = reg
        return reg

    def _cube(self, cube: Cube, out: list[object]) -> ir.Register:
        """A conjunction, built on the longest part of it already built (a
        chain of early exits adds one literal at a time)."""
        f = frozenset({cube})
        known = self._built.get(f)
        if known is not None:
            return known
        lits = sorted(cube, key=_order)
        if len(lits) == 1:
            reg, negated = lits[0]
            if not negated:
                return reg
            result = self._emit("not", reg, None, out)
        else:
            rest = next((lit for lit in lits if frozenset({cube - {lit}}) in self._built), lits[-1])
            prefix = self._cube(cube - {rest}, out)
            result = self._emit("and", prefix, self._cube(frozenset({rest}), out), out)
        self._built[f] = result
        return result

    def _emit(self, opcode: str, a: ir.Register, b: ir.Register | None, out: list[object]) -> ir.Register:
        target = self._fresh()
        operands = (target, a) if b is None else (target, a, b)
        out.append(table_checked(ir.Instruction(opcode, (".pred",), operands)))
        return target
