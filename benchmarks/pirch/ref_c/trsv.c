/* TRSV: L y = b, then U x = y per item (borG's kernel 3). LU packs L (unit lower,
 * below the diagonal) and U (upper, with the diagonal); x holds b on entry. */
#include "ref.h"

double run(long batch, const REAL *restrict LU, REAL *restrict X, int threads) {
    double start = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < batch; ++b) {
        const REAL *lu = LU + b * NN;
        REAL *x = X + b * N;
        for (int i = 1; i < N; ++i) {
            REAL v = x[i];
            for (int k = 0; k < i; ++k) v -= lu[i * N + k] * x[k];
            x[i] = v;
        }
        for (int i = N - 1; i >= 0; --i) {
            REAL v = x[i];
            for (int k = i + 1; k < N; ++k) v -= lu[i * N + k] * x[k];
            x[i] = v / lu[i * N + i];
        }
    }
    return omp_get_wtime() - start;
}
