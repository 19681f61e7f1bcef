/* An NPB-BT-shaped block-tridiagonal ADI solver for the ptxasw corpus: ten
   offloaded loops over 3-D arrays of 5-component fields (initialisation,
   auxiliaries, three flux sweeps, three 5x5 block line solves, update, norm)
   with matrix-vector, matrix-matrix and block-elimination helpers inlined.
   Its kernels are large (thousands of PTX lines), so the symbolic trace's
   rendering cost shows next to the analysis (benchmarks/analysis_time.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The same solver as OpenMP target regions (-fopenmp) or OpenACC parallel
   loops (-fopenacc). GCC outlines an OpenMP region into a .func that its
   runtime's gomp_nvptx_main calls, so only the OpenACC build has the loop
   bodies inside the .entry kernels. */
#define PRAGMA_STR(...) #__VA_ARGS__
#ifdef _OPENACC
#define OFFLOAD(c, ...) _Pragma(PRAGMA_STR(acc parallel loop gang vector collapse(c) copy(__VA_ARGS__)))
#define OFFLOAD_SUM(c, s, ...) \
  _Pragma(PRAGMA_STR(acc parallel loop gang vector collapse(c) copy(__VA_ARGS__) reduction(+: s)))
#else
#define OFFLOAD(c, ...) \
  _Pragma(PRAGMA_STR(omp target teams distribute parallel for collapse(c) map(tofrom: __VA_ARGS__)))
#define OFFLOAD_SUM(c, s, ...) \
  _Pragma(PRAGMA_STR(omp target teams distribute parallel for collapse(c) map(tofrom: __VA_ARGS__) reduction(+: s)))
#endif

#define N 12
#define NC 5
#define HELPER static inline __attribute__((always_inline))

static double u[N][N][N][NC], rhs[N][N][N][NC], forcing[N][N][N][NC];
static double qs[N][N][N], rho_i[N][N][N], square[N][N][N];
static double us[N][N][N], vs[N][N][N], ws[N][N][N];

#ifndef _OPENACC
#pragma omp declare target
#endif
static const double dt = 0.0008, tx2 = 0.5, ty2 = 0.5, tz2 = 0.5;
static const double c1 = 1.4, c2 = 0.4, dx1 = 0.75, dx2 = 0.75, dx5 = 0.75;

HELPER void matvec_sub(const double a[NC][NC], const double b[NC], double c[NC])
{
  for (int i = 0; i < NC; i++)
    c[i] = c[i] - a[i][0] * b[0] - a[i][1] * b[1] - a[i][2] * b[2] - a[i][3] * b[3] - a[i][4] * b[4];
}

HELPER void matmul_sub(const double a[NC][NC], const double b[NC][NC], double c[NC][NC])
{
  for (int j = 0; j < NC; j++)
    for (int i = 0; i < NC; i++)
      c[i][j] = c[i][j] - a[i][0] * b[0][j] - a[i][1] * b[1][j] - a[i][2] * b[2][j] - a[i][3] * b[3][j]
                - a[i][4] * b[4][j];
}

HELPER void binvcrhs(double lhs[NC][NC], double c[NC][NC], double r[NC])
{
  for (int p = 0; p < NC; p++) {
    double pivot = 1.0 / lhs[p][p];
    for (int j = p + 1; j < NC; j++) lhs[p][j] *= pivot;
    for (int j = 0; j < NC; j++) c[p][j] *= pivot;
    r[p] *= pivot;
    for (int i = 0; i < NC; i++) {
      if (i == p) continue;
      double coeff = lhs[i][p];
      for (int j = p + 1; j < NC; j++) lhs[i][j] -= coeff * lhs[p][j];
      for (int j = 0; j < NC; j++) c[i][j] -= coeff * c[p][j];
      r[i] -= coeff * r[p];
    }
  }
}

