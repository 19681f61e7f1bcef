"""Issue 7's open problem, measured: can an exact shuffle scheme beat plain loads?

Usage (on a GPU machine with CuPy)::

    python benchmarks/exact_scheme.py [--json OUT] [--radii 2,4,6,8,12] [--runs 31]
    python benchmarks/exact_scheme.py --shape box [--radii 1,2,3] [--json OUT]

A 1-D stencil ``out[i] = sum_d c[d] * in[i + d]`` (``d = -R..R``; the input
padded by ``R`` on both sides, so no bounds checks), one warp per 32
consecutive outputs, in float and double, five ways:

``load``      every point a global load (what nvcc emits);
``paper``     the PTXASW code: the centre loaded, every other point a
              ``shfl.up/down`` of it, the lanes past the warp's edge loading
              the point themselves (exact);
``nocorner``  the same shuffles without the edge loads (wrong at warp edges:
              the headroom the paper's ablation shows);
``window``    exact, two loads per row: ``w0 = in[x]`` and, for the first
              ``2R`` lanes only, ``w1 = in[x + 32]``; point ``d`` of lane ``L``
              is element ``L + d + R`` of the 64-wide window, which lane
              ``s = (L + d + R) mod 32`` holds in ``w1`` when ``s < d + R`` and
              in ``w0`` otherwise: one select at the source and one ``idx``
              shuffle per point, no per-point fix-up load;
``window2``   the same window read with two shuffles (``down`` of ``w0``,
              ``up`` of ``w1``) and a select at the destination.

Every variant sums in the same order with the same ``fma`` chain, so the
exact ones must equal ``load`` bit for bit (checked; ``nocorner`` is reported
with its number of wrong elements). Timing: CUDA events around ``reps``
back-to-back launches (a sample of >= 0.5 ms), the median of ``--runs``
samples after warm-up, variants interleaved; sizes L2-resident (2^20
outputs) and DRAM-bound (2^26). The model of issue 7 (a shuffle ~0.78 of a
warp load, a predicated load ~0.75, an ALU op ~0.06) predicts ``window`` at
``(2R + 1) / (1.75 + 2R * 0.84)``: 1.03 at R = 4, 1.07 at R = 6, 1.10 at
R = 8, 1.13 at R = 12 for float; double needs two shuffles per point and
cannot win.

Measured on an H100 (``--shape box --radii 1,2,3``, median of 31,
``results/exact_scheme_box_h100.json``): the vector window loses everywhere
(float 0.69-0.98, double 0.85-1.03) while the shuffles without corner
handling gain 1.17-1.21 on float R = 2, 3. A 16-byte vector load of a warp
moves four times the bytes of a scalar one (four L1 wavefronts): overlapping
vectors spend wavefronts where the shuffles spend issue slots, so the L1's
bytes matter as well as its issue slots. ``window`` (box rows: each row's
first point loaded, the first 2R lanes load the 2R points past the warp,
one select and one ``idx`` shuffle a point) is the best exact scheme there:
float 1.01/1.00/0.97 (R = 1/2/3, L2) and 1.03/1.06/0.98 (DRAM), double
1.05/1.01/0.92 and 1.04/0.99/0.90, where the model predicts
``(2R + 1) / (1.75 + 2R * 0.84)`` = 0.98 at R = 2: near break-even, as the
model says, and far from the 1.21 of the shuffles without corners.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

SOURCE = r"""
template <typename T, int R>
__device__ __forceinline__ T coef(int k) { return T(1) / T(k + 2); }

template <typename T, int R>
__global__ void load(const T *__restrict__ in, T *__restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const T *p = in + R + i;
    T acc = T(0);
#pragma unroll
    for (int d = -R; d <= R; ++d) acc = fma(coef<T, R>(d + R), p[d], acc);
    out[i] = acc;
}

template <typename T, int R>
__global__ void paper(const T *__restrict__ in, T *__restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const T *p = in + R + i;
    T c = p[0];
    T acc = T(0);
#pragma unroll
    for (int d = -R; d <= R; ++d) {
        T v;
        if (d == 0) v = c;
        else if (d > 0) { v = __shfl_down_sync(0xffffffffu, c, d); if (lane + d > 31) v = p[d]; }
        else { v = __shfl_up_sync(0xffffffffu, c, -d); if (lane + d < 0) v = p[d]; }
        acc = fma(coef<T, R>(d + R), v, acc);
    }
    out[i] = acc;
}

