// gaussblur: 5x5 Gaussian (binomial) blur of a 2-D image on the interior, 25 loads,
// five per row at idx-2 .. idx+2. gaussblur (float) and gaussblur_f64 (double).
#define REAL float
#define GAUSSBLUR_NAME gaussblur
#include "gaussblur.cuh"
#undef REAL
#undef GAUSSBLUR_NAME

#define REAL double
#define GAUSSBLUR_NAME gaussblur_f64
#include "gaussblur.cuh"