HELPER void binvrhs(double lhs[NC][NC], double r[NC])
{
  for (int p = 0; p < NC; p++) {
    double pivot = 1.0 / lhs[p][p];
    for (int j = p + 1; j < NC; j++) lhs[p][j] *= pivot;
    r[p] *= pivot;
    for (int i = 0; i < NC; i++) {
      if (i == p) continue;
      double coeff = lhs[i][p];
      for (int j = p + 1; j < NC; j++) lhs[i][j] -= coeff * lhs[p][j];
      r[i] -= coeff * r[p];
    }
  }
}

HELPER void jacobian(const double *uu, double qq, double rr, double fj[NC][NC], double nj[NC][NC], int dir)
{
  double t1 = rr, t2 = t1 * t1, t3 = t1 * t2;
  for (int m = 0; m < NC; m++)
    for (int n = 0; n < NC; n++) {
      fj[m][n] = (m == n ? 1.0 : 0.0) * uu[dir + 1] * t1;
      nj[m][n] = (m == n ? dx1 : 0.0) * t1 + (m == 0 ? c2 * qq : 0.0) * t2;
    }
  fj[0][dir + 1] = 1.0;
  fj[dir + 1][0] = -(uu[dir + 1] * uu[dir + 1] * t2) + c2 * qq;
  fj[4][0] = (c2 * 2.0 * qq - c1 * uu[4]) * uu[dir + 1] * t2;
  fj[4][4] = c1 * uu[dir + 1] * t1;
  nj[4][4] = dx5 * t1 + c1 * t3;
}

HELPER void lhs_block(const double *um, const double *uc, const double *up, double qm, double qc, double qp,
                      double rm, double rc, double rp, double aa[NC][NC], double bb[NC][NC], double cc[NC][NC],
                      int dir)
{
  double fjm[NC][NC], njm[NC][NC], fjp[NC][NC], njp[NC][NC], fjc[NC][NC], njc[NC][NC];
  jacobian(um, qm, rm, fjm, njm, dir);
  jacobian(uc, qc, rc, fjc, njc, dir);
  jacobian(up, qp, rp, fjp, njp, dir);
  for (int m = 0; m < NC; m++)
    for (int n = 0; n < NC; n++) {
      aa[m][n] = -dt * tx2 * fjm[m][n] - dt * dx1 * njm[m][n];
      bb[m][n] = (m == n ? 1.0 : 0.0) + dt * 2.0 * dx2 * njc[m][n];
      cc[m][n] = dt * tx2 * fjp[m][n] - dt * dx1 * njp[m][n];
    }
}
#ifndef _OPENACC
#pragma omp end declare target
#endif

static void initialize(void)
{
OFFLOAD(3, u, forcing)
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++)
      for (int i = 0; i < N; i++)
        for (int m = 0; m < NC; m++) {
          u[k][j][i][m] = 1.0 + 0.01 * (i + 2 * j + 3 * k + m);
          forcing[k][j][i][m] = 0.001 * (m + 1) * sin(0.1 * (i + j + k));
        }
}

static void compute_aux(void)
{
OFFLOAD(3, u, qs, rho_i, square, us, vs, ws)
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++)
      for (int i = 0; i < N; i++) {
        double rho_inv = 1.0 / u[k][j][i][0];
        rho_i[k][j][i] = rho_inv;
        us[k][j][i] = u[k][j][i][1] * rho_inv;
        vs[k][j][i] = u[k][j][i][2] * rho_inv;
        ws[k][j][i] = u[k][j][i][3] * rho_inv;
        square[k][j][i] = 0.5 * (u[k][j][i][1] * u[k][j][i][1] + u[k][j][i][2] * u[k][j][i][2]
                                 + u[k][j][i][3] * u[k][j][i][3]) * rho_inv;
        qs[k][j][i] = square[k][j][i] * rho_inv;
      }
}

