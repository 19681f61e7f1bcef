// Shared definitions of the PIRCH evidence kernels (warp-register-cache idiom).
//
// One work group (WG) is one warp of WG_SIZE lanes (4, 8, 16 or 32) and one
// block: a lane keeps a row or column of its batch item in registers (arrays
// indexed only by unrolled loop counters, so nvcc -O3 maps them to registers)
// and exchanges data with __shfl_*_sync over the WG's lanes. Every kernel is
// instantiated once per WG_SIZE as `NAME_wgN`, extern "C" so the symbol is
// predictable; `__block_size__` makes nvcc emit `.reqntid WG, 1, 1` (sm_90 and
// later; older targets get `__launch_bounds__`, i.e. `.maxntid WG, 1, 1`), which
// is how a lifter learns WG_SIZE from the PTX alone.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PIRCH_ENTRY3(X, Y, Z) extern "C" __global__ void __launch_bounds__((X) * (Y) * (Z))
#else
#define PIRCH_ENTRY3(X, Y, Z) extern "C" __global__ void __block_size__((X, Y, Z))
#endif
#define PIRCH_ENTRY(WG) PIRCH_ENTRY3(WG, 1, 1)

// The lanes of a WG: the whole warp for 32, the low WG lanes otherwise.
#define WG_MASK(WG) ((WG) == 32 ? 0xffffffffu : ((1u << (WG)) - 1u))

// Instantiates M(T, SUFFIX, WG) for every WG_SIZE.
#define PIRCH_ALL_WG(M, T, S) M(T, S, 4) M(T, S, 8) M(T, S, 16) M(T, S, 32)
