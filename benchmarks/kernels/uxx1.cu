// uxx1: the x-velocity update of a staggered-grid 4th-order elastic wave solver
// (AWP-ODC style): u1 += dth / d1 * (c1 (xx[i] - xx[i-1]) + c2 (xx[i+1] - xx[i-2])
// + the same for xy along y and xz along z), d1 the density averaged over the four
// cells around the velocity node. 17 loads; along x: xx[idx-2 .. idx+1]. u1 is
// updated in place.
extern "C" __global__ void uxx1(float *__restrict__ u1, const float *__restrict__ xx,
                                const float *__restrict__ xy, const float *__restrict__ xz,
                                const float *__restrict__ d, float dth, float c1, float c2, int nx,
                                int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 2 && i < nx - 2 && j >= 2 && j < ny - 2 && k >= 2 && k < nz - 2) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        float d1 = 0.25f * (d[idx] + d[idx - nx] + d[idx - nxy] + d[idx - nx - nxy]);
        float sx = c1 * (xx[idx] - xx[idx - 1]) + c2 * (xx[idx + 1] - xx[idx - 2]);
        float sy = c1 * (xy[idx] - xy[idx - nx]) + c2 * (xy[idx + nx] - xy[idx - 2 * nx]);
        float sz = c1 * (xz[idx] - xz[idx - nxy]) + c2 * (xz[idx + nxy] - xz[idx - 2 * nxy]);
        u1[idx] += dth / d1 * (sx + sy + sz);
    }
}
