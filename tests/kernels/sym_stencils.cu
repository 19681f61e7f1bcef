// Kernels for the symbolic executor's tests (tests/test_symbolic_exec.py):
// small stencils whose memory traces have known shapes.

// 1D 3-point stencil: three loads at constant distances (4 bytes apart).
extern "C" __global__ void sym_stencil1d(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1 || i >= n - 1) return;
  out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}

// A divergent branch inside the warp: two flows, each with its own load.
extern "C" __global__ void sym_divergent(const int* in, int* out, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v;
  if (threadIdx.x < k)
    v = in[i];
  else
    v = in[i + 1] * 3;
  out[i] = v;
}

// A loop down the columns of a 256-wide matrix: the pointer advances by a
// constant 1024 bytes per iteration (a constant-stride induction variable).
extern "C" __global__ void sym_colsum(const float* __restrict__ a, float* __restrict__ out, int rows) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= 255) return;
  float s = 0.0f;
#pragma unroll 1
  for (int r = 0; r < rows; ++r) s += a[r * 256 + j] + a[r * 256 + j + 1];
  out[j] = s;
}
