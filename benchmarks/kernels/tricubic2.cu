// tricubic2: tricubic Catmull-Rom interpolation, evaluated separably (the 16 rows
// along x first, then the 4 columns along y, then z), from the same 4x4x4
// neighbourhood as tricubic: 64 loads of u plus the 3 offsets.

// Catmull-Rom weights of the nodes -1, 0, 1, 2 at t (a macro: no device function).
#define CATMULL_ROM4(t, w)                                     \
    do {                                                       \
        float t2 = (t) * (t), t3 = t2 * (t);                   \
        w[0] = 0.5f * (-t3 + 2.0f * t2 - (t));                 \
        w[1] = 0.5f * (3.0f * t3 - 5.0f * t2 + 2.0f);          \
        w[2] = 0.5f * (-3.0f * t3 + 4.0f * t2 + (t));          \
        w[3] = 0.5f * (t3 - t2);                               \
    } while (0)

extern "C" __global__ void tricubic2(const float *__restrict__ u, const float *__restrict__ dx,
                                     const float *__restrict__ dy, const float *__restrict__ dz,
                                     float *__restrict__ out, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 2 && j >= 1 && j < ny - 2 && k >= 1 && k < nz - 2) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        float wx[4], wy[4], wz[4];
        CATMULL_ROM4(dx[idx], wx);
        CATMULL_ROM4(dy[idx], wy);
        CATMULL_ROM4(dz[idx], wz);
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            float plane = 0.0f;
#pragma unroll
            for (int b = 0; b < 4; b++) {
                const float *row = u + idx + (c - 1) * nxy + (b - 1) * nx;
                float line = wx[0] * row[-1] + wx[1] * row[0] + wx[2] * row[1] + wx[3] * row[2];
                plane += wy[b] * line;
            }
            sum += wz[c] * plane;
        }
        out[idx] = sum;
    }
}
