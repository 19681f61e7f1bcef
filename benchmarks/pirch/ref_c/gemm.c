/* GEMM: C = A*B per item (borG's kernel 2), i-k-j loop order so the inner loop vectorises. */
#include "ref.h"

double run(long batch, const REAL *restrict A, const REAL *restrict B, REAL *restrict C, int threads) {
    double start = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < batch; ++b) {
        const REAL *a = A + b * NN, *bb = B + b * NN;
        REAL *c = C + b * NN;
        for (int i = 0; i < N; ++i) {
            REAL row[N];
            for (int j = 0; j < N; ++j) row[j] = 0;
            for (int k = 0; k < N; ++k)
                for (int j = 0; j < N; ++j) row[j] += a[i * N + k] * bb[k * N + j];
            for (int j = 0; j < N; ++j) c[i * N + j] = row[j];
        }
    }
    return omp_get_wtime() - start;
}
