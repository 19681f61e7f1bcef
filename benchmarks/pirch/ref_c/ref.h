/* Plain C references of borG's batched kernels, for the speed comparison.
 *
 * Built with  gcc -O3 -march=native -fopenmp -fPIC -shared -DREAL=float|double -DWG_SIZE=N
 * (N = the matrix order, the CUDA version's WG_SIZE). Each file exports one
 * `double run(long batch, <the CUDA kernel's parameters>, int threads)`: it
 * processes the whole batch, parallel over batch items with OpenMP on
 * `threads` threads, and returns the seconds it took (omp_get_wtime), so the
 * caller's ctypes overhead is not timed. Data layout as the CUDA kernels:
 * item after item, each WG_SIZE x WG_SIZE row-major (vectors: WG_SIZE). */
#pragma once
#include <math.h>
#include <omp.h>

#ifndef REAL
#error "compile with -DREAL=float or -DREAL=double"
#endif
#ifndef WG_SIZE
#error "compile with -DWG_SIZE=N"
#endif
#define N WG_SIZE
#define NN ((long)N * N)
