"""Random masked-load kernels in Triton's shape: the rewrite computes the same bits.

`tests/test_synthesis_predicated.py` checks chosen cases; here Hypothesis
draws kernels of predicated loads ``@%p ld.global.b32 { %v }`` of
``x[e + o]`` under masks ``e + a >= 0`` and ``e + b < n`` (each written
plainly or negated, ``@!%q``; some taps unmasked), with ``V`` elements per
thread as Triton lays out a tile, or each masked load in a branch around it
as nvcc writes a bounds check, and launches them at block sizes that split
warps and rows, with ``n`` cutting anywhere, original against rewrite in the
reference interpreter (30 draws here; `benchmarks/masked_campaign.py` runs
thousands). Every emitted rewrite was proven; this is the
check that the proof's model of predicates is the machine's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options
from ptxasw.synth.synthesize import ShuffleSynthesisPass

PAD = 4  # x is read at e + o + PAD, so every tap is inside the buffer whatever the masks


@dataclass(frozen=True)
class Tap:
    offset: int  # o: loads x[e + o]
    low: int | None  # a: needs e + a >= 0 (None: no lower bound)
    high: int | None  # b: needs e + b < n (None: not masked, with low None too)
    negated: bool  # the mask written as @!%q with q = not mask


def kernel_text(
    taps: list[Tap], per_thread: int, bitfield_block: int | None = None, branches: bool = False
) -> str:
    """The kernel's PTX. ``branches``: each load in a branch that skips it
    where its mask is false (``if (mask) v = x[...]``, as nvcc writes a
    bounds check around one load), not predicated. ``bitfield_block``: the index written as Triton
    writes it for a block of that many threads (``.reqntid``; a power of
    two): ``ctaid << log2(block * V) | (tid << log2(V)) & (block * V - V) | j``,
    a bit field of ``tid.x`` that wraps at the row's end; else
    ``(ctaid * ntid + tid) * V + j``."""
    body: list[str] = [
        "ld.param.u64 %rd1, [x];",
        "ld.param.u64 %rd2, [z];",
        "ld.param.u32 %r1, [n];",
        "mov.u32 %r2, %ctaid.x;",
        "mov.u32 %r3, %ntid.x;",
        "mov.u32 %r4, %tid.x;",
    ]
    if bitfield_block is None:
        body += ["mad.lo.s32 %r5, %r2, %r3, %r4;", f"mul.lo.s32 %r6, %r5, {per_thread};"]
    else:
        tile = bitfield_block * per_thread
        body += [
            f"shl.b32 %r5, %r2, {tile.bit_length() - 1};",
            f"shl.b32 %r8, %r4, {per_thread.bit_length() - 1};",
            f"and.b32 %r9, %r8, {tile - per_thread};",
            "or.b32 %r6, %r5, %r9;",
        ]
    body += ["mov.b32 %r7, 0;", "mov.f32 %f0, 0f00000000;"]
    reg, pred, fsum = 10, 1, 1
    sums: list[tuple[str, str]] = []
    for j in range(per_thread):
        e = f"%r{reg}"
        combine = "add.s32" if bitfield_block is None else "or.b32"
        body += [f"{combine} {e}, %r6, {j};", f"mul.wide.s32 %rd3, {e}, 4;", "add.s64 %rd4, %rd1, %rd3;"]
        reg += 1
        total = "%f0"
        for tap in taps:
            load_at = f"[ %rd4 + {4 * (tap.offset + PAD)} ]"
            if tap.high is None:  # not masked: a plain load every thread runs
                v = f"%r{reg}"
                reg += 1
                body.append(f"ld.global.b32 {{ {v} }}, {load_at};")
            else:
                b, ok = f"%r{reg}", f"%p{pred}"
                body += [f"add.s32 {b}, {e}, {tap.high};", f"setp.lt.s32 {ok}, {b}, %r1;"]
                reg, pred = reg + 1, pred + 1
                if tap.low is not None:
                    a, lo, both = f"%r{reg}", f"%p{pred}", f"%p{pred + 1}"
                    body += [f"add.s32 {a}, {e}, {tap.low};", f"setp.ge.s32 {lo}, {a}, 0;"]
                    body.append(f"and.pred {both}, {lo}, {ok};")
                    reg, pred, ok = reg + 1, pred + 2, both
                guard, skip = f"@{ok}", f"@!{ok}"
                if tap.negated:
                    body.append(f"not.pred %p{pred}, {ok};")
                    guard, skip, pred = f"@!%p{pred}", f"@%p{pred}", pred + 1
                v = f"%r{reg}"
                reg += 1
                load = f"ld.global.b32 {{ {v} }}, {load_at};"
                body.append(f"mov.u32 {v}, %r7;")
                if branches:
                    body += [f"{skip} bra $SKIP{reg};", load, f"$SKIP{reg}:"]
                else:
                    body.append(f"{guard} {load}")
            sum_reg = f"%f{fsum}"
            body.append(f"add.f32 {sum_reg}, {total}, {v};")
            total, fsum = sum_reg, fsum + 1
        sums.append((e, total))
    # Triton stores after every load of the tile (a store between may alias x).
    for e, total in sums:
        body += [
            f"mul.wide.s32 %rd3, {e}, 4;",
            "add.s64 %rd5, %rd2, %rd3;",
            f"st.global.f32 [%rd5], {total};",
        ]
    shape = "" if bitfield_block is None else f".reqntid {bitfield_block}\n"
    return (
        ".version 8.7\n.target sm_90a\n.address_size 64\n\n"
        f".visible .entry masked(.param .u64 x, .param .u64 z, .param .u32 n)\n{shape}{{\n"
        f"    .reg .pred %p<{pred + 1}>;\n    .reg .b32 %r<{reg + 1}>;\n"
        f"    .reg .f32 %f<{fsum + 1}>;\n    .reg .b64 %rd<8>;\n"
        + "".join(f"    {line}\n" for line in body)
        + "    ret;\n}\n"
    )


taps_strategy = st.lists(
    st.builds(
        Tap,
        offset=st.integers(-3, 3),
        low=st.one_of(st.none(), st.integers(-3, 3)),
        high=st.one_of(st.none(), st.integers(-3, 3), st.integers(-3, 3)),
        negated=st.booleans(),
    ).map(lambda tap: tap if tap.high is not None else Tap(tap.offset, None, None, False)),
    min_size=2,
    max_size=5,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    taps=taps_strategy,
    per_thread=st.sampled_from([1, 2, 4]),
    block=st.sampled_from([8, 16, 32, 48, 64]),
    grid=st.integers(1, 2),
    cut=st.integers(-5, 5),
    seed=st.integers(0, 2**16),
    bitfield=st.booleans(),
    branches=st.booleans(),
)
def test_masked_rewrites_compute_the_same_bits(
    taps: list[Tap],
    per_thread: int,
    block: int,
    grid: int,
    cut: int,
    seed: int,
    bitfield: bool,
    branches: bool,
) -> None:
    assert_same_bits(taps, per_thread, block, grid, cut, seed, bitfield and block != 48, branches)


def assert_same_bits(
    taps: list[Tap],
    per_thread: int,
    block: int,
    grid: int,
    cut: int,
    seed: int,
    bitfield: bool = False,
    branches: bool = False,
) -> None:
    """Original and rewrite of the drawn kernel, launched alike, store the same bits
    (``bitfield``: the index in Triton's shape, for exactly this block;
    ``branches``: each load in a branch, see `kernel_text`)."""
    text = kernel_text(taps, per_thread, block if bitfield else None, branches)
    module = parse_ptx(text, "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    rewritten = print_module(module)
    elements = grid * block * per_thread
    n = np.int32(max(-5, min(elements + 5, elements // 2 + cut * 7)))
    x = np.random.default_rng(seed).standard_normal(elements + 2 * PAD + 4).astype(np.float32)
    outputs = []
    for source in (text, rewritten):
        z = np.zeros(elements, np.float32)
        launch(parse_ptx(source, "k.ptx"), "masked", grid, block, [x.copy(), z, n], strict=True)
        outputs.append(z)
    assert np.array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32)), rewritten


def test_the_drawn_kernels_do_get_rewritten() -> None:
    """The property above is no check if nothing is ever rewritten: a kernel
    of the drawn shape (a tile's element and its right neighbour, the
    neighbour's mask implying the element's) gets a reuse and a shuffle."""
    taps = [Tap(0, None, 0, False), Tap(1, None, 1, True)]
    module = parse_ptx(kernel_text(taps, 2), "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    deltas = sorted(v.delta for plan in synthesis.plans for v in plan.chosen)
    assert deltas == [0, 1], deltas


def test_tritons_bit_field_index_gets_its_shuffle() -> None:
    """The same taps with the index written as Triton writes it, a bit field
    of ``tid.x`` (`kernel_text`'s ``bitfield_block``): ``tid.x + 1``'s field
    wraps at the row's end, so the pair holds only where the shuffle's value
    is used (lane + 1 in the row); it is found there and the rewrite stores
    the same bits at launches whose mask cuts a warp."""
    taps = [Tap(0, None, 0, False), Tap(1, None, 1, True)]
    module = parse_ptx(kernel_text(taps, 2, 64), "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    deltas = sorted(v.delta for plan in synthesis.plans for v in plan.chosen)
    assert deltas == [0, 1], deltas
    for grid, cut in ((1, 0), (2, -3), (3, 4)):
        assert_same_bits(taps, 2, 64, grid, cut, seed=grid, bitfield=True)


def test_a_lower_bound_the_load_lacks_holds_for_a_tile_index() -> None:
    """The source ``x[e + 1]`` under ``0 <= e + 1 < n``, the load ``x[e']``
    (``e' = e + 1``, the next element of the tile) under ``e' < n`` only: the
    source ran wherever the load runs because ``e = (ctaid * ntid + tid) * V
    + j`` is not negative where the index arithmetic does not wrap (the
    product of coordinates is, the multiple of a sum distributes). Both
    needed facts the guard implication once dropped (it refused all three
    reuses); the rewrite stores the same bits at launches that cut warps."""
    taps = [Tap(0, None, 0, False), Tap(1, 1, 1, False)]
    module = parse_ptx(kernel_text(taps, 4), "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    deltas = sorted(v.delta for plan in synthesis.plans for v in plan.chosen)
    assert deltas == [0, 0, 0, 1], deltas
    for block, grid, cut in ((48, 1, 0), (8, 2, -3), (64, 2, 5)):
        assert_same_bits(taps, 4, block, grid, cut, seed=block)


def test_a_source_with_a_tighter_mask_is_still_refused() -> None:
    """Two elements of a tile, ``e`` and ``e' = e + 1``: ``x[e + 1]`` under
    ``0 <= e + 2 < n`` comes first, then ``x[e']`` under ``0 <= e' < n``
    loads the same address under a looser mask (``e + 1 < n``), which does
    not give the source's ``e + 2 < n``: no reuse, for all the facts the
    implication now knows. ``x[e' + 1]`` from the next thread's ``x[e]`` is
    found (its mask, ``e' + 2 < n``, gives the source's)."""
    found = [Tap(0, 0, 0, False), Tap(1, 2, 2, False)]
    module = parse_ptx(kernel_text(found, 2), "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    chosen = sorted(v.delta for plan in synthesis.plans for v in plan.chosen)
    reasons = [v.reason for plan in synthesis.plans for v in plan.verdicts if v.reason]
    assert chosen == [1], chosen
    assert any("source load is guarded" in r for r in reasons), reasons


def test_loads_in_branches_get_their_shuffles_above_the_branch() -> None:
    """The drawn shape with each masked load in a branch around it, beside
    an unmasked ``x[e]``: ``x[e + 1]`` (under ``e + 1 < n``) is the next
    thread's ``x[e]``, shuffled before the branch (where the warp has not
    split; `ptxasw.synth.codegen`), its fallback load there too; the next element's ``x[e' - 1]`` is
    ``x[e]`` again, a ``mov`` in its branch (the proof keeps that branch a
    branch, as the original's load kept it: `ptxasw.analysis.ifconvert`'s
    ``keep``). The rewrite stores the same bits at launches whose mask cuts
    a warp and a row."""
    taps = [Tap(0, None, None, False), Tap(1, None, 1, True), Tap(-1, 1, 0, False)]
    text = kernel_text(taps, 2, branches=True)
    module = parse_ptx(text, "masked.ptx")
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(module)
    deltas = sorted(v.delta for plan in synthesis.plans for v in plan.chosen)
    assert deltas == [0, 1], [v.reason for plan in synthesis.plans for v in plan.verdicts]
    lines = print_module(module).splitlines()
    shuffle = next(k for k, line in enumerate(lines) if "shfl.sync" in line)
    corner = max(k for k in range(shuffle) if "activemask" in lines[k])
    branch = next(k for k in range(shuffle, len(lines)) if "bra" in lines[k])
    # The corner test, the fallback load under the branch's condition, the
    # shuffle, then the branch.
    above = lines[corner:branch]
    assert not any(line.endswith(":") for line in above), above
    assert any("@%sw" in line and "ld.global" in line for line in above), above
    for block, grid, cut in ((48, 1, 0), (8, 2, -3), (32, 2, 5)):
        assert_same_bits(taps, 2, block, grid, cut, seed=block, branches=True)