template <typename T, int R>
__global__ void nocorner(const T *__restrict__ in, T *__restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const T *p = in + R + i;
    T c = p[0];
    T acc = T(0);
#pragma unroll
    for (int d = -R; d <= R; ++d) {
        T v = d == 0 ? c : d > 0 ? __shfl_down_sync(0xffffffffu, c, d) : __shfl_up_sync(0xffffffffu, c, -d);
        acc = fma(coef<T, R>(d + R), v, acc);
    }
    out[i] = acc;
}

template <typename T, int R>
__global__ void window(const T *__restrict__ in, T *__restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const T *p = in + i;  // element x - R: the window starts at the warp's first point
    T w0 = p[0];
    T w1 = T(0);
    if (lane < 2 * R) w1 = p[32];
    T acc = T(0);
#pragma unroll
    for (int d = -R; d <= R; ++d) {
        const int k = d + R;  // the point's place in the window, past the lane
        T v;
        if (k == 0) v = w0;
        else v = __shfl_sync(0xffffffffu, lane < k ? w1 : w0, (lane + k) & 31);
        acc = fma(coef<T, R>(k), v, acc);
    }
    out[i] = acc;
}

template <typename T, int R>
__global__ void window2(const T *__restrict__ in, T *__restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    const T *p = in + i;
    T w0 = p[0];
    T w1 = T(0);
    if (lane < 2 * R) w1 = p[32];
    T acc = T(0);
#pragma unroll
    for (int d = -R; d <= R; ++d) {
        const int k = d + R;
        T v;
        if (k == 0) v = w0;
        else {
            T lo = __shfl_down_sync(0xffffffffu, w0, k);
            T hi = __shfl_up_sync(0xffffffffu, w1, 32 - k);
            v = lane + k < 32 ? lo : hi;
        }
        acc = fma(coef<T, R>(k), v, acc);
    }
    out[i] = acc;
}
"""

# ``--shape box``: a 2-D (2R+1)^2 box stencil over a padded image, 32 x 8
# blocks, the shape of gaussblur and the application stencils, where a
# thread issues (2R+1)^2 loads and the kernel is bound by issuing them rather
# than by DRAM. ``vector`` is an exact scheme without shuffles: each row of
# the window comes from the aligned 16-byte vectors (float4 / double2) that
# cover it, with a select per point on the lane's misalignment; the vectors
# of one row overlap the neighbouring lanes' (the L1 serves them), and a row
# of 2R+1 loads becomes ceil((2R + V) / V) vector loads (V = 16 / sizeof(T)).
# Reading the rest of an aligned 16-byte chunk that holds a byte the kernel
# reads cannot fault.
BOX_SOURCE = r"""
template <typename T> struct Vec16;
template <> struct Vec16<float> { using type = float4; };
template <> struct Vec16<double> { using type = double2; };

template <typename T>
__device__ __forceinline__ T coefb(int k) { return T(1) / T(k + 2); }

template <typename T, int R>
__device__ __forceinline__ void row_vector(const T *s, T (&v)[2 * R + 1]) {
    constexpr int V = 16 / sizeof(T);
    constexpr int NV = (2 * R + V - 1) / V + 1;  // covers s[0..2R] from any misalignment
    const unsigned long long a = reinterpret_cast<unsigned long long>(s);
    const auto *q = reinterpret_cast<const typename Vec16<T>::type *>(a & ~15ull);
    const int m = int((a & 15ull) / sizeof(T));
    T w[NV * V];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const typename Vec16<T>::type t = __ldg(q + k);
        const T *c = reinterpret_cast<const T *>(&t);
#pragma unroll
        for (int j = 0; j < V; ++j) w[k * V + j] = c[j];
    }
#pragma unroll
    for (int j = 0; j <= 2 * R; ++j) {
        T x = w[j];
#pragma unroll
        for (int c = 1; c < V; ++c) x = m == c ? w[j + c] : x;
        v[j] = x;
    }
}

// How a variant gets the window row that starts at s (s[0..2R]), centre s[R].
template <typename T, int R> struct LoadRow {
    static __device__ __forceinline__ void get(const T *s, T (&v)[2 * R + 1]) {
#pragma unroll
        for (int j = 0; j <= 2 * R; ++j) v[j] = s[j];
    }
};

template <typename T, int R> struct VectorRow {
    static __device__ __forceinline__ void get(const T *s, T (&v)[2 * R + 1]) { row_vector<T, R>(s, v); }
};

