// Multi-warp kernels: blocks of several warps that share data through shared
// memory and __syncthreads (COX's hierarchical collapsing / Polygeist's
// barrier splitting are what a lifter needs for these).
//
//  block_reduce: sum of an item's n values by a block of 128 threads (4 warps):
//                strided per-thread sums, a __shfl_down_sync tree per warp,
//                warp sums through shared memory, the first warp sums those
//  transpose:    out = in^T per item (rows x cols, row-major), 32x32 tiles
//                through a padded shared tile, blocks of 32 x 8 threads,
//                grid (col tiles, row tiles, items); any rows and cols
#include "pirch.cuh"

#define REDUCE_BLOCK 128
#define TILE 32
#define TILE_ROWS 8

template <typename T>
__device__ __forceinline__ void block_reduce(const T *__restrict__ x, T *__restrict__ out, int n) {
    __shared__ T partial[REDUCE_BLOCK / 32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const T *item = x + (size_t)blockIdx.x * n;
    T acc = T(0);
    for (int i = tid; i < n; i += REDUCE_BLOCK) acc += item[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < REDUCE_BLOCK / 32 ? partial[lane] : T(0);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) out[blockIdx.x] = acc;
    }
}

template <typename T>
__device__ __forceinline__ void transpose(const T *__restrict__ in, T *__restrict__ out, int rows, int cols) {
    __shared__ T tile[TILE][TILE + 1];  // +1: no shared-memory bank conflicts on the transposed read
    const size_t item = (size_t)blockIdx.z * rows * cols;
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[item + (size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < rows && y + j < cols) out[item + (size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

#define BLOCK_REDUCE(T, S)                                                              \
    PIRCH_ENTRY(REDUCE_BLOCK) block_reduce_##S(const T *x, T *out, int n) {             \
        block_reduce<T>(x, out, n);                                                     \
    }
#define TRANSPOSE(T, S)                                                                         \
    PIRCH_ENTRY3(TILE, TILE_ROWS, 1) transpose_##S(const T *in, T *out, int rows, int cols) {   \
        transpose<T>(in, out, rows, cols);                                                      \
    }

BLOCK_REDUCE(float, f32)
BLOCK_REDUCE(double, f64)
TRANSPOSE(float, f32)
TRANSPOSE(double, f64)
