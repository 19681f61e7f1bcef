// vecadd: c = a + b over a 3-D grid, one thread per point.
// Two loads of different arrays at the same index: nothing for a shuffle.
extern "C" __global__ void vecadd(const float *__restrict__ a, const float *__restrict__ b,
                                  float *__restrict__ c, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < nx && j < ny && k < nz) {
        int idx = (k * ny + j) * nx + i;
        c[idx] = a[idx] + b[idx];
    }
}
