// tricubic: tricubic Lagrange interpolation. Each point (i, j, k) carries a
// fractional offset (dx, dy, dz) in [0, 1); the result interpolates u at
// (i+dx, j+dy, k+dz) from the 4x4x4 neighbours i-1 .. i+2 (and the same in j, k)
// with the cubic Lagrange weights of the nodes -1, 0, 1, 2: 64 loads of u plus 3.

// Lagrange weights of the nodes -1, 0, 1, 2 at t (a macro: no device function).
#define LAGRANGE4(t, w)                                        \
    do {                                                       \
        float tm1 = (t) - 1.0f, tm2 = (t) - 2.0f, tp1 = (t) + 1.0f; \
        w[0] = -(t) * tm1 * tm2 * (1.0f / 6.0f);               \
        w[1] = tp1 * tm1 * tm2 * 0.5f;                         \
        w[2] = -tp1 * (t) * tm2 * 0.5f;                        \
        w[3] = tp1 * (t) * tm1 * (1.0f / 6.0f);                \
    } while (0)

extern "C" __global__ void tricubic(const float *__restrict__ u, const float *__restrict__ dx,
                                    const float *__restrict__ dy, const float *__restrict__ dz,
                                    float *__restrict__ out, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 2 && j >= 1 && j < ny - 2 && k >= 1 && k < nz - 2) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        float wx[4], wy[4], wz[4];
        LAGRANGE4(dx[idx], wx);
        LAGRANGE4(dy[idx], wy);
        LAGRANGE4(dz[idx], wz);
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; c++)
#pragma unroll
            for (int b = 0; b < 4; b++)
#pragma unroll
                for (int a = 0; a < 4; a++)
                    sum += wz[c] * wy[b] * wx[a] * u[idx + (c - 1) * nxy + (b - 1) * nx + (a - 1)];
        out[idx] = sum;
    }
}
