"""Measured verdicts in the synthesis: what ``ptxasw tune`` stored, found and applied.

``ptxasw tune`` and the drop-in must agree on two texts without sharing a
process: the kernel as it arrives (the verdict's key) and the kernel with
every proven shuffle emitted in ``normal`` mode (what was measured). Both
sides compute them here, with the same printer, so equal input gives equal
hashes; a later ptxasw whose rewrite differs gets another hash and ignores
the verdict instead of applying a measurement of other code.
"""

from __future__ import annotations

import dataclasses

from ptxasw import ir
from ptxasw.driver import tuning
from ptxasw.ir.builder import FunctionBuilder, copy_function
from ptxasw.ir.printer import print_module
from ptxasw.synth.detect import KernelPlan, Options

__all__ = ["apply_verdict", "emit_on_copy", "kernel_text", "lookup", "rewrite_hash"]


def kernel_text(module: ir.Module, fn: ir.Function) -> str:
    """``fn`` printed alone (the rest of the module does not name the kernel's code)."""
    return print_module(dataclasses.replace(module, items=[fn]))


def emit_on_copy(module: ir.Module, fn: ir.Function, plan: KernelPlan, mode: str = "normal") -> ir.Module:
    """A module whose ``fn`` is a copy with every proven shuffle of ``plan``
    emitted in ``mode`` (the other items are shared, not copied)."""
    from ptxasw.synth.synthesize import rewrite_kernel  # which imports this module

    twin, twin_module, memo = copy_function(module, fn)
    rewrite_kernel(FunctionBuilder(twin, twin_module), plan, mode, memo)
    return twin_module


def rewrite_hash(module: ir.Module, fn: ir.Function, plan: KernelPlan) -> str:
    """The hash of ``fn`` with all of ``plan``'s proven shuffles (``normal`` mode): what tune measures."""
    twin_module = emit_on_copy(module, fn, plan)
    twin = twin_module.function(fn.name)
    return tuning.text_hash(kernel_text(twin_module, twin))


def lookup(module: ir.Module, fn: ir.Function, options: Options) -> tuning.Verdict | None:
    """The stored verdict for ``fn`` on ``options.arch`` with ``options``' settings, if any."""
    if not options.arch:
        return None
    store = tuning.open_store()
    if store is None:
        return None
    key = tuning.text_hash(kernel_text(module, fn))
    return store.get(key, options.arch, options.mode, options.max_delta)


def apply_verdict(verdict: tuning.Verdict, module: ir.Module, fn: ir.Function, plan: KernelPlan) -> bool:
    """Apply ``verdict`` to ``plan`` if it measured today's rewrite; whether it applied.

    ``shuffle`` keeps every proven shuffle; ``original`` blocks them all
    (reuses included: the measured rewrite had them too).
    """
    if rewrite_hash(module, fn, plan) != verdict.rewrite_hash:
        return False
    if verdict.choice == "original":
        where = f" on {verdict.device}" if verdict.device else ""
        for v in plan.chosen:
            v.block(f"tuned: the original was faster{where} (ptxasw tune)")
    return True
