// Body of gaussblur for one element type; gaussblur.cu instantiates it with
// REAL = float and double (a macro, not a template, so that the exported names
// are plain and a -G build has no device-function calls).
extern "C" __global__ void GAUSSBLUR_NAME(const REAL *__restrict__ in, REAL *__restrict__ out, int nx,
                                          int ny) {
    // The 5-tap binomial filter (1 4 6 4 1) / 16; the 2-D weights are products.
    const REAL g[5] = {(REAL)0.0625, (REAL)0.25, (REAL)0.375, (REAL)0.25, (REAL)0.0625};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= 2 && i < nx - 2 && j >= 2 && j < ny - 2) {
        int idx = j * nx + i;
        REAL sum = (REAL)0;
#pragma unroll
        for (int b = -2; b <= 2; b++)
#pragma unroll
            for (int a = -2; a <= 2; a++) sum += g[b + 2] * g[a + 2] * in[idx + b * nx + a];
        out[idx] = sum;
    }
}
