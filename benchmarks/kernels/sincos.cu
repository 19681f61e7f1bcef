// sincos: xy = sin(x) + cos(y) pointwise over a 3-D grid (libm calls, no
// neighbour reads). The symbol is sincos_kernel: libm already owns "sincos".
extern "C" __global__ void sincos_kernel(const float *__restrict__ x, const float *__restrict__ y,
                                         float *__restrict__ xy, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < nx && j < ny && k < nz) {
        int idx = (k * ny + j) * nx + i;
        xy[idx] = sinf(x[idx]) + cosf(y[idx]);
    }
}
