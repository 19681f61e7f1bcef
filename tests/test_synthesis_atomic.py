"""Loads whose values reach an atomic (``tests/fixtures/atomic_uses.cu``).

An atomic writes what it combines (``atomicAdd(total, a[i] + a[i+1])``)
with what the other threads left, which each symbolic run reads as a fresh
unknown. The proof used to compare those two unknowns, one from the
original's run and one from the rewrite's, and so failed every shuffle whose
value reached an atomic ("the store may differ"), on nvcc's code as on
Numba's. It now compares what the atomic combines, and from the atomic on
takes the rewrite's unknown for the original's (an index taken with
``atomicAdd`` and stored through). A rewrite that changes what an atomic
adds still fails.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import z3

from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.symbolic.executor import Access, Budget
from ptxasw.ir.builder import FunctionBuilder
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.codegen import emit_shuffles
from ptxasw.synth.detect import Options, detect_kernel
from ptxasw.synth.prove import PROVED, _stores_differ, prove_sites
from ptxasw.synth.solver import Prover
from ptxasw.synth.synthesize import ShuffleSynthesisPass, _copy_with

FIXTURE = Path(__file__).parent / "fixtures" / "atomic_uses.ptx"
N = 75


@pytest.fixture(scope="module")
def rewritten() -> tuple[dict[str, object], str]:
    module = parse_ptx(FIXTURE.read_text(), FIXTURE.name)
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    synthesis.run(module)
    return {plan.kernel: plan for plan in synthesis.plans}, print_module(module)


@pytest.mark.parametrize(
    ("kernel", "deltas"), [("pair_sum", [-1]), ("append_pairs", [-1, 1]), ("max_of_pairs", [-1])]
)
def test_shuffles_that_reach_an_atomic_are_proven(
    rewritten: tuple[dict[str, object], str], kernel: str, deltas: list[int]
) -> None:
    plans, _ = rewritten
    plan = plans[kernel]
    assert sorted(v.delta for v in plan.chosen) == deltas
    assert [v.proof for v in plan.chosen] == [PROVED] * len(deltas)


@pytest.mark.parametrize("kernel", ["pair_sum", "max_of_pairs"])
def test_a_wrong_value_added_fails_the_proof(kernel: str) -> None:
    """Every delta one further out: the atomic would combine another element."""
    module = parse_ptx(FIXTURE.read_text(), FIXTURE.name)
    fn = module.function(kernel)
    plan = detect_kernel(module, fn)
    assert plan.chosen
    trial_fn, trial_module, mapped = _copy_with(module, fn, plan.verdicts)
    wrong = [dataclasses.replace(v, delta=v.delta + (1 if v.delta > 0 else -1)) for v in mapped]
    sites = emit_shuffles(FunctionBuilder(trial_fn, trial_module), wrong, "normal")
    loads, sources = [v.load for v in plan.chosen], [v.source for v in plan.chosen]
    result = prove_sites(plan.analysis, trial_module, trial_fn, sites, loads, sources, Budget())
    assert result.outcomes and all(o != PROVED for o in result.outcomes), result.outcomes


def run(text: str, kernel: str, a: np.ndarray, block: int) -> list[np.ndarray]:
    grid = -(-N // block)
    if kernel == "append_pairs":
        args = [a.copy(), np.zeros(N, np.float32), np.zeros(1, np.int32), np.int32(N)]
    else:
        args = [a.copy(), np.zeros(1, a.dtype), np.int32(N)]
    launch(parse_ptx(text, FIXTURE.name), kernel, (grid,), (block,), args)
    return [x for x in args if isinstance(x, np.ndarray)][1:]


@pytest.mark.parametrize("block", [32, 48])
@pytest.mark.parametrize("kernel", ["pair_sum", "append_pairs", "max_of_pairs"])
def test_the_rewrite_computes_the_same_result(
    rewritten: tuple[dict[str, object], str], kernel: str, block: int
) -> None:
    _, text = rewritten
    rng = np.random.default_rng(block)
    a = {
        "pair_sum": lambda: rng.integers(-1000, 1000, N).astype(np.int32),
        "append_pairs": lambda: rng.standard_normal(N).astype(np.float32),
        "max_of_pairs": lambda: rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
    }[kernel]()
    before, after = run(FIXTURE.read_text(), kernel, a, block), run(text, kernel, a, block)
    if kernel == "append_pairs":
        # The slots are taken in the order the threads get there: the same sums, each once.
        (out0, count0), (out1, count1) = before, after
        assert count0[0] == count1[0] > 0
        assert np.array_equal(np.sort(out0[: count0[0]]), np.sort(out1[: count1[0]]))
        s = a[:-2] + a[1:-1] + a[2:]
        assert np.array_equal(np.sort(out0[: count0[0]]), np.sort(s[s > 0]))
        return
    assert all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))
    if kernel == "pair_sum":
        assert before[0][0] == int(a[1:-1].astype(np.int64).sum() + a[2:].astype(np.int64).sum())
    else:
        assert before[0][0] == int((a[:-1] ^ a[1:]).max())


def _access(kind: str, address: z3.BitVecRef, value: z3.BitVecRef, *operands: z3.BitVecRef) -> Access:
    inst = parse_ptx(FIXTURE.read_text(), FIXTURE.name).function("pair_sum").instructions().__next__()
    return Access(kind, ".global", 4, address, value, inst, 0, 0, None, 0, (), 0, None, operands=operands)


def test_stores_compare_what_an_atomic_combines() -> None:
    """``_stores_differ`` on two runs' traces: an atomic's operands must
    match, its old values (fresh in each run) need not, and a store through
    the old value matches when it goes through the same one."""
    total, out = z3.BitVec("param_1", 64), z3.BitVec("param_2", 64)
    element = z3.BitVec("element", 32)
    old_a, old_b = z3.BitVec("atom.add!1", 32), z3.BitVec("atom.add!7", 32)

    def run(old: z3.BitVecRef, added: z3.BitVecRef) -> SimpleNamespace:
        slot = out + 4 * z3.ZeroExt(32, old)
        return SimpleNamespace(trace=[_access("atom", total, old, added), _access("st", slot, added)])

    prover = Prover(200)
    assert _stores_differ(prover, [], run(old_a, element), run(old_b, element), []) is None
    assert _stores_differ(prover, [], run(old_a, element), run(old_b, element + 1), []) is not None
