"""The NEC SX-Aurora (VE) vector intrinsics the VE back end emits, and what each computes.

`SIGNATURES` is the one list of ``llvm.ve.vl.*`` intrinsics the lowering
(`ve_lower`) may call, with LLVM 14's signature for each (``llc -march=ve
-mattr=+vpu`` rejects a call whose types differ). `emulation_ir` writes an
executable definition of every one of them in plain LLVM IR, so the lowered
module runs on this host (`ve.load_emulated`) and can be compared with the
interpreter bit for bit.

Why the definitions model the VE rather than re-spell LLVM's generic ops: the
emulation exists to check the lowering, so it must fail where the lowering
relies on something the hardware does not give. A VE vector register holds
256 64-bit elements; an instruction touches elements ``< vl`` only and the
rest are not defined by the intrinsic, so the definitions fill them with a
junk pattern (masks: set bits). 32-bit integers live in the lower half of an
element (``vaddswsx`` reads the lower words, sign-extends its result;
``vldlzx``/``vstl`` load and store the lower word), single-precision floats
in the upper half (``vfadds``, ``vldu``/``vstu``, ``vbrds``); the other half
of a single-precision result is junk. Comparisons (``vcmp*``, ``vfcmp*``)
give a negative, zero or positive value (NaN when unordered) that ``vfmk*``
turns into a mask with a condition code (``nan`` suffix: or unordered).
Gathers and scatters (``vgt*``, ``vsc*``) take one address per element; the
lowering passes 0 for their two scalar operands (the ISA's address-range
operands), so the definitions ignore them.
"""

from __future__ import annotations

import re

__all__ = ["JUNK", "SIGNATURES", "emulation_ir", "emulation_name", "register_width"]

#: What lanes >= vl (and the free half of a 32-bit element) hold in the emulation.
JUNK = 0x7FF4_DEAD_0BAD_F00D
JUNK_LOW = 0x0BAD_F00D
PREFIX = "llvm.ve.vl."
EMU_PREFIX = "ve.emu."

_V = "<256 x double>"
_M = "<256 x i1>"
_ALIGN = {_V: 8, _M: 1}  # registers in memory: no more alignment than an i64 array's
_TYPES = {"v": _V, "m": _M, "l": "i64", "w": "i32", "p": "i8*", "d": "double"}

_ILOGIC = ("vaddsl", "vsubsl", "vmulsl", "vand", "vor", "vxor")
_WARITH = ("vaddswsx", "vsubswsx", "vmulswsx")
_SHIFTS = ("vsll", "vsrl", "vsral")
_CMPS = ("vcmpsl", "vcmpul", "vcmpswsx", "vcmpuw")
_FARITH = tuple(f"vf{op}{p}" for op in ("add", "sub", "mul", "div") for p in "ds")
_FCMPS = ("vfcmpd", "vfcmps")
#: vfmk condition codes: name -> (integer predicate or None, float predicate).
CONDITIONS = {
    "gt": ("sgt", "ogt"),
    "lt": ("slt", "olt"),
    "ne": ("ne", "one"),
    "eq": ("eq", "oeq"),
    "ge": ("sge", "oge"),
    "le": ("sle", "ole"),
    "num": (None, "ord"),
    "nan": (None, "uno"),
    "gtnan": (None, "ugt"),
    "ltnan": (None, "ult"),
    "nenan": (None, "une"),
    "eqnan": (None, "ueq"),
    "genan": (None, "uge"),
    "lenan": (None, "ule"),
}
_LOADS = ("vld", "vldlzx", "vldu")
_STORES = ("vst", "vstl", "vstu")
_GATHERS = ("vgt", "vgtlzx", "vgtu")
_SCATTERS = ("vsc", "vscl", "vscu")
_REDUCTIONS = ("vsuml", "vror", "vrand", "vrxor", "vrmaxslfst", "vrminslfst", "vrmaxswfstsx", "vrminswfstsx")


