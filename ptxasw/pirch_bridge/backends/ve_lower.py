"""Lower a lifted module to the NEC SX-Aurora vector intrinsics (``llvm.ve.vl.*``).

The lifter's IR computes on ``<N x T>`` vectors (N lanes, N <= 256 here).
This pass rebuilds the module instruction by instruction: every such value
becomes one VE vector register (``<256 x double>``, vector length N) and
every vector operation a call of a VE intrinsic (`ve_intrinsics.SIGNATURES`);
scalar code is copied as it is. Within an element, 64-bit lanes fill it,
32-bit integers sit in its lower half (the upper half is left undefined, so
every operation reads lower words only: the ``w`` forms, or an explicit zero
or sign extension) and ``float`` sits in its upper half, as the VE's
single-precision forms want.

LLVM 14's VE back end can spill neither vector nor mask registers, so no
register value may live long:

- ``<N x i1>`` lane masks are vector registers of 0 and all-ones elements,
  turned into a VE mask register (``vfmk``) right where an instruction takes one;
- the lifter's register allocas, vector phis and values used outside their
  block live in stack slots (``[256 x i64]``), written with ``vst`` and read
  with ``vld`` at each use; a phi's slot is written on its incoming edges
  (a block per edge, every incoming value read before any slot is written).

Masked loads use gathers (``vgt*`` with a mask): ``vld`` has no mask, and a
lane outside the mask may point past the buffer. ``bitcast <N x i1> to iN``
only feeds the lifter's "any/all/same lanes" tests, so those comparisons are
lowered to population counts (``pcvm``) and the integer never exists.
Whatever has no exact VE form raises `PtxError` naming the instruction.

For the emulation (`lower` with ``memory=True``) the same calls pass their
registers by pointer, so the host compiler never moves 2 KiB values around.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.backends.ve_intrinsics import PREFIX, SIGNATURES

__all__ = ["MAX_LANES", "lower", "max_lanes"]

#: The VE's vector length: the most lanes a lifted value may have.
MAX_LANES = 256

_I1 = ll.IntType(1)
_I32 = ll.IntType(32)
_I64 = ll.IntType(64)
_I8P = ll.IntType(8).as_pointer()
_REGISTER_TYPES = ("<256 x double>", "<256 x i1>")


@dataclass(frozen=True)
class _Registers:
    """The register types: 256 elements on the VE, fewer in an emulation (`register_width`)."""

    width: int = MAX_LANES

    @property
    def V(self) -> ll.VectorType:
        return ll.VectorType(ll.DoubleType(), self.width)

    @property
    def M(self) -> ll.VectorType:
        return ll.VectorType(_I1, self.width)

    def of(self, text: str) -> ll.Type:
        """A `SIGNATURES` type."""
        table = {"<256 x double>": self.V, "<256 x i1>": self.M, "i64": _I64, "i32": _I32, "i8*": _I8P}
        return table.get(text, ll.VoidType())

    def map(self, t: ll.Type) -> ll.Type:
        """The lowered type: vectors become registers; pointers to them follow."""
        if isinstance(t, ll.VectorType):
            return self.V  # lane masks too (see the module documentation)
        if isinstance(t, ll.PointerType):
            return self.map(t.pointee).as_pointer(t.addrspace)
        if isinstance(t, ll.ArrayType):
            return ll.ArrayType(self.map(t.element), t.count)
        return t


@dataclass(frozen=True)
class _MaskBits:
    """``bitcast <N x i1> %m to iN``: only ever compared (see the module documentation)."""

    mask: ll.Value
    lanes: int


@dataclass(frozen=True)
class _Slot:
    """A vector value kept in a stack slot: used outside its block, or a phi."""

    ptr: ll.Value
    lanes: int


@dataclass(frozen=True)
class _Shape:
    """How a vector type's lanes sit in a VE register."""

    lanes: int
    kind: str  # "i64" (also pointers and double's bits), "i32", "float", "double", "mask", "i16", "i8"

    @property
    def size(self) -> int:
        return {"i64": 8, "double": 8, "i32": 4, "float": 4, "i16": 2, "i8": 1, "mask": 0}[self.kind]


def _shape(t: ll.Type, what: str) -> _Shape:
    if not isinstance(t, ll.VectorType):
        raise PtxError(f"--target ve: {what} is not a vector")
    if t.count > MAX_LANES:
        raise PtxError(
            f"--target ve: {t.count} lanes do not fit a VE vector register ({MAX_LANES}); "
            "lower --wg-pack or the block size"
        )
    e = t.element
    if isinstance(e, ll.IntType):
        kind = {1: "mask", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}.get(e.width)
        if kind is None:
            raise PtxError(f"--target ve: no VE vector form for {t} ({what})")
    elif isinstance(e, ll.DoubleType):
        kind = "double"
    elif isinstance(e, ll.FloatType):
        kind = "float"
    elif isinstance(e, ll.PointerType):
        kind = "i64"
    else:
        raise PtxError(f"--target ve: no VE vector form for {t} ({what})")
    return _Shape(t.count, kind)


def _lane_bits(c: ll.Constant, kind: str) -> list[int]:
    """A constant vector's lanes as the 64-bit element patterns they are lowered to."""
    t = c.type
    n = t.count
    raw = c.constant
    values = [0] * n if raw is None or raw is ll.Undefined or isinstance(raw, (str, bytes)) else raw
    out: list[int] = []
    for v in values:
        x = v.constant if isinstance(v, ll.Constant) else v
        if x is None or x is ll.Undefined:
            x = 0
        if kind == "double":
            out.append(struct.unpack("<Q", struct.pack("<d", float(x)))[0])
        elif kind == "float":
            out.append(struct.unpack("<I", struct.pack("<f", float(x)))[0] << 32)
        elif kind == "mask":
            out.append(0xFFFF_FFFF_FFFF_FFFF if x else 0)
        else:
            out.append(int(x) & 0xFFFF_FFFF_FFFF_FFFF)
    return out


