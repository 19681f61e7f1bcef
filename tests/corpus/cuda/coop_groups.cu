// Cooperative groups: static tiles (thread_block_tile<N>), dynamic
// tiled_partition, cg::reduce / cg::inclusive_scan, coalesced_threads in
// divergent code, labeled_partition, and a grid-wide sync.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

namespace cg = cooperative_groups;

__global__ void tile_reduce(const int* __restrict__ in, int* __restrict__ out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<8> oct = cg::tiled_partition<8>(block);
  int v = in[block.group_index().x * block.size() + block.thread_rank()];
  int wsum = cg::reduce(warp, v, cg::plus<int>());
  int omax = cg::reduce(oct, v, cg::greater<int>());
  int scan = cg::inclusive_scan(warp, v);
  int sh = warp.shfl_down(v, 1) + oct.shfl_xor(v, 2) + warp.shfl(v, 0);
  bool any = warp.any(v < 0);
  unsigned bal = warp.ballot(v > 100);
  if (warp.thread_rank() == 0) atomicAdd(out, wsum);
  out[1 + block.thread_rank()] = omax + scan + sh + (any ? (int)bal : 0);
}

// Dynamic partition (size only known at run time) and a block-wide sync.
__global__ void dynamic_partition(const float* __restrict__ in, float* __restrict__ out,
                                  unsigned tile) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_group part = cg::tiled_partition(block, tile);
  float v = in[block.thread_rank()];
  part.sync();
  block.sync();
  out[block.thread_rank()] = v * part.size() + part.thread_rank();
}

// coalesced_threads() inside a data-dependent branch: the group is whatever
// lanes arrived, so its rank and size come from activemask arithmetic.
__global__ void coalesced_append(const int* __restrict__ in, int* __restrict__ out,
                                 int* __restrict__ count) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  if (v % 3 == 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    int base = 0;
    if (active.thread_rank() == 0) base = atomicAdd(count, (int)active.size());
    base = active.shfl(base, 0);
    out[base + active.thread_rank()] = v;
    int s = cg::reduce(active, v, cg::plus<int>());
    if (active.thread_rank() == 0) out[-1 - (int)blockIdx.x] = s;
  }
}

__global__ void labeled(const int* __restrict__ key, int* __restrict__ out) {
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  int k = key[threadIdx.x];
  cg::coalesced_group same = cg::labeled_partition(warp, k);
  out[threadIdx.x] = cg::reduce(same, 1, cg::plus<int>());
}

// Two-phase reduction across the whole grid with grid.sync().
__global__ void grid_sync_sum(const float* __restrict__ in, float* partial, float* out, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  float v = 0.f;
  for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size())
    v += in[i];
  v = cg::reduce(cg::tiled_partition<32>(block), v, cg::plus<float>());
  if ((block.thread_rank() & 31) == 0) atomicAdd(&partial[block.group_index().x], v);
  grid.sync();
  if (grid.thread_rank() == 0) {
    float s = 0.f;
    for (unsigned b = 0; b < grid.group_dim().x; ++b) s += partial[b];
    *out = s;
  }
}
