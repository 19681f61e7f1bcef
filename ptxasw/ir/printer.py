"""Typed IR -> PTX text.

The layout follows nvcc's own output (tab-indented bodies, one statement a
line) so that a diff between a compiler's PTX and ours shows only what a pass
changed. Literals are printed as they were written when the IR knows it.
`write_module` streams the text to a file, item by item, so that printing a
very large module costs no more memory than its largest function.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TextIO

from ptxasw import ir

_BINARY_PRECEDENCE = {
    "*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "==": 6, "!=": 6,
    "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1,
}  # fmt: skip


def print_module(module: ir.Module, kernels: Mapping[str, str] | None = None) -> str:
    """The whole module as PTX text, ending with a newline (``kernels``: see `iter_module`)."""
    return "".join(iter_module(module, kernels))


def write_module(module: ir.Module, out: TextIO) -> None:
    """Write the module's text to ``out`` item by item.

    The text of a 50 MB module is never held whole, nor its lines as a list:
    memory beyond the IR is that of the largest top-level item.
    """
    write = out.write
    for chunk in iter_module(module):
        write(chunk)


def iter_module(module: ir.Module, kernels: Mapping[str, str] | None = None) -> Iterator[str]:
    """The module's text in pieces, one top-level item (with its blank line) each.

    Joined, the pieces are exactly `print_module`'s text. ``kernels``: the
    text of some kernels (`function_text`) by name, printed in their place
    (``ptxasw rewrite --jobs`` rewrites kernels in other processes).
    """
    previous: ir.TopLevel | None = None
    for item in module.items:
        given = _given_text(item, kernels)
        lines = _top_level(item) if given is None else given.split("\n")
        if previous is not None and _blank_line_between(previous, item):
            lines.insert(0, "")
        yield "\n".join(lines) + "\n"
        previous = item


def _given_text(item: ir.TopLevel, kernels: Mapping[str, str] | None) -> str | None:
    """``item``'s text from ``kernels``, where it is a kernel defined here and named there."""
    if not kernels or not isinstance(item, ir.Function) or not item.is_kernel or item.body is None:
        return None
    return kernels.get(item.name)


_GROUPED = ((ir.Version, ir.Target, ir.AddressSize), (ir.VarDecl,), (ir.FileDirective,))


def _blank_line_between(a: ir.TopLevel, b: ir.TopLevel) -> bool:
    """A blank line separates items, except within a run of headers, globals or files,
    and after a comment, which belongs to the item below it."""
    if isinstance(a, ir.Comment):
        return False
    return not any(isinstance(a, group) and isinstance(b, group) for group in _GROUPED)


def _top_level(item: ir.TopLevel) -> list[str]:
    match item:
        case ir.Version(major, minor):
            return [f".version {major}.{minor}"]
        case ir.Target(targets):
            return [".target " + ", ".join(targets)]
        case ir.AddressSize(bits):
            return [f".address_size {bits}"]
        case ir.FileDirective():
            return [_file_directive(item)]
        case ir.SectionDirective():
            return _section(item)
        case ir.VarDecl():
            return [format_var_decl(item)]
        case ir.Function():
            return _function(item)
        case ir.Comment(text):
            return [text]
        case ir.Alias(alias, target):
            return [f".alias {alias}, {target};"]
        case ir.Pragma():
            return [_pragma(item)]
        case ir.LocDirective():
            return [_loc_directive(item)]
    raise TypeError(f"not a top-level PTX item: {item!r}")


def _file_directive(item: ir.FileDirective) -> str:
    text = f".file\t{item.index} {_quote(item.path)}"
    return text + "".join(f", {n}" for n in item.extra)


def _section(item: ir.SectionDirective) -> list[str]:
    lines = [f"\t.section\t{item.name}", "\t{"]
    for entry in item.body:
        if isinstance(entry, ir.Label):
            lines.append(f"{entry.name}:")
        else:
            lines.append(f"{entry.type} " + ",".join(format_expr(v) for v in entry.values))
    lines.append("\t}")
    return lines


def function_text(fn: ir.Function) -> str:
    """One function's text, as `print_module` prints it, without the newline after it."""
    return "\n".join(_function(fn))


def _function(fn: ir.Function) -> list[str]:
    head = " ".join([*fn.linkage, fn.kind])
    if fn.returns is not None:
        head += " " + _param_list_inline(fn.returns)
    head += " " + fn.name
    lines = [head]
    if fn.params or fn.kind == ".entry":
        lines[-1] = head + "("
        for i, p in enumerate(fn.params):
            sep = "," if i + 1 < len(fn.params) else ""
            lines.append("\t" + format_param(p) + sep)
        lines.append(")")
    for d in fn.directives:
        lines.append(_pragma(d) if isinstance(d, ir.Pragma) else _perf_directive(d))
    if fn.body is None:
        lines.append(";")
    else:
        lines.append("{")
        lines.extend(_statements(fn.body.body, depth=1))
        lines.append("}")
    return lines


def _param_list_inline(params: list[ir.ParamSpec]) -> str:
    return "(" + ", ".join(format_param(p) for p in params) + ")"


def _perf_directive(d: ir.PerfDirective) -> str:
    if not d.values:
        return d.name
    return f"{d.name} " + ", ".join(str(v) for v in d.values)


