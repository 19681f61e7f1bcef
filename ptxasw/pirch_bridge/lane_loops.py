"""Lane loops: long lane-wise runs of a lifted function as loops over native-width lane groups.

Why: a WG-32 kernel keeps each ``.f64`` register in four 512-bit host registers,
so every lifted instruction is four host instructions, and a kernel that nvcc
unrolled completely (GEMM's 32 x 32 multiply-adds per work group, the warp
register cache of borG's kernels) becomes tens of kilobytes of straight-line
code per work group: more than the host's instruction and decoded-op caches
hold, so instruction fetch, not arithmetic, sets the pace. In a run where every
lane reads only its own lanes, each group of lanes is computed independently of
the others, so the run can be a loop over the groups: the same operations on the
same lanes in the same order per lane, hence bit for bit the same results, from
a quarter (or half) of the code.

A run (`_Run`) holds lane-wise arithmetic, compares, selects, casts and
element-wise intrinsics over ``<L x T>`` vectors, loads and stores of the
lifter's register allocas, and broadcasts of one lane of a value known in full
before the run (a ``shfl.sync.idx`` of a register the run does not write). An
instruction is *whole* where the loop needs its value in full: a broadcast, its
source and what that is computed from, and loads of registers' values from
before the run; whole instructions stay before the loop, unchanged. The rest
are *group* instructions: the loop runs them once per group of ``G`` lanes, on
``<G x T>`` slices (`_Rewriter`). Registers some path reads after the run
(liveness over the register allocas) and group values read after it are
stored slice by slice; the others, most of nvcc's registers, are not stored.

Only the host SIMD back ends take this form (`ptxasw.pirch_bridge.lift.LiftedKernel.for_host`):
the InfReg-IR keeps one vector operation per InfReg operation, and the VE's
vectors are 256 lanes long.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from llvmlite import ir as ll

__all__ = ["NATIVE_BITS", "loop_lanes", "register_allocas", "saving"]

NATIVE_BITS = 512
"""The host's vector register: a group is as many lanes as fit in one."""
# A run is looped when its group instructions are at least this many, and a function only
# when the host instructions saved, (groups - 1) per group instruction, are at least
# `_MIN_SAVED`: about 16 KB of code, half a 32 KB instruction cache. Shorter runs lost
# (lift_speed rows, dev, vs gcc, plain -> looped at 16): trsv_f64 WG32, runs of 32, llvm
# 0.71x -> 0.64x, avx512 1.21x -> 0.71x; gema_f64 WG32, runs of 43, 0.79x -> 0.63x and
# 0.86x -> 0.74x: the slices of their inputs and outputs cost more than the code saved.
_MIN_RUN = 128
_MIN_SAVED = 2048

_LANE_OPS = frozenset(
    {
        "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor",
        "fadd", "fsub", "fmul", "fdiv", "frem", "fneg",
    }
)  # fmt: skip
_CASTS = frozenset(
    {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "bitcast"}
)
_ELEMENTWISE = frozenset(
    {
        "fma", "fabs", "copysign", "sqrt", "floor", "ceil", "trunc", "rint", "nearbyint", "roundeven",
        "ctpop", "ctlz", "cttz", "bitreverse", "fptosi", "fptoui",
    }
)  # fmt: skip
_ICMP_OPERATORS = {
    "eq": ("==", False),
    "ne": ("!=", False),
    "ugt": (">", False),
    "uge": (">=", False),
    "ult": ("<", False),
    "ule": ("<=", False),
    "sgt": (">", True),
    "sge": (">=", True),
    "slt": ("<", True),
    "sle": ("<=", True),
}
_WHOLE, _GROUP = 0, 1
_I32 = ll.IntType(32)


def _element_bits(t: ll.Type) -> int | None:
    if isinstance(t, ll.IntType):
        return t.width if t.width <= 64 else None
    if isinstance(t, ll.FloatType):
        return 32
    if isinstance(t, ll.DoubleType):
        return 64
    return None


def _lanes(t: ll.Type) -> int | None:
    return t.count if isinstance(t, ll.VectorType) else None


def _is_mask(t: ll.Type) -> bool:
    return isinstance(t, ll.VectorType) and isinstance(t.element, ll.IntType) and t.element.width == 1


