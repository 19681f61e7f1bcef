// FP8 conversions (sm_89+: cvt.rn.satfinite.e4m3x2.f32 and friends):
// scalar and x2/x4 packed e4m3/e5m2, to and from float, half and bfloat16,
// as a quantise/dequantise pair with a per-tensor scale.
#include <cuda_fp8.h>

__global__ void quantize_e4m3(const float* __restrict__ in, __nv_fp8_e4m3* __restrict__ q,
                              float inv_scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) q[i] = __nv_fp8_e4m3(in[i] * inv_scale);
}

__global__ void dequantize_e5m2(const __nv_fp8_e5m2* __restrict__ q, float* __restrict__ out,
                                float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(q[i]) * scale;
}

__global__ void packed_fp8(const float2* __restrict__ in2, const float4* __restrict__ in4,
                           __nv_fp8x2_e4m3* __restrict__ o2, __nv_fp8x4_e5m2* __restrict__ o4,
                           float2* __restrict__ round_trip, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_fp8x2_e4m3 p2(in2[i]);
  __nv_fp8x4_e5m2 p4(in4[i]);
  o2[i] = p2;
  o4[i] = p4;
  round_trip[i] = static_cast<float2>(p2);
}

// Raw conversion intrinsics: saturation mode and half2 sources.
__global__ void raw_cvt(const __half2_raw* __restrict__ h, const float* __restrict__ f,
                        __nv_fp8x2_storage_t* __restrict__ out, __half_raw* __restrict__ back,
                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_fp8x2_storage_t a = __nv_cvt_halfraw2_to_fp8x2(h[i], __NV_SATFINITE, __NV_E4M3);
  __nv_fp8_storage_t b = __nv_cvt_float_to_fp8(f[i], __NV_NOSAT, __NV_E5M2);
  out[i] = a ^ (__nv_fp8x2_storage_t)b;
  back[i] = __nv_cvt_fp8_to_halfraw(b, __NV_E5M2);
}
