// jacobi: one weighted Jacobi sweep of a 2-D 9-point stencil,
// out = w0 centre + w1 (edge neighbours) + w2 (diagonal neighbours), on the interior.
// Each of the three rows is read at idx-1, idx, idx+1.
extern "C" __global__ void jacobi(const float *in, float *out, float w0, float w1, float w2, int nx,
                                  int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1) {
        int idx = j * nx + i;
        float edges = in[idx - nx] + in[idx - 1] + in[idx + 1] + in[idx + nx];
        float corners = in[idx - nx - 1] + in[idx - nx + 1] + in[idx + nx - 1] + in[idx + nx + 1];
        out[idx] = w0 * in[idx] + w1 * edges + w2 * corners;
    }
}
