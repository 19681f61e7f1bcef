/* borG's batched kernels as OpenCL C for PoCL, the way an OpenCL programmer
 * writes them without sub-group extensions (PoCL 3.1 has none): one work group
 * of WG_SIZE work items per batch item, data exchanged through local memory
 * and barriers. Build options: -DREAL=float|double -DWG_SIZE=N. Layout as the
 * CUDA kernels (item after item, WG_SIZE x WG_SIZE row-major). */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define N WG_SIZE

/* C = alpha*A + beta*B: work item j handles column j (coalesced rows). */
__kernel __attribute__((reqd_work_group_size(N, 1, 1))) void gema(__global const REAL *A, __global const REAL *B,
                                                                  __global REAL *C, REAL alpha, REAL beta) {
    const int j = get_local_id(0);
    const size_t item = get_group_id(0) * (size_t)(N * N);
#pragma unroll
    for (int r = 0; r < N; ++r) C[item + r * N + j] = alpha * A[item + r * N + j] + beta * B[item + r * N + j];
}

/* C = A*B: A goes to local memory, work item j keeps column j of B and of C. */
__kernel __attribute__((reqd_work_group_size(N, 1, 1))) void gemm(__global const REAL *A, __global const REAL *B,
                                                                  __global REAL *C) {
    __local REAL As[N * N];
    const int j = get_local_id(0);
    const size_t item = get_group_id(0) * (size_t)(N * N);
    REAL b[N], c[N];
#pragma unroll
    for (int r = 0; r < N; ++r) {
        As[r * N + j] = A[item + r * N + j];
        b[r] = B[item + r * N + j];
        c[r] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
        for (int r = 0; r < N; ++r) c[r] += As[r * N + k] * b[k];
#pragma unroll
    for (int r = 0; r < N; ++r) C[item + r * N + j] = c[r];
}

/* L y = b, then U x = y: work item i keeps row i; the value finished at step k
 * is published in local memory by work item k. */
__kernel __attribute__((reqd_work_group_size(N, 1, 1))) void trsv(__global const REAL *LU, __global REAL *X) {
    __local REAL xs[N];
    const int i = get_local_id(0);
    const size_t item = get_group_id(0) * (size_t)(N * N);
    REAL a[N];
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = LU[item + i * N + k];
    REAL v = X[get_group_id(0) * (size_t)N + i];
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (i == k) xs[k] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i > k) v -= a[k] * xs[k];
    }
#pragma unroll
    for (int k = N - 1; k >= 0; --k) {
        if (i == k) {
            v = v / a[k];
            xs[k] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i < k) v -= a[k] * xs[k];
    }
    X[get_group_id(0) * (size_t)N + i] = v;
}

/* In-place LDU with static pivoting: work item i keeps row i; the pivot row
 * goes through local memory (two barriers a step: published, then consumed). */
__kernel __attribute__((reqd_work_group_size(N, 1, 1))) void ldu(__global REAL *A) {
    __local REAL prow[N];
    const REAL tiny = sizeof(REAL) == 4 ? (REAL)FLT_EPSILON : (REAL)DBL_EPSILON;
    const int i = get_local_id(0);
    const size_t row = get_group_id(0) * (size_t)(N * N) + i * N;
    REAL a[N];
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = A[row + k];
#pragma unroll
    for (int s = 0; s < N; ++s) {
        if (i == s)
#pragma unroll
            for (int k = s; k < N; ++k) prow[k] = a[k];
        barrier(CLK_LOCAL_MEM_FENCE);
        REAL p = prow[s];
        if (fabs(p) < tiny) p = p < 0 ? -tiny : tiny;
        if (i == s) {
            a[s] = p;
#pragma unroll
            for (int k = s + 1; k < N; ++k) a[k] = a[k] / p;
        } else if (i > s) {
            a[s] = a[s] / p;
#pragma unroll
            for (int k = s + 1; k < N; ++k) a[k] = a[k] - a[s] * prow[k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int k = 0; k < N; ++k) A[row + k] = a[k];
}
