"""Warp-collective instructions over the lanes of a converged warp.

``shfl``, ``vote``, ``match``, ``redux``, ``elect`` and ``activemask`` read
the registers of other lanes, which the instruction semantics cannot (they
see one value per operand): the semantics hand them to `Machine.warp`, and
the interpreter's machine computes them here. `shuffle` also serves the GPU
oracle (``benchmarks/gpu_semantics.py``), over many warps at once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

import numpy as np

from ptxasw import ir
from ptxasw.emulator.concrete.domain import Bits
from ptxasw.emulator.concrete.lanes import LANE_INTS, LANES, lane_bits, to_mask, uniform, width_mask
from ptxasw.ir import isa


def warp_op(
    inst: ir.Instruction,
    ops: list[Bits],
    part: int,
    active: int,
    unknown: Callable[[ir.Instruction, str], None],
) -> list[Bits]:
    """The results of a warp-collective instruction (not ``bar.warp.sync``).

    ``ops`` are its source operands, ``part`` the lanes that take part (the
    active ones whose guard holds), ``active`` the active lanes (what
    ``activemask`` returns); a form not modelled is reported to ``unknown``
    and gives zeros.
    """
    opcode = inst.opcode
    mods = inst.modifiers
    if opcode == "shfl":
        return shuffle(mods, ops)
    if opcode == "activemask":
        return [lane_bits(active, 32)]
    # vote/match/redux take (value, membermask); the lanes that take part are
    # the active ones whose guard holds and that the member mask names.
    member = part & uniform(ops[1], part) if len(ops) > 1 else part
    if opcode == "vote":
        pred = to_mask(ops[0].data) & member
        if ".ballot" in mods:
            return [lane_bits(pred, 32)]
        if ".all" in mods:
            return [lane_bits(int(pred == member), 1)]
        if ".any" in mods:
            return [lane_bits(int(pred != 0), 1)]
        return [lane_bits(int(pred in (0, member)), 1)]  # .uni
    lanes = [i for i in range(LANES) if member >> i & 1]
    if opcode == "match":
        values = ops[0].data
        if ".all" in mods:
            same = len({int(values[i]) for i in lanes}) <= 1
            return [lane_bits(member if same else 0, 32), lane_bits(int(same), 1)]
        groups: dict[int, int] = {}
        for i in lanes:
            v = int(values[i])
            groups[v] = groups.get(v, 0) | (1 << i)
        out = np.zeros(LANES, dtype=np.uint64)
        for i in lanes:
            out[i] = groups[int(values[i])]
        return [Bits(out, 32), lane_bits(0, 1)]
    if opcode == "redux":
        if isa.instruction_type(inst) not in (".u32", ".s32", ".b32"):
            unknown(inst, "floating-point redux is not modelled")
            return [lane_bits(0, ops[0].width)]
        width = ops[0].width
        raw = [int(ops[0].data[i]) for i in lanes]
        signed = ".s32" in mods
        vals = [v - (1 << width) if signed and v >> (width - 1) else v for v in raw] if raw else [0]
        if ".add" in mods:
            r = sum(vals)
        elif ".min" in mods:
            r = min(vals)
        elif ".max" in mods:
            r = max(vals)
        elif ".and" in mods:
            r = reduce(lambda a, b: a & b, vals, width_mask(width))
        elif ".or" in mods:
            r = reduce(lambda a, b: a | b, vals, 0)
        else:
            r = reduce(lambda a, b: a ^ b, vals, 0)
        return [lane_bits(r, width)]
    if opcode == "elect":
        member = part & uniform(ops[0], part) if ops else part
        leader = (member & -member).bit_length() - 1
        elected = (leader == LANE_INTS) if member else np.zeros(LANES, dtype=bool)
        return [lane_bits(max(leader, 0), 32), Bits(elected.astype(np.uint64), 1)]
    unknown(inst, "warp operation not modelled")
    return [lane_bits(0, 32), lane_bits(0, 1)]


def shuffle(mods: tuple[str, ...], ops: list[Bits]) -> list[Bits]:
    """``shfl.sync`` over converged warps: ``[value, in-range predicate]``.

    ``ops`` are the ``a, b, c`` operands for every lane; lanes ``32k..32k+31``
    form warp k (one warp in the interpreter; many in the GPU oracle).
    """
    a, b, c = ops[0], ops[1], ops[2]
    index = np.arange(a.data.size, dtype=np.int64)
    lane = index & 31
    bval = (b.data & np.uint64(31)).astype(np.int64)
    cval = (c.data & np.uint64(31)).astype(np.int64)
    seg = ((c.data >> np.uint64(8)) & np.uint64(31)).astype(np.int64)
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if ".up" in mods:
        j = lane - bval
        ok = j >= max_lane
    elif ".down" in mods:
        j = lane + bval
        ok = j <= max_lane
    elif ".bfly" in mods:
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg)
        ok = j <= max_lane
    src = (index - lane) + (np.where(ok, j, lane) & 31)
    return [Bits(a.data[src], a.width), Bits(ok.astype(np.uint64), 1)]