def _broadcast_lane(inst: ll.ShuffleVector, lanes: int) -> int | None:
    """The lane a shufflevector copies to every lane of an ``L``-lane result, if it is one."""
    mask = inst.operands[2]
    indices = [c.constant for c in mask.constant] if isinstance(mask, ll.Constant) else []
    if len(indices) != lanes or _lanes(inst.operands[0].type) != lanes:
        return None
    first = indices[0]
    if not isinstance(first, int) or first >= lanes or any(i != first for i in indices):
        return None
    return first


def register_allocas(func: ll.Function, keep: Callable[[ll.Type], bool] = lambda t: True) -> set[int]:
    """Allocas (ids) used only as the address of plain loads and stores, whose allocated
    type ``keep`` accepts: the lifter's registers and masks, which a run may read and
    write (and the C back end keeps in locals)."""
    allocas: set[int] = set()
    escaped: set[int] = set()
    for blk in func.blocks:
        for inst in blk.instructions:
            if isinstance(inst, ll.AllocaInstr) and keep(inst.allocated_type):
                allocas.add(id(inst))
            for k, op in enumerate(inst.operands):
                if isinstance(op, ll.AllocaInstr):
                    direct = (type(inst) is ll.LoadInstr and k == 0) or (
                        type(inst) is ll.StoreInstr and k == 1
                    )
                    if not direct:
                        escaped.add(id(op))
    return allocas - escaped


def _register_allocas(func: ll.Function, lanes: int) -> set[int]:
    """The registers and masks of ``<L x T>``."""
    return register_allocas(func, lambda t: _lanes(t) == lanes)


@dataclass
class _Run:
    """Consecutive instructions of one block that can run as a loop over lane groups."""

    lanes: int
    registers: set[int]
    block: ll.Block
    insts: list[ll.Instruction] = field(default_factory=list)
    kinds: dict[int, int] = field(default_factory=dict)  # id(value) -> _WHOLE / _GROUP (in the run)
    stored: dict[int, ll.StoreInstr] = field(default_factory=dict)  # id(register) -> last store
    # id(load) -> the run's store it reads (its value is read when needed: a rewrite of an
    # earlier run may have replaced it since)
    forwarded: dict[int, ll.StoreInstr] = field(default_factory=dict)
    widths: Counter[int] = field(default_factory=Counter)  # element bits -> group operations on them
    group_ops: int = 0

    def kind(self, value: ll.Value) -> int:
        return self.kinds.get(id(value), _WHOLE)

    def source(self, load: ll.Instruction) -> ll.Value:
        """The value a load of the run reads from the run's own store."""
        return self.forwarded[id(load)].operands[0]

    def accept(self, inst: ll.Instruction) -> bool:
        """Take ``inst`` into the run, or say that it ends the run."""
        if type(inst) is ll.LoadInstr:
            ptr = inst.operands[0]
            if id(ptr) not in self.registers:
                return False
            src = self.stored.get(id(ptr))
            if src is not None:
                self.forwarded[id(inst)] = src
        elif type(inst) is ll.StoreInstr:
            ptr = inst.operands[1]
            if id(ptr) not in self.registers:
                return False
            self.stored[id(ptr)] = inst
        elif isinstance(inst, ll.ShuffleVector):
            if _broadcast_lane(inst, self.lanes) is None:
                return False
        elif not _lane_wise(inst, self.lanes):
            return False
        self.insts.append(inst)
        return True

    def finish(self) -> None:
        """Decide each instruction's kind: whole where a broadcast needs the value in full
        (and what that value is computed from), and register loads of values from before
        the run; group for the rest."""
        members = {id(i) for i in self.insts}
        needed: set[int] = set()
        work = [i.operands[0] for i in self.insts if isinstance(i, ll.ShuffleVector)]
        while work:
            v = work.pop()
            if id(v) not in members or id(v) in needed:
                continue
            needed.add(id(v))
            if type(v) is ll.LoadInstr:
                if id(v) in self.forwarded:
                    work.append(self.source(v))
            elif not isinstance(v, ll.ShuffleVector):
                work.extend(op for op in v.operands if isinstance(op.type, ll.VectorType))
        for inst in self.insts:
            if type(inst) is ll.LoadInstr:
                kind = _WHOLE if id(inst) not in self.forwarded else self.kind(self.source(inst))
            elif type(inst) is ll.StoreInstr:
                kind = self.kind(inst.operands[0])
            elif isinstance(inst, ll.ShuffleVector) or id(inst) in needed:
                kind = _WHOLE
            else:
                kind = _GROUP
                self.group_ops += 1
                widths = [_element_bits(t.element) for t in (inst.type, *(op.type for op in inst.operands))
                          if isinstance(t, ll.VectorType) and not _is_mask(t)]  # fmt: skip
                if widths:
                    self.widths[max(w or 0 for w in widths)] += 1
            self.kinds[id(inst)] = kind

    def group(self) -> int | None:
        """Lanes per group (None: the run does not split into two or more groups): one host
        register of the element width most of its operations work on (an address's ``i64``
        add in a run of ``.f32`` arithmetic takes two, rather than every ``.f32`` half a one)."""
        if self.group_ops < _MIN_RUN or not self.widths:
            return None
        bits = max(self.widths, key=lambda w: (self.widths[w], w))
        size = NATIVE_BITS // max(bits, 8)
        if size >= self.lanes or self.lanes % size:
            return None
        return size