def _signatures() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Intrinsic name (without ``llvm.ve.vl.``) -> (result, arguments) in `_TYPES` letters."""
    sig: dict[str, tuple[str, tuple[str, ...]]] = {}
    for op in (*_ILOGIC, *_WARITH, *_CMPS, *_FARITH, *_FCMPS, *_SHIFTS, "vsrawsx", "vdivul", "vdivsl"):
        sig[f"{op}.vvvl"] = ("v", ("v", "v", "w"))
    for op in _ILOGIC:
        sig[f"{op}.vsvl"] = ("v", ("l", "v", "w"))
    sig["vaddswsx.vsvl"] = ("v", ("w", "v", "w"))
    for op in _SHIFTS:
        sig[f"{op}.vvsl"] = ("v", ("v", "l", "w"))
    for fm in ("vfmadd", "vfmads"):
        sig[f"{fm}.vvvvl"] = ("v", ("v", "v", "v", "w"))
    for kind, conds in (("l", "gt lt ne eq ge le"), ("w", "gt lt ne eq ge le"), ("d", None), ("s", None)):
        for cc in conds.split() if conds else CONDITIONS:
            sig[f"vfmk{kind}{cc}.mvl"] = ("m", ("v", "w"))
    sig["vfmklat.ml"] = ("m", ("w",))
    sig["vfmklaf.ml"] = ("m", ("w",))
    for op in ("andm", "orm", "xorm"):
        sig[f"{op}.mmm"] = ("m", ("m", "m"))
    sig["negm.mm"] = ("m", ("m",))
    sig["pcvm.sml"] = ("l", ("m", "w"))
    sig["vmrg.vvvml"] = ("v", ("v", "v", "m", "w"))
    sig["vcvtds.vvl"] = ("v", ("v", "w"))
    sig["vfsqrtd.vvl"] = ("v", ("v", "w"))
    sig["vfsqrts.vvl"] = ("v", ("v", "w"))
    sig["vcvtsd.vvl"] = ("v", ("v", "w"))
    sig["vbrdl.vsl"] = ("v", ("l", "w"))
    sig["vseq.vl"] = ("v", ("w",))
    for op in _LOADS:
        sig[f"{op}.vssl"] = ("v", ("l", "p", "w"))
    for op in _STORES:
        sig[f"{op}.vssml"] = ("", ("v", "l", "p", "m", "w"))
    sig["vst.vssl"] = ("", ("v", "l", "p", "w"))
    for op in _GATHERS:
        sig[f"{op}.vvssml"] = ("v", ("v", "l", "l", "m", "w"))
    for op in _SCATTERS:
        sig[f"{op}.vvssml"] = ("", ("v", "v", "l", "l", "m", "w"))
    sig["lsv.vvss"] = ("v", ("v", "w", "l"))
    sig["lvsl.svs"] = ("l", ("v", "w"))
    for op in _REDUCTIONS:
        sig[f"{op}.vvl"] = ("v", ("v", "w"))
    return sig


#: ``name -> (result, arguments)`` as LLVM type text; ``""`` is void.
SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (_TYPES.get(ret, "void"), tuple(_TYPES[a] for a in args))
    for name, (ret, args) in _signatures().items()
}


def emulation_name(name: str) -> str:
    """What the emulated module calls intrinsic ``name`` (a plain function)."""
    return EMU_PREFIX + name


# ---- the definitions ---------------------------------------------------------------------------------
_LANES = "@LANES@"
_I64V = "<256 x i64>"
_I32V = "<256 x i32>"


def _splat(name: str, typ: str, value: str) -> list[str]:
    """``%name`` = ``value`` (of scalar type ``typ``) in all 256 lanes."""
    return [
        f"  %{name}.i = insertelement <256 x {typ}> undef, {typ} {value}, i32 0",
        f"  %{name} = shufflevector <256 x {typ}> %{name}.i, <256 x {typ}> undef, "
        "<256 x i32> zeroinitializer",
    ]


class _Def:
    """One definition: a preamble that gives every argument as lanes, a body, an epilogue."""

    def __init__(self, name: str, memory: bool = False) -> None:
        self.name = name
        ret, args = SIGNATURES[name]
        self.ret = ret
        self.args = args
        self.memory = memory
        self.lines: list[str] = []
        for i, t in enumerate(args):
            if memory and t in (_V, _M):
                self.lines.append(f"  %p{i} = load {t}, {t}* %q{i}, align {_ALIGN[t]}")
        self.vl = f"%p{len(args) - 1}" if args and args[-1] == "i32" and name.endswith("l") else None
        for i, t in enumerate(args):
            if t == _V:
                self.lines.append(f"  %a{i} = bitcast {_V} %p{i} to {_I64V}")
            elif t == "i64":
                self.lines += _splat(f"a{i}", "i64", f"%p{i}")
        if self.vl is not None:
            self.lines += _splat("vls", "i32", self.vl)
            self.lines.append(f"  %act = icmp ult {_I32V} {_LANES}, %vls")

    def add(self, *lines: str) -> _Def:
        self.lines += lines
        return self

    def text(self) -> str:
        ret = self.ret
        if self.memory:  # registers in memory: pointers in, the result through the first one
            params = [f"{t}* %q{i}" if t in (_V, _M) else f"{t} %p{i}" for i, t in enumerate(self.args)]
            if ret in (_V, _M):
                params.insert(0, f"{ret}* %result")
                ret = "void"
        else:
            params = [f"{t} %p{i}" for i, t in enumerate(self.args)]
        body = "\n".join(self.lines)
        name = emulation_name(self.name)
        return f'define {ret} @"{name}"({", ".join(params)}) noinline {{\nentry:\n{body}\n}}\n'

    def returns(self, typ: str, value: str) -> None:
        if self.memory:
            self.add(f"  store {typ} {value}, {typ}* %result, align {_ALIGN[typ]}", "  ret void")
        else:
            self.add(f"  ret {typ} {value}")

    # epilogues
    def vector(self, res: str = "%res") -> str:
        """Return lanes ``< vl`` of ``res`` (a <256 x i64>), junk above."""
        junk = f"<256 x i64> {_const64(JUNK)}"
        if self.vl is not None:
            self.add(f"  %out = select <256 x i1> %act, {_I64V} {res}, {junk}")
            res = "%out"
        self.add(f"  %outd = bitcast {_I64V} {res} to {_V}")
        self.returns(_V, "%outd")
        return self.text()

    def mask(self, res: str = "%res") -> str:
        if self.vl is not None:
            self.add(*_splat("junkm", "i1", "true"))
            self.add(f"  %out = select <256 x i1> %act, <256 x i1> {res}, <256 x i1> %junkm")
            res = "%out"
        self.returns(_M, res)
        return self.text()


def _low32(d: _Def, src: str, dst: str) -> None:
    d.add(f"  {dst} = trunc {_I64V} {src} to {_I32V}")


def _upper_float(d: _Def, src: str, dst: str) -> None:
    """The single-precision values in the upper halves of ``src``."""
    d.add(
        f"  {dst}.s = lshr {_I64V} {src}, {_const64(32)}",
        f"  {dst}.t = trunc {_I64V} {dst}.s to {_I32V}",
        f"  {dst} = bitcast {_I32V} {dst}.t to <256 x float>",
    )


def _to_upper(d: _Def, src: str, dst: str) -> None:
    """Single-precision ``src`` into upper halves, the lower ones junk."""
    d.add(
        f"  {dst}.b = bitcast <256 x float> {src} to {_I32V}",
        f"  {dst}.z = zext {_I32V} {dst}.b to {_I64V}",
        f"  {dst}.h = shl {_I64V} {dst}.z, {_const64(32)}",
        f"  {dst} = or {_I64V} {dst}.h, {_const64(JUNK_LOW)}",
    )


def _const64(v: int) -> str:
    return f"@C(i64 {v})@"


def _const32(v: int) -> str:
    return f"@C(i32 {v})@"


def _sign3(d: _Def, gt: str, lt: str) -> None:
    """%res = 1 / -1 / 0 from two <256 x i1> conditions."""
    d.add(
        f"  %r1 = select <256 x i1> {lt}, {_I64V} {_const64(-1)}, {_I64V} zeroinitializer",
        f"  %res = select <256 x i1> {gt}, {_I64V} {_const64(1)}, {_I64V} %r1",
    )


def _define(name: str, memory: bool = False) -> str:
    d = _Def(name, memory)
    op, form = name.split(".")
    if op in _ILOGIC:
        ir_op = {"vaddsl": "add", "vsubsl": "sub", "vmulsl": "mul", "vand": "and", "vor": "or", "vxor": "xor"}
        return d.add(f"  %res = {ir_op[op]} {_I64V} %a0, %a1").vector()
    if op in ("vdivul", "vdivsl"):
        # A zero divisor (and signed MIN / -1) has no defined quotient: junk.
        signed = op == "vdivsl"
        d.add(f"  %bad0 = icmp eq {_I64V} %a1, zeroinitializer")
        if signed:
            d.add(
                f"  %min = icmp eq {_I64V} %a0, {_const64(-(1 << 63))}",
                f"  %m1 = icmp eq {_I64V} %a1, {_const64(-1)}",
                "  %ovf = and <256 x i1> %min, %m1",
                "  %bad = or <256 x i1> %bad0, %ovf",
            )
        bad = "%bad" if signed else "%bad0"
        d.add(
            f"  %safe = select <256 x i1> {bad}, {_I64V} {_const64(1)}, {_I64V} %a1",
            f"  %q = {'sdiv' if signed else 'udiv'} {_I64V} %a0, %safe",
            f"  %res = select <256 x i1> {bad}, {_I64V} {_const64(JUNK)}, {_I64V} %q",
        )
        return d.vector()
    if op in _WARITH:
        ir_op = {"vaddswsx": "add", "vsubswsx": "sub", "vmulswsx": "mul"}[op]
        if form == "vsvl":  # a 32-bit scalar first
            d.add(*_splat("x", "i32", "%p0"))
        else:
            _low32(d, "%a0", "%x")
        _low32(d, "%a1", "%y")
        return d.add(f"  %w = {ir_op} {_I32V} %x, %y", f"  %res = sext {_I32V} %w to {_I64V}").vector()
    if op in _SHIFTS:
        # The amount is the element's (or scalar's) value; beyond 63 every bit has left
        # (vsral: only sign bits remain).
        ir_op = {"vsll": "shl", "vsrl": "lshr", "vsral": "ashr"}[op]
        d.add(
            f"  %big = icmp ugt {_I64V} %a1, {_const64(63)}",
            f"  %amt = select <256 x i1> %big, {_I64V} {_const64(63)}, {_I64V} %a1",
            f"  %sh = {ir_op} {_I64V} %a0, %amt",
        )
        out = "%sh" if op == "vsral" else "%cut"
        if op != "vsral":
            d.add(f"  %cut = select <256 x i1> %big, {_I64V} zeroinitializer, {_I64V} %sh")
        return d.vector(out)
    if op == "vsrawsx":  # 32-bit arithmetic shift of the lower words by the lower 5 bits
        _low32(d, "%a0", "%x")
        _low32(d, "%a1", "%y")
        d.add(
            f"  %amt = and {_I32V} %y, {_const32(31)}",
            f"  %w = ashr {_I32V} %x, %amt",
            f"  %res = sext {_I32V} %w to {_I64V}",
        )
        return d.vector()
    if op in _CMPS:
        if op.endswith("l"):
            x, y = "%a0", "%a1"
            t = _I64V
        else:
            _low32(d, "%a0", "%x")
            _low32(d, "%a1", "%y")
            x, y, t = "%x", "%y", _I32V
        s = "s" if op.startswith("vcmps") else "u"
        d.add(f"  %gt = icmp {s}gt {t} {x}, {y}", f"  %lt = icmp {s}lt {t} {x}, {y}")
        _sign3(d, "%gt", "%lt")
        return d.vector()
    if op in _FARITH or op in _FCMPS or op in ("vfmadd", "vfmads"):
        return _float_def(d, op)
    if op.startswith("vfmk"):
        return _vfmk(d, op)
    if op in ("andm", "orm", "xorm"):
        return d.add(f"  %res = {op[:-1]} {_M} %p0, %p1").mask()
    if op == "negm":
        d.add(*_splat("ones", "i1", "true"))
        return d.add(f"  %res = xor {_M} %p0, %ones").mask()
    if op == "pcvm":
        d.add(
            f"  %on = and {_M} %p0, %act",
            f"  %z = zext {_M} %on to {_I64V}",
            f"  %n = call i64 @llvm.vector.reduce.add.v256i64({_I64V} %z)",
            "  ret i64 %n",
        )
        return d.text()
    if op == "vmrg":
        return d.add(f"  %res = select {_M} %p2, {_I64V} %a1, {_I64V} %a0").vector()
    if op in ("vfsqrtd", "vfsqrts"):
        if op == "vfsqrts":
            _upper_float(d, "%a0", "%f")
            d.add("  %r = call <256 x float> @llvm.sqrt.v256f32(<256 x float> %f)")
            _to_upper(d, "%r", "%res")
        else:
            d.add(f"  %f = bitcast {_I64V} %a0 to <256 x double>")
            d.add("  %r = call <256 x double> @llvm.sqrt.v256f64(<256 x double> %f)")
            d.add(f"  %res = bitcast <256 x double> %r to {_I64V}")
        return d.vector()
    if op == "vcvtds":
        _upper_float(d, "%a0", "%f")
        d.add(
            "  %e = fpext <256 x float> %f to <256 x double>",
            f"  %res = bitcast <256 x double> %e to {_I64V}",
        )
        return d.vector()
    if op == "vcvtsd":
        d.add(
            f"  %x = bitcast {_I64V} %a0 to <256 x double>",
            "  %f = fptrunc <256 x double> %x to <256 x float>",
        )
        _to_upper(d, "%f", "%res")
        return d.vector()
    if op == "vbrdl":
        return d.vector("%a0")
    if op == "vseq":
        return d.add(f"  %res = zext {_I32V} {_LANES} to {_I64V}").vector()
    if op in _LOADS:
        return _load(d, op)
    if op in _STORES or op in _SCATTERS:
        return _store(d, op)
    if op in _GATHERS:
        return _gather(d, op, "%a0", "%p3")
    if op == "lsv":
        d.add(f"  %res = insertelement {_I64V} %a0, i64 %p2, i32 %p1")
        return d.vector()
    if op == "lvsl":
        d.add(f"  %x = extractelement {_I64V} %a0, i32 %p1", "  ret i64 %x")
        return d.text()
    if op in _REDUCTIONS:
        return _reduction(d, op)
    raise KeyError(name)


def _float_def(d: _Def, op: str) -> str:
    single = op.endswith("s")
    args = [f"%a{i}" for i, t in enumerate(d.args) if t == _V]
    ft = "<256 x float>" if single else "<256 x double>"
    for i, a in enumerate(args):
        if single:
            _upper_float(d, a, f"%f{i}")
        else:
            d.add(f"  %f{i} = bitcast {_I64V} {a} to {ft}")
    if op in ("vfcmpd", "vfcmps"):
        nan = "0x7FF8000000000000"
        x, y, ct = "%f0", "%f1", ft
        if single:  # compared as doubles (exact; the host's compiler fails on some float widths)
            d.add("  %w0 = fpext <256 x float> %f0 to <256 x double>")
            d.add("  %w1 = fpext <256 x float> %f1 to <256 x double>")
            x, y, ct = "%w0", "%w1", "<256 x double>"
        d.add(
            f"  %uno = fcmp uno {ct} {x}, {y}",
            f"  %gt = fcmp ogt {ct} {x}, {y}",
            f"  %lt = fcmp olt {ct} {x}, {y}",
            f"  %c1 = select <256 x i1> %lt, {ft} {_fconst(ft, '-1.0')}, {ft} zeroinitializer",
            f"  %c2 = select <256 x i1> %gt, {ft} {_fconst(ft, '1.0')}, {ft} %c1",
            f"  %r = select <256 x i1> %uno, {ft} {_fconst(ft, nan)}, {ft} %c2",
        )
    elif op in ("vfmadd", "vfmads"):  # vx = vy + vz * vw (the addend first)
        suffix = "v256f32" if single else "v256f64"
        d.add(f"  %r = call {ft} @llvm.fma.{suffix}({ft} %f1, {ft} %f2, {ft} %f0)")
    else:
        ir_op = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}[op[2:5]]
        d.add(f"  %r = {ir_op} {ft} %f0, %f1")
    if single:
        _to_upper(d, "%r", "%res")
    else:
        d.add(f"  %res = bitcast {ft} %r to {_I64V}")
    return d.vector()


def _fconst(ft: str, value: str) -> str:
    elem = ft.split(" x ")[1].rstrip(">")
    if elem == "float" and value.startswith("0x"):
        value = "0x7FF8000000000000"
    return f"@C({elem} {value})@"


def _vfmk(d: _Def, op: str) -> str:
    if op in ("vfmklat", "vfmklaf"):
        d.add(*_splat("all", "i1", "true" if op == "vfmklat" else "false"))
        return d.mask("%all")
    kind, cc = op[4], op[5:]
    ipred, fpred = CONDITIONS[cc]
    if kind == "l":
        d.add(f"  %res = icmp {ipred} {_I64V} %a0, zeroinitializer")
    elif kind == "w":
        _low32(d, "%a0", "%x")
        d.add(f"  %res = icmp {ipred} {_I32V} %x, zeroinitializer")
    elif kind == "d":
        d.add(f"  %x = bitcast {_I64V} %a0 to <256 x double>")
        d.add(f"  %res = fcmp {fpred} <256 x double> %x, zeroinitializer")
    else:
        _upper_float(d, "%a0", "%x")
        d.add(f"  %res = fcmp {fpred} <256 x float> %x, zeroinitializer")
    return d.mask()


def _memory_lanes(op: str) -> str:
    """'lower', 'upper' or 'whole': where a flavour's value sits in the element."""
    if op in ("vldlzx", "vstl", "vgtlzx", "vscl"):
        return "lower"
    if op in ("vldu", "vstu", "vgtu", "vscu"):
        return "upper"
    return "whole"