class _FunctionLowering:
    """One function: a new body whose vector values are VE registers."""

    def __init__(self, owner: _ModuleLowering, old: ll.Function, new: ll.Function) -> None:
        self.owner = owner
        self.old = old
        self.new = new
        self.values: dict[int, object] = {}
        self.keep: list[object] = []  # ids stay unique while the map lives
        self.blocks = {id(b): new.append_basic_block(b.name) for b in old.blocks}
        self.b = ll.IRBuilder()
        self.phis: list[tuple[ll.PhiInstr, ll.PhiInstr]] = []
        self.inst: ll.Instruction | None = None
        self.block: ll.Block | None = None  # the old block being lowered
        self.buffer: ll.Value | None = None
        self.virtual: set[int] = set()
        self.undef_slot: ll.Value | None = None
        self.edges: dict[tuple[int, int], ll.Block] = {}
        for a, na in zip(old.args, new.args, strict=True):
            na.name = a.name
            self._set(a, na)
        self.b.position_at_end(self.blocks[id(old.blocks[0])])
        self.slots: dict[int, _Slot] = {}
        self.registers: set[int] = set()
        self._plan_slots()

    def _plan_slots(self) -> None:
        """Which vector values live in stack slots, the VE way of keeping registers: LLVM 14's
        VE back end cannot spill vector or mask registers, so no vector value may live across
        blocks in a register. Slots are the lifter's register allocas, vector phis and values
        used outside their block; they are read with ``vld`` and written with ``vst``."""
        for blk in self.old.blocks:
            for inst in blk.instructions:
                if isinstance(inst, ll.AllocaInstr) and isinstance(inst.allocated_type, ll.VectorType):
                    self.registers.add(id(inst))
                if isinstance(inst, ll.PhiInstr):
                    if isinstance(inst.type, ll.VectorType):
                        self._slot(inst)
                    for value, _ in inst.incomings:  # read on the edge, a block of its own
                        if _is_vector_inst(value):
                            self._slot(value)
                    continue
                for op in inst.operands:
                    if _is_vector_inst(op) and op.parent is not blk:
                        self._slot(op)

    def _slot(self, value: ll.Instruction) -> None:
        if id(value) in self.slots:
            return
        lanes = _shape(value.type, "a value used across blocks").lanes
        self.slots[id(value)] = _Slot(self.register_slot(value.name), lanes)
        self.keep.append(value)

    def register_slot(self, name: str = "") -> ll.Value:
        """A register's worth of stack (``[256 x i64]``) in the entry block, as ``i8*``."""
        entry = self.new.entry_basic_block
        saved = self.b.block
        self.b.position_at_start(entry)
        slot = self.b.alloca(ll.ArrayType(_I64, self.owner.regs.width), name=f"{name}.slot" if name else "")
        slot.align = 8
        ptr = self.b.bitcast(slot, _I8P)
        if saved is not None:
            self.b.position_at_end(saved)
        return ptr

    def load_slot(self, ptr: ll.Value, lanes: int) -> ll.Value:
        return self.call("vld.vssl", ll.Constant(_I64, 8), ptr, self.vl(lanes))

    def store_slot(self, value: ll.Value, ptr: ll.Value, lanes: int) -> None:
        self.call("vst.vssl", value, ll.Constant(_I64, 8), ptr, self.vl(lanes))

    # ---- values ----------------------------------------------------------------------------------
    def _set(self, old: object, new: object) -> None:
        self.values[id(old)] = new
        self.keep.append(old)

    def refuse(self, why: str) -> PtxError:
        inst = self.inst
        text = str(inst).strip() if inst is not None else "?"
        return PtxError(f"--target ve: {why}: {text[:160]}")

    def get(self, v: ll.Value) -> ll.Value:
        """The lowered value of ``v`` (constants are materialised here; values in slots
        are loaded unless defined in this block)."""
        slot = self.slots.get(id(v))
        if slot is not None and (isinstance(v, ll.PhiInstr) or v.parent is not self.block):
            return self.load_slot(slot.ptr, slot.lanes)
        hit = self.values.get(id(v))
        if hit is not None:
            if isinstance(hit, _MaskBits):
                raise self.refuse("a lane mask used as an integer other than in an any/all/same test")
            return hit  # type: ignore[return-value]
        if isinstance(v, ll.Constant) and isinstance(v.type, ll.VectorType):
            return self.constant(v)
        if isinstance(v, (ll.Constant, ll.GlobalValue)):
            if isinstance(v, ll.GlobalValue):
                return self.owner.globals[v.name]
            if isinstance(v.type, (ll.PointerType, ll.ArrayType)):
                return ll.Constant(self.owner.regs.map(v.type), v.constant)
            return v
        if isinstance(v, ll.Block):
            return self.blocks[id(v)]
        raise self.refuse(f"a value defined later than its use ({v.get_reference()})")

    def call(self, name: str, *args: ll.Value) -> ll.Value:
        """Call intrinsic ``name``. In memory mode registers are pointers: a result goes to
        a fresh virtual slot (`assign_slots` maps those onto a few real ones)."""
        fn = self.owner.intrinsic(name)
        ret = SIGNATURES[name][0]
        if self.owner.memory and ret in _REGISTER_TYPES:
            slot = self._virtual(self.owner.regs.of(ret))
            self.b.call(fn, [slot, *args])
            return slot
        return self.b.call(fn, list(args))

    def _virtual(self, t: ll.Type) -> ll.Value:
        entry = self.new.entry_basic_block
        saved = self.b.block
        self.b.position_at_start(entry)
        slot = self.b.alloca(t)
        self.b.position_at_end(saved)
        self.virtual.add(id(slot))
        self.keep.append(slot)
        return slot

    def undefined(self) -> ll.Value:
        """A register nobody wrote."""
        if not self.owner.memory:
            return ll.Constant(self.owner.regs.V, ll.Undefined)
        if self.undef_slot is None:
            saved = self.b.block
            self.b.position_at_start(self.new.entry_basic_block)
            self.undef_slot = self.b.alloca(self.owner.regs.V, name="ve.undef")
            self.b.position_at_end(saved)
        return self.undef_slot

    def assign_slots(self) -> None:
        """Memory mode: map the virtual result slots onto as few real ones as the values
        live at once need (no register value lives across blocks: see `_plan_slots`),
        by a linear scan of each block."""
        entry = self.new.entry_basic_block
        for v in [i for i in entry.instructions if id(i) in self.virtual]:
            entry.instructions.remove(v)
        free: dict[str, list[ll.Value]] = {}
        saved = self.b.block
        for blk in self.new.blocks:
            last: dict[int, int] = {}
            for k, inst in enumerate(blk.instructions):
                for op in inst.operands:
                    if id(op) in self.virtual:
                        last[id(op)] = k
            mapped: dict[int, ll.Value] = {}
            for k, inst in enumerate(list(blk.instructions)):
                ops = list(inst.operands)
                for j, op in enumerate(ops):
                    if id(op) in self.virtual:
                        ops[j] = mapped.get(id(op)) or self._real_slot(op, mapped, free)
                if ops != list(inst.operands):
                    inst.operands = tuple(ops) if isinstance(inst.operands, tuple) else ops
                    inst._clear_string_cache()
                for vid in [v for v, at in last.items() if at == k]:
                    del last[vid]
                    real = mapped.pop(vid, None)
                    if real is not None:
                        free.setdefault(str(real.type), []).append(real)
        if saved is not None:
            self.b.position_at_end(saved)

    def _real_slot(
        self, op: ll.Value, mapped: dict[int, ll.Value], free: dict[str, list[ll.Value]]
    ) -> ll.Value:
        pool = free.setdefault(str(op.type), [])
        if pool:
            real = pool.pop()
        else:
            saved = self.b.block
            self.b.position_at_start(self.new.entry_basic_block)
            real = self.b.alloca(op.type.pointee, name="ve.reg")  # type: ignore[attr-defined]
            self.b.position_at_end(saved)
        mapped[id(op)] = real
        return real

    def vl(self, n: int) -> ll.Constant:
        return ll.Constant(_I32, n)

    def splat64(self, bits: int, n: int) -> ll.Value:
        return self.call("vbrdl.vsl", ll.Constant(_I64, bits), self.vl(n))

    def constant(self, c: ll.Constant) -> ll.Value:
        s = _shape(c.type, "a constant")
        return self.lanes_constant(_lane_bits(c, s.kind))

    def lanes_constant(self, bits: list[int]) -> ll.Value:
        """A vector of 64-bit patterns: a broadcast if uniform, else a load from a constant table."""
        n = len(bits)
        if len(set(bits)) == 1:
            return self.splat64(bits[0], n)
        table = self.owner.table(bits)
        ptr = self.b.bitcast(table, _I8P)
        return self.call("vld.vssl", ll.Constant(_I64, 8), ptr, self.vl(n))

    def scalar_bits(self, x: ll.Value, kind: str) -> ll.Value:
        """A scalar lane value as the 64-bit element it is stored as."""
        b = self.b
        if kind == "double":
            return b.bitcast(x, _I64)
        if kind == "float":
            return b.shl(b.zext(b.bitcast(x, _I32), _I64), ll.Constant(_I64, 32))
        if isinstance(x.type, ll.PointerType):
            return b.ptrtoint(x, _I64)
        if x.type.width == 64:
            return x
        return b.sext(x, _I64) if kind == "mask" else b.zext(x, _I64)

    def bits_scalar(self, bits: ll.Value, t: ll.Type, kind: str) -> ll.Value:
        b = self.b
        if kind == "double":
            return b.bitcast(bits, t)
        if kind == "float":
            return b.bitcast(b.trunc(b.lshr(bits, ll.Constant(_I64, 32)), _I32), t)
        if isinstance(t, ll.PointerType):
            return b.inttoptr(bits, t)
        if t.width == 64:
            return bits
        return b.trunc(bits, t)

    def as_mask(self, v: ll.Value, n: int) -> ll.Value:
        """A lane mask (elements 0 or not) as a VE mask register, for the next instruction."""
        return self.call("vfmklne.mvl", v, self.vl(n))

    def from_mask(self, m: ll.Value, n: int) -> ll.Value:
        """A VE mask register as lanes of 0 and all ones."""
        return self.call("vmrg.vvvml", self.splat64(0, n), self.splat64((1 << 64) - 1, n), m, self.vl(n))

    def low32(self, v: ll.Value, n: int) -> ll.Value:
        """Zero-extend the lower words (the upper halves of 32-bit lanes are undefined)."""
        return self.zext_bits(v, 32, n)

    def zext_bits(self, v: ll.Value, width: int, n: int) -> ll.Value:
        """The low ``width`` bits of each element, zero-extended."""
        return self.call("vand.vsvl", ll.Constant(_I64, (1 << width) - 1), v, self.vl(n))

    def sext_bits(self, v: ll.Value, width: int, n: int) -> ll.Value:
        """The low ``width`` bits of each element, sign-extended."""
        if width == 32:
            return self.call("vaddswsx.vsvl", ll.Constant(_I32, 0), v, self.vl(n))
        up = self.call("vsll.vvsl", v, ll.Constant(_I64, 64 - width), self.vl(n))
        return self.call("vsral.vvsl", up, ll.Constant(_I64, 64 - width), self.vl(n))

    def scratch(self) -> ll.Value:
        """A 4 KiB stack buffer (two registers) for lane permutations, in the entry block."""
        if self.buffer is None:
            entry = self.new.entry_basic_block
            saved = self.b.block
            self.b.position_at_start(entry)
            buf = self.b.alloca(ll.ArrayType(_I64, 2 * MAX_LANES), name="ve.lanes")
            buf.align = 8
            self.buffer = self.b.bitcast(buf, _I8P)
            self.b.position_at_end(saved)
        return self.buffer

    # ---- the walk ------------------------------------------------------------------------------
    def run(self) -> None:
        for blk in self._order():
            self.block = blk
            self.b.position_at_end(self.blocks[id(blk)])
            for inst in blk.instructions:
                self.inst = inst
                self.lower(inst)
        for old, new in self.phis:
            self.inst = old
            self.block = None
            for value, blk in old.incomings:
                came = self.edges.get((id(blk), id(old.parent)), self.blocks[id(blk)])
                new.add_incoming(self.get(value), came)

    def target(self, succ: ll.Block) -> ll.Block:
        """Where a branch to ``succ`` goes: a block on the edge that writes the slots of
        ``succ``'s vector phis first (all incoming values read before any is written), or
        ``succ`` itself."""
        phis = [i for i in succ.instructions if isinstance(i, ll.PhiInstr) and id(i) in self.slots]
        if not phis:
            return self.blocks[id(succ)]
        key = (id(self.block), id(succ))
        edge = self.edges.get(key)
        if edge is None:
            saved = self.b.block
            edge = self.new.append_basic_block(f"{self.blocks[id(succ)].name}.from")
            self.b.position_at_end(edge)
            pred = self.block
            self.block = None  # the edge's own block: values from slots
            values = [self.get(dict((id(b), v) for v, b in p.incomings)[id(pred)]) for p in phis]
            self.block = pred
            for p, v in zip(phis, values, strict=True):
                slot = self.slots[id(p)]
                self.store_slot(v, slot.ptr, slot.lanes)
            self.b.branch(self.blocks[id(succ)])
            self.b.position_at_end(saved)
            self.edges[key] = edge
        return edge

    def _order(self) -> list[ll.Block]:
        """Reverse post-order: every value is lowered before its uses (phis aside)."""
        seen: set[int] = set()
        post: list[ll.Block] = []
        by_id = {id(b): b for b in self.old.blocks}

        def successors(blk: ll.Block) -> list[ll.Block]:
            term = blk.terminator
            if term is None:
                return []
            if isinstance(term, ll.SwitchInstr):
                return [term.default, *(t for _, t in term.cases)]
            return [op for op in term.operands if isinstance(op, ll.Block)]

        stack: list[tuple[ll.Block, int]] = [(self.old.blocks[0], 0)]
        seen.add(id(self.old.blocks[0]))
        while stack:
            blk, i = stack.pop()
            succ = successors(blk)
            if i < len(succ):
                stack.append((blk, i + 1))
                s = succ[i]
                if id(s) not in seen and id(s) in by_id:
                    seen.add(id(s))
                    stack.append((s, 0))
            else:
                post.append(blk)
        return post[::-1]

    def lower(self, inst: ll.Instruction) -> None:
        op = inst.opname
        vector = isinstance(inst.type, ll.VectorType) or any(
            isinstance(o.type, ll.VectorType) for o in inst.operands if not isinstance(o, ll.Block)
        )
        handler = _SCALAR.get(op) if not vector else _VECTOR.get(op)
        if op == "call":
            handler = _call
        elif op == "phi":
            handler = _phi
        if handler is None:
            raise self.refuse(f"no VE {'vector ' if vector else ''}form for {op}")
        result = handler(self, inst)
        if result is not None:
            self._set(inst, result)
            slot = self.slots.get(id(inst))
            if slot is not None and not isinstance(inst, ll.PhiInstr):
                self.store_slot(result, slot.ptr, slot.lanes)  # type: ignore[arg-type]


