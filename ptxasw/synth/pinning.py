"""Keeping ptxas's rounding: pin each open sum to the choice ptxas made.

In ``a*b - c*d`` written as contractible ``mul``/``sub`` (`ptxasw.analysis.
contraction`), ptxas fuses one product into an ``fma`` by its own schedule,
and a rewrite that changes when the operands arrive can change which (an
H100 gave other last bits for a rewritten kernel whose PTX was proven
equal). Writing ptxas's choice into the sum (``fma.rn`` of the fused
product's factors, or ``add.rn`` where it fused neither) takes the choice
away from it.

Which choice ptxas made in the original is found by asking it (`settle`):
the original with a sum pinned one way assembles to the same code as the
original when that is what ptxas did (a pin written the way ptxas
contracted leaves it the same code; a wrong one leaves another FFMA). The
questions are asked for all sums at once and the set halved where that
fails. Where ptxas fuses nothing at all (`fuses_nothing`: ``-G`` builds,
``--fmad=false``) every product is written apart instead (`round_apart`).
The rewrite then rounds as the original did whatever its schedule
(`write_rounding`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from enum import StrEnum

from ptxasw import ir
from ptxasw.analysis.contraction import OpenSum, open_sums, unrounded_float
from ptxasw.driver.assembler import Assemble
from ptxasw.ir import isa
from ptxasw.ir.builder import BuildError, FunctionBuilder, copy_function
from ptxasw.ir.printer import print_module

__all__ = [
    "Choice",
    "choices_for",
    "fuses_nothing",
    "pin",
    "pin_like",
    "round_apart",
    "settle",
    "write_rounding",
]


class Choice(StrEnum):
    LEFT = "left"  # total = fma(left's factors, ±y)
    RIGHT = "right"  # total = fma(±right's factors, x)
    NEITHER = "neither"  # the products and the sum rounded on their own


def choices_for(s: OpenSum) -> list[Choice]:
    """The choices ptxas has for ``s``: fusing a side that is a product, or neither."""
    return [c for c, side in ((Choice.LEFT, s.left), (Choice.RIGHT, s.right)) if side is not None] + [
        Choice.NEITHER
    ]


def pin(builder: FunctionBuilder, s: OpenSum, choice: Choice) -> None:
    """Write ``choice`` for ``s`` into ``builder``'s function: the sum becomes
    ``fma.rn`` of the fused product's factors (``add.rn``/``sub.rn`` for
    NEITHER); a fused product that nothing else reads goes. The products stay
    as they are: what reads them now is no contractible sum (an ``fma``'s
    addend, a rounded sum) or another open sum with a pin of its own, so pins
    of sums that share a product are independent questions to ptxas.

    ``total = x - c*d`` fused on the right is ``fma.rn(-c, d, x)``; on the
    left, ``fma.rn(a, b, -y)``: a negation is exact, so each is the rounding
    of the same exact value ptxas's ``FFMA`` with a negated operand rounds."""
    total = s.total
    dst, x, y = total.operands[0], total.operands[1], total.operands[2]
    if choice is Choice.NEITHER:
        builder.replace(total, [_rounded(builder, total, total.opcode, total.operands)])
        return
    fused, other = (s.left, y) if choice is Choice.LEFT else (s.right, x)
    assert fused is not None, f"{choice} names no product of {total.mnemonic}"
    factors = list(fused.operands[1:])
    code: list[ir.Instruction] = []
    if total.opcode == "sub":
        if choice is Choice.LEFT:  # x - y = fma(a, b, -y)
            other = _flipped(other) if _flippable(other) else _negated(builder, other, total, code)  # type: ignore[arg-type]
        else:  # x - c*d = fma(-c, d, x): a literal factor negated in place, as ptxas does
            literal = [k for k, f in enumerate(factors) if _flippable(f)]
            if literal:
                factors[literal[0]] = _flipped(factors[literal[0]])  # type: ignore[arg-type]
            else:
                factors[0] = _negated(builder, factors[0], total, code)
    code.append(_rounded(builder, total, "fma", [dst, *factors, other]))
    product = fused.operands[0]
    readers = builder.users(product) if isinstance(product, ir.Register) else [total, fused]
    builder.replace(total, code)
    if builder.contains(fused) and all(r is total for r in readers):
        builder.remove(fused)


def _flippable(value: ir.Operand) -> bool:
    return isinstance(value, ir.FloatImm) and value.kind in ("f", "d")


def _flipped(value: ir.FloatImm) -> ir.FloatImm:
    """``-value`` for a hexadecimal literal (``0f``/``0d`` and the bits): its sign bit flipped."""
    digits = value.text[2:]
    bits = int(digits, 16) ^ (1 << (len(digits) * 4 - 1))
    return ir.FloatImm(value.kind, f"{value.text[:2]}{bits:0{len(digits)}X}")


def _rounded(
    builder: FunctionBuilder, like: ir.Instruction, opcode: str, operands: Sequence[ir.Operand]
) -> ir.Instruction:
    """``opcode.rn`` with ``like``'s flush mode and type, at ``like``'s source line."""
    mods = [".rn", *(m for m in like.modifiers if m == ".ftz"), _type(like)]
    return dataclasses.replace(builder.instruction(opcode, mods, operands), loc=like.loc)


def _negated(
    builder: FunctionBuilder, value: ir.Operand, like: ir.Instruction, code: list[ir.Instruction]
) -> ir.Register:
    """A fresh register holding ``-value``, its ``neg`` appended to ``code``."""
    typ = _type(like)
    reg = builder.fresh(typ, "neg")
    mods = [*(m for m in like.modifiers if m == ".ftz"), typ]
    code.append(dataclasses.replace(builder.instruction("neg", mods, [reg, value]), loc=like.loc))
    return reg


