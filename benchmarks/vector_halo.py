"""Vectorised stencils: do the shuffles of a halo pay where the halo loads are strided?

Why: hand-vectorised CUDA (and Triton, Inductor) loads a thread's run of
elements with one ``float4``/``double2`` load and its halo, the elements on
either side that belong to the neighbouring lanes' vectors, with scalar (or
pair) loads. A warp's halo load touches 32 addresses 16 bytes apart: 512
bytes, four L1 wavefronts, as many as the warp's whole ``float4`` load, for a
quarter of the bytes. The suite's scalar stencils (issue 7's measurements)
pay one wavefront per load, which a shuffle's issue slot does not beat; here
a shuffle replaces four wavefronts. ptxasw finds these sources now that a
vector load's registers are elements (`ptxasw.synth.detect`).

Kernels (``SOURCE``; nvcc ``-O3 -arch=sm_90``, rows with a margin so no
bounds checks but the row's end): ``row4_rR``, a 1-D stencil of radius R =
1..4 along each row, a ``float4`` per thread and R floats of halo on each
side; ``row2_rR``, the same with a ``double2`` per thread, R = 1, 2;
``box4_rR``, a 2-D box of radius R = 1..3 (rows ``j - R .. j + R``, each a
``float4`` and its halo: more loads per output, the rows above and below
hits in L1); ``box2f_rR`` and ``box2_rR``, the box with a ``float2`` and a
``double2`` per thread, R = 1, 2. Each output is one ``fma`` chain over its points.

More boxes (``REFIT``, ``HELD_OUT``) take other halo radii and row counts
(``box4_r1x3``: radius 1, 7 rows): the cost model's first threshold was
checked on ``REFIT`` and failed there, was fitted again with it, and was
checked on ``HELD_OUT`` (`ptxasw.synth.cost.shuffle_pays`).

Variants: ``load`` (nvcc's PTX as it is), ``normal`` (ptxasw's proven rewrite,
every proven site kept: ``PTXASW_PROFIT=always``), ``noload`` (the paper's
ablation: no corner loads, wrong at warp edges: the headroom), ``model``
(what the drop-in emits by default on sm_90: the proven sites the cost model
keeps). ``normal`` and ``model`` are checked bit for bit against ``load`` on
the GPU; timing as `benchmarks.exact_scheme` (interleaved samples of >= 0.5
ms, median of ``--runs``), at an L2-resident size (2 x 8 MiB) and a
DRAM-bound one (2 x 512 MiB). At the L2 size a launch lasts 6-27 us, and a
kernel the model leaves alone differs from ``load`` by up to 3 %: noise.

Measured on an H100 (``results/vector_halo_h100.json``, every ``normal`` and
``model`` output bit-equal): ``model`` keeps the shuffles of 10 of the 26
kernels and gains 1.02-1.59 on them (the float4 boxes of halo radius 2-4,
the double2 boxes of radius 2); the other 16 it leaves as they are
(0.97-1.01), among them those where ``normal`` loses (a float2 box 0.92-0.97,
double2 rows and radius-1 boxes down to 0.90). Geometric means of ``model``
at L2 / DRAM: fitted 1.043 / 1.058, refitted 1.076 / 1.082, held out 1.162 /
1.172 (4 kept, gaining 1.08-1.36; 2 refused, where ``normal`` gives
1.01/1.01 and 0.95/0.90). On an H200 (``results/vector_halo_h200.json``, the
model fitted on the H100 only): ``model`` 1.02-1.66 on the 10 it rewrites,
0.98-1.01 on the rest, every output bit-equal.

Shapes neither fit saw (``SHAPES``, ``--sets shapes``; H100,
``results/vector_halo_shapes_h100.json``, every ``normal`` and ``model``
output bit-equal), L2 / DRAM:

* 3-D boxes (rows a plane apart): ``model`` keeps radius 2 and 3 and gains
  1.28-1.48 / 1.40-1.61; it leaves radius 1 (``normal`` 0.98 / 1.07).
* Halos behind bounds checks (``mbox``: each halo element in its own
  branch): every row is proven now that the prover moves a row number's
  extension inward (it proved the first row only). With the shuffle in the
  branch ``normal`` ran at 0.78-0.91 of ``load``; with the shuffle above
  the branch 0.99-1.07; with the fallback load above it too
  (`ptxasw.synth.codegen`; the recorded run) 1.03-1.27, and ``model``,
  which keeps them, the same (noload: 1.25-1.80).
* Arrays of structures (``aos``: a field of R particles either side, every
  load 16 bytes from its lane's neighbour's, no vector load): the screens
  count halos beside vectors only, so ``model`` leaves them; ``normal``
  0.98-1.00 L2 / 0.99-1.07 DRAM reading one field, 0.99-1.05 / 1.10-1.20
  reading two (``aosm``). Not taken: by the text an array of structures is
  scalar loads at offsets 16 bytes apart, as any struct's fields are, and a
  screen that passed those would send most files to Python.

Halos read under a test of the data (``GATED``, ``--sets gated``: the
halo of a float4 box of radius 2 read only where the row's first element
exceeds a threshold, by all, half or 0.13 % of threads; H100,
``results/vector_halo_gated_h100.json``), L2 / DRAM. ``normal`` runs the
shuffles above the branch; ``inbranch`` (an ablation) leaves each at its
load as the paper does:

* all read it: ``normal`` 1.14 / 1.19, ``inbranch`` 1.05 / 1.21;
* half (every warp split): ``normal`` 1.11 / 1.13, ``inbranch`` 0.90 / 1.04;
* 0.13 % (4 % of warps): ``normal`` 0.92 / 1.00, ``inbranch`` 0.89 / 0.99.

How often a test of the data holds is the input's, so ``model`` leaves
these loads (`ptxasw.analysis.gating`; 1.00-1.01 in the recorded run);
``ptxasw tune`` measures them. A first run, with the model keeping them,
gave the same within 0.015. ``ptxasw tune`` on the three boxes (inputs
uniform in [0, 1): the first two read their halo everywhere, the rare one
nowhere; ``results/tune_gated_h100.json``) kept the shuffles of the first
two (1.18) and the loads of the third (0.89), and the drop-in built the
file with those verdicts (SHFL in the SASS of the first two only).

Two phases, as the GPU machine lacks the analysis's dependencies::

    python benchmarks/vector_halo.py --prepare DIR [--sets S]  # here: nvcc, ptxasw
    python benchmarks/vector_halo.py --run DIR [--json OUT]  # GPU: ptxas, CuPy
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class Kernel(NamedTuple):
    """One instantiated kernel: its symbol, element type, the elements a
    thread's vector holds (a particle's four floats), halo radius R, rows
    either side and planes either side (``ZR``); ``mask``: the halo is bounds
    checked; ``fields``: particles only, the fields read per particle."""

    symbol: str
    kind: str
    per_thread: int
    radius: int
    rows: int
    planes: int = 0
    mask: bool = False
    form: str = "box"  # "box" (`shaped`), "particles" or "gated"
    fields: int = 1
    gate: int = 0  # "gated": the halo is read where the thread's first element exceeds gate / 100

    def instance(self) -> str:
        """The kernel's line in the CUDA source."""
        if self.form == "particles":
            return f"KP({self.symbol}, {self.radius}, {self.fields})\n"
        if self.form == "gated":
            return f"KG({self.symbol}, {self.radius}, {self.rows}, {self.gate})\n"
        if self.planes or self.mask:
            mask = "true" if self.mask else "false"
            args = f"{self.per_thread}, {self.radius}, {self.rows}, {self.planes}, {mask}"
            return f"KS({self.symbol}, {self.kind}, {args})\n"
        return f"K({self.symbol}, {self.kind}, {self.per_thread}, {self.radius}, {self.rows})\n"


