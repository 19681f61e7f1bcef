// matvec: y = A x, row-major A (m rows, n columns), one thread per row, the dot
// product a sequential loop (the only 1-D kernel of the suite).
extern "C" __global__ void matvec(const float *__restrict__ a, const float *__restrict__ x,
                                  float *__restrict__ y, int m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float sum = 0.0f;
        for (int j = 0; j < n; j++) sum += a[i * n + j] * x[j];
        y[i] = sum;
    }
}
