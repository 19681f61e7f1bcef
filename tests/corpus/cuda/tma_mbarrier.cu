// Hopper (sm_90) bulk asynchronous copies written as inline PTX: mbarrier
// with transaction counts, cp.async.bulk (1D, global<->shared), the tensor
// (TMA) form driven by a __grid_constant__ CUtensorMap, bulk groups,
// proxy fences and elect.sync.
#include <cuda.h>

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ unsigned long long mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  unsigned long long state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(bar), "r"(bytes)
               : "memory");
  return state;
}

__device__ __forceinline__ bool mbar_try_wait_parity(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, done;\n\t}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

__device__ __forceinline__ void bulk_g2s(unsigned dst, const void* src, unsigned bytes,
                                         unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void bulk_s2g(void* dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
               "r"(src), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ bool elect_one() {
  unsigned pred;
  asm volatile(
      "{\n\t.reg .pred p;\n\t.reg .b32 lane;\n\t"
      "elect.sync lane|p, 0xffffffff;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(pred));
  return pred != 0;
}

// 1D bulk copy in, scale in shared memory, bulk copy out.
__global__ void bulk_scale(const float* __restrict__ in, float* __restrict__ out, float s) {
  __shared__ alignas(128) float tile[1024];
  __shared__ alignas(8) unsigned long long bar;
  unsigned b = smem_addr(&bar);
  if (threadIdx.x == 0) {
    mbar_init(b, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const float* src = in + blockIdx.x * 1024;
  if (threadIdx.x < 32 && elect_one()) {
    mbar_arrive_expect_tx(b, sizeof(tile));
    bulk_g2s(smem_addr(tile), src, sizeof(tile), b);
  }
  while (!mbar_try_wait_parity(b, 0)) {
  }
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) tile[i] *= s;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    bulk_s2g(out + blockIdx.x * 1024, smem_addr(tile), sizeof(tile));
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

// 2D TMA tile load through a tensor map passed by value as a grid constant.
__global__ void tma_tile_load(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out) {
  __shared__ alignas(128) float tile[32][32];
  __shared__ alignas(8) unsigned long long bar;
  unsigned b = smem_addr(&bar);
  int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
  if (threadIdx.x == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(&tmap) : "memory");
    mbar_init(b, 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(b, sizeof(tile));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(tile)),
        "l"(&tmap), "r"(x0), "r"(y0), "r"(b)
        : "memory");
  }
  unsigned phase = 0;
  while (!mbar_try_wait_parity(b, phase)) {
  }
  phase ^= 1;
  for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x)
    out[(y0 + i / 32) * 4096 + x0 + i % 32] = tile[i % 32][i / 32] + (float)phase;
}

// Producer/consumer ring with arrive counts (no tx): plain mbarrier.arrive
// and test_wait with a phase bit tracked in C++.
__global__ void mbarrier_ring(const int* __restrict__ in, int* __restrict__ out, int rounds) {
  __shared__ int slot[2][128];
  __shared__ alignas(8) unsigned long long full[2];
  int t = threadIdx.x;
  if (t == 0) {
    mbar_init(smem_addr(&full[0]), blockDim.x);
    mbar_init(smem_addr(&full[1]), blockDim.x);
  }
  __syncthreads();
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    int s = r & 1;
    slot[s][t] = in[r * 128 + t];
    // "_" is the sink operand: the arrival state is not needed.
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&full[s]))
                 : "memory");
    while (!mbar_try_wait_parity(smem_addr(&full[s]), (r >> 1) & 1)) {
    }
    acc += slot[s][127 - t];
    __syncthreads();
  }
  out[blockIdx.x * 128 + t] = acc;
}
