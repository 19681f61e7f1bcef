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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptxasw import ir
    from ptxasw.synth.detect import Traffic

__all__ = [
    "CALIBRATED",
    "Costs",
    "NothingPaysPass",
    "costs_for",
    "loads_beside_vectors",
    "masked_loads_in_inline_asm",
    "nothing_pays",
    "repeats_a_masked_load",
    "shuffle_pays",
    "site_cost",
    "unprofitable_reason",
    "worth_a_look",
]


@dataclass(frozen=True)
class Costs:
    """Costs per warp in units of one warp-wide global load, and where they come from.

    ``l1_bound``: a kernel whose global loads touch at least this many L1
    wavefronts per line it moves (its dense loads' and its stores'
    wavefronts, `ptxasw.synth.detect.Traffic`) is taken to be bound by L1
    rather than by L2 or DRAM, and there a strided load costs its
    wavefronts. ``strided_margin``: by how much those must exceed the site's
    cost."""

    shuffle: float
    fixup_load: float
    alu: float
    source: str
    load: float = 1.0
    l1_bound: float = 4.0
    strided_margin: float = 1.5


# Corner-case instructions per site: activemask, setp (incomplete), setp (room), or.
_CORNER_ALU = 4

CALIBRATED: dict[int, Costs] = {
    90: Costs(
        shuffle=0.78,
        fixup_load=0.75,
        alu=0.06,
        source="H100 (sm_90): shuffle 0.78, predicated fix-up load 0.75 of a warp load (issue 7's fit); "
        "L1-bound from 4 load wavefronts per line moved, a strided load's wavefronts 1.5 times the "
        "site's cost (benchmarks/vector_halo.py)",
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


def shuffle_pays(
    costs: Costs,
    bits: int,
    mode: str,
    elements: int = 1,
    wavefronts: float | None = None,
    traffic: Traffic | None = None,
) -> tuple[bool, str]:
    """Whether a proven shuffle of a load pays, and the figures that say so.

    A load whose warp touches one wavefront costs one warp load, and an exact
    shuffle costs more (the module docstring). A strided one, a halo element
    taken 16 bytes from its lane's neighbour (a ``float4`` stencil's), touches
    four, in lines the kernel's dense loads brought into L1. Where the kernel
    is bound by L1 (its loads touch ``l1_bound`` times the wavefronts of the
    lines it moves: its dense loads and its stores; H100's L1 serves 128
    bytes a clock per SM, its L2 some 24) the shuffle saves those
    wavefronts, with ``strided_margin`` to spare. Measured on an H100
    (`benchmarks/vector_halo.py`, ``results/vector_halo_h100.json``):
    float4 and double2 boxes of halo radius 2-4 (4.2-7.5 wavefronts per line
    moved) gain 1.07-1.59; boxes of radius 1 with up to 7 rows (2.3-2.7:
    their rows come through L2) and the rows (2.5-3.5) do not, and a float2
    box (2 wavefronts for a site of 1.77) loses 3-8 %. A first threshold,
    16 load wavefronts per stored one, kept radius-1 boxes of 7 rows that
    lost 2-6 %; this one was fitted with them and checked on boxes it had
    not seen."""
    cost = site_cost(costs, bits, mode, elements)
    strided = wavefronts is not None and wavefronts > costs.load
    if not strided or traffic is None:
        return cost < costs.load, f"{cost:.2f} warp loads for 1"
    assert wavefronts is not None
    moved = traffic.dense + traffic.stores
    if traffic.loads < costs.l1_bound * moved:
        return cost < costs.load, (
            f"{cost:.2f} warp loads for 1: not bound by L1, "
            f"{traffic.loads:.0f} load wavefronts for {moved:.0f} lines moved"
        )
    pays = wavefronts >= costs.strided_margin * cost
    return pays, f"{cost:.2f} warp loads for {wavefronts:.0f} L1 wavefronts"


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


# A global vector load anywhere in the text (``ld.global.nc.v4.f32``): the
# shadow toolkit's script looks for the same (`ptxasw.driver.toolkit`).
_VECTOR_LOAD = re.compile(r"ld\.global[.A-Za-z0-9_:]*\.v[248]\.")


def worth_a_look(text: str | bytes) -> bool:
    """Whether the PTX may have something that pays where no contiguous
    load's shuffle does: masked loads in inline assembly (reuses,
    `masked_loads_in_inline_asm`) or global vector loads (the strided halo
    around a thread's vector, `shuffle_pays`). A screen of the text, before
    any parsing."""
    if masked_loads_in_inline_asm(text):
        return True
    if isinstance(text, bytes):
        return b".v" in text and _VECTOR_LOAD.search(text.decode("utf-8", "surrogateescape")) is not None
    return _VECTOR_LOAD.search(text) is not None


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


def loads_beside_vectors(fn: ir.Function) -> bool:
    """Whether ``fn`` has a global vector load (``ld.global.v4``) and a global
    load of fewer elements of the same size: a thread that owns a vector
    reads its neighbours' elements with such loads, strided, which may pay as
    shuffles where no contiguous load does (`shuffle_pays`). A kernel of
    vector loads only (Triton's tiles) has no strided load whose shuffle can
    pay (a whole vector's shuffles cost more than its load). A screen for
    where the analysis may find them."""
    from ptxasw.ir import isa

    widths: dict[int | None, set[int]] = {}
    for inst in fn.instructions():
        if inst.opcode in ("ld", "ldu") and isa.state_space(inst) == ".global":
            bits = isa.type_bits(isa.instruction_type(inst) or "")
            widths.setdefault(bits, set()).add(isa.vector_width(inst))
    return any(len(counts) > 1 and max(counts) > 1 for counts in widths.values())


def unprofitable_reason(arch: str | None, mode: str) -> str:
    """What the drop-in logs when `nothing_pays`: the target and the cheapest shuffle's cost."""
    cost = site_cost(costs_for(arch), 32, mode)
    return f"no shuffle pays on {arch or 'this target'} ({cost:.2f} warp loads for 1)"


class NothingPaysPass:
    """What the drop-in runs instead of the synthesis where no contiguous
    load's shuffle can pay: it records that, and costs neither the analysis
    nor its imports (Z3 and the emulator are most of a cold start). With
    ``synthesis`` (a maker of the synthesis for the named kernels and the
    largest ``|N|``), the kernels with global vector loads and loads of
    single elements beside them (`loads_beside_vectors`) get the whole
    synthesis, whose cost model keeps the halo shuffles that pay
    (`shuffle_pays`), and the others that load an address again under a
    mask (`repeats_a_masked_load`) get their reuses (N = 0)."""

    name = "shuffle-synthesis"

    def __init__(
        self,
        arch: str | None,
        mode: str,
        synthesis: Callable[[set[str], int | None], object] | None = None,
    ) -> None:
        self.arch, self.mode, self.synthesis = arch, mode, synthesis

    def run(self, module: object, analyses: object = None, deadline: object = None) -> object:
        from ptxasw.driver.pipeline import PassResult

        kernels = getattr(module, "kernels", [])
        if self.synthesis is not None:
            vectors = {fn.name for fn in kernels if loads_beside_vectors(fn)}
            reuses = {fn.name for fn in kernels if fn.name not in vectors and repeats_a_masked_load(fn)}
            # None: the settings' largest |N|.
            runs = [(names, delta) for names, delta in ((vectors, None), (reuses, 0)) if names]
            if runs:
                results = [
                    self.synthesis(names, delta).run(module, analyses, deadline=deadline)  # type: ignore[attr-defined]
                    for names, delta in runs
                ]
                return _merged(results)
        reason = unprofitable_reason(self.arch, self.mode)
        return PassResult(False, {"kernels": len(kernels), "unprofitable": len(kernels), "reason": reason})


def _merged(results: list[Any]) -> Any:
    """One `PassResult` of several runs of the synthesis: changed if any
    changed, numbers summed, anything else the last run's."""
    from ptxasw.driver.pipeline import PassResult

    stats: dict[str, Any] = {}
    for result in results:
        for key, value in result.stats.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key in stats:
                stats[key] += value
            else:
                stats[key] = value
    return PassResult(any(r.changed for r in results), stats)