template <typename T, int R> struct PaperRow {  // shuffles of the centre, edge lanes load
    static __device__ __forceinline__ void get(const T *s, T (&v)[2 * R + 1]) {
        const int lane = threadIdx.x & 31;
        const T c = s[R];
#pragma unroll
        for (int d = -R; d <= R; ++d) {
            T x;
            if (d == 0) x = c;
            else if (d > 0) { x = __shfl_down_sync(0xffffffffu, c, d); if (lane + d > 31) x = s[R + d]; }
            else { x = __shfl_up_sync(0xffffffffu, c, -d); if (lane + d < 0) x = s[R + d]; }
            v[d + R] = x;
        }
    }
};

template <typename T, int R> struct NocornerRow {  // the same shuffles, wrong at warp edges
    static __device__ __forceinline__ void get(const T *s, T (&v)[2 * R + 1]) {
        const T c = s[R];
#pragma unroll
        for (int d = -R; d <= R; ++d)
            v[d + R] = d == 0  ? c
                       : d > 0 ? __shfl_down_sync(0xffffffffu, c, d)
                               : __shfl_up_sync(0xffffffffu, c, -d);
    }
};

template <typename T, int R> struct WindowRow {  // exact: one halo load of 2R lanes, an idx shuffle a point
    static __device__ __forceinline__ void get(const T *s, T (&v)[2 * R + 1]) {
        const int lane = threadIdx.x & 31;  // a warp is one row of 32 consecutive x
        const T w0 = s[0];                  // lane L holds point 0 of its own window...
        T w1 = T(0);
        if (lane < 2 * R) w1 = s[32];       // ...and the first 2R lanes the 2R points past the warp
        v[0] = w0;
#pragma unroll
        for (int k = 1; k <= 2 * R; ++k)    // point k of lane L: lane (L + k) mod 32, w1 past the edge
            v[k] = __shfl_sync(0xffffffffu, lane < k ? w1 : w0, (lane + k) & 31);
    }
};

// One kernel for every variant: the rows differ, the sum and its order do
// not, so the exact variants must equal box_load bit for bit.
template <typename T, int R, typename Row>
__device__ __forceinline__ void box(const T *__restrict__ in, T *__restrict__ out, int width) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    const int pitch = width + 2 * R;
    const T *p = in + (size_t)y * pitch + x;
    T acc = T(0);
#pragma unroll
    for (int dy = 0; dy <= 2 * R; ++dy) {
        T v[2 * R + 1];
        Row::get(p + dy * pitch, v);
#pragma unroll
        for (int dx = 0; dx <= 2 * R; ++dx) acc = fma(coefb<T>(dy * (2 * R + 1) + dx), v[dx], acc);
    }
    out[(size_t)y * width + x] = acc;
}

#define BOX_VARIANT(name, Row)                                                           \
    template <typename T, int R>                                                         \
    __global__ void box_##name(const T *__restrict__ in, T *__restrict__ out, int width) { \
        box<T, R, Row<T, R>>(in, out, width);                                            \
    }
BOX_VARIANT(load, LoadRow)
BOX_VARIANT(vector, VectorRow)
BOX_VARIANT(paper, PaperRow)
BOX_VARIANT(nocorner, NocornerRow)
BOX_VARIANT(window, WindowRow)
"""

BOX_VARIANTS = ("load", "paper", "nocorner", "vector", "window")
BOX_EXACT = ("paper", "vector", "window")

VARIANTS = ("load", "paper", "nocorner", "window", "window2")
EXACT = ("paper", "window", "window2")


def _time(cp: object, launches: dict[str, tuple], runs: int) -> dict[str, list[float]]:
    """Per variant, ``runs`` samples (ms per launch), interleaved; a sample is ``reps``
    back-to-back launches between two CUDA events, lasting >= 0.5 ms."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()  # type: ignore[attr-defined]

    def sample(v: str, reps: int) -> float:
        fn, grid, block, args = launches[v]
        start.record()
        for _ in range(reps):
            fn(grid, block, args)
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) / reps  # type: ignore[attr-defined]

    reps = max(1, int(0.5 / max(sample("load", 3), 1e-4)))
    for v in launches:  # warm-up
        sample(v, reps)
    times: dict[str, list[float]] = {v: [] for v in launches}
    for _ in range(runs):
        for v in launches:
            times[v].append(sample(v, reps))
    return times


