// 3D stencils: the 7-point Laplacian, a 13-point 4th-order wave stencil, and
// a 2.5D variant that walks z with a register queue and a shared-memory tile.

#define IDX3(i, j, k, nx, ny) ((((long)(k) * (ny)) + (j)) * (nx) + (i))

__global__ void laplacian3d(const float* __restrict__ in, float* __restrict__ out,
                            int nx, int ny, int nz) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int k = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < 1 || j < 1 || k < 1 || i >= nx - 1 || j >= ny - 1 || k >= nz - 1) return;
  long c = IDX3(i, j, k, nx, ny);
  long sx = 1, sy = nx, sz = (long)nx * ny;
  out[c] = in[c - sx] + in[c + sx] + in[c - sy] + in[c + sy] + in[c - sz] +
           in[c + sz] - 6.0f * in[c];
}

// 13-point wave equation update: centre plus +-1 and +-2 along each axis.
__global__ void wave13pt(const float* __restrict__ u0, const float* __restrict__ u1,
                         float* __restrict__ u2, int nx, int ny, int nz, float c0,
                         float c1, float c2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + 2;
  int j = blockIdx.y * blockDim.y + threadIdx.y + 2;
  int k = blockIdx.z * blockDim.z + threadIdx.z + 2;
  if (i >= nx - 2 || j >= ny - 2 || k >= nz - 2) return;
  long sy = nx, sz = (long)nx * ny;
  long c = IDX3(i, j, k, nx, ny);
  float lap = c0 * u1[c] +
              c1 * (u1[c - 1] + u1[c + 1] + u1[c - sy] + u1[c + sy] + u1[c - sz] + u1[c + sz]) +
              c2 * (u1[c - 2] + u1[c + 2] + u1[c - 2 * sy] + u1[c + 2 * sy] +
                    u1[c - 2 * sz] + u1[c + 2 * sz]);
  u2[c] = 2.0f * u1[c] - u0[c] + lap;
}

// Double-precision 3D divergence of a vector field (three input arrays).
__global__ void divergence3d(const double* __restrict__ vx, const double* __restrict__ vy,
                             const double* __restrict__ vz, double* __restrict__ div,
                             int nx, int ny, int nz, double inv2h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int k = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < 1 || j < 1 || k < 1 || i >= nx - 1 || j >= ny - 1 || k >= nz - 1) return;
  long c = IDX3(i, j, k, nx, ny);
  long sz = (long)nx * ny;
  div[c] = inv2h * ((vx[c + 1] - vx[c - 1]) + (vy[c + nx] - vy[c - nx]) + (vz[c + sz] - vz[c - sz]));
}

// 2.5D blocking: each thread marches along z keeping behind/current/ahead in
// registers; the xy plane goes through a shared tile with a halo.
template <int BX, int BY>
__global__ void laplacian3d_25d(const float* __restrict__ in, float* __restrict__ out,
                                int nx, int ny, int nz) {
  __shared__ float tile[BY + 2][BX + 2];
  int i = blockIdx.x * BX + threadIdx.x + 1;
  int j = blockIdx.y * BY + threadIdx.y + 1;
  int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  bool inside = i < nx - 1 && j < ny - 1;
  long sz = (long)nx * ny;
  float behind = 0.f, current = 0.f, ahead = 0.f;
  if (inside) {
    behind = in[IDX3(i, j, 0, nx, ny)];
    current = in[IDX3(i, j, 1, nx, ny)];
  }
  for (int k = 1; k < nz - 1; ++k) {
    if (inside) ahead = in[IDX3(i, j, k, nx, ny) + sz];
    __syncthreads();
    if (inside) {
      tile[ty][tx] = current;
      if (threadIdx.x == 0) tile[ty][0] = in[IDX3(i - 1, j, k, nx, ny)];
      if (threadIdx.x == BX - 1 || i == nx - 2) tile[ty][tx + 1] = in[IDX3(i + 1, j, k, nx, ny)];
      if (threadIdx.y == 0) tile[0][tx] = in[IDX3(i, j - 1, k, nx, ny)];
      if (threadIdx.y == BY - 1 || j == ny - 2) tile[ty + 1][tx] = in[IDX3(i, j + 1, k, nx, ny)];
    }
    __syncthreads();
    if (inside)
      out[IDX3(i, j, k, nx, ny)] = tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] +
                                   tile[ty + 1][tx] + behind + ahead - 6.0f * current;
    behind = current;
    current = ahead;
  }
}

template __global__ void laplacian3d_25d<32, 8>(const float*, float*, int, int, int);
