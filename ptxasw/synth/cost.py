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

A strided load is another matter (`shuffle_pays`): the halo a thread reads
beside its own ``float4`` touches four L1 wavefronts a warp, and where the
kernel is bound by L1 the shuffle saves them (vectorised box stencils gain
up to 1.6 on an H100, exactly). The drop-in looks for those only in kernels
whose instruction counts allow it (`strided_halo_may_pay`, `worth_a_look`).

A load that runs only where a test of loaded data holds (a limiter's
``if (v > t)``: `ptxasw.analysis.gating`) keeps its load whatever its
figures: its shuffle runs on every path, and how often the load ran is the
input's (a box that gains 1.11-1.19 where half or all of its threads read
the halo loses 8 % where few do).

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
    "SCREEN_AWK",
    "SCREEN_L1_BOUND",
    "Costs",
    "NothingPaysPass",
    "costs_for",
    "masked_loads_in_inline_asm",
    "nothing_pays",
    "repeats_a_masked_load",
    "shuffle_pays",
    "site_cost",
    "strided_halo_may_pay",
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


# The screens run before the target is known (the shadow script's awk): they
# take the calibrations' smallest bound, where a kernel is soonest L1-bound.
SCREEN_L1_BOUND = min(c.l1_bound for c in CALIBRATED.values())


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
    text = _decoded_if(text, "inline asm")
    return text is not None and any(_MASKED_LOAD.search(m.group(1)) for m in _INLINE_ASM.finditer(text))


def _decoded_if(text: str | bytes, marker: str) -> str | None:
    """``text`` as a string where it contains ``marker``, else None: a file's
    bytes are decoded only where a screen has something to look at."""
    if isinstance(text, bytes):
        if marker.encode() not in text:
            return None
        return text.decode("utf-8", "surrogateescape")
    return text if marker in text else None


# A global load's or store's operation (``ld.global.nc.v4.f32``), the first on a line.
_GLOBAL_ACCESS = re.compile(r"(ld|st)\.global[.A-Za-z0-9_:]*")
_LANES = (("v2", 2), ("v4", 4), ("v8", 8))

# `worth_a_look` for the shadow toolkit's script (`ptxasw.driver.toolkit`),
# line by line as Python reads it there: exits 0 where Python should look.
# ``L`` is the calibration's ``l1_bound`` (``awk -v L=...``).
SCREEN_AWK = r"""
function halo(   k, b) {
    b = 0
    for (k in s) if (k in v) b += s[k]
    if (b && 4 * b >= (L - 1) * vt + L * st) f = 1
    split("", s); split("", v); vt = 0; st = 0
}
/begin inline asm/ { a = 1 }
/end inline asm/ { a = 0 }
a && /@!?%[A-Za-z0-9_]+[ \t]+ld\.global/ { f = 1; exit }
/\.entry/ { halo(); if (f) exit }
match($0, /(ld|st)\.global[.A-Za-z0-9_:]*/) {
    op = substr($0, RSTART, RLENGTH); n = split(op, p, "."); w = p[n]
    gsub(/[^0-9]/, "", w)
    if (w != "") {
        l = 1
        if (op ~ /\.v2\./) l = 2; else if (op ~ /\.v4\./) l = 4; else if (op ~ /\.v8\./) l = 8
        x = l * w / 32; if (x < 1) x = 1
        if (op ~ /^st/) st += x; else if (l > 1) { v[w] += x; vt += x } else s[w]++
    }
}
END { if (!f) halo(); exit !f }
"""


def worth_a_look(text: str | bytes, l1_bound: float | None = None) -> bool:
    """Whether the PTX may have something that pays where no contiguous
    load's shuffle does: masked loads in inline assembly (reuses,
    `masked_loads_in_inline_asm`), or a kernel whose counts say a strided
    halo may pay (`strided_halo_may_pay`, counted here off the text, kernel
    by kernel from one ``.entry`` to the next). A screen of the text, before
    any parsing; ``SCREEN_AWK`` is the same for the shadow toolkit's script."""
    if masked_loads_in_inline_asm(text):
        return True
    text = _decoded_if(text, ".v")
    if text is None:
        return False
    bound = SCREEN_L1_BOUND if l1_bound is None else l1_bound
    counts = _HaloCounts()
    for line in text.splitlines():
        if ".entry" in line:
            if counts.may_pay(bound):
                return True
            counts = _HaloCounts()
        m = _GLOBAL_ACCESS.search(line)
        if m is None:
            continue
        op = m.group(0)
        width = re.sub(r"\D", "", op.rsplit(".", 1)[-1])
        if width:
            lanes = next((n for tag, n in _LANES if f".{tag}." in op), 1)
            counts.add(int(width), lanes, store=op.startswith("st"))
    return counts.may_pay(bound)


