"""Whether a shuffle pays on the target GPU: a cost model in warp-load equivalents.

A load replaced by a shuffle costs, per warp, the shuffle itself, the
corner-case machinery (``activemask``, two ``setp``, an ``or``) and, in
``normal`` mode, the predicated fallback load that the edge lanes still
issue. On recent GPUs issue slots decide, not bytes: on an H100 a
``shfl.sync`` costs about 0.78 of a warp-wide global load and a predicated
load with one to four active lanes about 0.75 of a full one (fitted from
instruction counts against measured times; issue 7 records the
measurements). So one exact shuffle costs ~1.6 loads to save one: it cannot
pay there, and the paper's own averages (-15 % on Volta) say the same of
its generation. ``nocorner`` (one shuffle, no fallback) would pay, but is
wrong at warp edges.

The model decides per load; 64-bit values need two shuffles. Targets
without a calibration take the nearest calibrated one at or below them
(CUDA 13's oldest target, sm_75, takes sm_90's numbers: no measurement says
otherwise, and Volta's behaviour in the paper points the same way).
``PTXASW_PROFIT=always`` (or ``ptxasw rewrite``, whose user asked for the
rewrite) skips the model.

A reuse (N == 0: the thread loaded the same address before) is a register
move and pays everywhere. Compilers merge their own repeated loads, so the
drop-in looks for reuses only where one could not: masked loads written in
inline assembly (`masked_loads_in_inline_asm`; Triton writes every masked
load so, and a stencil tile's neighbours are loaded again under other
masks), and there only in kernels that load an address again under a
predicate (`repeats_a_masked_load`). Elsewhere, where no shuffle pays,
the file is not even parsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxasw import ir

__all__ = [
    "CALIBRATED",
    "Costs",
    "NothingPaysPass",
    "costs_for",
    "masked_loads_in_inline_asm",
    "nothing_pays",
    "repeats_a_masked_load",
    "site_cost",
    "unprofitable_reason",
]


@dataclass(frozen=True)
class Costs:
    """Costs per warp in units of one warp-wide global load, and where they come from."""

    shuffle: float
    fixup_load: float
    alu: float
    source: str
    load: float = 1.0


# Corner-case instructions per site: activemask, setp (incomplete), setp (room), or.
_CORNER_ALU = 4

CALIBRATED: dict[int, Costs] = {
    90: Costs(
        shuffle=0.78,
        fixup_load=0.75,
        alu=0.06,
        source="H100 (sm_90): shuffle 0.78, predicated fix-up load 0.75 of a warp load (issue 7's fit)",
    ),
}


def _sm(arch: str | None) -> int | None:
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch or "")
    return int(m.group(1)) if m else None


def costs_for(arch: str | None) -> Costs:
    """The calibration for ``arch`` (``sm_90``...): its own, the nearest below, or the lowest known."""
    sm = _sm(arch)
    known = sorted(CALIBRATED)
    if sm is None:
        return CALIBRATED[known[0]]
    below = [k for k in known if k <= sm]
    return CALIBRATED[below[-1] if below else known[0]]


def site_cost(costs: Costs, bits: int, mode: str, elements: int = 1) -> float:
    """What one rewritten load costs per warp (N != 0; a reuse costs nothing):
    a shuffle per 32 bits of each of its ``elements`` (a vector load has
    several), one corner test and one fallback load."""
    shuffles = elements * (1 if bits <= 32 else 2)
    cost = shuffles * costs.shuffle
    if mode != "nocorner":
        cost += _CORNER_ALU * costs.alu
    if mode == "normal":
        cost += costs.fixup_load
    return cost


def nothing_pays(arch: str | None, mode: str) -> bool:
    """Whether even the cheapest shuffle (32 bits) costs at least the load it saves."""
    costs = costs_for(arch)
    return site_cost(costs, 32, mode) >= costs.load


_INLINE_ASM = re.compile(r"//\s*begin inline asm(.*?)//\s*end inline asm", re.DOTALL)
_MASKED_LOAD = re.compile(r"@!?%\w+\s+ld\.global")


def masked_loads_in_inline_asm(text: str | bytes) -> bool:
    """Whether the PTX has a predicated global load inside the markers that
    nvcc, clang and Triton's LLVM print around inline assembly (``// begin
    inline asm``): a screen of the text, before any parsing. CUB's cache-hinted
    loads are inline assembly too, but unmasked; its kernels need no parse.
    A file's bytes are decoded only where the markers are."""
    if isinstance(text, bytes):
        if b"inline asm" not in text:
            return False
        text = text.decode("utf-8", "surrogateescape")
    if "inline asm" not in text:
        return False
    return any(_MASKED_LOAD.search(m.group(1)) for m in _INLINE_ASM.finditer(text))


def repeats_a_masked_load(fn: ir.Function) -> bool:
    """Whether a predicated global load of ``fn`` reads an address operand
    that an earlier global load read: a compiler merges repeated loads of its
    own, except across what may change memory or under another mask. A
    screen for where a reuse may be found (the analysis decides)."""
    from ptxasw.ir import isa

    seen: set[object] = set()
    for inst in fn.instructions():
        if inst.opcode not in ("ld", "ldu") or isa.state_space(inst) != ".global" or len(inst.operands) < 2:
            continue
        address = inst.operands[1]
        if inst.guard is not None and address in seen:
            return True
        seen.add(address)
    return False


def unprofitable_reason(arch: str | None, mode: str) -> str:
    """What the drop-in logs when `nothing_pays`: the target and the cheapest shuffle's cost."""
    cost = site_cost(costs_for(arch), 32, mode)
    return f"no shuffle pays on {arch or 'this target'} ({cost:.2f} warp loads for 1)"


class NothingPaysPass:
    """What the drop-in runs instead of the synthesis where no shuffle can pay:
    it records that, and costs neither the analysis nor its imports (Z3 and
    the emulator are most of a cold start). With ``reuses`` (a maker of the
    synthesis for the named kernels, N = 0 only), the kernels that load an
    address again under a mask (`repeats_a_masked_load`) get that instead."""

    name = "shuffle-synthesis"

    def __init__(
        self, arch: str | None, mode: str, reuses: Callable[[set[str]], object] | None = None
    ) -> None:
        self.arch, self.mode, self.reuses = arch, mode, reuses

    def run(self, module: object, analyses: object = None, deadline: object = None) -> object:
        from ptxasw.driver.pipeline import PassResult

        if self.reuses is not None:
            wanted = {fn.name for fn in getattr(module, "kernels", []) if repeats_a_masked_load(fn)}
            if wanted:
                synthesis = self.reuses(wanted)
                return synthesis.run(module, analyses, deadline=deadline)  # type: ignore[attr-defined]
        kernels = len(getattr(module, "kernels", []))
        reason = unprofitable_reason(self.arch, self.mode)
        return PassResult(False, {"kernels": kernels, "unprofitable": kernels, "reason": reason})
