"""Generic stores to a thread's own stack and through pointer parameters.

clang's ``-O0`` (and ``-g``) builds keep every local in the thread's stack,
reached through a generic address (``%SP``, ``cvta.local`` of the depot),
and spill the pointer parameters there, reloading them before each use.
The memory model took each such store for one that may overwrite any
global element loaded before it, and a store through a pointer parameter
for one that may overwrite the spilled pointers, so most of those builds'
shuffles were refused (the kernel suite's hypterm: 7 of nvcc -G's 77). A
generic access now reaches the space its address shows
(`SymbolicExecutor._memory_space`): a declared variable's, or global memory
for a pointer parameter. A store through a pointer loaded from memory may
still write anything, and a reloaded slot still sees what was stored there
(``tests/fixtures/stack_stores.ptx``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.prove import PROVED
from ptxasw.synth.synthesize import ShuffleSynthesisPass

FIXTURE = Path(__file__).parent / "fixtures" / "stack_stores.ptx"


@pytest.fixture(scope="module")
def rewritten() -> tuple[dict[str, object], str]:
    module = parse_ptx(FIXTURE.read_text(), FIXTURE.name)
    synthesis = ShuffleSynthesisPass(Options(rounding="ptx"))
    synthesis.run(module)
    return {plan.kernel: plan for plan in synthesis.plans}, print_module(module)


def reasons(plan: object) -> list[str | None]:
    return [v.reason for v in sorted(plan.verdicts, key=lambda v: v.load.loc.line)]


def test_a_store_to_the_own_stack_between_the_loads(rewritten: tuple[dict[str, object], str]) -> None:
    plans, _ = rewritten
    assert [(v.delta, v.proof) for v in plans["k_generic"].chosen] == [(1, PROVED)]


def test_a_pointer_reloaded_after_a_store_through_a_parameter(
    rewritten: tuple[dict[str, object], str],
) -> None:
    plans, _ = rewritten
    assert [(v.delta, v.proof) for v in plans["after"].chosen] == [(1, PROVED)]


def test_a_store_through_a_loaded_pointer_still_blocks(rewritten: tuple[dict[str, object], str]) -> None:
    plans, _ = rewritten
    assert not plans["through_loaded"].chosen
    assert "store in between" in reasons(plans["through_loaded"])


def test_a_reloaded_slot_sees_what_was_stored_there(rewritten: tuple[dict[str, object], str]) -> None:
    """``in[i]`` and, through the slot overwritten with ``out``, ``out[i + 1]``: two arrays."""
    plans, _ = rewritten
    assert not plans["slot_overwritten"].chosen
    assert "non-constant delta" in reasons(plans["slot_overwritten"])


@pytest.mark.parametrize("block", [32, 48])
@pytest.mark.parametrize("kernel", ["k_generic", "after", "slot_overwritten"])
def test_the_rewrite_computes_the_same_bits(
    rewritten: tuple[dict[str, object], str], kernel: str, block: int
) -> None:
    _, text = rewritten
    rng = np.random.default_rng(block)
    a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    results = []
    for source in (FIXTURE.read_text(), text):
        args = [a.copy(), b.copy()]
        launch(parse_ptx(source, FIXTURE.name), kernel, (1,), (block,), args)
        results.append(args)
    (x0, y0), (x1, y1) = results
    assert np.array_equal(x0.view(np.uint32), x1.view(np.uint32))
    assert np.array_equal(y0.view(np.uint32), y1.view(np.uint32))
    assert not np.array_equal(x0, a) or not np.array_equal(y0, b), "the kernel wrote nothing"