class _HaloCounts:
    """One kernel's global loads and stores as the strided-halo screens count
    them (`strided_halo_may_pay` off the instructions, `worth_a_look` and
    ``SCREEN_AWK``'s ``halo`` off the text): single-element loads per width,
    vector loads' and stores' wavefronts (their bytes a lane, at least one)."""

    def __init__(self) -> None:
        self.singles: dict[int, int] = {}
        self.vectors: dict[int, float] = {}
        self.stores = 0.0

    def add(self, bits: int, lanes: int, *, store: bool) -> None:
        wavefronts = max(1.0, lanes * bits / 32)
        if store:
            self.stores += wavefronts
        elif lanes > 1:
            self.vectors[bits] = self.vectors.get(bits, 0.0) + wavefronts
        else:
            self.singles[bits] = self.singles.get(bits, 0) + 1

    def may_pay(self, l1_bound: float) -> bool:
        """Taking each single-element load at most 4 wavefronts (lanes at
        most a 16-byte vector apart), each vector load and store at least its
        bytes, `shuffle_pays`'s ``loads >= l1_bound x (dense + stores)``
        needs ``4 singles >= (l1_bound - 1) x vector wavefronts + l1_bound x
        store wavefronts``, singles counted only beside vectors of their width."""
        beside = sum(n for bits, n in self.singles.items() if bits in self.vectors)
        vectors = sum(self.vectors.values())
        return bool(beside) and 4 * beside >= (l1_bound - 1) * vectors + l1_bound * self.stores


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


def strided_halo_may_pay(fn: ir.Function, costs: Costs) -> bool:
    """Whether ``fn`` may have a strided load whose shuffle `shuffle_pays`
    keeps, counted off its instructions before any analysis (`_HaloCounts`):
    global vector loads, loads of single elements of their width beside them
    (a thread that owns a vector reads its neighbours' elements so), and
    enough of those for the kernel to be bound by L1. Triton's tiles (vector
    loads only), CUB's tile loads and math on ``double2`` arrays fail it; the
    float4 stencils `benchmarks/vector_halo.py` gains on pass it."""
    from ptxasw.ir import isa

    counts = _HaloCounts()
    for inst in fn.instructions():
        if isa.state_space(inst) == ".global" and inst.opcode in ("ld", "st"):
            bits = isa.type_bits(isa.instruction_type(inst) or "") or 32
            counts.add(bits, isa.vector_width(inst), store=inst.opcode == "st")
    return counts.may_pay(costs.l1_bound)


def unprofitable_reason(arch: str | None, mode: str) -> str:
    """What the drop-in logs when `nothing_pays`: the target and the cheapest shuffle's cost."""
    cost = site_cost(costs_for(arch), 32, mode)
    return f"no shuffle pays on {arch or 'this target'} ({cost:.2f} warp loads for 1)"


class NothingPaysPass:
    """What the drop-in runs instead of the synthesis where no contiguous
    load's shuffle can pay: it records that, and costs neither the analysis
    nor its imports (Z3 and the emulator are most of a cold start). With
    ``synthesis`` (a maker of the synthesis for the named kernels and the
    largest ``|N|``), the kernels whose strided halo may pay
    (`strided_halo_may_pay`) get the whole synthesis, whose cost model keeps
    the halo shuffles that pay (`shuffle_pays`), and the others that load an
    address again under a mask (`repeats_a_masked_load`) get their reuses
    (N = 0)."""

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
            costs = costs_for(self.arch)
            vectors = {fn.name for fn in kernels if strided_halo_may_pay(fn, costs)}
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
