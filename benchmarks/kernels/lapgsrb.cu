// lapgsrb: one red-black Gauss-Seidel half sweep (points with (i+j+k+color) even)
// of the variable-coefficient Helmholtz operator
//   A u = alpha a u - beta div(b grad u)   (7 points, b given on the cell faces),
// u <- u + dinv (f - A u), in place. A point reads only its own value and the
// opposite colour, so the in-place update is race free. Half the lanes of
// every warp skip the work (divergent flow).
extern "C" __global__ void lapgsrb(float *__restrict__ u, const float *__restrict__ f,
                                   const float *__restrict__ a, const float *__restrict__ bx,
                                   const float *__restrict__ by, const float *__restrict__ bz,
                                   const float *__restrict__ dinv, float alpha, float beta_h2inv,
                                   int color, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1 && k >= 1 && k < nz - 1 &&
        ((i + j + k + color) & 1) == 0) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        float c = u[idx];
        float div = bx[idx + 1] * (u[idx + 1] - c) - bx[idx] * (c - u[idx - 1]) +
                    by[idx + nx] * (u[idx + nx] - c) - by[idx] * (c - u[idx - nx]) +
                    bz[idx + nxy] * (u[idx + nxy] - c) - bz[idx] * (c - u[idx - nxy]);
        float au = alpha * a[idx] * c - beta_h2inv * div;
        u[idx] = c + dinv[idx] * (f[idx] - au);
    }
}
