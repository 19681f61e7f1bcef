"""Lift one warp-synchronous PTX kernel to an LLVM function over InfRegs.

The lifted function runs ``WG_PACK`` CTAs in lockstep. A CTA of ``B``
threads takes ``B`` consecutive lanes of every vector (thread ``i % B`` of
CTA ``i // B``, x fastest); its warps (work groups: the whole CTA when
``B <= 32``, else 32 lanes each) are the domain's lane segments, so warp
collectives act per warp while ``bar.sync`` holds by construction (every
thread of the CTA runs each instruction at once, which is what COX's
hierarchical collapsing and Polygeist's barrier splitting arrange with
loops). Its signature is::

    void KERNEL(i8* params, i8* shared, i32 shared_stride,
                i32 ctaid_x0, i32 ctaid_y, i32 ctaid_z,
                i32 nctaid_x, i32 nctaid_y, i32 nctaid_z)

``params`` holds the kernel's ``.param`` bytes as the interpreter lays them
out (`LiftedKernel.param_layout`); ``shared`` one ``.shared`` window of
``shared_stride`` bytes per packed CTA (zeroed by the caller); CTA ``g`` of
the call is ``(ctaid_x0 + g, ctaid_y, ctaid_z)`` and its lanes only run if
``ctaid_x0 + g < nctaid_x``. ``KERNEL.range`` runs a slice of a whole grid.

Control flow
------------
Each PTX basic block becomes an LLVM block run under an execution mask
(``<L x i1>``). Lanes waiting to run a block are kept in that block's
pending mask (and a bit set of the blocks with pending lanes); a dispatcher
runs the first block (in the CFG's `structured_order`: every forward edge
goes forward and every loop is contiguous, text order wherever the text
allows) that has pending lanes. That is SIMT execution with
reconvergence at the earliest point where all lanes meet again: a branch
that splits lanes runs both sides masked and joins them, a loop whose trip
count differs per lane runs masked until the last lane leaves, and lanes
that returned early wait for nothing. When all live lanes take the same
edge (a uniform branch or loop) the block jumps straight to its successor,
so uniform control flow stays control flow. Instructions run through the
shared `Semantics` over `LLVMDomain` on a `LiftMachine`; whatever that
cannot lift exactly is refused with the instruction's location. A block
whose registers would not fit the host's vector registers runs in
`schedule`'s order (chain by chain, dependences kept); values that do not
depend on the lane (parameters, addresses' bases) are computed once, in the
``uniforms`` block after the entry.

NaN rules
---------
``.f64`` results follow x86's NaN payload rule, which LLVM leaves open: a test
per result sends the rare NaN to a cold block that applies the rule. Two
cheaper forms keep the bits: a reordered block is speculated, one test per
chain's end (`_nan_covered`); and a kernel of at most 16 ``.f64`` lanes
gets a fast variant (``KERNEL.fast``) that only gathers NaN lanes until its
first side effect, where a work group that met one returns to have
``KERNEL.range`` run the exact variant from the start.

Lane loops
----------
The host SIMD back ends compile `LiftedKernel.for_host`: where a kernel's
lane-wise runs would be many kilobytes of straight-line code (a WG-32 kernel
that nvcc unrolled, each ``.f64`` InfReg four host registers), the kernel is
lifted again in nvcc's order, every ``.f64`` run speculated as one piece, and
`lane_loops` runs those pieces as loops over native-width lane groups.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir as ll

from ptxasw import ir
from ptxasw.analysis.cfg import CFG, build_cfg
from ptxasw.analysis.inline import inline_calls
from ptxasw.emulator.semantics.instructions import Semantics
from ptxasw.errors import PtxError, UnsupportedError, UnsupportedInstruction
from ptxasw.ir import isa
from ptxasw.ir.layout import param_var, round_up, var_of, walk_decls
from ptxasw.pirch_bridge.domain import Affine, LLVMDomain, Vec
from ptxasw.pirch_bridge.lane_loops import loop_lanes, saving
from ptxasw.pirch_bridge.machine import (
    FRAME_BASE,
    LiftMachine,
    RegisterFile,
    Specials,
    plan_access_groups,
    register_key,
)
from ptxasw.pirch_bridge.schedule import pressure as _pressure
from ptxasw.pirch_bridge.schedule import schedule

__all__ = ["LiftedKernel", "block_shape", "choose_kernel", "lift_kernel", "register_pressure"]

_I8P = ll.IntType(8).as_pointer()
_I32 = ll.IntType(32)
_ARGS = (
    "params",
    "shared",
    "shared_stride",
    "ctaid_x0",
    "ctaid_y",
    "ctaid_z",
    "nctaid_x",
    "nctaid_y",
    "nctaid_z",
)
_CONTROL = frozenset({"bra", "brx.idx", "call", "ret", "exit", "trap"})
# `.f64` results whose NaN rule one speculated run tests at once (`_Lifter._speculated`).
_SPECULATED = 32
# ... and with lane loops (`lane_loops`), whose runs a NaN test ends: one piece per run, as
# there the values a test keeps live are slices in memory anyway, and a piece's registers
# handed to the next piece would each take a stack slot of the whole vector.
_SPECULATED_LOOPED = 1 << 20
# Whether runs of blocks kept in nvcc's order are speculated too (reordered blocks always
# are). Off: measured against a test and branch per operation (1 thread, min of 5-7,
# interleaved), it lost on gema_f64 WG8 (1.06x -> 0.92x gcc, short runs between loads and
# stores), gemm_f64 WG8 (3.2x -> 2.3x) and trsv_f64 WG8 on llvm (1.9x -> 0.9x), and won
# only trsv_f64 WG8 on avx512 (1.2x -> 1.8x): keeping each piece's inputs live until its
# test costs more than the branches it saves. With the tests of chains' ends only
# (`_nan_covered`), still 1.61x -> 0.84x gcc on trsv_f64 WG8 (llvm). In reordered blocks
# it wins: gemm_f64 WG32 0.34x -> 0.56x gcc on llvm, 0.39x -> 1.13x on avx512 (2 threads).
_SPECULATE = False
# Whether kernels with `.f64` arithmetic before their first side effect get a fast variant
# that gathers NaNs instead of testing each result (`_Lifter._emit`), and up to how many bits
# an `.f64` register may span across the lanes for it. Measured (lift_speed, dev, 2 threads,
# vs gcc, llvm / avx512): at 16 lanes (WG 8, pack 2) it wins, ldu 0.69x -> 0.83x / 0.48x ->
# 0.73x, gemm 1.95x -> 2.27x / 1.84x -> 2.31x, trsv 1.05x -> 1.39x on avx512; at 32 lanes
# (WG 32) it loses, ldu 0.70x -> 0.47x / 0.62x -> 0.49x, trsv 0.66x -> 0.54x on llvm.
_FAST_VARIANTS = True
_FAST_BITS = 16 * 64
# What a block may keep live before it is reordered (`schedule`): 48 registers of 512 bits,
# more than the host's 32 as every 64-bit register counts (most are addresses, kept scalar).
_VECTOR_BITS = 48 * 512
TRAP_FLAG = "ptxasw.trap"
"""The lifted module's variable that says which ``trap`` ran (0: none)."""


