"""The proof that a rewritten kernel computes what the original did (beyond the paper).

The rewritten kernel runs through the same symbolic executor, where a
shuffle is the source value in lane ``laneid + N`` (`LaneModel`: that lane's
thread ids substituted, or the own value past a partial warp), ``activemask``
is the warp's existing lanes, and the fallback load is a load like any
other. Both versions run with memoisation off, so that every path is one
flow in each and the flows pair up by the blocks they pass through. Then, on
every pair of flows, under both path conditions:

1. **every replaced value** (the load's destination right after the code
   that replaced it, recorded by the executor's ``watch``) equals the value
   the original load read at that point, for every thread;
2. the **source copy** is the same term on every flow that reaches the site
   (a source lane may have come another way: one term means its copy holds
   what the equation speaks of);
3. the **stores** (and atomics) are the same, in order: equal addresses and
   equal values, once the values proven equal in 1 are put for each other
   (the rewrite's run continues each site with an opaque stand-in, replaced
   by the original value for the comparison).

A site whose proof fails, or whose solver gives up, is not emitted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import z3

from ptxasw import ir
from ptxasw.emulator.symbolic.executor import Access, Budget, Flow, KernelAnalysis, SymbolicExecutor
from ptxasw.ir import isa
from ptxasw.synth.codegen import Site
from ptxasw.synth.detect import element_count
from ptxasw.synth.solver import NO_WRAP, Prover, TermConstants, lanes_may_write

__all__ = ["ProofResult", "prove_sites"]

PROVED = "proved"


@dataclass
class ProofResult:
    """Per site (same order as given): ``"proved"`` or why not; the
    assumptions the proof used; the rewritten kernel's analysis."""

    outcomes: list[str]
    assumptions: list[set[str]]
    analysis: KernelAnalysis | None

    @property
    def all_proved(self) -> bool:
        return all(o == PROVED for o in self.outcomes)


def prove_sites(
    original: KernelAnalysis,
    module: ir.Module,
    fn: ir.Function,
    sites: list[Site],
    loads: list[ir.Instruction],
    sources: list[ir.Instruction | None],
    budget: Budget,
    timeout_ms: int = 500,
) -> ProofResult:
    """Check ``sites`` of the rewritten ``fn`` (in ``module``) against the
    original's analysis (run with ``merge=False``); ``loads[k]`` is the
    original kernel's load that site k replaced, ``sources[k]`` the original
    load whose value it shuffles."""
    outcomes = [PROVED] * len(sites)
    assumptions: list[set[str]] = [set() for _ in sites]

    def fail_all(reason: str) -> ProofResult:
        return ProofResult([reason] * len(sites), assumptions, None)

    if not original.complete:
        return fail_all(f"not proved: analysis of the original incomplete ({original.reason})")
    watch = {id(s.last): (*s.dsts, *s.sources) for s in sites}
    stand_ins = {id(s.last): len(s.dsts) for s in sites}
    rewritten = SymbolicExecutor(
        module, fn, budget, merge=False, watch=watch, stand_ins=stand_ins, guard_visible_memory=False
    ).run()
    if not rewritten.complete:
        return ProofResult(
            [f"not proved: analysis of the rewrite incomplete ({rewritten.reason})"] * len(sites),
            assumptions,
            rewritten,
        )
    pairs = _pair_flows(original.flows, rewritten.flows)
    if pairs is None:
        return ProofResult(["not proved: the rewrite's paths differ"] * len(sites), assumptions, rewritten)
    prover = Prover(timeout_ms)
    constants = TermConstants()
    site_of = {id(s.last): k for k, s in enumerate(sites)}
    source_terms: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    base = [*original.assumptions, *rewritten.assumptions]
    for old, new in pairs:
        hypotheses = [*base, *old.condition, *new.condition]
        loads_at = _load_positions(old)
        replaced: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        seen: dict[int, int] = defaultdict(int)
        for obs in new.observations:
            k = site_of[id(obs.inst)]
            if outcomes[k] != PROVED:
                continue
            nth = seen[k]
            seen[k] += 1
            width = len(sites[k].dsts)
            new_values, source_values = obs.values[:width], obs.values[width:]
            source_terms[k].add(tuple(v.get_id() for v in source_values))
            if len(source_terms[k]) > 1:
                outcomes[k] = "failed: the source value differs between paths"
                continue
            load_at = loads_at.get(id(loads[k]), [])
            source_at = None if sources[k] is None else loads_at.get(id(sources[k]), [])
            for m, new_value in enumerate(new_values):
                problem, value, no_wrap = _element_equal(
                    prover,
                    constants,
                    hypotheses,
                    old,
                    loads[k],
                    load_at,
                    source_at,
                    nth * width + m,
                    new_value,
                )
                if problem is not None:
                    outcomes[k] = problem
                    break
                if no_wrap:
                    assumptions[k].add(NO_WRAP)
                replaced.append((obs.stand_ins[m], value))
        for k in range(len(sites)):
            runs = len(loads_at.get(id(loads[k]), [])) // element_count(loads[k])
            if outcomes[k] == PROVED and seen[k] != runs:
                outcomes[k] = "failed: the rewrite runs the site a different number of times"
        if any(outcome != PROVED for outcome in outcomes):
            # A failed site's stand-in is not put back, so the stores would
            # "differ" for it and the verdict would hide the site's own reason
            # and fail every other site with it. The caller proves again
            # without the failed sites, and that round compares the stores.
            continue
        problem = _stores_differ(prover, hypotheses, old, new, replaced)
        if problem is not None:
            return ProofResult([problem] * len(sites), assumptions, rewritten)
    return ProofResult(outcomes, assumptions, rewritten)


