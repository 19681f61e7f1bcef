// Tensor cores through the nvcuda::wmma API: f16 inputs with f32 and f16
// accumulators, s8 integer MMA, and (sm_80+) tf32, bf16 and f64 shapes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// One warp computes a 16x16 tile of C = A * B + C, K a multiple of 16.
__global__ void wmma_f16_f32(const __half* __restrict__ A, const __half* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int warp_n = blockIdx.y;
  if (warp_m * 16 >= M || warp_n * 16 >= N) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, C + warp_m * 16 * N + warp_n * 16, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + warp_m * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + warp_n * 16 * K + k, K);
    wmma::mma_sync(acc, a, b, acc);
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = fmaxf(acc.x[i], 0.f);  // fused ReLU
  wmma::store_matrix_sync(C + warp_m * 16 * N + warp_n * 16, acc, N, wmma::mem_row_major);
}

// 32x8x16 shape with an f16 accumulator, staged through shared memory.
__global__ void wmma_f16_acc(const __half* __restrict__ A, const __half* __restrict__ B,
                             __half* __restrict__ C) {
  __shared__ __half tile[32 * 8];
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 32, 8, 16, __half> acc;
  wmma::fill_fragment(acc, __float2half(0.f));
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 8);
  wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(tile, acc, 8, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 32 * 8; i += 32) C[i] = tile[i];
}

__global__ void wmma_s8(const signed char* __restrict__ A, const signed char* __restrict__ B,
                        int* __restrict__ C) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::fill_fragment(acc, 0);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(acc, a, b, acc, true);  // saturate on overflow
  wmma::store_matrix_sync(C, acc, 16, wmma::mem_col_major);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__global__ void wmma_sm80_types(const float* __restrict__ Af, const float* __restrict__ Bf,
                                const __nv_bfloat16* __restrict__ Ab,
                                const __nv_bfloat16* __restrict__ Bb, const double* __restrict__ Ad,
                                const double* __restrict__ Bd, float* __restrict__ Cf,
                                double* __restrict__ Cd) {
  // tf32: operands converted from f32 in the fragment.
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> at;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bt;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> ct;
  wmma::load_matrix_sync(at, Af, 8);
  wmma::load_matrix_sync(bt, Bf, 16);
  for (int i = 0; i < at.num_elements; ++i) at.x[i] = wmma::__float_to_tf32(at.x[i]);
  for (int i = 0; i < bt.num_elements; ++i) bt.x[i] = wmma::__float_to_tf32(bt.x[i]);
  wmma::fill_fragment(ct, 0.f);
  wmma::mma_sync(ct, at, bt, ct);
  wmma::store_matrix_sync(Cf, ct, 16, wmma::mem_row_major);
  // bf16 with its own 16x16x16 accumulator, seeded from the tf32 result.
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ab;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> cb;
  wmma::load_matrix_sync(ab, Ab, 16);
  wmma::load_matrix_sync(bb, Bb, 16);
  wmma::load_matrix_sync(cb, Cf, 16, wmma::mem_row_major);
  wmma::mma_sync(cb, ab, bb, cb);
  wmma::store_matrix_sync(Cf + 256, cb, 16, wmma::mem_row_major);
  // f64 8x8x4.
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> ad;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> bd;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> cd;
  wmma::load_matrix_sync(ad, Ad, 4);
  wmma::load_matrix_sync(bd, Bd, 4);
  wmma::fill_fragment(cd, 1.0);
  wmma::mma_sync(cd, ad, bd, cd);
  wmma::store_matrix_sync(Cd, cd, 8, wmma::mem_row_major);
}
#endif
