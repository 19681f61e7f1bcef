// Warp-level MMA written as inline PTX (sm_80): ldmatrix from shared
// memory, mma.sync m16n8k16 (f16 -> f32), m16n8k32 (s8 -> s32) and
// m16n8k8 (tf32), and movmatrix to transpose a fragment.
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// One warp: C[16x8] += A[16x16] * B[16x8], A row-major, B column-major.
__global__ void mma_m16n8k16(const __half* __restrict__ A, const __half* __restrict__ B,
                             float* __restrict__ C) {
  __shared__ alignas(16) __half As[16 * 16];
  __shared__ alignas(16) __half Bs[8 * 16];
  int lane = threadIdx.x & 31;
  for (int i = lane; i < 256; i += 32) As[i] = A[i];
  for (int i = lane; i < 128; i += 32) Bs[i] = B[i];
  __syncwarp();
  unsigned a[4], b[2];
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  const __half* a_row = &As[(lane % 16) * 16 + (lane / 16) * 8];
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem_u32(a_row)));
  const __half* b_row = &Bs[(lane % 8) * 16 + ((lane / 8) % 2) * 8];
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(b[0]), "=r"(b[1])
               : "r"(smem_u32(b_row)));
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  int row = lane / 4, col = (lane % 4) * 2;
  C[row * 8 + col] = c[0];
  C[row * 8 + col + 1] = c[1];
  C[(row + 8) * 8 + col] = c[2];
  C[(row + 8) * 8 + col + 1] = c[3];
}

__global__ void mma_s8_tf32(const unsigned* __restrict__ a8, const unsigned* __restrict__ b8,
                            int* __restrict__ c32, const float* __restrict__ af,
                            const float* __restrict__ bf, float* __restrict__ cf) {
  int lane = threadIdx.x & 31;
  unsigned a[4] = {a8[4 * lane], a8[4 * lane + 1], a8[4 * lane + 2], a8[4 * lane + 3]};
  unsigned b[2] = {b8[2 * lane], b8[2 * lane + 1]};
  int c[4] = {0, 0, 0, 0};
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  for (int i = 0; i < 4; ++i) c32[4 * lane + i] = c[i];

  unsigned ta[4], tb[2];
  for (int i = 0; i < 4; ++i)
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(ta[i]) : "f"(af[4 * lane + i]));
  for (int i = 0; i < 2; ++i)
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(tb[i]) : "f"(bf[2 * lane + i]));
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(ta[0]), "r"(ta[1]), "r"(ta[2]), "r"(ta[3]), "r"(tb[0]), "r"(tb[1]));
  unsigned packed = __float_as_uint(d[0]) ^ __float_as_uint(d[1]), moved;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(moved) : "r"(packed));
  for (int i = 0; i < 4; ++i) cf[4 * lane + i] = d[i] + (float)(moved & 0xff);
}
