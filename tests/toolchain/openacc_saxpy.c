/* OpenACC for GCC's nvptx offloading (written for ptxasw). */
#include <stdio.h>
#define N 4096
int main(void) {
  static float x[N], y[N];
  for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
#pragma acc parallel loop copyin(x) copy(y)
  for (int i = 0; i < N; i++) y[i] = 2.0f * x[i] + y[i];
  printf("%.1f\n", y[10]);
  return 0;
}
