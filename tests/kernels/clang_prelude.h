// Just enough of CUDA for clang-19 to build benchmarks/kernels/*.cu without the
// CUDA headers (clang-19 cannot parse CUDA 13's): the execution-space
// attributes, the builtin variables (threadIdx, blockIdx, blockDim, gridDim)
// and the two libm functions the suite calls. Use it with
//   clang-19 -x cuda --cuda-device-only -nocudainc -nocudalib -include clang_prelude.h
// and, for sinf/cosf, libdevice linked in as clang's own CUDA headers would:
//   -Xclang -mlink-builtin-bitcode -Xclang $CUDA/nvvm/libdevice/libdevice.10.bc
// (__builtin_sinf is no substitute: clang-19's NVPTX back end cannot select
// fsin without fast math and aborts).
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __restrict__ __restrict
#include <__clang_cuda_builtin_vars.h>

extern "C" __device__ float __nv_sinf(float);
extern "C" __device__ float __nv_cosf(float);
static __device__ __forceinline__ float sinf(float x) { return __nv_sinf(x); }
static __device__ __forceinline__ float cosf(float x) { return __nv_cosf(x); }