def _element_equal(
    prover: Prover,
    constants: TermConstants,
    hypotheses: list[z3.BoolRef],
    old: Flow,
    load: ir.Instruction,
    load_at: list[int],
    source_at: list[int] | None,
    position: int,
    new_value: z3.BitVecRef,
) -> tuple[str | None, z3.BitVecRef, bool]:
    """Whether the rewrite's ``new_value`` is what the original's ``position``-th
    access by ``load`` on flow ``old`` read (``load_at``, ``source_at``: the
    trace positions of the load's and its source's accesses): why not (or
    None), that value, and whether the equality needed the no-wrap assumption."""
    access = old.trace[load_at[position]] if position < len(load_at) else None
    if access is None or access.value is None:
        return "failed: the original load does not run where the rewrite does", new_value, False
    # A predicated load's value counts where it ran; elsewhere the
    # register kept what it held, in the rewrite too (`@%g mov`).
    where = [*hypotheses, access.guard] if access.guard is not None else hypotheses
    value = _in_register(access.value, new_value.size(), load)
    if value is None:
        return "failed: the register and the load differ in width", new_value, False
    if _stale_in_warp(prover, constants, where, old, load_at[position], source_at):
        return "failed: another lane may store to the address between the source and the load", value, False
    holds, no_wrap = prover.equal_by_cases(where, new_value, value)
    if not holds:
        if holds is False:
            return "failed: the shuffled value can differ from the load", value, False
        return "timeout: the solver gave up on the shuffled value", value, False
    return None, value, no_wrap


def _in_register(value: z3.BitVecRef, width: int, load: ir.Instruction) -> z3.BitVecRef | None:
    """The loaded ``value`` as the load leaves it in a ``width``-bit register:
    extended by the load's type (``ld.s8`` sign-extends, ``ld.u8`` and
    ``ld.b8`` zero-extend), or None where the register is narrower."""
    extra = width - value.size()
    if extra < 0:
        return None
    if extra == 0:
        return value
    typ = isa.instruction_type(load) or ""
    return z3.SignExt(extra, value) if typ.startswith(".s") else z3.ZeroExt(extra, value)


def _pair_flows(old: list[Flow], new: list[Flow]) -> list[tuple[Flow, Flow]] | None:
    """Flows of the two runs by the path they took (blocks, and how they ended)."""
    if len(old) != len(new):
        return None
    by_path: dict[tuple[object, ...], list[Flow]] = defaultdict(list)
    for f in new:
        by_path[(tuple(f.blocks), f.end, f.end_block)].append(f)
    pairs = []
    for f in old:
        candidates = by_path.get((tuple(f.blocks), f.end, f.end_block))
        if not candidates:
            return None
        pairs.append((f, candidates.pop(0)))
    return pairs


