// A small kernel for the nvcc / CMake tool-chain tests (written for ptxasw).
__global__ void vecadd(float *c, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
