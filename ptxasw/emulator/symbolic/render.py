"""Trace rendering: a `KernelAnalysis` as text (close to the paper's Listing 5) or JSON.

Kept apart from the executor so that what the analysis computed and how it
is shown are separate concerns: the executor records Z3 terms; this module
only prints them, through one `ptxasw.emulator.symbolic.domain.Printer` per
kernel. That printer visits each distinct subterm once (Z3 terms are DAGs,
and a kernel's addresses, values and conditions share most of theirs), and
names a long subterm that is used more than once (``t1``, ``t2``...; listed
as ``let t1 = ...`` lines in the text, under ``terms`` in JSON) so that the
output stays exact and linear in the size of the DAG. Nothing is cut short
and nothing is simplified while printing: the text means what was computed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import z3

from ptxasw import collector
from ptxasw.emulator.symbolic.domain import Printer, pretty
from ptxasw.ir.printer import format_instruction

if TYPE_CHECKING:
    from ptxasw.emulator.symbolic.executor import Access, Flow, KernelAnalysis
    from ptxasw.emulator.symbolic.snapshot import Snapshot

__all__ = ["SHARE_MIN", "format_analysis", "show", "to_json"]

# A subterm used more than once is printed once under a name when its text is
# at least this long; shorter ones read better inline.
SHARE_MIN = 60

_TAGS = {"ld": "LD", "st": "ST", "atom": "ATOM"}


def show(analysis: KernelAnalysis, e: z3.ExprRef) -> str:
    """One expression as printed in traces (parameters as ``load(param_0)``),
    without names for shared subterms."""
    return pretty(e, names=analysis.names, max_len=None)


# Rendering allocates a node per distinct subterm and a string per rendering,
# none in a cycle; right after an analysis the collections those allocations
# trigger each scan its live objects again: 40 % of a small file's text time.
@collector.paused()
def to_json(
    analysis: KernelAnalysis, spaces: Iterable[str] | None = None, snapshot: Snapshot | None = None
) -> dict[str, Any]:
    """A JSON-able dict: expressions both pretty and as SMT-LIB terms.

    Pretty texts may use the names of ``terms`` (each defined there, in an
    order where a name is defined before it is used). ``snapshot``: terms
    already read for other kernels (`snapshot.shared`)."""
    keep = None if spaces is None else set(spaces)
    shown = [(flow, [(i, a) for i, a in enumerate(flow.trace) if _shown(a, keep)]) for flow in analysis.flows]
    printer = _printer(analysis, _roots_json(analysis, shown), snapshot)

    def text(e: z3.ExprRef | None) -> str | None:
        return None if e is None else printer.text(e)

    smt: dict[int, str] = {}  # by Z3 id: the printer keeps every term it read alive
    instructions: dict[int, str] = {}  # id(inst) -> text; the instructions outlive this call

    def instruction(inst: Any) -> str:
        hit = instructions.get(id(inst))
        if hit is None:
            hit = instructions[id(inst)] = format_instruction(inst).strip()
        return hit

    def sexpr(e: z3.ExprRef | None) -> str | None:
        if e is None:
            return None
        key = e.get_id()
        hit = smt.get(key)
        if hit is None:
            hit = smt[key] = printer.smtlib(e)  # forked flows repeat their parents' accesses
        return hit

    flows = []
    for flow, accesses in shown:
        flows.append(
            {
                "id": flow.id,
                "parent": flow.parent,
                "fork_index": flow.fork_index,
                "end": flow.end,
                "end_block": flow.end_block,
                "merged_into": flow.merged_into,
                "joined_from": list(flow.joined_from),
                "condition": [printer.text(c) for c in flow.condition],
                "blocks": flow.blocks,
                "accesses": [
                    {
                        "index": i,
                        "kind": a.kind,
                        "space": a.space,
                        "bytes": a.nbytes,
                        "address": text(a.address),
                        "address_smt": sexpr(a.address),
                        "value": text(a.value),
                        "guard": text(a.guard),
                        "instruction": instruction(a.inst),
                        "ptx_loc": str(a.inst.loc),
                        "source": a.source,
                        "block": a.block,
                        "conditions": a.conditions,
                        "loops": list(a.loops),
                        "version": a.version,
                        "may_alias_store": flow.may_alias_store.get(i),
                    }
                    for i, a in accesses
                ],
            }
        )
    assumptions = [printer.text(a) for a in analysis.assumptions]
    loads, stores = analysis.counts()
    return {
        "kernel": analysis.kernel,
        "status": analysis.status,
        "reason": analysis.reason,
        "loads": loads,
        "stores": stores,
        "stats": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in vars(analysis.stats).items()},
        "unknown": [{"loc": loc, "instruction": m, "reason": r} for loc, m, r in analysis.unknown],
        "assumptions": assumptions,
        "terms": dict(printer.definitions),
        "flows": flows,
    }


@collector.paused()
def format_analysis(
    analysis: KernelAnalysis,
    spaces: Iterable[str] | None = None,
    shared: bool = False,
    snapshot: Snapshot | None = None,
) -> str:
    """The human form, close to the paper's Listing 5.

    A forked flow prints only what follows its fork (``shared``: all), with a
    line saying how many of the accesses shown it shares with its parent.
    ``spaces`` filters the accesses shown (barriers always show).
    ``snapshot``: terms already read for other kernels (`snapshot.shared`).
    """
    keep = None if spaces is None else set(spaces)
    plan = [_FlowView(flow, keep, shared) for flow in analysis.flows]
    printer = _printer(analysis, (e for view in plan for e in view.roots()), snapshot)
    body: list[str] = []
    for view in plan:
        body.extend(view.lines(printer))
    s = analysis.stats
    loads, stores = analysis.counts()
    head = (
        f"kernel {analysis.kernel}: {analysis.status}"
        + (f" ({analysis.reason})" if analysis.reason else "")
        + f"; {len(analysis.flows)} flows, {loads} loads, {stores} stores, "
        f"{s.solver_calls} solver calls, {s.seconds:.3f} s"
    )
    lines = [head]
    for loc, mnemonic, why in analysis.unknown:
        lines.append(f"  note: {loc}: {mnemonic} not modelled ({why})")
    lines.extend(f"  let {name} = {text}" for name, text in printer.definitions)
    return "\n".join(lines + body)


class _FlowView:
    """What the text shows of one flow: its condition and the accesses that
    pass the filter, from its fork on (or all with ``shared``)."""

    def __init__(self, flow: Flow, keep: set[str] | None, shared: bool) -> None:
        self.flow = flow
        start = 0 if shared or flow.parent is None else flow.fork_index
        self.inherited = sum(1 for a in flow.trace[:start] if _shown(a, keep))
        self.accesses = [(i, a) for i, a in enumerate(flow.trace) if i >= start and _shown(a, keep)]
        self.conjuncts = [c for item in flow.condition for c in _conjuncts(item)]

    def roots(self) -> Iterator[z3.ExprRef]:
        yield from self.conjuncts
        for _, a in self.accesses:
            yield from _access_roots(a, values=a.kind == "st")

    def lines(self, printer: Printer) -> list[str]:
        flow = self.flow
        end = flow.end if flow.merged_into is None else f"merged into flow {flow.merged_into}"
        origin = f", forked from flow {flow.parent}" if flow.parent is not None else ""
        if flow.joined_from:
            origin = ", joined from flows " + " and ".join(str(i) for i in flow.joined_from)
        out = [f"flow {flow.id} [{end}{origin}]"]
        if self.conjuncts:
            out.append("  if " + " && ".join(_paren(printer.text(c)) for c in self.conjuncts))
        if self.inherited:
            out.append(f"  ... {self.inherited} accesses as in flow {flow.parent}")
        out.extend("  " + _format_access(printer, flow, i, a) for i, a in self.accesses)
        return out


def _format_access(printer: Printer, flow: Flow, i: int, a: Access) -> str:
    loc = a.inst.loc
    ptx = f"{os.path.basename(loc.file)}:{loc.line}"
    where = f"{a.source}, {ptx}" if a.source else ptx
    if a.kind == "bar":
        return f"BAR  ; {format_instruction(a.inst).strip()}  ({where})"
    space = a.space.lstrip(".") if a.space else "?"
    address = printer.text(a.address) if a.address is not None else "?"
    text = f"{_TAGS[a.kind]}.{space}.{a.nbytes * 8}: {address}"
    if a.kind == "st" and a.value is not None:
        text += f" <- {printer.text(a.value)}"
    extras = []
    if a.guard is not None:
        extras.append(f"if {printer.text(a.guard)}")
    if a.loops:
        extras.append("in loop " + ", ".join(a.loops))
    store = flow.may_alias_store.get(i)
    if store is not None:
        extras.append(f"may alias store #{store}")
    tail = f"  [{'; '.join(extras)}]" if extras else ""
    return f"#{i} {text}{tail}  ; {format_instruction(a.inst).strip()}  ({where})"


def _printer(
    analysis: KernelAnalysis, roots: Iterable[z3.ExprRef], snapshot: Snapshot | None = None
) -> Printer:
    printer = Printer(analysis.names, share_min=SHARE_MIN, snapshot=snapshot)
    printer.count_uses(roots)
    return printer


def _roots_json(
    analysis: KernelAnalysis, shown: list[tuple[Flow, list[tuple[int, Access]]]]
) -> Iterator[z3.ExprRef]:
    for flow, accesses in shown:
        yield from flow.condition
        for _, a in accesses:
            yield from _access_roots(a, values=True)
    yield from analysis.assumptions


def _access_roots(a: Access, values: bool) -> Iterator[z3.ExprRef]:
    if a.address is not None:
        yield a.address
    if values and a.value is not None:
        yield a.value
    if a.guard is not None:
        yield a.guard


def _shown(a: Access, keep: set[str] | None) -> bool:
    return keep is None or a.kind == "bar" or a.space in keep


def _paren(text: str) -> str:
    return f"({text})" if " || " in text else text


def _conjuncts(c: z3.BoolRef) -> list[z3.BoolRef]:
    """``a && b`` as ``[a, b]`` (nested conjunctions flattened)."""
    if z3.is_and(c):
        return [x for child in c.children() for x in _conjuncts(child)]
    return [c]
