// Hopper warpgroup MMA (sm_90a only): shared-memory matrix descriptors,
// wgmma.fence / mma_async / commit_group / wait_group, an A-from-registers
// variant, setmaxnreg for producer/consumer warpgroups, and stmatrix.
#include <cuda_fp16.h>

// Build a wgmma matrix descriptor: start address, leading and stride byte
// offsets (all >> 4), no swizzle.
__device__ __forceinline__ unsigned long long make_desc(const void* smem, unsigned lead_bytes,
                                                        unsigned stride_bytes) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  unsigned long long d = 0;
  d |= (unsigned long long)((addr & 0x3FFFF) >> 4);
  d |= (unsigned long long)((lead_bytes & 0x3FFFF) >> 4) << 16;
  d |= (unsigned long long)((stride_bytes & 0x3FFFF) >> 4) << 32;
  return d;
}

// One warpgroup (128 threads): D[64x8] = A[64x16] * B[16x8], both from smem.
__global__ void __launch_bounds__(128) wgmma_ss(const __half* __restrict__ A,
                                                const __half* __restrict__ B,
                                                float* __restrict__ D) {
  __shared__ alignas(128) __half As[64 * 16];
  __shared__ alignas(128) __half Bs[16 * 8];
  for (int i = threadIdx.x; i < 64 * 16; i += 128) As[i] = A[i];
  for (int i = threadIdx.x; i < 16 * 8; i += 128) Bs[i] = B[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  unsigned long long da = make_desc(As, 128, 256);
  unsigned long long db = make_desc(Bs, 128, 256);
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  int scale_d = 0;  // first MMA overwrites D
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %6, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
      "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 1;\n\t}"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(da), "l"(db), "r"(scale_d));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  int row = w * 16 + l / 4, col = (l % 4) * 2;
  D[row * 8 + col] = d0;
  D[row * 8 + col + 1] = d1;
  D[(row + 8) * 8 + col] = d2;
  D[(row + 8) * 8 + col + 1] = d3;
}

// A fragment from registers, B from shared memory, accumulating twice.
__global__ void __launch_bounds__(128) wgmma_rs(const unsigned* __restrict__ Afrag,
                                                const __half* __restrict__ B,
                                                float* __restrict__ D) {
  __shared__ alignas(128) __half Bs[16 * 16];
  for (int i = threadIdx.x; i < 16 * 16; i += 128) Bs[i] = B[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  unsigned a0 = Afrag[4 * threadIdx.x], a1 = Afrag[4 * threadIdx.x + 1];
  unsigned a2 = Afrag[4 * threadIdx.x + 2], a3 = Afrag[4 * threadIdx.x + 3];
  unsigned long long db = make_desc(Bs, 128, 256);
  float d[8];
  for (int i = 0; i < 8; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int rep = 0; rep < 2; ++rep) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.b32 p, %13, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 1;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(rep));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  for (int i = 0; i < 8; ++i) D[threadIdx.x * 8 + i] = d[i];
}

// Warp specialisation: the producer warpgroup gives registers away, the
// consumer takes them, then results go out through stmatrix.
__global__ void __launch_bounds__(256) setmaxnreg_split(const float* __restrict__ in,
                                                        __half* __restrict__ out) {
  __shared__ alignas(16) __half stage[2][8 * 8 * 4];
  int wg = threadIdx.x / 128;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    for (int i = threadIdx.x; i < 2 * 256; i += 128) (&stage[0][0])[i] = __float2half(in[i]);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  }
  __syncthreads();
  if (wg == 1 && threadIdx.x < 160) {
    int lane = threadIdx.x % 32;
    __half2 v0 = __floats2half2_rn(lane, lane + 1), v1 = __floats2half2_rn(-lane, 2.f);
    unsigned r0 = *reinterpret_cast<unsigned*>(&v0), r1 = *reinterpret_cast<unsigned*>(&v1);
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&stage[1][(lane % 16) * 8]));
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(dst), "r"(r0),
                 "r"(r1)
                 : "memory");
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 2 * 256; i += 256) out[i] = (&stage[0][0])[i];
}
