"""The concrete reference interpreter: run a PTX kernel for a whole grid on the CPU.

`launch` does what a CUDA launch does, on NumPy buffers: array arguments are
copied into a simulated global memory and back, scalars are passed by their
PTX parameter type, and every CTA of the grid runs to completion. The tests
compare what comes back with NumPy references, so this file is where "the
PTX means what we think it means" is checked without a GPU.

Execution model
---------------
* **Warps.** A CTA's threads are cut into warps of 32 lanes in thread-index
  order (x fastest); the last warp may be partial and its missing lanes never
  run. A warp executes one instruction for all its active lanes at once: the
  instruction semantics (`Semantics`, shared with the symbolic executor) run
  over `ConcreteDomain` values, one ``uint64`` per lane.
* **Divergence.** Each call frame of a warp has a SIMT reconvergence stack of
  ``(pc, mask, reconvergence pc)`` entries. A guarded ``bra`` whose lanes
  disagree parks the current entry at the branch block's immediate
  post-dominator (`CFG.reconvergence_point`) and pushes one entry per side;
  an entry is popped when it reaches its reconvergence pc or runs out of
  lanes. ``brx.idx`` and calls through function pointers split the same way
  per distinct target. ``ret``/``exit`` retire lanes (from every entry, so they
  never come back at a join). Loops need nothing special: lanes that leave
  early wait at the loop's post-dominator for the others. As ptxas does, a
  ``bra`` to a block that starts with ``ret``/``exit`` retires its lanes on
  the spot, and post-dominators are then computed without those edges, so
  an early ``return`` inside a loop does not keep the other lanes apart
  after the loop (``__activemask()`` there agrees with an H200).
* **CTAs and barriers.** CTAs run one after another, so threads of different
  CTAs can only communicate through atomics (as CUDA guarantees anyway).
  Within a CTA, warps are scheduled round-robin, each for a time slice
  (``quantum`` warp-instructions) or until it reaches ``bar.sync``; a barrier
  releases once every warp that still has live lanes arrived (or the thread
  count of ``bar.sync a, b``). Arrival is per warp (the pre-Volta rule): a
  barrier inside code where the warp is diverged counts the warp when its
  first path gets there.
* **Calls.** ``call`` of a ``.func`` in the module pushes a frame: fresh
  registers, its own ``.param`` space (the caller's ``param0``... bytes copied
  into the callee's parameters, ``func_retval0`` copied back into the caller's
  ``retval0``), and a local depot on the thread's local stack, so recursion
  works. ``vprintf`` is captured (`LaunchResult.printf`), ``__assertfail``
  raises `EmulationError`, ``malloc``/``free`` use the global heap.
* **Memory.** See `ptxasw.emulator.memory` for the address windows: a generic
  address names its space, ``cvta`` adds or removes the window base and
  ``isspacep`` tests it (the semantics call the machine's `convert_address`
  and `in_space` hooks for them: only the executor knows the address map). Every access is bounds- and
  alignment-checked; a fault raises `EmulationError` at the instruction's
  ``file:line:col``. Shared memory is zeroed for each CTA, local memory too.
* **Warp-collective and atomic operations** implement `Machine.warp` and
  `Machine.atomic`. Atomics execute lane by lane in increasing lane order and
  warp by warp in scheduling order, which makes every run deterministic (float
  atomics included).
* **What is not modelled** (texture, surface, tensor-core and asynchronous
  bulk instructions...) is reported once per instruction in
  `LaunchResult.warnings`, and its results are zeros. Registers read before
  any write are zero too.
* **Budget.** ``max_steps`` bounds the warp-instructions of a launch, so a
  kernel that never terminates fails with "step budget exceeded" instead of
  hanging.

Speed: one `WarpMachine` (and one `Semantics`) serves every warp of a launch
and is re-bound to the warp being run, so whatever the semantics caches per
instruction is shared; the CFG and the decoded form of each instruction are
computed once per function (`Program`), and a launch of the same module object
reuses them.
"""

from __future__ import annotations

import re
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import product

import numpy as np

from ptxasw.emulator.cfg import CFG, build_cfg
from ptxasw.emulator.concrete import Bits, ConcreteDomain
from ptxasw.emulator.memory import (
    CONST_WINDOW,
    FUNC_WINDOW,
    LOCAL_STRIDE,
    LOCAL_WINDOW,
    PARAM_WINDOW,
    SHARED_WINDOW,
    WINDOW_SHIFT,
    FlatMemory,
    GlobalMemory,
    LaneMemory,
    dtype_for,
    normalize_space,
)
from ptxasw.emulator.semantics import Semantics
from ptxasw.errors import EmulationError, PtxError
from ptxasw.parser import ir, isa

__all__ = [
    "EmulationError",
    "LaunchResult",
    "PrintfRecord",
    "Program",
    "WarpMachine",
    "launch",
]

LANES = 32
FULL_MASK = (1 << LANES) - 1
DEFAULT_MAX_STEPS = 50_000_000
DEFAULT_QUANTUM = 20_000
MAX_CALL_DEPTH = 2048
MAX_LOCAL_BYTES = 1 << 30  # local memory of all threads of a CTA together
LOCAL_MODULE_BASE = 0  # module-scope .local variables sit at the bottom of each stack

_LANE_IDS = np.arange(LANES, dtype=np.uint64)
_LANE_INTS = np.arange(LANES, dtype=np.int64)
_U64_MAX = (1 << 64) - 1

_MASK_CACHE: dict[int, np.ndarray] = {}


def _mask_array(mask: int) -> np.ndarray:
    """The lanes of an int bit mask as a read-only bool array (cached)."""
    arr = _MASK_CACHE.get(mask)
    if arr is None:
        arr = ((np.uint64(mask) >> _LANE_IDS) & np.uint64(1)).astype(bool)
        arr.flags.writeable = False
        if len(_MASK_CACHE) < 8192:
            _MASK_CACHE[mask] = arr
    return arr


def _to_mask(data: np.ndarray) -> int:
    """Bit mask of the lanes whose value is non-zero."""
    return int.from_bytes(np.packbits(data != 0, bitorder="little").tobytes(), "little")


def _width_mask(width: int) -> int:
    return (1 << width) - 1


def _bits_of(ptx_type: str | None, default: int = 32) -> int:
    bits = isa.type_bits(ptx_type) if ptx_type else None
    return bits if bits else default


# --------------------------------------------------------------------------
# Results


@dataclass(slots=True)
class PrintfRecord:
    """One ``printf`` call of one thread: the format, the raw argument buffer
    (as the device laid it out) and the decoded text."""

    format: str
    args: bytes
    text: str
    ctaid: tuple[int, int, int]
    tid: tuple[int, int, int]


