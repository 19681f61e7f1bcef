"""The `Machine` the lifter runs the shared semantics on: state as LLVM IR.

Where the interpreter holds a warp's registers and memory, `LiftMachine`
holds where they live in the lifted function: each PTX register is an
``alloca`` of an InfReg (``<L x iN>``, promoted to SSA values by LLVM),
``.param`` is the kernel's argument buffer, ``.shared`` a buffer per work
group, and ``.global``/generic addresses are host pointers. Every effect is
limited to the lanes that execute: register writes select under the
execution mask the lifter sets per block (`exec`), memory accesses are
masked by it and by the guard.

Loads and stores take the fastest exact form the addresses allow: one
masked vector access when the lanes' addresses are consecutive (``addr ==
addr[0] + lane * size``), one per work group when each group's are, one
scalar access broadcast when they are all equal (loads), and a masked
gather/scatter otherwise. When the lanes' offsets from a uniform base are
known at lift time (`Affine`: addresses computed from parameters, ``%ctaid``
and ``%tid``) the form is chosen then; otherwise run-time tests pick it. A row
a lane reads (writes) through one register at consecutive offsets
(`AccessGroup`) is one contiguous block: read (written) as whole vectors and
transposed in registers.

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
from ptxasw.ir.isa import MemoryEffect
from ptxasw.pirch_bridge.domain import Affine, LLVMDomain, Part, Vec

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


@dataclass(frozen=True)
class BlockFacts:
    """`LiftMachine`'s facts about registers written in the current block: their
    `Affine` forms, ``.f32`` raw floats (`Vec.raw`) and `Part`s."""

    forms: dict[str, Affine]
    raw: dict[str, ll.Value]
    parts: dict[str, Part]


@dataclass
class Specials:
    """The values of PTX's special registers in the lifted function."""

    values: dict[tuple[str, str | None], Vec]


@dataclass(frozen=True, eq=False)
class AccessGroup:
    """Loads (or stores) of one block through the same address register at ``factor``
    consecutive element offsets, with nothing between them that could see the
    difference if they ran at once (`plan_access_groups`).

    Why: a lane that keeps row ``i`` of a matrix in registers reads ``row + k`` for
    every ``k``: each access alone is a strided gather (scatter), but together they
    read one contiguous block, which ``factor`` vector accesses and an in-register
    transposition move much faster (`LiftMachine._group_load`)."""

    members: tuple[ir.Instruction, ...]
    """In program order: loads run all at the first, stores all at the last."""
    offsets: dict[int, int]
    """``id(member)`` -> its immediate offset."""
    lowest: int
    factor: int
    nbytes: int
    store: bool


def plan_access_groups(blocks: list[list[ir.Instruction]]) -> dict[int, AccessGroup]:
    """The `AccessGroup` of each grouped ``ld``/``st`` (by ``id``), block by block."""
    groups: dict[int, AccessGroup] = {}
    for block in blocks:
        for group in _block_groups(block):
            for member in group.members:
                groups[id(member)] = group
    return groups


def _block_groups(block: list[ir.Instruction]) -> list[AccessGroup]:
    """Runs of plain scalar ``ld`` (``st``) through one register in one block, cut where an
    instruction could observe the reordering (a store, atomic or fence between loads;
    any memory access between stores) or redefines the register."""
    found: list[AccessGroup] = []
    open_runs: dict[tuple[str, str, int, bool], list[ir.Instruction]] = {}

    def close(key: tuple[str, str, int, bool]) -> None:
        run = open_runs.pop(key)
        group = _as_group(run, key[2], key[3])
        if group is not None:
            found.append(group)

    for inst in block:
        key = _group_key(inst)
        effect = isa.memory_effect(inst)
        for k in list(open_runs):
            if k != key and _interferes(effect, store=k[3]):
                close(k)
        if key is not None:
            open_runs.setdefault(key, []).append(inst)
        written = {r.name for r in isa.defs(inst)}
        for k in list(open_runs):
            if k[0] in written:
                close(k)  # this instruction's own access used the old value; later ones would not
    for k in list(open_runs):
        close(k)
    return found


def _interferes(effect: MemoryEffect, store: bool) -> bool:
    """Whether an instruction between the members of a group forbids running them at once:
    loads move up past what cannot write memory; stores move down past what touches none."""
    if store:
        return effect != MemoryEffect.NONE
    return bool(effect & (MemoryEffect.WRITE | MemoryEffect.ATOMIC | MemoryEffect.FENCE | MemoryEffect.ASYNC))


