"""PTX instruction semantics, written once over the abstract `Domain`.

`Semantics` executes one non-control-flow instruction against a `Machine`:
it reads operands, computes results with the machine's domain and writes
them back. The same code therefore drives the NumPy reference interpreter
(every lane of a warp at once) and the Z3 symbolic executor (one symbolic
thread); nothing here knows which domain it is running in.

Conventions that executors rely on
----------------------------------
* **Guards.** ``@p`` is read as a 1-bit ``cond``; every register write is
  ``ite(cond, new, old)`` and every memory, warp and barrier call receives
  ``cond`` (None when unguarded).
* **Reads before writes.** A handler computes every result before the first
  register write, so ``add %r1, %r1, %r1`` and overlapping vector moves are
  safe.
* **Widths.** Registers are read at the width of the operand's PTX type
  (`Machine.read` resizes). A value is written at the width of its type,
  except that sub-word integer results of ``ld``/``ldu``/``atom``/``cvt``
  (``.u8 .s8 .b8 .u16 .s16 .b16``) are zero- or sign-extended to 64 bits,
  as PTX extends them to the destination register: a machine keeps the low
  bits its register has.
* **Carry.** ``add.cc``/``addc``... keep the carry flag in the 1-bit register
  `CARRY` (``%__cc``) through `Machine.read`/`Machine.write`, so it is
  guarded and saved like any register.
* **Not modelled.** An instruction without a handler, or a form a handler
  does not model (texture, matrix, mbarrier, ``.b128``...), goes to
  `Machine.unknown` and its destination registers receive
  ``dom.fresh(...)`` under the guard. Valid PTX never raises.
* **Optional machine hooks** (looked up with ``getattr``; the `Machine`
  protocol does not require them): ``convert_address(inst, space, value,
  to_generic) -> V`` for ``cvta`` (default: the identity, i.e. the machine
  uses one address for a variable in its space and in the generic space),
  ``in_space(inst, space, address) -> V`` (1 bit) for ``isspacep``
  (default: unknown), and ``cta_reduce(inst, mode, pred, cond) -> V`` for
  ``bar.red`` (``mode`` ``.popc``/``.and``/``.or``; the result over the
  CTA, as `ptxasw.emulator.semantics.collectives.bar_reduce` defines it;
  default: unknown). The concrete interpreter runs ``bar.red`` itself, at
  the CTA's barrier, and never comes here.

Floating point goes through `Domain.fp` with an `FpOp` carrying every
modifier that changes the result; comparisons through `Domain.fp_compare`;
sign-bit operations (``abs neg copysign testp``, ``.ftz`` flushing before a
compare) are written with integer operations so that every domain models
them exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ptxasw import ir
from ptxasw.emulator.semantics import domain as dm
from ptxasw.emulator.semantics.domain import Domain, FpOp
from ptxasw.emulator.semantics.formats import FORMATS
from ptxasw.emulator.semantics.machine import Machine
from ptxasw.ir import isa

__all__ = ["CARRY", "Semantics", "Unsupported", "handled_opcodes"]

V = TypeVar("V")

CARRY = ir.Register("%__cc")
"""The carry flag (``CC.CF``) of extended-precision arithmetic, a 1-bit register."""


class Unsupported(Exception):
    """A valid instruction form that these semantics do not model."""


# --------------------------------------------------------------------------
# Type vocabulary


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FLOAT_TYPES = _words(
    ".f16 .bf16 .f32 .f64 .f16x2 .bf16x2 .f32x2 .tf32 .e4m3 .e5m2 .e2m3 .e3m2 .e2m1 "
    ".e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2 .e2m1x2 .ue8m0x2"
)
_PACKED_FLOAT = {".f16x2": ".f16", ".bf16x2": ".bf16", ".f32x2": ".f32"}
_PACKED_INT = {".u16x2": ".u16", ".s16x2": ".s16"}
_SUBWORD = _words(".u8 .s8 .b8 .u16 .s16 .b16")
_ROUNDINGS = _words(".rn .rz .rm .rp .rni .rzi .rmi .rpi .rna .rs")
_ATOM_OPS = ("add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas")
# The elements of a vector register, ``%v.x`` .. ``%v.w``.
_VECTOR_SELECTORS = ("x", "y", "z", "w")
_CONTROL = frozenset({"bra", "brx.idx", "call", "ret", "exit", "trap"})
# One-bit constant "true" of set/set-like destination types.
_TRUE_VALUE = {".f32": 0x3F80_0000, ".f16": 0x3C00, ".bf16": 0x3F80}
_PRMT_MODES: dict[str, Callable[[int, int], int]] = {
    ".f4e": lambda c, i: (c + i) & 7,
    ".b4e": lambda c, i: (c - i) & 7,
    ".rc8": lambda c, i: c,
    ".ecl": lambda c, i: max(i, c),
    ".ecr": lambda c, i: min(i, c),
    ".rc16": lambda c, i: (i & 1) + 2 * (c & 1),
}


def _is_float(t: str | None) -> bool:
    return t in _FLOAT_TYPES


def _signed(t: str | None) -> bool:
    return t is not None and t.startswith(".s")


def _bits(t: str | None) -> int:
    bits = isa.type_bits(t)
    if bits is None:
        raise Unsupported(f"no width for type {t}")
    return bits


def _space(inst: ir.Instruction) -> str:
    """The state space an access names, normalised for `Machine`."""
    space = isa.state_space(inst) or "generic"
    if space.startswith(".shared"):
        return ".shared"
    if space.startswith(".param"):
        return ".param"
    return space


def _float_literal(op: ir.FloatImm | ir.IntImm, typ: str | None, width: int) -> int:
    """The bit pattern an immediate stands for in an operand of type ``typ``.

    ``0f``/``0d`` literals are bit patterns: an integer-typed operand takes
    the pattern as is, a float-typed one its value converted (rounded to
    nearest) to the operand's format. Decimal literals and integers in
    float operands are values.
    """
    if isinstance(op, ir.IntImm):
        value = float(op.value)
        raw = None
    elif op.kind == "f":
        raw = int(op.text[2:], 16) & 0xFFFF_FFFF
        value = struct.unpack("<f", raw.to_bytes(4, "little"))[0]
    elif op.kind == "d":
        raw = int(op.text[2:], 16) & 0xFFFF_FFFF_FFFF_FFFF
        value = struct.unpack("<d", raw.to_bytes(8, "little"))[0]
    else:
        raw = None
        value = float(op.text)
    fmt = FORMATS.get(typ or "")
    if fmt is None or typ not in _FLOAT_TYPES:
        if raw is None:
            if isinstance(op, ir.IntImm):
                return op.value & ((1 << width) - 1)
            raise Unsupported(f"decimal literal {op.text} in an integer operand")
        return raw & ((1 << width) - 1)
    if raw is not None and fmt.storage_bits == (32 if op.kind == "f" else 64):
        return raw  # keep NaN payloads of same-width patterns
    # The rounding into another format is NumPy's (`floats`), loaded here: a
    # symbolic run that meets no such literal never loads it.
    import numpy as np

    from ptxasw.emulator.semantics.floats import encode_f64

    return int(encode_f64(np.array([value]), fmt)[0])


# --------------------------------------------------------------------------
# The semantics


Write = tuple[ir.Operand, object]


#: What the instruction table says about one instruction, as `Semantics` uses
#: it on every execution: its type modifiers, and the ``(type, bits)`` of each
#: operand (bits None for a type without a width).
_TableFacts = tuple[tuple[str, ...], tuple[tuple[str | None, int | None], ...]]


class Semantics(Generic[V]):
    """Executes PTX instructions on a `Machine` in any `Domain`.

    The instruction-table facts of an instruction are looked up once per
    instruction object and kept (an interpreter executes the same instruction
    objects over and over); instructions must not be modified while a
    `Semantics` runs them.
    """

    def __init__(self, machine: Machine[V]) -> None:
        self.machine = machine
        self.dom: Domain[V] = machine.dom
        # id(inst) -> (inst, facts): holding the instruction keeps its id unique.
        self._facts: dict[int, tuple[ir.Instruction, _TableFacts]] = {}

    # ---- public entry points ---------------------------------------------------
    def forget(self, instructions: Sequence[ir.Instruction]) -> None:
        """Drop the facts of instructions a pass removed or replaced (see
        `ptxasw.ir.builder.AnalysisCache.track`), so none is held after its edit."""
        for inst in instructions:
            self._facts.pop(id(inst), None)

    def supports(self, inst: ir.Instruction) -> bool:
        """Whether a handler exists (it may still find a form it does not model)."""
        return inst.opcode in _HANDLERS

    def execute(self, inst: ir.Instruction) -> None:
        """Execute one non-control-flow instruction (see the module docstring)."""
        cond = self._guard(inst)
        handler = _HANDLERS.get(inst.opcode)
        if handler is None:
            if inst.opcode in _CONTROL:
                reason = "control flow belongs to the executor"
            else:
                reason = f"no semantics for {inst.opcode}"
            self._unknown(inst, reason, cond)
            return
        try:
            writes = handler(self, inst, cond)
        except (Unsupported, NotImplementedError) as exc:
            self._unknown(inst, str(exc) or f"unsupported form {inst.mnemonic}", cond)
            return
        for target, value in writes:
            self._commit(target, value, cond)  # type: ignore[arg-type]

    def branch_condition(self, inst: ir.Instruction) -> V | None:
        """The guard of ``bra``/``brx.idx``/``call``/``ret``/``exit`` as a 1-bit value."""
        return self._guard(inst)

    def operand(self, op: ir.Operand, width: int) -> V:
        """The value of a source operand read at ``width`` bits (no type known:
        ``0f``/``0d`` literals give their bit patterns)."""
        return self._read(op, None, width)

    def address(self, op: ir.Operand, width: int = 64) -> V:
        """The byte address of ``[base+offset]`` (or of a bare operand)."""
        d = self.dom
        if isinstance(op, ir.Address):
            if op.base is None:
                base = d.const(0, width)
            elif isinstance(op.base, ir.Register):
                base = self.machine.read(op.base, width)
            else:
                base = self.machine.symbol_address(op.base.name, width)
            return d.add(base, d.const(op.offset, width)) if op.offset else base
        return self._read(op, None, width)

    # ---- plumbing -------------------------------------------------------------------
    def _guard(self, inst: ir.Instruction) -> V | None:
        if inst.guard is None:
            return None
        value = self.machine.read(inst.guard.predicate, 1)
        return self.dom.not_(value) if inst.guard.negated else value

    def _unknown(self, inst: ir.Instruction, reason: str, cond: V | None) -> None:
        self.machine.unknown(inst, reason)
        for reg, typ in isa.typed_defs(inst):
            width = isa.type_bits(typ) or 32
            try:
                value = self.dom.fresh(f"{inst.opcode}:{reg.name}", width)
                self._commit(reg, value, cond)
            except NotImplementedError:
                continue

    def _commit(self, target: ir.Operand, value: V, cond: V | None) -> None:
        if isinstance(target, ir.Sink):
            return
        if not isinstance(target, ir.Register):
            raise Unsupported(f"cannot write to {target!r}")
        if cond is not None:
            old = self.machine.read(target, self.dom.width(value))
            value = self.dom.ite(cond, value, old)
        self.machine.write(target, value)

    def _table_facts(self, inst: ir.Instruction) -> _TableFacts:
        """The instruction table's facts about ``inst`` (see `_TableFacts`), cached."""
        hit = self._facts.get(id(inst))
        if hit is not None:
            return hit[1]
        operands = tuple(
            (info.type, isa.type_bits(info.type) if info.type else 32) for info in isa.operand_infos(inst)
        )
        facts = (isa.instruction_types(inst), operands)
        self._facts[id(inst)] = (inst, facts)
        return facts

    def _types(self, inst: ir.Instruction) -> tuple[str, ...]:
        types = self._table_facts(inst)[0]
        if not types:
            raise Unsupported(f"{inst.mnemonic} names no type")
        return types

    def _src(self, inst: ir.Instruction, index: int, typ: str | None = None) -> V:
        """Operand ``index`` read at its type (from the instruction table)."""
        if index >= len(inst.operands):
            raise Unsupported(f"{inst.mnemonic} lacks operand {index}")
        if typ is not None:
            return self._read(inst.operands[index], typ, _bits(typ) if typ else 32)
        typ, width = self._table_facts(inst)[1][index]
        if width is None:
            raise Unsupported(f"no width for type {typ}")
        return self._read(inst.operands[index], typ, width)

    def _read(self, op: ir.Operand, typ: str | None, width: int) -> V:
        d, m = self.dom, self.machine
        if isinstance(op, ir.Register):
            return m.read(op, width)
        if isinstance(op, ir.Negated):
            return d.not_(m.read(op.operand, 1))
        if isinstance(op, ir.IntImm):
            if _is_float(typ):
                return d.const(_float_literal(op, typ, width), width)
            return d.const(op.value, width)
        if isinstance(op, ir.FloatImm):
            return d.const(_float_literal(op, typ, width), width)
        if isinstance(op, ir.Symbol | ir.BinaryExpr | ir.UnaryExpr | ir.ParenExpr | ir.CallExpr):
            return self._expr(op, width)
        raise Unsupported(f"cannot read operand {op!r}")

    def _expr(self, e: ir.Expr, width: int) -> V:
        """A constant expression (``sym+8``...) in 64-bit signed arithmetic."""
        d = self.dom
        match e:
            case ir.IntImm(value=value):
                return d.const(value, width)
            case ir.Symbol(name=name):
                return self.machine.symbol_address(name, width)
            case ir.Register():
                return self.machine.read(e, width)
            case ir.ParenExpr(inner=inner):
                return self._expr(inner, width)
            case ir.CallExpr(args=(arg,)):
                return self._expr(arg, width)
            case ir.UnaryExpr(op=op, operand=inner):
                x = self._expr(inner, width)
                if op == "-":
                    return d.neg(x)
                if op == "~":
                    return d.not_(x)
                return self._bool(d.eq(x, d.const(0, width)), width)
            case ir.BinaryExpr(op=op, lhs=lhs, rhs=rhs):
                a, b = self._expr(lhs, width), self._expr(rhs, width)
                fn = _EXPR_OPS.get(op)
                if fn is None:
                    raise Unsupported(f"constant expression operator {op}")
                return fn(self, a, b, width)
        raise Unsupported(f"constant expression {e!r}")

    def _bool(self, bit: V, width: int) -> V:
        return self.dom.zext(bit, width) if width > 1 else bit

    def _fp(self, inst: ir.Instruction, op: str, typ: str, src: str | None = None) -> FpOp:
        mods = inst.modifiers
        rounding = next((m for m in mods if m in _ROUNDINGS), None)
        approx = ".approx" in mods or ".full" in mods
        if rounding is None and not approx and op in ("add", "sub", "mul", "fma", "div", "sqrt", "rcp"):
            rounding = ".rn"  # the default; spelled out so every domain sees one key
        return FpOp(
            op,
            typ,
            src,
            rounding,
            ftz=".ftz" in mods,
            sat=".sat" in mods,
            approx=approx,
            relu=".relu" in mods,
            nan=".NaN" in mods,
            satfinite=".satfinite" in mods,
        )

    def _convert_float(self, value: V, src: str, dst: str) -> V:
        """Exact widening of a mixed-precision operand (``fma.f32.f16``)."""
        if src == dst:
            return value
        return self.dom.fp(FpOp("cvt", dst, src), value)

    def _widen(self, value: V, typ: str) -> V:
        """Sub-word integer results are extended to 64 bits (see module doc)."""
        if typ not in _SUBWORD:
            return value
        return self.dom.sext(value, 64) if _signed(typ) else self.dom.zext(value, 64)

    def _ones(self, width: int) -> V:
        return self.dom.const(-1, width)

    def _sat_add(self, a: V, b: V, total: V) -> V:
        """Clamp a signed sum that overflowed to MIN/MAX (``.sat`` on ``.s32``)."""
        d = self.dom
        w = d.width(a)
        zero = d.const(0, w)
        na, nb, nt = d.slt(a, zero), d.slt(b, zero), d.slt(total, zero)
        overflow = d.and_(d.not_(d.xor(na, nb)), d.xor(na, nt))
        limit = d.ite(na, d.const(1 << (w - 1), w), d.const((1 << (w - 1)) - 1, w))
        return d.ite(overflow, limit, total)

    def _sat_sub(self, a: V, b: V, total: V) -> V:
        d = self.dom
        w = d.width(a)
        zero = d.const(0, w)
        na, nb, nt = d.slt(a, zero), d.slt(b, zero), d.slt(total, zero)
        overflow = d.and_(d.xor(na, nb), d.xor(na, nt))
        limit = d.ite(na, d.const(1 << (w - 1), w), d.const((1 << (w - 1)) - 1, w))
        return d.ite(overflow, limit, total)

    def _mulhi(self, a: V, b: V, signed: bool) -> V:
        """High half of the double-width product (32-bit limbs for 64 bits)."""
        d = self.dom
        w = d.width(a)
        if 2 * w <= 64:
            ext = d.sext if signed else d.zext
            return d.extract(d.mul(ext(a, 2 * w), ext(b, 2 * w)), 2 * w - 1, w)
        h = w // 2
        al, ah = d.zext(d.extract(a, h - 1, 0), w), d.zext(d.extract(a, w - 1, h), w)
        bl, bh = d.zext(d.extract(b, h - 1, 0), w), d.zext(d.extract(b, w - 1, h), w)
        shift = d.const(h, w)
        ll, lh, hl, hh = d.mul(al, bl), d.mul(al, bh), d.mul(ah, bl), d.mul(ah, bh)
        low_mask = d.const((1 << h) - 1, w)
        mid = d.add(d.add(d.lshr(ll, shift), d.and_(lh, low_mask)), d.and_(hl, low_mask))
        hi = d.add(d.add(hh, d.lshr(lh, shift)), d.add(d.lshr(hl, shift), d.lshr(mid, shift)))
        if signed:
            zero = d.const(0, w)
            hi = d.sub(hi, d.ite(d.slt(a, zero), b, zero))
            hi = d.sub(hi, d.ite(d.slt(b, zero), a, zero))
        return hi

    def _per_half(self, fn: Callable[..., V], width: int, *args: V) -> V:
        """Apply ``fn`` to the low and high halves of packed operands."""
        d = self.dom
        h = width // 2
        lo = fn(*(d.extract(a, h - 1, 0) for a in args))
        hi = fn(*(d.extract(a, width - 1, h) for a in args))
        return d.concat(hi, lo)

    def _flush(self, value: V, typ: str) -> V:
        """``.ftz`` on an input: a subnormal becomes a zero of its sign (integer ops)."""
        if typ in _PACKED_FLOAT:
            elem = _PACKED_FLOAT[typ]
            return self._per_half(lambda x: self._flush(x, elem), _bits(typ), value)
        fmt = FORMATS.get(typ)
        if fmt is None or typ not in (".f32", ".f16"):
            return value
        d = self.dom
        w = d.width(value)
        exp = d.and_(value, d.const(((1 << fmt.ebits) - 1) << fmt.mbits, w))
        man = d.and_(value, d.const((1 << fmt.mbits) - 1, w))
        zero = d.const(0, w)
        sub = d.and_(d.eq(exp, zero), d.not_(d.eq(man, zero)))
        return d.ite(sub, d.and_(value, d.const(1 << fmt.sign_pos, w)), value)

    def _sign_mask(self, typ: str) -> int:
        if typ in _PACKED_FLOAT:
            half = _bits(typ) // 2
            return (1 << (_bits(typ) - 1)) | (1 << (half - 1))
        return 1 << (_bits(typ) - 1)

    # ---- integer arithmetic -------------------------------------------------------------
    def _h_addsub(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        is_sub = inst.opcode == "sub"
        if _is_float(t):
            types = self._types(inst)
            src = types[1] if len(types) > 1 else t
            a = self._convert_float(self._src(inst, 1), src, t)
            b = self._src(inst, 2)
            return [(inst.operands[0], d.fp(self._fp(inst, inst.opcode, t), a, b))]
        a, b = self._src(inst, 1), self._src(inst, 2)
        op = d.sub if is_sub else d.add
        if t in _PACKED_INT:
            sat = ".sat" in inst.modifiers and _signed(t)

            def half(x: V, y: V) -> V:
                r = op(x, y)
                if sat:
                    r = (self._sat_sub if is_sub else self._sat_add)(x, y, r)
                return r

            return [(inst.operands[0], self._per_half(half, 32, a, b))]
        r = op(a, b)
        if ".sat" in inst.modifiers and _signed(t):
            r = (self._sat_sub if is_sub else self._sat_add)(a, b, r)
        writes: list[Write] = [(inst.operands[0], r)]
        if ".cc" in inst.modifiers:
            writes.append((CARRY, d.ult(a, b) if is_sub else d.ult(r, a)))
        return writes

    def _h_addc(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b = self._src(inst, 1), self._src(inst, 2)
        w = d.width(a)
        cin = d.zext(self.machine.read(CARRY, 1), w) if w > 1 else self.machine.read(CARRY, 1)
        if inst.opcode == "addc":
            t = d.add(a, b)
            r = d.add(t, cin)
            cout = d.or_(d.ult(t, a), d.ult(r, t))
        else:
            t = d.sub(a, b)
            r = d.sub(t, cin)
            cout = d.or_(d.ult(a, b), d.ult(t, cin))
        writes: list[Write] = [(inst.operands[0], r)]
        if ".cc" in inst.modifiers:
            writes.append((CARRY, cout))
        return writes

    def _product(self, inst: ir.Instruction, a: V, b: V, t: str) -> V:
        """The ``.lo``/``.hi``/``.wide`` product of integer mul/mad."""
        d = self.dom
        signed = _signed(t)
        if ".wide" in inst.modifiers:
            w = 2 * d.width(a)
            ext = d.sext if signed else d.zext
            return d.mul(ext(a, w), ext(b, w))
        if ".hi" in inst.modifiers:
            return self._mulhi(a, b, signed)
        return d.mul(a, b)

    def _h_mul(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1), self._src(inst, 2)
        if _is_float(t):
            return [(inst.operands[0], d.fp(self._fp(inst, "mul", t), a, b))]
        return [(inst.operands[0], self._product(inst, a, b, t))]

    def _h_mad(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        t = types[0]
        if _is_float(t):
            return self._h_fma(inst, cond)
        a, b, c = self._src(inst, 1), self._src(inst, 2), self._src(inst, 3)
        p = self._product(inst, a, b, t)
        writes: list[Write] = []
        if inst.opcode == "madc":
            cin = d.zext(self.machine.read(CARRY, 1), d.width(p))
            s1 = d.add(p, c)
            r = d.add(s1, cin)
            cout = d.or_(d.ult(s1, p), d.ult(r, s1))
        else:
            r = d.add(p, c)
            cout = d.ult(r, p)
            if ".sat" in inst.modifiers and _signed(t):
                r = self._sat_add(p, c, r)
        writes.append((inst.operands[0], r))
        if ".cc" in inst.modifiers:
            writes.append((CARRY, cout))
        return writes

    def _h_mul24(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        signed = _signed(t)
        ext = d.sext if signed else d.zext
        a = ext(d.extract(self._src(inst, 1), 23, 0), 64)
        b = ext(d.extract(self._src(inst, 2), 23, 0), 64)
        p = d.mul(a, b)
        r = d.extract(p, 47, 16) if ".hi" in inst.modifiers else d.extract(p, 31, 0)
        if inst.opcode == "mad24":
            c = self._src(inst, 3)
            s = d.add(r, c)
            if ".sat" in inst.modifiers and signed:
                s = self._sat_add(r, c, s)
            r = s
        return [(inst.operands[0], r)]

    def _h_sad(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b, c = self._src(inst, 1), self._src(inst, 2), self._src(inst, 3)
        less = d.slt(a, b) if _signed(t) else d.ult(a, b)
        diff = d.ite(less, d.sub(b, a), d.sub(a, b))
        return [(inst.operands[0], d.add(c, diff))]

    def _h_div(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1), self._src(inst, 2)
        if _is_float(t):
            return [(inst.operands[0], d.fp(self._fp(inst, "div", t), a, b))]
        if inst.opcode == "div":
            r = d.sdiv(a, b) if _signed(t) else d.udiv(a, b)
        else:
            r = d.srem(a, b) if _signed(t) else d.urem(a, b)
        return [(inst.operands[0], r)]

    def _h_absneg(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a = self._src(inst, 1)
        if _is_float(t):
            if ".ftz" in inst.modifiers:
                a = self._flush(a, t)
            mask = d.const(self._sign_mask(t), d.width(a))
            r = d.and_(a, d.not_(mask)) if inst.opcode == "abs" else d.xor(a, mask)
            return [(inst.operands[0], r)]

        def one(x: V) -> V:
            if inst.opcode == "neg":
                return d.neg(x)
            return d.ite(d.slt(x, d.const(0, d.width(x))), d.neg(x), x)

        if t in _PACKED_INT:
            return [(inst.operands[0], self._per_half(one, 32, a))]
        return [(inst.operands[0], one(a))]

    def _h_minmax(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        is_max = inst.opcode == "max"
        srcs = [self._src(inst, i) for i in range(1, len(inst.operands))]
        if _is_float(t):
            op = self._fp(inst, inst.opcode, t)
            if ".xorsign" in inst.modifiers:
                return [(inst.operands[0], self._xorsign_minmax(op, t, srcs))]
            r = srcs[0]
            for s in srcs[1:]:
                r = d.fp(op, r, s)
            return [(inst.operands[0], r)]
        signed = _signed(t)
        relu = ".relu" in inst.modifiers

        def pick(x: V, y: V) -> V:
            less = d.slt(x, y) if signed else d.ult(x, y)
            r = d.ite(less, y, x) if is_max else d.ite(less, x, y)
            if relu:
                zero = d.const(0, d.width(r))
                r = d.ite(d.slt(r, zero), zero, r)
            return r

        if t in _PACKED_INT:
            r = srcs[0]
            for s in srcs[1:]:
                r = self._per_half(pick, 32, r, s)
            return [(inst.operands[0], r)]
        r = srcs[0]
        for s in srcs[1:]:
            r = pick(r, s)
        return [(inst.operands[0], r)]

    def _xorsign_minmax(self, op: FpOp, t: str, srcs: list[V]) -> V:
        """``min/max.xorsign.abs``: compare magnitudes, sign is the XOR of the signs."""
        d = self.dom
        if t in _PACKED_FLOAT:
            elem = _PACKED_FLOAT[t]
            sub = FpOp(op.op, elem, None, None, ftz=op.ftz, nan=op.nan, relu=op.relu)
            return self._per_half(lambda *xs: self._xorsign_minmax(sub, elem, list(xs)), _bits(t), *srcs)
        w = d.width(srcs[0])
        sign = d.const(1 << (w - 1), w)
        mags = [d.and_(s, d.not_(sign)) for s in srcs]
        r = mags[0]
        plain = FpOp(op.op, t, None, None, ftz=op.ftz, nan=op.nan)
        for m in mags[1:]:
            r = d.fp(plain, r, m)
        s = d.const(0, w)
        for x in srcs:
            s = d.xor(s, d.and_(x, sign))
        is_nan = d.fp_compare("nan", t, r, r)
        return d.ite(is_nan, r, d.or_(r, s))

    def _h_count(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a = self._src(inst, 1, self._types(inst)[0])
        r = d.popc(a) if inst.opcode == "popc" else d.clz(a)
        return [(inst.operands[0], dm.resize(d, r, 32, False))]

    def _h_bfind(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a = self._src(inst, 1, t)
        w = d.width(a)
        if _signed(t):
            a = d.ite(d.slt(a, d.const(0, w)), d.not_(a), a)
        lz = dm.resize(d, d.clz(a), 32, False)
        pos = d.sub(d.const(w - 1, 32), lz)
        r = lz if ".shiftamt" in inst.modifiers else pos
        return [(inst.operands[0], d.ite(d.eq(a, d.const(0, w)), self._ones(32), r))]

    def _h_fns(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        mask = self._src(inst, 1, ".b32")
        base = self._src(inst, 2, ".u32")
        offset = self._src(inst, 3, ".s32")
        one, zero, none = d.const(1, 32), d.const(0, 32), self._ones(32)
        neg_off = d.neg(offset)
        base_bit = d.and_(d.lshr(mask, base), one)
        from_base = d.shl(self._ones(32), base)  # bits >= base
        upto_base = d.not_(d.shl(d.shl(self._ones(32), base), one))  # bits <= base
        up, down = none, none
        for p in range(32):
            bit_set = d.not_(d.eq(d.and_(mask, d.const(1 << p, 32)), zero))
            here = d.const(p, 32)
            # Upward: the offset-th set bit counting from base.
            window = d.and_(d.and_(mask, from_base), d.const((2 << p) - 1, 32))
            hit_up = d.and_(d.and_(bit_set, dm.uge(d, here, base)), d.eq(d.popc(window), offset))
            up = d.ite(hit_up, here, up)
            # Downward: the |offset|-th set bit counting down from base.
            window = d.and_(d.and_(mask, upto_base), d.const(((1 << 32) - 1) ^ ((1 << p) - 1), 32))
            hit_down = d.and_(d.and_(bit_set, dm.ule(d, here, base)), d.eq(d.popc(window), neg_off))
            down = d.ite(hit_down, here, down)
        at_base = d.ite(d.eq(base_bit, one), base, none)
        r = d.ite(d.eq(offset, zero), at_base, d.ite(d.slt(zero, offset), up, down))
        return [(inst.operands[0], r)]

    def _h_brev(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        return [(inst.operands[0], self.dom.brev(self._src(inst, 1)))]

    def _h_bfe(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a = self._src(inst, 1, t)
        w = d.width(a)
        pos = self._field_arg(self._src(inst, 2, ".u32"), w)
        length = self._field_arg(self._src(inst, 3, ".u32"), w)
        # Field bits that exist: min(len, max(w - pos, 0)).
        room = d.ite(d.ult(pos, d.const(w, 32)), d.sub(d.const(w, 32), pos), d.const(0, 32))
        eff = d.ite(d.ult(length, room), length, room)
        mask = d.not_(d.shl(self._ones(w), dm.resize(d, eff, w, False)))
        field = d.and_(d.lshr(a, dm.resize(d, pos, w, False)), mask)
        if not _signed(t):
            return [(inst.operands[0], field)]
        top = d.sub(d.add(pos, length), d.const(1, 32))
        top = d.ite(d.ult(top, d.const(w - 1, 32)), top, d.const(w - 1, 32))
        sbit = d.extract(d.lshr(a, dm.resize(d, top, w, False)), 0, 0)
        sbit = d.and_(sbit, d.not_(d.eq(length, d.const(0, 32))))
        fill = d.ite(sbit, d.not_(mask), d.const(0, w))
        return [(inst.operands[0], d.or_(field, fill))]

    def _field_arg(self, value: V, width: int) -> V:
        """A bfe/bfi position or length: 32-bit forms use its low byte (the
        ISA); the 64-bit forms, which ptxas expands into shifts, use the whole
        value, clamped here to 64 (measured on an H200)."""
        d = self.dom
        if width == 64:
            return d.ite(d.ult(value, d.const(64, 32)), value, d.const(64, 32))
        return d.and_(value, d.const(0xFF, 32))

    def _h_bfi(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1, t), self._src(inst, 2, t)
        w = d.width(a)
        pos = self._field_arg(self._src(inst, 3, ".u32"), w)
        length = self._field_arg(self._src(inst, 4, ".u32"), w)
        length = d.ite(d.ult(length, d.const(w, 32)), length, d.const(w, 32))
        field = d.not_(d.shl(self._ones(w), dm.resize(d, length, w, False)))
        pos_w = dm.resize(d, d.ite(d.ult(pos, d.const(w, 32)), pos, d.const(w, 32)), w, False)
        mask = d.shl(field, pos_w)
        r = d.or_(d.and_(b, d.not_(mask)), d.and_(d.shl(a, pos_w), mask))
        return [(inst.operands[0], r)]

    def _h_szext(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1, t), self._src(inst, 2, ".u32")
        b1 = d.and_(b, d.const(0x1F, 32))
        too_large = d.not_(d.ult(b, d.const(32, 32))) if ".clamp" in inst.modifiers else d.const(0, 1)
        mask = d.ite(too_large, d.const(0, 32), d.shl(self._ones(32), b1))
        if _signed(t):
            sign_pos = d.and_(d.sub(b1, d.const(1, 32)), d.const(0x1F, 32))
            sign = d.extract(d.lshr(a, sign_pos), 0, 0)
            sign = d.and_(sign, d.and_(d.not_(d.eq(b1, d.const(0, 32))), d.not_(too_large)))
        else:
            sign = d.const(0, 1)
        r = d.or_(d.and_(a, d.not_(mask)), d.ite(sign, mask, d.const(0, 32)))
        return [(inst.operands[0], r)]

    def _h_bmsk(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b = self._src(inst, 1, ".u32"), self._src(inst, 2, ".u32")
        k31, zero = d.const(0x1F, 32), d.const(0, 32)
        a1, b1 = d.and_(a, k31), d.and_(b, k31)
        mask0 = d.shl(self._ones(32), a1)
        total = d.add(a1, b1)
        mask1 = d.shl(self._ones(32), total)
        overflow = d.not_(d.ult(total, d.const(32, 32)))
        if ".clamp" in inst.modifiers:
            big_a = d.not_(d.ult(a, d.const(32, 32)))
            mask0 = d.ite(big_a, zero, mask0)
            overflow = d.or_(overflow, d.or_(big_a, d.not_(d.ult(b, d.const(32, 32)))))
        mask1 = d.ite(overflow, zero, d.ite(d.eq(b1, zero), self._ones(32), mask1))
        return [(inst.operands[0], d.and_(mask0, d.not_(mask1)))]

    def _h_dp(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        at, bt = types[0], types[1] if len(types) > 1 else types[0]
        a, b, c = self._src(inst, 1, ".b32"), self._src(inst, 2, ".b32"), self._src(inst, 3, ".b32")
        ea = d.sext if _signed(at) else d.zext
        eb = d.sext if _signed(bt) else d.zext
        r = c
        if inst.opcode == "dp4a":
            pairs = [(8 * i + 7, 8 * i, 8 * i + 7, 8 * i) for i in range(4)]
        else:
            base = 16 if ".hi" in inst.modifiers else 0
            pairs = [(16 * i + 15, 16 * i, base + 8 * i + 7, base + 8 * i) for i in range(2)]
        for ahi, alo, bhi, blo in pairs:
            r = d.add(r, d.mul(ea(d.extract(a, ahi, alo), 32), eb(d.extract(b, bhi, blo), 32)))
        return [(inst.operands[0], r)]

    # ---- floating point -----------------------------------------------------------------
    def _h_fma(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        t = types[0]
        if ".oob" in inst.modifiers:
            raise Unsupported("fma.oob (out-of-bounds operand handling)")
        src = types[1] if len(types) > 1 else t
        a = self._convert_float(self._src(inst, 1), src, t)
        b = self._convert_float(self._src(inst, 2), src, t)
        c = self._src(inst, 3)
        return [(inst.operands[0], d.fp(self._fp(inst, "fma", t), a, b, c))]

    def _h_float_unary(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        t = self._types(inst)[0]
        a = self._src(inst, 1)
        return [(inst.operands[0], self.dom.fp(self._fp(inst, inst.opcode, t), a))]

    def _h_copysign(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1), self._src(inst, 2)
        sign = d.const(self._sign_mask(t), d.width(a))
        return [(inst.operands[0], d.or_(d.and_(b, d.not_(sign)), d.and_(a, sign)))]

    def _h_testp(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        fmt = FORMATS.get(t)
        if fmt is None:
            raise Unsupported(f"testp on {t}")
        a = self._src(inst, 1, t)
        w = d.width(a)
        emask = ((1 << fmt.ebits) - 1) << fmt.mbits
        exp = d.and_(a, d.const(emask, w))
        man = d.and_(a, d.const((1 << fmt.mbits) - 1, w))
        zero = d.const(0, w)
        all_ones = d.eq(exp, d.const(emask, w))
        exp_zero = d.eq(exp, zero)
        man_zero = d.eq(man, zero)
        tests = {
            ".finite": d.not_(all_ones),
            ".infinite": d.and_(all_ones, man_zero),
            ".number": d.not_(d.and_(all_ones, d.not_(man_zero))),
            ".notanumber": d.and_(all_ones, d.not_(man_zero)),
            ".normal": d.or_(d.and_(d.not_(exp_zero), d.not_(all_ones)), d.and_(exp_zero, man_zero)),
            ".subnormal": d.and_(exp_zero, d.not_(man_zero)),
        }
        for mod in inst.modifiers:
            if mod in tests:
                return [(inst.operands[0], tests[mod])]
        raise Unsupported("testp without a property")

    # ---- comparison and selection -------------------------------------------------------
    def _compare(self, inst: ir.Instruction, t: str, a: V, b: V) -> list[V]:
        """The 1-bit result(s) of comparing a and b as ``t`` (two for packed halves)."""
        d = self.dom
        cmp = next((m[1:] for m in inst.modifiers if isa.classify_modifier(m, "setp") == "compare"), None)
        if cmp is None:
            raise Unsupported(f"{inst.mnemonic} has no comparison")
        if _is_float(t):
            if ".ftz" in inst.modifiers:
                a, b = self._flush(a, t), self._flush(b, t)
            if t in _PACKED_FLOAT:
                elem = _PACKED_FLOAT[t]
                h = _bits(elem)
                return [
                    d.fp_compare(cmp, elem, d.extract(a, h - 1, 0), d.extract(b, h - 1, 0)),
                    d.fp_compare(cmp, elem, d.extract(a, 2 * h - 1, h), d.extract(b, 2 * h - 1, h)),
                ]
            return [d.fp_compare(cmp, t, a, b)]
        fn = _INT_COMPARE.get(cmp)
        if fn is None:
            raise Unsupported(f"integer comparison .{cmp}")
        return [fn(d, a, b, _signed(t))]

    def _combine(self, inst: ir.Instruction, t: V, c: V | None) -> V:
        d = self.dom
        if c is None:
            return t
        if ".and" in inst.modifiers:
            return d.and_(t, c)
        if ".or" in inst.modifiers:
            return d.or_(t, c)
        if ".xor" in inst.modifiers:
            return d.xor(t, c)
        return t

    def _h_setp(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a, b = self._src(inst, 1, t), self._src(inst, 2, t)
        c = self._src(inst, 3, ".pred") if len(inst.operands) > 3 else None
        results = self._compare(inst, t, a, b)
        dst = inst.operands[0]
        if len(results) == 2:  # packed halves: p from the low half, q from the high half
            p, q = self._combine(inst, results[0], c), self._combine(inst, results[1], c)
        else:
            p = self._combine(inst, results[0], c)
            q = self._combine(inst, d.not_(results[0]), c)
        if isinstance(dst, ir.PairOperand):
            return [(dst.first, p), (dst.second, q)]
        return [(dst, p)]

    def _h_set(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        dt, st = types[0], types[1] if len(types) > 1 else types[0]
        a, b = self._src(inst, 1, st), self._src(inst, 2, st)
        c = self._src(inst, 3, ".pred") if len(inst.operands) > 3 else None
        results = [self._combine(inst, r, c) for r in self._compare(inst, st, a, b)]
        if len(results) == 2:
            elem = _PACKED_FLOAT.get(dt, ".b16")
            true = _TRUE_VALUE.get(elem, 0xFFFF)
            halves = [d.ite(r, d.const(true, 16), d.const(0, 16)) for r in results]
            return [(inst.operands[0], d.concat(halves[1], halves[0]))]
        w = _bits(dt)
        true = _TRUE_VALUE.get(dt, (1 << w) - 1)
        return [(inst.operands[0], d.ite(results[0], d.const(true, w), d.const(0, w)))]

    def _h_selp(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b, c = self._src(inst, 1), self._src(inst, 2), self._src(inst, 3, ".pred")
        return [(inst.operands[0], d.ite(c, a, b))]

    def _h_slct(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        ct = types[1] if len(types) > 1 else ".s32"
        a, b, c = self._src(inst, 1), self._src(inst, 2), self._src(inst, 3, ct)
        if _is_float(ct):
            if ".ftz" in inst.modifiers:
                c = self._flush(c, ct)
            take_a = d.fp_compare("ge", ct, c, d.const(0, d.width(c)))
        else:
            take_a = dm.sge(d, c, d.const(0, d.width(c)))
        return [(inst.operands[0], d.ite(take_a, a, b))]

    # ---- logic and shifts ---------------------------------------------------------------
    def _h_logic(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        fn = {"and": d.and_, "or": d.or_, "xor": d.xor}[inst.opcode]
        return [(inst.operands[0], fn(self._src(inst, 1), self._src(inst, 2)))]

    def _h_not(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a = self._src(inst, 1)
        if inst.opcode == "cnot":
            w = d.width(a)
            return [(inst.operands[0], self._bool(d.eq(a, d.const(0, w)), w))]
        return [(inst.operands[0], d.not_(a))]

    def _h_lop3(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b, c = (self._src(inst, i, ".b32") for i in (1, 2, 3))
        lut_op = inst.operands[4]
        if not isinstance(lut_op, ir.IntImm):
            raise Unsupported("lop3 with a non-constant truth table")
        lut = lut_op.value & 0xFF
        r = d.const(0, 32)
        for i in range(8):
            if lut >> i & 1:
                term = d.and_(
                    d.and_(a if i & 4 else d.not_(a), b if i & 2 else d.not_(b)),
                    c if i & 1 else d.not_(c),
                )
                r = d.or_(r, term)
        dst = inst.operands[0]
        if isinstance(dst, ir.PairOperand):
            q = self._src(inst, 5, ".pred")
            p = self._combine(inst, d.not_(d.eq(r, d.const(0, 32))), q)
            return [(dst.first, r), (dst.second, p)]
        return [(dst, r)]

    def _h_shf(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b, c = (self._src(inst, i, ".b32") for i in (1, 2, 3))
        if ".clamp" in inst.modifiers:
            n = d.ite(d.ult(c, d.const(32, 32)), c, d.const(32, 32))
        else:
            n = d.and_(c, d.const(31, 32))
        pair = d.concat(b, a)
        n64 = d.zext(n, 64)
        if ".l" in inst.modifiers:
            r = d.extract(d.shl(pair, n64), 63, 32)
        else:
            r = d.extract(d.lshr(pair, n64), 31, 0)
        return [(inst.operands[0], r)]

    def _h_shift(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        a = self._src(inst, 1, t)
        w = d.width(a)
        b = self._src(inst, 2, ".u32")
        amount = dm.resize(d, d.ite(d.ult(b, d.const(w, 32)), b, d.const(w, 32)), w, False)
        if inst.opcode == "shl":
            r = d.shl(a, amount)
        else:
            r = d.ashr(a, amount) if _signed(t) else d.lshr(a, amount)
        return [(inst.operands[0], r)]

    # ---- data movement and conversion -------------------------------------------------
    def _h_mov(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t = self._types(inst)[0]
        w = _bits(t)
        dst, src = inst.operands[0], inst.operands[1]
        vec = isa.vector_width(inst)
        if vec > 1 or (isinstance(dst, ir.VectorOperand) and isinstance(src, ir.VectorOperand)):
            # Element by element: ``mov.v2.u32 %v, {0, 0}`` (GCC), vector registers, braces.
            dsts, srcs = self._elements(dst, inst), self._elements(src, inst)
            if len(dsts) != len(srcs):
                raise Unsupported("mov between vectors of different lengths")
            return [(x, self._read(y, t, w)) for x, y in zip(dsts, srcs, strict=True)]
        if isinstance(dst, ir.VectorOperand) and vec == 1:  # unpack
            n = len(dst.elements)
            ew = w // n
            whole = self._read(src, t, w)
            return [(el, d.extract(whole, ew * (i + 1) - 1, ew * i)) for i, el in enumerate(dst.elements)]
        if isinstance(src, ir.VectorOperand) and vec == 1:  # pack
            n = len(src.elements)
            ew = w // n
            parts = [self._read(el, f".b{ew}", ew) for el in src.elements]
            r = parts[-1]
            for p in reversed(parts[:-1]):
                r = d.concat(r, p)
            return [(dst, r)]
        return [(dst, self._read(src, t, w))]

    def _h_prmt(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        a, b, c = (self._src(inst, i, ".b32") for i in (1, 2, 3))
        pool = d.concat(b, a)
        mode = next((m for m in inst.modifiers if m in _PRMT_MODES), None)
        zero8, ones8 = d.const(0, 8), d.const(0xFF, 8)
        out: list[V] = []
        if mode is None:
            for i in range(4):
                sel = d.zext(d.extract(c, 4 * i + 2, 4 * i), 64)
                byte = d.extract(d.lshr(pool, d.shl(sel, d.const(3, 64))), 7, 0)
                replicate = d.extract(c, 4 * i + 3, 4 * i + 3)
                sign = d.extract(byte, 7, 7)
                out.append(d.ite(replicate, d.ite(sign, ones8, zero8), byte))
        else:
            rule = _PRMT_MODES[mode]
            sel = d.extract(c, 1, 0)
            for i in range(4):
                byte = None
                for k in range(4):
                    j = rule(k, i)
                    candidate = d.extract(pool, 8 * j + 7, 8 * j)
                    byte = candidate if byte is None else d.ite(d.eq(sel, d.const(k, 2)), candidate, byte)
                assert byte is not None
                out.append(byte)
        r = d.concat(d.concat(out[3], out[2]), d.concat(out[1], out[0]))
        return [(inst.operands[0], r)]

    def _h_cvt(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        dt = types[0]
        st = types[1] if len(types) > 1 else dt
        if ".rs" in inst.modifiers:
            raise Unsupported("cvt.rs (stochastic rounding)")
        if not _is_float(dt) and not _is_float(st):
            return [(inst.operands[0], self._widen(self._int_convert(inst, dt, st), dt))]
        if isinstance(inst.operands[1], ir.VectorOperand):
            raise Unsupported("cvt of a four-element vector")
        args = [self._src(inst, i, st) for i in range(1, len(inst.operands))]
        value = d.fp(self._fp(inst, "cvt", dt, st), *args)
        if not _is_float(dt):
            value = self._widen(value, dt)
        return [(inst.operands[0], value)]

    def _int_convert(self, inst: ir.Instruction, dt: str, st: str) -> V:
        d = self.dom
        ws, wd = _bits(st), _bits(dt)
        ss, sd = _signed(st), _signed(dt)
        x = self._src(inst, 1, st)
        if ".sat" in inst.modifiers:
            lo = -(1 << (wd - 1)) if sd else 0
            hi = (1 << (wd - 1)) - 1 if sd else (1 << wd) - 1
            smin = -(1 << (ws - 1)) if ss else 0
            smax = (1 << (ws - 1)) - 1 if ss else (1 << ws) - 1
            less = d.slt if ss else d.ult
            if smax > hi:
                x = d.ite(less(d.const(hi, ws), x), d.const(hi, ws), x)
            if smin < lo:
                x = d.ite(less(x, d.const(lo, ws)), d.const(lo, ws), x)
        return dm.resize(d, x, wd, ss)

    def _h_cvt_pack(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        types = self._types(inst)
        ct, abt = types[0], types[1] if len(types) > 1 else ".s32"
        size = _bits(ct)
        a, b = self._src(inst, 1, abt), self._src(inst, 2, abt)
        lo = -(1 << (size - 1)) if _signed(ct) else 0
        hi = (1 << (size - 1)) - 1 if _signed(ct) else (1 << size) - 1
        less = d.slt if _signed(abt) else d.ult

        def clamp(x: V) -> V:
            x = d.ite(less(d.const(hi, 32), x), d.const(hi, 32), x)
            if lo < 0 or _signed(abt):
                x = d.ite(less(x, d.const(lo, 32)), d.const(lo, 32), x)
            return d.extract(x, size - 1, 0)

        packed = d.concat(clamp(a), clamp(b))
        if 2 * size < 32:
            c = self._src(inst, 3, ".b32")
            packed = d.concat(d.extract(c, 31 - 2 * size, 0), packed)
        return [(inst.operands[0], packed)]

    def _h_cvta(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        t = self._types(inst)[0]
        value = self._src(inst, 1, t)
        hook = getattr(self.machine, "convert_address", None)
        if hook is not None:
            space = _space(inst)
            value = hook(inst, space, value, ".to" not in inst.modifiers)
        return [(inst.operands[0], value)]

    def _h_isspacep(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        hook = getattr(self.machine, "in_space", None)
        if hook is None:
            raise Unsupported("isspacep needs the machine's address map (in_space)")
        return [(inst.operands[0], hook(inst, _space(inst), self.address(inst.operands[1])))]

    # ---- memory -------------------------------------------------------------------------
    def _elements(self, op: ir.Operand, inst: ir.Instruction) -> Sequence[ir.Operand]:
        """The elements a vector instruction moves: ``{a, b}``, or a vector
        register (GCC's ``.reg.v2.u32 %v``) as its ``%v.x``, ``%v.y``."""
        if isinstance(op, ir.VectorOperand):
            return op.elements
        if isinstance(op, ir.Register) and op.selector is None:
            n = isa.vector_width(inst)
            if n > len(_VECTOR_SELECTORS):
                raise Unsupported(f"a .v{n} vector register")
            if n > 1:
                return tuple(ir.Register(op.name, s) for s in _VECTOR_SELECTORS[:n])
        return (op,)

    def _access(self, inst: ir.Instruction) -> tuple[str, int]:
        t = self._types(inst)[0]
        w = _bits(t)
        if w % 8 or w > 64:
            raise Unsupported(f"{w}-bit memory elements")
        return t, w // 8

    def _h_ld(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t, nbytes = self._access(inst)
        space = _space(inst)
        base = self.address(inst.operands[1])
        writes: list[Write] = []
        for i, el in enumerate(self._elements(inst.operands[0], inst)):
            if isinstance(el, ir.Sink):
                continue
            addr = d.add(base, d.const(i * nbytes, 64)) if i else base
            value = self.machine.load(inst, space, addr, nbytes, cond)
            writes.append((el, self._widen(value, t)))
        return writes

    def _h_st(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        d = self.dom
        t, nbytes = self._access(inst)
        space = _space(inst)
        base = self.address(inst.operands[0])
        values = [self._read(el, t, nbytes * 8) for el in self._elements(inst.operands[1], inst)]
        for i, value in enumerate(values):
            addr = d.add(base, d.const(i * nbytes, 64)) if i else base
            self.machine.store(inst, space, addr, value, nbytes, cond)
        return []

    def _h_atom(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        if isa.vector_width(inst) != 1:
            raise Unsupported("vector atomics")
        t, nbytes = self._access(inst)
        op = next((m[1:] for m in inst.modifiers if m[1:] in _ATOM_OPS), None)
        if op is None:
            raise Unsupported(f"{inst.mnemonic} names no operation")
        has_dst = inst.opcode == "atom"
        first = 2 if has_dst else 1
        addr = self.address(inst.operands[first - 1])
        count = 2 if op == "cas" else 1
        operands = [self._read(inst.operands[first + k], t, nbytes * 8) for k in range(count)]
        old = self.machine.atomic(inst, _space(inst), op, addr, operands, nbytes, cond)
        return [(inst.operands[0], self._widen(old, t))] if has_dst else []

    def _h_cp_async(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        """``cp.async``: done at once, as a guarded load and store (zero fill past src-size)."""
        d = self.dom
        size_op = inst.operands[2]
        if not isinstance(size_op, ir.IntImm):
            raise Unsupported("cp.async with a non-constant size")
        size = size_op.value
        extra = list(inst.operands[3:])
        if ".L2::cache_hint" in inst.modifiers and extra:
            extra.pop()
        src_size: V | None = None
        ignore: V | None = None
        if extra:
            e = extra[0]
            if isinstance(e, ir.Negated) or (isinstance(e, ir.Register) and e.name.startswith("%p")):
                ignore = self._read(e, ".pred", 1)
            else:
                src_size = dm.resize(d, self._read(e, ".u32", 32), 64, False)
        spaces = isa.state_spaces(inst)
        dst_space = ".shared" if not spaces else _space(inst)
        src_space = spaces[1] if len(spaces) > 1 else ".global"
        dst, src = self.address(inst.operands[0]), self.address(inst.operands[1])
        for off in range(0, size, 8):
            n = min(8, size - off)
            o = d.const(off, 64)
            load_cond = cond
            keep: V | None = None
            if src_size is not None:
                keep = d.ult(o, src_size)
            if ignore is not None:
                keep = d.not_(ignore) if keep is None else d.and_(keep, d.not_(ignore))
            if keep is not None:
                load_cond = keep if cond is None else d.and_(cond, keep)
            value = self.machine.load(inst, src_space, d.add(src, o), n, load_cond)
            if src_size is not None:
                valid = d.sub(src_size, o)
                bits = d.shl(d.ite(d.ult(valid, d.const(n, 64)), valid, d.const(n, 64)), d.const(3, 64))
                mask = d.not_(d.shl(self._ones(64), bits))
                value = d.and_(dm.resize(d, value, 64, False), mask)
                value = d.extract(value, 8 * n - 1, 0) if n < 8 else value
            if keep is not None:
                value = d.ite(keep, value, d.const(0, 8 * n))
            self.machine.store(inst, dst_space, d.add(dst, o), value, n, cond)
        return []

    def _h_nothing(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        """Hints and orderings with no effect on a sequentially consistent machine."""
        return []

    def _h_createpolicy(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        """A cache policy is an opaque value only cache hints consume."""
        return [(inst.operands[0], self.dom.fresh("createpolicy", 64))]

    # ---- synchronisation and warp ---------------------------------------------------
    def _h_barrier(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        self.machine.barrier(inst, cond)
        if ".red" not in inst.modifiers:
            return []
        # ``bar.red.popc.u32 d, a{, b}, {!}c``: the predicate is the last operand.
        hook = getattr(self.machine, "cta_reduce", None)
        if hook is None:
            raise Unsupported("bar.red needs the machine's CTA (cta_reduce)")
        mode = next((m for m in (".popc", ".and") if m in inst.modifiers), ".or")
        pred = self._read(inst.operands[-1], ".pred", 1)
        return [(inst.operands[0], hook(inst, mode, pred, cond))]

    def _h_warp(self, inst: ir.Instruction, cond: V | None) -> list[Write]:
        typed = self._table_facts(inst)[1]
        values = [self._src(inst, i) for i in range(1, len(typed))]
        results = self.machine.warp(inst, values, cond)
        dst = inst.operands[0]
        if isinstance(dst, ir.PairOperand):
            writes: list[Write] = [(dst.first, results[0])]
            if len(results) > 1:
                writes.append((dst.second, results[1]))
            return writes
        return [(dst, results[0])]


# --------------------------------------------------------------------------
# Tables


def _int_cmp(signed_op: str, unsigned_op: str) -> Callable[[Domain, object, object, bool], object]:
    def compare(d: Domain, a: object, b: object, signed: bool) -> object:
        name = signed_op if signed else unsigned_op
        return _DERIVED[name](d, a, b)

    return compare


_DERIVED: dict[str, Callable[[Domain, object, object], object]] = {
    "eq": lambda d, a, b: d.eq(a, b),
    "ne": dm.ne,
    "slt": lambda d, a, b: d.slt(a, b),
    "ult": lambda d, a, b: d.ult(a, b),
    "sle": dm.sle,
    "ule": dm.ule,
    "sgt": dm.sgt,
    "ugt": dm.ugt,
    "sge": dm.sge,
    "uge": dm.uge,
}
_INT_COMPARE = {
    "eq": _int_cmp("eq", "eq"),
    "ne": _int_cmp("ne", "ne"),
    "lt": _int_cmp("slt", "ult"),
    "le": _int_cmp("sle", "ule"),
    "gt": _int_cmp("sgt", "ugt"),
    "ge": _int_cmp("sge", "uge"),
    "lo": _int_cmp("ult", "ult"),
    "ls": _int_cmp("ule", "ule"),
    "hi": _int_cmp("ugt", "ugt"),
    "hs": _int_cmp("uge", "uge"),
}


_EXPR_OPS: dict[str, Callable[[Semantics, object, object, int], object]] = {
    "+": lambda s, a, b, w: s.dom.add(a, b),
    "-": lambda s, a, b, w: s.dom.sub(a, b),
    "*": lambda s, a, b, w: s.dom.mul(a, b),
    "/": lambda s, a, b, w: s.dom.sdiv(a, b),
    "%": lambda s, a, b, w: s.dom.srem(a, b),
    "<<": lambda s, a, b, w: s.dom.shl(a, b),
    ">>": lambda s, a, b, w: s.dom.ashr(a, b),
    "&": lambda s, a, b, w: s.dom.and_(a, b),
    "|": lambda s, a, b, w: s.dom.or_(a, b),
    "^": lambda s, a, b, w: s.dom.xor(a, b),
    "==": lambda s, a, b, w: s._bool(s.dom.eq(a, b), w),
    "!=": lambda s, a, b, w: s._bool(dm.ne(s.dom, a, b), w),
    "<": lambda s, a, b, w: s._bool(s.dom.slt(a, b), w),
    ">": lambda s, a, b, w: s._bool(dm.sgt(s.dom, a, b), w),
    "<=": lambda s, a, b, w: s._bool(dm.sle(s.dom, a, b), w),
    ">=": lambda s, a, b, w: s._bool(dm.sge(s.dom, a, b), w),
    "&&": lambda s, a, b, w: s._bool(
        s.dom.and_(dm.ne(s.dom, a, s.dom.const(0, w)), dm.ne(s.dom, b, s.dom.const(0, w))), w
    ),
    "||": lambda s, a, b, w: s._bool(
        s.dom.or_(dm.ne(s.dom, a, s.dom.const(0, w)), dm.ne(s.dom, b, s.dom.const(0, w))), w
    ),
}

_Handler = Callable[[Semantics, ir.Instruction, object], list[Write]]
S = Semantics
_HANDLERS: dict[str, _Handler] = {
    # integer arithmetic
    "add": S._h_addsub,
    "sub": S._h_addsub,
    "addc": S._h_addc,
    "subc": S._h_addc,
    "mul": S._h_mul,
    "mad": S._h_mad,
    "madc": S._h_mad,
    "mul24": S._h_mul24,
    "mad24": S._h_mul24,
    "sad": S._h_sad,
    "div": S._h_div,
    "rem": S._h_div,
    "abs": S._h_absneg,
    "neg": S._h_absneg,
    "min": S._h_minmax,
    "max": S._h_minmax,
    "popc": S._h_count,
    "clz": S._h_count,
    "bfind": S._h_bfind,
    "fns": S._h_fns,
    "brev": S._h_brev,
    "bfe": S._h_bfe,
    "bfi": S._h_bfi,
    "szext": S._h_szext,
    "bmsk": S._h_bmsk,
    "dp4a": S._h_dp,
    "dp2a": S._h_dp,
    # floating point
    "fma": S._h_fma,
    "rcp": S._h_float_unary,
    "sqrt": S._h_float_unary,
    "rsqrt": S._h_float_unary,
    "sin": S._h_float_unary,
    "cos": S._h_float_unary,
    "lg2": S._h_float_unary,
    "ex2": S._h_float_unary,
    "tanh": S._h_float_unary,
    "copysign": S._h_copysign,
    "testp": S._h_testp,
    # comparison and selection
    "setp": S._h_setp,
    "set": S._h_set,
    "selp": S._h_selp,
    "slct": S._h_slct,
    # logic and shift
    "and": S._h_logic,
    "or": S._h_logic,
    "xor": S._h_logic,
    "not": S._h_not,
    "cnot": S._h_not,
    "lop3": S._h_lop3,
    "shf": S._h_shf,
    "shl": S._h_shift,
    "shr": S._h_shift,
    # data movement and conversion
    "mov": S._h_mov,
    "prmt": S._h_prmt,
    "cvt": S._h_cvt,
    "cvt.pack": S._h_cvt_pack,
    "cvta": S._h_cvta,
    "isspacep": S._h_isspacep,
    # memory
    "ld": S._h_ld,
    "ldu": S._h_ld,
    "st": S._h_st,
    "atom": S._h_atom,
    "red": S._h_atom,
    "cp.async": S._h_cp_async,
    "cp.async.commit_group": S._h_nothing,
    "cp.async.wait_group": S._h_nothing,
    "cp.async.wait_all": S._h_nothing,
    "prefetch": S._h_nothing,
    "prefetchu": S._h_nothing,
    "applypriority": S._h_nothing,
    "discard": S._h_nothing,
    "createpolicy": S._h_createpolicy,
    # synchronisation and warp
    "fence": S._h_nothing,
    "membar": S._h_nothing,
    "griddepcontrol": S._h_nothing,
    "nanosleep": S._h_nothing,
    "pmevent": S._h_nothing,
    "brkpt": S._h_nothing,
    "bar": S._h_barrier,
    "barrier": S._h_barrier,
    "bar.warp.sync": S._h_barrier,
    "shfl": S._h_warp,
    "vote": S._h_warp,
    "match": S._h_warp,
    "redux": S._h_warp,
    "activemask": S._h_warp,
    "elect": S._h_warp,
}
del S


def handled_opcodes() -> list[str]:
    """Opcodes with a handler, in table order (for coverage reports)."""
    return list(_HANDLERS)
