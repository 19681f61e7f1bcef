"""A model by stochastic local search, for queries the solver bit-blasts badly.

A path condition that holds a 64-bit product of two unknowns (a grid-stride
loop's ``rank * size`` with both factors symbolic) makes every later query
under it hard for Z3's CDCL core: it bit-blasts the multipliers whole and
then searches among their gates, and a question as easy as "can a thread
have ``tid.x % 32 != 0`` here" ends undecided after the whole effort. Local
search over the bit-vector terms themselves (Z3's ``qfbv-sls`` tactic)
moves the values of the unknowns directly and finds such models in a few
milliseconds. It can never prove a query unsat, so it is an
under-approximation, tried where the typical sizes found no model, and its
model is checked by evaluation before it is believed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence

import z3

# A few short runs: without restarts the search missed models that three
# restarts find (a grid of at least four blocks at thread rank 0); more
# restarts only make the misses (unsat questions) dearer.
_RESTARTS = 3
_REPAIRS = 100
# Wall-clock safety net: the run is bounded by its repairs, not by time.
_TIMEOUT_MS = 200


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Z3's local search prints its statistics to the process's standard
    error unconditionally (no verbosity setting covers it); a build log or
    a terminal must not see them."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no standard error to protect
        yield
        return
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(sink, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(sink)


def local_model(formulas: Sequence[z3.BoolRef]) -> z3.ModelRef | None:
    """A model of the conjunction of ``formulas``, or None when the search
    did not find one (which says nothing about satisfiability)."""
    goal = z3.Goal()
    goal.add(*formulas)
    tactic = z3.TryFor(
        z3.With("qfbv-sls", max_restarts=_RESTARTS, max_repairs=_REPAIRS, random_seed=0),
        _TIMEOUT_MS,
    )
    try:
        with _quiet_stderr():
            result = tactic(goal)
    except z3.Z3Exception:  # the time cap, or a construct the search does not take
        return None
    if len(result) != 1 or len(result[0]) != 0:
        return None
    model = result[0].convert_model(z3.Model())
    if all(z3.is_true(model.eval(f, model_completion=True)) for f in formulas):
        return model
    return None
