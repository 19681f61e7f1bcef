// Module-scope variables with initialisers in every state space and shape
// the PTX printer has to reproduce: scalar/array/struct constants, nested
// aggregates, pointers to other globals (generic(...) initialisers), string
// literals, function pointers, uninitialised and static (internal) data,
// __managed__ and half/double values.
#include <cuda_fp16.h>

struct Material {
  float albedo[3];
  double ior;
  int flags;
  unsigned char id;
};

struct Node {
  int value;
  const Node* next;
};

__constant__ float c_coeffs[8] = {0.5f, -1.25f, 2.0f, 3.5e-3f, -0.0f, 1e30f, 1.17549435e-38f, 7.f};
__constant__ double c_poly[5] = {1.0, -0.5, 1.0 / 6.0, -1.0 / 24.0, 1.0 / 120.0};
__constant__ Material c_materials[2] = {{{0.8f, 0.2f, 0.1f}, 1.5, 3, 7},
                                        {{0.1f, 0.9f, 0.4f}, 1.333, -1, 255}};
__constant__ int c_uninit[16];
__constant__ unsigned long long c_masks[3] = {0xffffffffffffffffull, 0x8000000000000000ull, 1ull};
__constant__ signed char c_small[6] = {-128, -1, 0, 1, 127, 42};
__constant__ short c_shorts[3] = {-32768, 12345, 32767};

__device__ int d_table[6] = {1, 1, 2, 3, 5, 8};
__device__ int* d_table_ptr = d_table;                  // generic(d_table)
__device__ int* d_table_mid = &d_table[3];              // generic(d_table)+12
__device__ const float* d_coeff_ptr = c_coeffs + 2;     // pointer into .const
__device__ int* d_ptr_array[3] = {d_table, d_table + 5, nullptr};
__device__ const char* d_message = "ptxasw corpus";     // string in .global
__device__ const char d_inline_str[] = "inline\tchars\n";
// A linked list across three globals (NVVM rejects self-referential sets).
__device__ Node d_node2 = {30, nullptr};
__device__ Node d_node1 = {20, &d_node2};
__device__ Node d_node0 = {10, &d_node1};
__device__ Material d_default = {{1.f, 1.f, 1.f}, 1.0, 0, 0};
__device__ float d_zero_array[64];
__device__ double d_scalar = 6.02214076e23;
__device__ __half d_half = __half_raw{0x3555};
__device__ unsigned long long d_counter;
__managed__ int m_managed_flag = 1;
static __device__ int s_internal[4] = {4, 3, 2, 1};     // no .visible

__device__ __noinline__ float poly_eval(float x) {
  double acc = 0.0;
  for (int i = 4; i >= 0; --i) acc = acc * x + c_poly[i];
  return (float)acc;
}
typedef float (*unary_t)(float);
__device__ unary_t d_fn = poly_eval;                     // function address initialiser

__global__ void read_globals(float* __restrict__ out, int* __restrict__ iout, int sel) {
  int t = threadIdx.x;
  const Material& m = c_materials[sel & 1];
  out[t] = c_coeffs[t & 7] * m.albedo[t % 3] + (float)m.ior + d_coeff_ptr[t & 3] + d_fn((float)t) +
           (float)d_scalar * 0.f + __half2float(d_half) + d_zero_array[t & 63];
  int walk = 0;
  for (const Node* n = &d_node0; n; n = n->next) walk += n->value;
  iout[t] = d_table_ptr[t % 6] + *d_table_mid + (d_ptr_array[sel % 3] ? *d_ptr_array[sel % 3] : 0) +
            walk + d_message[t % 13] + d_inline_str[t % 13] + c_uninit[t & 15] +
            (int)c_masks[t % 3] + c_small[t % 6] + c_shorts[t % 3] + s_internal[t & 3] +
            m_managed_flag + m.flags + m.id + d_default.flags;
  if (t == 0) atomicAdd(&d_counter, 1ull);
}

// Writes to globals so they cannot be constant-folded away.
__global__ void write_globals(int v) {
  d_table[threadIdx.x % 6] = v;
  d_zero_array[threadIdx.x & 63] = (float)v;
  s_internal[threadIdx.x & 3] += v;
  m_managed_flag = v;
}
