"""Shuffle synthesis of a kernel: detect, emit on a copy, prove, emit for real.

The order is what makes the rewrite safe to run inside a user's build:

1. `detect_kernel` analyses the original and picks a source and a delta
   for each load it can;
2. the shuffles are emitted on a **copy** of the function (in ``normal``
   mode, whatever mode was asked: the proof is about the correct code);
3. `prove_sites` runs the copy symbolically and checks every site and
   every store against the original; sites that fail are dropped and the
   remaining ones are emitted and proved again on a fresh copy;
4. only proven sites are emitted into the module, through the caller's
   builder, in the requested mode.

`ShuffleSynthesisPass` is that, as a pipeline pass over every kernel.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ptxasw import ir
from ptxasw.analysis.cfg import build_cfg
from ptxasw.analysis.contraction import calls_into_sums, feeding_registers, open_sums
from ptxasw.analysis.gating import DataGates
from ptxasw.analysis.inline import call_site
from ptxasw.driver.deadline import Deadline
from ptxasw.driver.pipeline import FunctionPass, PassResult
from ptxasw.emulator.symbolic.executor import Budget, SymbolicExecutor
from ptxasw.ir import isa
from ptxasw.ir.builder import AnalysisCache, FunctionBuilder, copy_function
from ptxasw.synth import tuned
from ptxasw.synth.codegen import emit_shuffles
from ptxasw.synth.cost import costs_for, nothing_pays, shuffle_pays, strided_halo_may_pay
from ptxasw.synth.detect import KernelPlan, LoadVerdict, Options, detect_kernel, load_registers
from ptxasw.synth.pinning import fuses_nothing, settle, write_rounding
from ptxasw.synth.prove import PROVED, prove_sites
from ptxasw.synth.solver import clear_memos

__all__ = ["ShuffleSynthesisPass", "plan_kernel", "rewrite_kernel"]

# Rounds of "drop what failed, prove the rest again".
_ROUNDS = 3


def plan_kernel(
    module: ir.Module,
    fn: ir.Function,
    options: Options | None = None,
    choose: Callable[[KernelPlan], None] | None = None,
) -> KernelPlan:
    """Detect and prove: the plan's rewritten verdicts are the proven ones
    (the module is not changed). ``choose`` blocks, between the two, the
    detected sites that are not wanted (the cost model's): they cost no
    proof, and what is proven is the set that is emitted."""
    options = options or Options()
    start = time.perf_counter()
    clear_memos()
    plan = detect_kernel(module, fn, options)
    if choose is not None:
        choose(plan)
    budget = Budget(time_s=options.time_s, max_paths=options.max_paths)
    for _ in range(_ROUNDS):
        chosen = plan.chosen
        if not chosen:
            break
        trial_fn, trial_module, mapped = _copy_with(module, fn, plan.verdicts)
        sites = emit_shuffles(
            FunctionBuilder(trial_fn, trial_module), mapped, "normal", plan.block_shape_known
        )
        loads = [v.load for v in chosen]
        sources = [v.source for v in chosen]
        result = prove_sites(
            plan.analysis, trial_module, trial_fn, sites, loads, sources, budget, options.solver_timeout_ms
        )
        # Sites are emitted in the order of the rewritten verdicts.
        failed = False
        for verdict, outcome, used in zip(chosen, result.outcomes, result.assumptions, strict=True):
            if outcome == PROVED:
                verdict.proof = PROVED
                verdict.assumptions = tuple(sorted({*verdict.assumptions, *used}))
            else:
                verdict.block(f"proof {outcome}")
                verdict.proof = outcome
                failed = True
        if not failed:
            break
    else:
        for verdict in plan.chosen:
            verdict.block("proof did not settle")
    if options.rounding == "ptxas" and plan.chosen:
        _keep_rounding(module, fn, plan, options)
        _prove_rounded(module, fn, plan, budget, options.solver_timeout_ms)
    plan.seconds = time.perf_counter() - start
    return plan


def _prove_rounded(
    module: ir.Module, fn: ir.Function, plan: KernelPlan, budget: Budget, timeout_ms: int
) -> None:
    """Prove the text that is emitted when it carries rounding pins: the
    proven sites emitted into the original with ``plan``'s pins (or its
    products rounded apart), against that pinned original. The pins change
    only sums whose operands the shuffles leave equal, so this holds
    whenever the first proof did; it is checked rather than trusted. A
    failure blocks every site (a proof of part of a set is of another text)."""
    chosen = [v for v in plan.chosen if v.proof == PROVED and v.in_kernel]
    if not chosen or not (plan.pins or plan.apart):
        return
    pinned_fn, pinned_module, memo = copy_function(module, fn)
    write_rounding(FunctionBuilder(pinned_fn, pinned_module), plan.pins, plan.apart, memo)
    original = SymbolicExecutor(
        pinned_module, pinned_fn, budget, merge=False, guard_visible_memory=False
    ).run()
    in_pinned = _pointed(chosen, memo)
    trial_fn, trial_module, mapped = _copy_with(pinned_module, pinned_fn, in_pinned)
    sites = emit_shuffles(FunctionBuilder(trial_fn, trial_module), mapped, "normal", plan.block_shape_known)
    loads = [v.load for v in in_pinned]
    sources = [v.source for v in in_pinned]
    result = prove_sites(original, trial_module, trial_fn, sites, loads, sources, budget, timeout_ms)
    failed = next((o for o in result.outcomes if o != PROVED), None)
    if failed is None:
        return
    for v in chosen:
        v.block(f"proof with the rounding pinned {failed}")
        v.proof = failed


def rewrite_kernel(
    builder: FunctionBuilder, plan: KernelPlan, mode: str = "normal", memo: dict[int, Any] | None = None
) -> int:
    """Emit ``plan``'s proven shuffles, and with them its rounding pins, into
    ``builder``'s function; how many. ``memo`` (`copy_function`'s) when that
    function is a copy of the one the plan names."""
    chosen = [v for v in plan.chosen if v.proof == PROVED and v.in_kernel]
    if memo is not None:
        chosen = _pointed(chosen, memo)
    sites = emit_shuffles(builder, chosen, mode, plan.block_shape_known)
    if sites:
        write_rounding(builder, plan.pins, plan.apart, memo)
    return len(sites)


def _keep_paying(plan: KernelPlan, options: Options, fn: ir.Function) -> None:
    """Block the shuffles (as detected, or as proven) that the cost model
    says do not pay (reuses always do), and those of loads that run only
    where loaded data says so: the shuffle runs on every path, and how often
    the load did is the input's (`ptxasw.analysis.gating`; ``ptxasw tune``
    measures such a kernel)."""
    costs = costs_for(options.arch)
    gates: DataGates | None = None
    for v in plan.chosen:
        if v.delta == 0:
            continue
        if v.in_kernel and v.source is not None:
            gates = gates or DataGates(fn, build_cfg(fn))
            gate = gates.gate(v.source, v.load)
            if gate is not None:
                test = "its guard" if gate is v.load else f"the branch at line {gate.loc.line}"
                v.block(f"runs only where loaded data says so ({test}): its shuffle would run on every path")
                continue
        bits = 64 if (isa.type_bits(isa.instruction_type(v.load) or "") or 32) > 32 else 32
        pays, figures = shuffle_pays(costs, bits, options.mode, len(v.elements), v.wavefronts, plan.traffic)
        if not pays:
            v.block(f"does not pay on {options.arch or 'this target'} ({figures})")


def _keep_rounding(module: ir.Module, fn: ir.Function, plan: KernelPlan, options: Options) -> None:
    """Keep the original build's rounding (`ptxasw.synth.pinning`): where
    ptxas fuses nothing in ``fn`` (nor in the device functions it calls into
    open sums), say so (``plan.apart``); else record in ``plan.pins`` the
    open sums of ``fn`` settled to ptxas's choice, and block the loads whose
    values flow into a sum that could not be settled or pinned (with
    ``assemble`` missing, every open sum), or into a call whose callee has
    open sums (ptxas may inline it; its sums are not pinned). Called before
    ``fn`` is edited: the choices are those of the module as it stands."""
    found = open_sums(fn)
    calls = calls_into_sums(module, fn)
    if not found and not calls:
        return
    if options.assemble is not None and fuses_nothing(module, fn, options.assemble, bool(calls)):
        plan.apart = True  # -G, --fmad=false: nothing to pin, nothing to refuse
        return
    settled = {}
    if options.assemble is not None and found.pinnable:
        settled = settle(module, fn, found.pinnable, options.assemble, time_s=options.time_s)
    plan.pins = [(s, settled[k]) for k, s in enumerate(found.pinnable) if k in settled]
    unpinned = [
        (s.total, [p for p in (s.left, s.right) if p is not None])
        for k, s in enumerate(found.pinnable)
        if k not in settled
    ]
    feeding = feeding_registers(fn, unpinned + found.other + calls)
    why = "no ptxas to ask" if options.assemble is None else "ptxas's choice was not found"
    for v in plan.chosen:
        total = next(
            (feeding[r.name] for r in load_registers(v.load) or () if r.name in feeding),
            None,
        )
        if total is None:
            continue
        line = f" at line {total.loc.line}" if total.loc.line else ""
        if isa.is_call(total):
            callee = call_site(total).callee
            name = callee.name if isinstance(callee, ir.Symbol) else "a function by address"
            v.block(
                f"rounding: the value reaches a call to {name}{line}, where ptxas may fuse products "
                "either way (sums of device functions are not pinned; a rewrite may change the choice "
                "and the last bits)"
            )
        else:
            v.block(
                f"rounding: the value reaches a sum{line} whose products ptxas may fuse either way "
                f"({why}; a rewrite may change its choice and the last bits)"
            )


def _copy_with(
    module: ir.Module, fn: ir.Function, verdicts: list[LoadVerdict]
) -> tuple[ir.Function, ir.Module, list[LoadVerdict]]:
    """A copy of ``fn`` in a module that shares everything else, and the
    verdicts pointed at the copy's instructions."""
    trial_fn, trial_module, memo = copy_function(module, fn)
    return trial_fn, trial_module, _pointed([v for v in verdicts if v.rewritten and v.in_kernel], memo)


