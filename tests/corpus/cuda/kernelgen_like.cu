// Small kernels named after the OpenACC benchmark suite used in the PTXASW
// evaluation (vecadd, matvec, matmul, sincos, gradient, tricubic), written
// fresh in CUDA so nvcc gives us the same access shapes.

__global__ void vecadd(const float* __restrict__ a, const float* __restrict__ b,
                       float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Grid-stride loop variant: a loop whose induction variable depends on tid.
__global__ void saxpy_gridstride(float a, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void matvec(const float* __restrict__ A, const float* __restrict__ x,
                       float* __restrict__ y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.f;
  for (int c = 0; c < cols; ++c) acc += A[(long)r * cols + c] * x[c];
  y[r] = acc;
}

__global__ void matmul_naive(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
  C[row * n + col] = acc;
}

// Classic shared-memory tiling with two barriers per step.
#define TILE 16
__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.f;
  for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
    int ak = t * TILE + tx, bk = t * TILE + ty;
    As[ty][tx] = (row < n && ak < n) ? A[row * n + ak] : 0.f;
    Bs[ty][tx] = (bk < n && col < n) ? B[bk * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

__global__ void sincos_kernel(const float* __restrict__ x, float* __restrict__ s,
                              float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sincosf(x[i], &s[i], &c[i]);
}

__global__ void gradient2d(const float* __restrict__ f, float* __restrict__ gx,
                           float* __restrict__ gy, int nx, int ny, float inv2h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
  int c = j * nx + i;
  gx[c] = (f[c + 1] - f[c - 1]) * inv2h;
  gy[c] = (f[c + nx] - f[c - nx]) * inv2h;
}

// Catmull-Rom weights and a 4x4x4 tricubic gather: 64 loads per output.
__device__ __forceinline__ void cubic_weights(float t, float w[4]) {
  float t2 = t * t, t3 = t2 * t;
  w[0] = -0.5f * t3 + t2 - 0.5f * t;
  w[1] = 1.5f * t3 - 2.5f * t2 + 1.0f;
  w[2] = -1.5f * t3 + 2.0f * t2 + 0.5f * t;
  w[3] = 0.5f * t3 - 0.5f * t2;
}

__global__ void tricubic(const float* __restrict__ grid, const float* __restrict__ px,
                         const float* __restrict__ py, const float* __restrict__ pz,
                         float* __restrict__ out, int nx, int ny, int nz, int n) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  float x = px[p], y = py[p], z = pz[p];
  int ix = (int)floorf(x), iy = (int)floorf(y), iz = (int)floorf(z);
  float wx[4], wy[4], wz[4];
  cubic_weights(x - ix, wx);
  cubic_weights(y - iy, wy);
  cubic_weights(z - iz, wz);
  ix = min(max(ix, 1), nx - 3);
  iy = min(max(iy, 1), ny - 3);
  iz = min(max(iz, 1), nz - 3);
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int a = 0; a < 4; ++a)
        acc += wx[a] * wy[b] * wz[c] *
               grid[((long)(iz + c - 1) * ny + (iy + b - 1)) * nx + (ix + a - 1)];
  out[p] = acc;
}
