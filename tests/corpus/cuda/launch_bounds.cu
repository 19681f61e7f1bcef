// Kernel performance directives: __launch_bounds__ with one or two
// arguments (.maxntid, .minnctapersm) and __maxnreg__ (.maxnreg), each on
// the same register-hungry body (a per-thread accumulator array) so the
// directives are the only difference between the kernels.

template <int N>
__device__ __forceinline__ float heavy(const float* __restrict__ in, int i) {
  float acc[N];
#pragma unroll
  for (int k = 0; k < N; ++k) acc[k] = in[i + k * 32];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int k = 0; k < N; ++k) s += acc[k] * acc[(k + r + 1) % N];
  return s;
}

__global__ void __launch_bounds__(256) bounds_one(const float* __restrict__ in, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = heavy<24>(in, i);
}

__global__ void __launch_bounds__(128, 4) bounds_two(const float* __restrict__ in, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = heavy<32>(in, i);
}

__global__ void __maxnreg__(40) maxnreg_kernel(const float* __restrict__ in, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = heavy<32>(in, i);
}

__global__ void __launch_bounds__(1024, 1) wide_block(float* __restrict__ out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[blockIdx.x * 1024 + threadIdx.x] = s[1023 - threadIdx.x];
}

// No directive at all, as a baseline for the same body.
__global__ void unbounded(const float* __restrict__ in, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = heavy<32>(in, i);
}
