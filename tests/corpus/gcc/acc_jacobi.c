/* OpenACC's usual 2-D stencil over arrays at file scope, as GCC's nvptx
 * offload compiler builds it: a gang loop over rows, a vector loop over
 * columns. GCC keeps the arrays' addresses and the row offsets in lane 0
 * across the gang loop and broadcasts them at the top of every iteration.
 * Small sizes by default (a row of 70: the vector loop's last pass leaves
 * lanes idle) so that the interpreter runs it whole; benchmarks/gcc_openacc_c.py
 * builds it larger with -DNX=... -DNY=... */
#include <stdio.h>

#ifndef NX
#define NX 70
#endif
#ifndef NY
#define NY 9
#endif

static double u[NY][NX], v[NY][NX];

void jacobi(void)
{
#pragma acc parallel loop gang copyin(u) copyout(v)
    for (int j = 1; j < NY - 1; j++) {
#pragma acc loop vector
        for (int i = 1; i < NX - 1; i++)
            v[j][i] = 0.25 * (u[j][i - 1] + u[j][i + 1] + u[j - 1][i] + u[j + 1][i]);
    }
}

int main(void)
{
    for (int j = 0; j < NY; j++)
        for (int i = 0; i < NX; i++) u[j][i] = (double)((i * 7 + j * 3) % 11);
    jacobi();
    printf("%f\n", v[3][3]);
    return 0;
}
