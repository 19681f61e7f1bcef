// laplacian: out = c0 u + c1 (sum of the six face neighbours), the 7-point 3-D
// Laplacian on the interior. Along x: u[idx-1], u[idx], u[idx+1].
extern "C" __global__ void laplacian(const float *u, float *out, float c0, float c1, int nx, int ny,
                                     int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1 && k >= 1 && k < nz - 1) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        out[idx] = c0 * u[idx] + c1 * (u[idx - 1] + u[idx + 1] + u[idx - nx] + u[idx + nx] +
                                       u[idx - nxy] + u[idx + nxy]);
    }
}