static void rhs_xi(void)
{
OFFLOAD(2, u, rhs, forcing, us, qs, square, rho_i)
  for (int k = 1; k < N - 1; k++)
    for (int j = 1; j < N - 1; j++)
      for (int i = 1; i < N - 1; i++) {
        double uijk = us[k][j][i], up1 = us[k][j][i + 1], um1 = us[k][j][i - 1];
        rhs[k][j][i][0] = forcing[k][j][i][0]
                          + dx1 * (u[k][j][i + 1][0] - 2.0 * u[k][j][i][0] + u[k][j][i - 1][0])
                          - tx2 * (u[k][j][i + 1][1] - u[k][j][i - 1][1]);
        rhs[k][j][i][1] = forcing[k][j][i][1]
                          + dx2 * (u[k][j][i + 1][1] - 2.0 * u[k][j][i][1] + u[k][j][i - 1][1])
                          - tx2 * (u[k][j][i + 1][1] * up1 - u[k][j][i - 1][1] * um1
                                   + (u[k][j][i + 1][4] - square[k][j][i + 1] - u[k][j][i - 1][4]
                                      + square[k][j][i - 1]) * c2);
        for (int m = 2; m < 4; m++)
          rhs[k][j][i][m] = forcing[k][j][i][m]
                            + dx2 * (u[k][j][i + 1][m] - 2.0 * u[k][j][i][m] + u[k][j][i - 1][m])
                            - tx2 * (u[k][j][i + 1][m] * up1 - u[k][j][i - 1][m] * um1);
        rhs[k][j][i][4] = forcing[k][j][i][4]
                          + dx5 * (u[k][j][i + 1][4] - 2.0 * u[k][j][i][4] + u[k][j][i - 1][4])
                          + c1 * (qs[k][j][i + 1] - 2.0 * qs[k][j][i] + qs[k][j][i - 1])
                          - tx2 * ((c1 * u[k][j][i + 1][4] - c2 * square[k][j][i + 1]) * up1
                                   - (c1 * u[k][j][i - 1][4] - c2 * square[k][j][i - 1]) * um1)
                          + uijk * rho_i[k][j][i];
        if (i >= 2 && i < N - 2)
          for (int m = 0; m < NC; m++)
            rhs[k][j][i][m] -= 0.25 * (u[k][j][i - 2][m] - 4.0 * u[k][j][i - 1][m] + 6.0 * u[k][j][i][m]
                                       - 4.0 * u[k][j][i + 1][m] + u[k][j][i + 2][m]);
      }
}

static void rhs_eta(void)
{
OFFLOAD(2, u, rhs, vs, qs, square)
  for (int k = 1; k < N - 1; k++)
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++) {
        double vp1 = vs[k][j + 1][i], vm1 = vs[k][j - 1][i];
        for (int m = 0; m < NC; m++)
          rhs[k][j][i][m] += dx1 * (u[k][j + 1][i][m] - 2.0 * u[k][j][i][m] + u[k][j - 1][i][m])
                             - ty2 * (u[k][j + 1][i][m] * vp1 - u[k][j - 1][i][m] * vm1);
        rhs[k][j][i][2] -= ty2 * c2 * (u[k][j + 1][i][4] - square[k][j + 1][i] - u[k][j - 1][i][4]
                                        + square[k][j - 1][i]);
        rhs[k][j][i][4] += c1 * (qs[k][j + 1][i] - 2.0 * qs[k][j][i] + qs[k][j - 1][i]);
        if (j >= 2 && j < N - 2)
          for (int m = 0; m < NC; m++)
            rhs[k][j][i][m] -= 0.25 * (u[k][j - 2][i][m] - 4.0 * u[k][j - 1][i][m] + 6.0 * u[k][j][i][m]
                                       - 4.0 * u[k][j + 1][i][m] + u[k][j + 2][i][m]);
      }
}