KERNELS = [
    *(Kernel(f"row4_r{r}", "float", 4, r, 0) for r in (1, 2, 3, 4)),
    *(Kernel(f"row2_r{r}", "double", 2, r, 0) for r in (1, 2)),
    *(Kernel(f"box4_r{r}", "float", 4, r, r) for r in (1, 2, 3)),
    *(Kernel(f"box2f_r{r}", "float", 2, r, r) for r in (1, 2)),
    *(Kernel(f"box2_r{r}", "double", 2, r, r) for r in (1, 2)),
]
# Held out of the cost model's first fit (`ptxasw.synth.cost.shuffle_pays`),
# boxes whose halo radius and row count differ: the first threshold kept
# the radius-1 boxes of 7 rows, which lost; the model was fitted again with them.
REFIT = [
    Kernel("box4_r1x2", "float", 4, 1, 2),
    Kernel("box4_r2x1", "float", 4, 2, 1),
    Kernel("box4_r1x3", "float", 4, 1, 3),
    Kernel("box4_r3x1", "float", 4, 3, 1),
    Kernel("box4_r4x2", "float", 4, 4, 2),
    Kernel("box2_r1x3", "double", 2, 1, 3),
    Kernel("box2_r2x1", "double", 2, 2, 1),
]
# Held out of both fits: the check of the model as it stands.
HELD_OUT = [
    Kernel("box4_r2x3", "float", 4, 2, 3),
    Kernel("box4_r3x2", "float", 4, 3, 2),
    Kernel("box4_r4x1", "float", 4, 4, 1),
    Kernel("box4_r1x4", "float", 4, 1, 4),
    Kernel("box2_r2x3", "double", 2, 2, 3),
    Kernel("box2_r1x2", "double", 2, 1, 2),
]
# Shapes the model never saw (neither fit): halos behind bounds checks (nvcc
# branches around each halo load), 3-D boxes (rows a plane apart) and arrays of structures
# (every load strided: no dense load brings the lines in).
SHAPES = [
    Kernel("mrow4_r2", "float", 4, 2, 0, mask=True),
    Kernel("mbox4_r2", "float", 4, 2, 2, mask=True),
    Kernel("mbox4_r3", "float", 4, 3, 3, mask=True),
    Kernel("mbox2_r2", "double", 2, 2, 2, mask=True),
    Kernel("cube4_r1", "float", 4, 1, 1, planes=1),
    Kernel("cube4_r2", "float", 4, 2, 1, planes=1),
    Kernel("cube4_r3", "float", 4, 3, 1, planes=1),
    Kernel("aos_r1", "float", 4, 1, 0, form="particles"),
    Kernel("aos_r2", "float", 4, 2, 0, form="particles"),
    Kernel("aos_r4", "float", 4, 4, 0, form="particles"),
    Kernel("aosm_r2", "float", 4, 2, 0, form="particles", fields=2),
    Kernel("aosm_r3", "float", 4, 3, 0, form="particles", fields=2),
]
# Halos read under a branch on the data (a limiter that looks at its
# neighbours only where the value is large): the shuffle, hoisted above the
# branch, runs in every thread; the loads ran only where the branch is taken.
# Inputs are standard normal: a gate of 300 lets 0.13 % of threads (4 % of
# warps) in, 0 half of them (every warp split), -1000 all.
GATED = [
    Kernel("gbox4_all", "float", 4, 2, 2, form="gated", gate=-1000),
    Kernel("gbox4_half", "float", 4, 2, 2, form="gated", gate=0),
    Kernel("gbox4_rare", "float", 4, 2, 2, form="gated", gate=300),
    Kernel("grow4_rare", "float", 4, 3, 0, form="gated", gate=300),
]
ALL = KERNELS + REFIT + HELD_OUT + SHAPES + GATED
SETS = {"fit": KERNELS, "refit": REFIT, "held_out": HELD_OUT, "shapes": SHAPES, "gated": GATED}
# ``model``: what the drop-in emits by default on sm_90 (the cost model keeps the sites that pay).
# ``inbranch``: ``normal`` with each shuffle at its load, not above its branch.
VARIANTS = ("load", "normal", "noload", "model", "inbranch")
BLOCK = 128
# Rows of the two sizes: (floats per row, rows). L2: 2 arrays x 8 MiB; DRAM: 2 x 512 MiB.
SIZES = {"l2": (4096, 512), "dram": (16384, 8192)}
MARGIN = 4  # elements before and after each row (the halo of the first and last vector)

