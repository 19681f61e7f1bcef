// wave13pt: one leapfrog step of the 3-D wave equation with the 13-point
// fourth-order Laplacian: w2 = m0 w1 + m1 (distance-1 neighbours) + m2 (distance-2
// neighbours) - w0. Along x: w1[idx-2 .. idx+2]. wave13pt (float), wave13pt_f64.
#define REAL float
#define WAVE13PT_NAME wave13pt
#include "wave13pt.cuh"
#undef REAL
#undef WAVE13PT_NAME

#define REAL double
#define WAVE13PT_NAME wave13pt_f64
#include "wave13pt.cuh"
