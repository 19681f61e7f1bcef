"""Predicated loads (``@%p ld``) as sources and targets of the synthesis.

Triton writes every masked load as ``mov`` of the masked-off value and a
predicated load into a one-element vector, and LLVM cannot merge the loads
of its inline assembly, so a tile's neighbours are loaded again under other
masks. A source counts where lane ``laneid + N``'s predicate holds wherever
the load runs; the rewrite keeps the load's predicate (`ptxasw.synth.codegen`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ptxasw import ir
from ptxasw.cli import main as cli
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options, Status, detect_kernel
from ptxasw.synth.prove import PROVED
from ptxasw.synth.solver import NO_WRAP
from ptxasw.synth.synthesize import ShuffleSynthesisPass
from tests.cubin import differing_sections

TRITON = Path(__file__).parent / "corpus" / "triton"

# One element per thread, e = ctaid.x * ntid.x + tid.x, Triton's shape of masked loads:
#   A  x[e]    where e < n                    the source
#   B  x[e]    where 0 < e < n - 1            A's value (N = 0): inside implies e < n
#   C  x[e+1]  where 0 < e < n - 1            lane + 1's A: e < n - 1 gives e + 1 < n
#   D  x[e+1]  where e < n                    lane + 1 may not have loaded (e = n - 1)
#   E  x[e-1]  unless e <= 0 or e >= n - 1    lane - 1's A, under a negated predicate
MASKED = """
.version 8.7
.target sm_90a
.address_size 64

.visible .entry masked(.param .u64 x, .param .u64 z, .param .u32 n)
{
    .reg .pred %p<8>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<9>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [z];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    add.s32 %r6, %r1, -1;
    setp.lt.s32 %p1, %r5, %r1;
    setp.gt.s32 %p2, %r5, 0;
    setp.lt.s32 %p3, %r5, %r6;
    and.pred %p4, %p2, %p3;
    not.pred %p5, %p4;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd4, 4;
    add.s64 %rd7, %rd4, -4;
    mov.b32 %r7, 0;
    mov.u32 %r10, %r7;
    @%p1 ld.global.b32 { %r10 }, [ %rd4 + 0 ];
    mov.u32 %r11, %r7;
    @%p4 ld.global.b32 { %r11 }, [ %rd4 + 0 ];
    mov.u32 %r12, %r7;
    @%p4 ld.global.b32 { %r12 }, [ %rd5 + 0 ];
    mov.u32 %r13, %r7;
    @%p1 ld.global.b32 { %r13 }, [ %rd5 + 0 ];
    mov.u32 %r14, %r7;
    @!%p5 ld.global.b32 { %r14 }, [ %rd7 + 0 ];
    add.f32 %r15, %r10, %r11;
    add.f32 %r16, %r15, %r12;
    add.f32 %r17, %r16, %r13;
    add.f32 %r18, %r17, %r14;
    add.s64 %rd6, %rd2, %rd3;
    @%p1 st.global.b32 [ %rd6 + 0 ], %r18;
    ret;
}
"""


def _verdicts() -> dict[str, object]:
    mod = parse_ptx(MASKED, "masked.ptx")
    plan = detect_kernel(mod, mod.function("masked"), Options())
    names = "ABCDE"
    return {names[k]: v for k, v in enumerate(v for v in plan.verdicts if v.in_kernel)}


def test_a_predicated_load_takes_a_source_whose_predicate_its_own_implies() -> None:
    v = _verdicts()
    assert v["A"].status is Status.BLOCKED
    assert v["B"].status is Status.REUSE and v["B"].source is v["A"].load
    assert v["C"].status is Status.SHUFFLE and v["C"].delta == 1 and v["C"].source is v["A"].load
    assert v["E"].status is Status.SHUFFLE and v["E"].delta == -1 and v["E"].source is v["A"].load
    # Both need n - 1 not to wrap: at n = INT_MIN, 0 < e < n - 1 holds and e < n does not.
    assert NO_WRAP in v["B"].assumptions and NO_WRAP in v["C"].assumptions


def test_a_source_lane_whose_predicate_may_be_false_is_refused() -> None:
    """D runs where e < n; at e = n - 1 lane + 1 did not load (its e is n)."""
    d = _verdicts()["D"]
    assert d.status is Status.BLOCKED
    assert d.reason == "divergent flow (the source load is guarded)"


def _rewrite(text: str, name: str) -> tuple[str, list]:
    mod = parse_ptx(text, name)
    synthesis = ShuffleSynthesisPass(Options())
    synthesis.run(mod)
    chosen = [v for plan in synthesis.plans for v in plan.chosen]
    return print_module(mod), chosen


def test_the_rewrite_keeps_the_predicate_and_is_proven() -> None:
    text, chosen = _rewrite(MASKED, "masked.ptx")
    assert len(chosen) == 3 and all(v.proof == PROVED for v in chosen)
    # The value is made in every lane (shfl.sync is collective) and moved under
    # the load's own predicate; the fallback loads only where that predicate holds.
    assert "@%p4 mov" in text and "@!%p5 mov" in text
    assert "not.pred" in text and text.count("and.pred") == 3  # the kernel's own, and two fallbacks


def _run(path: Path, x: np.ndarray, n: int, grid: int, block: int, where: Path) -> np.ndarray:
    where.mkdir()
    np.save(where / "x.npy", x)
    args = ["run", str(path), "--kernel", "masked", "--grid", str(grid), "--block", str(block)]
    args += ["--arg", str(where / "x.npy"), "--arg", f"zeros:f32:{x.size}@out", "--arg", f"i32:{n}"]
    result = CliRunner().invoke(cli, [*args, "-o", str(where)])
    assert result.exit_code == 0, result.output
    return np.load(where / "arg1.npy")


@pytest.mark.parametrize(("n", "grid", "block"), [(37, 2, 32), (100, 3, 48), (5, 1, 8), (64, 4, 16)])
def test_the_rewrite_computes_the_same_bits(tmp_path: Path, n: int, grid: int, block: int) -> None:
    text, _ = _rewrite(MASKED, "masked.ptx")
    rewritten = tmp_path / "rewritten.ptx"
    rewritten.write_text(text)
    original = tmp_path / "masked.ptx"
    original.write_text(MASKED)
    x = np.random.default_rng(n).standard_normal(grid * block + 1).astype(np.float32)
    before = _run(original, x, n, grid, block, tmp_path / "before")
    after = _run(rewritten, x, n, grid, block, tmp_path / "after")
    assert np.array_equal(before.view(np.uint32), after.view(np.uint32))


def test_tritons_stencils_reuse_their_masked_loads() -> None:
    """Triton's own PTX (`tests/corpus/triton/README.md`): the loads of one
    tile that the masks of the other taps load again become register reuses;
    stencil3's right tap past the thread's four elements is the next
    thread's first, a shuffle (N = +1). Triton writes the tile's index as a
    bit field of ``tid.x`` (``shl``, ``or``), which wraps at the row's end:
    the pair holds where the shuffle's value is used, inside the row."""
    for name, reused, shuffled in (("stencil3", 3, [1]), ("stencil9", 11, [])):
        _, chosen = _rewrite((TRITON / f"{name}.ptx").read_text(), f"{name}.ptx")
        assert all(v.proof == PROVED for v in chosen), name
        assert sum(v.status is Status.REUSE for v in chosen) == reused, name
        assert sorted(v.delta for v in chosen if v.status is not Status.REUSE) == shuffled, name


