// Warp collectives in the warp-register-cache idiom: one WG of WG_SIZE lanes
// (one warp, one block) per batch item, data exchanged with shuffles only.
//
//  reduce:    sum of an item's n values: strided per-lane sums, then a
//             __shfl_down_sync tree; lane 0 writes the item's sum
//  scan:      inclusive prefix sums of an item's n values, WG_SIZE at a time:
//             Hillis-Steele with __shfl_up_sync, the carry from the last lane
//  allreduce: butterfly (__shfl_xor_sync) sum and max of the item's WG_SIZE
//             values, every lane writes both (all must agree)
//  segbcast:  __shfl_sync with width WG_SIZE/2: a run-time uniform source
//             lane and a per-lane computed one (wrapping modulo the width)
// Types: f32, f64 and u32 (wrapping integer sums), segbcast f32 and f64.
#include "pirch.cuh"

template <typename T> __device__ __forceinline__ T maximum(T a, T b) { return a > b ? a : b; }
template <> __device__ __forceinline__ float maximum(float a, float b) { return fmaxf(a, b); }
template <> __device__ __forceinline__ double maximum(double a, double b) { return fmax(a, b); }

template <int WG, typename T>
__device__ __forceinline__ void reduce(const T *__restrict__ x, T *__restrict__ out, int n) {
    const int lane = threadIdx.x;
    const T *item = x + (size_t)blockIdx.x * n;
    T acc = T(0);
    for (int i = lane; i < n; i += WG) acc += item[i];  // trip count differs per lane when WG does not divide n
#pragma unroll
    for (int off = WG / 2; off > 0; off >>= 1) acc += __shfl_down_sync(WG_MASK(WG), acc, off, WG);
    if (lane == 0) out[blockIdx.x] = acc;
}

template <int WG, typename T>
__device__ __forceinline__ void scan(const T *__restrict__ x, T *__restrict__ y, int n) {
    const int lane = threadIdx.x;
    const size_t item = (size_t)blockIdx.x * n;
    T carry = T(0);
    for (int base = 0; base < n; base += WG) {
        const int i = base + lane;
        T v = i < n ? x[item + i] : T(0);
#pragma unroll
        for (int d = 1; d < WG; d <<= 1) {
            const T t = __shfl_up_sync(WG_MASK(WG), v, d, WG);
            if (lane >= d) v += t;
        }
        v += carry;
        if (i < n) y[item + i] = v;
        carry = __shfl_sync(WG_MASK(WG), v, WG - 1, WG);
    }
}

template <int WG, typename T>
__device__ __forceinline__ void allreduce(const T *__restrict__ x, T *__restrict__ sum, T *__restrict__ max) {
    const size_t i = (size_t)blockIdx.x * WG + threadIdx.x;
    T s = x[i], m = s;
#pragma unroll
    for (int off = WG / 2; off > 0; off >>= 1) {
        s += __shfl_xor_sync(WG_MASK(WG), s, off, WG);
        m = maximum(m, __shfl_xor_sync(WG_MASK(WG), m, off, WG));
    }
    sum[i] = s;
    max[i] = m;
}

template <int WG, typename T>
__device__ __forceinline__ void segbcast(const T *__restrict__ x, T *__restrict__ out, int src) {
    constexpr int SEG = WG / 2;
    const int lane = threadIdx.x;
    const size_t i = (size_t)blockIdx.x * WG + lane;
    const T v = x[i];
    out[2 * i] = __shfl_sync(WG_MASK(WG), v, src, SEG);
    out[2 * i + 1] = __shfl_sync(WG_MASK(WG), v, lane * 3 + src, SEG);
}

#define REDUCE(T, S, WG) \
    PIRCH_ENTRY(WG) reduce_##S##_wg##WG(const T *x, T *out, int n) { reduce<WG, T>(x, out, n); }
#define SCAN(T, S, WG) PIRCH_ENTRY(WG) scan_##S##_wg##WG(const T *x, T *y, int n) { scan<WG, T>(x, y, n); }
#define ALLREDUCE(T, S, WG)                                                  \
    PIRCH_ENTRY(WG) allreduce_##S##_wg##WG(const T *x, T *sum, T *max) {     \
        allreduce<WG, T>(x, sum, max);                                       \
    }
#define SEGBCAST(T, S, WG) \
    PIRCH_ENTRY(WG) segbcast_##S##_wg##WG(const T *x, T *out, int src) { segbcast<WG, T>(x, out, src); }

PIRCH_ALL_WG(REDUCE, float, f32)
PIRCH_ALL_WG(REDUCE, double, f64)
PIRCH_ALL_WG(REDUCE, unsigned, u32)
PIRCH_ALL_WG(SCAN, float, f32)
PIRCH_ALL_WG(SCAN, double, f64)
PIRCH_ALL_WG(SCAN, unsigned, u32)
PIRCH_ALL_WG(ALLREDUCE, float, f32)
PIRCH_ALL_WG(ALLREDUCE, double, f64)
PIRCH_ALL_WG(ALLREDUCE, unsigned, u32)
PIRCH_ALL_WG(SEGBCAST, float, f32)
PIRCH_ALL_WG(SEGBCAST, double, f64)
