/* LDU with static pivoting, in place per item (borG's kernel 4): below the
 * diagonal L (unit diagonal implied), on it D, above it U (unit diagonal
 * implied), A = L D U; no row exchanges, a pivot smaller in magnitude than
 * the type's epsilon is replaced by +-epsilon. */
#include <float.h>

#include "ref.h"

#define PIVOT_MIN ((REAL)(sizeof(REAL) == 4 ? FLT_EPSILON : DBL_EPSILON))

double run(long batch, REAL *restrict A, int threads) {
    double start = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < batch; ++b) {
        REAL *a = A + b * NN;
        for (int s = 0; s < N; ++s) {
            REAL p = a[s * N + s];
            if (fabs(p) < PIVOT_MIN) p = p < 0 ? -PIVOT_MIN : PIVOT_MIN;
            a[s * N + s] = p;
            const REAL inv = 1 / p;
            for (int r = s + 1; r < N; ++r) a[r * N + s] /= p;
            for (int r = s + 1; r < N; ++r) {
                const REAL l = a[r * N + s];
                for (int k = s + 1; k < N; ++k) a[r * N + k] -= l * a[s * N + k];
            }
            for (int k = s + 1; k < N; ++k) a[s * N + k] *= inv;
        }
    }
    return omp_get_wtime() - start;
}
