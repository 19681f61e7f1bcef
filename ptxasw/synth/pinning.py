"""Keeping ptxas's rounding: pin each open sum to the product ptxas fused.

In ``a*b - c*d`` written as contractible ``mul``/``sub`` (`ptxasw.analysis.
contraction`), ptxas fuses one product into an ``fma`` by its own schedule,
and a rewrite that changes when the operands arrive can change which (an
H100 gave other last bits for a rewritten kernel whose PTX was proven
equal). Writing ptxas's choice into the PTX, ``fma.rn`` for the fused
product and ``mul.rn`` for the other, takes the choice away from it.

Which product ptxas fused in the original is found by asking it: the
original module with a sum pinned one way assembles to the same bytes as
the original exactly when that is what ptxas did (a pin written the way
ptxas contracted leaves it the same code; a wrong one leaves another FFMA).
`settle` tries all sums at once and halves the set where a guess fails, so
a kernel whose sums all fuse the same way costs one extra assembly. The
pins found are applied to the rewritten kernel (`pin`), which then rounds
as the original did whatever its schedule.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from enum import StrEnum

from ptxasw import ir
from ptxasw.analysis.contraction import OpenSum, open_sums
from ptxasw.driver.assembler import Assemble
from ptxasw.ir import isa
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.ir.printer import print_module

__all__ = ["Choice", "pin", "pin_like", "settle"]


class Choice(StrEnum):
    LEFT = "left"  # total = fma(left's factors, ±right)
    RIGHT = "right"  # total = fma(±right's factors, left)
    NEITHER = "neither"  # both products and the sum rounded on their own


_ORDER = (Choice.LEFT, Choice.RIGHT, Choice.NEITHER)


def pin(builder: FunctionBuilder, s: OpenSum, choice: Choice) -> None:
    """Write ``choice`` for ``s`` into ``builder``'s function: the fused
    product's ``mul`` goes, the sum becomes ``fma.rn``, the other product
    ``mul.rn`` (for NEITHER both products and the sum take ``.rn``).

    ``total = x - c*d`` fused on the right is ``fma.rn(-c, d, x)``; on the
    left, ``fma.rn(a, b, -y)``: a negation is exact, so each is the rounding
    of the same exact value ptxas's ``FFMA`` with a negated operand rounds."""
    total, left, right = s.total, s.left, s.right
    if choice is Choice.NEITHER:
        for inst in (left, right, total):
            builder.replace(inst, [_rounded(builder, inst, inst.opcode, inst.operands)])
        return
    fused, kept = (left, right) if choice is Choice.LEFT else (right, left)
    dst = total.operands[0]
    kept_dst = kept.operands[0]
    factors = list(fused.operands[1:])
    code: list[ir.Instruction] = []
    if total.opcode == "sub":
        if choice is Choice.LEFT:  # x - y = fma(a, b, -y)
            kept_dst = _negated(builder, kept_dst, total, code)
        else:  # x - c*d = fma(-c, d, x)
            k = 0 if isinstance(factors[0], ir.Register) else 1
            factors[k] = _negated(builder, factors[k], total, code)
    code.append(_rounded(builder, total, "fma", [dst, *factors, kept_dst]))
    builder.replace(kept, [_rounded(builder, kept, "mul", kept.operands)])
    builder.remove(fused)
    builder.replace(total, code)


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
    module: ir.Module, fn: ir.Function, sums: Sequence[OpenSum], assemble: Assemble, limit: int = 48
) -> dict[int, Choice]:
    """Index in ``sums`` -> the choice ptxas makes for it in ``module`` as it
    stands (sums it could not be shown for are missing). At most ``limit``
    assemblies after the first; every pin is checked on a copy."""
    base = assemble(print_module(module))
    if base is None or not sums:
        return {}
    runs = 0

    def same(assignment: dict[int, Choice]) -> bool:
        nonlocal runs
        runs += 1
        memo: dict[int, object] = {}
        trial_fn = copy.deepcopy(fn, memo)
        trial = dataclasses.replace(module, items=[trial_fn if it is fn else it for it in module.items])
        builder = FunctionBuilder(trial_fn, trial)
        for k, choice in assignment.items():
            pin(builder, sums[k].moved(memo), choice)
        return assemble(print_module(trial)) == base

    def test(group: list[int], choice: Choice) -> list[int]:
        """The members of ``group`` for which ``choice`` is not ptxas's."""
        if runs >= limit:
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
    for choice in _ORDER:
        if pending:
            pending = test(pending, choice)
    return known


def pin_like(module: ir.Module, kernel: str, pins: Sequence[tuple[OpenSum, Choice]]) -> None:
    """Apply ``pins`` (found on another parse of the same text) to ``kernel``
    of ``module``: the original as ptxas compiles it, in PTX whose rounding
    is explicit, which is what the interpreter must run to see the GPU's
    bits (tests and `benchmarks/gpu_unseen.py` do)."""
    if not pins:
        return
    fn = module.function(kernel)
    sums = open_sums(fn).pinnable
    builder = FunctionBuilder(fn, module)
    for s, choice in pins:
        pin(builder, sums[s.index], choice)
