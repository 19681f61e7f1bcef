// borG's batched linear-algebra kernels (CoRe/PIRCH/borG paper, section 5),
// written from the maths in the warp-register-cache idiom. Batch item b is
// one WG_SIZE x WG_SIZE matrix (row-major, item after item) handled by block
// b, whose WG_SIZE lanes form one warp.
//
//  gema: C = alpha*A + beta*B          lane j holds column j of A and B
//  gemm: C = A*B (outer products)      lane j holds column j of B and C, and
//                                      column j of A, broadcast lane k's column
//  trsv: L y = b, then U x = y         lane i holds row i of the packed LU matrix
//  ldu:  A = L D U, static pivoting    lane i holds row i (as borG's Example 3)
#include "pirch.cuh"

template <int WG, typename T>
__device__ __forceinline__ void gema(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C,
                                     T alpha, T beta) {
    const int j = threadIdx.x;
    const size_t item = (size_t)blockIdx.x * WG * WG;
    T a[WG], b[WG];
#pragma unroll
    for (int r = 0; r < WG; ++r) {
        a[r] = A[item + r * WG + j];
        b[r] = B[item + r * WG + j];
    }
#pragma unroll
    for (int r = 0; r < WG; ++r) C[item + r * WG + j] = alpha * a[r] + beta * b[r];
}

// C[:, j] = sum_k A[:, k] * B[k, j]: column k of A comes from lane k, one
// shuffle per element (borG's vector broadcast), B[k, j] is lane j's own.
template <int WG, typename T>
__device__ __forceinline__ void gemm(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C) {
    const int j = threadIdx.x;
    const size_t item = (size_t)blockIdx.x * WG * WG;
    T a[WG], b[WG], c[WG];
#pragma unroll
    for (int r = 0; r < WG; ++r) {
        a[r] = A[item + r * WG + j];
        b[r] = B[item + r * WG + j];
        c[r] = T(0);
    }
#pragma unroll
    for (int k = 0; k < WG; ++k) {
#pragma unroll
        for (int r = 0; r < WG; ++r) c[r] += __shfl_sync(WG_MASK(WG), a[r], k, WG) * b[k];
    }
#pragma unroll
    for (int r = 0; r < WG; ++r) C[item + r * WG + j] = c[r];
}

// LU holds L (unit lower, strictly below the diagonal) and U (upper, with the
// diagonal) of one item; x is b on entry and the solution on exit. Lane i
// holds row i and x[i]; the value a step finishes is broadcast from its lane.
template <int WG, typename T>
__device__ __forceinline__ void trsv(const T *__restrict__ LU, T *__restrict__ x) {
    const int i = threadIdx.x;
    const size_t item = (size_t)blockIdx.x * WG * WG;
    T a[WG];
#pragma unroll
    for (int k = 0; k < WG; ++k) a[k] = LU[item + i * WG + k];
    T v = x[(size_t)blockIdx.x * WG + i];
#pragma unroll
    for (int k = 0; k < WG; ++k) {  // forward: y_k is final on lane k
        const T yk = __shfl_sync(WG_MASK(WG), v, k, WG);
        if (i > k) v -= a[k] * yk;
    }
#pragma unroll
    for (int k = WG - 1; k >= 0; --k) {  // backward: divide on lane k, then eliminate above
        if (i == k) v = v / a[k];
        const T xk = __shfl_sync(WG_MASK(WG), v, k, WG);
        if (i < k) v -= a[k] * xk;
    }
    x[(size_t)blockIdx.x * WG + i] = v;
}

template <typename T> __device__ __forceinline__ T pivot_min();
template <> __device__ __forceinline__ float pivot_min<float>() { return 1.1920929e-07f; }
template <> __device__ __forceinline__ double pivot_min<double>() { return 2.220446049250313e-16; }

// In place: strictly below the diagonal L (unit diagonal implied), on it D,
// strictly above it U (unit diagonal implied), A = L D U. Static pivoting: no
// row exchanges; a pivot smaller in magnitude than eps is replaced by +-eps.
template <int WG, typename T>
__device__ __forceinline__ void ldu(T *__restrict__ A) {
    const int i = threadIdx.x;
    const size_t row = (size_t)blockIdx.x * WG * WG + i * WG;
    T a[WG], piv[WG];
#pragma unroll
    for (int k = 0; k < WG; ++k) a[k] = A[row + k];
#pragma unroll
    for (int s = 0; s < WG; ++s) {
#pragma unroll
        for (int k = s; k < WG; ++k) piv[k] = __shfl_sync(WG_MASK(WG), a[k], s, WG);  // pivot row
        T p = piv[s];
        if (fabs(p) < pivot_min<T>()) p = p < T(0) ? -pivot_min<T>() : pivot_min<T>();
        if (i == s) a[s] = p;
        if (i > s) a[s] = a[s] / p;  // pivot column: L
#pragma unroll
        for (int k = s + 1; k < WG; ++k) {  // pivot row: U; below it the Schur downdate
            if (i == s) a[k] = a[k] / p;
            else if (i > s) a[k] = a[k] - a[s] * piv[k];
        }
    }
#pragma unroll
    for (int k = 0; k < WG; ++k) A[row + k] = a[k];
}

#define GEMA(T, S, WG)                                                                                 \
    PIRCH_ENTRY(WG) gema_##S##_wg##WG(const T *A, const T *B, T *C, T alpha, T beta) {                 \
        gema<WG, T>(A, B, C, alpha, beta);                                                             \
    }
#define GEMM(T, S, WG) \
    PIRCH_ENTRY(WG) gemm_##S##_wg##WG(const T *A, const T *B, T *C) { gemm<WG, T>(A, B, C); }
#define TRSV(T, S, WG) PIRCH_ENTRY(WG) trsv_##S##_wg##WG(const T *LU, T *x) { trsv<WG, T>(LU, x); }
#define LDU(T, S, WG) PIRCH_ENTRY(WG) ldu_##S##_wg##WG(T *A) { ldu<WG, T>(A); }

PIRCH_ALL_WG(GEMA, float, f32)
PIRCH_ALL_WG(GEMA, double, f64)
PIRCH_ALL_WG(GEMM, float, f32)
PIRCH_ALL_WG(GEMM, double, f64)
PIRCH_ALL_WG(TRSV, float, f32)
PIRCH_ALL_WG(TRSV, double, f64)
PIRCH_ALL_WG(LDU, float, f32)
PIRCH_ALL_WG(LDU, double, f64)
