#include <stdio.h>
#include <stdlib.h>
void stencil1d(int n, const float *x, float *y);
void saxpy(int n, float a, const float *x, float *y);
int main(void) {
  int n = 1000; float *x = malloc(n * sizeof *x), *y = calloc(n, sizeof *y);
  for (int i = 0; i < n; ++i) x[i] = i * 0.5f;
  stencil1d(n, x, y); saxpy(n, 2.f, x, y);
  printf("%f\n", y[10]);
  return 0;
}
