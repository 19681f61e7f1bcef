"""Where ptxas, not the PTX, decides the rounding: sums it may fuse either way.

A floating-point ``mul``, ``add`` or ``sub`` without a rounding modifier
lets ``ptxas`` contract a product and a sum into one ``fma`` (the PTX ISA
gives it that freedom; ``.rn`` takes it away). Where the choice is forced
the rewrite cannot change it: a product used once, added to something that
is not a product, is fused. Where it is not, ptxas picks by its own
schedule: in ``a*b - c*d`` (nvcc leaves exactly these to ptxas) one of the
two products is fused and the other rounded, and which one depends on when
their operands arrive. A load turned into a shuffle arrives at another
time: on an H100 the rewrite of ``a[i+1]*b[i] - a[i]*b[i+1]`` fused the
other product and changed the last bit of the result.

`open_sums` finds those sums: the ones `ptxasw.synth.pinning` can pin to
the choice ptxas made (`OpenSum`: products defined once, from registers
defined once), and the others, which nothing pins.
`feeding_registers` names the registers whose values flow into a set of
sums' products. `calls_into_sums` finds the calls whose callee has open
sums of its own: ptxas may inline a device function into the kernel, and
then the kernel's schedule decides there too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from ptxasw.analysis.inline import call_site
from ptxasw.ir import isa
from ptxasw.ir.nodes import Address, Function, Instruction, Module, Register, Symbol

__all__ = [
    "OpenSum",
    "SumsFound",
    "calls_into_sums",
    "contractible",
    "feeding_registers",
    "open_sums",
    "unrounded_float",
]

_FLOATS = frozenset({".f32", ".f64"})


@dataclass(frozen=True)
class OpenSum:
    """``total = x ± y`` where ptxas chooses whether to fuse a product: ``left``
    and ``right`` are the contractible ``mul`` defining ``x`` and ``y`` (None
    for an operand that is no product). Both are products, or a product is
    also read elsewhere (fused here, kept for its other reader, or both)."""

    total: Instruction
    left: Instruction | None
    right: Instruction | None
    index: int  # its place among the function's pinnable sums (`open_sums`), in text order

    def moved(self, memo: dict[int, object]) -> OpenSum:
        """The same sum in a copy of its function (``memo``: `copy.deepcopy`'s)."""

        def at(inst: Instruction | None) -> Instruction | None:
            return None if inst is None else memo[id(inst)]  # type: ignore[return-value]

        return OpenSum(at(self.total), at(self.left), at(self.right), self.index)  # type: ignore[arg-type]


@dataclass
class SumsFound:
    """A function's open sums: those `ptxasw.synth.pinning` can pin, and the
    others (each with the products it may fuse)."""

    pinnable: list[OpenSum]
    other: list[tuple[Instruction, list[Instruction]]]

    def __bool__(self) -> bool:
        return bool(self.pinnable or self.other)


def unrounded_float(inst: Instruction, opcodes: tuple[str, ...]) -> bool:
    """A float ``inst`` of one of ``opcodes`` without a rounding modifier:
    one ptxas may fuse with another."""
    if inst.opcode not in opcodes or not _FLOATS & set(isa.instruction_types(inst)):
        return False
    return not any(isa.classify_modifier(m, inst.opcode) is isa.ModifierKind.ROUNDING for m in inst.modifiers)


def contractible(inst: Instruction, opcodes: tuple[str, ...]) -> bool:
    """`unrounded_float`, and neither guarded nor saturating: what a sum
    `open_sums` pins is made of."""
    return inst.guard is None and ".sat" not in inst.modifiers and unrounded_float(inst, opcodes)


def open_sums(fn: Function) -> SumsFound:
    """Every sum of ``fn`` whose fusion ptxas chooses.

    A sum is open when both of its operands are contractible products, or
    when a product among them is also read elsewhere (fused here, or kept
    whole for the other reader: ptxas's call). It is pinnable when each of
    its products is the only definition of its register, of the sum's type
    and flush mode, and built from registers defined once (SSA-like, as nvcc
    and clang write them; ``-G`` and GCC code reuse names, and moving a
    product to the sum could then read another value). Registers are
    matched by name, every definition counting."""
    writers: dict[str, list[Instruction]] = defaultdict(list)
    readers: dict[str, int] = defaultdict(int)
    instructions = list(fn.instructions())
    for inst in instructions:
        for reg in isa.uses(inst):
            readers[reg.name] += 1
        for reg in isa.defs(inst):
            writers[reg.name].append(inst)

    def product(op: object) -> list[Instruction]:
        if not isinstance(op, Register):
            return []
        return [w for w in writers.get(op.name, ()) if contractible(w, ("mul",))]

    found = SumsFound([], [])
    for inst in instructions:
        if not contractible(inst, ("add", "sub")):
            continue
        x, y = inst.operands[1], inst.operands[2]
        fused = [op for op in (x, y) if product(op)]
        if not (len(fused) == 2 or any(readers[op.name] > 1 for op in fused)):  # type: ignore[union-attr]
            continue
        if all(_pinnable_product(inst, op, writers) for op in fused):  # type: ignore[arg-type]
            left, right = (writers[op.name][0] if product(op) else None for op in (x, y))  # type: ignore[union-attr]
            found.pinnable.append(OpenSum(inst, left, right, len(found.pinnable)))
        else:
            found.other.append((inst, [p for op in fused for p in product(op)]))
    return found


def _pinnable_product(total: Instruction, reg: Register, writers: dict[str, list[Instruction]]) -> bool:
    defs = writers.get(reg.name, [])
    if len(defs) != 1 or reg.name == _sum_dst(total):
        return False
    mul = defs[0]
    if isa.instruction_types(mul) != isa.instruction_types(total):
        return False
    if (".ftz" in mul.modifiers) != (".ftz" in total.modifiers):
        return False
    return all(len(writers.get(r.name, [])) <= 1 for r in isa.uses(mul))


def _sum_dst(total: Instruction) -> str | None:
    dst = total.operands[0] if total.operands else None
    return dst.name if isinstance(dst, Register) else None


def feeding_registers(
    fn: Function, sums: list[tuple[Instruction, list[Instruction]]]
) -> dict[str, Instruction]:
    """Register name -> a sum of ``sums`` (each with its products) that the
    register's value flows into through a product: the registers the
    products read, what those were computed from, and so on (register
    dataflow by name, no memory)."""
    writers: dict[str, list[Instruction]] = defaultdict(list)
    for inst in fn.instructions():
        for reg in isa.defs(inst):
            writers[reg.name].append(inst)
    feeding: dict[str, Instruction] = {}
    for total, products in sums:
        work = [reg.name for p in products for reg in isa.uses(p)]
        while work:
            name = work.pop()
            if name in feeding:
                continue
            feeding[name] = total
            for writer in writers.get(name, ()):
                work.extend(reg.name for reg in isa.uses(writer))
    return feeding


def calls_into_sums(module: Module, fn: Function) -> list[tuple[Instruction, list[Instruction]]]:
    """The calls of ``fn`` that reach open sums (`open_sums`) in a device
    function of ``module``: its callee has some, or calls one that has, at
    any depth; an indirect call, when any function of the module has them.
    Each comes with what passes it its arguments: the ``st.param`` to its
    argument names (by name, so a store to another call's ``param0`` counts
    too) and the call itself (register arguments), as the "products" of
    `feeding_registers`. A function declared without a body (another
    compilation unit, ``-rdc``) is compiled apart from the kernel and
    reaches none."""
    index = module.index()
    bodies = {name: f for name, f in index.definitions.items() if not f.is_kernel}
    aliases = index.aliases
    reaches: dict[str, bool] = {}

    def reaching(name: str, stack: tuple[str, ...] = ()) -> bool:
        name = aliases.get(name, name)
        known = reaches.get(name)
        if known is not None:
            return known
        callee = bodies.get(name)
        if callee is None or name in stack:
            return False
        found = bool(open_sums(callee)) or any(
            _reaches(call, lambda n: reaching(n, (*stack, name)), bodies)
            for call in callee.instructions()
            if isa.is_call(call)
        )
        reaches[name] = found
        return found

    calls = [inst for inst in fn.instructions() if isa.is_call(inst)]
    reaching_calls = [c for c in calls if _reaches(c, reaching, bodies)]
    if not reaching_calls:
        return []
    passing = [inst for inst in fn.instructions() if isa.is_store(inst) and isa.state_space(inst) == ".param"]
    out = []
    for call in reaching_calls:
        names = {a.name for a in call_site(call).args if isinstance(a, Symbol)}
        stores = [st for st in passing if _stored_param(st) in names]
        out.append((call, [call, *stores]))
    return out


def _reaches(call: Instruction, reaching: Callable[[str], bool], bodies: dict[str, Function]) -> bool:
    callee = call_site(call).callee
    if isinstance(callee, Symbol):
        return reaching(callee.name)
    return any(reaching(name) for name in bodies)  # through a register: any function


def _stored_param(store: Instruction) -> str | None:
    address = next((op for op in store.operands if isinstance(op, Address)), None)
    return address.base.name if address is not None and isinstance(address.base, Symbol) else None
