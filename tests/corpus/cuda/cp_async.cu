// Asynchronous global->shared copies (sm_80 cp.async): the pipeline
// primitives, cooperative_groups::memcpy_async, cuda::memcpy_async with a
// cuda::barrier (mbarrier underneath), and raw inline cp.async with groups.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;

// Double-buffered tile sum with __pipeline_memcpy_async (cp.async.ca/cg).
__global__ void pipeline_double_buffer(const float4* __restrict__ in, float* __restrict__ out,
                                       int tiles) {
  __shared__ float4 buf[2][128];
  int t = threadIdx.x;
  float acc = 0.f;
  __pipeline_memcpy_async(&buf[0][t], &in[t], sizeof(float4));
  __pipeline_commit();
  for (int k = 0; k < tiles; ++k) {
    if (k + 1 < tiles)
      __pipeline_memcpy_async(&buf[(k + 1) & 1][t], &in[(k + 1) * 128 + t], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    float4 v = buf[k & 1][(t + 1) & 127];
    acc += v.x + v.y + v.z + v.w;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = acc;
}

// cooperative_groups::memcpy_async of a whole tile, then cg::wait.
__global__ void cg_memcpy_async(const int* __restrict__ in, int* __restrict__ out, int n) {
  extern __shared__ int tile[];
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, tile, in + blockIdx.x * n, sizeof(int) * n);
  cg::wait(block);
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = tile[n - 1 - i];
}

// cuda::memcpy_async completing on a block-scoped cuda::barrier.
__global__ void barrier_memcpy_async(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float tile[256];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&tile[threadIdx.x], &in[blockIdx.x * 256 + threadIdx.x],
                     cuda::aligned_size_t<4>(sizeof(float)), bar);
  bar.arrive_and_wait();
  out[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x] * 2.f;
}

// Raw inline PTX: cp.async.cg 16-byte copies, commit/wait groups, zero fill.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}

__global__ void inline_cp_async(const int4* __restrict__ in, int4* __restrict__ out, int n) {
  __shared__ int4 stage[4][64];
  int t = threadIdx.x;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    int idx = (blockIdx.x * 4 + s) * 64 + t;
    cp_async16(&stage[s][t], &in[idx], idx < n ? 16 : 0);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  asm volatile("cp.async.wait_group 2;\n" ::: "memory");
  __syncthreads();
  int4 a = stage[0][63 - t], b = stage[1][63 - t];
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  int4 c = stage[2][t], d = stage[3][t];
  out[blockIdx.x * 64 + t] = make_int4(a.x + b.x + c.x + d.x, a.y ^ b.y, c.z - d.z, a.w | d.w);
}
