"""Trace rendering: a `KernelAnalysis` as text (close to the paper's Listing 5) or JSON.

Kept apart from the executor so that what the analysis computed and how it
is shown are separate concerns: the executor records Z3 terms; this module
only prints them (through `ptxasw.emulator.symbolic.domain.pretty`'s printer)
and never changes what they mean.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import z3

from ptxasw.emulator.symbolic.domain import pretty
from ptxasw.ir.printer import format_instruction

if TYPE_CHECKING:
    from ptxasw.emulator.symbolic.executor import Access, Flow, KernelAnalysis

__all__ = ["format_analysis", "show", "to_json"]


def show(analysis: KernelAnalysis, e: z3.ExprRef) -> str:
    """An expression as printed in traces (parameters as ``load(param_0)``)."""
    return pretty(e, names=analysis.names)


def to_json(analysis: KernelAnalysis, spaces: Iterable[str] | None = None) -> dict[str, Any]:
    """A JSON-able dict: expressions both pretty and as SMT-LIB terms."""
    keep = None if spaces is None else set(spaces)
    flows = []
    for flow in analysis.flows:
        accesses = []
        for i, a in enumerate(flow.trace):
            if keep is not None and a.space not in keep and a.kind != "bar":
                continue
            accesses.append(
                {
                    "index": i,
                    "kind": a.kind,
                    "space": a.space,
                    "bytes": a.nbytes,
                    "address": None if a.address is None else show(analysis, a.address),
                    "address_smt": None if a.address is None else a.address.sexpr(),
                    "value": None if a.value is None else show(analysis, a.value),
                    "guard": None if a.guard is None else show(analysis, a.guard),
                    "instruction": format_instruction(a.inst).strip(),
                    "ptx_loc": str(a.inst.loc),
                    "source": a.source,
                    "block": a.block,
                    "conditions": a.conditions,
                    "loops": list(a.loops),
                    "version": a.version,
                    "killed_by": flow.killed.get(i),
                }
            )
        flows.append(
            {
                "id": flow.id,
                "parent": flow.parent,
                "fork_index": flow.fork_index,
                "end": flow.end,
                "end_block": flow.end_block,
                "merged_into": flow.merged_into,
                "condition": [show(analysis, c) for c in flow.condition],
                "blocks": flow.blocks,
                "accesses": accesses,
            }
        )
    loads, stores = analysis.counts()
    return {
        "kernel": analysis.kernel,
        "status": analysis.status,
        "reason": analysis.reason,
        "loads": loads,
        "stores": stores,
        "stats": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in vars(analysis.stats).items()},
        "unknown": [{"loc": loc, "instruction": m, "reason": r} for loc, m, r in analysis.unknown],
        "assumptions": [show(analysis, a) for a in analysis.assumptions],
        "flows": flows,
    }


def format_analysis(
    analysis: KernelAnalysis, spaces: Iterable[str] | None = None, shared: bool = False
) -> str:
    """The human form, close to the paper's Listing 5.

    A forked flow prints only what follows its fork (``shared``: all).
    ``spaces`` filters the accesses shown (barriers always show).
    """
    keep = None if spaces is None else set(spaces)
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
    for flow in analysis.flows:
        end = flow.end if flow.merged_into is None else f"merged into flow {flow.merged_into}"
        origin = f", forked from flow {flow.parent}" if flow.parent is not None else ""
        lines.append(f"flow {flow.id} [{end}{origin}]")
        if flow.condition:
            conjuncts = [c for item in flow.condition for c in _conjuncts(item)]
            cond = " && ".join(_paren(show(analysis, c)) for c in conjuncts)
            lines.append(f"  if {cond}")
        start = 0 if shared or flow.parent is None else flow.fork_index
        if start:
            lines.append(f"  ... {start} accesses as in flow {flow.parent}")
        for i in range(start, len(flow.trace)):
            a = flow.trace[i]
            if keep is not None and a.space not in keep and a.kind != "bar":
                continue
            lines.append("  " + _format_access(analysis, flow, i, a))
    return "\n".join(lines)


def _format_access(analysis: KernelAnalysis, flow: Flow, i: int, a: Access) -> str:
    loc = a.inst.loc
    ptx = f"{os.path.basename(loc.file)}:{loc.line}"
    where = f"{a.source}, {ptx}" if a.source else ptx
    if a.kind == "bar":
        return f"BAR  ; {format_instruction(a.inst).strip()}  ({where})"
    tag = {"ld": "LD", "st": "ST", "atom": "ATOM"}[a.kind]
    space = a.space.lstrip(".") if a.space else "?"
    text = f"{tag}.{space}.{a.nbytes * 8}: {show(analysis, a.address) if a.address is not None else '?'}"
    if a.kind == "st" and a.value is not None:
        value = show(analysis, a.value)
        text += f" <- {value if len(value) <= 100 else value[:97] + '...'}"
    extras = []
    if a.guard is not None:
        extras.append(f"if {show(analysis, a.guard)}")
    if a.loops:
        extras.append("in loop " + ", ".join(a.loops))
    killed = flow.killed.get(i)
    if killed is not None:
        extras.append(f"overwritten by #{killed}")
    tail = f"  [{'; '.join(extras)}]" if extras else ""
    return f"#{i} {text}{tail}  ; {format_instruction(a.inst).strip()}  ({where})"


def _paren(text: str) -> str:
    return f"({text})" if " || " in text else text


def _conjuncts(c: z3.BoolRef) -> list[z3.BoolRef]:
    """``a && b`` as ``[a, b]`` (nested conjunctions flattened)."""
    if z3.is_and(c):
        return [x for child in c.children() for x in _conjuncts(child)]
    return [c]