SOURCE = r"""
template <typename T, int V> struct Vec;
template <> struct Vec<float, 4> { using type = float4; };
template <> struct Vec<float, 2> { using type = float2; };
template <> struct Vec<double, 2> { using type = double2; };

// Rows j - ROWS .. j + ROWS, each a vector of V elements per thread and its
// halo, R elements on either side (the neighbouring lanes' vectors: R <= V);
// with MASK, bounds on the halo (as Triton's and bounds-checked code writes
// it: an element past the row's ends reads as zero); with ZR, a 3-D box: rows
// j + r + PLANE * s, s = -ZR .. ZR, a plane of PLANE rows.
template <typename T, int V, int R, int ROWS, int ZR, bool MASK>
__device__ __forceinline__ void shaped(const T *__restrict__ x, T *__restrict__ y, int nv, int pitch) {
    using VT = typename Vec<T, V>::type;
    const int PLANE = 16;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y + ROWS + PLANE * ZR;
    if (i >= nv || j + ROWS + PLANE * ZR >= gridDim.y) return;
    T o[V];
#pragma unroll
    for (int e = 0; e < V; ++e) o[e] = T(0);
#pragma unroll
    for (int s = -ZR; s <= ZR; ++s)
#pragma unroll
    for (int r = -ROWS; r <= ROWS; ++r) {
        const T *row = x + (size_t)(j + r + PLANE * s) * pitch + 4;
        VT c = reinterpret_cast<const VT *>(row)[i];
        const T *cv = reinterpret_cast<const T *>(&c);
        T v[V + 2 * R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            int left = V * i - R + k, right = V * i + V + k;
            v[k] = !MASK || left >= 0 ? row[left] : T(0);
            v[R + V + k] = !MASK || right < V * nv ? row[right] : T(0);
        }
#pragma unroll
        for (int e = 0; e < V; ++e) v[R + e] = cv[e];
#pragma unroll
        for (int e = 0; e < V; ++e)
#pragma unroll
            for (int d = 0; d <= 2 * R; ++d) o[e] = fma(T(1) / T(d + r + s + ROWS + 2), v[e + d], o[e]);
    }
    VT out;
    T *ov = reinterpret_cast<T *>(&out);
#pragma unroll
    for (int e = 0; e < V; ++e) ov[e] = o[e];
    reinterpret_cast<VT *>(y + (size_t)j * pitch + 4)[i] = out;
}

// An array of structures: particle i of row j is four floats at x + j * pitch + 4 * i.
// A thread reads FIELDS of its fields (x; x and m) from the R particles either side
// and its own, each a scalar load 16 bytes from its lane's neighbour's, and writes a
// float per particle. The last 2R particles of a row have no output.
struct Particle { float x, y, z, m; };

template <int R, int FIELDS>
__device__ __forceinline__ void particles(const float *__restrict__ x, float *__restrict__ y, int nv,
                                          int pitch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y;
    if (i + 2 * R >= nv) return;
    const Particle *row = reinterpret_cast<const Particle *>(x + (size_t)j * pitch) + R;
    float o = 0.f;
#pragma unroll
    for (int d = -R; d <= R; ++d) {
        float w = FIELDS == 2 ? row[i + d].m : 1.f / float(d + R + 2);
        o = fma(w, row[i + d].x, o);
    }
    y[(size_t)j * pitch + 4 + i] = o;
}

// A box of float4s whose halo is read only where the thread's first element
// of the row exceeds G / 100 (a limiter's test): the halo loads sit in a
// branch on the data, the centre's vector load above it.
template <int R, int ROWS, int G>
__device__ __forceinline__ void gated(const float *__restrict__ x, float *__restrict__ y, int nv, int pitch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y + ROWS;
    if (i >= nv || j + ROWS >= gridDim.y) return;
    float o[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int r = -ROWS; r <= ROWS; ++r) {
        const float *row = x + (size_t)(j + r) * pitch + 4;
        float4 c = reinterpret_cast<const float4 *>(row)[i];
        const float *cv = reinterpret_cast<const float *>(&c);
#pragma unroll
        for (int e = 0; e < 4; ++e) o[e] = fma(1.f / float(r + ROWS + 2), cv[e], o[e]);
        if (cv[0] > float(G) / 100.f) {
            float v[4 + 2 * R];
#pragma unroll
            for (int k = 0; k < R; ++k) {
                v[k] = row[4 * i - R + k];
                v[R + 4 + k] = row[4 * i + 4 + k];
            }
#pragma unroll
            for (int e = 0; e < 4; ++e) v[R + e] = cv[e];
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int d = 0; d <= 2 * R; ++d) o[e] = fma(1.f / float(d + r + ROWS + 3), v[e + d], o[e]);
        }
    }
    reinterpret_cast<float4 *>(y + (size_t)j * pitch + 4)[i] = make_float4(o[0], o[1], o[2], o[3]);
}

#define K(NAME, T, V, R, ROWS) extern "C" __global__ void NAME(const T *__restrict__ x, T *__restrict__ y, \
    int nv, int pitch) { shaped<T, V, R, ROWS, 0, false>(x, y, nv, pitch); }
#define KS(NAME, T, V, R, ROWS, ZR, MASK) extern "C" __global__ void NAME(const T *__restrict__ x, \
    T *__restrict__ y, int nv, int pitch) { shaped<T, V, R, ROWS, ZR, MASK>(x, y, nv, pitch); }
#define KP(NAME, R, FIELDS) extern "C" __global__ void NAME(const float *__restrict__ x, \
    float *__restrict__ y, int nv, int pitch) { particles<R, FIELDS>(x, y, nv, pitch); }
#define KG(NAME, R, ROWS, G) extern "C" __global__ void NAME(const float *__restrict__ x, \
    float *__restrict__ y, int nv, int pitch) { gated<R, ROWS, G>(x, y, nv, pitch); }
"""


