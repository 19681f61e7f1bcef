// sm_80 warp reduction instructions (redux.sync): __reduce_*_sync on
// unsigned and signed ints, inside both full and partial masks.

__global__ void redux_kernel(const unsigned* __restrict__ u, const int* __restrict__ s,
                             unsigned* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned a = u[t];
  int b = s[t];
  unsigned sum = __reduce_add_sync(0xffffffffu, a);
  unsigned mn = __reduce_min_sync(0xffffffffu, a);
  unsigned mx = __reduce_max_sync(0xffffffffu, a);
  int smn = __reduce_min_sync(0xffffffffu, b);
  int smx = __reduce_max_sync(0xffffffffu, b);
  unsigned an = __reduce_and_sync(0xffffffffu, a);
  unsigned o = __reduce_or_sync(0xffffffffu, a);
  unsigned x = __reduce_xor_sync(0xffffffffu, a);
  if ((threadIdx.x & 31) == 0) {
    int w = t >> 5;
    out[8 * w + 0] = sum;
    out[8 * w + 1] = mn;
    out[8 * w + 2] = mx;
    out[8 * w + 3] = (unsigned)smn;
    out[8 * w + 4] = (unsigned)smx;
    out[8 * w + 5] = an;
    out[8 * w + 6] = o;
    out[8 * w + 7] = x;
  }
}

// Partial-warp reduction: only the lower half of each warp takes part.
__global__ void redux_half(const unsigned* __restrict__ u, unsigned* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if ((threadIdx.x & 31) < 16) out[t] = __reduce_add_sync(0x0000ffffu, u[t]);
}