def _measure(
    cp: Any,
    np: Any,
    launches: dict[str, tuple[Any, tuple[int, ...], tuple[int, ...], tuple[Any, ...]]],
    outs: dict[str, Any],
    exact: tuple[str, ...],
    runs: int,
    fields: dict[str, Any],
    label: str,
    show_load: bool = False,
) -> list[dict[str, Any]]:
    """Launch every variant once and count the outputs that differ from
    ``load``'s in any bit, then time them (`_time`): one row per variant
    (``fields`` first), and a printed line under ``label`` (``*``: wrong)."""
    for fn, grid, block, args in launches.values():
        fn(grid, block, args)
    cp.cuda.Device().synchronize()
    want = cp.asnumpy(outs["load"])
    want = want.view(np.uint32 if want.dtype == np.float32 else np.uint64)
    wrong = {
        v: 0 if v == "load" else int((cp.asnumpy(outs[v]).view(want.dtype) != want).sum()) for v in launches
    }
    times = _time(cp, launches, runs)
    base = statistics.median(times["load"])
    rows = []
    for v in launches:
        ms = statistics.median(times[v])
        rows.append(
            {
                **fields,
                "variant": v,
                "ms": ms,
                "speedup": base / ms,
                "exact": wrong[v] == 0,
                "wrong": wrong[v],
            }
        )
    line = "  ".join(f"{r['variant']} {r['speedup']:.3f}{'*' if r['wrong'] else ''}" for r in rows)
    note = f"  (load {base * 1000:.1f} us)" if show_load else ""
    print(f"{label}: {line}{note}", flush=True)
    bad = [v for v in exact if wrong[v]]
    if bad:
        print(f"  NOT EXACT: {bad}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--radii", default="2,4,6,8,12")
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--shape", choices=("row", "box"), default="row", help="1-D rows or 2-D box stencils")
    opts = ap.parse_args()
    try:
        import cupy as cp
        import numpy as np
    except ImportError as exc:
        print(f"exact_scheme: error: needs CuPy and a GPU ({exc})", file=sys.stderr)
        return 1
    if opts.shape == "box":
        return _box(cp, np, [int(r) for r in opts.radii.split(",")], opts.runs, opts.json)
    radii = [int(r) for r in opts.radii.split(",")]
    names = [f"{v}<{t},{r}>" for v in VARIANTS for t in ("float", "double") for r in radii]
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=names)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    rng = np.random.default_rng(7)
    for tname, dtype in (("float", np.float32), ("double", np.float64)):
        for size_name, n in (("l2", 1 << 20), ("dram", 1 << 26)):
            for r in radii:
                host = rng.standard_normal(n + 2 * r).astype(dtype)
                src = cp.asarray(host)
                outs = {v: cp.zeros(n, dtype=dtype) for v in VARIANTS}
                block, grid = 256, n // 256
                launches = {
                    v: (
                        module.get_function(f"{v}<{tname},{r}>"),
                        (grid,),
                        (block,),
                        (src, outs[v], np.int32(n)),
                    )
                    for v in VARIANTS
                }
                fields = {"type": tname, "size": size_name, "radius": r}
                rows += _measure(
                    cp, np, launches, outs, EXACT, opts.runs, fields, f"{tname:6} {size_name:4} R={r:2}"
                )
    print(f"{device}; speed-up over load (median of {opts.runs}); * = wrong at warp edges")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"device": device, "runs": opts.runs, "rows": rows}, f, indent=1)
    return 0


def _box(cp: Any, np: Any, radii: list[int], runs: int, out: str | None) -> int:
    """``--shape box``: the box stencils of `BOX_SOURCE`, L2-resident
    (2048 x 2048 outputs) and DRAM-bound (8192 x 4096)."""
    names = [f"box_{v}<{t},{r}>" for v in BOX_VARIANTS for t in ("float", "double") for r in radii]
    module = cp.RawModule(code=BOX_SOURCE, options=("-std=c++17",), name_expressions=names)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    rng = np.random.default_rng(7)
    for tname, dtype in (("float", np.float32), ("double", np.float64)):
        for size_name, (width, height) in (("l2", (2048, 2048)), ("dram", (8192, 4096))):
            for r in radii:
                src = cp.asarray(rng.standard_normal((height + 2 * r) * (width + 2 * r)).astype(dtype))
                outs = {v: cp.zeros(width * height, dtype=dtype) for v in BOX_VARIANTS}
                block, grid = (32, 8, 1), (width // 32, height // 8, 1)
                launches = {
                    v: (
                        module.get_function(f"box_{v}<{tname},{r}>"),
                        grid,
                        block,
                        (src, outs[v], np.int32(width)),
                    )
                    for v in BOX_VARIANTS
                }
                fields = {"shape": "box", "type": tname, "size": size_name, "radius": r}
                label = f"{tname:6} {size_name:4} R={r:2}"
                rows += _measure(cp, np, launches, outs, BOX_EXACT, runs, fields, label, show_load=True)
    print(f"{device}; box stencils, speed-up over load (median of {runs}); * = wrong at warp edges")
    if out:
        with open(out, "w") as f:
            json.dump({"device": device, "runs": runs, "shape": "box", "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
