// Seismic wave propagation: the 25-point (8th order in space, 2nd in time)
// 3-D stencil of RTM codes, with a z-marching loop over planes as in
// production kernels, and the plain one-point-per-thread version.

#define R 4

__constant__ float c8[R + 1] = {-2.847222f, 1.6f, -0.2f, 0.02539683f, -0.001785714f};

__global__ void seismic25_naive(const float* __restrict__ u, const float* __restrict__ uprev,
                                const float* __restrict__ vel, float* __restrict__ unext, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x + R;
    int y = blockIdx.y * blockDim.y + threadIdx.y + R;
    int z = blockIdx.z * blockDim.z + threadIdx.z + R;
    if (x >= nx - R || y >= ny - R || z >= nz - R) return;
    size_t sy = nx, sz = (size_t)nx * ny;
    size_t c = z * sz + y * sy + x;
    float lap = 3.f * c8[0] * u[c];
#pragma unroll
    for (int r = 1; r <= R; r++)
        lap += c8[r] * (u[c + r] + u[c - r] + u[c + r * sy] + u[c - r * sy] + u[c + r * sz] + u[c - r * sz]);
    unext[c] = 2.f * u[c] - uprev[c] + vel[c] * lap;
}

__global__ void seismic25_zmarch(const float* __restrict__ u, const float* __restrict__ uprev,
                                 const float* __restrict__ vel, float* __restrict__ unext, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x + R;
    int y = blockIdx.y * blockDim.y + threadIdx.y + R;
    if (x >= nx - R || y >= ny - R) return;
    size_t sy = nx, sz = (size_t)nx * ny;
    float behind[R], infront[R], cur;
    size_t c = R * sz + y * sy + x;
#pragma unroll
    for (int r = 0; r < R; r++) {
        behind[r] = u[c - (r + 1) * sz];
        infront[r] = u[c + (r + 1) * sz];
    }
    cur = u[c];
    for (int z = R; z < nz - R; z++) {
        float lap = 3.f * c8[0] * cur;
#pragma unroll
        for (int r = 1; r <= R; r++)
            lap += c8[r] * (u[c + r] + u[c - r] + u[c + r * sy] + u[c - r * sy] + behind[r - 1] + infront[r - 1]);
        unext[c] = 2.f * cur - uprev[c] + vel[c] * lap;
#pragma unroll
        for (int r = R - 1; r > 0; r--) behind[r] = behind[r - 1];
        behind[0] = cur;
        cur = infront[0];
#pragma unroll
        for (int r = 0; r < R - 1; r++) infront[r] = infront[r + 1];
        c += sz;
        infront[R - 1] = u[c + R * sz];
    }
}