def _addresses(d: _Def, ptrs: str, elem: str) -> None:
    d.add(f"  %ptrs = inttoptr {_I64V} {ptrs} to <256 x {elem}*>")


def _gathered(d: _Def, op: str, mask: str) -> str:
    where = _memory_lanes(op)
    elem = "i64" if where == "whole" else "i32"
    d.add(
        f"  %g = call <256 x {elem}> @llvm.masked.gather.v256{elem}.v256p0{elem}"
        f"(<256 x {elem}*> %ptrs, i32 1, <256 x i1> {mask}, <256 x {elem}> undef)"
    )
    if where == "whole":
        return "%g"
    d.add(f"  %gz = zext {_I32V} %g to {_I64V}")
    if where == "lower":
        return "%gz"
    d.add(f"  %gs = shl {_I64V} %gz, {_const64(32)}", f"  %gu = or {_I64V} %gs, {_const64(JUNK_LOW)}")
    return "%gu"


def _load(d: _Def, op: str) -> str:
    """Strided load: element i from ``base + i * stride``, lanes < vl only."""
    elem = "i64" if _memory_lanes(op) == "whole" else "i32"
    d.add(
        "  %base = ptrtoint i8* %p1 to i64",
        *_splat("b", "i64", "%base"),
        f"  %idx = zext {_I32V} {_LANES} to {_I64V}",
        f"  %off = mul {_I64V} %idx, %a0",
        f"  %at = add {_I64V} %b, %off",
    )
    _addresses(d, "%at", elem)
    got = _gathered(d, op, "%act")
    d.add(f"  %sel = select {_M} %act, {_I64V} {got}, {_I64V} {_const64(JUNK)}")
    return d.vector("%sel")


