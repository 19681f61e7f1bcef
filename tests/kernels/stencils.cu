// Stencils with boundary branches: lanes of a warp take different paths at
// the edges of the domain.

// One Jacobi sweep of the 5-point Laplacian; boundary points are copied.
extern "C" __global__ void jacobi2d(const float *in, float *out, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    int i = y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
        out[i] = in[i];
    } else {
        float s = __fadd_rn(__fadd_rn(in[i - 1], in[i + 1]), __fadd_rn(in[i - nx], in[i + nx]));
        out[i] = __fmul_rn(0.25f, s);
    }
}

// 7-point stencil in 3D; each face handled by its own branch.
extern "C" __global__ void stencil3d(const double *in, double *out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    long i = ((long)z * ny + y) * nx + x;
    double c = in[i];
    double xm = x > 0 ? in[i - 1] : c;
    double xp = x < nx - 1 ? in[i + 1] : c;
    double ym = y > 0 ? in[i - nx] : c;
    double yp = y < ny - 1 ? in[i + nx] : c;
    double zm, zp;
    if (z > 0) zm = in[i - (long)nx * ny]; else zm = c;
    if (z < nz - 1) zp = in[i + (long)nx * ny]; else zp = c;
    double s = __dadd_rn(__dadd_rn(__dadd_rn(xm, xp), __dadd_rn(ym, yp)), __dadd_rn(zm, zp));
    out[i] = __dadd_rn(__dmul_rn(0.5, c), __dmul_rn(s, 1.0 / 12.0));
}
