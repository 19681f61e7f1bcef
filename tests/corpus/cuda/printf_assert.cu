// Device printf (lowered to a call of the extern vprintf with a local
// argument buffer and a string constant in .global), assert
// (__assertfail), and device-side malloc/free (extern calls too).
#include <cassert>
#include <cstdio>

__global__ void print_kernel(const float* __restrict__ x, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t == 0) printf("n=%d first=%f\n", n, x[0]);
  if (t < n && x[t] < 0.f)
    printf("block %u thread %u: x[%d]=%g (%e) as long %lld, ptr %p, char %c, str %s\n",
           blockIdx.x, threadIdx.x, t, x[t], (double)x[t], (long long)x[t], (const void*)x,
           'A' + (t % 26), "negative");
  if (t == 1) printf("no arguments at all\n");
}

__global__ void assert_kernel(const int* __restrict__ v, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  assert(t < n);
  assert(v[t] >= 0 && "values must be non-negative");
}

__global__ void malloc_kernel(int* __restrict__ out, int n) {
  int* scratch = static_cast<int*>(malloc(n * sizeof(int)));
  if (scratch == nullptr) {
    out[0] = -1;
    return;
  }
  for (int i = 0; i < n; ++i) scratch[i] = i * threadIdx.x;
  int s = 0;
  for (int i = n - 1; i >= 0; --i) s += scratch[i];
  out[threadIdx.x] = s;
  free(scratch);
}