def _pointed(verdicts: list[LoadVerdict], memo: dict[int, Any]) -> list[LoadVerdict]:
    """``verdicts`` pointed at the instructions of a copy (``memo``: `copy_function`'s)."""

    def moved(inst: ir.Instruction | None) -> ir.Instruction | None:
        return None if inst is None else memo.get(id(inst), inst)

    return [
        dataclasses.replace(v, load=moved(v.load), source=moved(v.source))  # type: ignore[arg-type]
        for v in verdicts
    ]


class ShuffleSynthesisPass(FunctionPass):
    """Every kernel's proven shuffles, within the pipeline's deadline.

    Kernels are planned one at a time with a budget cut to the time left; a
    kernel that does not fit is left unchanged (and counted). ``plans``
    keeps each kernel's plan for reports.
    """

    name = "shuffle-synthesis"

    def __init__(
        self,
        options: Options | None = None,
        kernels: set[str] | None = None,
        *,
        apply: bool = True,
        on_kernel: Callable[[str], None] | None = None,
    ) -> None:
        """``apply=False``: plan (detect and prove) without editing: a report.
        ``on_kernel``: told each kernel's name as its analysis begins (a progress display)."""
        self.options = options or Options()
        self.kernels = kernels
        self.apply = apply
        self.on_kernel = on_kernel
        self.plans: list[KernelPlan] = []
        self._deadline = Deadline()

    def run(
        self, module: ir.Module, analyses: AnalysisCache | None = None, deadline: Deadline | None = None
    ) -> PassResult:
        self._deadline = deadline or Deadline()
        self._module = module
        return super().run(module, analyses, self._deadline)

    def wants(self, fn: ir.Function) -> bool:
        return fn.is_kernel and (self.kernels is None or fn.name in self.kernels)

    def run_on_function(self, fn: ir.Function, builder: FunctionBuilder) -> dict[str, Any] | None:
        if self.on_kernel is not None:
            self.on_kernel(fn.name)
        model = self.options.profit == "model"
        # A verdict measured by ``ptxasw tune`` overrides the cost model (`ptxasw.synth.tuned`).
        measured = tuned.lookup(self._module, fn, self.options) if model else None
        # No shuffle can pay on this target: the analysis would be wasted, but
        # for reuses (N = 0: they pay everywhere; `ptxasw.synth.cost`) and for
        # the strided loads around a thread's vector (`shuffle_pays`).
        rules_out = (
            self.options.max_delta != 0
            and nothing_pays(self.options.arch, self.options.mode)
            and not strided_halo_may_pay(fn, costs_for(self.options.arch))
        )
        if measured is None and model and rules_out:
            return {"kernels": 1, "unprofitable": 1}
        left = self._deadline.left()
        # Up to three analyses (detection's merged screen, the original path by
        # path, the rewrite) and the pinned text's proof: give each a share.
        time_s = self.options.time_s if math.isinf(left) else max(0.05, min(self.options.time_s, left / 4))
        options = dataclasses.replace(self.options, time_s=time_s)
        # A measured verdict is of every proven shuffle: those are proven
        # first; else the model chooses before the proof.
        choose = partial(_keep_paying, options=self.options, fn=fn) if model and measured is None else None
        plan = plan_kernel(self._module, fn, options, choose)
        applied = measured is not None and tuned.apply_verdict(measured, self._module, fn, plan)
        if model and measured is not None and not applied:
            _keep_paying(plan, self.options, fn)
        shuffles = rewrite_kernel(builder, plan, self.options.mode) if self.apply else len(plan.chosen)
        # The plan stays for the file's report, its traces need not: a
        # kernel's Z3 terms ran to tens of megabytes, and a file's thousands.
        plan.analysis = dataclasses.replace(plan.analysis, flows=[], assumptions=[])
        self.plans.append(plan)
        # The record says why: "tuned" (and "tuned_shuffle"/"tuned_original": a verdict
        # applied) or "tune_stale" (a verdict measured another rewrite: the model decided).
        tuning: dict[str, Any] = {}
        if applied:
            tuning = {"tuned": 1, f"tuned_{measured.choice}": 1}  # type: ignore[union-attr]
        elif measured is not None:
            tuning = {"tune_stale": 1}
        return {
            "kernels": 1,
            "loads": plan.global_loads,
            "shuffles": shuffles,
            "partial": 0 if plan.analysis.complete else 1,
            **tuning,
        }