class _ModuleLowering:
    def __init__(self, source: ll.Module, prefix: str, width: int, memory: bool) -> None:
        self.regs = _Registers(width)
        self.memory = memory
        self.source = source
        self.prefix = prefix
        self.module = ll.Module(name=source.name)
        self.globals: dict[str, ll.Value] = {}
        self.tables: dict[tuple[int, ...], ll.GlobalVariable] = {}
        self.used: set[str] = set()

    def intrinsic(self, name: str) -> ll.Function:
        full = self.prefix + name
        fn = self.module.globals.get(full)
        if fn is None:
            ret, args = SIGNATURES[name]
            params = [self.regs.of(a) for a in args]
            if self.memory:  # registers by pointer, the result through the first
                params = [
                    t.as_pointer() if a in _REGISTER_TYPES else t for a, t in zip(args, params, strict=True)
                ]
                if ret in _REGISTER_TYPES:
                    params.insert(0, self.regs.of(ret).as_pointer())
                    ret = "void"
            fn = ll.Function(self.module, ll.FunctionType(self.regs.of(ret), params), full)
            self.used.add(name)
        return fn  # type: ignore[return-value]

    def table(self, bits: list[int]) -> ll.GlobalVariable:
        key = tuple(bits)
        g = self.tables.get(key)
        if g is None:
            t = ll.ArrayType(_I64, len(bits))
            g = ll.GlobalVariable(self.module, t, name=f"ve.lanes.{len(self.tables)}")
            g.initializer = ll.Constant(t, [ll.Constant(_I64, x) for x in bits])
            g.global_constant = True
            g.linkage = "private"
            g.align = 8
            self.tables[key] = g
        return g

    def run(self) -> ll.Module:
        src = self.source
        for g in src.global_values:
            if isinstance(g, ll.GlobalVariable):
                ng = ll.GlobalVariable(self.module, self.regs.map(g.value_type), name=g.name)
                ng.initializer = g.initializer
                ng.global_constant = g.global_constant
                ng.align = g.align
                ng.linkage = g.linkage
                self.globals[g.name] = ng
        bodies: list[tuple[ll.Function, ll.Function]] = []
        for fn in src.functions:
            if fn.is_declaration and fn.name.startswith("llvm.") and _vector_intrinsic(fn):
                continue  # lowered where called
            ft = fn.function_type
            nfn = ll.Function(self.module, ll.FunctionType(self.regs.map(ft.return_type), ft.args), fn.name)
            self.globals[fn.name] = nfn
            if not fn.is_declaration:
                bodies.append((fn, nfn))
        for fn, nfn in bodies:
            lowering = _FunctionLowering(self, fn, nfn)
            lowering.run()
            if self.memory:
                lowering.assign_slots()
        return self.module