def _statements(body: list[ir.Statement], depth: int) -> list[str]:
    pad = "\t" * depth
    lines: list[str] = []
    for stmt in body:
        match stmt:
            case ir.Instruction():
                lines.append(pad + format_instruction(stmt))
            case ir.Label(name):
                lines.append(f"{name}:")
            case ir.VarDecl():
                lines.append(pad + format_var_decl(stmt))
            case ir.Block(inner):
                lines.append(pad + "{")
                lines.extend(_statements(inner, depth + 1))
                lines.append(pad + "}")
            case ir.Pragma():
                lines.append(pad + _pragma(stmt))
            case ir.LocDirective():
                lines.append(pad + _loc_directive(stmt))
            case ir.CallPrototype():
                lines.append(pad + _prototype(stmt))
            case ir.TargetList(kind, label, targets):
                lines.append(f"{pad}{label}: {kind} " + ", ".join(targets) + ";")
            case ir.PerfDirective():
                lines.append(pad + _perf_directive(stmt))
            case _:
                raise TypeError(f"not a PTX statement: {stmt!r}")
    return lines


def _prototype(p: ir.CallPrototype) -> str:
    text = f"{p.label} : .callprototype"
    if p.returns is not None:
        text += " " + _param_list_inline(p.returns)
    text += " _ " + _param_list_inline(p.params)
    if p.noreturn:
        text += " .noreturn"
    return text + ";"


def _pragma(p: ir.Pragma) -> str:
    return ".pragma " + ", ".join(_quote(s) for s in p.strings) + ";"


def _loc_directive(d: ir.LocDirective) -> str:
    text = f".loc\t{d.file} {d.line} {d.col}"
    return text + (f", {d.extra}" if d.extra else "")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---- declarations ---------------------------------------------------------------


def format_var_decl(decl: ir.VarDecl) -> str:
    words = [*decl.linkage, decl.space, *decl.attributes]
    if decl.align is not None:
        words.append(f".align {decl.align}")
    if decl.vector:
        words.append(decl.vector)
    if decl.type:
        words.append(decl.type)
    words.extend(decl.ptr_attrs)
    names = ", ".join(_var_name(v) for v in decl.names)
    return " ".join(words) + " \t" + names + ";"


def _var_name(v: ir.VarName) -> str:
    text = v.name
    if v.count is not None:
        text += f"<{v.count}>"
    text += "".join("[]" if d is None else f"[{d}]" for d in v.array)
    if v.init is not None:
        text += " = " + _initializer(v.init)
    return text


def _initializer(init: ir.Initializer) -> str:
    if isinstance(init, list):
        return "{" + ", ".join(_initializer(i) for i in init) + "}"
    if isinstance(init, ir.SamplerField):
        return f"{init.name} = {init.value}"
    return format_expr(init)


def format_param(p: ir.ParamSpec) -> str:
    words = [p.space]
    if p.align is not None:
        words.append(f".align {p.align}")
    if p.vector:
        words.append(p.vector)
    words.append(p.type)
    words.extend(p.ptr_attrs)
    dims = "".join("[]" if d is None else f"[{d}]" for d in p.array)
    return " ".join(words) + " " + p.name + dims


# ---- instructions and operands --------------------------------------------------------


def format_instruction(inst: ir.Instruction) -> str:
    guard = ""
    if inst.guard is not None:
        guard = "@" + ("!" if inst.guard.negated else "") + format_operand(inst.guard.predicate) + " "
    if not inst.operands:
        return f"{guard}{inst.mnemonic};"
    return f"{guard}{inst.mnemonic} \t" + ", ".join(format_operand(o) for o in inst.operands) + ";"


def format_operand(op: ir.Operand) -> str:
    match op:
        case ir.Register(name, selector):
            return name if selector is None else f"{name}.{selector}"
        case ir.Address(base, offset, text):
            return "[" + _address_body(base, offset, text) + "]"
        case ir.VectorOperand(elements):
            return "{" + ", ".join(format_operand(e) for e in elements) + "}"
        case ir.ListOperand(items):
            return "[" + ", ".join(format_operand(i) for i in items) + "]"
        case ir.ParenOperand(items):
            return "(" + ", ".join(format_operand(i) for i in items) + ")"
        case ir.Negated(reg):
            return "!" + format_operand(reg)
        case ir.PairOperand(first, second):
            return format_operand(first) + "|" + format_operand(second)
        case ir.Sink():
            return "_"
    return format_expr(op)  # type: ignore[arg-type]


def _address_body(base: ir.Register | ir.Symbol | None, offset: int, text: str | None) -> str:
    if base is None:
        return text if text is not None else str(offset)
    head = format_operand(base)
    if text is not None:
        return head + text
    if offset == 0:
        return head
    return f"{head}+{offset}"


def format_expr(e: ir.Expr | ir.Operand, parent_precedence: int = 0) -> str:
    match e:
        case ir.IntImm(value, text):
            return text if text is not None else str(value)
        case ir.FloatImm(_, text):
            return text
        case ir.Symbol(name):
            return name
        case ir.Register():
            return format_operand(e)
        case ir.Sink():
            return "_"
        case ir.UnaryExpr(op, operand):
            return op + format_expr(operand, 11)
        case ir.BinaryExpr(op, lhs, rhs):
            prec = _BINARY_PRECEDENCE[op]
            text = format_expr(lhs, prec) + op + format_expr(rhs, prec + 1)
            return f"({text})" if prec < parent_precedence else text
        case ir.ParenExpr(inner):
            return "(" + format_expr(inner) + ")"
        case ir.CallExpr("?:", (cond, then, other)):
            return f"{format_expr(cond, 12)} ? {format_expr(then, 12)} : {format_expr(other, 12)}"
        case ir.CallExpr(func, args):
            return func + "(" + ", ".join(format_operand(a) for a in args) + ")"
        case ir.ParenOperand() | ir.VectorOperand() | ir.Address() | ir.ListOperand():
            return format_operand(e)
    raise TypeError(f"not a PTX expression: {e!r}")