@dataclass
class LiftedKernel:
    """An LLVM module holding one lifted kernel, and what a launcher needs to call it."""

    module: ll.Module
    function: str
    kernel: ir.Function
    wg_size: int
    wg_pack: int
    block: tuple[int, int, int]
    groups: int
    param_layout: dict[str, tuple[int, int]]
    param_size: int
    shared_size: int
    dynamic_shared: bool
    source: str = "<string>"
    registers: dict[str, int] = field(default_factory=dict)
    variables: dict[str, bytes] = field(default_factory=dict)
    traps: list[ir.SourceLoc] = field(default_factory=list)
    """The kernel's ``trap`` instructions; ``ptxasw.trap`` holds 1 + the index of the one run."""
    ptx: ir.Module | None = None
    """The PTX module lifted (`for_host` lifts again from it)."""
    lane_loops: bool = False
    """Long lane-wise runs are loops over native-width lane groups (`lane_loops`)."""
    variants: tuple[str, ...] = ()
    """The kernel's lifted functions (the range function calls them)."""
    _host: LiftedKernel | None = field(default=None, repr=False, compare=False)

    @property
    def ir_text(self) -> str:
        return str(self.module)

    @functools.cached_property
    def loops_pay(self) -> bool:
        """`for_host` would loop some runs (`lane_loops.saving`). Asked only by the host
        back ends: the other targets never pay for the scan."""
        lanes = self.wg_size * self.groups
        return not self.lane_loops and any(saving(self.module.get_global(n), lanes) for n in self.variants)

    def for_host(self) -> LiftedKernel:
        """The form the host SIMD back ends (llvm, avx512) compile: where long lane-wise runs
        would cost many kilobytes of straight-line code, the kernel lifted again with them
        as loops over native-width lane groups (`ptxasw.pirch_bridge.lane_loops`); else this
        kernel. Same functions, signature and results."""
        if self.lane_loops or not self.loops_pay or self.ptx is None:
            return self
        if self._host is None:
            self._host = _Lifter(self.ptx, self.kernel, self.block, self.wg_pack, lane_loops=True).run()
        return self._host


def choose_kernel(module: ir.Module, name: str | None) -> ir.Function:
    """The kernel called ``name``, or the module's only kernel."""
    kernels = module.kernels
    if name is None:
        if len(kernels) != 1:
            names = ", ".join(k.name for k in kernels) or "none"
            raise PtxError(f"{module.path} has {len(kernels)} kernels ({names}); choose one with --kernel")
        return kernels[0]
    for k in kernels:
        if k.name == name:
            return k
    names = ", ".join(k.name for k in kernels) or "none"
    raise PtxError(f"no kernel named {name!r} in {module.path} (kernels: {names})")


def block_shape(
    fn: ir.Function, wg_size: int | None = None, block: tuple[int, int, int] | None = None
) -> tuple[int, int, int]:
    """The CTA shape the kernel is lifted for: ``block``, else ``(wg_size, 1, 1)``, else the
    kernel's ``.reqntid`` (or ``.maxntid``). Blocks of more than 32 threads must be whole warps."""
    if block is None and wg_size is not None:
        if not 1 <= wg_size <= 32:
            raise PtxError(f"--wg-size must be 1..32 (one warp), got {wg_size}")
        block = (wg_size, 1, 1)
    loc = fn.loc
    if block is None:
        for name in (".reqntid", ".maxntid"):
            found = [
                d for d in fn.directives if isinstance(d, ir.PerfDirective) and d.name == name and d.values
            ]
            if found:
                x, y, z = [*(int(v) for v in found[0].values), 1, 1][:3]
                block = (x, y, z)
                loc = found[0].loc
                break
    if block is None:
        raise PtxError(f"kernel {fn.name} states no block size (.reqntid): give --wg-size or --block")
    threads = block[0] * block[1] * block[2]
    if min(block) < 1 or threads > 1024:
        raise PtxError(f"block {block} must have 1..1024 threads")
    if threads > 32 and threads % 32:
        raise UnsupportedError(
            f"kernel {fn.name}: a block of {threads} threads ends in a partial warp; lifted blocks are one "
            "warp of <= 32 threads or whole warps",
            loc,
        )
    return (block[0], block[1], block[2])


def register_pressure(module: ir.Module, kernel: str | None, block: tuple[int, int, int], pack: int) -> int:
    """The most 512-bit registers a block of ``kernel`` keeps live when lifted with
    ``pack`` CTAs per call (every 64-bit register counted as a vector: an upper bound)."""
    fn = choose_kernel(module, kernel)
    lifter = _Lifter(module, fn, block, pack)
    lifter._register_types()
    return lifter.pressure()


def lift_kernel(
    module: ir.Module,
    kernel: str | None = None,
    *,
    wg_size: int | None = None,
    wg_pack: int = 1,
    block: tuple[int, int, int] | None = None,
) -> LiftedKernel:
    """Lift ``kernel`` (see the module documentation) for CTAs of ``block`` threads
    (`block_shape`), ``wg_pack`` CTAs per call; raises `PtxError` subclasses (one
    located line each) for what cannot be lifted exactly."""
    fn = choose_kernel(module, kernel)
    if fn.body is None:
        raise PtxError(f"kernel {fn.name} has no body", fn.loc)
    if wg_pack < 1:
        raise PtxError(f"--wg-pack must be at least 1, got {wg_pack}")
    if any(inst.opcode == "call" for inst in fn.instructions()):
        inlined = inline_calls(module, fn)  # debug builds call even __shfl_sync
        if inlined.skipped:
            call = next(i for i in inlined.function.instructions() if id(i) in inlined.skipped)
            reason = inlined.skipped[id(call)]
            raise UnsupportedInstruction(call.mnemonic, f"the call cannot be inlined ({reason})", call.loc)
        fn = inlined.function
    shape = block_shape(fn, wg_size, block)
    if shape[0] * shape[1] * shape[2] * wg_pack > 2048:
        raise PtxError(f"{wg_pack} blocks of {shape} threads per call: at most 2048 lanes")
    return _Lifter(module, fn, shape, wg_pack).run()


