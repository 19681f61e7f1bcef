// A 2D 5-point Jacobi sweep: the neighbouring lanes of a warp load the same
// elements of `in`, which is what shuffle synthesis looks for.
// Regenerate the bundled PTX with: nvcc --ptx -arch=sm_90 -O3 jacobi.cu -o jacobi.ptx
__global__ void jacobi2d(const float *__restrict__ in, float *__restrict__ out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1)
        return;
    int i = y * nx + x;
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
}
