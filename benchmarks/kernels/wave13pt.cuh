// Body of wave13pt for one element type (see wave13pt.cu).
extern "C" __global__ void WAVE13PT_NAME(const REAL *__restrict__ w0, const REAL *__restrict__ w1,
                                         REAL *__restrict__ w2, REAL m0, REAL m1, REAL m2, int nx, int ny,
                                         int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 2 && i < nx - 2 && j >= 2 && j < ny - 2 && k >= 2 && k < nz - 2) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        REAL near = w1[idx - 1] + w1[idx + 1] + w1[idx - nx] + w1[idx + nx] + w1[idx - nxy] + w1[idx + nxy];
        REAL far = w1[idx - 2] + w1[idx + 2] + w1[idx - 2 * nx] + w1[idx + 2 * nx] + w1[idx - 2 * nxy] +
                   w1[idx + 2 * nxy];
        w2[idx] = m0 * w1[idx] + m1 * near + m2 * far - w0[idx];
    }
}
