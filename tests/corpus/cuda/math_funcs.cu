// Math library calls: single-precision (sinf, expf, logf, powf, erff, ...),
// their fast intrinsics (__sinf, __expf), and double precision (sin, exp,
// pow, cbrt, lgamma), which nvcc expands inline into long branchy PTX with
// .const tables. Built with and without -use_fast_math.

__global__ void float_math(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[8 * i + 0] = sinf(v) + cosf(v) * tanf(v * 0.1f);
  y[8 * i + 1] = expf(v) + exp2f(v) + expm1f(v);
  y[8 * i + 2] = logf(fabsf(v) + 1.f) + log2f(v * v + 1.f) + log1pf(fabsf(v));
  y[8 * i + 3] = powf(fabsf(v), 1.7f) + sqrtf(fabsf(v)) + rsqrtf(v * v + 1.f) + cbrtf(v);
  y[8 * i + 4] = tanhf(v) + erff(v) + erfcf(v) + atan2f(v, 1.5f);
  y[8 * i + 5] = fmaf(v, v, 1.f) + fminf(v, 0.f) + fmaxf(v, 1.f) + copysignf(2.f, v) + truncf(v) +
                 roundf(v) + rintf(v) + floorf(v) + ceilf(v);
  y[8 * i + 6] = __sinf(v) + __cosf(v) + __expf(v) + __logf(fabsf(v) + 1.f) + __fdividef(v, 3.f) +
                 __powf(2.f, v) + __saturatef(v);
  y[8 * i + 7] = __fadd_rn(v, 1.f) + __fmul_rz(v, 3.f) + __fdiv_rd(v, 7.f) + __frcp_ru(v) +
                 __fsqrt_rn(fabsf(v)) + (float)isnan(v) + (float)isinf(v) + ldexpf(v, 3);
}

__global__ void double_math(const double* __restrict__ x, double* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  double s, c;
  sincos(v, &s, &c);
  y[4 * i + 0] = s * c + sin(v * 3.0) + acos(fmin(fmax(v, -1.0), 1.0));
  y[4 * i + 1] = exp(v) + log(fabs(v) + 1.0) + pow(fabs(v), 2.5) + cbrt(v);
  y[4 * i + 2] = sqrt(fabs(v)) + rsqrt(v * v + 1.0) + hypot(v, 2.0) + fma(v, v, -1.0);
  y[4 * i + 3] = lgamma(fabs(v) + 1.0) + tgamma(fabs(v) * 0.1 + 1.0) + erf(v) +
                 __dadd_rn(v, 1.0) + __dmul_ru(v, 2.0) + __drcp_rn(v + 3.0);
}

// Integer intrinsics that map onto single PTX instructions.
__global__ void int_intrinsics(const unsigned* __restrict__ a, const long long* __restrict__ b,
                               unsigned* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned u = a[i];
  long long l = b[i];
  out[i] = __popc(u) + __clz(u) + __ffs(u) + __brev(u) + __byte_perm(u, 0, 0x3210) +
           __umulhi(u, 12345u) + (unsigned)__mul64hi(l, 777ll) + __sad(u, 5u, 1u) +
           (unsigned)__popcll((unsigned long long)l) + (unsigned)__clzll(l) + __usad(u, 9u, 0u) +
           __funnelshift_l(u, ~u, 5) + __vabsdiffu4(u, 0x01020304u) + __hadd(u, 3) + __dp4a(u, u, 1u);
}
