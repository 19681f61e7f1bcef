// matmul: C = A B, row-major, one thread per element of C (i: column, j: row), the
// reduction over k a sequential loop. A[j][k] is the same for the whole row of
// threads and B[k][i] differs per lane: no load reads what a neighbour lane read.
extern "C" __global__ void matmul(const float *__restrict__ a, const float *__restrict__ b,
                                  float *__restrict__ c, int nx, int ny, int nk) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx && j < ny) {
        float sum = 0.0f;
        for (int k = 0; k < nk; k++) sum += a[j * nk + k] * b[k * nx + i];
        c[j * nx + i] = sum;
    }
}