@pytest.mark.parametrize("name", ["stencil3", "stencil9"])
def test_tritons_stencil_rewrite_computes_the_same_bits(name: str, tmp_path: Path) -> None:
    """Three blocks of 128 threads over 1,037 elements: the last block's
    mask cuts a warp, and the rows' ends are where the shifted index wraps."""
    text, _ = _rewrite((TRITON / f"{name}.ptx").read_text(), f"{name}.ptx")
    (tmp_path / "rw.ptx").write_text(text)
    x = np.random.default_rng(9).standard_normal(1600).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outputs = []
    for k, path in enumerate((TRITON / f"{name}.ptx", tmp_path / "rw.ptx")):
        where = tmp_path / f"run{k}"
        where.mkdir()
        args = ["run", str(path), "--kernel", name, "--grid", "3", "--block", "128"]
        args += ["--arg", str(tmp_path / "x.npy"), "--arg", "zeros:f32:1600@out", "--arg", "i32:1037"]
        args += ["--arg", "zeros:u8:8", "--arg", "zeros:u8:8", "-o", str(where)]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        outputs.append(np.load(where / "arg1.npy"))
    assert np.count_nonzero(outputs[0]) > 1000
    assert np.array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")
@pytest.mark.parametrize("name", sorted(str(p.relative_to(TRITON)) for p in TRITON.rglob("*.ptx")))
def test_tritons_ptx_round_trips_and_its_rewrite_assembles(name: str, tmp_path: Path) -> None:
    """Triton's PTX, ours and what torch.compile (Inductor) generated (`inductor/`)."""
    source = TRITON / name
    printed = tmp_path / "printed.ptx"
    printed.write_text(print_module(parse_ptx(source.read_text(), source.name)))
    rewritten = tmp_path / "rewritten.ptx"
    rewritten.write_text(_rewrite(source.read_text(), source.name)[0])
    cubins = []
    for k, path in enumerate((source, printed, rewritten)):
        out = tmp_path / f"{k}.cubin"
        subprocess.run(["ptxas", "-arch=sm_90a", "-lineinfo", str(path), "-o", str(out)], check=True)
        cubins.append(out.read_bytes())
    assert differing_sections(cubins[0], cubins[1]) == []


