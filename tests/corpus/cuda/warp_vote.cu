// Warp votes and matches: ballot/all/any, activemask inside divergent code,
// match.any / match.all (sm_70+), popc/ffs on the resulting masks.

__global__ void vote_kernel(const int* __restrict__ in, unsigned* __restrict__ ballots,
                            int* __restrict__ flags) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  unsigned b = __ballot_sync(0xffffffffu, v > 0);
  int all_pos = __all_sync(0xffffffffu, v > 0);
  int any_neg = __any_sync(0xffffffffu, v < 0);
  unsigned eq = __uni_sync(0xffffffffu, v);
  if ((threadIdx.x & 31) == 0) {
    ballots[t >> 5] = b;
    flags[t >> 5] = all_pos | (any_neg << 1) | (eq << 2) | (__popc(b) << 8);
  }
}

// Stream compaction with ballot + popc: the write index is the count of
// lower lanes whose predicate is set.
__global__ void compact_positive(const float* __restrict__ in, float* __restrict__ out,
                                 unsigned* __restrict__ counter, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float v = t < n ? in[t] : -1.f;
  bool keep = v > 0.f;
  unsigned mask = __ballot_sync(0xffffffffu, keep);
  int lane = threadIdx.x & 31;
  unsigned base = 0;
  int leader = __ffs(mask) - 1;
  if (lane == leader) base = atomicAdd(counter, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, leader < 0 ? 0 : leader);
  if (keep) out[base + __popc(mask & ((1u << lane) - 1u))] = v;
}

// activemask in divergent code, then a vote restricted to the active lanes.
__global__ void divergent_active(const int* __restrict__ in, unsigned* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  unsigned r = 0;
  if (v & 1) {
    unsigned am = __activemask();
    r = __ballot_sync(am, v > 10) | (am << 1);
  } else {
    unsigned am = __activemask();
    r = __popc(am) + (unsigned)__any_sync(am, v == 4);
  }
  out[t] = r;
}

// match.any groups lanes by key (e.g. to aggregate atomics per bucket);
// match.all reports whether the whole warp agrees.
__global__ void match_kernel(const int* __restrict__ keys, const unsigned long long* __restrict__ k64,
                             unsigned* __restrict__ groups, int* __restrict__ counts) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int key = keys[t];
  unsigned peers = __match_any_sync(0xffffffffu, key);
  unsigned peers64 = __match_any_sync(0xffffffffu, k64[t]);
  int same;
  unsigned all = __match_all_sync(0xffffffffu, key, &same);
  int lane = threadIdx.x & 31;
  int leader = __ffs(peers) - 1;
  if (lane == leader) atomicAdd(&counts[key & 255], __popc(peers));
  groups[t] = peers ^ peers64 ^ (same ? all : 0u);
}