@dataclass
class LaunchResult:
    """What a launch produced.

    ``buffers`` is parallel to the launch's ``args``: the final contents of
    each array argument (same dtype and shape), None for scalars. (Writable
    array arguments are also updated in place.) ``printf`` holds one string
    per device ``printf`` call in execution order (warps in scheduling order,
    lanes in lane order), with one trailing newline removed. ``globals`` holds
    the final bytes of the module's ``.global`` variables. ``steps`` counts
    warp-instructions.
    """

    buffers: list[np.ndarray | None]
    printf: list[str] = field(default_factory=list)
    printf_records: list[PrintfRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    globals: dict[str, np.ndarray] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------
# Static information about the module


@dataclass(slots=True)
class _Var:
    """A declared variable: its space, type, size and initialiser."""

    name: str
    space: str
    type: str
    size: int
    align: int
    decl: ir.VarDecl
    init: ir.Initializer | None = None
    unsized: bool = False


def _elem_bytes(ptx_type: str) -> int:
    bits = isa.type_bits(ptx_type)
    if not bits:
        return 8 if ptx_type in (".texref", ".samplerref", ".surfref") else 4
    return max(bits // 8, 1)


def _var_of(decl: ir.VarDecl, name: ir.VarName) -> _Var:
    elem = _elem_bytes(decl.type)
    vec = {".v2": 2, ".v4": 4, ".v8": 8}.get(decl.vector or "", 1)
    count = 1
    unsized = False
    for dim in name.array:
        if dim is None:
            unsized = True
            dim = _init_length(name.init)
        count *= dim
    size = elem * vec * count
    align = decl.align or elem * vec
    return _Var(str(name.name), normalize_space(decl.space), decl.type, size, align, decl, name.init, unsized)


def _init_length(init: ir.Initializer | None) -> int:
    if isinstance(init, list):
        return sum(_init_length(i) if isinstance(i, list) else 1 for i in init)
    return 0


def _param_var(spec: ir.ParamSpec) -> _Var:
    elem = _elem_bytes(spec.type)
    vec = {".v2": 2, ".v4": 4, ".v8": 8}.get(spec.vector or "", 1)
    count = 1
    for dim in spec.array:
        count *= dim or 0
    size = elem * vec * count
    decl = ir.VarDecl(spec.space, spec.type, [ir.VarName(spec.name)])
    return _Var(spec.name, spec.space, spec.type, size, spec.align or elem * vec, decl)


def _align(value: int, align: int) -> int:
    return -(-value // align) * align


def _walk_decls(body: list[ir.Statement]) -> list[ir.VarDecl]:
    out: list[ir.VarDecl] = []
    for stmt in body:
        if isinstance(stmt, ir.VarDecl):
            out.append(stmt)
        elif isinstance(stmt, ir.Block):
            out.extend(_walk_decls(stmt.body))
    return out


# Operand kinds of the decoded instructions (ints: the hot loop compares them).
_EXEC, _BRA, _BRX, _CALL, _RET, _EXIT, _TRAP, _BAR, _BAR_ARRIVE, _BAR_RED = range(10)
_NOP, _MAPA, _CTARANK, _UNSUPPORTED, _BRA_RET = range(10, 15)


@dataclass(slots=True)
class _Call:
    """The decoded operands of a ``call``."""

    returns: tuple[ir.Operand, ...]
    callee: ir.Symbol | ir.Register
    args: tuple[ir.Operand, ...]


class _Op:
    """One decoded instruction: what the run loop does with it."""

    __slots__ = ("call", "exits", "inst", "kind", "rpc", "target", "targets", "width")

    def __init__(self, kind: int, inst: ir.Instruction) -> None:
        self.kind = kind
        self.inst = inst
        self.target = -1
        self.rpc = -1
        self.targets: tuple[int, ...] = ()
        self.call: _Call | None = None
        self.width = 0
        self.exits = False  # a branch to `exit` (not `ret`): its lanes leave the kernel


class _FnInfo:
    """A function decoded for execution: its CFG, decoded instructions and
    the layout of its frame (``.param`` and ``.local`` symbols)."""

    def __init__(self, fn: ir.Function, cfg: CFG) -> None:
        self.fn = fn
        self.cfg = cfg
        self.code: list[_Op] = []
        # name -> (space, value, relative to the frame's local base)
        self.symbols: dict[str, tuple[str, int, bool]] = {}
        self.param_layout: dict[str, tuple[int, int]] = {}
        self.param_size = 0
        self.local_size = 0
        self.reg_types: dict[str, str] = {}


class Program:
    """A parsed module prepared for execution: variable layouts, function
    addresses and (lazily) every function's decoded instructions.

    Built once per module by `launch` (and reused for later launches of the
    same module object); build one yourself to launch several kernels.
    """

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.path = module.path
        self.functions: dict[str, ir.Function] = {}
        for fn in module.functions:
            if fn.name not in self.functions or fn.body is not None:
                self.functions[fn.name] = fn
        self.func_names = list(self.functions)
        self.func_index = {name: i for i, name in enumerate(self.func_names)}
        self.module_vars: dict[str, _Var] = {}
        self.body_vars: dict[tuple[str, str], _Var] = {}
        for item in module.items:
            if isinstance(item, ir.VarDecl):
                for name in item.names:
                    var = _var_of(item, name)
                    self.module_vars[var.name] = var
        for fn in self.functions.values():
            if fn.body is None:
                continue
            for decl in _walk_decls(fn.body.body):
                if normalize_space(decl.space) in (".shared", ".global", ".const"):
                    for name in decl.names:
                        self.body_vars[(fn.name, str(name.name))] = _var_of(decl, name)
        self._layout()
        self._decoded: dict[str, _FnInfo] = {}

    # ---- layout ------------------------------------------------------------

    def _layout(self) -> None:
        """Shared, const, module-local and global addresses of every variable."""
        self.shared_offset: dict[object, int] = {}
        self.const_offset: dict[object, int] = {}
        self.global_order: list[tuple[object, _Var]] = []
        self.module_local_offset: dict[str, int] = {}
        shared_top = const_top = local_top = 0
        extern_shared: list[object] = []
        extern_align = 16
        everything: list[tuple[object, _Var]] = list(self.module_vars.items())
        everything += list(self.body_vars.items())
        for key, var in everything:
            if var.space == ".shared":
                if var.unsized or (".extern" in var.decl.linkage and var.size == 0):
                    extern_shared.append(key)
                    extern_align = max(extern_align, var.align)
                    continue
                shared_top = _align(shared_top, var.align)
                self.shared_offset[key] = shared_top
                shared_top += var.size
            elif var.space == ".const":
                const_top = _align(const_top, var.align)
                self.const_offset[key] = const_top
                const_top += var.size
            elif var.space == ".global":
                self.global_order.append((key, var))
            elif var.space == ".local" and isinstance(key, str):
                local_top = _align(local_top, var.align)
                self.module_local_offset[key] = local_top
                local_top += var.size
        self.static_shared = shared_top
        self.dynamic_shared_base = _align(shared_top, extern_align)
        for key in extern_shared:
            self.shared_offset[key] = self.dynamic_shared_base
        self.const_size = const_top
        self.module_local_size = _align(local_top, 16)
        # Global variables: addresses are fixed by allocating them first, in
        # declaration order, in every launch's fresh global memory.
        probe = GlobalMemory()
        self.global_address: dict[object, int] = {}
        for key, var in self.global_order:
            self.global_address[key] = probe.allocate(max(var.size, 1), _global_name(key), var.align)
        self.const_image = FlatMemory(const_top, ".const")
        for key, var in everything:
            if var.space == ".const" and var.init is not None:
                data = self.initial_bytes(var)
                off = self.const_offset[key]
                self.const_image.data[off : off + len(data)] = np.frombuffer(data, dtype=np.uint8)

    def module_symbol(self, name: str, fn_name: str | None = None) -> tuple[str, int] | None:
        """``(space, address in that space)`` of a variable or function by name
        (a function's own ``.shared``/``.global``/``.const`` first)."""
        if fn_name is not None and (fn_name, name) in self.body_vars:
            return self._var_address((fn_name, name), self.body_vars[(fn_name, name)])
        var = self.module_vars.get(name)
        if var is not None:
            return self._var_address(name, var)
        index = self.func_index.get(name)
        if index is not None:
            return ".func", FUNC_WINDOW + 16 * index
        return None

    def _var_address(self, key: object, var: _Var) -> tuple[str, int]:
        if var.space == ".shared":
            return ".shared", self.shared_offset[key]
        if var.space == ".const":
            return ".const", self.const_offset[key]
        if var.space == ".global":
            return ".global", self.global_address[key]
        if var.space == ".local" and isinstance(key, str):
            return ".local", LOCAL_MODULE_BASE + self.module_local_offset[key]
        return var.space, 0

    def generic_address(self, space: str, address: int) -> int:
        """The generic address of a module-level object (initialisers' ``generic()``)."""
        base = {".shared": SHARED_WINDOW, ".const": CONST_WINDOW, ".param": PARAM_WINDOW}.get(space, 0)
        return address + base

    def function_at(self, address: int) -> str | None:
        """The function a function-pointer value points to."""
        off = address - FUNC_WINDOW
        if off < 0 or off % 16:
            return None
        index = off // 16
        return self.func_names[index] if index < len(self.func_names) else None

    # ---- initialisers ----------------------------------------------------------

    def eval_expr(self, expr: ir.Expr, loc: ir.SourceLoc | None = None) -> int | float:
        """Value of a constant expression of an initialiser (symbols are addresses)."""
        match expr:
            case ir.IntImm(value=v):
                return v
            case ir.FloatImm():
                return _float_imm(expr)
            case ir.Symbol(name=name):
                found = self.module_symbol(name)
                if found is None:
                    raise PtxError(f"unknown symbol {name} in an initialiser", loc)
                return found[1]
            case ir.CallExpr(func=func, args=args) if func in ("generic", "mask") and args:
                inner = args[0]
                if func == "generic" and isinstance(inner, ir.Symbol):
                    found = self.module_symbol(inner.name)
                    if found is None:
                        raise PtxError(f"unknown symbol {inner.name} in an initialiser", loc)
                    return self.generic_address(*found)
                return self.eval_expr(inner, loc)
            case ir.ParenExpr(inner=inner):
                return self.eval_expr(inner, loc)
            case ir.UnaryExpr(op=op, operand=inner):
                v = self.eval_expr(inner, loc)
                if op == "-":
                    return -v
                if op == "~":
                    return ~int(v)
                return int(not v)
            case ir.BinaryExpr(op=op, lhs=lhs, rhs=rhs):
                return _binop(op, self.eval_expr(lhs, loc), self.eval_expr(rhs, loc))
        raise PtxError(f"unsupported initialiser expression {expr!r}", loc)

    def initial_bytes(self, var: _Var) -> bytes:
        """The initial contents of a variable (zeros where not initialised)."""
        out = bytearray(var.size)
        if var.init is None:
            return bytes(out)
        values = _flatten_init(var.init)
        elem = _elem_bytes(var.type)
        for i, value in enumerate(values):
            if (i + 1) * elem > var.size:
                break
            if isinstance(value, ir.SamplerField):
                continue
            v = self.eval_expr(value, var.decl.loc)
            out[i * elem : (i + 1) * elem] = _encode_scalar(v, var.type, value)
        return bytes(out)

    # ---- functions ---------------------------------------------------------------

    def decoded(self, name: str, semantics: Semantics) -> _FnInfo:
        """The decoded form of a function with a body (cached)."""
        info = self._decoded.get(name)
        if info is None:
            fn = self.functions[name]
            info = self._decoded[name] = _decode_function(self, fn, semantics)
        return info


def _global_name(key: object) -> str:
    return key if isinstance(key, str) else "::".join(key)  # type: ignore[arg-type]


def _flatten_init(init: ir.Initializer) -> list[ir.Initializer]:
    if isinstance(init, list):
        out: list[ir.Initializer] = []
        for item in init:
            out.extend(_flatten_init(item))
        return out
    return [init]


def _float_imm(imm: ir.FloatImm) -> float:
    if imm.kind == "f":
        return struct.unpack("<f", struct.pack("<I", int(imm.text[2:], 16)))[0]
    if imm.kind == "d":
        return struct.unpack("<d", struct.pack("<Q", int(imm.text[2:], 16)))[0]
    return float(imm.text)


def _binop(op: str, a: int | float, b: int | float) -> int | float:
    ops: dict[str, Callable[[int | float, int | float], int | float]] = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "/": lambda x, y: x / y if isinstance(x, float) or isinstance(y, float) else int(x / y),
        "%": lambda x, y: int(x) % int(y),
        "<<": lambda x, y: int(x) << int(y),
        ">>": lambda x, y: int(x) >> int(y),
        "&": lambda x, y: int(x) & int(y),
        "|": lambda x, y: int(x) | int(y),
        "^": lambda x, y: int(x) ^ int(y),
        "&&": lambda x, y: int(bool(x and y)),
        "||": lambda x, y: int(bool(x or y)),
        "==": lambda x, y: int(x == y),
        "!=": lambda x, y: int(x != y),
        "<": lambda x, y: int(x < y),
        ">": lambda x, y: int(x > y),
        "<=": lambda x, y: int(x <= y),
        ">=": lambda x, y: int(x >= y),
    }
    return ops[op](a, b)


def _encode_scalar(value: int | float | object, ptx_type: str, literal: object = None) -> bytes:
    """Bytes of one value of a PTX type (little-endian); floats round to nearest.

    A ``0f``/``0d`` literal is a bit pattern: it is stored as such in a
    variable of its own width (``.f32``, but also ``.b32``/``.u32``) and
    converted by value only into a float type of another width.
    """
    bits = _bits_of(ptx_type)
    nbytes = max(bits // 8, 1)
    mask = _width_mask(nbytes * 8)
    is_float = ptx_type.startswith((".f", ".bf")) and ptx_type not in (".f16x2", ".bf16x2")
    if isinstance(literal, ir.FloatImm) and literal.kind in ("f", "d"):
        literal_bits = 32 if literal.kind == "f" else 64
        if not is_float or bits == literal_bits:
            return (int(literal.text[2:], 16) & mask).to_bytes(nbytes, "little")
    if is_float:
        f = float(value)  # type: ignore[arg-type]
        with np.errstate(all="ignore"):
            if bits == 64:
                return struct.pack("<d", f)
            if bits == 32:
                return np.float32(f).tobytes()
            if ptx_type == ".f16":
                return np.float16(f).tobytes()
            if ptx_type == ".bf16":
                return (_f32_to_bf16(int(np.float32(f).view(np.uint32)))).to_bytes(2, "little")
    return (int(value) & mask).to_bytes(nbytes, "little")  # type: ignore[call-overload]


def _f32_to_bf16(bits: int) -> int:
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


# --------------------------------------------------------------------------
# Decoding a function


def _intern(name: str) -> str:
    return sys.intern(str(name))


class _Scope:
    """Register declarations of one ``{ }`` scope (for shadowing)."""

    __slots__ = ("exact", "id", "parent", "ranges")

    def __init__(self, sid: int, parent: _Scope | None) -> None:
        self.id = sid
        self.parent = parent
        self.exact: set[str] = set()
        self.ranges: list[tuple[str, int]] = []

    def declares(self, name: str) -> bool:
        if name in self.exact:
            return True
        for prefix, count in self.ranges:
            if name.startswith(prefix):
                tail = name[len(prefix) :]
                if tail.isdigit() and int(tail) < count:
                    return True
        return False


def _scoped_instructions(fn: ir.Function) -> tuple[list[ir.Instruction], list[_Scope]]:
    """Instructions in text order (as the CFG lists them) with their scopes."""
    insts: list[ir.Instruction] = []
    scopes: list[_Scope] = []
    counter = [0]
    root = _Scope(0, None)
    for p in [*fn.params, *(fn.returns or [])]:
        if p.space == ".reg":
            root.exact.add(p.name)

    def walk(body: list[ir.Statement], scope: _Scope) -> None:
        for stmt in body:
            if isinstance(stmt, ir.VarDecl) and stmt.space == ".reg":
                for n in stmt.names:
                    if n.count is not None:
                        scope.ranges.append((str(n.name), n.count))
                    else:
                        scope.exact.add(str(n.name))
        for stmt in body:
            if isinstance(stmt, ir.Instruction):
                insts.append(stmt)
                scopes.append(scope)
            elif isinstance(stmt, ir.Block):
                counter[0] += 1
                walk(stmt.body, _Scope(counter[0], scope))

    assert fn.body is not None
    walk(fn.body.body, root)
    return insts, scopes


def _register_key(name: str, scope: _Scope) -> str:
    """A name unique per declaration: a register declared in a nested scope
    under a name an enclosing scope also declares gets ``name@scope``."""
    s: _Scope | None = scope
    while s is not None:
        if s.declares(name):
            outer = s.parent
            while outer is not None:
                if outer.declares(name):
                    return _intern(f"{name}@{s.id}")
                outer = outer.parent
            break
        s = s.parent
    return _intern(name)


def _rewrite_operand(op: ir.Operand, rename: Callable[[str], str]) -> ir.Operand:
    match op:
        case ir.Register(name=name, selector=sel):
            return ir.Register(rename(name), sel)
        case ir.Symbol(name=name):
            return ir.Symbol(_intern(name))
        case ir.Address(base=base, offset=off, offset_text=text):
            new_base = None if base is None else _rewrite_operand(base, rename)
            return ir.Address(new_base, off, text)  # type: ignore[arg-type]
        case ir.Negated(operand=inner):
            return ir.Negated(_rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.VectorOperand(elements=items):
            return ir.VectorOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.ParenOperand(items=items):
            return ir.ParenOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.ListOperand(items=items):
            return ir.ListOperand(tuple(_rewrite_operand(i, rename) for i in items))
        case ir.PairOperand(first=a, second=b):
            return ir.PairOperand(_rewrite_operand(a, rename), _rewrite_operand(b, rename))
        case ir.UnaryExpr(op=o, operand=inner):
            return ir.UnaryExpr(o, _rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.BinaryExpr(op=o, lhs=lhs, rhs=rhs):
            return ir.BinaryExpr(o, _rewrite_operand(lhs, rename), _rewrite_operand(rhs, rename))  # type: ignore[arg-type]
        case ir.ParenExpr(inner=inner):
            return ir.ParenExpr(_rewrite_operand(inner, rename))  # type: ignore[arg-type]
        case ir.CallExpr(func=f, args=args):
            return ir.CallExpr(f, tuple(_rewrite_operand(a, rename) for a in args))  # type: ignore[misc]
    return op


def _rewrite(inst: ir.Instruction, scope: _Scope) -> ir.Instruction:
    """A copy with interned register names (fast dict keys) and shadowed
    registers renamed apart; the copy keeps the original's location."""
    cache: dict[str, str] = {}

    def rename(name: str) -> str:
        key = cache.get(name)
        if key is None:
            key = cache[name] = _register_key(name, scope)
        return key

    guard = inst.guard
    if guard is not None:
        guard = ir.Guard(ir.Register(rename(guard.predicate.name), guard.predicate.selector), guard.negated)
    operands = tuple(_rewrite_operand(op, rename) for op in inst.operands)
    return ir.Instruction(inst.opcode, inst.modifiers, operands, guard, inst.loc)


def _decode_call(inst: ir.Instruction) -> _Call:
    ops = list(inst.operands)
    returns: tuple[ir.Operand, ...] = ()
    if ops and isinstance(ops[0], ir.ParenOperand):
        returns = ops.pop(0).items  # type: ignore[union-attr]
    if not ops or not isinstance(ops[0], (ir.Symbol, ir.Register)):
        raise EmulationError("call without a callee", inst.loc)
    callee = ops.pop(0)
    args: tuple[ir.Operand, ...] = ()
    if ops and isinstance(ops[0], ir.ParenOperand):
        args = ops.pop(0).items  # type: ignore[union-attr]
    return _Call(returns, callee, args)  # type: ignore[arg-type]


def _classify(inst: ir.Instruction, semantics: Semantics) -> int:
    opcode = inst.opcode
    if opcode == "bra":
        return _BRA
    if opcode == "brx.idx":
        return _BRX
    if opcode == "call":
        return _CALL
    if opcode == "ret":
        return _RET
    if opcode == "exit":
        return _EXIT
    if opcode == "trap":
        return _TRAP
    if opcode in ("bar", "barrier"):
        if ".red" in inst.modifiers:
            return _BAR_RED
        if ".arrive" in inst.modifiers:
            return _BAR_ARRIVE
        return _BAR
    if opcode == "barrier.cluster":
        return _BAR if ".wait" in inst.modifiers else _NOP
    if opcode == "mapa":
        return _MAPA
    if opcode == "getctarank":
        return _CTARANK
    return _EXEC if semantics.supports(inst) else _UNSUPPORTED


def _decode_function(program: Program, fn: ir.Function, semantics: Semantics) -> _FnInfo:
    cfg = build_cfg(fn)
    info = _FnInfo(fn, cfg)
    insts, scopes = _scoped_instructions(fn)
    if len(insts) != len(cfg.instructions):
        raise EmulationError(f"internal: instruction count of {fn.name} differs from its CFG", fn.loc)

    # Frame layout: parameters, return parameters, then the body's .param
    # variables (call sites), all in one per-lane .param buffer.
    layout: dict[str, tuple[int, int]] = {}
    top = 0
    param_vars = [_param_var(p) for p in [*fn.params, *(fn.returns or [])] if p.space == ".param"]
    decls = _walk_decls(fn.body.body) if fn.body is not None else []
    for decl in decls:
        if normalize_space(decl.space) == ".param":
            param_vars.extend(_var_of(decl, n) for n in decl.names)
    for var in param_vars:
        if var.name in layout:  # the same call-site name in several blocks: one slot
            off, size = layout[var.name]
            if var.size <= size:
                continue
        top = _align(top, max(var.align, 1))
        layout[var.name] = (top, var.size)
        top += var.size
    info.param_layout = layout
    info.param_size = _align(max(top, 8), 8)
    for name, (off, _) in layout.items():
        info.symbols[name] = (".param", off, False)

    local_top = 0
    for decl in decls:
        if normalize_space(decl.space) == ".local":
            for n in decl.names:
                var = _var_of(decl, n)
                if var.name in info.symbols:
                    continue
                local_top = _align(local_top, var.align)
                info.symbols[var.name] = (".local", local_top, True)
                local_top += var.size
        elif decl.space == ".reg":
            for n in decl.names:
                info.reg_types[str(n.name)] = decl.type
        elif normalize_space(decl.space) in (".shared", ".global", ".const"):
            for n in decl.names:
                found = program.module_symbol(str(n.name), fn.name)
                if found is not None:
                    info.symbols[str(n.name)] = (found[0], found[1], False)
    info.local_size = _align(local_top, 16)
    for p in [*fn.params, *(fn.returns or [])]:
        if p.space == ".reg":
            info.reg_types[p.name] = p.type

    blocks = cfg.blocks
    ncode = len(insts)

    def start_of(block_id: int) -> int:
        return ncode if block_id == cfg.exit else blocks[block_id].start

    leaving = cfg.exit_branches

    def reconvergence(block_id: int) -> int:
        r = cfg.reconvergence_point(block_id, ignoring_exit_branches=True)
        return -1 if r == cfg.exit else blocks[r].start

    for i, (orig, scope) in enumerate(zip(insts, scopes, strict=True)):
        inst = _rewrite(orig, scope)
        kind = _classify(inst, semantics)
        op = _Op(kind, inst)
        if kind in (_BRA, _BRX):
            block = blocks[cfg.block_of(i)]
            op.targets = tuple(start_of(t) for t in block.targets)
            op.target = op.targets[0] if op.targets else ncode
            if kind == _BRA and block.id in leaving:
                op.kind = _BRA_RET
                op.exits = blocks[block.targets[0]].instructions[0].opcode == "exit"
            elif inst.guard is not None or kind == _BRX:
                op.rpc = reconvergence(block.id)
        elif kind == _CALL:
            op.call = _decode_call(inst)
        elif kind == _MAPA:
            op.width = _bits_of(isa.instruction_type(inst), 64)
        info.code.append(op)
    return info


# --------------------------------------------------------------------------
# Run-time state


class _Entry:
    """One SIMT stack entry: lanes ``mask`` run from ``pc`` until ``rpc``."""

    __slots__ = ("mask", "pc", "rpc")

    def __init__(self, pc: int, mask: int, rpc: int) -> None:
        self.pc = pc
        self.mask = mask
        self.rpc = rpc


class _Frame:
    """One activation of a function in one warp."""

    __slots__ = (
        "call_op",
        "code",
        "info",
        "local_base",
        "local_top",
        "param",
        "regs",
        "returned",
        "stack",
        "sym_cache",
    )

    def __init__(self, info: _FnInfo, mask: int, local_base: int, call_op: _Op | None) -> None:
        self.info = info
        self.code = info.code
        self.regs: dict[str, Bits] = {}
        self.stack = [_Entry(0, mask, -1)]
        self.param = LaneMemory(LANES, info.param_size, ".param")
        self.local_base = local_base
        self.local_top = local_base + info.local_size
        self.returned = 0
        self.call_op = call_op
        self.sym_cache: dict[tuple[str, int], Bits] = {}


class _Warp:
    """A warp of a CTA: its frames (call stack), live lanes and special registers."""

    __slots__ = ("bar_red", "done", "frames", "full", "index", "live", "rows", "specials", "waiting")

    def __init__(self, index: int, nlanes: int) -> None:
        self.index = index
        self.full = (1 << nlanes) - 1
        self.live = self.full
        self.frames: list[_Frame] = []
        self.specials: dict[tuple[str, str | None], Bits] = {}
        self.rows = np.arange(index * LANES, (index + 1) * LANES, dtype=np.int64)
        self.waiting: object | None = None
        self.done = False
        self.bar_red: tuple[_Op, int, int] | None = None


@dataclass(slots=True)
class _Cta:
    ctaid: tuple[int, int, int]
    shared: FlatMemory
    local: LaneMemory
    warps: list[_Warp]
    waiting: dict[object, list[_Warp]] = field(default_factory=dict)
    arrived: dict[object, int] = field(default_factory=dict)
    expected: dict[object, int] = field(default_factory=dict)


# --------------------------------------------------------------------------
# The machine the semantics run on


class WarpMachine:
    """`Machine` over `ConcreteDomain`: the state of the warp being run.

    One instance serves a whole launch; the interpreter binds it to a warp
    (and frame) before running it, so ``regs`` and the active mask are those
    of that warp. Register writes only change active lanes; memory operations
    only touch lanes that are active and whose guard holds.
    """

    def __init__(self, launch: _Launch) -> None:
        self.dom = ConcreteDomain(LANES)
        self.launch = launch
        self.current: _Warp | None = None
        self.frame: _Frame | None = None
        self.regs: dict[str, Bits] = {}
        self.mask = 0
        self.full = FULL_MASK
        self.active = _mask_array(0)
        self.inst: ir.Instruction | None = None

    # ---- binding -------------------------------------------------------------

    def bind(self, warp: _Warp) -> None:
        self.current = warp
        self.full = warp.full
        self.bind_frame(warp.frames[-1])

    def bind_frame(self, frame: _Frame) -> None:
        self.frame = frame
        self.regs = frame.regs

    def set_mask(self, mask: int) -> None:
        self.mask = mask
        self.active = _mask_array(mask)

    # ---- registers ---------------------------------------------------------------

    def read(self, reg: ir.Register, width: int) -> Bits:
        value = self.regs.get(reg.name)
        if value is None or reg.selector is not None:
            value = self._read_other(reg, width)
        if value.width != width:
            if value.width > width:
                return Bits(value.data & np.uint64(_width_mask(width)), width)
            return Bits(value.data, width)
        return value

    def _read_other(self, reg: ir.Register, width: int) -> Bits:
        assert self.current is not None
        special = self.current.specials.get((reg.name, reg.selector))
        if special is not None:
            return special
        if reg.name in _CLOCKS:
            return self.launch.clock(reg.name)
        if reg.selector is not None:
            value = self.regs.get(f"{reg.name}.{reg.selector}")
            if value is not None:
                return value
        elif reg.name in self.regs:
            return self.regs[reg.name]
        return Bits(np.zeros(LANES, dtype=np.uint64), width)

    def write(self, reg: ir.Register, value: Bits) -> None:
        key = reg.name if reg.selector is None else f"{reg.name}.{reg.selector}"
        if self.mask == self.full:
            self.regs[key] = value
            return
        old = self.regs.get(key)
        if old is None:
            old_data = np.zeros(LANES, dtype=np.uint64)
        else:
            old_data = old.data
            if old.width > value.width:
                old_data = old_data & np.uint64(_width_mask(value.width))
        self.regs[key] = Bits(np.where(self.active, value.data, old_data), value.width)

    def write_under(self, reg: ir.Register, value: Bits, mask: int) -> None:
        """Write only the lanes of ``mask`` (a subset of the active lanes)."""
        saved = self.mask
        if mask != saved:
            self.set_mask(mask)
        try:
            self.write(reg, value)
        finally:
            if mask != saved:
                self.set_mask(saved)

    # ---- symbols --------------------------------------------------------------------

    def symbol_address(self, name: str, width: int) -> Bits:
        frame = self.frame
        assert frame is not None
        key = (name, width)
        value = frame.sym_cache.get(key)
        if value is None:
            address = self.launch.resolve_symbol(frame, name, self.inst)
            value = frame.sym_cache[key] = self.dom.const(address & _width_mask(width), width)
        return value

    # ---- memory -------------------------------------------------------------------------

    def _lanes(self, cond: Bits | None) -> tuple[np.ndarray | None, np.ndarray]:
        """(bool selection or None for all 32 lanes, lane indexes) of an access."""
        if cond is None:
            if self.mask == FULL_MASK:
                return None, _LANE_INTS
            sel = self.active
        else:
            sel = self.active & (cond.data != 0)
        return sel, np.flatnonzero(sel)

    def load(self, inst: ir.Instruction, space: str, address: Bits, nbytes: int, cond: Bits | None) -> Bits:
        sel, lanes = self._lanes(cond)
        if nbytes not in (1, 2, 4, 8) or normalize_space(space) not in _DATA_SPACES:
            self.unknown(inst, f"{nbytes}-byte accesses to {space} are not modelled")
            return Bits(np.zeros(LANES, dtype=np.uint64), nbytes * 8)
        if lanes.size == 0:
            return Bits(np.zeros(LANES, dtype=np.uint64), nbytes * 8)
        addrs = address.data if sel is None else address.data[sel]
        values = self.launch.gather(inst, space, addrs, lanes, nbytes)
        if sel is None:
            return Bits(values, nbytes * 8)
        out = np.zeros(LANES, dtype=np.uint64)
        out[sel] = values
        return Bits(out, nbytes * 8)

    def store(
        self, inst: ir.Instruction, space: str, address: Bits, value: Bits, nbytes: int, cond: Bits | None
    ) -> None:
        sel, lanes = self._lanes(cond)
        if nbytes not in (1, 2, 4, 8) or normalize_space(space) not in _DATA_SPACES:
            self.unknown(inst, f"{nbytes}-byte accesses to {space} are not modelled")
            return
        if lanes.size == 0:
            return
        addrs = address.data if sel is None else address.data[sel]
        values = value.data if sel is None else value.data[sel]
        self.launch.scatter(inst, space, addrs, lanes, values, nbytes)

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: Bits,
        operands: list[Bits],
        nbytes: int,
        cond: Bits | None,
    ) -> Bits:
        _, lanes = self._lanes(cond)
        out = np.zeros(LANES, dtype=np.uint64)
        if lanes.size == 0:
            return Bits(out, nbytes * 8)
        ptx_type = isa.instruction_type(inst) or f".b{nbytes * 8}"
        fn = _atomic_function(op, ptx_type, nbytes)
        if fn is None or nbytes not in (2, 4, 8):
            self.unknown(inst, f"atomic {op} on {ptx_type} is not modelled")
            return Bits(out, nbytes * 8)
        addrs = address.data[lanes]
        b = operands[0].data[lanes] if operands else np.zeros(lanes.size, dtype=np.uint64)
        c = operands[1].data[lanes] if len(operands) > 1 else b
        olds = self.launch.atomic(inst, space, addrs, lanes, nbytes, fn, b, c)
        out[lanes] = olds
        return Bits(out, nbytes * 8)

    # ---- the address map (hooks the semantics call for cvta and isspacep) ----------------

    def convert_address(self, inst: ir.Instruction, space: str, value: Bits, to_generic: bool) -> Bits:
        """``cvta``: add (to generic) or remove (``.to``) the space's window base;
        see `ptxasw.emulator.memory`. Local addresses also select the thread."""
        space = normalize_space(space)
        a = value.data
        with np.errstate(all="ignore"):
            if space == ".local":
                assert self.current is not None
                if to_generic:
                    rows = self.current.rows.astype(np.uint64)
                    r = np.uint64(LOCAL_WINDOW) + rows * np.uint64(LOCAL_STRIDE) + a
                else:
                    r = (a - np.uint64(LOCAL_WINDOW)) % np.uint64(LOCAL_STRIDE)
            else:
                base = np.uint64(_WINDOW_BASE.get(space, 0))
                r = a + base if to_generic else a - base
        return Bits(r & np.uint64(_width_mask(value.width)), value.width)

    def in_space(self, inst: ir.Instruction, space: str, address: Bits) -> Bits:
        """``isspacep``: whether a generic address lies in the space's window."""
        window = _WINDOW_OF_SPACE.get(normalize_space(space), -1)
        hit = (address.data >> np.uint64(WINDOW_SHIFT)) == np.uint64(max(window, 0))
        if window < 0:
            hit = np.zeros(LANES, dtype=bool)
        return Bits(hit.astype(np.uint64), 1)

    # ---- the other lanes --------------------------------------------------------------

    def warp(self, inst: ir.Instruction, operands: list[Bits], cond: Bits | None) -> list[Bits]:
        part = self.mask if cond is None else self.mask & _to_mask(cond.data)
        return _warp_op(self, inst, operands, part)

    def barrier(self, inst: ir.Instruction, cond: Bits | None) -> None:
        """CTA barriers are run by the interpreter itself (they suspend the
        warp); what reaches here is ``bar.warp.sync``, a no-op for a warp that
        runs its active lanes in lockstep."""

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        self.launch.warn(inst, reason)


_WINDOW_BASE = {".global": 0, ".shared": SHARED_WINDOW, ".const": CONST_WINDOW, ".param": PARAM_WINDOW}
_WINDOW_OF_SPACE = {".global": 1, ".shared": 2, ".local": 3, ".const": 4, ".param": 5}
_DATA_SPACES = frozenset({".global", ".shared", ".local", ".const", ".param", "generic", ""})
_CLOCKS = frozenset({"%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"})


# --------------------------------------------------------------------------
# Warp-collective operations


def _bits(values: np.ndarray | int, width: int) -> Bits:
    if isinstance(values, int):
        return Bits(np.full(LANES, values & _width_mask(width), dtype=np.uint64), width)
    return Bits(values.astype(np.uint64), width)


def _warp_op(m: WarpMachine, inst: ir.Instruction, ops: list[Bits], part: int) -> list[Bits]:
    opcode = inst.opcode
    mods = inst.modifiers
    if opcode == "shfl":
        return shuffle(mods, ops)
    if opcode == "activemask":
        return [_bits(m.mask, 32)]
    # vote/match/redux take (value, membermask); the lanes that take part are
    # the active ones whose guard holds and that the member mask names.
    member = part & _uniform(ops[1], part) if len(ops) > 1 else part
    if opcode == "vote":
        pred = _to_mask(ops[0].data) & member
        if ".ballot" in mods:
            return [_bits(pred, 32)]
        if ".all" in mods:
            return [_bits(int(pred == member), 1)]
        if ".any" in mods:
            return [_bits(int(pred != 0), 1)]
        return [_bits(int(pred in (0, member)), 1)]  # .uni
    lanes = [i for i in range(LANES) if member >> i & 1]
    if opcode == "match":
        values = ops[0].data
        if ".all" in mods:
            same = len({int(values[i]) for i in lanes}) <= 1
            return [_bits(member if same else 0, 32), _bits(int(same), 1)]
        groups: dict[int, int] = {}
        for i in lanes:
            v = int(values[i])
            groups[v] = groups.get(v, 0) | (1 << i)
        out = np.zeros(LANES, dtype=np.uint64)
        for i in lanes:
            out[i] = groups[int(values[i])]
        return [Bits(out, 32), _bits(0, 1)]
    if opcode == "redux":
        if isa.instruction_type(inst) not in (".u32", ".s32", ".b32"):
            m.unknown(inst, "floating-point redux is not modelled")
            return [_bits(0, ops[0].width)]
        width = ops[0].width
        raw = [int(ops[0].data[i]) for i in lanes]
        signed = ".s32" in mods
        vals = [v - (1 << width) if signed and v >> (width - 1) else v for v in raw] if raw else [0]
        if ".add" in mods:
            r = sum(vals)
        elif ".min" in mods:
            r = min(vals)
        elif ".max" in mods:
            r = max(vals)
        elif ".and" in mods:
            r = reduce(lambda a, b: a & b, vals, _width_mask(width))
        elif ".or" in mods:
            r = reduce(lambda a, b: a | b, vals, 0)
        else:
            r = reduce(lambda a, b: a ^ b, vals, 0)
        return [_bits(r, width)]
    if opcode == "elect":
        member = part & _uniform(ops[0], part) if ops else part
        leader = (member & -member).bit_length() - 1
        elected = (leader == _LANE_INTS) if member else np.zeros(LANES, dtype=bool)
        return [_bits(max(leader, 0), 32), Bits(elected.astype(np.uint64), 1)]
    m.unknown(inst, "warp operation not modelled")
    return [_bits(0, 32), _bits(0, 1)]


def _uniform(value: Bits, part: int) -> int:
    """A warp-uniform operand (a member mask): its value in the first participating lane."""
    lane = (part & -part).bit_length() - 1
    return int(value.data[max(lane, 0)])


def shuffle(mods: tuple[str, ...], ops: list[Bits]) -> list[Bits]:
    """``shfl.sync`` over converged warps: ``[value, in-range predicate]``.

    ``ops`` are the ``a, b, c`` operands for every lane; lanes ``32k..32k+31``
    form warp k (one warp in the interpreter; many in the GPU oracle).
    """
    a, b, c = ops[0], ops[1], ops[2]
    index = np.arange(a.data.size, dtype=np.int64)
    lane = index & 31
    bval = (b.data & np.uint64(31)).astype(np.int64)
    cval = (c.data & np.uint64(31)).astype(np.int64)
    seg = ((c.data >> np.uint64(8)) & np.uint64(31)).astype(np.int64)
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if ".up" in mods:
        j = lane - bval
        ok = j >= max_lane
    elif ".down" in mods:
        j = lane + bval
        ok = j <= max_lane
    elif ".bfly" in mods:
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg)
        ok = j <= max_lane
    src = (index - lane) + (np.where(ok, j, lane) & 31)
    return [Bits(a.data[src], a.width), Bits(ok.astype(np.uint64), 1)]


# --------------------------------------------------------------------------
# Atomic operations (lane by lane on Python ints)


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _f32_bits(value: float) -> int:
    with np.errstate(all="ignore"):
        return int(np.float32(value).view(np.uint32))


def _ftz32(bits: int) -> int:
    return bits & 0x80000000 if (bits & 0x7F800000) == 0 else bits


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _f64_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _add_f32(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        s = np.float32(_f32(_ftz32(a))) + np.float32(_f32(_ftz32(b)))
    return _ftz32(int(np.float32(s).view(np.uint32)))


def _add_f16(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        x = np.array([a & 0xFFFF], dtype=np.uint16).view(np.float16)[0]
        y = np.array([b & 0xFFFF], dtype=np.uint16).view(np.float16)[0]
        return int(np.array([x + y], dtype=np.float16).view(np.uint16)[0])


def _add_bf16(a: int, b: int) -> int:
    s = _f32((a & 0xFFFF) << 16) + _f32((b & 0xFFFF) << 16)
    return _f32_to_bf16(_f32_bits(s))


def _lanes2(fn: Callable[[int, int], int]) -> Callable[[int, int], int]:
    return lambda a, b: fn(a & 0xFFFF, b & 0xFFFF) | fn(a >> 16, b >> 16) << 16


def _atomic_function(op: str, ptx_type: str, nbytes: int) -> Callable[[int, int, int], int] | None:
    """``new = f(old, b, c)`` for an atom operation on raw bits, or None."""
    bits = nbytes * 8
    mask = _width_mask(bits)
    sign = 1 << (bits - 1)

    def signed(v: int) -> int:
        return v - (1 << bits) if v & sign else v

    is_float = ptx_type.startswith((".f", ".bf"))
    if op == "add":
        if ptx_type == ".f32":
            return lambda o, b, c: _add_f32(o, b)
        if ptx_type == ".f64":
            return lambda o, b, c: _f64_bits(_f64(o) + _f64(b))
        if ptx_type == ".f16":
            return lambda o, b, c: _add_f16(o, b)
        if ptx_type == ".f16x2":
            f = _lanes2(_add_f16)
            return lambda o, b, c: f(o, b)
        if ptx_type == ".bf16":
            return lambda o, b, c: _add_bf16(o, b)
        if ptx_type == ".bf16x2":
            g = _lanes2(_add_bf16)
            return lambda o, b, c: g(o, b)
        if is_float:
            return None
        return lambda o, b, c: (o + b) & mask
    if is_float and op not in ("exch", "cas"):
        return None
    if op == "inc":
        return lambda o, b, c: 0 if o >= b else (o + 1) & mask
    if op == "dec":
        return lambda o, b, c: b if o == 0 or o > b else o - 1
    if op in ("min", "max"):
        pick = min if op == "min" else max
        if ptx_type.startswith(".s"):
            return lambda o, b, c: pick(signed(o), signed(b)) & mask
        return lambda o, b, c: pick(o, b)
    if op == "and":
        return lambda o, b, c: o & b
    if op == "or":
        return lambda o, b, c: o | b
    if op == "xor":
        return lambda o, b, c: o ^ b
    if op == "exch":
        return lambda o, b, c: b
    if op == "cas":
        return lambda o, b, c: c if o == b else o
    return None


# --------------------------------------------------------------------------
# printf


_FORMAT_RE = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
    r"(?P<len>hh|h|ll|l|j|z|t|L)?(?P<conv>[diouxXeEfFgGaAcspn%])"
)


def _format_printf(fmt: str, args: bytes, read_string: Callable[[int], str]) -> str:
    """Format like the device ``printf``: every argument is aligned to its
    size in the argument buffer; floats arrive as doubles, integers as 4 bytes
    (8 with an ``l``/``ll``/``z``/``j``/``t`` length), pointers as 8."""
    pos = 0
    out: list[str] = []
    last = 0

    def take(size: int) -> int:
        nonlocal pos
        pos = _align(pos, size)
        raw = args[pos : pos + size]
        pos += size
        return int.from_bytes(raw.ljust(size, b"\0"), "little")

    for match in _FORMAT_RE.finditer(fmt):
        out.append(fmt[last : match.start()])
        last = match.end()
        conv = match["conv"]
        if conv == "%":
            out.append("%")
            continue
        width = match["width"] or ""
        if width == "*":
            width = str(_signed(take(4), 32))
        prec = match["prec"]
        if prec == "*":
            prec = str(_signed(take(4), 32))
        spec = "%" + match["flags"] + width + ("" if prec is None else "." + prec)
        wide = match["len"] in ("l", "ll", "j", "z", "t")
        if conv in "di":
            out.append((spec + "d") % _signed(take(8 if wide else 4), 64 if wide else 32))
        elif conv in "ouxX":
            out.append((spec + conv.replace("u", "d")) % take(8 if wide else 4))
        elif conv == "c":
            out.append((spec + "c") % chr(take(4) & 0xFF))
        elif conv in "eEfFgG":
            out.append((spec + conv) % _f64(take(8)))
        elif conv in "aA":
            text = _f64(take(8)).hex()
            out.append(text.upper() if conv == "A" else text)
        elif conv == "s":
            out.append((spec + "s") % read_string(take(8)))
        elif conv == "p":
            out.append(f"{take(8):#x}")
        else:  # %n writes nothing here
            take(8)
    out.append(fmt[last:])
    return "".join(out)


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


# --------------------------------------------------------------------------
# One launch


class _Launch:
    """The state of one kernel launch and the scheduler that drives it."""

    def __init__(
        self,
        program: Program,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        max_steps: int,
        quantum: int,
    ) -> None:
        self.program = program
        self.grid = grid
        self.block = block
        self.shared_bytes = shared_bytes
        self.max_steps = max_steps
        self.quantum = quantum
        self.steps = 0
        self.gmem = GlobalMemory()
        self.const = program.const_image
        self.machine = WarpMachine(self)
        self.sem = Semantics(self.machine)
        self.warnings: list[str] = []
        self._warned: set[int] = set()
        self.printf: list[PrintfRecord] = []
        self.cta: _Cta | None = None
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = -(-self.nthreads // LANES)
        # Dynamic shared memory follows the static variables (aligned for the
        # extern arrays that all alias it).
        self.shared_size = program.dynamic_shared_base + shared_bytes
        self.specials = self._launch_specials()
        self._globals_ready()

    def _globals_ready(self) -> None:
        for key, var in self.program.global_order:
            address = self.gmem.allocate(max(var.size, 1), _global_name(key), var.align)
            assert address == self.program.global_address[key]
            if var.init is not None:
                self.gmem.write(address, self.program.initial_bytes(var))

    # ---- diagnostics ---------------------------------------------------------

    def warn(self, inst: ir.Instruction, reason: str) -> None:
        if id(inst) not in self._warned:
            self._warned.add(id(inst))
            self.warnings.append(f"{inst.loc}: {inst.mnemonic}: {reason}; its results are zero")

    def error(self, message: str) -> EmulationError:
        inst = self.machine.inst
        if inst is None:
            return EmulationError(message)
        return EmulationError(f"{inst.mnemonic}: {message}", inst.loc)

    def clock(self, name: str) -> Bits:
        """Clocks read the warp-instruction count (monotonic, deterministic)."""
        ticks = self.steps * 4
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            ticks = self.steps * 1000
        if name.endswith("_hi"):
            return _bits(ticks >> 32, 32)
        if name in ("%clock64", "%globaltimer"):
            return _bits(ticks & _U64_MAX, 64)
        return _bits(ticks, 32)

    # ---- symbols -------------------------------------------------------------------

    def resolve_symbol(self, frame: _Frame, name: str, inst: ir.Instruction | None) -> int:
        found = frame.info.symbols.get(name)
        if found is not None:
            _, value, relative = found
            return value + frame.local_base if relative else value
        module = self.program.module_symbol(name)
        if module is not None:
            return module[1]
        raise EmulationError(f"unknown symbol '{name}'", inst.loc if inst else None)

    # ---- memory ---------------------------------------------------------------------

    def _locate(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> list[tuple[np.ndarray | None, np.ndarray, np.ndarray]]:
        """``[(selection or None, typed view, indexes)]`` for an access; a
        generic access to several spaces gives one entry per space."""
        space = normalize_space(space)
        if space == "generic" or space == "":
            windows = (addrs >> np.uint64(WINDOW_SHIFT)).astype(np.int64)
            first = int(windows[0])
            if (windows == first).all():
                return [(None, *self._locate_window(inst, first, addrs, lanes, nbytes))]
            out = []
            for w in np.unique(windows):
                sel = windows == w
                out.append((sel, *self._locate_window(inst, int(w), addrs[sel], lanes[sel], nbytes)))
            return out
        return [(None, *self._locate_space(inst, space, addrs, lanes, nbytes, 0))]

    def _locate_window(
        self, inst: ir.Instruction, window: int, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        base = window << WINDOW_SHIFT
        if window == 1:
            return self.gmem.locate(addrs, nbytes, inst)
        if window == 2:
            return self._locate_space(inst, ".shared", addrs - np.uint64(base), lanes, nbytes, base)
        if window == 3:
            assert self.cta is not None
            rel = addrs - np.uint64(LOCAL_WINDOW)
            rows = (rel // np.uint64(LOCAL_STRIDE)).astype(np.int64)
            offs = rel % np.uint64(LOCAL_STRIDE)
            if (rows >= self.cta.local.rows).any():
                bad = int(addrs[int(np.argmax(rows >= self.cta.local.rows))])
                raise EmulationError(
                    f"{inst.mnemonic}: generic address {bad:#x} is in the local window of no thread "
                    "of this CTA",
                    inst.loc,
                )
            return self.cta.local.locate(rows, offs, nbytes, inst, addrs)
        if window == 4:
            return self._locate_space(inst, ".const", addrs - np.uint64(base), lanes, nbytes, base)
        if window == 5:
            return self._locate_space(inst, ".param", addrs - np.uint64(base), lanes, nbytes, base)
        bad = int(addrs[0])
        what = "a null pointer" if bad < 4096 else "not in any state space"
        raise EmulationError(
            f"{inst.mnemonic}: generic address {bad:#x} is {what} (dangling or uninitialised pointer?)",
            inst.loc,
        )

    def _locate_space(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int, window: int
    ) -> tuple[np.ndarray, np.ndarray]:
        if space == ".global":
            return self.gmem.locate(addrs, nbytes, inst)
        if space == ".shared":
            assert self.cta is not None
            return self.cta.shared.locate(addrs, nbytes, inst, window)
        if space == ".local":
            assert self.cta is not None and self.machine.current is not None
            rows = self.machine.current.rows[lanes]
            shown = addrs if window else None
            return self.cta.local.locate(rows, addrs, nbytes, inst, shown)
        if space == ".const":
            return self.const.locate(addrs, nbytes, inst, window)
        if space == ".param":
            frame = self.machine.frame
            assert frame is not None
            return frame.param.locate(lanes, addrs, nbytes, inst, addrs + np.uint64(window))
        raise EmulationError(f"{inst.mnemonic}: accesses to {space} memory are not modelled", inst.loc)

    def gather(
        self, inst: ir.Instruction, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int
    ) -> np.ndarray:
        parts = self._locate(inst, space, addrs, lanes, nbytes)
        if len(parts) == 1:
            _, view, idx = parts[0]
            return view[idx].astype(np.uint64)
        out = np.zeros(addrs.size, dtype=np.uint64)
        for sel, view, idx in parts:
            out[sel] = view[idx]
        return out

    def scatter(
        self,
        inst: ir.Instruction,
        space: str,
        addrs: np.ndarray,
        lanes: np.ndarray,
        values: np.ndarray,
        nbytes: int,
    ) -> None:
        space = normalize_space(space)
        windows = (addrs >> np.uint64(WINDOW_SHIFT)) if space == "generic" else None
        if space == ".const" or (windows is not None and (windows == np.uint64(4)).any()):
            raise EmulationError(f"{inst.mnemonic}: store to constant memory", inst.loc)
        dtype = dtype_for(nbytes)
        for sel, view, idx in self._locate(inst, space, addrs, lanes, nbytes):
            view[idx] = (values if sel is None else values[sel]).astype(dtype)

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        addrs: np.ndarray,
        lanes: np.ndarray,
        nbytes: int,
        fn: Callable[[int, int, int], int],
        b: np.ndarray,
        c: np.ndarray,
    ) -> np.ndarray:
        parts = self._locate(inst, space, addrs, lanes, nbytes)
        views: list[np.ndarray] = [parts[0][1]] * addrs.size
        idxs = np.zeros(addrs.size, dtype=np.int64)
        for sel, view, idx in parts:
            if sel is None:
                idxs[:] = idx
            else:
                for pos, k in zip(np.flatnonzero(sel), idx, strict=True):
                    views[pos] = view
                    idxs[pos] = k
        olds = np.zeros(addrs.size, dtype=np.uint64)
        mask = _width_mask(nbytes * 8)
        for i in range(addrs.size):
            view = views[i]
            k = int(idxs[i])
            old = int(view[k])
            view[k] = fn(old, int(b[i]) & mask, int(c[i]) & mask) & mask
            olds[i] = old
        return olds

    def read_bytes(self, lane: int, address: int, n: int) -> bytes:
        """Host-side read through a generic address (printf arguments)."""
        if n == 0:
            return b""
        addrs = np.uint64(address) + np.arange(n, dtype=np.uint64)
        lanes = np.full(n, lane, dtype=np.int64)
        assert self.machine.inst is not None
        return bytes(self.gather(self.machine.inst, "generic", addrs, lanes, 1).astype(np.uint8))

    def read_string(self, lane: int, address: int) -> str:
        if address >> WINDOW_SHIFT == 1:
            raw = self.gmem.read_cstring(address)
        else:
            chunks = bytearray()
            while len(chunks) < 4096:
                byte = self.read_bytes(lane, address + len(chunks), 1)
                if byte == b"\0":
                    break
                chunks += byte
            raw = bytes(chunks)
        return raw.decode("utf-8", errors="replace")

    # ---- values of operands (for the instructions run here) -----------------------------

    def value(self, op: ir.Operand, width: int) -> Bits:
        m = self.machine
        if isinstance(op, ir.Register):
            return m.read(op, width)
        if isinstance(op, ir.Negated):
            v = m.read(op.operand, 1)
            return Bits(v.data ^ np.uint64(1), 1)
        if isinstance(op, ir.IntImm):
            return m.dom.const(op.value, width)
        if isinstance(op, ir.Symbol):
            return m.symbol_address(op.name, width)
        return self.sem.operand(op, width)

    def guard_mask(self, inst: ir.Instruction, mask: int) -> int:
        guard = inst.guard
        if guard is None:
            return mask
        bits = _to_mask(self.machine.read(guard.predicate, 1).data)
        if guard.negated:
            bits = ~bits & FULL_MASK
        return bits & mask

    # ---- the grid --------------------------------------------------------------------

    def run(self, kernel: _FnInfo, params: bytes) -> None:
        gx, gy, gz = self.grid
        for cz, cy, cx in product(range(gz), range(gy), range(gx)):
            self._run_cta((cx, cy, cz), kernel, params)

    def _launch_specials(self) -> dict[tuple[str, str | None], Bits]:
        """Special registers with the same value in every warp of the launch."""
        sp: dict[tuple[str, str | None], Bits] = {}
        for sel, value in zip("xyz", self.block, strict=True):
            sp[("%ntid", sel)] = _bits(value, 32)
        for sel, value in zip("xyz", self.grid, strict=True):
            sp[("%nctaid", sel)] = _bits(value, 32)
            sp[("%nclusterid", sel)] = _bits(value, 32)
            sp[("%cluster_ctaid", sel)] = _bits(0, 32)
            sp[("%cluster_nctaid", sel)] = _bits(1, 32)
        lane = _LANE_IDS
        one = np.uint64(1)
        u32 = np.uint64(0xFFFFFFFF)
        eq = one << lane
        sp[("%laneid", None)] = Bits(lane.copy(), 32)
        sp[("%lanemask_eq", None)] = Bits(eq, 32)
        sp[("%lanemask_lt", None)] = Bits(eq - one, 32)
        sp[("%lanemask_le", None)] = Bits((eq << one) - one, 32)
        sp[("%lanemask_gt", None)] = Bits(~((eq << one) - one) & u32, 32)
        sp[("%lanemask_ge", None)] = Bits(~(eq - one) & u32, 32)
        sp[("%nwarpid", None)] = _bits(64, 32)
        sp[("%smid", None)] = _bits(0, 32)
        sp[("%nsmid", None)] = _bits(1, 32)
        sp[("%gridid", None)] = _bits(1, 64)
        sp[("%dynamic_smem_size", None)] = _bits(self.shared_bytes, 32)
        sp[("%total_smem_size", None)] = _bits(self.shared_size, 32)
        sp[("%aggr_smem_size", None)] = _bits(self.shared_size, 32)
        sp[("%cluster_ctarank", None)] = _bits(0, 32)
        sp[("%cluster_nctarank", None)] = _bits(1, 32)
        sp[("%is_explicit_cluster", None)] = _bits(0, 1)
        for i in range(32):
            sp[(f"%envreg{i}", None)] = _bits(0, 32)
        return sp

    def _new_warp(self, index: int, cta_specials: dict[tuple[str, str | None], Bits]) -> _Warp:
        bx, by, _ = self.block
        nlanes = min(LANES, self.nthreads - index * LANES)
        w = _Warp(index, nlanes)
        t = np.arange(index * LANES, (index + 1) * LANES, dtype=np.uint64)
        sp = w.specials = dict(cta_specials)
        u32 = np.uint64(0xFFFFFFFF)
        sp[("%tid", "x")] = Bits(t % np.uint64(bx) & u32, 32)
        sp[("%tid", "y")] = Bits((t // np.uint64(bx)) % np.uint64(by) & u32, 32)
        sp[("%tid", "z")] = Bits(t // np.uint64(bx * by) & u32, 32)
        sp[("%warpid", None)] = _bits(index, 32)
        return w

    def _run_cta(self, ctaid: tuple[int, int, int], kernel: _FnInfo, params: bytes) -> None:
        local_size = self.program.module_local_size + kernel.local_size
        cta = _Cta(
            ctaid,
            FlatMemory(self.shared_size, ".shared"),
            LaneMemory(self.nwarps * LANES, max(local_size, 8), ".local"),
            [],
        )
        self.cta = cta
        raw = np.frombuffer(params, dtype=np.uint8)
        specials = dict(self.specials)
        for sel, value in zip("xyz", ctaid, strict=True):
            specials[("%ctaid", sel)] = _bits(value, 32)
            specials[("%clusterid", sel)] = _bits(value, 32)
        for index in range(self.nwarps):
            w = self._new_warp(index, specials)
            frame = _Frame(kernel, w.full, self.program.module_local_size, None)
            frame.param.data[:, : raw.size] = raw
            w.frames.append(frame)
            cta.warps.append(w)
        warps = cta.warps
        while True:
            ran = False
            for w in warps:
                if w.done or w.waiting is not None:
                    continue
                ran = True
                budget = self.max_steps - self.steps
                self.steps += self._run_warp(w, min(self.quantum, budget))
                if self.steps >= self.max_steps and not w.done:
                    raise self.error(
                        f"step budget exceeded ({self.max_steps} warp-instructions): an endless loop, "
                        "or raise max_steps"
                    )
            if all(w.done for w in warps):
                break
            released = self._release_barriers(cta)
            if not ran and not released:
                self._deadlock(cta)

    def _release_barriers(self, cta: _Cta) -> bool:
        released = False
        live = sum(1 for w in cta.warps if not w.done)
        for bid in list(cta.waiting):
            waiting = cta.waiting[bid]
            expected = cta.expected.get(bid) or live
            if len(waiting) + cta.arrived.get(bid, 0) < expected:
                continue
            self._finish_reductions(waiting)
            for w in waiting:
                w.waiting = None
            del cta.waiting[bid]
            cta.arrived.pop(bid, None)
            cta.expected.pop(bid, None)
            released = True
        return released

    def _finish_reductions(self, warps: list[_Warp]) -> None:
        reds = [w for w in warps if w.bar_red is not None]
        if not reds:
            return
        count = sum(bin(w.bar_red[2]).count("1") for w in reds)  # type: ignore[index]
        every = all(w.bar_red[2] == w.bar_red[1] for w in reds)  # type: ignore[index]
        some = any(w.bar_red[2] for w in reds)  # type: ignore[index]
        m = self.machine
        for w in reds:
            op, mask, _ = w.bar_red  # type: ignore[misc]
            inst = op.inst
            dest = inst.operands[0]
            if ".popc" in inst.modifiers:
                value = _bits(count, 32)
            else:
                value = _bits(int(every if ".and" in inst.modifiers else some), 1)
            m.bind(w)
            m.set_mask(mask)
            if isinstance(dest, ir.Register):
                m.write(dest, value)
            w.bar_red = None

    def _deadlock(self, cta: _Cta) -> None:
        for bid, waiting in cta.waiting.items():
            w = waiting[0]
            inst = w.frames[-1].code[w.frames[-1].stack[-1].pc - 1].inst
            expected = cta.expected.get(bid) or sum(1 for x in cta.warps if not x.done)
            raise EmulationError(
                f"{inst.mnemonic}: barrier {bid} can never complete: {len(waiting)} of {expected} warps "
                f"of CTA {cta.ctaid} arrived and the others are blocked elsewhere",
                inst.loc,
            )
        raise EmulationError(f"CTA {cta.ctaid}: no warp can make progress")

    # ---- running a warp -----------------------------------------------------------

    def _run_warp(self, w: _Warp, limit: int) -> int:
        """Run ``w`` for up to ``limit`` instructions; stops early when the warp
        finishes or waits at a barrier. Returns the instructions executed."""
        m = self.machine
        m.bind(w)
        execute = self.sem.execute
        frames = w.frames
        steps = 0
        while steps < limit:
            frame = frames[-1]
            stack = frame.stack
            if not stack:
                if len(frames) == 1:
                    w.done = True
                    break
                self._return(w)
                continue
            top = stack[-1]
            pc = top.pc
            mask = top.mask
            if mask == 0 or pc == top.rpc:
                stack.pop()
                continue
            code = frame.code
            if pc >= len(code):  # fell off the end: an implicit ret
                self._retire(w, mask, exit_=len(frames) == 1)
                continue
            op = code[pc]
            if mask != m.mask:
                m.set_mask(mask)
            m.inst = op.inst
            steps += 1
            kind = op.kind
            if kind == _EXEC:
                execute(op.inst)
                top.pc = pc + 1
            elif kind == _BRA:
                if op.inst.guard is None:
                    top.pc = op.target
                else:
                    taken = self.guard_mask(op.inst, mask)
                    if taken == mask:
                        top.pc = op.target
                    elif taken == 0 or op.target == pc + 1:
                        top.pc = pc + 1
                    else:
                        self._diverge(stack, top, [(op.target, taken), (pc + 1, mask & ~taken)], op.rpc)
            elif self._control(w, frame, top, op, pc, mask):
                break
        return steps

    def _diverge(self, stack: list[_Entry], top: _Entry, paths: list[tuple[int, int]], rpc: int) -> None:
        """Split ``top`` into ``paths`` that meet again at ``rpc``; the path
        listed last runs first."""
        if rpc == top.rpc:
            stack.pop()
        else:
            top.pc = rpc
        for pc, mask in paths:
            if mask:
                stack.append(_Entry(pc, mask, rpc))

    def _retire(self, w: _Warp, mask: int, exit_: bool) -> None:
        """Lanes leave the current function (``ret``) or the kernel (``exit``)."""
        if exit_:
            w.live &= ~mask
            for frame in w.frames:
                for entry in frame.stack:
                    entry.mask &= ~mask
        else:
            frame = w.frames[-1]
            frame.returned |= mask
            for entry in frame.stack:
                entry.mask &= ~mask

    def _control(self, w: _Warp, frame: _Frame, top: _Entry, op: _Op, pc: int, mask: int) -> bool:
        """Everything but plain instructions and ``bra``; True when the warp
        must stop running (it waits at a barrier)."""
        kind = op.kind
        inst = op.inst
        if kind in (_RET, _EXIT):
            lanes = self.guard_mask(inst, mask)
            top.pc = pc + 1
            self._retire(w, lanes, exit_=kind == _EXIT or len(w.frames) == 1)
            return False
        if kind == _BRA_RET:  # a branch to a ret/exit: its lanes leave here
            lanes = self.guard_mask(inst, mask)
            top.pc = pc + 1
            self._retire(w, lanes, exit_=op.exits or len(w.frames) == 1)
            return False
        if kind == _NOP:
            top.pc = pc + 1
            return False
        if kind == _CALL:
            self._call(w, frame, top, op, pc, mask)
            return False
        if kind == _BRX:
            self._brx(frame.stack, top, op, pc, mask)
            return False
        if kind in (_MAPA, _CTARANK):
            self._cluster_op(op, mask)
            top.pc = pc + 1
            return False
        if kind == _UNSUPPORTED:
            self._unsupported(frame, op, mask)
            top.pc = pc + 1
            return False
        if kind == _TRAP:
            if self.guard_mask(inst, mask):
                raise EmulationError(f"trap executed (CTA {self.cta.ctaid if self.cta else ''})", inst.loc)
            top.pc = pc + 1
            return False
        # barriers
        top.pc = pc + 1
        if self.guard_mask(inst, mask) == 0:
            return False
        assert self.cta is not None
        cta = self.cta
        ops = inst.operands
        if kind == _BAR_RED:
            bid: object = self._scalar(ops[1], mask)
            count = self._scalar(ops[2], mask) if len(ops) > 3 else 0
            pred = _to_mask(self.value(ops[-1], 1).data) & mask
            w.bar_red = (op, mask, pred)
        elif inst.opcode == "barrier.cluster":
            bid, count = "cluster", 0
        else:
            bid = self._scalar(ops[0], mask) if ops else 0
            count = self._scalar(ops[1], mask) if len(ops) > 1 else 0
        if count:
            cta.expected[bid] = -(-count // LANES)
        if kind == _BAR_ARRIVE:
            cta.arrived[bid] = cta.arrived.get(bid, 0) + 1
            return False
        w.waiting = bid
        cta.waiting.setdefault(bid, []).append(w)
        return True

    def _scalar(self, op: ir.Operand, mask: int) -> int:
        """An operand that must be warp-uniform (barrier ids and counts)."""
        data = self.value(op, 32).data
        lane = (mask & -mask).bit_length() - 1
        return int(data[max(lane, 0)])

    def _brx(self, stack: list[_Entry], top: _Entry, op: _Op, pc: int, mask: int) -> None:
        """``brx.idx``: one path per distinct target (plus the fall-through of
        lanes whose guard is false), all meeting at the block's post-dominator."""
        inst = op.inst
        lanes = self.guard_mask(inst, mask)
        groups: dict[int, int] = {}
        if lanes != mask:
            groups[pc + 1] = mask & ~lanes
        if lanes:
            index = self.value(inst.operands[0], 32).data
            for lane in range(LANES):
                if lanes >> lane & 1:
                    i = int(index[lane])
                    if i >= len(op.targets):
                        raise EmulationError(
                            f"brx.idx: index {i} (lane {lane}) is outside the {len(op.targets)}-entry "
                            ".branchtargets list",
                            inst.loc,
                        )
                    target = op.targets[i]
                    groups[target] = groups.get(target, 0) | 1 << lane
        if len(groups) == 1:
            top.pc = next(iter(groups))
            return
        self._diverge(stack, top, sorted(groups.items(), reverse=True), op.rpc)

    def _cluster_op(self, op: _Op, mask: int) -> None:
        """``mapa``/``getctarank`` in a cluster of one CTA: every shared::cluster
        address is this CTA's own, of rank 0."""
        inst = op.inst
        lanes = self.guard_mask(inst, mask)
        dest = inst.operands[0]
        if lanes == 0 or not isinstance(dest, ir.Register):
            return
        result = _bits(0, 32) if op.kind == _CTARANK else self.value(inst.operands[1], op.width)
        self.machine.write_under(dest, result, lanes)

    def _unsupported(self, frame: _Frame, op: _Op, mask: int) -> None:
        inst = op.inst
        self.warn(inst, "not supported by the semantics")
        lanes = self.guard_mask(inst, mask)
        if lanes == 0:
            return
        for reg, ptx_type in isa.typed_defs(inst):
            t = ptx_type or frame.info.reg_types.get(reg.name)
            width = 1 if t == ".pred" else _bits_of(t)
            self.machine.write_under(reg, _bits(0, width), lanes)

    # ---- calls -------------------------------------------------------------------------

    def _call(self, w: _Warp, frame: _Frame, top: _Entry, op: _Op, pc: int, mask: int) -> None:
        inst = op.inst
        call = op.call
        assert call is not None
        lanes = self.guard_mask(inst, mask)
        if lanes != mask:
            if lanes:
                self._diverge(frame.stack, top, [(pc + 1, mask & ~lanes), (pc, lanes)], pc + 1)
            else:
                top.pc = pc + 1
            return
        if isinstance(call.callee, ir.Symbol):
            name = call.callee.name
        else:
            targets = self.value(call.callee, 64).data
            groups: dict[int, int] = {}
            for lane in range(LANES):
                if mask >> lane & 1:
                    t = int(targets[lane])
                    groups[t] = groups.get(t, 0) | 1 << lane
            if len(groups) > 1:  # a divergent indirect call: one call per target
                top.pc = pc + 1
                for _, group in sorted(groups.items(), reverse=True):
                    frame.stack.append(_Entry(pc, group, pc + 1))
                return
            address = next(iter(groups))
            found = self.program.function_at(address)
            if found is None:
                raise EmulationError(f"call through {address:#x}, which is not a function address", inst.loc)
            name = found
        fn = self.program.functions.get(name)
        if fn is None:
            raise EmulationError(f"call to unknown function {name}", inst.loc)
        if fn.body is None:
            self._builtin(w, frame, op, name, mask)
            top.pc = pc + 1
            return
        if len(w.frames) >= MAX_CALL_DEPTH:
            raise EmulationError(f"call depth exceeds {MAX_CALL_DEPTH} (runaway recursion?)", inst.loc)
        info = self.program.decoded(name, self.sem)
        callee = _Frame(info, mask, _align(frame.local_top, 16), op)
        assert self.cta is not None
        if callee.local_top > LOCAL_STRIDE or callee.local_top * self.cta.local.rows > MAX_LOCAL_BYTES:
            raise EmulationError(
                f"local memory stack overflow at call depth {len(w.frames)} (recursion too deep?)", inst.loc
            )
        self.cta.local.grow(callee.local_top)
        self._pass_arguments(frame, callee, call, fn, inst)
        w.frames.append(callee)
        self.machine.bind_frame(callee)

    def _pass_arguments(
        self, caller: _Frame, callee: _Frame, call: _Call, fn: ir.Function, inst: ir.Instruction
    ) -> None:
        if len(call.args) != len(fn.params):
            raise EmulationError(
                f"call of {fn.name} passes {len(call.args)} arguments; it takes {len(fn.params)}", inst.loc
            )
        for arg, spec in zip(call.args, fn.params, strict=True):
            if spec.space == ".param":
                dst, size = callee.info.param_layout[spec.name]
                if isinstance(arg, ir.Symbol) and arg.name in caller.info.param_layout:
                    src, src_size = caller.info.param_layout[arg.name]
                    n = min(size, src_size)
                    callee.param.data[:, dst : dst + n] = caller.param.data[:, src : src + n]
                else:
                    bits = _bits_of(spec.type, 32)
                    value = self.value(arg, bits)
                    raw = value.data.astype("<u8").view(np.uint8).reshape(LANES, 8)
                    n = min(size, 8)
                    callee.param.data[:, dst : dst + n] = raw[:, :n]
            else:
                width = 1 if spec.type == ".pred" else _bits_of(spec.type)
                if isinstance(arg, ir.Symbol) and arg.name in caller.info.param_layout:
                    src, src_size = caller.info.param_layout[arg.name]
                    n = min(width // 8 or 1, src_size, 8)
                    raw = np.zeros((LANES, 8), dtype=np.uint8)
                    raw[:, :n] = caller.param.data[:, src : src + n]
                    value = Bits(raw.view("<u8").reshape(LANES) & np.uint64(_width_mask(width)), width)
                else:
                    value = self.value(arg, width)
                callee.regs[_intern(spec.name)] = value

    def _return(self, w: _Warp) -> None:
        """The callee's lanes all returned (or exited): pop its frame."""
        callee = w.frames.pop()
        caller = w.frames[-1]
        self.machine.bind_frame(caller)
        op = callee.call_op
        assert op is not None and op.call is not None
        lanes = callee.returned & w.live
        if caller.stack:
            caller.stack[-1].pc += 1
        if not lanes:
            return
        sel = np.flatnonzero(_mask_array(lanes))
        fn = callee.info.fn
        for ret, spec in zip(op.call.returns, fn.returns or [], strict=False):
            if spec.space == ".param":
                src, size = callee.info.param_layout[spec.name]
                if isinstance(ret, ir.Symbol) and ret.name in caller.info.param_layout:
                    dst, dst_size = caller.info.param_layout[ret.name]
                    n = min(size, dst_size)
                    caller.param.data[sel, dst : dst + n] = callee.param.data[sel, src : src + n]
                elif isinstance(ret, ir.Register):
                    raw = np.zeros((LANES, 8), dtype=np.uint8)
                    n = min(size, 8)
                    raw[:, :n] = callee.param.data[:, src : src + n]
                    width = _bits_of(spec.type)
                    value = Bits(raw.view("<u8").reshape(LANES) & np.uint64(_width_mask(width)), width)
                    self.machine.write_under(ret, value, lanes)
            elif isinstance(ret, ir.Register):
                width = 1 if spec.type == ".pred" else _bits_of(spec.type)
                value = callee.regs.get(_intern(spec.name)) or _bits(0, width)
                self.machine.write_under(ret, value, lanes)

    # ---- functions the module declares but does not define ------------------------------

    def _builtin(self, w: _Warp, frame: _Frame, op: _Op, name: str, mask: int) -> None:
        call = op.call
        assert call is not None
        inst = op.inst
        lanes = [lane for lane in range(LANES) if mask >> lane & 1]

        def arg(i: int, lane: int, size: int = 8) -> int:
            a = call.args[i]
            if isinstance(a, ir.Symbol) and a.name in frame.info.param_layout:
                off, n = frame.info.param_layout[a.name]
                raw = frame.param.data[lane, off : off + min(n, size)]
                return int.from_bytes(raw.tobytes(), "little")
            return int(self.value(a, size * 8).data[lane])

        results: dict[int, int] = {}
        if name == "vprintf":
            cta = self.cta
            assert cta is not None
            for lane in lanes:
                fmt = self.read_string(lane, arg(0, lane))
                args_ptr = arg(1, lane)
                nbytes = _printf_arg_bytes(fmt)
                raw = self.read_bytes(lane, args_ptr, nbytes) if args_ptr and nbytes else b""
                text = _format_printf(fmt, raw, lambda p, lane=lane: self.read_string(lane, p))
                tid = self._tid(w, lane)
                self.printf.append(PrintfRecord(fmt, raw, text, cta.ctaid, tid))
                results[lane] = len(_FORMAT_RE.findall(fmt))
        elif name == "__assertfail":
            lane = lanes[0]
            message = self.read_string(lane, arg(0, lane))
            file = self.read_string(lane, arg(1, lane))
            line = arg(2, lane, 4)
            func = self.read_string(lane, arg(3, lane))
            assert self.cta is not None
            raise EmulationError(
                f"device assertion failed: {file}:{line}: {func}: Assertion `{message}` failed "
                f"(block {self.cta.ctaid}, thread {self._tid(w, lane)})",
                inst.loc,
            )
        elif name == "malloc":
            for lane in lanes:
                size = arg(0, lane)
                results[lane] = self.gmem.allocate(max(size, 1), f"malloc({size})", 16) if size else 0
        elif name == "free":
            pass
        else:
            raise EmulationError(f"call to {name}, which the module declares but does not define", inst.loc)
        if not call.returns or not results:
            return
        ret = call.returns[0]
        values = np.zeros(LANES, dtype=np.uint64)
        for lane, v in results.items():
            values[lane] = v & _U64_MAX
        if isinstance(ret, ir.Symbol) and ret.name in frame.info.param_layout:
            off, size = frame.info.param_layout[ret.name]
            n = min(size, 8)
            raw = values.astype("<u8").view(np.uint8).reshape(LANES, 8)
            rows = np.array(lanes, dtype=np.int64)
            frame.param.data[rows, off : off + n] = raw[rows, :n]
        elif isinstance(ret, ir.Register):
            self.machine.write_under(ret, Bits(values, 64 if name == "malloc" else 32), mask)

    def _tid(self, w: _Warp, lane: int) -> tuple[int, int, int]:
        t = w.index * LANES + lane
        bx, by, _ = self.block
        return (t % bx, (t // bx) % by, t // (bx * by))


def _printf_arg_bytes(fmt: str) -> int:
    """Size of the argument buffer a format needs (each argument aligned)."""
    pos = 0
    for match in _FORMAT_RE.finditer(fmt):
        conv = match["conv"]
        if conv == "%":
            continue
        for star in (match["width"], match["prec"]):
            if star == "*":
                pos = _align(pos, 4) + 4
        wide = match["len"] in ("l", "ll", "j", "z", "t")
        size = 4 if conv in "diouxXc" and not wide else 8
        pos = _align(pos, size) + size
    return pos


# --------------------------------------------------------------------------
# Entry point


_PROGRAMS: dict[int, tuple[ir.Module, Program]] = {}


def _program_for(module: ir.Module) -> Program:
    """The cached Program of a module object (kept alive with it, so the id is unique)."""
    hit = _PROGRAMS.get(id(module))
    if hit is not None and hit[0] is module:
        return hit[1]
    program = Program(module)
    if len(_PROGRAMS) >= 16:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[id(module)] = (module, program)
    return program


def _dims(value: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    dims = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(dims) <= 3:
        raise PtxError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    dims = [int(d) for d in dims] + [1] * (3 - len(dims))
    if any(d < 1 for d in dims):
        raise PtxError(f"{what} dimensions must be positive, got {tuple(dims)}")
    return dims[0], dims[1], dims[2]


def _check_launch(fn: ir.Function, block: tuple[int, int, int], nthreads: int) -> None:
    if nthreads > 1024:
        raise PtxError(f"block {block} has {nthreads} threads; at most 1024 per block")
    if block[2] > 64:
        raise PtxError(f"block z dimension {block[2]} exceeds 64")
    for d in fn.directives:
        if isinstance(d, ir.PerfDirective) and d.values:
            want = tuple(d.values) + (1,) * (3 - len(d.values))
            if d.name == ".reqntid" and want != block:
                raise PtxError(f"kernel {fn.name} requires block {want} (.reqntid), got {block}", d.loc)
            if d.name == ".maxntid" and nthreads > want[0] * want[1] * want[2]:
                raise PtxError(
                    f"kernel {fn.name} allows at most {want[0] * want[1] * want[2]} threads per block "
                    f"(.maxntid), got {nthreads}",
                    d.loc,
                )


def _encode_params(
    fn: ir.Function, args: Sequence[object], gmem: GlobalMemory, layout: dict[str, tuple[int, int]], size: int
) -> tuple[bytes, list[tuple[int, np.ndarray, int]]]:
    """The kernel's parameter bytes; array arguments are uploaded to global memory."""
    if len(args) != len(fn.params):
        raise PtxError(f"kernel {fn.name} takes {len(fn.params)} parameters, got {len(args)} arguments")
    raw = bytearray(size)
    uploads: list[tuple[int, np.ndarray, int]] = []
    uploaded: dict[int, int] = {}
    for i, (spec, arg) in enumerate(zip(fn.params, args, strict=True)):
        off, psize = layout[spec.name]
        if isinstance(arg, np.ndarray) and id(arg) in uploaded:  # the same buffer twice: aliases
            encoded = uploaded[id(arg)].to_bytes(8, "little")
            uploads.append((i, arg, uploaded[id(arg)]))
        elif isinstance(arg, np.ndarray):
            if psize != 8:
                raise PtxError(
                    f"parameter {i} ({spec.name}, {spec.type}) is not a 64-bit pointer, got an array"
                )
            data = np.ascontiguousarray(arg)
            address = gmem.allocate(max(data.nbytes, 1), f"arg{i} ({spec.name})", 256)
            gmem.write(address, data.reshape(-1).view(np.uint8))
            uploads.append((i, arg, address))
            uploaded[id(arg)] = address
            encoded = address.to_bytes(8, "little")
        elif isinstance(arg, (bytes, bytearray, np.void)):
            encoded = bytes(arg)
            if len(encoded) != psize:
                raise PtxError(f"parameter {i} ({spec.name}) is {psize} bytes, got {len(encoded)}")
        elif (
            isinstance(arg, np.generic)
            and arg.dtype.itemsize == psize
            and spec.type.startswith((".f", ".bf")) == (arg.dtype.kind == "f")
        ):
            encoded = arg.tobytes()
        elif isinstance(arg, (bool, int, float, np.generic)):
            value = arg.item() if isinstance(arg, np.generic) else arg
            if isinstance(value, float) and not spec.type.startswith((".f", ".bf")):
                raise PtxError(f"parameter {i} ({spec.name}) is {spec.type}; got the float {value}")
            encoded = _encode_scalar(value, spec.type)[:psize].ljust(psize, b"\0")
        else:
            raise PtxError(f"parameter {i} ({spec.name}): unsupported argument type {type(arg).__name__}")
        raw[off : off + len(encoded)] = encoded
    return bytes(raw), uploads


def launch(
    module: ir.Module | Program,
    kernel: str,
    grid: Sequence[int] | int,
    block: Sequence[int] | int,
    args: Sequence[np.ndarray | int | float | np.generic | bytes],
    shared_bytes: int = 0,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    quantum: int = DEFAULT_QUANTUM,
) -> LaunchResult:
    """Run ``kernel`` over ``grid`` x ``block`` threads and return what it wrote.

    ``args`` follow the kernel's parameters: NumPy arrays become device
    buffers (pointers), Python/NumPy scalars are encoded as the parameter's
    PTX type, ``bytes`` fill an aggregate (``.b8 p[N]``) parameter verbatim.
    Array arguments are updated in place when writable and returned in
    `LaunchResult.buffers`. ``shared_bytes`` is the dynamic shared memory
    (``extern __shared__``). Faults raise `EmulationError`; bad launch
    parameters raise `PtxError`.
    """
    program = module if isinstance(module, Program) else _program_for(module)
    fn = program.functions.get(kernel)
    if fn is None or not fn.is_kernel or fn.body is None:
        kernels = ", ".join(k.name for k in program.module.kernels) or "none"
        raise PtxError(f"no kernel named {kernel!r} in {program.path} (kernels: {kernels})")
    g = _dims(grid, "grid")
    b = _dims(block, "block")
    nthreads = b[0] * b[1] * b[2]
    _check_launch(fn, b, nthreads)
    if shared_bytes < 0:
        raise PtxError("shared_bytes must not be negative")
    started = time.perf_counter()
    state = _Launch(program, g, b, shared_bytes, max_steps, quantum)
    info = program.decoded(kernel, state.sem)
    params, uploads = _encode_params(fn, args, state.gmem, info.param_layout, info.param_size)
    state.run(info, params)
    buffers: list[np.ndarray | None] = [None] * len(args)
    for i, arr, address in uploads:
        raw = state.gmem.read(address, arr.nbytes)
        result = raw.view(arr.dtype).reshape(arr.shape).copy()
        buffers[i] = result
        if arr.flags.writeable:
            arr[...] = result
    glob: dict[str, np.ndarray] = {}
    for key, var in program.global_order:
        glob[_global_name(key)] = state.gmem.read(program.global_address[key], var.size)
    records = state.printf
    lines = [r.text[:-1] if r.text.endswith("\n") else r.text for r in records]
    return LaunchResult(
        buffers=buffers,
        printf=lines,
        printf_records=records,
        warnings=state.warnings,
        globals=glob,
        steps=state.steps,
        seconds=time.perf_counter() - started,
    )
