// Thread-block clusters (sm_90): compile-time __cluster_dims__ (.reqnctapercluster),
// cluster.sync (barrier.cluster), distributed shared memory through
// map_shared_rank (mapa + ld/st.shared::cluster), cluster special registers,
// and the cluster-size bound of __launch_bounds__.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Each CTA of a 2-CTA cluster fills its shared histogram; CTA 0 then reads
// its partner's copy remotely and merges.
__global__ void __cluster_dims__(2, 1, 1) cluster_histogram(const int* __restrict__ in,
                                                            int* __restrict__ out, int n) {
  __shared__ int hist[64];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) hist[b] = 0;
  cluster.sync();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&hist[in[i] & 63], 1);
  cluster.sync();
  if (rank == 0) {
    int* remote = cluster.map_shared_rank(hist, 1);
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
      atomicAdd(&out[b], hist[b] + remote[b]);
  }
  cluster.sync();  // keep the partner's shared memory alive until read
}

// Ring exchange between the CTAs of a 4x1x1 cluster using raw PTX: read the
// cluster rank/size registers, mapa to the neighbour, remote store, and the
// split arrive/wait barrier.
__global__ void __cluster_dims__(4, 1, 1) cluster_ring(float* __restrict__ out) {
  __shared__ float slot[128];
  unsigned rank, nranks, cid_x;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nranks));
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid_x));
  unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(&slot[threadIdx.x]));
  unsigned remote;
  unsigned next = (rank + 1) % nranks;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(next));
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  float v = (float)(rank * 1000 + threadIdx.x);
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  out[(cid_x * nranks + rank) * blockDim.x + threadIdx.x] = slot[threadIdx.x];
}

// Cluster size chosen at launch; the kernel only bounds it (3rd argument of
// __launch_bounds__ -> .maxclusterrank).
__global__ void __launch_bounds__(128, 1, 8) cluster_bounded(int* __restrict__ out) {
  cg::cluster_group cluster = cg::this_cluster();
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      (int)(cluster.block_rank() * 100 + cluster.num_blocks() + cluster.dim_blocks().x);
  cluster.sync();
}
