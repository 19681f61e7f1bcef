// Atomics on global and shared memory.

extern "C" __global__ void histogram(const int *data, int *hist, float *fsum, int n, int bins) {
    __shared__ int local[64];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = data[i] % bins;
        atomicAdd(&local[b], 1);
        atomicAdd(fsum, (float)(data[i] & 7));   // small integers: the sum is exact
    }
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) atomicAdd(&hist[b], local[b]);
}

__device__ float atomic_max_float(float *addr, float value) {
    int *p = (int *)addr;
    int old = *p, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(p, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void atomic_misc(const int *data, int *imax, unsigned *counter, float *fmax,
                                       unsigned long long *total, int *last, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = data[i];
    atomicMax(imax, v);
    atomicMin(imax + 1, v);
    atomicInc(counter, 1000000u);
    atomicDec(counter + 1, 7u);
    atomic_max_float(fmax, (float)v * 0.5f);
    atomicAdd(total, (unsigned long long)v);
    atomicOr((int *)counter + 2, 1 << (v & 31));
    atomicExch(last, 1);
}