static void rhs_zeta(void)
{
OFFLOAD(2, u, rhs, ws, qs, square)
  for (int j = 1; j < N - 1; j++)
    for (int i = 1; i < N - 1; i++)
      for (int k = 1; k < N - 1; k++) {
        double wp1 = ws[k + 1][j][i], wm1 = ws[k - 1][j][i];
        for (int m = 0; m < NC; m++)
          rhs[k][j][i][m] += dx1 * (u[k + 1][j][i][m] - 2.0 * u[k][j][i][m] + u[k - 1][j][i][m])
                             - tz2 * (u[k + 1][j][i][m] * wp1 - u[k - 1][j][i][m] * wm1);
        rhs[k][j][i][3] -= tz2 * c2 * (u[k + 1][j][i][4] - square[k + 1][j][i] - u[k - 1][j][i][4]
                                        + square[k - 1][j][i]);
        rhs[k][j][i][4] += c1 * (qs[k + 1][j][i] - 2.0 * qs[k][j][i] + qs[k - 1][j][i]);
        if (k >= 2 && k < N - 2)
          for (int m = 0; m < NC; m++)
            rhs[k][j][i][m] -= 0.25 * (u[k - 2][j][i][m] - 4.0 * u[k - 1][j][i][m] + 6.0 * u[k][j][i][m]
                                       - 4.0 * u[k + 1][j][i][m] + u[k + 2][j][i][m]);
      }
}

/* One block-tridiagonal line solve along direction dir (0: i, 1: j, 2: k). */
#define LINE_SOLVE(DIR, IDX)                                                                               \
  for (int a = 1; a < N - 1; a++)                                                                          \
    for (int b = 1; b < N - 1; b++) {                                                                      \
      double lhsa[NC][NC], lhsb[NC][NC], lhsc[N][NC][NC];                                                  \
      for (int l = 1; l < N - 1; l++) {                                                                    \
        lhs_block(u IDX(l - 1), u IDX(l), u IDX(l + 1), qs IDX(l - 1), qs IDX(l), qs IDX(l + 1),           \
                  rho_i IDX(l - 1), rho_i IDX(l), rho_i IDX(l + 1), lhsa, lhsb, lhsc[l], DIR);            \
        if (l > 1) {                                                                                       \
          matvec_sub(lhsa, rhs IDX(l - 1), rhs IDX(l));                                                    \
          matmul_sub(lhsa, lhsc[l - 1], lhsb);                                                             \
        }                                                                                                  \
        if (l < N - 2)                                                                                     \
          binvcrhs(lhsb, lhsc[l], rhs IDX(l));                                                             \
        else                                                                                               \
          binvrhs(lhsb, rhs IDX(l));                                                                       \
      }                                                                                                    \
      for (int l = N - 3; l >= 1; l--)                                                                     \
        for (int m = 0; m < NC; m++)                                                                       \
          for (int n = 0; n < NC; n++)                                                                     \
            (rhs IDX(l))[m] -= lhsc[l][m][n] * (rhs IDX(l + 1))[n];                                        \
    }

#define XI(l) [a][b][l]
#define ETA(l) [a][l][b]
#define ZETA(l) [l][a][b]

static void x_solve(void)
{
OFFLOAD(2, u, rhs, qs, rho_i, square)
  LINE_SOLVE(0, XI)
}

static void y_solve(void)
{
OFFLOAD(2, u, rhs, qs, rho_i, square)
  LINE_SOLVE(1, ETA)
}

static void z_solve(void)
{
OFFLOAD(2, u, rhs, qs, rho_i, square)
  LINE_SOLVE(2, ZETA)
}

static void add(void)
{
OFFLOAD(3, u, rhs)
  for (int k = 1; k < N - 1; k++)
    for (int j = 1; j < N - 1; j++)
      for (int i = 1; i < N - 1; i++)
        for (int m = 0; m < NC; m++) u[k][j][i][m] += rhs[k][j][i][m];
}

static double rhs_norm(void)
{
  double sum = 0.0;
OFFLOAD_SUM(3, sum, rhs)
  for (int k = 1; k < N - 1; k++)
    for (int j = 1; j < N - 1; j++)
      for (int i = 1; i < N - 1; i++)
        for (int m = 0; m < NC; m++) sum += rhs[k][j][i][m] * rhs[k][j][i][m];
  return sqrt(sum);
}

int main(void)
{
  initialize();
  for (int step = 0; step < 2; step++) {
    compute_aux();
    rhs_xi();
    rhs_eta();
    rhs_zeta();
    x_solve();
    y_solve();
    z_solve();
    add();
  }
  printf("%.6e\n", rhs_norm());
  return 0;
}