def _gather(d: _Def, op: str, addrs: str, mask: str) -> str:
    elem = "i64" if _memory_lanes(op) == "whole" else "i32"
    _addresses(d, addrs, elem)
    d.add(f"  %on = and {_M} {mask}, %act")
    got = _gathered(d, op, "%on")
    d.add(f"  %sel = select {_M} %on, {_I64V} {got}, {_I64V} {_const64(JUNK)}")
    return d.vector("%sel")


def _store(d: _Def, op: str) -> str:
    """Strided store (vst*: value, stride, base, mask) or scatter (vsc*: value, addresses,
    sy, sz, mask): elements < vl whose mask bit is set, in element order."""
    where = _memory_lanes(op)
    elem = "i64" if where == "whole" else "i32"
    if op in _STORES:
        d.add(
            "  %base = ptrtoint i8* %p2 to i64",
            *_splat("b", "i64", "%base"),
            f"  %idx = zext {_I32V} {_LANES} to {_I64V}",
            f"  %off = mul {_I64V} %idx, %a1",
            f"  %at = add {_I64V} %b, %off",
        )
        addrs, mask = "%at", ("%p3" if len(d.args) == 5 else "%act")
    else:
        addrs, mask = "%a1", "%p4"
    _addresses(d, addrs, elem)
    d.add(f"  %on = and {_M} {mask}, %act")
    value = "%a0"
    if where == "upper":
        d.add(f"  %hi = lshr {_I64V} %a0, {_const64(32)}")
        value = "%hi"
    if elem == "i32":
        d.add(f"  %val = trunc {_I64V} {value} to {_I32V}")
        value = "%val"
    d.add(
        f"  call void @llvm.masked.scatter.v256{elem}.v256p0{elem}(<256 x {elem}> {value}, "
        f"<256 x {elem}*> %ptrs, i32 1, <256 x i1> %on)",
        "  ret void",
    )
    return d.text()