def _is_vector_inst(v: object) -> bool:
    return (
        isinstance(v, ll.Instruction)
        and isinstance(v.type, ll.VectorType)
        and not isinstance(v, ll.AllocaInstr)
    )


def _vector_intrinsic(fn: ll.Function) -> bool:
    ft = fn.function_type
    return any(isinstance(t, ll.VectorType) for t in (ft.return_type, *ft.args))


def max_lanes(module: ll.Module) -> int:
    """The most lanes of any vector the module computes with."""
    most = 1
    for fn in module.functions:
        for blk in fn.blocks:
            for inst in blk.instructions:
                for t in (inst.type, *(o.type for o in inst.operands if not isinstance(o, ll.Block))):
                    if isinstance(t, ll.PointerType):
                        t = t.pointee
                    if isinstance(t, ll.VectorType):
                        most = max(most, t.count)
    return most


def lower(
    module: ll.Module, prefix: str = PREFIX, width: int = MAX_LANES, memory: bool = False
) -> tuple[ll.Module, set[str]]:
    """``module`` rebuilt over VE registers of ``width`` elements (the VE's 256, or fewer
    for an emulation); intrinsics are named ``prefix + name`` (`ve_intrinsics.PREFIX`
    for the VE, another prefix for the emulation). Also returns the intrinsics it uses.

    ``memory`` (for the emulation) passes registers to the intrinsics by pointer: the
    same calls, but the host compiler spends no time moving 2 KiB values around."""
    m = _ModuleLowering(module, prefix, width, memory)
    out = m.run()
    return out, m.used


# ---- scalar instructions: copied -------------------------------------------------------------------------
_Handler = Callable[[_FunctionLowering, ll.Instruction], object]


def _s_binary(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    a, c = (f.get(o) for o in inst.operands)
    return getattr(f.b, _BUILDER_BINARY[inst.opname])(a, c)


_BUILDER_BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "and": "and_",
    "or": "or_",
    "xor": "xor",
    "shl": "shl",
    "lshr": "lshr",
    "ashr": "ashr",
    "udiv": "udiv",
    "sdiv": "sdiv",
    "urem": "urem",
    "srem": "srem",
    "fadd": "fadd",
    "fsub": "fsub",
    "fmul": "fmul",
    "fdiv": "fdiv",
}


