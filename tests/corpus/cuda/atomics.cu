// Atomics on every width and space nvcc lowers differently: atom.global vs
// atom.shared, add/exch/cas/min/max/and/or/xor/inc/dec, f32/f64 add,
// u64 CAS loops, scoped variants (_block/_system) and reductions whose result
// is unused (red.*).

__global__ void atomics_global(int* i32, unsigned* u32, unsigned long long* u64, float* f32,
                               double* f64, const int* __restrict__ vals, int* __restrict__ old) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = vals[t];
  old[t] = atomicAdd(i32, v);                    // atom.global.add.u32 (result used)
  atomicAdd(i32 + 1, v);                         // red.global.add (result unused)
  atomicSub(i32 + 2, v);
  atomicExch(i32 + 3, v);
  atomicMin(i32 + 4, v);
  atomicMax(i32 + 5, v);
  atomicAnd(u32, (unsigned)v);
  atomicOr(u32 + 1, (unsigned)v);
  atomicXor(u32 + 2, (unsigned)v);
  atomicInc(u32 + 3, 1000u);
  atomicDec(u32 + 4, 1000u);
  old[t] += atomicCAS(i32 + 6, v, v + 1);
  atomicAdd(u64, (unsigned long long)v);
  atomicExch(u64 + 1, (unsigned long long)t);
  atomicMin(u64 + 2, (unsigned long long)v);
  atomicCAS(u64 + 3, 0ull, (unsigned long long)t);
  atomicAdd(f32, (float)v * 0.5f);
  old[t] += (int)atomicExch(f32 + 1, (float)t);
  atomicAdd(f64, (double)v);
}

// double max via a 64-bit CAS loop (there is no atom.max.f64).
__device__ double atomic_max_f64(double* addr, double val) {
  unsigned long long* p = reinterpret_cast<unsigned long long*>(addr);
  unsigned long long cur = *p, assumed;
  do {
    assumed = cur;
    if (__longlong_as_double(assumed) >= val) break;
    cur = atomicCAS(p, assumed, __double_as_longlong(val));
  } while (cur != assumed);
  return __longlong_as_double(cur);
}

// float via a 32-bit CAS loop (multiplication, no native atom).
__device__ float atomic_mul_f32(float* addr, float val) {
  int* p = reinterpret_cast<int*>(addr);
  int cur = *p, assumed;
  do {
    assumed = cur;
    cur = atomicCAS(p, assumed, __float_as_int(__int_as_float(assumed) * val));
  } while (cur != assumed);
  return __int_as_float(cur);
}

__global__ void cas_loops(double* dmax, float* fprod, const double* __restrict__ d,
                          const float* __restrict__ f) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomic_max_f64(dmax, d[t]);
  atomic_mul_f32(fprod, f[t]);
}

// Shared-memory histogram: atom.shared.add, then a global merge.
__global__ void histogram256(const unsigned char* __restrict__ data, unsigned* __restrict__ hist,
                             int n) {
  __shared__ unsigned local[256];
  __shared__ unsigned long long total;
  __shared__ float fsum;
  __shared__ double dsum;
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  if (threadIdx.x == 0) { total = 0; fsum = 0.f; dsum = 0.0; }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    unsigned char c = data[i];
    atomicAdd(&local[c], 1u);
    atomicAdd(&total, (unsigned long long)c);
    atomicAdd(&fsum, (float)c);
    atomicAdd(&dsum, (double)c);
    atomicMax(&local[255], (unsigned)c);
    atomicCAS(&local[0], 0u, 0u);
    atomicExch(&local[1], local[1]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&hist[b], local[b]);
  if (threadIdx.x == 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(hist + 256), total);
    atomicAdd(reinterpret_cast<float*>(hist + 258), fsum);
    atomicAdd(reinterpret_cast<double*>(hist + 260), dsum);
  }
}

// Scoped atomics, fences and volatile accesses (memory-model qualifiers).
__global__ void scoped_atomics(int* flag, int* data, float* f) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd_block(data, 1);
  atomicAdd_system(data + 1, 1);
  atomicExch_block(data + 2, t);
  atomicCAS_system(data + 3, 0, t);
  atomicAdd_block(f, 1.0f);
  __threadfence_block();
  __threadfence();
  __threadfence_system();
  if (t == 0) {
    *(volatile int*)(data + 4) = 42;
    __threadfence();
    atomicExch(flag, 1);
  } else if (t == 32) {
    while (atomicAdd(flag, 0) == 0) {
    }
    data[5] = *(volatile int*)(data + 4);
  }
}
