"""The `Machine` the lifter runs the shared semantics on: state as LLVM IR.

Where the interpreter holds a warp's registers and memory, `LiftMachine`
holds where they live in the lifted function: each PTX register is an
``alloca`` of an InfReg (``<L x iN>``, promoted to SSA values by LLVM),
``.param`` is the kernel's argument buffer, ``.shared`` a buffer per work
group, and ``.global``/generic addresses are host pointers. Every effect is
limited to the lanes that execute: register writes select under the
execution mask the lifter sets per block (`exec`), memory accesses are
masked by it and by the guard.

Loads and stores take the fastest exact form the addresses allow at run
time: one masked vector access when the lanes' addresses are consecutive
(``addr == addr[0] + lane * size``), one scalar access broadcast when they
are all equal (loads), and a masked gather/scatter otherwise.

It is strict: what it cannot lift exactly (an unknown instruction, an
address space or hook it does not model) raises `UnsupportedInstruction`
with the instruction's ``file:line:col``; the lifter never emits a
made-up value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir as ll

from ptxasw import ir
from ptxasw.emulator.semantics import domain as dm
from ptxasw.emulator.semantics.collectives import atomic_supported, atomic_update, warp_collective
from ptxasw.errors import UnsupportedInstruction
from ptxasw.ir import isa
from ptxasw.pirch_bridge.domain import LLVMDomain, Vec

__all__ = ["LiftMachine", "RegisterFile", "Specials"]

_I8P = ll.IntType(8).as_pointer()

FRAME_BASE = 1 << 40
"""Addresses of per-thread ``.local`` and call-site ``.param`` variables start here
(the frame of each lane is host memory; `LiftMachine` maps them there)."""


@dataclass
class RegisterFile:
    """PTX registers as allocas in the entry block (declared width; predicates i1)."""

    dom: LLVMDomain
    entry: ll.Block
    types: Callable[[str], str | None]
    slots: dict[str, tuple[ll.AllocaInstr, int]] = field(default_factory=dict)

    def slot(self, reg: ir.Register, width: int) -> tuple[ll.AllocaInstr, int]:
        """The alloca of ``reg`` and its width (declared; else the first write's)."""
        key = _key(reg)
        hit = self.slots.get(key)
        if hit is not None:
            return hit
        declared = self.types(reg.name)
        bits = isa.type_bits(declared) if declared else None
        width = 1 if declared == ".pred" else (bits or width)
        b = ll.IRBuilder(self.entry)
        b.position_at_start(self.entry)
        slot = b.alloca(self.dom.vtype(width), name=key.lstrip("%").replace(".", "_"))
        b.store(ll.Constant(self.dom.vtype(width), None), slot)
        self.slots[key] = (slot, width)
        return self.slots[key]


@dataclass
class Specials:
    """The values of PTX's special registers in the lifted function."""

    values: dict[tuple[str, str | None], Vec]


class LiftMachine:
    """`Machine[Vec]` emitting IR; the lifter sets `exec` and the instruction."""

    def __init__(
        self,
        dom: LLVMDomain,
        registers: RegisterFile,
        specials: Specials,
        params: ll.Value,
        shared: ll.Value,
        shared_stride: ll.Value,
        symbols: dict[str, tuple[str, int]],
        block_lanes: int,
    ) -> None:
        self.dom = dom
        self.registers = registers
        self.specials = specials
        self.params = params
        self.shared = shared
        self.shared_stride = shared_stride
        self.symbols = symbols
        self.block_lanes = block_lanes
        self.host_symbols: dict[str, ll.GlobalVariable] = {}
        # Per-lane frames (.local and call-site .param variables): base pointer and size.
        self.frame: ll.Value | None = None
        self.frame_size = 0
        self.exec: Vec = dom.const(1, 1)
        self.inst: ir.Instruction | None = None
        # Registers with one static definition whose value is known at lift time
        # (nvcc materialises shfl's lane operands in registers): key -> (value, def).
        self.single_defs: dict[str, ir.Instruction] = {}
        self.dominates: Callable[[ir.Instruction, ir.Instruction], bool] = lambda a, b: False
        self.constants: dict[str, tuple[Vec, ir.Instruction]] = {}

    @property
    def b(self) -> ll.IRBuilder:
        return self.dom.b

    def refuse(self, reason: str, inst: ir.Instruction | None = None) -> UnsupportedInstruction:
        inst = inst or self.inst
        if inst is None:
            return UnsupportedInstruction("?", reason)
        return UnsupportedInstruction(inst.mnemonic, reason, inst.loc)

    # ---- registers ----------------------------------------------------------------------
    def read(self, reg: ir.Register, width: int) -> Vec:
        special = self.specials.values.get((reg.name, reg.selector))
        if special is not None:
            return dm.resize(self.dom, special, width, False)
        if isa.is_special_register(reg.name):
            raise self.refuse(f"special register {reg.name} is not lifted")
        known = self.constants.get(_key(reg))
        if known is not None and self.inst is not None and self.dominates(known[1], self.inst):
            # Every lane that reaches this read ran the one definition: the value is known.
            return dm.resize(self.dom, known[0], width, False)
        slot, stored = self.registers.slot(reg, width)
        value = Vec(self.b.load(slot), stored)
        return dm.resize(self.dom, value, width, False)

    def write(self, reg: ir.Register, value: Vec) -> None:
        if isa.is_special_register(reg.name):
            raise self.refuse(f"write to special register {reg.name}")
        slot, stored = self.registers.slot(reg, value.width)
        new = dm.resize(self.dom, value, stored, False)
        key = _key(reg)
        if new.known is not None and self.inst is not None and self.single_defs.get(key) is self.inst:
            self.constants[key] = (new, self.inst)
        if self.exec.known is None or not all(self.exec.known):
            new = self.dom.ite(self.exec, new, Vec(self.b.load(slot), stored))
        self.b.store(new.value, slot)

    # ---- symbols ----------------------------------------------------------------------------
    def symbol_address(self, name: str, width: int) -> Vec:
        host = self.host_symbols.get(name)
        if host is not None:  # module variables live in host memory: their address is a pointer
            return dm.resize(
                self.dom, self.dom.splat(self.b.ptrtoint(host, ll.IntType(64)), 64), width, False
            )
        hit = self.symbols.get(name)
        if hit is None:
            raise self.refuse(f"the address of {name} (module variables, functions) is not lifted")
        return self.dom.const(hit[1], width)

    # ---- memory --------------------------------------------------------------------------------
    def _mask(self, cond: Vec | None) -> Vec:
        return self.exec if cond is None else self.dom.and_(self.exec, cond)

    def _base(self, space: str) -> tuple[ll.Value | None, Vec | None]:
        """(base pointer or None for absolute addresses, per-lane byte offset added)."""
        d = self.dom
        if space == ".param":
            return self.params, None
        if space in (".local", ".frame"):
            if self.frame is None:
                raise self.refuse("the kernel declares no .local memory")
            lane = d._const_lanes([i * self.frame_size for i in range(d.lanes)], 64)
            return self.frame, lane
        if space == ".shared":
            group = d._const_lanes([i // self.block_lanes for i in range(d.lanes)], 64)
            stride = d.splat(self.b.zext(self.shared_stride, ll.IntType(64)), 64)
            return self.shared, d.mul(group, stride)
        if space in (".global", "generic", ".const"):
            return None, None
        raise self.refuse(f"accesses to {space} are not lifted")

    def _addresses(self, space: str, address: Vec) -> Vec:
        """Absolute 64-bit host addresses of every lane."""
        d = self.dom
        addr = dm.resize(d, address, 64, False)
        if space in (".local", ".frame"):  # frame addresses carry FRAME_BASE (or lost it to 32 bits)
            addr = d.and_(addr, d.const(FRAME_BASE - 1, 64))
        base, offset = self._base(space)
        if offset is not None:
            addr = d.add(addr, offset)
        if base is not None:
            addr = d.add(addr, d.splat(self.b.ptrtoint(base, ll.IntType(64)), 64))
        return addr

    def load(self, inst: ir.Instruction, space: str, address: Vec, nbytes: int, cond: Vec | None) -> Vec:
        self.inst = inst
        width = nbytes * 8
        mask = self._mask(cond)
        space = self._param_space(space, address)
        if space == ".param" and address.known is not None and len(set(address.known)) == 1:
            return self._param_scalar(address.known[0], width)
        addrs = self._addresses(space, address)
        return self._access(addrs, nbytes, mask, None)

    def _param_space(self, space: str, address: Vec) -> str:
        """A ``.param`` access to a call site's variable (inlined calls) is per lane."""
        if space == ".param" and address.known is not None and min(address.known) >= FRAME_BASE:
            return ".frame"
        return space

    def store(
        self, inst: ir.Instruction, space: str, address: Vec, value: Vec, nbytes: int, cond: Vec | None
    ) -> None:
        self.inst = inst
        space = self._param_space(space, address)
        if space == ".param":
            raise self.refuse("stores to kernel parameters are not lifted")
        value = dm.resize(self.dom, value, nbytes * 8, False)
        self._access(self._addresses(space, address), nbytes, self._mask(cond), value)

    def _param_scalar(self, offset: int, width: int) -> Vec:
        b = self.b
        ptr = b.gep(self.params, [ll.Constant(ll.IntType(64), offset)])
        scalar = b.load(b.bitcast(ptr, ll.IntType(width).as_pointer()), align=1)
        return self.dom.splat(scalar, width)

    def _access(self, addrs: Vec, nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """A masked load (``value`` None) or store at per-lane addresses, in the
        fastest form their run-time pattern allows."""
        d, b = self.dom, self.b
        width = nbytes * 8
        vt = d.vtype(width)
        i32 = ll.IntType(32)
        elem_p = ll.IntType(width).as_pointer()
        align = ll.Constant(i32, nbytes)
        first = b.extract_element(addrs.value, ll.Constant(i32, 0))
        stride = d._const_lanes([i * nbytes for i in range(d.lanes)], 64)
        expected = d.add(d.splat(first, 64), stride)
        consecutive = _all(b, d.eq(addrs, expected).value, d.lanes)
        fn = b.function
        vec_bb = fn.append_basic_block("contiguous")
        other_bb = fn.append_basic_block("scattered")
        done_bb = fn.append_basic_block("accessed")
        b.cbranch(consecutive, vec_bb, other_bb)
        zero = ll.Constant(vt, None)
        results: list[tuple[ll.Value, ll.Block]] = []

        b.position_at_end(vec_bb)
        vptr = b.inttoptr(first, vt.as_pointer())
        if value is None:
            name = f"llvm.masked.load.{d.suffix(width)}.p0{d.suffix(width)}"
            results.append((d.call(name, [vptr, align, mask.value, zero], vt), b.block))
        else:
            name = f"llvm.masked.store.{d.suffix(width)}.p0{d.suffix(width)}"
            d.call(name, [value.value, vptr, align, mask.value], ll.VoidType())
        b.branch(done_bb)

        b.position_at_end(other_bb)
        if d.wg_pack > 1:  # each work group's lanes consecutive: one vector access per group
            results += self._segmented(addrs, nbytes, mask, value, done_bb)
        ptrs = b.inttoptr(addrs.value, ll.VectorType(elem_p, d.lanes))
        if value is None:
            same = _all(b, d.eq(addrs, d.splat(first, 64)).value, d.lanes)
            any_lane = _any(b, mask.value, d.lanes)
            uniform_bb = fn.append_basic_block("uniform")
            gather_bb = fn.append_basic_block("gather")
            b.cbranch(b.and_(same, any_lane), uniform_bb, gather_bb)
            b.position_at_end(uniform_bb)
            scalar = b.load(b.inttoptr(first, elem_p), align=nbytes)
            results.append((d.splat(scalar, width).value, b.block))
            b.branch(done_bb)
            b.position_at_end(gather_bb)
            name = f"llvm.masked.gather.{d.suffix(width)}.v{d.lanes}p0i{width}"
            results.append((d.call(name, [ptrs, align, mask.value, zero], vt), b.block))
        else:
            name = f"llvm.masked.scatter.{d.suffix(width)}.v{d.lanes}p0i{width}"
            d.call(name, [value.value, ptrs, align, mask.value], ll.VoidType())
        b.branch(done_bb)

        b.position_at_end(done_bb)
        if value is not None:
            return value
        phi = b.phi(vt)
        for v, block in results:
            phi.add_incoming(v, block)
        return Vec(phi, width)

    def _segmented(
        self, addrs: Vec, nbytes: int, mask: Vec, value: Vec | None, done_bb: ll.Block
    ) -> list[tuple[ll.Value, ll.Block]]:
        """When every work group of the pack accesses consecutive addresses (each from
        its own base, as a batched kernel's items do), one vector access per group,
        and on to ``done_bb``; the builder is left where the other cases continue."""
        d, b = self.dom, self.b
        size, pack, lanes = d.wg_size, d.wg_pack, d.lanes
        width = nbytes * 8
        starts = ll.Constant(ll.VectorType(ll.IntType(32), lanes), [i // size * size for i in range(lanes)])
        first = Vec(b.shuffle_vector(addrs.value, ll.Constant(addrs.value.type, ll.Undefined), starts), 64)
        offsets = d._const_lanes([i % size * nbytes for i in range(lanes)], 64)
        segmented = _all(b, d.eq(addrs, d.add(first, offsets)).value, lanes)
        fn = b.function
        seg_bb = fn.append_basic_block("segmented")
        rest_bb = fn.append_basic_block("scattered.rest")
        b.cbranch(segmented, seg_bb, rest_bb)

        b.position_at_end(seg_bb)
        part_t = ll.VectorType(ll.IntType(width), size)
        suffix = f"v{size}i{width}"
        align = ll.Constant(ll.IntType(32), nbytes)
        result: ll.Value = ll.Constant(d.vtype(width), None)
        for g in range(pack):
            lanes_g = _lane_range(g * size, size)
            ptr = b.inttoptr(
                b.extract_element(addrs.value, ll.Constant(ll.IntType(32), g * size)), part_t.as_pointer()
            )
            mask_g = b.shuffle_vector(mask.value, ll.Constant(mask.value.type, ll.Undefined), lanes_g)
            if value is None:
                part = d.call(
                    f"llvm.masked.load.{suffix}.p0{suffix}",
                    [ptr, align, mask_g, ll.Constant(part_t, None)],
                    part_t,
                )
                wide = b.shuffle_vector(
                    part, ll.Constant(part_t, ll.Undefined), _widen(g * size, size, lanes)
                )
                pick = [lanes + i if g * size <= i < (g + 1) * size else i for i in range(lanes)]
                result = b.shuffle_vector(result, wide, _lane_list(pick))
            else:
                part = b.shuffle_vector(value.value, ll.Constant(value.value.type, ll.Undefined), lanes_g)
                d.call(f"llvm.masked.store.{suffix}.p0{suffix}", [part, ptr, align, mask_g], ll.VoidType())
        done = [(result, b.block)] if value is None else []
        b.branch(done_bb)
        b.position_at_end(rest_bb)
        return done

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: Vec,
        operands: list[Vec],
        nbytes: int,
        cond: Vec | None,
    ) -> Vec:
        """``atom``/``red``: lane by lane in increasing lane order (as the interpreter),
        each a compare-and-swap loop whose new value is the shared `atomic_update`
        emitted over the domain, so every operation and type it models is exact and
        atomic against the other host threads."""
        self.inst = inst
        d, b = self.dom, self.b
        ptx_type = isa.instruction_type(inst) or f".b{nbytes * 8}"
        if not atomic_supported(op, ptx_type) or nbytes not in (4, 8):
            raise self.refuse(f"atomic {op} on {ptx_type} is not lifted", inst)
        width = nbytes * 8
        it, i32 = ll.IntType(width), ll.IntType(32)
        addrs = self._addresses(space, address)
        mask = self._mask(cond)
        first = dm.resize(d, operands[0], width, False)
        second = dm.resize(d, operands[1], width, False) if len(operands) > 1 else first
        fn = b.function
        start = b.block
        head, body, retry, done_lane, after = (
            fn.append_basic_block(n) for n in ("atom_lane", "atom_do", "atom_cas", "atom_done", "atom_end")
        )
        b.branch(head)
        b.position_at_end(head)
        lane = b.phi(i32, name="lane")
        result = b.phi(d.vtype(width), name="olds")
        lane.add_incoming(ll.Constant(i32, 0), start)
        result.add_incoming(ll.Constant(d.vtype(width), None), start)
        go = b.extract_element(mask.value, lane)
        b.cbranch(go, body, done_lane)

        b.position_at_end(body)
        ptr = b.inttoptr(b.extract_element(addrs.value, lane), it.as_pointer())
        operand_b = b.extract_element(first.value, lane)
        operand_c = b.extract_element(second.value, lane)
        initial = b.load_atomic(ptr, "monotonic", nbytes)
        b.branch(retry)

        b.position_at_end(retry)
        old = b.phi(it, name="old")
        old.add_incoming(initial, body)
        new = atomic_update(
            d, op, ptx_type, d.splat(old, width), d.splat(operand_b, width), d.splat(operand_c, width)
        )
        new_scalar = b.extract_element(new.value, ll.Constant(i32, 0))
        pair = b.cmpxchg(ptr, old, new_scalar, "seq_cst", "seq_cst")
        seen, swapped = b.extract_value(pair, 0), b.extract_value(pair, 1)
        old.add_incoming(seen, b.block)
        swapped_bb = fn.append_basic_block("atom_swapped")
        b.cbranch(swapped, swapped_bb, retry)
        b.position_at_end(swapped_bb)
        with_old = b.insert_element(result, old, lane)
        b.branch(done_lane)

        b.position_at_end(done_lane)
        merged = b.phi(d.vtype(width))
        merged.add_incoming(result, head)
        merged.add_incoming(with_old, swapped_bb)
        following = b.add(lane, ll.Constant(i32, 1))
        lane.add_incoming(following, done_lane)
        result.add_incoming(merged, done_lane)
        b.cbranch(b.icmp_unsigned("<", following, ll.Constant(i32, d.lanes)), head, after)
        b.position_at_end(after)
        return Vec(merged, width)

    def convert_address(self, inst: ir.Instruction, space: str, value: Vec, to_generic: bool) -> Vec:
        """``cvta``: global and constant addresses are host pointers in both spaces; a
        shared (local) address becomes the host pointer into its CTA's window (its
        lane's frame) and back, so generic accesses to them are plain host accesses."""
        if space in (".global", ".const"):
            return value
        if space not in (".shared", ".local"):
            raise self.refuse(f"cvta of {space} addresses is not lifted", inst)
        d = self.dom
        wide = dm.resize(d, value, 64, False)
        if space == ".local":
            host = self._addresses(".local", wide)
            if to_generic:
                return dm.resize(d, host, d.width(value), False)
            origin = self._addresses(".local", d.const(0, 64))
            return dm.resize(d, d.add(d.sub(wide, origin), d.const(FRAME_BASE, 64)), d.width(value), False)
        base = self._addresses(space, d.const(0, 64))
        moved = d.add(wide, base) if to_generic else d.sub(wide, base)
        return dm.resize(d, moved, d.width(value), False)

    # ---- the other lanes ---------------------------------------------------------------------------
    def warp(self, inst: ir.Instruction, operands: list[Vec], cond: Vec | None) -> list[Vec]:
        self.inst = inst
        d = self.dom
        # shfl reads its sources whatever the active lanes: no ballot to emit for it
        active = (
            d.const(0, 32) if inst.opcode == "shfl" else d.lane_ballot(self.exec, d.const(0xFFFF_FFFF, 32))
        )
        return warp_collective(d, inst, operands, cond, active)

    def barrier(self, inst: ir.Instruction, cond: Vec | None) -> None:
        """Every thread of a CTA runs in lockstep in one vector, so ``bar.sync`` and
        ``bar.warp.sync`` hold by construction: what every lane did before the
        instruction is done before any lane goes on."""
        if inst.opcode not in ("bar", "barrier") or ".warp" in inst.modifiers:
            return
        if ".red" in inst.modifiers or ".arrive" in inst.modifiers:
            raise self.refuse("bar.red/bar.arrive are not lifted", inst)

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        raise self.refuse(reason, inst)


def _key(reg: ir.Register) -> str:
    return reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"


def _lane_list(lanes: list[int]) -> ll.Constant:
    return ll.Constant(ll.VectorType(ll.IntType(32), len(lanes)), lanes)


def _lane_range(start: int, count: int) -> ll.Constant:
    """A shuffle mask picking lanes ``start .. start+count-1``."""
    return _lane_list(list(range(start, start + count)))


def _widen(start: int, count: int, lanes: int) -> ll.Constant:
    """A shuffle mask placing a ``count``-lane vector at lane ``start`` of ``lanes``
    (the other lanes take its lane 0; the caller overwrites them)."""
    return _lane_list([i - start if start <= i < start + count else 0 for i in range(lanes)])


def _any(b: ll.IRBuilder, bits: ll.Value, lanes: int) -> ll.Value:
    """Whether some lane of an ``<L x i1>`` is set."""
    return b.icmp_unsigned("!=", b.bitcast(bits, ll.IntType(lanes)), ll.Constant(ll.IntType(lanes), 0))


def _all(b: ll.IRBuilder, bits: ll.Value, lanes: int) -> ll.Value:
    """Whether every lane of an ``<L x i1>`` is set (one scalar compare)."""
    ones = ll.Constant(ll.IntType(lanes), (1 << lanes) - 1)
    return b.icmp_unsigned("==", b.bitcast(bits, ll.IntType(lanes)), ones)
