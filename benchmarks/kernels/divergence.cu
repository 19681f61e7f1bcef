// divergence: div = alpha du/dx + beta dv/dy + gamma dw/dz with second-order central
// differences on the interior of a 3-D grid (no __restrict__: plain C pointers, as
// OpenACC code passes them). Along x only u is read twice: u[idx-1] and u[idx+1].
extern "C" __global__ void divergence(const float *u, const float *v, const float *w, float *div,
                                      float alpha, float beta, float gamma, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1 && k >= 1 && k < nz - 1) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        div[idx] = alpha * (u[idx + 1] - u[idx - 1]) + beta * (v[idx + nx] - v[idx - nx]) +
                   gamma * (w[idx + nxy] - w[idx - nxy]);
    }
}
