// whispering: one step of a 2-D TE-mode FDTD (Yee) scheme, the solver behind
// whispering-gallery-mode simulations of a dielectric disk. E is updated from
// the curl of H, and H from the curl of the new E, all in one kernel: the new E
// at the neighbours (i+1, j) and (i, j+1) is recomputed locally. ce = dt/(eps h)
// varies in space (the disk), ch = dt/(mu h) is a scalar.
extern "C" __global__ void whispering(const float *ex, const float *ey, const float *hz,
                                      const float *ce, float *ex2, float *ey2, float *hz2, float ch,
                                      int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1) {
        int idx = j * nx + i;
        float h = hz[idx];
        float exn = ex[idx] + ce[idx] * (h - hz[idx - nx]);
        float eyn = ey[idx] - ce[idx] * (h - hz[idx - 1]);
        float exn_up = ex[idx + nx] + ce[idx + nx] * (hz[idx + nx] - h);
        float eyn_right = ey[idx + 1] - ce[idx + 1] * (hz[idx + 1] - h);
        ex2[idx] = exn;
        ey2[idx] = eyn;
        hz2[idx] = h + ch * ((exn_up - exn) - (eyn_right - eyn));
    }
}
