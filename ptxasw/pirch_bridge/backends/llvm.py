"""The ``infreg`` and ``llvm`` targets: text IR, or host assembly/objects."""

from __future__ import annotations

import llvmlite.binding as llvm

from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.jit import host_target_machine, optimise
from ptxasw.pirch_bridge.lift import LiftedKernel
from ptxasw.pirch_bridge.metadata import annotate

__all__ = ["emit"]


def emit(lifted: LiftedKernel, target: str, what: str = "ir") -> str | bytes:
    """``lifted`` as ``infreg`` or ``llvm`` in form ``what`` (``ir``, ``asm``, ``obj``)."""
    if target == "infreg":
        if what != "ir":
            raise PtxError("--target infreg is LLVM IR: use --emit ir (or --target llvm for asm/obj)")
        annotate(lifted)
        return lifted.ir_text
    if what == "ir":
        return lifted.ir_text
    tm = host_target_machine()
    module = llvm.parse_assembly(lifted.ir_text)
    module.verify()
    module.triple = tm.triple
    optimise(module, tm)
    return tm.emit_assembly(module) if what == "asm" else tm.emit_object(module)
