"""Back ends: what a lifted kernel becomes (`emit`).

``infreg``: the lifted LLVM IR with PIRCH metadata (`ptxasw.pirch_bridge.metadata`).
``llvm``: the same IR without it, portable; as assembly or an object it is
compiled for this host by llvmlite's LLVM at ``-O3``.
"""

from __future__ import annotations

from ptxasw.pirch_bridge.backends.llvm import TARGETS, emit

__all__ = ["TARGETS", "emit"]
