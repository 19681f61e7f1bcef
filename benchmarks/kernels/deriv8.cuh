// Body of deriv8 for one element type (see deriv8.cu).
extern "C" __global__ void DERIV8_NAME(const REAL *__restrict__ u, const REAL *__restrict__ v,
                                       const REAL *__restrict__ w, REAL *__restrict__ div,
                                       REAL *__restrict__ cx, REAL *__restrict__ cy, REAL *__restrict__ cz,
                                       REAL rdx, REAL rdy, REAL rdz, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 4 && i < nx - 4 && j >= 4 && j < ny - 4 && k >= 4 && k < nz - 4) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        div[idx] = DERIV8(u, 1) * rdx + DERIV8(v, nx) * rdy + DERIV8(w, nxy) * rdz;
        cx[idx] = DERIV8(w, nx) * rdy - DERIV8(v, nxy) * rdz;
        cy[idx] = DERIV8(u, nxy) * rdz - DERIV8(w, 1) * rdx;
        cz[idx] = DERIV8(v, 1) * rdx - DERIV8(u, nx) * rdy;
    }
}
