// Element-wise kernels for the interpreter tests: vector add, exactly rounded
// float and double arithmetic, and a loop whose trip count depends on the data.
// The arithmetic uses the _rn intrinsics so that nvcc cannot contract a*b+c
// into an fma: every result is then one IEEE operation, comparable bit for bit
// with NumPy.

extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// out[k*n + i] for k = add, sub, mul, div, sqrt(|x|), fma(x, y, z), min, max.
extern "C" __global__ void float_ops(const float *x, const float *y, const float *z, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i], c = z[i];
    out[0 * n + i] = __fadd_rn(a, b);
    out[1 * n + i] = __fsub_rn(a, b);
    out[2 * n + i] = __fmul_rn(a, b);
    out[3 * n + i] = __fdiv_rn(a, b);
    out[4 * n + i] = __fsqrt_rn(fabsf(a));
    out[5 * n + i] = __fmaf_rn(a, b, c);
    out[6 * n + i] = fminf(a, b);
    out[7 * n + i] = fmaxf(a, b);
}

extern "C" __global__ void double_ops(const double *x, const double *y, const double *z, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = x[i], b = y[i], c = z[i];
    out[0 * n + i] = __dadd_rn(a, b);
    out[1 * n + i] = __dsub_rn(a, b);
    out[2 * n + i] = __dmul_rn(a, b);
    out[3 * n + i] = __ddiv_rn(a, b);
    out[4 * n + i] = __dsqrt_rn(fabs(a));
    out[5 * n + i] = __fma_rn(a, b, c);
}

// Integer and conversion mix: signed division, shifts, float <-> int.
extern "C" __global__ void int_ops(const int *x, const int *y, int *out, float *fout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int a = x[i], b = y[i];
    out[0 * n + i] = a / (b == 0 ? 1 : b);
    out[1 * n + i] = a % (b == 0 ? 1 : b);
    out[2 * n + i] = (a << 3) ^ (b >> 2);
    out[3 * n + i] = (int)((unsigned)a >> 5);
    out[4 * n + i] = __popc(a) + __clz(b);
    out[5 * n + i] = min(a, b) - max(a, b);
    fout[i] = __int2float_rn(a) * 0.5f;
}

// Collatz: every thread loops a different number of times (lanes leave the
// loop at different iterations and reconverge after it).
extern "C" __global__ void collatz(const unsigned *start, int *steps, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long v = start[i];
    int count = 0;
    while (v != 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        ++count;
    }
    steps[i] = count;
}

// 2D launch with a 2D index computation and a grid-stride loop.
extern "C" __global__ void scale2d(float *a, int nx, int ny, float s) {
    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < ny; y += blockDim.y * gridDim.y)
        for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < nx; x += blockDim.x * gridDim.x)
            a[y * nx + x] = __fmul_rn(a[y * nx + x], s);
}

// A struct passed by value, constant memory with an initialiser and a
// __device__ counter (module-scope .global variable).
struct Params {
    int offset;
    float scale;
    double bias;
};
__constant__ float coef[4] = {1.0f, 0.5f, 0.25f, 0.125f};
__device__ int calls_made;
__device__ int ones[3] = {1, 1, 1};

extern "C" __global__ void with_struct(Params p, const float *in, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = __fmul_rn(in[i], __fmul_rn(p.scale, coef[i & 3]));
    out[i] = __dadd_rn((double)v, p.bias) + (double)(p.offset + ones[i % 3]);
    atomicAdd(&calls_made, 1);
}

// Lanes leave a loop three ways: returning from the kernel, breaking out, or
// running to the end; after the loop only the lanes that did not return are
// active.
extern "C" __global__ void early_exit(const int *limit, int *out, unsigned *active) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lim = limit[t];
    int acc = 0;
    for (int k = 0; k < 40; ++k) {
        if (k == lim) return;
        acc += k * (lim & 3);
        if (acc > 60) break;
    }
    out[t] = acc;
    active[t] = __activemask();
}
