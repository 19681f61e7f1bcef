// hypterm: the hyperbolic (inviscid) flux divergence of the compressible
// Navier-Stokes equations, as in the ExpCNS mini-app, with 8th-order central
// differences (radius 4) along x, y and z in one kernel. Conserved variables
// (momenta imx, imy, imz, energy iene) and primitives (velocities qu, qv, qw,
// pressure qpres) in; the five flux components out, on the interior.
// Along x each thread reads imx, imy, imz, iene, qu, qpres at idx-4 .. idx+4.

// 8th-order first-derivative weights.
#define ALP 0.8f
#define BET -0.2f
#define GAM (4.0f / 105.0f)
#define DEL (-1.0f / 280.0f)

// The difference of F (a macro of a flat index) around idx with stride s.
#define D8(F, s)                                                                           \
    (ALP * (F(idx + (s)) - F(idx - (s))) + BET * (F(idx + 2 * (s)) - F(idx - 2 * (s))) +     \
     GAM * (F(idx + 3 * (s)) - F(idx - 3 * (s))) + DEL * (F(idx + 4 * (s)) - F(idx - 4 * (s))))

#define MX(p) imx[p]
#define MY(p) imy[p]
#define MZ(p) imz[p]
#define MX_U_P(p) (imx[p] * qu[p] + qpres[p])
#define MX_V(p) (imx[p] * qv[p])
#define MX_W(p) (imx[p] * qw[p])
#define MY_U(p) (imy[p] * qu[p])
#define MY_V_P(p) (imy[p] * qv[p] + qpres[p])
#define MY_W(p) (imy[p] * qw[p])
#define MZ_U(p) (imz[p] * qu[p])
#define MZ_V(p) (imz[p] * qv[p])
#define MZ_W_P(p) (imz[p] * qw[p] + qpres[p])
#define E_U(p) ((iene[p] + qpres[p]) * qu[p])
#define E_V(p) ((iene[p] + qpres[p]) * qv[p])
#define E_W(p) ((iene[p] + qpres[p]) * qw[p])

extern "C" __global__ void hypterm(const float *__restrict__ imx, const float *__restrict__ imy,
                                   const float *__restrict__ imz, const float *__restrict__ iene,
                                   const float *__restrict__ qu, const float *__restrict__ qv,
                                   const float *__restrict__ qw, const float *__restrict__ qpres,
                                   float *__restrict__ flux_rho, float *__restrict__ flux_mx,
                                   float *__restrict__ flux_my, float *__restrict__ flux_mz,
                                   float *__restrict__ flux_e, float rdx, float rdy, float rdz, int nx,
                                   int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 4 && i < nx - 4 && j >= 4 && j < ny - 4 && k >= 4 && k < nz - 4) {
        int nxy = nx * ny;
        int idx = k * nxy + j * nx + i;
        flux_rho[idx] = -(D8(MX, 1) * rdx + D8(MY, nx) * rdy + D8(MZ, nxy) * rdz);
        flux_mx[idx] = -(D8(MX_U_P, 1) * rdx + D8(MX_V, nx) * rdy + D8(MX_W, nxy) * rdz);
        flux_my[idx] = -(D8(MY_U, 1) * rdx + D8(MY_V_P, nx) * rdy + D8(MY_W, nxy) * rdz);
        flux_mz[idx] = -(D8(MZ_U, 1) * rdx + D8(MZ_V, nx) * rdy + D8(MZ_W_P, nxy) * rdz);
        flux_e[idx] = -(D8(E_U, 1) * rdx + D8(E_V, nx) * rdy + D8(E_W, nxy) * rdz);
    }
}
