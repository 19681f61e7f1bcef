// deriv8: divergence and curl of a 3-D vector field (u, v, w) with 8th-order
// central first derivatives (radius 4): 72 loads, along x u, v, w at idx-4 .. idx+4
// (idx itself is not read). deriv8 (float) and deriv8_f64 (double).

// The 8th-order difference of array A around idx with stride s (times h).
#define DERIV8(A, s)                                                                         \
    ((REAL)0.8 * (A[idx + (s)] - A[idx - (s)]) - (REAL)0.2 * (A[idx + 2 * (s)] - A[idx - 2 * (s)]) + \
     (REAL)(4.0 / 105.0) * (A[idx + 3 * (s)] - A[idx - 3 * (s)]) -                            \
     (REAL)(1.0 / 280.0) * (A[idx + 4 * (s)] - A[idx - 4 * (s)]))

#define REAL float
#define DERIV8_NAME deriv8
#include "deriv8.cuh"
#undef REAL
#undef DERIV8_NAME

#define REAL double
#define DERIV8_NAME deriv8_f64
#include "deriv8.cuh"
