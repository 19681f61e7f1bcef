// Control flow and block-level synchronisation the CFG and emulator must
// handle: nested loops with break/continue, early exits, data-dependent
// trip counts, selects, integer division by run-time values, barrier
// reductions (__syncthreads_count/and/or -> bar.red), named barriers
// (bar.sync/bar.arrive with thread counts), __syncwarp with masks, and trap.

__global__ void loops(const int* __restrict__ in, int* __restrict__ out, int n, int m) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int acc = 0;
  for (int i = 0; i < m; ++i) {
    int v = in[(t + i) % n];
    if (v < 0) continue;
    if (v > 1000) break;
    for (int j = 0; j < (v & 7); ++j) acc += (j & 1) ? v / (j + 1) : v % (j + 3);
  }
  int k = t;
  while (k > 1) k = (k & 1) ? 3 * k + 1 : k >> 1;  // data-dependent trip count
  do {
    acc ^= acc << 3;
  } while (acc > 0 && (acc & 0x100));
  out[t] = acc + k + (acc > 7 ? 11 : -5);
}

__global__ void divmod(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                       const long long* __restrict__ c, long long* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned d = b[i] | 1u;
  long long e = c[i] | 1;
  out[i] = (long long)(a[i] / d) + (long long)(a[i] % d) + c[i] / e + c[i] % 7 + (long long)(a[i] / 10u);
}

__global__ void barrier_reductions(const float* __restrict__ in, int* __restrict__ out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int cnt = __syncthreads_count(v > 0.f);
  int all = __syncthreads_and(v > -1.f);
  int any = __syncthreads_or(v > 100.f);
  if (threadIdx.x == 0) out[blockIdx.x] = cnt + (all << 16) + (any << 17);
}

// Producer warps arrive on named barrier 1, consumer warps sync on it.
__global__ void named_barriers(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float buf[64];
  int warp = threadIdx.x / 32;
  if (warp < 2) {
    buf[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x] * 2.f;
    asm volatile("bar.arrive 1, 128;" ::: "memory");
  } else {
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[blockIdx.x * 64 + threadIdx.x - 64] = buf[127 - threadIdx.x];
  }
  asm volatile("barrier.sync.aligned 2;" ::: "memory");
}

__global__ void syncwarp_masks(int* __restrict__ data) {
  int lane = threadIdx.x & 31;
  __shared__ int s[32];
  s[lane] = lane;
  __syncwarp();
  if (lane < 16) {
    s[lane] += s[lane + 16];
    __syncwarp(0x0000ffffu);
    if (lane < 8) s[lane] += s[lane + 8];
    __syncwarp(0x000000ffu);
  }
  __syncwarp(0xffffffffu);
  data[threadIdx.x] = s[lane];
}

__global__ void guarded_trap(const int* __restrict__ in, int* __restrict__ out) {
  int v = in[threadIdx.x];
  if (__builtin_expect(v == 0x7fffffff, 0)) __trap();
  __builtin_assume(v >= 0);
  out[threadIdx.x] = v / 4;
}