def source() -> str:
    """``SOURCE`` with every kernel of `ALL` instantiated."""
    return SOURCE + "".join(kernel.instance() for kernel in ALL)


# ---- phase 1: nvcc and ptxasw (no GPU) ----------------------------------------------------------


def prepare(folder: Path, sets: list[str]) -> int:
    from ptxasw.ir.printer import print_module
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("vector_halo: error: nvcc not found on PATH", file=sys.stderr)
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vector_halo.cu").write_text(source())
    original = folder / "load.ptx"
    subprocess.run(
        [nvcc, "-O3", "-arch=sm_90", "-ptx", str(folder / "vector_halo.cu"), "-o", str(original)], check=True
    )
    text = original.read_text()
    manifest: dict[str, Any] = {"kernels": {}}
    for variant in VARIANTS[1:]:
        mode = variant if variant in ("normal", "noload") else "normal"
        profit = "model" if variant == "model" else "always"
        module = parse_ptx(text, str(original))
        chosen = {k.symbol for name in sets for k in SETS[name]}
        synthesis = ShuffleSynthesisPass(Options(mode=mode, profit=profit, arch="sm_90"), kernels=chosen)
        with _shuffles_at_their_loads(variant == "inbranch"):
            synthesis.run(module)
        (folder / f"{variant}.ptx").write_text(print_module(module))
        for plan in synthesis.plans:
            entry = manifest["kernels"].setdefault(plan.kernel, {})
            entry[variant] = {
                "loads": plan.global_loads,
                "rewritten": len(plan.chosen),
                "deltas": sorted(v.delta for v in plan.chosen),
                "proved": all(v.proof == "proved" for v in plan.chosen),
            }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for name, entry in manifest["kernels"].items():
        normal, model = entry["normal"], entry.get("model", {"rewritten": 0})
        proven = f"{normal['rewritten']} of {normal['loads']} loads proven"
        print(f"{name}: {proven}, {model['rewritten']} kept by the model")
    return 0


