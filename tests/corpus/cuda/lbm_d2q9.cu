// Lattice Boltzmann D2Q9, BGK collision fused with a pull-scheme stream on a
// periodic nx x ny grid (structure-of-arrays distributions).

__constant__ float w[9] = {4.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36};
__constant__ int cx[9] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
__constant__ int cy[9] = {0, 0, 1, 0, -1, 1, 1, -1, -1};

__global__ void lbm_collide_stream(const float* __restrict__ fin, float* __restrict__ fout, int nx, int ny,
                                   float omega)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    int n = nx * ny;
    float f[9];
    float rho = 0.f, ux = 0.f, uy = 0.f;
#pragma unroll
    for (int q = 0; q < 9; q++) {
        int xs = (x - cx[q] + nx) % nx;
        int ys = (y - cy[q] + ny) % ny;
        f[q] = fin[q * n + ys * nx + xs];
        rho += f[q];
        ux += f[q] * cx[q];
        uy += f[q] * cy[q];
    }
    ux /= rho;
    uy /= rho;
    float usq = 1.5f * (ux * ux + uy * uy);
#pragma unroll
    for (int q = 0; q < 9; q++) {
        float cu = 3.f * (cx[q] * ux + cy[q] * uy);
        float feq = w[q] * rho * (1.f + cu + 0.5f * cu * cu - usq);
        fout[q * n + y * nx + x] = f[q] - omega * (f[q] - feq);
    }
}

// Bounce-back on solid cells given by a mask.
__global__ void lbm_bounce_back(float* f, const unsigned char* solid, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny || !solid[y * nx + x]) return;
    int n = nx * ny, c = y * nx + x;
    const int opp[9] = {0, 3, 4, 1, 2, 7, 8, 5, 6};
    float tmp[9];
#pragma unroll
    for (int q = 0; q < 9; q++) tmp[q] = f[q * n + c];
#pragma unroll
    for (int q = 0; q < 9; q++) f[q * n + c] = tmp[opp[q]];
}
