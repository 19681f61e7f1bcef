// Votes, match and redux in the warp-register-cache idiom: one WG of
// WG_SIZE lanes (one warp, one block) per batch item of WG_SIZE values.
//
//  vote:  pred = x > thr (NaN votes no); lane 0 writes any, all, ballot and
//         __popc(ballot); every lane with pred set writes its lane index to
//         slot __popc(ballot & lanes below it) (stream compaction)
//  match: __match_any_sync on keys; per lane the mask, its __popc and the
//         lowest lane with the same key (__ffs - 1)
//  redux: __reduce_add_sync (wrapping), __reduce_min_sync (signed) and
//         __reduce_max_sync (unsigned); sm_80 and later have redux.sync, older
//         targets get the same values from a __shfl_xor_sync butterfly
#include "pirch.cuh"

template <int WG>
__device__ __forceinline__ void vote(const float *__restrict__ x, float thr, unsigned *__restrict__ out,
                                     int *__restrict__ packed) {
    const int lane = threadIdx.x;
    const size_t i = (size_t)blockIdx.x * WG + lane;
    const bool pred = x[i] > thr;
    const unsigned ballot = __ballot_sync(WG_MASK(WG), pred);
    const int any = __any_sync(WG_MASK(WG), pred);
    const int all = __all_sync(WG_MASK(WG), pred);
    if (lane == 0) {
        out[4 * blockIdx.x + 0] = any;
        out[4 * blockIdx.x + 1] = all;
        out[4 * blockIdx.x + 2] = ballot;
        out[4 * blockIdx.x + 3] = __popc(ballot);
    }
    if (pred) packed[(size_t)blockIdx.x * WG + __popc(ballot & ((1u << lane) - 1u))] = lane;
}

template <int WG>
__device__ __forceinline__ void match(const unsigned *__restrict__ keys, unsigned *__restrict__ out) {
    const size_t i = (size_t)blockIdx.x * WG + threadIdx.x;
    const unsigned same = __match_any_sync(WG_MASK(WG), keys[i]);
    out[3 * i + 0] = same;
    out[3 * i + 1] = __popc(same);
    out[3 * i + 2] = __ffs(same) - 1;
}

template <int WG>
__device__ __forceinline__ void redux(const unsigned *__restrict__ x, unsigned *__restrict__ out) {
    const unsigned v = x[(size_t)blockIdx.x * WG + threadIdx.x];
#if __CUDA_ARCH__ >= 800
    const unsigned sum = __reduce_add_sync(WG_MASK(WG), v);
    const int smin = __reduce_min_sync(WG_MASK(WG), (int)v);
    const unsigned umax = __reduce_max_sync(WG_MASK(WG), v);
#else
    unsigned sum = v, umax = v;
    int smin = (int)v;
#pragma unroll
    for (int off = WG / 2; off > 0; off >>= 1) {
        sum += __shfl_xor_sync(WG_MASK(WG), sum, off, WG);
        smin = min(smin, __shfl_xor_sync(WG_MASK(WG), smin, off, WG));
        umax = max(umax, __shfl_xor_sync(WG_MASK(WG), umax, off, WG));
    }
#endif
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x + 0] = sum;
        out[3 * blockIdx.x + 1] = (unsigned)smin;
        out[3 * blockIdx.x + 2] = umax;
    }
}

#define VOTE(T, S, WG)                                                                      \
    PIRCH_ENTRY(WG) vote_wg##WG(const float *x, float thr, unsigned *out, int *packed) {    \
        vote<WG>(x, thr, out, packed);                                                      \
    }
#define MATCH(T, S, WG) PIRCH_ENTRY(WG) match_wg##WG(const unsigned *keys, unsigned *out) { match<WG>(keys, out); }
#define REDUX(T, S, WG) PIRCH_ENTRY(WG) redux_wg##WG(const unsigned *x, unsigned *out) { redux<WG>(x, out); }

PIRCH_ALL_WG(VOTE, , )
PIRCH_ALL_WG(MATCH, , )
PIRCH_ALL_WG(REDUX, , )
