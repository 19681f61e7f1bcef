// 2D stencils in the shape of the KernelGen-style benchmarks that shuffle
// synthesis targets: neighbouring threads of a warp load overlapping elements
// (c-1, c, c+1), so one lane's load can be served by another lane's register.

__constant__ float kGauss5[5][5];

// Jacobi relaxation, single precision, with __restrict__ (ld.global.nc).
__global__ void jacobi2d(const float* __restrict__ in, float* __restrict__ out,
                         int nx, int ny) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
  int c = j * nx + i;
  out[c] = 0.25f * (in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx]);
}

// 5-point Laplacian in double precision, no __restrict__ (plain ld.global).
__global__ void laplacian2d(const double* in, double* out, int nx, int ny,
                            double h2inv) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i > 0 && i < nx - 1 && j > 0 && j < ny - 1) {
    long c = (long)j * nx + i;
    out[c] = h2inv * (in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx] - 4.0 * in[c]);
  }
}

// 5x5 Gaussian blur with the weights in constant memory (ld.const).
__global__ void gaussblur(const float* __restrict__ in, float* __restrict__ out,
                          int nx, int ny) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 2 || j < 2 || i >= nx - 2 || j >= ny - 2) return;
  float acc = 0.0f;
#pragma unroll
  for (int dj = -2; dj <= 2; ++dj)
#pragma unroll
    for (int di = -2; di <= 2; ++di)
      acc += kGauss5[dj + 2][di + 2] * in[(j + dj) * nx + (i + di)];
  out[j * nx + i] = acc;
}

// Conway's game of life on bytes: 8 neighbour loads plus a data-dependent select.
__global__ void gameoflife(const unsigned char* __restrict__ in,
                           unsigned char* __restrict__ out, int nx, int ny) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
  int n = 0;
  for (int dj = -1; dj <= 1; ++dj)
    for (int di = -1; di <= 1; ++di)
      if (di != 0 || dj != 0) n += in[(j + dj) * nx + i + di];
  unsigned char alive = in[j * nx + i];
  out[j * nx + i] = (n == 3 || (alive && n == 2)) ? 1 : 0;
}

// Red-black Gauss-Seidel sweep: the colour test makes half the lanes idle.
__global__ void lapgsrb(float* u, const float* __restrict__ f, int nx, int ny,
                        int colour, float h2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
  if (((i + j) & 1) != colour) return;
  int c = j * nx + i;
  u[c] = 0.25f * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] - h2 * f[c]);
}
