// Library code nobody writes by hand: what Thrust and CUB (shipped with the
// CUDA toolkit) instantiate for a transform, a sort, a scan and a reduction,
// plus CUB's block reduction and warp scan in user kernels. Template-heavy
// PTX: tile loops with look-back, vector loads, 64-bit tile offsets, shuffles
// and volatile/relaxed accesses, in kernels whose names run to 300 characters.

#include <cub/cub.cuh>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstdio>

struct saxpy {
    float a;
    __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};

template <int BLOCK>
__global__ void block_sum(const float* in, float* out, int n)
{
    typedef cub::BlockReduce<float, BLOCK> Reduce;
    __shared__ typename Reduce::TempStorage storage;
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = i < n ? in[i] : 0.f;
    float s = Reduce(storage).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

__global__ void warp_scan(const int* in, int* out, int n)
{
    typedef cub::WarpScan<int> Scan;
    __shared__ typename Scan::TempStorage storage[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0, r;
    Scan(storage[threadIdx.x / 32]).InclusiveSum(v, r);
    if (i < n) out[i] = r;
}

int main()
{
    int n = 1 << 20;
    thrust::device_vector<float> x(n, 1.f), y(n, 2.f);
    thrust::transform(x.begin(), x.end(), y.begin(), y.begin(), saxpy{2.f});
    thrust::sort(y.begin(), y.end());
    thrust::device_vector<int> k(n, 1), o(n);
    thrust::inclusive_scan(k.begin(), k.end(), o.begin());
    float s = thrust::reduce(y.begin(), y.end());
    thrust::device_vector<float> sums(n / 128);
    block_sum<128><<<n / 128, 128>>>(thrust::raw_pointer_cast(x.data()), thrust::raw_pointer_cast(sums.data()), n);
    warp_scan<<<n / 128, 128>>>(thrust::raw_pointer_cast(k.data()), thrust::raw_pointer_cast(o.data()), n);
    void* temp = nullptr;
    size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys(temp, bytes, thrust::raw_pointer_cast(k.data()), thrust::raw_pointer_cast(o.data()), n);
    printf("%f %zu\n", s, bytes);
    return 0;
}
