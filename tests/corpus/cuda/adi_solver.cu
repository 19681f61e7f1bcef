// NPB-like ADI line solves: one thread per grid line, a tridiagonal (Thomas)
// sweep along x, y or z, and a pentadiagonal forward elimination along x as
// in NPB SP's x_solve. Helpers are __device__ functions, so a -G build calls
// them (loads and stores inside callees).

#define IDX(i, j, k, nx, ny) ((i) + (nx) * ((j) + (ny) * (k)))

__device__ double load_coef(const double* __restrict__ c, int idx) { return c[idx]; }

__device__ void thomas_step(double* cp, double* dp, const double* a, const double* b, const double* c,
                            const double* d, int cur, int prev)
{
    double m = 1.0 / (load_coef(b, cur) - load_coef(a, cur) * cp[prev]);
    cp[cur] = load_coef(c, cur) * m;
    dp[cur] = (load_coef(d, cur) - load_coef(a, cur) * dp[prev]) * m;
}

__global__ void adi_x_sweep(const double* a, const double* b, const double* c, const double* d, double* cp,
                            double* dp, double* x, int nx, int ny, int nz)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= ny || k >= nz) return;
    int first = IDX(0, j, k, nx, ny);
    cp[first] = c[first] / b[first];
    dp[first] = d[first] / b[first];
    for (int i = 1; i < nx; i++) thomas_step(cp, dp, a, b, c, d, IDX(i, j, k, nx, ny), IDX(i - 1, j, k, nx, ny));
    x[IDX(nx - 1, j, k, nx, ny)] = dp[IDX(nx - 1, j, k, nx, ny)];
    for (int i = nx - 2; i >= 0; i--) {
        int cur = IDX(i, j, k, nx, ny);
        x[cur] = dp[cur] - cp[cur] * x[cur + 1];
    }
}

__global__ void adi_y_sweep(const double* a, const double* b, const double* c, const double* d, double* cp,
                            double* dp, double* x, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || k >= nz) return;
    int first = IDX(i, 0, k, nx, ny);
    cp[first] = c[first] / b[first];
    dp[first] = d[first] / b[first];
    for (int j = 1; j < ny; j++) thomas_step(cp, dp, a, b, c, d, IDX(i, j, k, nx, ny), IDX(i, j - 1, k, nx, ny));
    x[IDX(i, ny - 1, k, nx, ny)] = dp[IDX(i, ny - 1, k, nx, ny)];
    for (int j = ny - 2; j >= 0; j--) {
        int cur = IDX(i, j, k, nx, ny);
        x[cur] = dp[cur] - cp[cur] * x[cur + nx];
    }
}

__global__ void adi_z_sweep(const double* a, const double* b, const double* c, const double* d, double* cp,
                            double* dp, double* x, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    int plane = nx * ny;
    int first = IDX(i, j, 0, nx, ny);
    cp[first] = c[first] / b[first];
    dp[first] = d[first] / b[first];
    for (int k = 1; k < nz; k++) thomas_step(cp, dp, a, b, c, d, first + k * plane, first + (k - 1) * plane);
    x[first + (nz - 1) * plane] = dp[first + (nz - 1) * plane];
    for (int k = nz - 2; k >= 0; k--) {
        int cur = first + k * plane;
        x[cur] = dp[cur] - cp[cur] * x[cur + plane];
    }
}

// Pentadiagonal forward elimination along x (NPB SP x_solve, one right-hand side).
__global__ void penta_x_forward(double* lhs, double* rhs, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= ny) return;
    double* l = lhs + (size_t)j * nx * 5;
    double* r = rhs + (size_t)j * nx;
    for (int i = 0; i < nx - 2; i++) {
        double fac1 = 1.0 / l[5 * i + 2];
        l[5 * i + 3] *= fac1;
        l[5 * i + 4] *= fac1;
        r[i] *= fac1;
        l[5 * (i + 1) + 2] -= l[5 * (i + 1) + 1] * l[5 * i + 3];
        l[5 * (i + 1) + 3] -= l[5 * (i + 1) + 1] * l[5 * i + 4];
        r[i + 1] -= l[5 * (i + 1) + 1] * r[i];
        l[5 * (i + 2) + 1] -= l[5 * (i + 2) + 0] * l[5 * i + 3];
        l[5 * (i + 2) + 2] -= l[5 * (i + 2) + 0] * l[5 * i + 4];
        r[i + 2] -= l[5 * (i + 2) + 0] * r[i];
    }
}