def _reduction(d: _Def, op: str) -> str:
    """Reductions over elements < vl; the result is element 0, the others junk."""
    table = {
        "vsuml": ("add", "i64", 0),
        "vror": ("or", "i64", 0),
        "vrand": ("and", "i64", -1),
        "vrxor": ("xor", "i64", 0),
        "vrmaxslfst": ("smax", "i64", -(1 << 63)),
        "vrminslfst": ("smin", "i64", (1 << 63) - 1),
        "vrmaxswfstsx": ("smax", "i32", -(1 << 31)),
        "vrminswfstsx": ("smin", "i32", (1 << 31) - 1),
    }
    kind, elem, identity = table[op]
    src, t = "%a0", _I64V
    if elem == "i32":
        _low32(d, "%a0", "%x")
        src, t = "%x", _I32V
    ident = _const64(identity) if elem == "i64" else _const32(identity)
    d.add(
        f"  %on = select {_M} %act, {t} {src}, {t} {ident}",
        f"  %r = call {elem} @llvm.vector.reduce.{kind}.v256{elem}({t} %on)",
    )
    if elem == "i32":
        d.add("  %r64 = sext i32 %r to i64")
    d.add(f"  %res = insertelement {_I64V} {_const64(JUNK)}, i64 {'%r64' if elem == 'i32' else '%r'}, i32 0")
    d.vl = None  # lanes >= 1 are junk already
    return d.vector()


