// gradient: (gx, gy, gz) = grad f with second-order central differences on the
// interior of a 3-D grid. Three outputs, stored as soon as each is known; the
// pointers may alias (no __restrict__), so the later loads follow stores.
extern "C" __global__ void gradient(const float *f, float *gx, float *gy, float *gz, float rhx,
                                    float rhy, float rhz, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1 && k >= 1 && k < nz - 1) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        gx[idx] = 0.5f * rhx * (f[idx + 1] - f[idx - 1]);
        gy[idx] = 0.5f * rhy * (f[idx + nx] - f[idx - nx]);
        gz[idx] = 0.5f * rhz * (f[idx + nxy] - f[idx - nxy]);
    }
}
