/* Real-world-shaped OpenMP target offload kernels, compiled by GCC's nvptx
 * offload compiler: an NPB-like ADI line solver (Thomas sweeps along x, y and
 * z), a Lattice Boltzmann D2Q9 collide-stream step, and the 25-point seismic
 * stencil (8th order in space). */
#include <stdio.h>

#define NX 64
#define NY 64
#define NZ 32
#define R 4

static double a[NZ][NY][NX], b[NZ][NY][NX], c[NZ][NY][NX], d[NZ][NY][NX];
static double cp[NZ][NY][NX], dp[NZ][NY][NX], x[NZ][NY][NX];
static float fin[9][NY][NX], fout[9][NY][NX];
static float u[NZ][NY][NX], uprev[NZ][NY][NX], vel[NZ][NY][NX], unext[NZ][NY][NX];

#pragma omp declare target
static const int cx[9] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
static const int cy[9] = {0, 0, 1, 0, -1, 1, 1, -1, -1};
static const float w[9] = {4.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36};
static const float c8[R + 1] = {-2.847222f, 1.6f, -0.2f, 0.02539683f, -0.001785714f};
#pragma omp end declare target

static void adi(void)
{
#pragma omp target teams distribute parallel for collapse(2) map(to : a, b, c, d) map(tofrom : cp, dp, x)
    for (int k = 0; k < NZ; k++)
        for (int j = 0; j < NY; j++) {
            cp[k][j][0] = c[k][j][0] / b[k][j][0];
            dp[k][j][0] = d[k][j][0] / b[k][j][0];
            for (int i = 1; i < NX; i++) {
                double m = 1.0 / (b[k][j][i] - a[k][j][i] * cp[k][j][i - 1]);
                cp[k][j][i] = c[k][j][i] * m;
                dp[k][j][i] = (d[k][j][i] - a[k][j][i] * dp[k][j][i - 1]) * m;
            }
            x[k][j][NX - 1] = dp[k][j][NX - 1];
            for (int i = NX - 2; i >= 0; i--) x[k][j][i] = dp[k][j][i] - cp[k][j][i] * x[k][j][i + 1];
        }
#pragma omp target teams distribute parallel for collapse(2) map(to : a, b, c, d) map(tofrom : cp, dp, x)
    for (int k = 0; k < NZ; k++)
        for (int i = 0; i < NX; i++) {
            cp[k][0][i] = c[k][0][i] / b[k][0][i];
            dp[k][0][i] = d[k][0][i] / b[k][0][i];
            for (int j = 1; j < NY; j++) {
                double m = 1.0 / (b[k][j][i] - a[k][j][i] * cp[k][j - 1][i]);
                cp[k][j][i] = c[k][j][i] * m;
                dp[k][j][i] = (d[k][j][i] - a[k][j][i] * dp[k][j - 1][i]) * m;
            }
            x[k][NY - 1][i] = dp[k][NY - 1][i];
            for (int j = NY - 2; j >= 0; j--) x[k][j][i] = dp[k][j][i] - cp[k][j][i] * x[k][j + 1][i];
        }
#pragma omp target teams distribute parallel for collapse(2) map(to : a, b, c, d) map(tofrom : cp, dp, x)
    for (int j = 0; j < NY; j++)
        for (int i = 0; i < NX; i++) {
            cp[0][j][i] = c[0][j][i] / b[0][j][i];
            dp[0][j][i] = d[0][j][i] / b[0][j][i];
            for (int k = 1; k < NZ; k++) {
                double m = 1.0 / (b[k][j][i] - a[k][j][i] * cp[k - 1][j][i]);
                cp[k][j][i] = c[k][j][i] * m;
                dp[k][j][i] = (d[k][j][i] - a[k][j][i] * dp[k - 1][j][i]) * m;
            }
            x[NZ - 1][j][i] = dp[NZ - 1][j][i];
            for (int k = NZ - 2; k >= 0; k--) x[k][j][i] = dp[k][j][i] - cp[k][j][i] * x[k + 1][j][i];
        }
}

static void lbm(float omega)
{
#pragma omp target teams distribute parallel for collapse(2) map(to : fin) map(from : fout)
    for (int y = 0; y < NY; y++)
        for (int xx = 0; xx < NX; xx++) {
            float f[9], rho = 0.f, ux = 0.f, uy = 0.f;
            for (int q = 0; q < 9; q++) {
                f[q] = fin[q][(y - cy[q] + NY) % NY][(xx - cx[q] + NX) % NX];
                rho += f[q];
                ux += f[q] * cx[q];
                uy += f[q] * cy[q];
            }
            ux /= rho;
            uy /= rho;
            float usq = 1.5f * (ux * ux + uy * uy);
            for (int q = 0; q < 9; q++) {
                float cu = 3.f * (cx[q] * ux + cy[q] * uy);
                float feq = w[q] * rho * (1.f + cu + 0.5f * cu * cu - usq);
                fout[q][y][xx] = f[q] - omega * (f[q] - feq);
            }
        }
}

static void seismic(void)
{
#pragma omp target teams distribute parallel for collapse(3) map(to : u, uprev, vel) map(from : unext)
    for (int z = R; z < NZ - R; z++)
        for (int y = R; y < NY - R; y++)
            for (int xx = R; xx < NX - R; xx++) {
                float lap = 3.f * c8[0] * u[z][y][xx];
                for (int r = 1; r <= R; r++)
                    lap += c8[r] * (u[z][y][xx + r] + u[z][y][xx - r] + u[z][y + r][xx] + u[z][y - r][xx]
                                    + u[z + r][y][xx] + u[z - r][y][xx]);
                unext[z][y][xx] = 2.f * u[z][y][xx] - uprev[z][y][xx] + vel[z][y][xx] * lap;
            }
}

int main(void)
{
    for (int k = 0; k < NZ; k++)
        for (int j = 0; j < NY; j++)
            for (int i = 0; i < NX; i++) {
                a[k][j][i] = c[k][j][i] = -1.0;
                b[k][j][i] = 4.0;
                d[k][j][i] = (double)((i + j + k) % 7);
                u[k][j][i] = (float)((i * 3 + j * 5 + k) % 11);
                uprev[k][j][i] = 0.f;
                vel[k][j][i] = 0.1f;
            }
    for (int q = 0; q < 9; q++)
        for (int j = 0; j < NY; j++)
            for (int i = 0; i < NX; i++) fin[q][j][i] = 1.f / 9;
    adi();
    lbm(1.2f);
    seismic();
    printf("%g %g %g\n", x[1][2][3], (double)fout[1][2][3], (double)unext[8][8][8]);
    return 0;
}
