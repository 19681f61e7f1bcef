// Memory spaces a kernel owns: dynamic extern __shared__ carved into several
// typed arrays, static shared arrays, local (stack) arrays indexed at run time
// so they cannot live in registers, large by-value kernel parameters, and
// alignment-sensitive vector types.

struct Params {
  float weights[16];
  int offsets[8];
  double scale;
  int n;
};

// extern __shared__ carved into a float and an int region.
__global__ void dynamic_smem(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float smem[];
  float* vals = smem;
  int* idx = reinterpret_cast<int*>(smem + blockDim.x);
  int t = threadIdx.x;
  int g = blockIdx.x * blockDim.x + t;
  vals[t] = g < n ? in[g] : 0.f;
  idx[t] = (t * 7) % blockDim.x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) vals[t] += vals[t + s];
    __syncthreads();
  }
  if (g < n) out[g] = vals[0] + vals[idx[t]] * 0.f;
}

// Two extern __shared__ declarations alias the same base (double alignment).
__global__ void aliased_extern(double* __restrict__ out) {
  extern __shared__ double dsh[];
  extern __shared__ char csh[];
  dsh[threadIdx.x] = threadIdx.x * 0.5;
  __syncthreads();
  out[threadIdx.x] = dsh[blockDim.x - 1 - threadIdx.x] + csh[threadIdx.x];
}

// A run-time-indexed local array (ld.local/st.local through __local_depot)
// plus an insertion sort on it.
__global__ void local_sort(const int* __restrict__ in, int* __restrict__ out, int k) {
  int buf[32];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int m = k < 32 ? k : 32;
  for (int i = 0; i < m; ++i) buf[i] = in[t * 32 + i];
  for (int i = 1; i < m; ++i) {
    int v = buf[i], j = i - 1;
    while (j >= 0 && buf[j] > v) {
      buf[j + 1] = buf[j];
      --j;
    }
    buf[j + 1] = v;
  }
  out[t] = buf[(in[t] & 31) % (m ? m : 1)] + buf[m / 2];
}

// A large struct passed by value: ld.param from the kernel parameter space,
// with a run-time index that makes nvcc copy it to local memory.
__global__ void big_param(Params p, float* __restrict__ out, int sel) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= p.n) return;
  out[t] = p.weights[(t + sel) & 15] * (float)p.scale + (float)p.offsets[sel & 7];
}

// Vector types and 16-byte aligned shared staging (ld.shared.v4, st.global.v2).
__global__ void vector_types(const float4* __restrict__ a, const double2* __restrict__ b,
                             float2* __restrict__ out, int n) {
  __shared__ float4 s4[128];
  __shared__ short2 s2[128];
  int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  if (g < n) {
    s4[t] = a[g];
    s2[t] = make_short2((short)t, (short)-t);
  }
  __syncthreads();
  if (g < n) {
    float4 v = s4[(t + 1) & 127];
    double2 d = b[g];
    short2 s = s2[127 - t];
    out[g] = make_float2(v.x + v.y + (float)d.x + s.x, v.z * v.w + (float)d.y + s.y);
  }
}
