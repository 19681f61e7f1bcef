// Warp-level data exchange with every shfl.sync flavour: down (tree
// reduction), xor (butterfly), up (scan), idx (broadcast), plus sub-warp
// widths, 64-bit values (split into two 32-bit shuffles) and the
// warp-register-cache idiom that the PIRCH lifter consumes.

#define FULL_MASK 0xffffffffu

template <typename T>
__device__ __forceinline__ T warp_sum_down(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL_MASK, v, off);
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_max_xor(T v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = max(v, __shfl_xor_sync(FULL_MASK, v, m));
  return v;
}

__global__ void reduce_sum_f32(const float* __restrict__ in, float* out, int n) {
  __shared__ float partial[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.f;
  v = warp_sum_down(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? partial[lane] : 0.f;
    v = warp_sum_down(v);
    if (lane == 0) atomicAdd(out, v);
  }
}

__global__ void reduce_sum_f64(const double* __restrict__ in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = i < n ? in[i] : 0.0;
  v = warp_sum_down(v);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

__global__ void butterfly_max(const int* __restrict__ in, int* __restrict__ out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  v = warp_max_xor(v);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;  // every lane holds the max
}

// Inclusive scan with shfl.up; lanes below the offset keep their own value.
__global__ void warp_scan_inclusive(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
  int lane = threadIdx.x & 31;
  unsigned v = in[blockIdx.x * blockDim.x + threadIdx.x];
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    unsigned y = __shfl_up_sync(FULL_MASK, v, off);
    if (lane >= off) v += y;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Broadcast from a data-dependent lane, and segmented (width 8/16) exchanges.
__global__ void broadcast_and_segments(const float* __restrict__ in, float* __restrict__ out,
                                       int src_lane) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[t];
  float b = __shfl_sync(FULL_MASK, v, src_lane);
  float s16 = __shfl_down_sync(FULL_MASK, v, 3, 16);
  float s8 = __shfl_xor_sync(FULL_MASK, v, 2, 8);
  float r = __shfl_sync(FULL_MASK, v, (threadIdx.x + 5) & 31);
  out[t] = b + s16 + s8 + r;
}

// Warp register cache: each lane loads one element; the neighbours come from
// other lanes by shuffle, and only the two warp edges reload from memory.
__global__ void stencil1d_regcache(const float* __restrict__ in, float* __restrict__ out, int n) {
  int lane = threadIdx.x & 31;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float c = i < n ? in[i] : 0.f;
  float l = __shfl_up_sync(FULL_MASK, c, 1);
  float r = __shfl_down_sync(FULL_MASK, c, 1);
  if (lane == 0) l = i > 0 ? in[i - 1] : 0.f;
  if (lane == 31) r = i + 1 < n ? in[i + 1] : 0.f;
  if (i < n) out[i] = 0.25f * l + 0.5f * c + 0.25f * r;
}

// 64-bit integer exchange and a partial mask inside a divergent branch.
__global__ void shuffle_u64_partial(const unsigned long long* __restrict__ in,
                                    unsigned long long* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long v = in[t];
  if ((threadIdx.x & 31) < 16) {
    v ^= __shfl_xor_sync(0x0000ffffu, v, 1);
  } else {
    v += __shfl_down_sync(0xffff0000u, v, 1);
  }
  out[t] = v;
}
