"""What an executor provides to the instruction semantics.

The semantics (``semantics.py``) compute values; they never decide which
lanes run, where memory lives or what another lane holds. Those belong to the
executor, of which there are two:

- the concrete interpreter (``concrete/interpreter.py``): a warp of 32 lanes, real
  buffers, an active mask, SIMT reconvergence;
- the symbolic executor (``symbolic/executor.py``): one symbolic thread, memory
  as uninterpreted functions of the address, a trace of every access.

Both implement `Machine`. A guarded instruction is handled by the semantics:
it evaluates the guard to a 1-bit value ``cond`` and passes it to every
memory operation, and writes ``ite(cond, new, old)`` to registers. Control
flow (``bra``, ``brx.idx``, ``call``, ``ret``, ``exit``) is the executor's; the
semantics only evaluate branch conditions (`semantics.branch_condition`).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from ptxasw import ir
from ptxasw.emulator.semantics.domain import Domain

V = TypeVar("V")


class Machine(Protocol[V]):
    """The state an instruction reads and writes, in some value domain."""

    dom: Domain[V]

    def read(self, reg: ir.Register, width: int) -> V:
        """A register's value (special registers such as ``%tid.x`` included).

        ``width`` is the width the instruction reads it at; a machine returns
        the register resized (truncated or zero-extended) to it.
        """
        ...

    def write(self, reg: ir.Register, value: V) -> None:
        """Set a register (already merged with its old value under the guard)."""
        ...

    def symbol_address(self, name: str, width: int) -> V:
        """The address of a variable, parameter or function named in an operand."""
        ...

    def load(self, inst: ir.Instruction, space: str, address: V, nbytes: int, cond: V | None) -> V:
        """Read ``nbytes`` (1..8) little-endian bytes at ``address`` in ``space``.

        ``space`` is ``.global .shared .local .const .param`` or ``generic``.
        ``cond`` is the guard (None: unguarded); lanes where it is 0 do not
        access memory and get an unspecified value (the caller merges).
        """
        ...

    def store(
        self, inst: ir.Instruction, space: str, address: V, value: V, nbytes: int, cond: V | None
    ) -> None:
        """Write the low ``nbytes`` bytes of ``value`` at ``address``."""
        ...

    def atomic(
        self,
        inst: ir.Instruction,
        space: str,
        op: str,
        address: V,
        operands: list[V],
        nbytes: int,
        cond: V | None,
    ) -> V:
        """Read-modify-write (``atom``/``red``): returns the old value.

        ``op`` is the atom operation word without its dot: ``add inc dec min
        max and or xor exch cas`` (``operands`` holds one value, or two for
        ``cas``: compare, new). The type (signed, float) is read from
        ``inst`` by the machine with the instruction table; the new value is
        `ptxasw.emulator.semantics.collectives.atomic_update` of the old.
        """
        ...

    def warp(self, inst: ir.Instruction, operands: list[V], cond: V | None) -> list[V]:
        """Instructions whose result depends on other lanes.

        ``shfl.sync`` (operands: a, b, c, membermask -> [d, p]), ``vote.sync``
        (-> [d]), ``match.sync`` (-> [d] or [d, p]), ``redux.sync`` (-> [d]),
        ``activemask`` (-> [d]), ``elect.sync`` (-> [d, p]). Every machine
        answers with `ptxasw.emulator.semantics.collectives.warp_collective`,
        giving it the lanes that execute the instruction; a form it does not
        model raises ``NotImplementedError`` (the semantics make that unknown).
        """
        ...

    def barrier(self, inst: ir.Instruction, cond: V | None) -> None:
        """``bar``/``barrier`` (CTA-wide) and ``bar.warp.sync``: synchronise."""
        ...

    def unknown(self, inst: ir.Instruction, reason: str) -> None:
        """Record that ``inst`` was not modelled (its results become fresh values).

        A strict machine raises `ptxasw.errors.UnsupportedInstruction` here
        instead: a consumer that must not compute with made-up values (the
        lifter) runs strict."""
        ...
