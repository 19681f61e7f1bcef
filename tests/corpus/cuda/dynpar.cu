// Dynamic parallelism (needs -rdc=true): a parent kernel launches a child
// grid, which lowers to extern calls of cudaGetParameterBufferV2 /
// cudaLaunchDeviceV2, plus device-side stream and event API use.

__global__ void child(float* data, int offset, float scale) {
  int i = offset + blockIdx.x * blockDim.x + threadIdx.x;
  data[i] *= scale;
}

__global__ void parent(float* data, int n, int chunk) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int offset = c * chunk;
  if (offset >= n) return;
  int blocks = (chunk + 127) / 128;
  child<<<blocks, 128>>>(data, offset, 0.5f);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  child<<<blocks, 128, 0, s>>>(data, offset, 2.0f);
  cudaStreamDestroy(s);
  if (cudaGetLastError() != cudaSuccess) data[offset] = -1.f;
}

// Tail launch into the same stream from one thread.
__global__ void recursive_halving(int* counter, int depth) {
  if (threadIdx.x == 0) {
    atomicAdd(counter, 1);
    if (depth > 0) recursive_halving<<<1, 32, 0, cudaStreamTailLaunch>>>(counter, depth - 1);
  }
}
