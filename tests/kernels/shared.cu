// Shared memory and __syncthreads: a tiled transpose and a block reduction.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose(const float *in, float *out, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Sum of each block's elements (tree in dynamic shared memory), plus the
// count of positive elements per block through __syncthreads_count.
extern "C" __global__ void block_sum(const int *in, int *sums, int *positives, int n) {
    extern __shared__ int buf[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;
    buf[t] = v;
    int count = __syncthreads_count(v > 0);
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) {
        sums[blockIdx.x] = buf[0];
        positives[blockIdx.x] = count;
    }
}

// __syncthreads_and / __syncthreads_or over a block.
extern "C" __global__ void block_vote(const int *in, int *all_out, int *any_out) {
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    int a = __syncthreads_and(v > 0);
    int o = __syncthreads_or(v > 100);
    if (threadIdx.x == 0) {
        all_out[blockIdx.x] = a;
        any_out[blockIdx.x] = o;
    }
}