def _lane_wise(inst: ll.Instruction, lanes: int) -> bool:
    """``inst`` computes lane ``i`` of its ``L``-lane result from lane ``i`` of its vector operands."""
    if _lanes(inst.type) != lanes or _element_bits(inst.type.element) is None:
        return False
    vectors = [op for op in inst.operands if isinstance(op.type, ll.VectorType)]
    if isinstance(inst, ll.CallInstr):
        callee = inst.callee
        if not isinstance(callee, ll.Function) or not callee.name.startswith("llvm."):
            return False
        if callee.name.split(".")[1] not in _ELEMENTWISE:
            return False
        vectors = [a for a in inst.args if isinstance(a.type, ll.VectorType)]
    elif isinstance(inst, ll.CastInstr):
        if inst.opname not in _CASTS:
            return False
    elif isinstance(inst, (ll.CompareInstr, ll.SelectInstr)):
        pass
    elif type(inst) is ll.Instruction:
        if inst.opname not in _LANE_OPS:
            return False
    else:
        return False
    return all(_lanes(v.type) == lanes and _element_bits(v.type.element) is not None for v in vectors)


def _runs(func: ll.Function, lanes: int, registers: set[int]) -> list[tuple[_Run, int]]:
    """The runs worth a loop, with their group sizes, in block and text order."""
    out: list[tuple[_Run, int]] = []
    for blk in func.blocks[1:]:  # not the entry block, where `_temporary` inserts allocas
        insts = blk.instructions
        i = 0
        while i < len(insts):
            run = _Run(lanes, registers, blk)
            while i < len(insts) and run.accept(insts[i]):
                i += 1
            if not run.insts:
                i += 1
                continue
            run.finish()
            size = run.group()
            if size is not None:
                out.append((run, size))
    return out