_SUPPORT = """
declare <256 x i64> @llvm.masked.gather.v256i64.v256p0i64(<256 x i64*>, i32, <256 x i1>, <256 x i64>)
declare <256 x i32> @llvm.masked.gather.v256i32.v256p0i32(<256 x i32*>, i32, <256 x i1>, <256 x i32>)
declare void @llvm.masked.scatter.v256i64.v256p0i64(<256 x i64>, <256 x i64*>, i32, <256 x i1>)
declare void @llvm.masked.scatter.v256i32.v256p0i32(<256 x i32>, <256 x i32*>, i32, <256 x i1>)
declare <256 x double> @llvm.fma.v256f64(<256 x double>, <256 x double>, <256 x double>)
declare <256 x float> @llvm.fma.v256f32(<256 x float>, <256 x float>, <256 x float>)
declare i64 @llvm.vector.reduce.add.v256i64(<256 x i64>)
declare <256 x double> @llvm.sqrt.v256f64(<256 x double>)
declare <256 x float> @llvm.sqrt.v256f32(<256 x float>)
declare i64 @llvm.vector.reduce.or.v256i64(<256 x i64>)
declare i64 @llvm.vector.reduce.and.v256i64(<256 x i64>)
declare i64 @llvm.vector.reduce.xor.v256i64(<256 x i64>)
declare i64 @llvm.vector.reduce.smax.v256i64(<256 x i64>)
declare i64 @llvm.vector.reduce.smin.v256i64(<256 x i64>)
declare i32 @llvm.vector.reduce.smax.v256i32(<256 x i32>)
declare i32 @llvm.vector.reduce.smin.v256i32(<256 x i32>)
"""