class _Lifter:
    def __init__(
        self,
        module: ir.Module,
        fn: ir.Function,
        block: tuple[int, int, int],
        pack: int,
        lane_loops: bool = False,
    ) -> None:
        self.ptx = module
        self.lane_loops = lane_loops
        self.traps: list[ir.SourceLoc] = []
        self._trap_numbers: dict[int, int] = {}  # id(trap instruction) -> its number (from 1)
        self.fn = fn
        self.cfg: CFG = build_cfg(fn)
        self.module = ll.Module(name=fn.name)
        self.module.triple = ""
        self.block = block
        self.block_lanes = block[0] * block[1] * block[2]
        self.pack = pack
        warp = min(self.block_lanes, 32)  # a work group is a warp (the whole block when it is one)
        self.dom = LLVMDomain(self.module, warp, pack * (self.block_lanes // warp))
        self.lanes = self.dom.lanes
        self.mask_t = ll.VectorType(ll.IntType(1), self.lanes)
        self.fast = False  # emitting a fast variant (`_emit`)
        self.clean: set[int] = set()  # `_before_side_effects`

    # ---- layout ----------------------------------------------------------------------------
    def _register_types(self) -> dict[str, str]:
        """Declared register types; ``%r<12>`` is stored as its prefix with a count."""
        self.reg_exact: dict[str, str] = {}
        self.reg_ranges: list[tuple[str, int, str]] = []
        for decl in walk_decls(self.fn.body.body):  # type: ignore[union-attr]
            if decl.space != ".reg":
                continue
            for n in decl.names:
                if n.count is None:
                    self.reg_exact.setdefault(n.name, decl.type)
                else:
                    self.reg_ranges.append((n.name, n.count, decl.type))
        return self.reg_exact

    def _register_bits(self, name: str) -> int:
        """The bits register ``name`` holds across the lanes (predicates: none)."""
        typ = self.register_type(name)
        lanes = self.block_lanes * self.pack
        return 0 if typ is None or typ == ".pred" else (isa.type_bits(typ) or 0) * lanes

    def pressure(self) -> int:
        """The most 512-bit registers any block keeps live in its own order (`_pressure`)."""
        bits = self._register_bits
        return max((_pressure(bb.instructions, bits) for bb in self.cfg.blocks), default=0) // 512

    def _schedules(self) -> dict[int, list[ir.Instruction]]:
        """Each block's instructions in the order they are lifted (`schedule`): where
        its registers would not fit the host's 32 vector registers of 512 bits, chain
        by chain, enough chains at once to keep 8 of them busy."""
        lanes = self.block_lanes * self.pack
        bits = self._register_bits
        types = {*self.reg_exact.values(), *(t for _, _, t in self.reg_ranges)}
        data = (64 if ".f64" in types else 32) * lanes  # a row's bits, as `runtime.default_pack` reckons
        chains = max(2, 8 * 512 // max(data, 512))
        blocks = enumerate(self.cfg.blocks)
        return {blk: schedule(bb.instructions, bits, _VECTOR_BITS, chains) for blk, bb in blocks}

    def register_type(self, name: str) -> str | None:
        hit = self.reg_exact.get(name)
        if hit is not None:
            return hit
        for prefix, count, typ in self.reg_ranges:
            tail = name[len(prefix) :]
            if name.startswith(prefix) and tail.isdigit() and int(tail) < count:
                return typ
        return None

    def _layout(self) -> tuple[dict[str, tuple[str, int]], dict[str, tuple[int, int]], int, int, bool]:
        """Symbols (space, offset) of the kernel's parameters and shared variables."""
        symbols: dict[str, tuple[str, int]] = {}
        layout: dict[str, tuple[int, int]] = {}
        top = 0
        for spec in self.fn.params:
            var = param_var(spec)
            top = round_up(top, max(var.align, 1))
            layout[spec.name] = (top, var.size)
            symbols[spec.name] = (".param", top)
            top += var.size
        param_size = round_up(max(top, 8), 8)
        shared = 0
        dynamic: list[ir.VarName] = []
        decls = [d for d in self.ptx.items if isinstance(d, ir.VarDecl)]
        decls += walk_decls(self.fn.body.body)  # type: ignore[union-attr]
        for decl in decls:
            if not decl.space.startswith(".shared"):
                continue
            for n in decl.names:
                var = var_of(decl, n)
                if var.unsized:
                    dynamic.append(n)
                    continue
                shared = round_up(shared, max(var.align, 1))
                symbols[n.name] = (".shared", shared)
                shared += var.size
        shared = round_up(shared, 16)
        for n in dynamic:
            symbols[n.name] = (".shared", shared)
        frame = 0  # .local and call-site .param variables: one frame per lane
        for decl in walk_decls(self.fn.body.body):  # type: ignore[union-attr]
            if decl.space not in (".local", ".param"):
                continue
            for n in decl.names:
                var = var_of(decl, n)
                if n.name in symbols:
                    continue
                frame = round_up(frame, max(var.align, 1))
                symbols[n.name] = (".frame", FRAME_BASE + frame)
                frame += var.size
        self.frame_size = round_up(frame, 16)
        return symbols, layout, param_size, shared, bool(dynamic)

    def _module_variables(self) -> dict[str, ll.GlobalVariable]:
        """Module ``.global``/``.const`` variables as LLVM globals (host memory) holding
        their initial bytes; `LiftedKernel.variables` lets the runtime restore them
        before each launch, as every interpreter launch starts from them."""
        from ptxasw.emulator.concrete.program import Program

        out: dict[str, ll.GlobalVariable] = {}
        self.variables: dict[str, bytes] = {}
        program: Program | None = None
        for decl in (d for d in self.ptx.items if isinstance(d, ir.VarDecl)):
            if decl.space not in (".global", ".const") or ".extern" in decl.linkage:
                continue
            for n in decl.names:
                var = var_of(decl, n)
                if n.init is not None and _mentions_symbol(n.init):
                    raise UnsupportedError(f"{n.name}: initialisers with addresses are not lifted", decl.loc)
                if program is None:
                    program = Program(self.ptx)
                data = program.initial_bytes(var)
                t = ll.ArrayType(ll.IntType(8), max(var.size, 1))
                g = ll.GlobalVariable(self.module, t, name=f"ptx.{n.name}")
                g.initializer = ll.Constant(t, bytearray(data.ljust(max(var.size, 1), b"\0")))
                g.align = max(var.align, 16)
                g.global_constant = decl.space == ".const"
                out[n.name] = g
                if decl.space == ".global":
                    self.variables[g.name] = data
        return out

    def _order(self) -> list[int]:
        """The dispatcher's priority: the CFG's structured order (every forward edge
        goes forward, each loop contiguous with its exits after it, else the lanes
        could meet late), which is text order wherever the text allows."""
        cfg = self.cfg
        if not cfg.is_reducible:
            raise UnsupportedError(f"kernel {self.fn.name} has irreducible control flow", self.fn.loc)
        order = list(cfg.structured_order)
        self.rank = {blk: i for i, blk in enumerate(order)}
        return order

    # ---- the function ------------------------------------------------------------------------
    def run(self) -> LiftedKernel:
        self._register_types()
        # With lane loops a group's registers fit the host's, and a reordered block (whose
        # stores `schedule` moves up to the end of each chain) would cut the runs the loops take.
        self.scheduled = (
            {blk: bb.instructions for blk, bb in enumerate(self.cfg.blocks)}
            if self.lane_loops
            else self._schedules()
        )
        symbols, layout, param_size, shared_size, dynamic = self._layout()
        self.symbols = symbols
        self.host_symbols = self._module_variables()
        order = self._order()
        # Branches around acyclic regions are if-converted; the blocks inside are only
        # ever run there. Lanes can only part (and the masked variants run) after
        # another guarded terminator, or from the start when packed CTAs past the
        # grid's end leave lanes idle.
        self.regions: dict[int, list[int]] = {}
        absorbed: set[int] = set()
        diverges = False
        for blk in order:
            term = self.cfg.blocks[blk].terminator
            if blk in absorbed or term is None or term.guard is None:
                continue
            region = self._region(blk) if term.opcode == "bra" else None
            if region is None:
                diverges = True
            else:
                self.regions[blk] = region
                absorbed.update(region)
        order = [blk for blk in order if blk not in absorbed]
        self.clean = self._before_side_effects()
        fast = (
            _FAST_VARIANTS
            and self.lanes * 64 <= _FAST_BITS
            and any(".f64" in isa.instruction_types(i) for i in self.cfg.instructions if id(i) in self.clean)
        )
        func = self._emit(self.fn.name, order, masked=self.pack > 1 or diverges)
        # A pack of CTAs all inside the grid, in a kernel whose lanes never part, runs
        # without masks. Its own function: beside the masked variants (which only the
        # grid's last, partial pack needs) the register allocator would serve both at
        # once (~3x slower straight-line code).
        registers = self.registers
        whole = None
        if self.pack > 1 and not diverges:
            whole = self._emit(f"{self.fn.name}.whole", order, masked=False)
        first = (func, whole)
        if fast:
            first = (
                self._emit(f"{self.fn.name}.fast", order, masked=self.pack > 1 or diverges, fast=True),
                self._emit(f"{self.fn.name}.whole.fast", order, masked=False, fast=True) if whole else None,
            )
        self._range_function(func, whole, shared_size > 0 or dynamic, first)
        kernels = list(dict.fromkeys(f for f in (func, whole, *first) if f is not None))
        if self.lane_loops:
            for f in kernels:
                loop_lanes(f, self.lanes)
        return LiftedKernel(
            module=self.module,
            function=self.fn.name,
            kernel=self.fn,
            wg_size=self.dom.wg_size,
            wg_pack=self.pack,
            block=self.block,
            groups=self.dom.wg_pack,
            param_layout=layout,
            param_size=param_size,
            shared_size=shared_size,
            dynamic_shared=dynamic,
            source=self.ptx.path,
            registers={k: w for k, (_, w) in registers.slots.items()},
            variables=self.variables,
            traps=self.traps,
            ptx=self.ptx,
            lane_loops=self.lane_loops,
            variants=tuple(f.name for f in kernels),
        )

    def _emit(self, name: str, order: list[int], masked: bool, fast: bool = False) -> ll.Function:
        """One lifted function over the blocks ``order`` (regions already absorbed):
        with ``masked`` variants of every block and the dispatcher, or (not
        ``masked``) only the full variants, for calls where every lane is live.

        ``fast``: the variant the range function calls first. Until the kernel's first
        side effect (`_before_side_effects`) its ``.f64`` results are taken as the
        hardware gives them, their NaN lanes only gathered; at that side effect, if a
        running lane met a NaN, it returns 1 having written nothing, and the range
        function runs the exact variant instead (it returns 0 otherwise). The NaN
        rules choose only among NaNs, so where no result was NaN the two agree; and a
        run that has not yet written, fenced or trapped can be run again from the start."""
        ret_t = ll.IntType(32) if fast else ll.VoidType()
        fnty = ll.FunctionType(ret_t, [_I8P, _I8P, _I32, _I32, _I32, _I32, _I32, _I32, _I32])
        func = ll.Function(self.module, fnty, name)
        for arg, arg_name in zip(func.args, _ARGS, strict=True):
            arg.name = arg_name
        self.func = func
        self.fast = fast
        entry = func.append_basic_block("entry")
        # Uniform values (parameters, addresses' bases: `Affine`) are computed once, in a
        # block of their own after the entry (whose start gets the registers' allocas).
        uniforms = func.append_basic_block("uniforms")
        self.dom.begin_function(ll.IRBuilder(uniforms))
        self.dispatch = func.append_basic_block("dispatch")
        self.masked = masked
        self.blocks = {b: func.append_basic_block(f"bb{b}") for b in order} if self.masked else {}
        self.full_blocks = {b: func.append_basic_block(f"full{b}") for b in order}
        finish = func.append_basic_block("finish")

        b = ll.IRBuilder(entry)
        self.dom.builder = b
        specials, valid = self._specials(func)
        self.pending = {blk: b.alloca(self.mask_t, name=f"pending{blk}") for blk in order}
        self.live = b.alloca(self.mask_t, name="live")
        self.dom.nan_seen = None
        if fast:
            self.dom.nan_seen = b.alloca(self.mask_t, name="nan_seen")
            b.store(ll.Constant(self.mask_t, None), self.dom.nan_seen)
        # Which blocks have pending lanes, bit i for order[i]: the dispatcher's O(1) choice.
        self.position = {blk: i for i, blk in enumerate(order)}
        self.set_t = ll.IntType(max(len(order), 2))
        self.pending_set = b.alloca(self.set_t, name="pending_set")
        b.store(ll.Constant(self.set_t, 0), self.pending_set)
        for slot in self.pending.values():
            b.store(ll.Constant(self.mask_t, None), slot)
        b.store(valid.value, self.live)
        b.branch(uniforms)
        b.position_at_end(uniforms)
        if self.masked:
            masked_start = func.append_basic_block("masked_start")
            b.cbranch(self._all(valid.value), self.full_blocks[order[0]], masked_start)
            b.position_at_end(masked_start)
            b.store(valid.value, self.pending[order[0]])
            b.branch(self.blocks[order[0]])
        else:  # the range function only calls it when every lane is a thread of the grid
            b.branch(self.full_blocks[order[0]])
        registers = RegisterFile(self.dom, entry, self.register_type)
        self.registers = registers
        self.machine = LiftMachine(
            self.dom,
            registers,
            specials,
            func.args[0],
            func.args[1],
            func.args[2],
            self.symbols,
            self.block_lanes,
        )
        self.machine.host_symbols = self.host_symbols
        if self.frame_size:
            total = ll.Constant(ll.IntType(64), self.frame_size * self.lanes)
            entry_b = ll.IRBuilder(entry)
            entry_b.position_at_start(entry)
            frame = entry_b.alloca(ll.IntType(8), size=total, name="frames")
            frame.align = 16
            memset = self.module.declare_intrinsic("llvm.memset", [_I8P, ll.IntType(64)])
            entry_b.call(memset, [frame, ll.Constant(ll.IntType(8), 0), total, ll.Constant(ll.IntType(1), 0)])
            self.machine.frame, self.machine.frame_size = frame, self.frame_size
        self.sem = Semantics(self.machine)
        self.machine.single_defs = self.single_definitions
        self.machine.groups = plan_access_groups(list(self.scheduled.values()))
        self.machine.dominates = self._dominates

        b.position_at_end(self.dispatch)
        first = self.dom.call(
            f"llvm.cttz.i{self.set_t.width}", [b.load(self.pending_set), ll.Constant(ll.IntType(1), 0)]
        )
        switch = b.switch(first, finish)
        for blk in self.blocks:
            switch.add_case(ll.Constant(self.set_t, self.position[blk]), self.blocks[blk])
        b.position_at_end(finish)
        if fast:
            b.ret(ll.Constant(ll.IntType(32), 0))
        else:
            b.ret_void()

        for blk in order:
            if self.masked:
                self._block(blk, full=False)
            self._block(blk, full=True)
        self.fast = self.dom.accumulating = False
        self.dom.nan_seen = None
        return func

    @functools.cached_property
    def single_definitions(self) -> dict[str, ir.Instruction]:
        """Registers written by exactly one instruction, unguarded (key -> that instruction)."""
        count: dict[str, int] = {}
        where: dict[str, ir.Instruction] = {}
        for inst in self.cfg.instructions:
            for reg in isa.defs(inst):
                key = reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"
                count[key] = count.get(key, 0) + 1
                where[key] = inst
        return {k: where[k] for k, n in count.items() if n == 1 and where[k].guard is None}

    def _dominates(self, a: ir.Instruction, b: ir.Instruction) -> bool:
        """Whether instruction ``a`` runs before ``b`` on every path to ``b``."""
        cfg = self.cfg
        ia, ib = cfg.index_of(a), cfg.index_of(b)
        ba, bb = cfg.block_of(ia), cfg.block_of(ib)
        return ia < ib if ba == bb else cfg.dominates(ba, bb)

    def _range_function(
        self,
        kernel: ll.Function,
        whole: ll.Function | None,
        zero_shared: bool,
        first: tuple[ll.Function, ll.Function | None],
    ) -> None:
        """``KERNEL.range(params, shared, stride, begin, end, nctaid_x, nctaid_y, nctaid_z)``:
        calls ``begin..end-1`` of the grid's (x chunk, y, z) work, zeroing shared
        memory before each call (each CTA starts with it zeroed, as in the interpreter).
        One ctypes call per thread then runs a whole slice of the grid. A pack whose
        CTAs are all in the grid calls ``whole`` where there is one."""
        i64 = ll.IntType(64)
        fnty = ll.FunctionType(ll.VoidType(), [_I8P, _I8P, _I32, i64, i64, _I32, _I32, _I32])
        func = ll.Function(self.module, fnty, f"{kernel.name}.range")
        params, shared, stride, begin, end, nx, ny, nz = func.args
        for arg, name in zip(
            func.args, ("params", "shared", "stride", "begin", "end", "nx", "ny", "nz"), strict=True
        ):
            arg.name = name
        entry, head, body, done = (func.append_basic_block(n) for n in ("entry", "head", "body", "done"))
        b = ll.IRBuilder(entry)
        pack = ll.Constant(i64, self.pack)
        one, zero = ll.Constant(i64, 1), ll.Constant(i64, 0)
        wide_ny = b.zext(ny, i64)
        chunks_x = b.udiv(b.add(b.zext(nx, i64), ll.Constant(i64, self.pack - 1)), pack)
        # Chunk coordinates are divided out once, then stepped (x fastest): no division per call.
        rest = b.udiv(begin, chunks_x)
        start = (b.urem(begin, chunks_x), b.urem(rest, wide_ny), b.udiv(rest, wide_ny))
        b.branch(head)
        b.position_at_end(head)
        c = b.phi(i64, name="chunk")
        cx, y, z = (b.phi(i64, name=n) for n in ("cx", "cy", "cz"))
        for phi, value in zip((c, cx, y, z), (begin, *start), strict=True):
            phi.add_incoming(value, entry)
        b.cbranch(b.icmp_unsigned("<", c, end), body, done)
        b.position_at_end(body)
        x0 = b.mul(cx, pack)
        if zero_shared:
            size = b.mul(b.zext(stride, i64), pack)
            memset = self.module.declare_intrinsic("llvm.memset", [_I8P, i64])
            b.call(memset, [shared, ll.Constant(ll.IntType(8), 0), size, ll.Constant(ll.IntType(1), 0)])
        args = [params, shared, stride, *(b.trunc(v, _I32) for v in (x0, y, z)), nx, ny, nz]

        def call(exact: ll.Function, fast: ll.Function) -> None:
            """``fast`` (`_emit`), then ``exact`` when it asks to be run again."""
            if fast is exact:
                b.call(exact, args)
                return
            again = b.icmp_unsigned("!=", b.call(fast, args), ll.Constant(_I32, 0))
            with b.if_then(again, likely=False):
                b.call(exact, args)

        if whole is None:
            call(kernel, first[0])
        else:
            inside = b.icmp_unsigned("<=", b.add(x0, pack), b.zext(nx, i64))
            with b.if_else(inside) as (then, otherwise):
                with then:
                    call(whole, first[1] or whole)
                with otherwise:
                    call(kernel, first[0])
        next_x = b.add(cx, one)
        wrap_x = b.icmp_unsigned("==", next_x, chunks_x)
        next_y = b.add(y, b.zext(wrap_x, i64))
        wrap_y = b.icmp_unsigned("==", next_y, wide_ny)
        steps = (
            b.add(c, one),
            b.select(wrap_x, zero, next_x),
            b.select(wrap_y, zero, next_y),
            b.add(z, b.zext(wrap_y, i64)),
        )
        for phi, value in zip((c, cx, y, z), steps, strict=True):
            phi.add_incoming(value, b.block)
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()

    def _specials(self, func: ll.Function) -> tuple[Specials, Vec]:
        """Thread and CTA ids per lane: lane i is thread ``i % B`` (x fastest) of CTA
        ``ctaid_x0 + i // B`` of the call; warps are 32 consecutive threads."""
        d = self.dom
        bx, by, bz = self.block
        size, lanes = self.block_lanes, d.lanes
        x0, y, z, nx, ny, nz = (d.uniform(a, 32) for a in func.args[3:])
        thread = [i % size for i in range(lanes)]

        def per_lane(values: list[int]) -> Vec:
            return d._const_lanes(values, 32)

        def const(v: int) -> Vec:
            return d.const(v, 32)

        def lanemask(pred: Callable[[int, int], bool]) -> Vec:
            return per_lane([sum(1 << j for j in range(32) if pred(t % 32, j)) for t in thread])

        ctaid_x = d.add(x0, per_lane([i // size for i in range(lanes)]))
        # x0 + g never wraps in a lane that runs: those lanes have x0 + g < nctaid_x.
        ctaid_x = Vec(ctaid_x.value, 32, None, Affine(func.args[3], ctaid_x.affine.offsets, nuw=True))  # type: ignore[union-attr]
        values = {
            ("%tid", "x"): per_lane([t % bx for t in thread]),
            ("%tid", "y"): per_lane([t // bx % by for t in thread]),
            ("%tid", "z"): per_lane([t // (bx * by) for t in thread]),
            ("%ntid", "x"): const(bx),
            ("%ntid", "y"): const(by),
            ("%ntid", "z"): const(bz),
            ("%ctaid", "x"): ctaid_x,
            ("%ctaid", "y"): y,
            ("%ctaid", "z"): z,
            ("%nctaid", "x"): nx,
            ("%nctaid", "y"): ny,
            ("%nctaid", "z"): nz,
            ("%laneid", None): per_lane([t % 32 for t in thread]),
            ("%warpid", None): per_lane([t // 32 for t in thread]),
            ("%nwarpid", None): const(64),  # the hardware's warp-id range, as the interpreter has it
            ("WARP_SZ", None): const(32),
            ("%lanemask_eq", None): lanemask(lambda i, j: j == i),
            ("%lanemask_lt", None): lanemask(lambda i, j: j < i),
            ("%lanemask_le", None): lanemask(lambda i, j: j <= i),
            ("%lanemask_gt", None): lanemask(lambda i, j: j > i),
            ("%lanemask_ge", None): lanemask(lambda i, j: j >= i),
            # A launch without clusters, on one SM, as the interpreter runs it: every CTA
            # its own cluster; %envreg (driver-set, read by GCC's offload code) zero.
            ("%clusterid", "x"): ctaid_x,
            ("%clusterid", "y"): y,
            ("%clusterid", "z"): z,
            ("%nclusterid", "x"): nx,
            ("%nclusterid", "y"): ny,
            ("%nclusterid", "z"): nz,
            **{("%cluster_ctaid", sel): const(0) for sel in "xyz"},
            **{("%cluster_nctaid", sel): const(1) for sel in "xyz"},
            ("%cluster_ctarank", None): const(0),
            ("%cluster_nctarank", None): const(1),
            ("%is_explicit_cluster", None): d.const(0, 1),
            ("%smid", None): const(0),
            ("%nsmid", None): const(1),
            ("%gridid", None): d.const(1, 64),
            **{(f"%envreg{i}", None): const(0) for i in range(32)},
        }
        return Specials(values), d.ult(ctaid_x, nx)

    def _any(self, mask: ll.Value) -> ll.Value:
        b = self.dom.b
        it = ll.IntType(self.lanes)
        return b.icmp_unsigned("!=", b.bitcast(mask, it), ll.Constant(it, 0))

    def _mark(self, blk: int, pending: ll.Value, keep: bool = False) -> None:
        """Set (``keep``: OR in) or clear block ``blk``'s bit of the pending set."""
        b = self.dom.b
        bit = ll.Constant(self.set_t, 1 << self.position[blk])
        current = b.load(self.pending_set)
        if keep:
            new = b.or_(current, b.select(pending, bit, ll.Constant(self.set_t, 0)))
        else:
            new = b.and_(
                current, ll.Constant(self.set_t, ~(1 << self.position[blk]) & ((1 << self.set_t.width) - 1))
            )
        b.store(new, self.pending_set)

    def _all(self, mask: ll.Value) -> ll.Value:
        b = self.dom.b
        it = ll.IntType(self.lanes)
        return b.icmp_unsigned("==", b.bitcast(mask, it), ll.Constant(it, (1 << self.lanes) - 1))

    def _same(self, a: ll.Value, c: ll.Value) -> ll.Value:
        b = self.dom.b
        it = ll.IntType(self.lanes)
        return b.icmp_unsigned("==", b.bitcast(a, it), b.bitcast(c, it))

    # ---- one PTX block ------------------------------------------------------------------------------
    def _block(self, blk: int, full: bool) -> None:
        """Emit PTX block ``blk``: the masked variant runs the lanes pending there; the
        full variant runs when every lane of every packed CTA is there (no exits yet),
        so its execution mask is the constant all-ones and writes need no selects."""
        b = self.dom.b
        if full:
            b.position_at_end(self.full_blocks[blk])
            self.machine.exec = self.dom.const(1, 1)
        else:
            b.position_at_end(self.blocks[blk])
            mask = b.load(self.pending[blk])
            b.store(ll.Constant(self.mask_t, None), self.pending[blk])
            self._mark(blk, ll.Constant(ll.IntType(1), 0))
            self.machine.exec = Vec(mask, 1)
        bb = self.cfg.blocks[blk]
        term = bb.terminator
        body: list[ir.Instruction] = []
        for inst in self.scheduled[blk]:
            if inst is term:
                break
            if inst.opcode in _CONTROL:
                raise UnsupportedInstruction(inst.mnemonic, "calls are not lifted", inst.loc)
            body.append(inst)
        # A reordered block (`schedule`) runs chain by chain, and a chain's NaN test is
        # at its end (`_nan_covered`): speculated, its code is the multiply-adds alone.
        reordered = self.scheduled[blk] is not bb.instructions
        self._straight(body, speculate=(reordered or _SPECULATE or self.lane_loops) and not self.fast)
        self._leave(blk, term, full)

    def _execute(self, inst: ir.Instruction, nan_covered: bool = False) -> None:
        """Lift ``inst``; ``nan_covered``: its `.f64` result needs no NaN test or
        gathering of its own (`_nan_covered`)."""
        self.machine.inst = inst
        if self.fast:
            d = self.dom
            d.accumulating = id(inst) in self.clean
            if d.accumulating and _side_effect(inst):  # the first on this path: redo if a NaN met
                d.accumulating = False
                b = d.b
                lanes = ll.IntType(self.lanes)
                seen = b.bitcast(b.load(d.nan_seen), lanes)
                with b.if_then(b.icmp_unsigned("!=", seen, ll.Constant(lanes, 0)), likely=False):
                    b.ret(ll.Constant(ll.IntType(32), 1))
        self.dom.nan_covered = nan_covered
        try:
            self.sem.execute(inst)
        finally:
            self.dom.nan_covered = False

    def _before_side_effects(self) -> set[int]:
        """The instructions (ids) that no side effect (`_side_effect`) can precede: on
        every path from the kernel's start to them nothing has been written, fenced or
        trapped; a block's first side effect is one of them (the fast variant's test)."""
        cfg = self.cfg
        count = len(cfg.blocks)
        effects = [any(_side_effect(i) for i in bb.instructions) for bb in cfg.blocks]
        clean_in = [True] * count
        changed = True
        while changed:  # greatest fixed point: a loop back from a side effect dirties its header
            changed = False
            for blk in range(count):
                preds = cfg.predecessors(blk)
                now = (blk == 0 or bool(preds)) and all(clean_in[p] and not effects[p] for p in preds)
                if now != clean_in[blk]:
                    clean_in[blk], changed = now, True
        clean: set[int] = set()
        for blk, bb in enumerate(cfg.blocks):
            if not clean_in[blk]:
                continue
            for inst in bb.instructions:
                clean.add(id(inst))
                if _side_effect(inst):
                    break
        return clean

    def _straight(self, body: list[ir.Instruction], speculate: bool) -> None:
        """Straight-line code: runs of pure instructions (`_pure`) with ``.f64``
        arithmetic are speculated (`_speculated`) when ``speculate``, the rest lifted
        one by one."""
        i = 0
        while i < len(body):
            j = i
            while j < len(body) and _pure(body[j]):
                j += 1
            if j == i:
                self._execute(body[i])
                i += 1
                continue
            run = body[i:j]
            wide = any(".f64" in isa.instruction_types(inst) for inst in run)
            if speculate and wide:
                self._speculated(run)
            elif self.fast and wide:  # gathered NaNs: a chain's end gathers for the chain
                covered = self._nan_covered(run)
                for p, inst in enumerate(run):
                    self._execute(inst, nan_covered=p in covered)
            else:
                for inst in run:
                    self._execute(inst)
            i = j

    def _speculated(self, run: list[ir.Instruction]) -> None:
        """Lift ``run`` with one NaN test per `_SPECULATED` ``.f64`` results instead of
        a test and a branch per operation (`LLVMDomain.speculating`). When some result
        is NaN, a cold block puts back the registers the piece read before writing
        them and runs the piece again with the exact NaN rules. The run has no memory
        effect, so running it twice is running it once."""
        m, d = self.machine, self.dom
        covered = self._nan_covered(run)
        start = 0
        while start < len(run):
            before = m.facts()
            read: set[str] = set()
            written: set[str] = set()
            saved: list[tuple[ll.AllocaInstr, ll.Value]] = []
            d.speculating()
            end = start
            open_until = -1  # the last reader of a result whose test its readers' tests make
            limit = _SPECULATED_LOOPED if self.lane_loops else _SPECULATED
            while end < len(run) and ((d.deferred_nans or 0) < limit or open_until >= end):
                inst = run[end]
                last_reader = covered.get(end)
                if last_reader is not None:
                    open_until = max(open_until, last_reader)
                read.update(k for k in map(register_key, isa.uses(inst)) if k not in written)
                for reg in isa.defs(inst):
                    key = register_key(reg)
                    if key in read and key not in written:  # its value before the piece
                        slot = m.registers.slot(reg, 32)[0]
                        saved.append((slot, d.b.load(slot)))
                    written.add(key)
                self._execute(inst, nan_covered=last_reader is not None)
                end += 1
            some = d.some_nan()
            if some is not None:
                fast = m.facts()
                with d.b.if_then(some, likely=False):
                    for slot, value in saved:
                        d.b.store(value, slot)
                    m.restore(before)
                    d.exact_nans = True
                    try:
                        for inst in run[start:end]:
                            self._execute(inst)
                    finally:
                        d.exact_nans = False
                    slow = m.facts()
                m.merge_facts(fast, slow, written)
            start = end

    @functools.cached_property
    def readers(self) -> dict[str, list[ir.Instruction]]:
        """Each register's readers in the kernel (key -> instructions)."""
        readers: dict[str, list[ir.Instruction]] = {}
        for inst in self.cfg.instructions:
            for reg in isa.uses(inst):
                readers.setdefault(register_key(reg), []).append(inst)
        return readers

    def _nan_covered(self, run: list[ir.Instruction]) -> dict[int, int]:
        """The positions in ``run`` of `.f64` results that need no NaN test of their own,
        each with the position of its last reader.

        Such a result is written once in the kernel, and every instruction that reads
        it comes later in ``run`` and gives a NaN in each lane where an operand is one
        (`_propagates_nan`). A NaN in it therefore reaches, lane for lane, a result that
        is tested, or (by the same argument) one of those readers' readers: in a chain
        ``c = fma(a, b, c)`` only the chain's end is tested. The readers must be in the
        same speculated piece (`_speculated` does not end a piece between them)."""
        where = {id(inst): p for p, inst in enumerate(run)}
        covered: dict[int, int] = {}
        for p, inst in enumerate(run):
            defs = isa.defs(inst)
            if not _propagates_nan(inst) or len(defs) != 1:
                continue
            key = register_key(defs[0])
            readers_of = self.readers.get(key, [])
            if self.single_definitions.get(key) is not inst or not readers_of:
                continue
            places = [where.get(id(r), -1) for r in readers_of]
            if all(q > p for q in places) and all(_propagates_nan(r) for r in readers_of):
                covered[p] = max(places)
        return covered

    def _leave(self, blk: int, term: ir.Instruction | None, full: bool) -> None:
        """Hand the block's lanes to its successors (see the module documentation)."""
        b, d = self.dom.b, self.dom
        bb = self.cfg.blocks[blk]
        mask = self.machine.exec
        if term is None:
            self._goto([(bb.fallthrough, mask)], full)
            return
        self.machine.inst = term
        if term.opcode == "brx.idx" or term.opcode == "call":
            raise UnsupportedInstruction(term.mnemonic, f"{term.opcode} is not lifted", term.loc)
        cond = self.sem.branch_condition(term)
        taken = mask if cond is None else d.and_(mask, cond)
        rest = None if cond is None else d.and_(mask, d.not_(cond))
        exits: list[tuple[int | None, Vec]] = []
        if term.opcode == "trap":
            self._trap(taken, term)
            self._goto([] if rest is None else [(bb.fallthrough, rest)], full)
            return
        region = self.regions.get(blk)
        if region is not None:
            self._predicate_region(blk, region, taken, rest)  # type: ignore[arg-type]
            self.machine.exec = mask
            self._goto([(self.cfg.ipdom[blk], mask)], full)
            return
        if term.opcode in ("ret", "exit"):
            live = b.load(self.live)
            b.store(b.and_(live, b.not_(taken.value)), self.live)
        else:
            exits.append((bb.targets[0], taken))
        if rest is not None:
            exits.append((bb.fallthrough, rest))
        self._goto(exits, full)

    def _trap(self, lanes: Vec, inst: ir.Instruction) -> None:
        """``trap`` aborts the grid: when a lane runs it, the call records which trap
        (its place in `LiftedKernel.traps`, from 1) in the ``ptxasw.trap`` variable
        and returns; the runtime then raises, as the interpreter does."""
        b = self.dom.b
        number = self._trap_numbers.get(id(inst))
        if number is None:  # the masked and the whole function share the numbers
            self.traps.append(inst.loc)
            number = self._trap_numbers[id(inst)] = len(self.traps)
        hit = self.func.append_basic_block("trap")
        rest = self.func.append_basic_block("no_trap")
        b.cbranch(self._any(lanes.value), hit, rest)
        b.position_at_end(hit)
        flag = b.bitcast(self._trap_flag(), ll.IntType(32).as_pointer())
        b.store(ll.Constant(ll.IntType(32), number), flag)
        b.ret_void()
        b.position_at_end(rest)

    def _trap_flag(self) -> ll.GlobalVariable:
        flag = self.module.globals.get(TRAP_FLAG)
        if flag is None:
            t = ll.ArrayType(ll.IntType(8), 4)
            flag = ll.GlobalVariable(self.module, t, name=TRAP_FLAG)
            flag.initializer = ll.Constant(t, bytearray(4))
            flag.align = 16
            self.variables[TRAP_FLAG] = bytes(4)  # reset before every launch, as module variables
        return flag  # type: ignore[return-value]

    def _region(self, blk: int) -> list[int] | None:
        """The blocks between ``blk``'s branch and its join (immediate post-dominator),
        in the dispatcher's order, when if-conversion can run them all under masks: an
        acyclic region that only ``blk`` enters, with plain branches and no exits."""
        cfg, rank = self.cfg, self.rank
        join = cfg.ipdom.get(blk)
        if join is None or join == cfg.exit:
            return None
        region: list[int] = []
        todo = [s for s in cfg.successors(blk) if s != join]
        seen = set(todo)
        while todo:
            x = todo.pop()
            if x == cfg.exit or rank[x] <= rank[blk] or rank[x] >= rank[join] or not cfg.dominates(blk, x):
                return None
            bb = cfg.blocks[x]
            term = bb.terminator
            if term is not None and term.opcode != "bra":
                return None
            if any(i.opcode in _CONTROL for i in bb.instructions if i is not term):
                return None
            region.append(x)
            for y in cfg.successors(x):
                if y != cfg.exit and rank[y] <= rank[x]:  # a back edge: a loop inside
                    return None
                if y != join and y not in seen:
                    seen.add(y)
                    todo.append(y)
        return sorted(region, key=rank.__getitem__)

    def _predicate_region(self, blk: int, region: list[int], taken: Vec, rest: Vec) -> None:
        """If-conversion: run every block of the region once, in order, under the
        lanes that reach it (the OR of its incoming edges' lanes), as the dispatcher
        would but without leaving straight-line code."""
        d, cfg = self.dom, self.cfg
        incoming: dict[int, Vec] = {}

        def send(target: int | None, lanes: Vec) -> None:
            if target is None or target not in region:
                return
            incoming[target] = d.or_(incoming[target], lanes) if target in incoming else lanes

        bb = cfg.blocks[blk]
        send(bb.targets[0], taken)
        send(bb.fallthrough, rest)
        for x in region:
            lanes = incoming.get(x)
            if lanes is None:
                continue
            self.machine.exec = lanes
            xb = cfg.blocks[x]
            term = xb.terminator
            for inst in self.scheduled[x]:
                if inst is term:
                    break
                self._execute(inst)
            if term is None:
                send(xb.fallthrough, lanes)
                continue
            self.machine.inst = term
            cond = self.sem.branch_condition(term)
            send(xb.targets[0], lanes if cond is None else d.and_(lanes, cond))
            if cond is not None:
                send(xb.fallthrough, d.and_(lanes, d.not_(cond)))

    def _goto(self, exits: list[tuple[int | None, Vec]], full: bool) -> None:
        """Send each edge's lanes on. From a full block, an edge that takes every lane
        goes straight to the target's full variant. Otherwise the lanes join the
        targets' pending masks, and a target that all live lanes go to is entered
        directly (its full variant when no lane has left), else the dispatcher picks."""
        b = self.dom.b
        func = self.func
        if full:
            for target, lanes in exits:
                if target is None or target == self.cfg.exit:
                    continue
                if lanes.known is not None and all(lanes.known):
                    b.branch(self.full_blocks[target])
                    return
                nxt = func.append_basic_block("partial")
                b.cbranch(self._all(lanes.value), self.full_blocks[target], nxt)
                b.position_at_end(nxt)
        resolved: list[tuple[int, Vec]] = []
        for target, lanes in exits:
            if target is None or target == self.cfg.exit:
                live = b.load(self.live)
                b.store(b.and_(live, b.not_(lanes.value)), self.live)
                continue
            slot = self.pending[target]
            b.store(b.or_(b.load(slot), lanes.value), slot)
            self._mark(target, self._any(lanes.value), keep=True)
            resolved.append((target, lanes))
        live = b.load(self.live)
        for target, lanes in resolved:
            nxt = func.append_basic_block("split")
            direct = func.append_basic_block("direct")
            to_full = func.append_basic_block("to_full")
            b.cbranch(b.and_(self._same(lanes.value, live), self._any(lanes.value)), direct, nxt)
            b.position_at_end(direct)
            b.cbranch(self._all(live), to_full, self.blocks[target])
            b.position_at_end(to_full)
            b.store(ll.Constant(self.mask_t, None), self.pending[target])
            self._mark(target, ll.Constant(ll.IntType(1), 0))
            b.branch(self.full_blocks[target])
            b.position_at_end(nxt)
        b.branch(self.dispatch)


def _side_effect(inst: ir.Instruction) -> bool:
    """Whether running ``inst`` leaves something a second run of the kernel from its
    start would meet or repeat: a write, an atomic, a fence or barrier, an
    asynchronous copy, a volatile access, a trap or a call."""
    if inst.opcode in ("trap", "call", "brkpt", "pmevent"):
        return True
    effect = isa.memory_effect(inst)
    if effect & ~(isa.MemoryEffect.READ | isa.MemoryEffect.PREFETCH):
        return True
    return bool(effect) and ".volatile" in inst.modifiers


# `.f64` operations whose result is NaN in each lane where an operand is, and whose
# result the domain tests for the NaN rule (`_FloatEmitter.unless_nan`).
_NAN_PROPAGATING = frozenset({"add", "sub", "mul", "fma", "mad", "div", "sqrt"})


def _propagates_nan(inst: ir.Instruction) -> bool:
    """Whether ``inst`` is an unguarded IEEE ``.f64`` operation in round-to-nearest
    (`_NAN_PROPAGATING`): a NaN operand makes its result NaN in that lane."""
    return (
        inst.opcode in _NAN_PROPAGATING
        and inst.guard is None
        and isa.instruction_types(inst) == (".f64",)
        and set(inst.modifiers) <= {".rn", ".f64"}
    )


def _pure(inst: ir.Instruction) -> bool:
    """Lifting ``inst`` twice in a row computes what once does: no memory effect, no
    control flow, no carry flag (the machine keeps it apart from the registers)."""
    return (
        isa.memory_effect(inst) == isa.MemoryEffect.NONE
        and inst.opcode not in _CONTROL
        and not isa.reads_carry(inst)
        and not isa.writes_carry(inst)
    )


def _mentions_symbol(init: object) -> bool:
    """Whether an initialiser uses an address (``{&x}``, ``generic(f)``)."""
    if isinstance(init, list):
        return any(_mentions_symbol(i) for i in init)
    if isinstance(init, ir.Symbol):
        return True
    if isinstance(init, ir.BinaryExpr):
        return _mentions_symbol(init.lhs) or _mentions_symbol(init.rhs)
    if isinstance(init, ir.UnaryExpr):
        return _mentions_symbol(init.operand)
    if isinstance(init, ir.ParenExpr):
        return _mentions_symbol(init.inner)
    if isinstance(init, ir.CallExpr):
        return any(_mentions_symbol(a) for a in init.args)
    return False