def _load_positions(flow: Flow) -> dict[int, list[int]]:
    """The trace positions of each instruction's load accesses on ``flow``
    (by ``id``), in one walk of its trace."""
    positions: dict[int, list[int]] = defaultdict(list)
    for j, a in enumerate(flow.trace):
        if a.kind == "ld":
            positions[id(a.inst)].append(j)
    return positions


def _stale_in_warp(
    prover: Prover,
    constants: TermConstants,
    hypotheses: list[z3.BoolRef],
    flow: Flow,
    j: int,
    source_at: list[int] | None,
) -> bool:
    """Whether, on ``flow``, another lane's store may write the address of
    the access at trace position ``j`` after the source load (its accesses
    at ``source_at``) last ran (`lanes_may_write`): the equality of values
    below is of one thread's memory, which no other thread writes."""
    earlier = [i for i in source_at or () if i < j]
    if not earlier:
        return True
    return lanes_may_write(prover, flow.trace, earlier[-1], j, hypotheses, constants)


def _put_back(term: z3.ExprRef, replaced: list[tuple[z3.ExprRef, z3.ExprRef]]) -> z3.ExprRef:
    """``term`` with each stand-in put back as the value it was proven to
    be. A stand-in is a function of the thread's ids (`SymbolicExecutor`'s
    stand-ins), so another lane's copy of it becomes the value with that
    lane's ids: the value is made a function of the ids it was built on."""
    consts: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    funs: list[tuple[z3.FuncDeclRef, z3.ExprRef]] = []
    for stand_in, value in replaced:
        if stand_in.num_args() == 0:
            consts.append((stand_in, value))
            continue
        ids = [(a, z3.Var(k, a.sort())) for k, a in enumerate(stand_in.children()) if not z3.is_bv_value(a)]
        funs.append((stand_in.decl(), z3.substitute(value, *ids) if ids else value))
    if consts:
        term = z3.substitute(term, *consts)
    if funs:
        term = z3.substitute_funs(term, *funs)
    return term


def _stores_differ(
    prover: Prover,
    hypotheses: list[z3.BoolRef],
    old: Flow,
    new: Flow,
    replaced: list[tuple[z3.ExprRef, z3.ExprRef]],
) -> str | None:
    """Why the two flows' stores differ, or None when they are the same.

    An atomic writes what it combines (its operands) with what the other
    threads left, which each run reads as a fresh unknown: its operands are
    compared, and from there on the rewrite's unknown stands for the
    original's (an index taken with ``atomicAdd`` and stored through)."""
    olds = [a for a in old.trace if a.kind in ("st", "atom")]
    news = [a for a in new.trace if a.kind in ("st", "atom")]
    if len(olds) != len(news):
        return "failed: the rewrite stores a different number of times"
    replaced = list(replaced)
    for a, b in zip(olds, news, strict=True):
        where = _where(a.inst)
        if _shape(a) != _shape(b):
            return f"failed: the store at {where} changed"
        written = list(zip(a.operands, b.operands, strict=True)) if a.kind == "atom" else [(a.value, b.value)]
        for x, y in [(a.address, b.address), *written]:
            if x is None or y is None:
                continue
            y = _put_back(y, replaced)
            holds, _ = prover.equal(hypotheses, y, x)
            if not holds:
                return (
                    f"failed: the store at {where} may differ"
                    if holds is False
                    else (f"timeout: the solver gave up on the store at {where}")
                )
        if a.kind == "atom" and a.value is not None and b.value is not None:
            replaced.append((b.value, a.value))
    return None


def _shape(access: Access) -> tuple[object, ...]:
    """What a store must keep in the rewrite besides its address and value."""
    return access.kind, access.space, access.nbytes, len(access.operands)


def _where(inst: ir.Instruction) -> str:
    loc = inst.loc
    return f"line {loc.line}" if loc is not None and loc.line else "?"