def _s_icmp(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    a, c = inst.operands
    if any(isinstance(f.values.get(id(x)), _MaskBits) for x in (a, c)):
        return _mask_test(f, inst)
    pred = inst.op
    return (_raw_fcmp if inst.opname == "fcmp" else _raw_icmp)(f, pred, a, c)


def _raw_icmp(f: _FunctionLowering, pred: str, a: ll.Value, c: ll.Value) -> ll.Value:
    instr = ll.instructions.ICMPInstr(f.b.block, pred, f.get(a), f.get(c))
    f.b._insert(instr)
    return instr


def _raw_fcmp(f: _FunctionLowering, pred: str, a: ll.Value, c: ll.Value) -> ll.Value:
    instr = ll.instructions.FCMPInstr(f.b.block, pred, f.get(a), f.get(c))
    f.b._insert(instr)
    return instr


def _s_cast(f: _FunctionLowering, inst: ll.Instruction) -> object:
    (x,) = inst.operands
    if inst.opname == "bitcast" and isinstance(x.type, ll.VectorType):
        s = _shape(x.type, "a bitcast")
        if s.kind != "mask":
            raise f.refuse("a vector bitcast to a scalar")
        return _MaskBits(f.get(x), s.lanes)
    return _cast(f, inst.opname, f.get(x), f.owner.regs.map(inst.type))


def _cast(f: _FunctionLowering, op: str, x: ll.Value, t: ll.Type) -> ll.Value:
    instr = ll.instructions.CastInstr(f.b.block, op, x, t)
    f.b._insert(instr)
    return instr


def _s_alloca(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    t = inst.allocated_type  # type: ignore[attr-defined]
    if isinstance(t, ll.VectorType):  # a register: a slot
        _shape(t, "a register")
        return f.register_slot(inst.name)
    count = f.get(inst.operands[0]) if inst.operands else None  # alloca T, i64 N
    a = f.b.alloca(f.owner.regs.map(t), size=count, name=inst.name)
    a.align = inst.align  # type: ignore[attr-defined]
    return a


_MEMORY_LOAD = {"i64": "vld", "double": "vld", "i32": "vldlzx", "float": "vldu", "mask": None}
_MEMORY_STORE = {"i64": "vst", "double": "vst", "i32": "vstl", "float": "vstu", "mask": None}


def _s_load(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    (ptr,) = inst.operands
    if not isinstance(inst.type, ll.VectorType):
        ld = f.b.load(f.get(ptr), name=inst.name)
        ld.align = inst.align  # type: ignore[attr-defined]
        return ld
    s = _shape(inst.type, "a load")
    if id(ptr) in f.registers:
        return f.load_slot(f.get(ptr), s.lanes)
    name = _MEMORY_LOAD.get(s.kind)  # a vector in memory: consecutive elements
    if name is None:
        raise f.refuse(f"no VE vector load of {s.kind} lanes")
    base = f.b.bitcast(f.get(ptr), _I8P)
    return f.call(f"{name}.vssl", ll.Constant(_I64, s.size), base, f.vl(s.lanes))


def _s_store(f: _FunctionLowering, inst: ll.Instruction) -> None:
    value, ptr = inst.operands
    if not isinstance(value.type, ll.VectorType):
        st = f.b.store(f.get(value), f.get(ptr))
        st.align = inst.align  # type: ignore[attr-defined]
        return
    s = _shape(value.type, "a store")
    if id(ptr) in f.registers:
        f.store_slot(f.get(value), f.get(ptr), s.lanes)
        return
    name = _MEMORY_STORE.get(s.kind)
    if name is None:
        raise f.refuse(f"no VE vector store of {s.kind} lanes")
    base = f.b.bitcast(f.get(ptr), _I8P)
    every = f.call("vfmklat.ml", f.vl(s.lanes))
    f.call(f"{name}.vssml", f.get(value), ll.Constant(_I64, s.size), base, every, f.vl(s.lanes))


def _s_gep(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    return f.b.gep(f.get(inst.pointer), [f.get(i) for i in inst.indices], inbounds=inst.inbounds)  # type: ignore[attr-defined]


def _s_select(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    c, a, d = (f.get(o) for o in inst.operands)
    return f.b.select(c, a, d)


def _s_br(f: _FunctionLowering, inst: ll.Instruction) -> None:
    if isinstance(inst, ll.ConditionalBranch):
        c, t, e = inst.operands[:3]
        f.b.cbranch(f.get(c), f.target(t), f.target(e))
    else:
        f.b.branch(f.target(inst.operands[0]))


def _s_switch(f: _FunctionLowering, inst: ll.Instruction) -> None:
    sw = f.b.switch(f.get(inst.value), f.target(inst.default))  # type: ignore[attr-defined]
    for val, blk in inst.cases:  # type: ignore[attr-defined]
        sw.add_case(val, f.target(blk))


def _s_ret(f: _FunctionLowering, inst: ll.Instruction) -> None:
    if inst.operands:
        f.b.ret(f.get(inst.operands[0]))
    else:
        f.b.ret_void()


def _s_extract(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    vec, idx = inst.operands
    s = _shape(vec.type, "extractelement")
    index = f.b.trunc(f.get(idx), _I32) if idx.type.width > 32 else f.get(idx)  # type: ignore[attr-defined]
    v = f.get(vec)
    if s.kind == "mask":
        return f.b.trunc(f.call("lvsl.svs", v, index), _I1)
    bits = f.call("lvsl.svs", v, index)
    return f.bits_scalar(bits, inst.type, s.kind)


def _phi(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value | None:
    if isinstance(inst.type, ll.VectorType):
        return None  # in its slot, written on the incoming edges (`_FunctionLowering.target`)
    phi = f.b.phi(f.owner.regs.map(inst.type), name=inst.name)
    f.phis.append((inst, phi))  # type: ignore[arg-type]
    return phi


_SCALAR: dict[str, _Handler] = {
    **{op: _s_binary for op in _BUILDER_BINARY},
    "fneg": lambda f, i: f.b.fneg(f.get(i.operands[0])),
    "icmp": _s_icmp,
    "fcmp": _s_icmp,
    **{
        op: _s_cast for op in ("bitcast", "zext", "sext", "trunc", "inttoptr", "ptrtoint", "fpext", "fptrunc")
    },
    "alloca": _s_alloca,
    "load": _s_load,
    "store": _s_store,
    "getelementptr": _s_gep,
    "select": _s_select,
    "br": _s_br,
    "switch": _s_switch,
    "ret": _s_ret,
    "ret void": _s_ret,
    "extractelement": _s_extract,
    "load atomic": lambda f, i: f.b.load_atomic(f.get(i.operands[0]), i.ordering, i.align),
    "store atomic": lambda f, i: f.b.store_atomic(
        f.get(i.operands[0]), f.get(i.operands[1]), i.ordering, i.align
    ),
    "atomicrmw": lambda f, i: f.b.atomic_rmw(
        i.operation, f.get(i.operands[0]), f.get(i.operands[1]), i.ordering
    ),
    "cmpxchg": lambda f, i: f.b.cmpxchg(*(f.get(o) for o in i.operands), i.ordering, i.failordering),
    "fence": lambda f, i: f.b.fence(i.ordering, i.targetscope),
    "extractvalue": lambda f, i: f.b.extract_value(f.get(i.operands[0]), i.indices),
    "insertvalue": lambda f, i: f.b.insert_value(f.get(i.operands[0]), f.get(i.operands[1]), i.indices),
}


def _mask_test(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    """``icmp eq|ne (bitcast <N x i1> m), C`` where C is 0, all ones or another such bitcast:
    population counts of masks, exact for the first N lanes whatever the rest hold."""
    a, c = inst.operands
    pred = inst.op  # type: ignore[attr-defined]
    if pred not in ("eq", "ne") or not isinstance(f.values.get(id(a)), _MaskBits):
        raise f.refuse("a lane mask compared other than for equality")
    left: _MaskBits = f.values[id(a)]  # type: ignore[assignment]
    n = left.lanes
    other = f.values.get(id(c))
    if isinstance(other, _MaskBits):
        differ = f.call("vxor.vvvl", left.mask, other.mask, f.vl(n))
        count, want = f.call("pcvm.sml", f.as_mask(differ, n), f.vl(n)), 0
    elif isinstance(c, ll.Constant) and isinstance(c.constant, int):
        value = c.constant & ((1 << n) - 1)
        if value not in (0, (1 << n) - 1):
            raise f.refuse("a lane mask compared with a constant other than none or all lanes")
        count, want = f.call("pcvm.sml", f.as_mask(left.mask, n), f.vl(n)), (0 if value == 0 else n)
    else:
        raise f.refuse("a lane mask compared with an integer")
    cmp = "==" if pred == "eq" else "!="
    return f.b.icmp_unsigned(cmp, count, ll.Constant(_I64, want))


# ---- vector instructions: VE intrinsics ------------------------------------------------------------------
_INT_BINARY = {
    ("add", "i64"): "vaddsl",
    ("sub", "i64"): "vsubsl",
    ("mul", "i64"): "vmulsl",
    ("add", "i32"): "vaddswsx",
    ("sub", "i32"): "vsubswsx",
    ("mul", "i32"): "vmulswsx",
    ("shl", "i64"): "vsll",
    ("lshr", "i64"): "vsrl",
    ("ashr", "i64"): "vsral",
}
for _k in ("i8", "i16"):  # the low bits of the word forms
    _INT_BINARY.update({("add", _k): "vaddswsx", ("sub", _k): "vsubswsx", ("mul", _k): "vmulswsx"})
_NARROW = {"i8": 8, "i16": 16, "i32": 32}
_LOGIC = {"and": "vand", "or": "vor", "xor": "vxor"}
_FLOAT_BINARY = {"fadd": "vfadd", "fsub": "vfsub", "fmul": "vfmul", "fdiv": "vfdiv"}


def _v_binary(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    s = _shape(inst.type, inst.opname)
    a, c = (f.get(o) for o in inst.operands)
    op, n = inst.opname, s.lanes
    if op in _LOGIC:  # lane masks too
        return f.call(f"{_LOGIC[op]}.vvvl", a, c, f.vl(n))
    if op in _FLOAT_BINARY:
        return f.call(f"{_FLOAT_BINARY[op]}{'s' if s.kind == 'float' else 'd'}.vvvl", a, c, f.vl(n))
    if op in ("shl", "lshr", "ashr") and s.kind in _NARROW:
        return _shift_narrow(f, op, _NARROW[s.kind], a, c, n)
    if op in ("udiv", "sdiv", "urem", "srem") and s.kind in ("i64", *_NARROW):
        return _divide(f, op, s.kind, a, c, n)
    name = _INT_BINARY.get((op, s.kind))
    if name is None:
        raise f.refuse(f"no VE vector form for {op} on {s.kind}")
    return f.call(f"{name}.vvvl", a, c, f.vl(n))


def _shift_narrow(f: _FunctionLowering, op: str, width: int, a: ll.Value, c: ll.Value, n: int) -> ll.Value:
    """8/16/32-bit shifts as 64-bit ones (``vsll``/``vsrl``/``vsral``) of the value extended
    as the shift needs, by the amount's low bits zero-extended: the low bits of the result
    are exact for amounts < width (larger ones are poison in LLVM), whatever the rest held."""
    amount = f.zext_bits(c, width, n)
    if op == "shl":
        return f.call("vsll.vvvl", a, amount, f.vl(n))
    if op == "lshr":
        return f.call("vsrl.vvvl", f.zext_bits(a, width, n), amount, f.vl(n))
    return f.call("vsral.vvvl", f.sext_bits(a, width, n), amount, f.vl(n))


def _divide(f: _FunctionLowering, op: str, kind: str, a: ll.Value, c: ll.Value, n: int) -> ll.Value:
    """Integer division as 64-bit ``vdivul``/``vdivsl`` of the operands extended as the
    signedness needs (the lower word of the quotient is the 32-bit one); the remainder
    is ``a - (a / c) * c``. (The lifter never divides by zero or MIN by -1: its domain
    selects the GPU's answers around those.)"""
    signed = op[0] == "s"
    if kind in _NARROW:
        extend = f.sext_bits if signed else f.zext_bits
        a, c = extend(a, _NARROW[kind], n), extend(c, _NARROW[kind], n)
    q = f.call(f"{'vdivsl' if signed else 'vdivul'}.vvvl", a, c, f.vl(n))
    if op.endswith("div"):
        return q
    return f.call("vsubsl.vvvl", a, f.call("vmulsl.vvvl", q, c, f.vl(n)), f.vl(n))


def _v_fneg(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    s = _shape(inst.type, "fneg")
    # The sign is bit 63 in both forms: a float sits in the upper half.
    return f.call("vxor.vsvl", ll.Constant(_I64, 1 << 63), f.get(inst.operands[0]), f.vl(s.lanes))


_ICMP = {  # predicate -> (signed, vfmk condition)
    "eq": (True, "eq"),
    "ne": (True, "ne"),
    "slt": (True, "lt"),
    "sle": (True, "le"),
    "sgt": (True, "gt"),
    "sge": (True, "ge"),
    "ult": (False, "lt"),
    "ule": (False, "le"),
    "ugt": (False, "gt"),
    "uge": (False, "ge"),
}
_FCMP = {
    "oeq": "eq",
    "ogt": "gt",
    "oge": "ge",
    "olt": "lt",
    "ole": "le",
    "one": "ne",
    "ord": "num",
    "uno": "nan",
    "ueq": "eqnan",
    "ugt": "gtnan",
    "uge": "genan",
    "ult": "ltnan",
    "ule": "lenan",
    "une": "nenan",
}


def _v_icmp(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    a, c = inst.operands
    s = _shape(a.type, "icmp")
    n = s.lanes
    if s.kind == "mask":
        if inst.op not in ("eq", "ne"):  # type: ignore[attr-defined]
            raise f.refuse("an ordered comparison of lane masks")
        differ = f.call("vxor.vvvl", f.get(a), f.get(c), f.vl(n))
        if inst.op == "ne":  # type: ignore[attr-defined]
            return differ
        return f.call("vxor.vsvl", ll.Constant(_I64, (1 << 64) - 1), differ, f.vl(n))
    signed, cc = _ICMP[inst.op]  # type: ignore[attr-defined]
    x, y = f.get(a), f.get(c)
    if s.kind == "i32" and signed:  # vcmps.w.sx: the lower words, its result sign-extended
        diff = f.call("vcmpswsx.vvvl", x, y, f.vl(n))
    else:  # narrower lanes compare as extended longs
        if s.kind in _NARROW:
            extend = f.sext_bits if signed else f.zext_bits
            x, y = extend(x, _NARROW[s.kind], n), extend(y, _NARROW[s.kind], n)
        diff = f.call(f"{'vcmpsl' if signed else 'vcmpul'}.vvvl", x, y, f.vl(n))
    return f.from_mask(f.call(f"vfmkl{cc}.mvl", diff, f.vl(n)), n)


def _v_fcmp(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    a, c = inst.operands
    s = _shape(a.type, "fcmp")
    cc = _FCMP.get(inst.op)  # type: ignore[attr-defined]
    if cc is None:
        raise f.refuse(f"no VE mask condition for fcmp {inst.op}")  # type: ignore[attr-defined]
    p = "s" if s.kind == "float" else "d"
    diff = f.call(f"vfcmp{p}.vvvl", f.get(a), f.get(c), f.vl(s.lanes))
    return f.from_mask(f.call(f"vfmk{p}{cc}.mvl", diff, f.vl(s.lanes)), s.lanes)


def _v_select(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    cond, a, c = inst.operands
    s = _shape(inst.type, "select")
    n = s.lanes
    lanes = f.get(cond)
    if not isinstance(cond.type, ll.VectorType):  # one condition for all lanes
        lanes = f.call("vbrdl.vsl", f.b.zext(lanes, _I64), f.vl(n))
    m = f.as_mask(lanes, n)
    return f.call("vmrg.vvvml", f.get(c), f.get(a), m, f.vl(n))


def _v_cast(f: _FunctionLowering, inst: ll.Instruction) -> object:
    (x,) = inst.operands
    op = inst.opname
    if not isinstance(inst.type, ll.VectorType):
        return _s_cast(f, inst)
    if not isinstance(x.type, ll.VectorType):  # scalar pointer casts to pointers to vectors
        return _cast(f, op, f.get(x), f.owner.regs.map(inst.type))
    src, dst = _shape(x.type, op), _shape(inst.type, op)
    n, v = dst.lanes, f.get(x)
    if op in ("inttoptr", "ptrtoint") or (op == "trunc" and dst.kind in ("i64", *_NARROW)):
        return v  # the low bits already are the truncated value
    if op == "trunc" and dst.kind == "mask":  # 0 - (x & 1)
        bit = f.call("vand.vsvl", ll.Constant(_I64, 1), v, f.vl(n))
        return f.call("vsubsl.vsvl", ll.Constant(_I64, 0), bit, f.vl(n))
    if op == "zext" and src.kind == "mask":
        return f.call("vand.vsvl", ll.Constant(_I64, 1), v, f.vl(n))
    if op == "sext" and src.kind == "mask":
        return v
    if op in ("zext", "sext") and src.kind in _NARROW and dst.kind in ("i64", *_NARROW):
        extend = f.zext_bits if op == "zext" else f.sext_bits
        return extend(v, _NARROW[src.kind], n)
    if op == "fpext" and (src.kind, dst.kind) == ("float", "double"):
        return f.call("vcvtds.vvl", v, f.vl(n))
    if op == "fptrunc" and (src.kind, dst.kind) == ("double", "float"):
        return f.call("vcvtsd.vvl", v, f.vl(n))
    if op == "bitcast":
        pair = (src.kind, dst.kind)
        if pair in (("float", "i32"),):
            return f.call("vsrl.vvsl", v, ll.Constant(_I64, 32), f.vl(n))
        if pair in (("i32", "float"),):
            return f.call("vsll.vvsl", v, ll.Constant(_I64, 32), f.vl(n))
        if src.size == dst.size and src.kind != "mask" and dst.kind != "mask" and src.size == 8:
            return v
        if src.kind == dst.kind:
            return v
    raise f.refuse(f"no VE form for {op} from {x.type} to {inst.type}")


def _v_insert(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    vec, val, idx = inst.operands
    s = _shape(inst.type, "insertelement")
    index = f.get(idx)
    if index.type.width != 32:  # type: ignore[attr-defined]
        index = f.b.trunc(index, _I32)
    base = f.undefined() if _is_undef(vec) else f.get(vec)
    return f.call("lsv.vvss", base, index, f.scalar_bits(f.get(val), s.kind))


def _all_undef(c: ll.Constant) -> bool:
    return all(isinstance(e, ll.Constant) and e.constant is ll.Undefined for e in c.constant)


def _is_undef(v: ll.Value) -> bool:
    return isinstance(v, ll.Constant) and (
        v.constant is ll.Undefined or (isinstance(v.constant, list) and _all_undef(v))
    )


def _mask_indices(mask: ll.Constant) -> list[int | None]:
    out: list[int | None] = []
    for e in mask.constant:
        x = e.constant if isinstance(e, ll.Constant) else e
        out.append(None if x is None or x is ll.Undefined else int(x))
    return out


def _v_shuffle(f: _FunctionLowering, inst: ll.Instruction) -> ll.Value:
    """Constant lane permutations: a broadcast of one lane (``lvs`` + ``vbrd``), the
    identity, or else both sources through a stack buffer and a gather (``vst``/``vgt``)."""
    a, c, mask = inst.operands
    src = _shape(a.type, "shufflevector")
    dst = _shape(inst.type, "shufflevector")
    idx = _mask_indices(mask)  # type: ignore[arg-type]
    if all(isinstance(x, ll.Constant) for x in (a, c)):  # constants permute in Python
        lanes = [
            *_lane_bits(a, src.kind),
            *(_lane_bits(c, src.kind) if not _is_undef(c) else [0] * src.lanes),
        ]
        return f.lanes_constant([lanes[i or 0] for i in idx])
    return _permute(f, a, c, idx, src.lanes, dst.lanes, src.kind, inst)


def _permute(
    f: _FunctionLowering,
    a: ll.Value,
    c: ll.Value,
    idx: list[int | None],
    n: int,
    m: int,
    kind: str,
    inst: ll.Instruction,
) -> ll.Value:
    get = f.get
    used = {i for i in idx if i is not None}
    if len(used) <= 1:
        k = used.pop() if used else 0
        source = a if k < n else c
        k = k % n
        if (
            isinstance(source, ll.InsertElement)
            and _is_undef(source.operands[0])
            and _const_index(source) == k
        ):
            bits = f.scalar_bits(f.get(source.operands[1]), kind)  # a splat of a scalar
        else:
            bits = f.call("lvsl.svs", get(source), ll.Constant(_I32, k))
        return f.call("vbrdl.vsl", bits, f.vl(m))
    if all(i is None or i == j for j, i in enumerate(idx)) and m <= n:
        return get(a)
    buf = f.scratch()
    f.call("vst.vssml", get(a), ll.Constant(_I64, 8), buf, f.call("vfmklat.ml", f.vl(n)), f.vl(n))
    if any(i is not None and i >= n for i in idx):
        second = f.b.gep(buf, [ll.Constant(_I64, 8 * n)])
        f.call("vst.vssml", get(c), ll.Constant(_I64, 8), second, f.call("vfmklat.ml", f.vl(n)), f.vl(n))
    offsets = f.lanes_constant([8 * (i or 0) for i in idx])
    base = f.b.ptrtoint(buf, _I64)
    addrs = f.call("vaddsl.vsvl", base, offsets, f.vl(m))
    return f.call(
        "vgt.vvssml",
        addrs,
        ll.Constant(_I64, 0),
        ll.Constant(_I64, 0),
        f.call("vfmklat.ml", f.vl(m)),
        f.vl(m),
    )


def _const_index(ins: ll.Instruction) -> int | None:
    idx = ins.operands[2]
    return idx.constant if isinstance(idx, ll.Constant) and isinstance(idx.constant, int) else None


_VECTOR: dict[str, _Handler] = {
    **{op: _v_binary for op in (*_BUILDER_BINARY,)},
    "fneg": _v_fneg,
    "icmp": _v_icmp,
    "fcmp": _v_fcmp,
    "select": _v_select,
    **{
        op: _v_cast for op in ("bitcast", "zext", "sext", "trunc", "inttoptr", "ptrtoint", "fpext", "fptrunc")
    },
    "insertelement": _v_insert,
    "extractelement": _s_extract,
    "shufflevector": _v_shuffle,
    "alloca": _s_alloca,
    "load": _s_load,
    "store": _s_store,
}


# ---- calls ---------------------------------------------------------------------------------------------
def _call(f: _FunctionLowering, inst: ll.Instruction) -> object:
    callee = inst.callee  # type: ignore[attr-defined]
    name = callee.name
    args = inst.args  # type: ignore[attr-defined]
    if not _vector_intrinsic(callee):
        new = f.owner.globals.get(name)
        if new is None:  # a scalar intrinsic (cttz, memset, ...): declared as it is
            new = f.owner.module.globals.get(name) or ll.Function(f.owner.module, callee.function_type, name)
        result = f.b.call(new, [f.get(a) for a in args])
        return None if isinstance(inst.type, ll.VoidType) else result
    family = name.split(".")[1] if name.startswith("llvm.") else name
    if name.startswith("llvm.masked."):
        return _masked(f, name.split(".")[2], args)
    if name.startswith("llvm.vector.reduce."):
        return _reduce(f, name.split(".")[3], args[0])
    handler = _VECTOR_CALLS.get(family)
    if handler is None:
        raise f.refuse(f"no VE form for {name}")
    return handler(f, inst, args)


def _masked(f: _FunctionLowering, kind: str, args: Sequence[ll.Value]) -> ll.Value | None:
    """``llvm.masked.{load,store,gather,scatter}``: masked VE loads/stores/gathers/scatters."""
    if kind in ("load", "gather"):
        where, _, mask, passthru = args
        s = _shape(passthru.type, f"masked {kind}")
    else:
        value, where, _, mask = args
        s = _shape(value.type, f"masked {kind}")
    n = s.lanes
    flavour = {"i64": "", "double": "", "i32": "l", "float": "u"}.get(s.kind)
    if flavour is None:
        raise f.refuse(f"no VE memory form for {s.kind} lanes")
    m = f.as_mask(f.get(mask), n)
    zero = ll.Constant(_I64, 0)
    if kind in ("load", "store"):
        base = f.b.bitcast(f.get(where), _I8P)
        if kind == "store":
            f.call(f"vst{flavour}.vssml", f.get(value), ll.Constant(_I64, s.size), base, m, f.vl(n))
            return None
        # vld has no mask and lanes outside it may point past the buffer: gather instead.
        seq = f.call("vseq.vl", f.vl(n))
        offsets = f.call("vmulsl.vsvl", ll.Constant(_I64, s.size), seq, f.vl(n))
        addrs = f.call("vaddsl.vsvl", f.b.ptrtoint(base, _I64), offsets, f.vl(n))
    else:
        addrs = f.get(where)
        if kind == "scatter":
            f.call(f"vsc{flavour}.vvssml", f.get(value), addrs, zero, zero, m, f.vl(n))
            return None
    gather = {"": "vgt", "l": "vgtlzx", "u": "vgtu"}[flavour]
    got = f.call(f"{gather}.vvssml", addrs, zero, zero, m, f.vl(n))
    if _is_undef(passthru):
        return got
    return f.call("vmrg.vvvml", f.get(passthru), got, m, f.vl(n))


_REDUCE = {  # (kind, lane kind) -> intrinsic; the value lands in element 0
    ("add", "i64"): "vsuml",
    ("add", "i32"): "vsuml",  # the lower word of the 64-bit sum
    ("or", "i64"): "vror",
    ("or", "i32"): "vror",
    ("and", "i64"): "vrand",
    ("and", "i32"): "vrand",
    ("xor", "i64"): "vrxor",
    ("xor", "i32"): "vrxor",
    ("smax", "i64"): "vrmaxslfst",
    ("smin", "i64"): "vrminslfst",
    ("smax", "i32"): "vrmaxswfstsx",
    ("smin", "i32"): "vrminswfstsx",
}


def _reduce(f: _FunctionLowering, kind: str, x: ll.Value) -> ll.Value:
    s = _shape(x.type, f"vector.reduce.{kind}")
    n, v = s.lanes, f.get(x)
    if s.kind == "mask":
        raise f.refuse("a reduction of a lane mask")
    if kind in ("umax", "umin") and s.kind == "i32":  # zero-extended words compare as signed longs
        v, kind, kind_s = f.low32(v, n), "s" + kind[1:], "i64"
    elif kind in ("umax", "umin") and s.kind == "i64":  # flip the sign bit to order unsigned as signed
        flip = ll.Constant(_I64, 1 << 63)
        v = f.call("vxor.vsvl", flip, v, f.vl(n))
        r = f.call(f"vr{'max' if kind == 'umax' else 'min'}slfst.vvl", v, f.vl(n))
        bits = f.b.xor(f.call("lvsl.svs", r, ll.Constant(_I32, 0)), flip)
        return f.bits_scalar(bits, x.type.element, s.kind)  # type: ignore[attr-defined]
    else:
        kind_s = s.kind
    name = _REDUCE.get((kind, kind_s))
    if name is None:
        raise f.refuse(f"no VE reduction for {kind} on {s.kind}")
    r = f.call(f"{name}.vvl", v, f.vl(n))
    return f.bits_scalar(f.call("lvsl.svs", r, ll.Constant(_I32, 0)), x.type.element, s.kind)  # type: ignore[attr-defined]


def _fma(f: _FunctionLowering, inst: ll.Instruction, args: Sequence[ll.Value]) -> ll.Value:
    s = _shape(inst.type, "fma")
    a, b, c = (f.get(x) for x in args)
    p = "s" if s.kind == "float" else "d"
    return f.call(f"vfmad{p}.vvvvl", c, a, b, f.vl(s.lanes))  # vx = vy + vz * vw


def _swar(f: _FunctionLowering, n: int) -> tuple[Callable[..., ll.Value], ...]:
    """Shift/and/or/add/sub helpers over 64-bit elements with vector length ``n``."""

    def k(x: int) -> ll.Constant:
        return ll.Constant(_I64, x & 0xFFFF_FFFF_FFFF_FFFF)

    def shr(v: ll.Value, s: int) -> ll.Value:
        return f.call("vsrl.vvsl", v, k(s), f.vl(n))

    def shl(v: ll.Value, s: int) -> ll.Value:
        return f.call("vsll.vvsl", v, k(s), f.vl(n))

    def and_(v: ll.Value, c: int) -> ll.Value:
        return f.call("vand.vsvl", k(c), v, f.vl(n))

    def or_(a: ll.Value, b: ll.Value) -> ll.Value:
        return f.call("vor.vvvl", a, b, f.vl(n))

    def add(a: ll.Value, b: ll.Value) -> ll.Value:
        return f.call("vaddsl.vvvl", a, b, f.vl(n))

    def sub(a: ll.Value, b: ll.Value) -> ll.Value:
        return f.call("vsubsl.vvvl", a, b, f.vl(n))

    def mulk(v: ll.Value, c: int) -> ll.Value:
        return f.call("vmulsl.vsvl", k(c), v, f.vl(n))

    return shr, shl, and_, or_, add, sub, mulk


def _popcount32(f: _FunctionLowering, x: ll.Value, n: int) -> ll.Value:
    """Population count of zero-extended 32-bit lanes (LLVM 14 has no ``vpcnt`` intrinsic)."""
    shr, _, and_, _, add, sub, mulk = _swar(f, n)
    x = sub(x, and_(shr(x, 1), 0x5555_5555))
    x = add(and_(x, 0x3333_3333), and_(shr(x, 2), 0x3333_3333))
    x = and_(add(x, shr(x, 4)), 0x0F0F_0F0F)
    return shr(and_(mulk(x, 0x0101_0101), 0xFF00_0000), 24)


def _ctpop(f: _FunctionLowering, inst: ll.Instruction, args: Sequence[ll.Value]) -> ll.Value:
    s = _shape(inst.type, "ctpop")
    if s.kind != "i32":
        raise f.refuse("ctpop of non-32-bit lanes")
    return _popcount32(f, f.low32(f.get(args[0]), s.lanes), s.lanes)


def _ctlz(f: _FunctionLowering, inst: ll.Instruction, args: Sequence[ll.Value]) -> ll.Value:
    s = _shape(inst.type, "ctlz")
    if s.kind != "i32":
        raise f.refuse("ctlz of non-32-bit lanes")
    n = s.lanes
    shr, _, _, or_, _, sub, _ = _swar(f, n)
    x = f.low32(f.get(args[0]), n)
    for step in (1, 2, 4, 8, 16):  # smear the leading one rightwards
        x = or_(x, shr(x, step))
    return sub(f.splat64(32, n), _popcount32(f, x, n))


def _bitreverse(f: _FunctionLowering, inst: ll.Instruction, args: Sequence[ll.Value]) -> ll.Value:
    s = _shape(inst.type, "bitreverse")
    if s.kind != "i32":
        raise f.refuse("bitreverse of non-32-bit lanes")
    n = s.lanes
    shr, shl, and_, or_, *_ = _swar(f, n)
    x = f.low32(f.get(args[0]), n)
    for step, m in ((1, 0x5555_5555), (2, 0x3333_3333), (4, 0x0F0F_0F0F), (8, 0x00FF_00FF), (16, 0xFFFF)):
        x = or_(and_(shr(x, step), m), shl(and_(x, m), step))
    return x


def _sqrt(f: _FunctionLowering, inst: ll.Instruction, args: Sequence[ll.Value]) -> ll.Value:
    s = _shape(inst.type, "sqrt")
    return f.call(f"vfsqrt{'s' if s.kind == 'float' else 'd'}.vvl", f.get(args[0]), f.vl(s.lanes))


_VECTOR_CALLS: dict[str, Callable[[_FunctionLowering, ll.Instruction, Sequence[ll.Value]], object]] = {
    "sqrt": _sqrt,
    "fma": _fma,
    "ctpop": _ctpop,
    "ctlz": _ctlz,
    "bitreverse": _bitreverse,
}