def _saved(runs: list[tuple[_Run, int]], lanes: int) -> int:
    """Host instructions the loops save: each group instruction is written once, not once per group."""
    return sum(run.group_ops * (lanes // size - 1) for run, size in runs)


def saving(func: ll.Function, lanes: int) -> int:
    """Host instructions the loops would save in ``func`` (0: it is left as it is)."""
    saved = _saved(_runs(func, lanes, _register_allocas(func, lanes)), lanes)
    return saved if saved >= _MIN_SAVED else 0


def loop_lanes(func: ll.Function, lanes: int) -> int:
    """Rewrite ``func``'s runs as lane-group loops when that saves enough code; returns
    how many runs became loops."""
    registers = _register_allocas(func, lanes)
    runs = _runs(func, lanes, registers)
    if _saved(runs, lanes) < _MIN_SAVED:
        return 0
    users: dict[int, list[ll.Instruction]] = {}
    dropped: set[int] = set()  # group instructions of runs already rewritten (in no block now)
    for blk in func.blocks:
        for inst in blk.instructions:
            for op in _operands(inst):
                users.setdefault(id(op), []).append(inst)
    live_out = _live_out(func, registers)
    for run, size in runs:
        _Rewriter(func, run, size, users, dropped, live_out[id(run.block)]).rewrite()
    return len(runs)


def _exposed(insts: list[ll.Instruction], registers: set[int]) -> tuple[set[int], set[int]]:
    """The registers ``insts`` read before writing them, and those they write."""
    written: set[int] = set()
    read: set[int] = set()
    for inst in insts:
        if type(inst) is ll.LoadInstr and id(inst.operands[0]) in registers:
            if id(inst.operands[0]) not in written:
                read.add(id(inst.operands[0]))
        elif type(inst) is ll.StoreInstr and id(inst.operands[1]) in registers:
            written.add(id(inst.operands[1]))
    return read, written


def _successors(blk: ll.Block) -> list[ll.Block]:
    term = blk.terminator
    if isinstance(term, ll.SwitchInstr):
        return [term.default, *(target for _, target in term.cases)]
    return [op for op in (term.operands if term is not None else ()) if isinstance(op, ll.Block)]


def _live_out(func: ll.Function, registers: set[int]) -> dict[int, set[int]]:
    """id(block) -> the registers some path from its end reads before writing them
    (a run's value left in any other register is never read: it needs no store)."""
    blocks = func.blocks
    local = {id(b): _exposed(b.instructions, registers) for b in blocks}
    live_in: dict[int, set[int]] = {id(b): set(local[id(b)][0]) for b in blocks}
    out: dict[int, set[int]] = {id(b): set() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            after = set().union(*(live_in[id(s)] for s in _successors(b)))
            if after != out[id(b)]:
                out[id(b)] = after
                read, written = local[id(b)]
                grown = read | (after - written)
                if grown != live_in[id(b)]:
                    live_in[id(b)] = grown
                    changed = True
    return out


def _operands(inst: ll.Instruction) -> list[ll.Value]:
    if isinstance(inst, ll.PhiInstr):
        return [v for v, _ in inst.incomings]
    return list(inst.operands)


class _Rewriter:
    """One run as: its whole instructions, a loop over the lane groups, the stores
    of what the run leaves behind, then the rest of the block."""

    def __init__(
        self,
        func: ll.Function,
        run: _Run,
        size: int,
        users: dict[int, list[ll.Instruction]],
        dropped: set[int],
        live_out: set[int],
    ) -> None:
        self.func = func
        self.live_out = live_out
        self.dropped = dropped
        self.run = run
        self.size = size
        self.users = users
        self.block: ll.Block = run.insts[0].parent
        self.in_run = {id(i) for i in run.insts}
        self.slices: dict[int, ll.Value] = {}  # id(whole value) -> its slice in this iteration
        self.values: dict[int, ll.Value] = {}  # id(group instruction) -> its slice
        # Values the run leaves behind: (group value, its readers after the run, temporary),
        # and register stores that wait for the loop's end.
        self.kept: list[tuple[ll.Instruction, list[ll.Instruction], ll.AllocaInstr]] = []
        self.after: list[Callable[[ll.IRBuilder], object]] = []
        self.last_whole_store: dict[int, int] | None = None  # id(register) -> its last whole store
        self.position: dict[int, int] = {}  # id(instruction) -> its place in the run
        self.zero: ll.Value | None = None  # `_opaque_zero` of this iteration

    # ---- the rewrite ------------------------------------------------------------------------------
    def rewrite(self) -> None:
        run, blk = self.run, self.block
        insts = blk.instructions
        first = next(k for k, inst in enumerate(insts) if inst is run.insts[0])
        tail = insts[first + len(run.insts) :]
        blk.instructions = insts[:first] + [i for i in run.insts if run.kind(i) == _WHOLE]
        terminator, blk.terminator = blk.terminator, None
        self.dropped.update(id(i) for i in run.insts if run.kind(i) == _GROUP)
        self.loop = self.func.append_basic_block(f"{blk.name}.lanes")
        self.done = self.func.append_basic_block(f"{blk.name}.lanes.done")
        self.pre = ll.IRBuilder(blk)
        self.pre.position_at_end(blk)
        b = self.b = ll.IRBuilder(self.loop)
        self.index = b.phi(_I32, name="group")
        self.index.add_incoming(ll.Constant(_I32, 0), blk)
        last_store = {id(inst.operands[1]): inst for inst in run.insts if type(inst) is ll.StoreInstr}
        # A register's value after the run matters where some path reads it before writing
        # it; nvcc's registers are mostly written once and read only inside the run, and
        # storing each of their slices would cost a store each.
        read, written = _exposed(tail, run.registers)
        live = read | (self.live_out - written)
        outside = self._read_after()
        self._register_slices()
        for inst in run.insts:
            if run.kind(inst) != _GROUP:
                continue
            if type(inst) is ll.StoreInstr:
                if last_store[id(inst.operands[1])] is inst and id(inst.operands[1]) in live:
                    self._store_register(inst)
                continue
            if type(inst) is ll.LoadInstr:
                self.values[id(inst)] = self._slice(run.source(inst))
            else:
                self.values[id(inst)] = self._narrowed(inst)
            if id(inst) in outside:
                self._keep(inst, outside[id(inst)])
        self.pre.branch(self.loop)
        after = b.add(self.index, ll.Constant(_I32, 1))
        self.index.add_incoming(after, self.loop)
        b.cbranch(
            b.icmp_unsigned("<", after, ll.Constant(_I32, self.run.lanes // self.size)), self.loop, self.done
        )
        self._finish(tail, terminator)
        # What this rewrite built may read values of runs still to come (a block later in
        # the list, earlier in the flow): their rewrites must see these readers too.
        for inst in (
            *blk.instructions[first:],
            *self.loop.instructions,
            *self.done.instructions[: -len(tail) or None],
        ):
            for op in _operands(inst):
                self.users.setdefault(id(op), []).append(inst)

    def _read_after(self) -> dict[int, list[ll.Instruction]]:
        """Group values of the run read after it: id -> those readers."""
        out: dict[int, list[ll.Instruction]] = {}
        for inst in self.run.insts:
            if self.run.kind(inst) != _GROUP or isinstance(inst.type, ll.VoidType):
                continue
            readers = [
                u
                for u in self.users.get(id(inst), [])
                if id(u) not in self.in_run and id(u) not in self.dropped
            ]
            if readers:
                out[id(inst)] = readers
        return out

    def _register_slices(self) -> None:
        """Slices of the whole register loads the group instructions read, loaded first
        in the loop body: before any store of the loop writes that register's slice."""
        run = self.run
        for inst in run.insts:
            if run.kind(inst) != _GROUP:
                continue
            operands = [run.source(inst)] if type(inst) is ll.LoadInstr else _operands(inst)
            for op in operands:
                for root in self._through_casts(op):
                    if isinstance(root, ll.LoadInstr) and run.kind(root) == _WHOLE:
                        self._slice(root)

    def _through_casts(self, value: ll.Value) -> Iterator[ll.Value]:
        """``value`` and, where it is a whole cast of the run or a load of what the run
        stored, what that reads (`_whole_slice` slices those through to their source)."""
        yield value
        if isinstance(value, ll.CastInstr) and id(value) in self.in_run and self.run.kind(value) == _WHOLE:
            yield from self._through_casts(value.operands[0])
        elif isinstance(value, ll.LoadInstr) and id(value) in self.run.forwarded:
            yield from self._through_casts(self.run.source(value))

    def _finish(self, tail: list[ll.Instruction], term: ll.Instruction | None) -> None:
        """The rest of the block goes after the loop; its successors' phis now come from there."""
        done = self.done
        post = ll.IRBuilder(done)
        for whole, readers, temp in self.kept:
            value = post.load(temp)
            if _is_mask(whole.type):
                value = post.trunc(value, whole.type)
            for reader in readers:
                reader.replace_usage(whole, value)
        for action in self.after:
            action(post)
        for inst in tail:
            inst.parent = done
            done.instructions.append(inst)
        done.terminator = term
        targets = [op for op in (term.operands if term is not None else []) if isinstance(op, ll.Block)]
        if isinstance(term, ll.SwitchInstr):
            targets = [term.default, *(blk for _, blk in term.cases)]
        for target in targets:
            for phi in (i for i in target.instructions if isinstance(i, ll.PhiInstr)):
                phi.incomings = [(v, done if blk is self.block else blk) for v, blk in phi.incomings]

    # ---- slices --------------------------------------------------------------------------------
    def _narrow(self, t: ll.Type) -> ll.Type:
        assert isinstance(t, ll.VectorType)
        return ll.VectorType(t.element, self.size)

    def _slice(self, value: ll.Value) -> ll.Value:
        """``value``'s lanes of the current group, as a ``<G x T>`` value in the loop."""
        if not isinstance(value.type, ll.VectorType):
            return value
        if self.run.kind(value) == _GROUP:
            return self.values[id(value)]
        hit = self.slices.get(id(value))
        if hit is None:
            hit = self.slices[id(value)] = self._whole_slice(value)
        return hit

    def _whole_slice(self, value: ll.Value) -> ll.Value:
        b, run = self.b, self.run
        if isinstance(value, ll.Constant):
            lanes = value.constant
            if not isinstance(lanes, (list, tuple)):  # zeroinitializer, undef
                return ll.Constant(self._narrow(value.type), lanes)
            if all(c.constant == lanes[0].constant for c in lanes):
                return ll.Constant(self._narrow(value.type), [lanes[0]] * self.size)
        if isinstance(value, ll.ShuffleVector) and id(value) in self.in_run:
            lane = _broadcast_lane(value, run.lanes)
            assert lane is not None
            register = self._untouched_register(value.operands[0])
            if register is None:
                scalar = self.pre.extract_element(value.operands[0], ll.Constant(_I32, lane))
                return self._splat(scalar, self.pre)
            # Read in the loop, at an address the compiler cannot prove the same in every
            # iteration: hoisted out of the loop, a broadcast per lane read would be a whole
            # vector kept live (spilled) across it, instead of a load folded into its user.
            element = register.type.pointee.element
            base = self.pre.bitcast(register, element.as_pointer())
            scalar = b.load(b.gep(base, [b.add(self._opaque_zero(), ll.Constant(_I32, lane))]))
            return self._splat(scalar, b)
        if isinstance(value, ll.CastInstr) and id(value) in self.in_run and not _is_mask(value.type):
            source = value.operands[0]
            if not _is_mask(source.type):
                return getattr(b, value.opname)(self._slice(source), self._narrow(value.type))
        if isinstance(value, ll.LoadInstr) and id(value) in run.forwarded:
            return self._slice(run.source(value))  # what the run stored there
        if (
            isinstance(value, ll.LoadInstr)
            and id(value) in self.in_run
            and not _is_mask(value.type)
            and not self._stored_after(value)
        ):  # the register's value from before the run: every such load reads the same
            register = value.operands[0]
            hit = self.slices.get(id(register))
            if hit is None:
                hit = self.slices[id(register)] = self._load_slice(register, value.type)
            return hit
        # Anything else goes through a temporary: the whole value before the loop, a slice per group.
        temp = self._temporary(value.type)
        stored = self.pre.zext(value, temp.type.pointee) if _is_mask(value.type) else value
        self.pre.store(stored, temp)
        got = self._load_slice(temp, temp.type.pointee)
        return b.trunc(got, self._narrow(value.type)) if _is_mask(value.type) else got

    def _stored_after(self, load: ll.LoadInstr) -> bool:
        """Whether a whole store of the run, after ``load``, changes the register it read
        before the loop starts (then the loop cannot read the register itself)."""
        if self.last_whole_store is None:
            self.position = {id(inst): k for k, inst in enumerate(self.run.insts)}
            self.last_whole_store = {
                id(inst.operands[1]): k
                for k, inst in enumerate(self.run.insts)
                if type(inst) is ll.StoreInstr and self.run.kind(inst) == _WHOLE
            }
        last = self.last_whole_store.get(id(load.operands[0]), -1)
        return last > self.position[id(load)]

    def _splat(self, scalar: ll.Value, b: ll.IRBuilder) -> ll.Value:
        t = ll.VectorType(scalar.type, self.size)
        one = b.insert_element(ll.Constant(t, ll.Undefined), scalar, ll.Constant(_I32, 0))
        return b.shuffle_vector(
            one, ll.Constant(t, ll.Undefined), ll.Constant(ll.VectorType(_I32, self.size), None)
        )

    def _untouched_register(self, value: ll.Value) -> ll.AllocaInstr | None:
        """The register ``value`` is a load of, when the run never writes that register
        (its memory holds ``value`` all through the loop), and it is not a mask."""
        run = self.run
        while isinstance(value, ll.LoadInstr) and id(value) in run.forwarded:
            value = run.source(value)
        if not isinstance(value, ll.LoadInstr) or id(value) not in self.in_run or _is_mask(value.type):
            return None
        register = value.operands[0]
        if any(type(i) is ll.StoreInstr and i.operands[1] is register for i in run.insts):
            return None
        return register

    def _opaque_zero(self) -> ll.Value:
        """0, read in the loop from a small array the compiler does not see through."""
        if self.zero is None:
            groups = self.run.lanes // self.size
            slot = self._temporary(ll.VectorType(_I32, groups))
            self.pre.store(ll.Constant(slot.allocated_type, None), slot)
            array = self.pre.bitcast(slot, _I32.as_pointer())
            self.zero = self.b.load(self.b.gep(array, [self.index]))
        return self.zero

    def _pointer(self, base: ll.Value, whole: ll.Type) -> ll.Value:
        """The address of the current group's slice of the ``whole``-typed vector at ``base``."""
        narrow = self._narrow(whole)
        cast = self.pre.bitcast(base, narrow.as_pointer())
        return self.b.gep(cast, [self.index])

    def _load_slice(self, base: ll.Value, whole: ll.Type) -> ll.Value:
        slot = self._pointer(base, whole)
        got = self.b.load(slot)
        got.align = max(1, (_element_bits(whole.element) or 8) // 8)
        return got

    def _temporary(self, t: ll.Type) -> ll.AllocaInstr:
        """An alloca in the entry block for a whole ``t`` (masks held as bytes)."""
        if _is_mask(t):
            t = ll.VectorType(ll.IntType(8), t.count)
        entry = ll.IRBuilder(self.func.entry_basic_block)
        entry.position_at_start(self.func.entry_basic_block)
        slot = entry.alloca(t)
        slot.align = 64
        return slot

    # ---- group instructions ------------------------------------------------------------------
    def _narrowed(self, inst: ll.Instruction) -> ll.Value:
        """``inst`` on the current group's slices."""
        b = self.b
        ops = [self._slice(op) for op in inst.operands]
        if isinstance(inst, ll.CallInstr):
            callee = inst.callee
            name = re.sub(rf"\.v{self.run.lanes}(?=[a-z])", f".v{self.size}", callee.name)
            fn = self.func.module.globals.get(name)
            if fn is None:
                ret = self._narrow(inst.type)
                fn = ll.Function(self.func.module, ll.FunctionType(ret, [a.type for a in ops[1:]]), name)
            return b.call(fn, ops[1:])
        if isinstance(inst, ll.CastInstr):
            return getattr(b, inst.opname)(ops[0], self._narrow(inst.type))
        if isinstance(inst, ll.SelectInstr):
            return b.select(ops[0], ops[1], ops[2], flags=inst.flags)
        if isinstance(inst, ll.FCMPInstr):
            return b.fcmp_ordered(inst.op, ops[0], ops[1], flags=inst.flags)
        if isinstance(inst, ll.ICMPInstr):
            symbol, signed = _ICMP_OPERATORS[inst.op]
            return (b.icmp_signed if signed else b.icmp_unsigned)(symbol, ops[0], ops[1])
        if inst.opname == "fneg":
            return b.fneg(ops[0], flags=inst.flags)
        method = {"and": "and_", "or": "or_"}.get(inst.opname, inst.opname)
        return getattr(b, method)(ops[0], ops[1])  # wrap flags dropped: never less defined

    def _store_register(self, store: ll.StoreInstr) -> None:
        """The run's last store to a register, of a group value: each group its slice
        (a mask register through a byte temporary, stored whole after the loop)."""
        value, ptr = store.operands
        if _is_mask(value.type):
            temp = self._temporary(value.type)
            self.b.store(
                self.b.zext(self._slice(value), self._narrow(temp.type.pointee)),
                self._pointer(temp, temp.type.pointee),
            )
            self.after.append(lambda post: post.store(post.trunc(post.load(temp), value.type), ptr))
            return
        slot = self._pointer(ptr, value.type)
        out = self.b.store(self._slice(value), slot)
        out.align = max(1, (_element_bits(value.type.element) or 8) // 8)

    def _keep(self, inst: ll.Instruction, readers: list[ll.Instruction]) -> None:
        """A group value read after the run: stored slice by slice, loaded whole after the loop."""
        temp = self._temporary(inst.type)
        value = self.values[id(inst)]
        if _is_mask(inst.type):
            value = self.b.zext(value, self._narrow(temp.type.pointee))
        out = self.b.store(value, self._pointer(temp, temp.type.pointee))
        out.align = 1
        self.kept.append((inst, readers, temp))
