// libcu++ and cooperative groups as the CUDA toolkit ships them: an
// asynchronous copy into shared memory completed by a cuda::barrier, a
// two-stage cuda::pipeline, cuda::atomic_ref at device and system scope with
// explicit memory orders, and a warp reduction through cg::reduce. The
// library writes most of this as inline PTX (mbarrier, cp.async, fences,
// scoped atomics), and a -G build keeps every helper behind a call.

#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/atomic>
#include <cuda/std/atomic>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

__global__ void staged_copy(const float* in, float* out, int n) {
    __shared__ float tile[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    int base = blockIdx.x * 256;
    cuda::memcpy_async(block, tile, in + base, sizeof(float) * 256, bar);
    bar.arrive_and_wait();
    int i = base + threadIdx.x;
    if (i < n) out[i] = tile[threadIdx.x] * 2.f + (threadIdx.x > 0 ? tile[threadIdx.x - 1] : 0.f);
}

__global__ void pipelined(const float* in, float* out, int n) {
    __shared__ float buf[2][128];
    auto block = cg::this_thread_block();
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    auto pipe = cuda::make_pipeline(block, &state);
    int tiles = n / 128;
    for (int t = 0; t < tiles; ++t) {
        pipe.producer_acquire();
        cuda::memcpy_async(block, buf[t % 2], in + t * 128, sizeof(float) * 128, pipe);
        pipe.producer_commit();
        pipe.consumer_wait();
        out[t * 128 + threadIdx.x] = buf[t % 2][threadIdx.x] + 1.f;
        pipe.consumer_release();
    }
}

__global__ void counters(int* hist, const int* keys, unsigned long long* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuda::atomic_ref<int, cuda::thread_scope_device> h(hist[keys[i] & 63]);
    h.fetch_add(1, cuda::std::memory_order_relaxed);
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> t(*total);
    t.fetch_add(keys[i], cuda::std::memory_order_acq_rel);
}

__global__ void reduce_cg(const float* in, float* out, int n) {
    auto block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.f;
    float s = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) atomicAdd(out, s);
}

