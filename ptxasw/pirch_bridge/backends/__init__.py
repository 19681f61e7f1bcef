"""Back ends: what a lifted kernel becomes (`emit`).

``infreg``: the lifted LLVM IR with PIRCH metadata (`ptxasw.pirch_bridge.metadata`).
``llvm``: the same IR without it, portable; as assembly or an object it is
compiled for this host by llvmlite's LLVM at ``-O3``.
``avx512``: C with AVX-512 intrinsics (`backends.avx512`).
``ve``: LLVM IR over the NEC SX-Aurora vector intrinsics ``llvm.ve.vl.*``
(`backends.ve`), compiled by ``llc -march=ve -mattr=+vpu``.
"""

from __future__ import annotations

from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.lift import LiftedKernel

__all__ = ["EMITS", "TARGETS", "emit"]

TARGETS = ("infreg", "llvm", "avx512", "ve")
EMITS = ("ir", "asm", "obj")


def emit(lifted: LiftedKernel, target: str, what: str = "ir") -> str | bytes:
    """``lifted`` as ``target`` (`TARGETS`) in form ``what`` (`EMITS`; for ``avx512``
    ``ir`` is the C source)."""
    if target not in TARGETS:
        raise PtxError(f"unknown target {target!r} (use one of {', '.join(TARGETS)})")
    if what not in EMITS:
        raise PtxError(f"unknown --emit {what!r} (use one of {', '.join(EMITS)})")
    if target == "avx512":
        from ptxasw.pirch_bridge.backends import avx512

        return avx512.emit(lifted.for_host(), what)
    if target == "ve":
        from ptxasw.pirch_bridge.backends import ve

        return ve.emit(lifted, what)
    from ptxasw.pirch_bridge.backends import llvm

    return llvm.emit(lifted.for_host() if target == "llvm" else lifted, target, what)
