/* GEMA: C = alpha*A + beta*B per item (borG's kernel 1). */
#include "ref.h"

double run(long batch, const REAL *restrict A, const REAL *restrict B, REAL *restrict C, REAL alpha, REAL beta,
           int threads) {
    double start = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < batch; ++b) {
        const REAL *a = A + b * NN, *bb = B + b * NN;
        REAL *c = C + b * NN;
        for (int i = 0; i < N * N; ++i) c[i] = alpha * a[i] + beta * bb[i];
    }
    return omp_get_wtime() - start;
}