def emulation_ir(names: set[str] | None = None, width: int = 256, memory: bool = False) -> str:
    """Definitions (LLVM IR text) of the intrinsics ``names`` (all of `SIGNATURES` by default)
    over registers of ``width`` elements (see `register_width`). With ``memory``, register
    operands and results are passed as pointers (``ve_lower.lower(memory=True)``)."""
    wanted = sorted(SIGNATURES if names is None else names)
    return _render(_SUPPORT + "\n".join(_define(n, memory) for n in wanted), width)


def register_width(max_vl: int) -> int:
    """How many elements the emulated registers hold for a module whose longest vector is
    ``max_vl``: the least power of two above it (at most 256). Elements no instruction of
    the module can reach are left out (the host compiler would spend its time moving
    them; powers of two it handles far faster), but elements above ``max_vl`` stay, junk,
    so an instruction given too long a vector length reads junk."""
    width = 8
    while width <= max_vl and width < 256:
        width *= 2
    return width


def _render(text: str, width: int) -> str:
    """Write the width-dependent parts: ``@LANES@`` (0, 1, ...), ``@C(t v)@`` (a splat),
    register types and the vector intrinsics' type suffixes."""
    lanes = "<" + ", ".join(f"i32 {i}" for i in range(width)) + ">"
    text = text.replace("@LANES@", lanes)
    text = re.sub(r"@C\(([^)]*)\)@", lambda m: "<" + ", ".join([m.group(1)] * width) + ">", text)
    return text.replace("<256 x ", f"<{width} x ").replace(".v256", f".v{width}")