def test_the_reuse_screen_wants_an_address_loaded_again_under_a_mask() -> None:
    """Where no shuffle pays, the drop-in analyses a kernel for reuses only
    if it loads an address again under a predicate (`repeats_a_masked_load`)."""
    from ptxasw.synth.cost import repeats_a_masked_load

    masked = parse_ptx(MASKED, "masked.ptx").function("masked")
    assert repeats_a_masked_load(masked)
    unmasked = MASKED.replace("@%p4 ld", "ld").replace("@%p1 ld", "ld").replace("@!%p5 ld", "ld")
    assert not repeats_a_masked_load(parse_ptx(unmasked, "unmasked.ptx").function("masked"))
    blur = parse_ptx((TRITON / "blur2d.ptx").read_text(), "blur2d.ptx")
    assert not repeats_a_masked_load(blur.function("blur2d"))  # every tap has its own register


# What torch.compile (Inductor) generated, as `benchmarks/inductor_dropin.py` keeps it:
# the sites every proven rewrite keeps, per file.
INDUCTOR_SITES = {
    "triton_per_fused__softmax_amax_mul_sub_0.ptx": [],
    "triton_per_fused_add_div_expand_mul_native_layer_norm_native_layer_norm_backward_pow_2.ptx": [0] * 24,
    "triton_per_fused_cummax_cumsum_0.ptx": [],
    "triton_poi_fused_add_mul_slice_sub_0.ptx": [-1] * 4 + [0] * 8,
    "triton_poi_fused_avg_pool2d_0.ptx": [0, 0, 0, 1, 1, 1],
    "triton_poi_fused_max_pool2d_with_indices_0.ptx": [0],
}


def test_inductors_kernels_get_their_reuses_and_shuffles() -> None:
    """The layer-norm backward of a training step loads each row's values
    again under the same masks (24 reuses); the 3x3 average pool loads each
    row's middle and right taps as a ``.v2`` and again one by one: the
    middle is its own (3 reuses of an element), the right the next lane's
    (3 shuffles of an element); the slice stencil loads 8 of its 16
    addresses again (scalar loads of a ``.v2``'s element, ``.v2`` loads of
    an earlier identical one) and 4 are the previous lane's (a scalar from
    an element, a ``.v2`` from a whole ``.v2``); the max pool loads one tap
    twice (a reuse, whose linear equality needs more solver effort than
    detection first spends: asked again with the proof's effort, the answer
    no longer depends on what the process analysed before); the rest keep
    their loads (deltas of a row, 64 and more). The order of the files
    is the one that once flipped the max pool's reuse."""
    folder = TRITON / "inductor"
    assert sorted(p.name for p in folder.glob("*.ptx")) == sorted(INDUCTOR_SITES)
    for name, sites in INDUCTOR_SITES.items():
        _, chosen = _rewrite((folder / name).read_text(), name)
        assert sorted(v.delta for v in chosen) == sites, name
        assert all(v.proof == PROVED for v in chosen), name


@pytest.mark.parametrize(
    ("name", "grid", "block", "ints"),
    [
        ("triton_poi_fused_avg_pool2d_0.ptx", 3, 256, [1000]),
        ("triton_poi_fused_add_mul_slice_sub_0.ptx", 3, 128, [1048574]),
        (
            "triton_per_fused_add_div_expand_mul_native_layer_norm_native_layer_norm_backward_pow_2.ptx",
            2,
            32,
            [2048, 256],
        ),
    ],
)
def test_inductors_rewrites_compute_the_same_bits(name: str, grid: int, block: int, ints: list[int]) -> None:
    """Every pointer a buffer of random floats, the sizes as given; original
    and rewrite launched alike in the reference interpreter write the same
    bits into every buffer."""
    from ptxasw.emulator.concrete.interpreter import launch

    text = (TRITON / "inductor" / name).read_text()
    rewritten, chosen = _rewrite(text, name)
    assert chosen
    kernel = next(f for f in parse_ptx(text, name).items if isinstance(f, ir.Function) and f.kind == ".entry")
    rng = np.random.default_rng(1)
    sizes = iter(ints)
    proto = [
        rng.standard_normal(2048 * 256 + 1024).astype(np.float32)
        if p.type == ".u64"
        else np.uint32(next(sizes))
        for p in kernel.params
    ]
    written = []
    for source in (text, rewritten):
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in proto]
        launch(parse_ptx(source, name), kernel.name, grid, block, args, strict=True)
        written.append([a for a in args if isinstance(a, np.ndarray)])
    before = [a for a in proto if isinstance(a, np.ndarray)]
    assert any(not np.array_equal(a, b) for a, b in zip(written[0], before, strict=True))
    for a, b in zip(*written, strict=True):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), name
