// Small warp-synchronous kernels for the PIRCH lifter tests (tests/test_pirch_*.py).
// One block = one work group of WG lanes (blockDim.x == WG); every kernel is
// instantiated for WG 8, 16 and 32 (constant lane arithmetic: shufflevector)
// and some also take the width at run time (gathers).
#define WG_MASK(WG) ((WG) == 32 ? 0xffffffffu : ((1u << (WG)) - 1u))
#define ALL_WG(M) M(8) M(16) M(32)

// Plain elementwise: float and integer arithmetic, no lane exchange.
extern "C" __global__ void axpy(float a, const float *x, float *y, const int *k, int *z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = fmaf(a, x[i], y[i]) + x[i] * y[i] - a / (x[i] + 1.0f);
        z[i] = k[i] * 3 + (k[i] >> 3) - (k[i] / 7) + __popc(k[i]) + __clz(k[i]);
    }
}

extern "C" __global__ void daxpy(double a, const double *x, double *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fma(a, x[i], y[i]) + sqrt(fabs(x[i])) - x[i] / (y[i] + 0.5);
}

// A divergent loop: lane i runs k[i] iterations; a strided (gather) read.
extern "C" __global__ void divloop(const int *k, const float *x, float *y, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < (k[i] & 15); ++j) acc = acc * 0.5f + x[(i * stride + j * 3) & 1023];
    if (acc > 1.0f) acc = -acc;
    y[i] = acc;
}

#define REDUCE(WG)                                                                   \
    extern "C" __global__ void reduce_wg##WG(const float *x, float *out) {          \
        float v = x[blockIdx.x * WG + threadIdx.x];                                  \
        _Pragma("unroll") for (int off = WG / 2; off > 0; off >>= 1) v +=            \
            __shfl_down_sync(WG_MASK(WG), v, off, WG);                               \
        if (threadIdx.x == 0) out[blockIdx.x] = v;                                   \
    }
ALL_WG(REDUCE)

#define SCAN(WG)                                                                     \
    extern "C" __global__ void scan_wg##WG(const int *x, int *y) {                  \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        int v = x[i];                                                                \
        _Pragma("unroll") for (int d = 1; d < WG; d <<= 1) {                         \
            int t = __shfl_up_sync(WG_MASK(WG), v, d, WG);                           \
            if (threadIdx.x >= d) v += t;                                            \
        }                                                                            \
        y[i] = v;                                                                    \
    }
ALL_WG(SCAN)

#define BFLY(WG)                                                                     \
    extern "C" __global__ void bfly_wg##WG(const double *x, double *s, double *m) { \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        double a = x[i], b = a;                                                      \
        _Pragma("unroll") for (int off = WG / 2; off > 0; off >>= 1) {               \
            a += __shfl_xor_sync(WG_MASK(WG), a, off, WG);                           \
            b = fmax(b, __shfl_xor_sync(WG_MASK(WG), b, off, WG));                   \
        }                                                                            \
        s[i] = a;                                                                    \
        m[i] = b;                                                                    \
    }
ALL_WG(BFLY)

// __shfl_sync with a width: a uniform source lane and a computed one.
#define SEG(WG)                                                                      \
    extern "C" __global__ void segbcast_wg##WG(const float *x, float *y, int src) { \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        float v = x[i];                                                              \
        float a = __shfl_sync(WG_MASK(WG), v, src, WG / 2);                          \
        float b = __shfl_sync(WG_MASK(WG), v, (int)threadIdx.x * 3 + src, WG / 2);   \
        y[i] = a - b;                                                                \
    }
ALL_WG(SEG)

// The width at run time: the lane arithmetic is not constant.
extern "C" __global__ void shfl_rt(const unsigned *x, unsigned *y, int delta, int width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = x[i];
    unsigned mask = blockDim.x == 32 ? 0xffffffffu : ((1u << blockDim.x) - 1u);
    y[i] = __shfl_down_sync(mask, v, delta, width) ^ __shfl_xor_sync(mask, v, delta, width);
}

#define VOTE(WG)                                                                     \
    extern "C" __global__ void vote_wg##WG(const int *x, unsigned *out) {           \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        int p = x[i] > 0;                                                            \
        unsigned ballot = __ballot_sync(WG_MASK(WG), p);                             \
        int any = __any_sync(WG_MASK(WG), x[i] > 100);                               \
        int all = __all_sync(WG_MASK(WG), x[i] > -100);                              \
        out[i] = ballot * 4 + any * 2 + all + (__popc(ballot) << 8);                 \
    }
ALL_WG(VOTE)

#define MATCH(WG)                                                                    \
    extern "C" __global__ void match_wg##WG(const int *x, unsigned *out) {          \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        out[i] = __match_any_sync(WG_MASK(WG), x[i] & 3);                            \
    }
ALL_WG(MATCH)

#define REDADD(WG)                                                                   \
    extern "C" __global__ void redadd_wg##WG(const unsigned *x, unsigned *out) {    \
        int i = blockIdx.x * WG + threadIdx.x;                                       \
        out[i] = __reduce_add_sync(WG_MASK(WG), x[i]) ^ __reduce_max_sync(WG_MASK(WG), x[i] >> 1); \
    }
ALL_WG(REDADD)

// Blocks of several warps: shared memory and __syncthreads (all the block's
// threads run in lockstep in one vector; warp collectives act per warp).
extern "C" __global__ void blocksum(const float *x, float *out, int n) {
    __shared__ float partial[2];
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[blockIdx.x * n + i];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0] + partial[1];
}

extern "C" __global__ void tile_transpose(const int *in, int *out, int rows, int cols) {
    __shared__ int tile[16][17];
    int c = blockIdx.x * 16 + threadIdx.x, r0 = blockIdx.y * 16;
    for (int k = threadIdx.y; k < 16; k += blockDim.y)
        if (r0 + k < rows && c < cols) tile[k][threadIdx.x] = in[(r0 + k) * cols + c];
    __syncthreads();
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * 16;
    for (int k = threadIdx.y; k < 16; k += blockDim.y)
        if (or0 + k < cols && oc < rows) out[(or0 + k) * rows + oc] = tile[threadIdx.x][k];
}

// Atomics: global and shared, integer and float, with results used (the old values).
extern "C" __global__ void atomics(const int *k, const float *x, int *hist, float *sum, unsigned *inc, int *old) {
    __shared__ int local[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 4) local[threadIdx.x] = 0;
    __syncwarp();
    atomicAdd(&local[k[i] & 3], 1);
    old[i] = atomicAdd(&hist[k[i] & 7], k[i]) ^ atomicMax(&hist[8], k[i]);
    atomicAdd(sum, x[i]);
    atomicInc(inc, 100u);
    atomicCAS(&hist[9], i - 1, i);
    __syncwarp();
    if (threadIdx.x < 4) atomicAdd(&hist[10 + threadIdx.x], local[threadIdx.x]);
}

// Module variables: a __constant__ table and a __device__ variable, read by every lane.
__constant__ float coef[4] = {0.5f, -1.25f, 3.0f, 1e-3f};
__device__ int offset_value = 5;
extern "C" __global__ void module_vars(const float *x, float *y, int *z) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = coef[i & 3] * x[i] + coef[(i >> 2) & 3];
    z[i] = offset_value + i;
}
