// OpenMP target offload as clang compiles it for NVPTX (--offload-device-only):
// SPMD kernels (teams distribute parallel for), a reduction, a collapsed 2-D
// stencil and a generic-mode region whose parallel loop runs through the
// device runtime's state machine. Built with -nogpulib, so the __kmpc_*
// runtime calls stay extern and ptxas assembles with -c.
#include <stddef.h>

void saxpy(int n, float a, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to : x[0 : n]) map(tofrom : y[0 : n])
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

void stencil1d(int n, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to : x[0 : n]) map(from : y[0 : n])
  for (int i = 1; i < n - 1; ++i) y[i] = 0.25f * x[i - 1] + 0.5f * x[i] + 0.25f * x[i + 1];
}

void jacobi2d(int nx, int ny, const double *u, double *v) {
#pragma omp target teams distribute parallel for collapse(2) map(to : u[0 : nx * ny]) map(from : v[0 : nx * ny])
  for (int j = 1; j < ny - 1; ++j)
    for (int i = 1; i < nx - 1; ++i)
      v[j * nx + i] = 0.25 * (u[j * nx + i - 1] + u[j * nx + i + 1] + u[(j - 1) * nx + i] + u[(j + 1) * nx + i]);
}

float dot(int n, const float *x, const float *y) {
  float s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(to : x[0 : n], y[0 : n])
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

void generic_mode(int n, float *y) {
#pragma omp target map(tofrom : y[0 : n])
  {
    int half = n / 2;
#pragma omp parallel for
    for (int i = 0; i < half; ++i) y[i] += 1.0f;
#pragma omp parallel for
    for (int i = half; i < n; ++i) y[i] *= 2.0f;
  }
}
