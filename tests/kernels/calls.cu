#include <cassert>
#include <cstdio>
// Device function calls (not inlined), recursion, function pointers, local
// arrays and printf.

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ __noinline__ float axpy1(float a, float x, float y) { return __fadd_rn(__fmul_rn(a, x), y); }

__device__ __noinline__ int sum_local(const int *v, int k) {
    int s = 0;
    for (int j = 0; j < k; ++j) s += v[j];
    return s;
}

__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int square(int x) { return x * x; }
typedef int (*unary_fn)(int);
__device__ unary_fn table[2] = {twice, square};

extern "C" __global__ void calls(const int *in, int *out, float *fout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    int local[24];  // indexed with a data-dependent index: stays in local memory
    for (int j = 0; j < 24; ++j) local[j] = v * j + i;
    int k = (v & 15) + 1;
    out[4 * i + 0] = fib(v % 12);
    out[4 * i + 1] = sum_local(local, k);
    out[4 * i + 2] = local[(v * 7) % 24];
    out[4 * i + 3] = table[v & 1](v);   // divergent indirect call
    fout[i] = axpy1(1.5f, (float)v, 0.25f);
}

extern "C" __global__ void hello(const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i % 5 == 0) printf("thread %d: x=%f %s %u\n", i, x[i], i % 2 ? "odd" : "even", (unsigned)i * 3u);
}

extern "C" __global__ void checked(const int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(x[i] >= 0);
}
