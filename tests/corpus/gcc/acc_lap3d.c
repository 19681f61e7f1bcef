/* OpenACC 3-D Laplacian over arrays at file scope, as GCC offloads it: a
 * collapse(2) gang loop over (k, j), a vector loop over i. Small sizes by
 * default (the interpreter runs it whole); benchmarks/gcc_openacc_c.py builds
 * it larger with -DNX=... -DNY=... -DNZ=... */
#include <stdio.h>
#ifndef NX
#define NX 70
#endif
#ifndef NY
#define NY 6
#endif
#ifndef NZ
#define NZ 5
#endif
static float u[NZ][NY][NX], w[NZ][NY][NX];
void lap3d(void)
{
#pragma acc parallel loop gang collapse(2) copyin(u) copy(w)
    for (int k = 1; k < NZ - 1; k++)
        for (int j = 1; j < NY - 1; j++) {
#pragma acc loop vector
            for (int i = 1; i < NX - 1; i++)
                w[k][j][i] = u[k][j][i - 1] + u[k][j][i + 1] + u[k][j - 1][i] + u[k][j + 1][i]
                             + u[k - 1][j][i] + u[k + 1][j][i] - 6.0f * u[k][j][i];
        }
}
int main(void)
{
    for (int k = 0; k < NZ; k++) for (int j = 0; j < NY; j++) for (int i = 0; i < NX; i++) u[k][j][i] = (i * 7 + j * 3 + k) % 11;
    lap3d();
    printf("%f\n", w[2][2][2]);
    return 0;
}
