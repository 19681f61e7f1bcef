// Half and bfloat16 arithmetic: packed __half2 FMA (fma.rn.f16x2),
// conversions, half comparisons and math, and __nv_bfloat16/__nv_bfloat162
// (native on sm_80+, emulated through f32 below that).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__global__ void half2_axpy(const __half2* __restrict__ x, __half2* __restrict__ y, __half a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 a2 = __half2half2(a);
  __half2 v = __hfma2(a2, x[i], y[i]);
  v = __hmul2(v, __hadd2(v, __float2half2_rn(1.0f)));
  v = __hmax2(v, __hneg2(v));
  y[i] = __hsub2(v, h2exp(__hmul2(x[i], __float2half2_rn(-0.5f))));
}

__global__ void half_scalar(const float* __restrict__ in, __half* __restrict__ out,
                            float* __restrict__ back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half h = __float2half_rn(in[i]);
  __half r = __hlt(h, __float2half(0.5f)) ? hsqrt(__habs(h)) : hrcp(h);
  r = __hfma(r, h, __ushort_as_half((unsigned short)0x3c00));  // + 1.0
  out[i] = r;
  back[i] = __half2float(r) + __low2float(__halves2half2(r, h)) +
            (float)__half2int_rz(h) + (__hisnan(r) ? 1.f : 0.f);
}

// Dot product of half2 vectors with a float accumulator.
__global__ void half2_dot(const __half2* __restrict__ a, const __half2* __restrict__ b,
                          float* __restrict__ out, int n) {
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float2 p = __half22float2(__hmul2(a[i], b[i]));
    acc += p.x + p.y;
  }
  for (int off = 16; off; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

__global__ void bf16_ops(const __nv_bfloat16* __restrict__ x, const __nv_bfloat162* __restrict__ x2,
                         __nv_bfloat16* __restrict__ y, __nv_bfloat162* __restrict__ y2,
                         float* __restrict__ f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 a = x[i];
  __nv_bfloat162 v = x2[i];
#if __CUDA_ARCH__ >= 800
  __nv_bfloat16 b = __hfma(a, __float2bfloat16(1.5f), __float2bfloat16_rn(0.25f));
  y[i] = __hmax(b, __hneg(a));
  y2[i] = __hfma2(v, v, __bfloat162bfloat162(b));
#else
  // No bf16 FMA before sm_80: go through f32 explicitly.
  float fa = __bfloat162float(a);
  __nv_bfloat16 b = __float2bfloat16_rn(fmaf(fa, 1.5f, 0.25f));
  y[i] = __float2bfloat16_rn(fmaxf(__bfloat162float(b), -fa));
  float lo = __low2float(v), hi = __high2float(v), fb = __bfloat162float(b);
  y2[i] = __floats2bfloat162_rn(fmaf(lo, lo, fb), fmaf(hi, hi, fb));
#endif
  f[i] = __bfloat162float(b) + __low2float(v) + __high2float(v);
}

// Packed conversions between f32 and f16x2/bf16x2 (cvt.rn.f16x2.f32).
__global__ void pack_convert(const float2* __restrict__ in, __half2* __restrict__ h,
                             __nv_bfloat162* __restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  h[i] = __float22half2_rn(in[i]);
  b[i] = __float22bfloat162_rn(in[i]);
}