def _group_key(inst: ir.Instruction) -> tuple[str, str, int, bool] | None:
    """(address register, space, bytes, store) of a groupable access, else None."""
    if inst.opcode not in ("ld", "st") or inst.guard is not None or isa.vector_width(inst) != 1:
        return None
    if any(m in inst.modifiers for m in (".volatile", ".relaxed", ".acquire", ".release", ".mmio")):
        return None
    address = inst.operands[1 if inst.opcode == "ld" else 0]
    nbytes = isa.access_bytes(inst)
    if not isinstance(address, ir.Address) or not isinstance(address.base, ir.Register) or not nbytes:
        return None
    if address.base.selector is not None:
        return None
    return (address.base.name, isa.state_space(inst) or "generic", nbytes, inst.opcode == "st")


def _as_group(run: list[ir.Instruction], nbytes: int, store: bool) -> AccessGroup | None:
    """The run as a group when its offsets are ``lowest + k * nbytes`` for ``k < 2**n``, n >= 1."""
    offsets = {}
    for inst in run:
        address = inst.operands[1 if inst.opcode == "ld" else 0]
        assert isinstance(address, ir.Address)
        offsets[id(inst)] = address.offset
    values = sorted(offsets.values())
    factor = len(values)
    if factor < 2 or factor & (factor - 1) or values != [values[0] + k * nbytes for k in range(factor)]:
        return None
    return AccessGroup(tuple(run), offsets, values[0], factor, nbytes, store)


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
        self._exec: Vec = dom.const(1, 1)
        self.inst: ir.Instruction | None = None
        # What is known of registers' lanes (`Affine`): for a register with one static
        # definition, from that definition on; for any register, from a write earlier
        # in the same block under the same execution mask (``exec`` forgets them).
        self.forms: dict[str, tuple[Affine, ir.Instruction]] = {}
        self.recent: dict[str, Affine] = {}
        self.recent_raw: dict[str, ll.Value] = {}  # `Vec.raw` of registers written in this block
        # `Vec.part` of registers written in this block by every lane (a shuffle reads any lane)
        self.recent_part: dict[str, Part] = {}
        # Grouped accesses (`AccessGroup`): the plan, loads already done by the group's
        # first member (id -> value), and stores held back until the group's last.
        self.groups: dict[int, AccessGroup] = {}
        self.grouped: dict[int, Vec] = {}
        self.deferred: dict[int, tuple[ll.Value, dict[int, Vec]]] = {}
        # Registers with one static definition whose value is known at lift time
        # (nvcc materialises shfl's lane operands in registers): key -> (value, def).
        self.single_defs: dict[str, ir.Instruction] = {}
        self.dominates: Callable[[ir.Instruction, ir.Instruction], bool] = lambda a, b: False
        self.constants: dict[str, tuple[Vec, ir.Instruction]] = {}

    @property
    def b(self) -> ll.IRBuilder:
        return self.dom.b

    @property
    def exec(self) -> Vec:
        """The lanes that run the current instruction (the lifter sets it per block)."""
        return self._exec

    @exec.setter
    def exec(self, lanes: Vec) -> None:
        assert not self.deferred, "a grouped store's last member did not run"
        self._exec = lanes
        self.dom.active = None if lanes.known is not None and all(lanes.known) else lanes
        self.recent = {}  # a new block, or other lanes: earlier writes may not be theirs
        self.recent_raw = {}
        self.recent_part = {}
        self.grouped = {}

    def facts(self) -> BlockFacts:
        """What this block's writes told so far (`recent` and the like), to put back or
        merge around a speculated run (`restore`, `merge_facts`)."""
        return BlockFacts(dict(self.recent), dict(self.recent_raw), dict(self.recent_part))

    def restore(self, facts: BlockFacts) -> None:
        self.recent, self.recent_raw, self.recent_part = dict(facts.forms), dict(facts.raw), dict(facts.parts)

    def merge_facts(self, fast: BlockFacts, slow: BlockFacts, written: set[str]) -> None:
        """After a run lifted twice (fast, and in a cold block with exact NaN rules):
        what holds on both paths. The values behind ``raw`` and ``parts`` of registers
        the run wrote exist on one path only; an `Affine` form is kept where both
        paths derived the same one (the same entry-block base, the same offsets)."""

        def same(a: Affine, c: Affine | None) -> bool:
            return c is not None and a.base is c.base and a.offsets == c.offsets and a.nuw == c.nuw

        self.recent = {k: v for k, v in fast.forms.items() if k not in written or same(v, slow.forms.get(k))}
        self.recent_raw = {k: v for k, v in fast.raw.items() if k not in written}
        self.recent_part = {k: v for k, v in fast.parts.items() if k not in written}

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
        key = _key(reg)
        form = self.recent.get(key)
        if form is None:
            single = self.forms.get(key)
            if single is not None and self.inst is not None and self.dominates(single[1], self.inst):
                form = single[0]
        raw, part = self.recent_raw.get(key), self.recent_part.get(key)
        value = Vec(self.b.load(slot), stored, None, form, raw, part)
        return dm.resize(self.dom, value, width, False)

    def write(self, reg: ir.Register, value: Vec) -> None:
        if isa.is_special_register(reg.name):
            raise self.refuse(f"write to special register {reg.name}")
        slot, stored = self.registers.slot(reg, value.width)
        new = dm.resize(self.dom, value, stored, False)
        key = _key(reg)
        if new.known is not None and self.inst is not None and self.single_defs.get(key) is self.inst:
            self.constants[key] = (new, self.inst)
        form = self.dom.lanes_of(new)
        self.recent.pop(key, None)
        self.recent_raw.pop(key, None)
        self.recent_part.pop(key, None)
        if new.raw is not None:
            self.recent_raw[key] = new.raw
        everyone = self.exec.known is not None and all(self.exec.known)
        if new.part is not None and everyone:
            self.recent_part[key] = new.part
        if form is not None:
            self.recent[key] = form
            if self.inst is not None and self.single_defs.get(key) is self.inst:
                self.forms[key] = (form, self.inst)
        if self.exec.known is None or not all(self.exec.known):
            new = self.dom.ite(self.exec, new, Vec(self.b.load(slot), stored))
        self.b.store(new.value, slot)

    # ---- symbols ----------------------------------------------------------------------------
    def symbol_address(self, name: str, width: int) -> Vec:
        host = self.host_symbols.get(name)
        if host is not None:  # module variables live in host memory: their address is a pointer
            return dm.resize(self.dom, self._pointer(host), width, False)
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
            i64 = ll.IntType(64)
            stride = d.hoisted(("stride",), lambda e: e.zext(self.shared_stride, i64))
            return self.shared, d.mul(group, d.uniform(stride, 64))
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
            addr = d.add(addr, self._pointer(base))
        return addr

    def _pointer(self, ptr: ll.Value) -> Vec:
        """A pointer that dominates the function (an argument, a global) as a uniform address."""
        d = self.dom
        scalar = d.hoisted(("ptrtoint", id(ptr)), lambda e: e.ptrtoint(ptr, ll.IntType(64)))
        return d.uniform(scalar, 64)

    def load(self, inst: ir.Instruction, space: str, address: Vec, nbytes: int, cond: Vec | None) -> Vec:
        self.inst = inst
        width = nbytes * 8
        mask = self._mask(cond)
        space = self._param_space(space, address)
        if space == ".param" and address.known is not None and len(set(address.known)) == 1:
            return self._param_scalar(address.known[0], width)
        addrs = self._addresses(space, address)
        group = self.groups.get(id(inst))
        if group is not None:
            done = self.grouped.pop(id(inst), None)
            if done is not None:
                return done
            if inst is group.members[0]:
                values = self._group_load(group, inst, addrs, mask)
                if values is not None:
                    self.grouped.update(values)
                    return self.grouped.pop(id(inst))
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
        addrs, mask = self._addresses(space, address), self._mask(cond)
        group = self.groups.get(id(inst))
        if group is not None:
            if inst is group.members[0]:
                start = self._group_start(group, inst, addrs, mask)
                if start is not None:
                    self.deferred[id(group)] = (start, {})
            held = self.deferred.get(id(group))
            if held is not None:
                held[1][group.offsets[id(inst)]] = value
                if inst is group.members[-1]:
                    del self.deferred[id(group)]
                    self._group_store(group, *held)
                return
        self._access(addrs, nbytes, mask, value)

    # ---- grouped accesses: one contiguous block, transposed in registers ----------------------
    def _group_start(
        self, group: AccessGroup, inst: ir.Instruction, addrs: Vec, mask: Vec
    ) -> ll.Value | None:
        """The block's first address when every lane runs and lane ``i``'s member at
        the lowest offset accesses ``start + i * factor * nbytes``; else None."""
        form = self.dom.lanes_of(addrs)
        if form is None or mask.known is None or not all(mask.known):
            return None
        step = group.factor * group.nbytes
        if any(_signed64(o - form.offsets[0]) != i * step for i, o in enumerate(form.offsets)):
            return None
        return self.dom.base_plus(form, form.offsets[0] - (group.offsets[id(inst)] - group.lowest), 64)

    def _group_load(
        self, group: AccessGroup, inst: ir.Instruction, addrs: Vec, mask: Vec
    ) -> dict[int, Vec] | None:
        """Every member's value, read as ``factor`` vectors and transposed (id -> value)."""
        start = self._group_start(group, inst, addrs, mask)
        if start is None:
            return None
        d, b = self.dom, self.b
        chunk = d.lanes * group.nbytes
        i64 = ll.IntType(64)
        chunks = [
            self._vector_access(b.add(start, ll.Constant(i64, c * chunk)), group.nbytes, mask, None).value
            for c in range(group.factor)
        ]
        columns = _deinterleave(b, chunks, d.lanes)
        width = group.nbytes * 8
        return {
            id(m): Vec(columns[(group.offsets[id(m)] - group.lowest) // group.nbytes], width)
            for m in group.members
        }

    def _group_store(self, group: AccessGroup, start: ll.Value, values: dict[int, Vec]) -> None:
        """The held-back stores: the columns interleaved into ``factor`` vectors, stored in order."""
        d, b = self.dom, self.b
        columns = [values[group.lowest + k * group.nbytes].value for k in range(group.factor)]
        chunk = d.lanes * group.nbytes
        full = d.const(1, 1)
        width = group.nbytes * 8
        for c, vec in enumerate(_interleave(b, columns, d.lanes)):
            ptr = b.add(start, ll.Constant(ll.IntType(64), c * chunk))
            self._vector_access(ptr, group.nbytes, full, Vec(vec, width))

    def _param_scalar(self, offset: int, width: int) -> Vec:
        """A kernel parameter: read once, in the entry, as parameters never change."""

        def load(e: ll.IRBuilder) -> ll.Value:
            ptr = e.gep(self.params, [ll.Constant(ll.IntType(64), offset)])
            return e.load(e.bitcast(ptr, ll.IntType(width).as_pointer()), align=1)

        return self.dom.uniform(self.dom.hoisted(("param", offset, width), load), width)

    def _access(self, addrs: Vec, nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """A masked load (``value`` None) or store at per-lane addresses, in the
        fastest form their pattern allows: known at lift time when the lanes'
        offsets from a uniform base are (`Affine`), else tested at run time."""
        form = self.dom.lanes_of(addrs)
        if form is not None:
            return self._static_access(form, nbytes, mask, value)
        d, b = self.dom, self.b
        width = nbytes * 8
        i32 = ll.IntType(32)
        first = b.extract_element(addrs.value, ll.Constant(i32, 0))
        stride = d._const_lanes([i * nbytes for i in range(d.lanes)], 64)
        consecutive = _all(b, d.eq(addrs, d.add(d.splat(first, 64), stride)).value, d.lanes)
        fn = b.function
        vec_bb = fn.append_basic_block("contiguous")
        other_bb = fn.append_basic_block("scattered")
        done_bb = fn.append_basic_block("accessed")
        b.cbranch(consecutive, vec_bb, other_bb)
        results: list[tuple[ll.Value, ll.Block]] = []

        b.position_at_end(vec_bb)
        results.append((self._vector_access(first, nbytes, mask, value).value, b.block))
        b.branch(done_bb)

        b.position_at_end(other_bb)
        if d.wg_pack > 1:  # each work group's lanes consecutive: one vector access per group
            results += self._segmented(addrs, nbytes, mask, value, done_bb)
        if value is None:
            same = _all(b, d.eq(addrs, d.splat(first, 64)).value, d.lanes)
            uniform_bb = fn.append_basic_block("uniform")
            gather_bb = fn.append_basic_block("gather")
            b.cbranch(b.and_(same, _any(b, mask.value, d.lanes)), uniform_bb, gather_bb)
            b.position_at_end(uniform_bb)
            scalar = b.load(b.inttoptr(first, ll.IntType(width).as_pointer()), align=nbytes)
            results.append((d.splat(scalar, width).value, b.block))
            b.branch(done_bb)
            b.position_at_end(gather_bb)
        results.append((self._scattered(addrs.value, nbytes, mask, value).value, b.block))
        b.branch(done_bb)

        b.position_at_end(done_bb)
        if value is not None:
            return value
        phi = b.phi(d.vtype(width))
        for v, block in results:
            phi.add_incoming(v, block)
        return Vec(phi, width)

    def _scattered(self, addrs: ll.Value, nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """A masked gather (``value`` None) or scatter at the lanes' 64-bit addresses."""
        d, b = self.dom, self.b
        width = nbytes * 8
        vt = d.vtype(width)
        ptrs = b.inttoptr(addrs, ll.VectorType(ll.IntType(width).as_pointer(), d.lanes))
        align = ll.Constant(ll.IntType(32), nbytes)
        if value is None:
            name = f"llvm.masked.gather.{d.suffix(width)}.v{d.lanes}p0i{width}"
            return Vec(d.call(name, [ptrs, align, mask.value, ll.Constant(vt, None)], vt), width)
        name = f"llvm.masked.scatter.{d.suffix(width)}.v{d.lanes}p0i{width}"
        d.call(name, [value.value, ptrs, align, mask.value], ll.VoidType())
        return value

    def _static_access(self, form: Affine, nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """`_access` where lane ``i``'s address is ``first + rel[i]`` with ``rel`` known:
        the form the run-time tests would pick, chosen now."""
        d, b = self.dom, self.b
        first = d.base_plus(form, form.offsets[0], 64)
        rel = [_signed64(o - form.offsets[0]) for o in form.offsets]
        lanes, size = d.lanes, d.wg_size
        if all(r == i * nbytes for i, r in enumerate(rel)):
            return self._vector_access(first, nbytes, mask, value)
        starts = [rel[i - i % size] for i in range(lanes)]
        if d.wg_pack > 1 and all(r == starts[i] + i % size * nbytes for i, r in enumerate(rel)):
            parts = [d.base_plus(form, form.offsets[g * size], 64) for g in range(d.wg_pack)]
            return self._group_access(parts, nbytes, mask, value)
        if value is None and all(r == 0 for r in rel):
            return self._uniform_load(first, nbytes, mask)
        offsets = ll.Constant(d.vtype(64), [r % (1 << 64) for r in rel])
        return self._scattered(b.add(d.splat(first, 64).value, offsets), nbytes, mask, value)

    def _vector_access(self, first: ll.Value, nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """One masked vector load or store of consecutive elements from address ``first``."""
        d, b = self.dom, self.b
        width = nbytes * 8
        vt = d.vtype(width)
        vptr = b.inttoptr(first, vt.as_pointer())
        align = ll.Constant(ll.IntType(32), nbytes)
        suffix = d.suffix(width)
        if value is None:
            name = f"llvm.masked.load.{suffix}.p0{suffix}"
            return Vec(d.call(name, [vptr, align, mask.value, ll.Constant(vt, None)], vt), width)
        d.call(
            f"llvm.masked.store.{suffix}.p0{suffix}", [value.value, vptr, align, mask.value], ll.VoidType()
        )
        return value

    def _group_access(self, starts: list[ll.Value], nbytes: int, mask: Vec, value: Vec | None) -> Vec:
        """One vector access per work group, group ``g``'s lanes consecutive from ``starts[g]``."""
        d, b = self.dom, self.b
        size, lanes = d.wg_size, d.lanes
        width = nbytes * 8
        part_t = ll.VectorType(ll.IntType(width), size)
        suffix = f"v{size}i{width}"
        align = ll.Constant(ll.IntType(32), nbytes)
        result: ll.Value = ll.Constant(d.vtype(width), None)
        for g, start in enumerate(starts):
            lanes_g = _lane_range(g * size, size)
            ptr = b.inttoptr(start, part_t.as_pointer())
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
        return value if value is not None else Vec(result, width)

    def _uniform_load(self, address: ll.Value, nbytes: int, mask: Vec) -> Vec:
        """Every lane reads the same address: one scalar load, broadcast, when a lane runs."""
        d, b = self.dom, self.b
        width = nbytes * 8
        ptr = b.inttoptr(address, ll.IntType(width).as_pointer())
        if mask.known is not None and all(mask.known):
            return d.splat(b.load(ptr, align=nbytes), width)
        if mask.known is not None and not any(mask.known):
            return d.const(0, width)
        before = b.block
        with b.if_then(_any(b, mask.value, d.lanes)):
            loaded = d.splat(b.load(ptr, align=nbytes), width).value
            inside = b.block
        phi = b.phi(d.vtype(width))
        phi.add_incoming(ll.Constant(d.vtype(width), None), before)
        phi.add_incoming(loaded, inside)
        return Vec(phi, width)

    def _segmented(
        self, addrs: Vec, nbytes: int, mask: Vec, value: Vec | None, done_bb: ll.Block
    ) -> list[tuple[ll.Value, ll.Block]]:
        """When every work group of the pack accesses consecutive addresses (each from
        its own base, as a batched kernel's items do), one vector access per group,
        and on to ``done_bb``; the builder is left where the other cases continue."""
        d, b = self.dom, self.b
        size, lanes = d.wg_size, d.lanes
        starts = ll.Constant(ll.VectorType(ll.IntType(32), lanes), [i // size * size for i in range(lanes)])
        first = Vec(b.shuffle_vector(addrs.value, ll.Constant(addrs.value.type, ll.Undefined), starts), 64)
        offsets = d._const_lanes([i % size * nbytes for i in range(lanes)], 64)
        segmented = _all(b, d.eq(addrs, d.add(first, offsets)).value, lanes)
        fn = b.function
        seg_bb = fn.append_basic_block("segmented")
        rest_bb = fn.append_basic_block("scattered.rest")
        b.cbranch(segmented, seg_bb, rest_bb)

        b.position_at_end(seg_bb)
        group_starts = [
            b.extract_element(addrs.value, ll.Constant(ll.IntType(32), g * size)) for g in range(d.wg_pack)
        ]
        result = self._group_access(group_starts, nbytes, mask, value)
        done = [(result.value, b.block)] if value is None else []
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


def _split_order(factor: int, lanes: int) -> list[int]:
    """Which column (``k``) each vector `_deinterleave` returns holds, in its order."""
    seqs = [list(range(c * lanes, (c + 1) * lanes)) for c in range(factor)]

    def split(vecs: list[list[int]]) -> list[list[int]]:
        if len(vecs) == 1:
            return vecs
        pairs = [vecs[m] + vecs[m + 1] for m in range(0, len(vecs), 2)]
        return split([p[0::2] for p in pairs]) + split([p[1::2] for p in pairs])

    out = split(seqs)
    ks = [v[0] % factor for v in out]
    assert all(v == [i * factor + k for i in range(lanes)] for v, k in zip(out, ks, strict=True))
    return ks


def _deinterleave(b: ll.IRBuilder, chunks: list[ll.Value], lanes: int) -> list[ll.Value]:
    """Column ``k`` of the ``factor`` chunks read as one sequence ``S`` (lane ``i`` gets
    ``S[i * factor + k]``), for ``factor`` a power of two: ``log2(factor)`` rounds of
    two-operand shuffles splitting even from odd elements (``factor * log2(factor)``)."""
    even = _lane_list(list(range(0, 2 * lanes, 2)))
    odd = _lane_list(list(range(1, 2 * lanes, 2)))

    def split(vecs: list[ll.Value]) -> list[ll.Value]:
        if len(vecs) == 1:
            return vecs
        pairs = [(vecs[m], vecs[m + 1]) for m in range(0, len(vecs), 2)]
        return split([b.shuffle_vector(x, y, even) for x, y in pairs]) + split(
            [b.shuffle_vector(x, y, odd) for x, y in pairs]
        )

    out = split(chunks)
    columns: list[ll.Value] = [None] * len(chunks)  # type: ignore[list-item]
    for vec, k in zip(out, _split_order(len(chunks), lanes), strict=True):
        columns[k] = vec
    return columns


def _interleave(b: ll.IRBuilder, columns: list[ll.Value], lanes: int) -> list[ll.Value]:
    """The inverse of `_deinterleave`: chunks ``c`` of the sequence whose element
    ``i * factor + k`` is lane ``i`` of ``columns[k]``."""
    order = _split_order(len(columns), lanes)
    low = _lane_list([j // 2 + (j % 2) * lanes for j in range(lanes)])
    high = _lane_list([(lanes + j) // 2 + ((lanes + j) % 2) * lanes for j in range(lanes)])

    def join(parts: list[ll.Value]) -> list[ll.Value]:
        if len(parts) == 1:
            return parts
        half = len(parts) // 2
        out = []
        for e, o in zip(join(parts[:half]), join(parts[half:]), strict=True):
            out += [b.shuffle_vector(e, o, low), b.shuffle_vector(e, o, high)]
        return out

    return join([columns[k] for k in order])


def _signed64(x: int) -> int:
    """``x`` mod 2**64 as a signed 64-bit integer."""
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


def _key(reg: ir.Register) -> str:
    return reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"


register_key = _key
"""The name under which `LiftMachine` keeps facts about a register (``%r1``, ``%tid.x``)."""


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