@contextmanager
def _shuffles_at_their_loads(ablate: bool) -> Iterator[None]:
    """The ``inbranch`` ablation: every shuffle at its load, none hoisted
    above its load's branch (`ptxasw.synth.codegen`), as the paper places it."""
    if not ablate:
        yield
        return
    from unittest import mock

    from ptxasw.synth import codegen

    with mock.patch.object(codegen._Generator, "_hoist_point", lambda self, source, load: None):
        yield


# ---- phase 2: ptxas and the GPU -----------------------------------------------------------------


def _assemble(folder: Path, variant: str) -> tuple[Path, dict[str, int]]:
    """The variant's cubin and the registers of each kernel (``ptxas -v``)."""
    cubin = folder / f"{variant}.cubin"
    done = subprocess.run(
        ["ptxas", "-arch=sm_90", "-v", str(folder / f"{variant}.ptx"), "-o", str(cubin)],
        check=True,
        capture_output=True,
        text=True,
    )
    registers: dict[str, int] = {}
    current = None
    for line in done.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            registers[current] = int(m.group(1))
    return cubin, registers


def run(folder: Path, runs: int, out: Path | None, sets: list[str]) -> int:
    try:
        import cupy as cp
        import numpy as np
    except ImportError as exc:
        print(f"vector_halo: error: needs CuPy and a GPU ({exc})", file=sys.stderr)
        return 1
    from benchmarks.exact_scheme import _measure

    manifest = json.loads((folder / "manifest.json").read_text())
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    modules, registers = {}, {}
    for variant in VARIANTS:
        cubin, registers[variant] = _assemble(folder, variant)
        modules[variant] = cp.RawModule(path=str(cubin))
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(11)
    chosen = [k for name in sets for k in SETS[name]]
    for kernel in chosen:
        symbol = kernel.symbol
        dtype = np.float32 if kernel.kind == "float" else np.float64
        for size, (width, height) in SIZES.items():
            pitch = width + 2 * MARGIN
            host = rng.standard_normal(pitch * height).astype(dtype)
            x = cp.asarray(host)
            del host
            outs = {v: cp.zeros(pitch * height, dtype=dtype) for v in VARIANTS}
            vectors = width // kernel.per_thread
            grid = ((vectors + BLOCK - 1) // BLOCK, height)
            launches = {
                v: (
                    modules[v].get_function(symbol),
                    grid,
                    (BLOCK,),
                    (x, outs[v], np.int32(vectors), np.int32(pitch)),
                )
                for v in VARIANTS
            }
            entry = manifest["kernels"].get(symbol, {})
            fields = {
                "kernel": symbol,
                "radius": kernel.radius,
                "rows": (2 * kernel.rows + 1) * (2 * kernel.planes + 1),
                "form": kernel.form + (" masked" if kernel.mask else ""),
                "size": size,
                "set": next(name for name, group in SETS.items() if kernel in group),
                "rewritten": entry.get("normal", {}).get("rewritten"),
                "kept_by_model": entry.get("model", {}).get("rewritten"),
                "loads": entry.get("normal", {}).get("loads"),
            }
            label = f"{symbol:9} {size:4} (model keeps {fields['kept_by_model']})"
            found = _measure(
                cp, np, launches, outs, ("normal", "model", "inbranch"), runs, fields, label, True
            )
            for row in found:
                row["registers"] = registers[row["variant"]].get(symbol)
            rows += found
            del x, outs
            cp.get_default_memory_pool().free_all_blocks()
    print(f"{device}; speed-up over load (median of {runs}); * = wrong at warp edges")
    if out is not None:
        out.write_text(json.dumps({"device": device, "runs": runs, "rows": rows}, indent=1))
    return 0 if all(r["exact"] for r in rows if r["variant"] in ("normal", "model", "inbranch")) else 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    phase = ap.add_mutually_exclusive_group(required=True)
    phase.add_argument("--prepare", type=Path, metavar="DIR", help="nvcc and ptxasw: the variants' PTX")
    phase.add_argument("--run", type=Path, metavar="DIR", help="on the GPU: check and time DIR's variants")
    ap.add_argument("--runs", type=int, default=31, help="--run: timed samples per variant")
    ap.add_argument("--json", type=Path, help="--run: write the rows here")
    ap.add_argument(
        "--sets", default=",".join(SETS), help=f"which kernels, comma-separated of {', '.join(SETS)}"
    )
    opts = ap.parse_args(argv)
    sets = [name for name in opts.sets.split(",") if name]
    unknown = [name for name in sets if name not in SETS]
    if unknown:
        ap.error(f"--sets: unknown {', '.join(unknown)} (known: {', '.join(SETS)})")
    if opts.prepare is not None:
        return prepare(opts.prepare, sets)
    return run(opts.run, opts.runs, opts.json, sets)


if __name__ == "__main__":
    raise SystemExit(main())
