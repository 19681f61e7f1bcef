// Warp-level primitives: shuffles (with sub-warp widths), votes, match,
// redux, activemask, in converged and diverged code.

extern "C" __global__ void shuffles(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    unsigned all = 0xffffffffu;
    int sum = v;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(all, sum, off);
    int xsum = v;
    for (int off = 1; off < 32; off <<= 1) xsum += __shfl_xor_sync(all, xsum, off);
    int scan = v;  // inclusive prefix sum within segments of 16 lanes
    for (int off = 1; off < 16; off <<= 1) {
        int t = __shfl_up_sync(all, scan, off, 16);
        if ((threadIdx.x & 15) >= off) scan += t;
    }
    int bcast = __shfl_sync(all, v, 3, 8);   // lane 3 of each 8-lane segment
    int rot = __shfl_sync(all, v, (threadIdx.x + 1) & 31);
    int down8 = __shfl_down_sync(all, v, 2, 8);  // clamps at segment end
    if (i < n) {
        out[6 * i + 0] = sum;
        out[6 * i + 1] = xsum;
        out[6 * i + 2] = scan;
        out[6 * i + 3] = bcast;
        out[6 * i + 4] = rot;
        out[6 * i + 5] = down8;
    }
}

extern "C" __global__ void votes(const int *in, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    unsigned all = 0xffffffffu;
    unsigned ballot = __ballot_sync(all, v > 0);
    int every = __all_sync(all, v >= 0);
    int some = __any_sync(all, v > 50);
    unsigned inner = 0;
    if (v & 1) {  // diverged: only the odd lanes vote
        inner = __ballot_sync(__activemask(), v > 10) | (__activemask() << 1);
    }
    if (i < n) {
        out[4 * i + 0] = ballot;
        out[4 * i + 1] = every;
        out[4 * i + 2] = some;
        out[4 * i + 3] = inner;
    }
}

extern "C" __global__ void match_redux(const int *in, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : -1;
    unsigned all = 0xffffffffu;
    unsigned same = __match_any_sync(all, v);
    int pred;
    unsigned allsame = __match_all_sync(all, v & 0, &pred);
    unsigned s = __reduce_add_sync(all, (unsigned)v);
    int mn = __reduce_min_sync(all, v);
    unsigned mx = __reduce_max_sync(all, (unsigned)v);
    unsigned x = __reduce_xor_sync(all, (unsigned)v);
    if (i < n) {
        out[6 * i + 0] = same;
        out[6 * i + 1] = allsame + pred;
        out[6 * i + 2] = s;
        out[6 * i + 3] = (unsigned)mn;
        out[6 * i + 4] = mx;
        out[6 * i + 5] = x;
    }
}