def _type(inst: ir.Instruction) -> str:
    typ = isa.instruction_type(inst)
    assert typ is not None, inst.mnemonic
    return typ


def settle(
    module: ir.Module,
    fn: ir.Function,
    sums: Sequence[OpenSum],
    assemble: Assemble,
    limit: int = 64,
    time_s: float = math.inf,
) -> dict[int, Choice]:
    """Index in ``sums`` -> the choice ptxas makes for it in ``module`` as it
    stands (sums it could not be shown for are missing). At most ``limit``
    assemblies after the first, and none started after ``time_s`` seconds;
    every pin is checked on a copy of the module `_asked` puts it to."""
    if not sums:
        return {}
    stop = time.monotonic() + time_s
    scope, base = _asked(module, fn, assemble)
    if base is None:
        return {}
    runs = 0

    def same(assignment: dict[int, Choice]) -> bool:
        nonlocal runs
        runs += 1
        trial_fn, trial, memo = copy_function(scope, fn)
        builder = FunctionBuilder(trial_fn, trial)
        try:
            for k, choice in assignment.items():
                pin(builder, sums[k].moved(memo), choice)
        except BuildError:
            return False  # a form the table refuses (never so far): not this choice
        return assemble(print_module(trial)) == base

    def test(group: list[int], choice: Choice) -> list[int]:
        """The members of ``group`` for which ``choice`` is not ptxas's."""
        if runs >= limit or time.monotonic() > stop:
            return group
        if same({k: choice for k in group}):
            known.update({k: choice for k in group})
            return []
        if len(group) == 1:
            return group
        half = len(group) // 2
        return test(group[:half], choice) + test(group[half:], choice)

    known: dict[int, Choice] = {}
    pending = list(range(len(sums)))
    for choice in Choice:
        asked = [k for k in pending if choice in choices_for(sums[k])]
        if asked:
            test(asked, choice)
            pending = [k for k in pending if k not in known]
    return known


def round_apart(builder: FunctionBuilder) -> None:
    """Every float ``mul``/``add``/``sub`` of the function without a rounding
    modifier (guarded or saturating ones too: ptxas may fuse into those as
    well) written with ``.rn``: no product fused anywhere, as ptxas compiled
    an original of which `fuses_nothing` holds."""
    for inst in list(builder.fn.instructions()):
        if unrounded_float(inst, ("mul", "add", "sub")):
            new = builder.instruction(inst.opcode, [".rn", *inst.modifiers], inst.operands, guard=inst.guard)
            builder.replace(inst, [dataclasses.replace(new, loc=inst.loc)])


def fuses_nothing(
    module: ir.Module, fn: ir.Function, assemble: Assemble, device_functions: bool = False
) -> bool:
    """Whether ptxas fuses no product of ``fn`` (``-G``, ``--fmad=false``, or
    none it would): the module with `round_apart` applied to ``fn`` (and,
    with ``device_functions``, to every device function defined beside it)
    assembles to the same bytes as the module."""
    scope, base = _asked(module, fn, assemble)
    if base is None:
        return False
    trial_fn, trial, _ = copy_function(scope, fn)
    round_apart(FunctionBuilder(trial_fn, trial))
    if device_functions:
        for other in [f for f in trial.functions if f.body is not None and not f.is_kernel]:
            copy, trial, _ = copy_function(trial, other)
            round_apart(FunctionBuilder(copy, trial))
    return assemble(print_module(trial)) == base


def _asked(module: ir.Module, fn: ir.Function, assemble: Assemble) -> tuple[ir.Module, bytes | None]:
    """The module questions about ``fn`` are put to, and what ptxas makes of it.

    ptxas compiles each kernel on its own, so that is ``module`` without its
    other kernels (device functions stay: a kernel may call them): a file
    of many kernels costs a small assembly per question, not the whole
    file. Where that does not assemble (a kernel named by address, debug
    sections that name every kernel), it is the whole module."""
    items = [it for it in module.items if not (isinstance(it, ir.Function) and it.is_kernel and it is not fn)]
    if len(items) < len(module.items):
        scope = dataclasses.replace(module, items=items)
        base = assemble(print_module(scope))
        if base is not None:
            return scope, base
    return module, assemble(print_module(module))


def write_rounding(
    builder: FunctionBuilder,
    pins: Sequence[tuple[OpenSum, Choice]],
    apart: bool,
    memo: dict[int, object] | None = None,
) -> None:
    """What a plan keeps of ptxas's rounding, written into the rewritten
    function of ``builder``: its ``pins`` (``memo``: `copy.deepcopy`'s, when
    the function is a copy of the one they name), or every product apart."""
    if apart:
        round_apart(builder)
        return
    for s, choice in pins:
        pin(builder, s if memo is None else s.moved(memo), choice)


def pin_like(module: ir.Module, kernel: str, pins: Sequence[tuple[int, str]]) -> None:
    """Apply ``pins`` (the index of a pinnable sum of ``kernel``, `OpenSum.index`,
    and its `Choice`), found on another parse of the same text, to ``kernel``
    of ``module``: the original as ptxas compiles it, in PTX whose rounding is
    explicit, which is what the interpreter must run to see the GPU's bits
    (tests and the GPU benchmarks' interpreter runs do)."""
    if not pins:
        return
    fn = module.function(kernel)
    sums = open_sums(fn).pinnable
    builder = FunctionBuilder(fn, module)
    for index, choice in pins:
        pin(builder, sums[index], Choice(choice))
