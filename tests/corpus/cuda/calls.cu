// Device-side calls in every shape the PTX `call` instruction takes:
// non-inlined functions with scalar/struct/pointer parameters and struct
// returns, recursion (needs a stack frame), function pointers and virtual
// methods (indirect call with a .callprototype), a jump table (brx.idx, via
// inline PTX since NVVM does not emit it), and an extern function with -rdc.

struct Vec3 {
  float x, y, z;
};

struct Big {
  double d[4];
  int tag;
  char name[12];
};

__device__ __noinline__ float dot3(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

__device__ __noinline__ Vec3 cross3(const Vec3& a, const Vec3& b) {
  return Vec3{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

__device__ __noinline__ Big make_big(double s, int tag) {
  Big b;
  for (int i = 0; i < 4; ++i) b.d[i] = s * (i + 1);
  b.tag = tag;
  for (int i = 0; i < 12; ++i) b.name[i] = (char)('a' + (tag + i) % 26);
  return b;
}

__device__ __noinline__ double sum_big(Big b) {
  return b.d[0] + b.d[1] + b.d[2] + b.d[3] + b.tag + b.name[3];
}

__device__ __noinline__ void no_return(int* p, int v) {
  if (v < 0) return;
  *p = v;
}

__device__ __noinline__ unsigned long long fib(unsigned n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

// Mutual recursion through a local array (forces a real stack frame).
__device__ __noinline__ int odd_depth(int n, int* trail);
__device__ __noinline__ int even_depth(int n, int* trail) {
  int local[8];
  for (int i = 0; i < 8; ++i) local[i] = trail[i] + n;
  return n == 0 ? local[n & 7] : odd_depth(n - 1, local);
}
__device__ __noinline__ int odd_depth(int n, int* trail) {
  return n == 0 ? -trail[0] : even_depth(n - 1, trail);
}

typedef float (*binop_t)(float, float);
__device__ __noinline__ float op_add(float a, float b) { return a + b; }
__device__ __noinline__ float op_mul(float a, float b) { return a * b; }
__device__ __noinline__ float op_hyp(float a, float b) { return sqrtf(a * a + b * b); }
__device__ binop_t g_ops[3] = {op_add, op_mul, op_hyp};

struct Shape {
  __device__ virtual float area() const = 0;
  __device__ virtual ~Shape() {}
};
struct Circle : Shape {
  float r;
  __device__ explicit Circle(float r_) : r(r_) {}
  __device__ float area() const override { return 3.14159265f * r * r; }
};
struct Rect : Shape {
  float w, h;
  __device__ Rect(float w_, float h_) : w(w_), h(h_) {}
  __device__ float area() const override { return w * h; }
};

__device__ __noinline__ float area_of(const Shape* s) { return s->area(); }

__device__ __noinline__ unsigned jump_table(unsigned sel, unsigned a, unsigned b) {
  unsigned r;
  asm volatile(
      "{\n\t"
      "jt: .branchtargets Lsel0, Lsel1, Lsel2, Lsel3;\n\t"
      "brx.idx %1, jt;\n"
      "Lsel0:\n\tadd.u32 %0, %2, %3;\n\tbra.uni Lsel_end;\n"
      "Lsel1:\n\tsub.u32 %0, %2, %3;\n\tbra.uni Lsel_end;\n"
      "Lsel2:\n\tmul.lo.u32 %0, %2, %3;\n\tbra.uni Lsel_end;\n"
      "Lsel3:\n\txor.b32 %0, %2, %3;\n"
      "Lsel_end:\n\t}"
      : "=r"(r)
      : "r"(sel & 3u), "r"(a), "r"(b));
  return r;
}

#ifdef __CUDACC_RDC__
extern __device__ int external_hook(int);  // defined in another translation unit
#endif

__global__ void calls_kernel(const float* __restrict__ in, float* __restrict__ out,
                             const int* __restrict__ sel, double* __restrict__ dout,
                             unsigned long long* __restrict__ uout) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  Vec3 a{in[3 * t], in[3 * t + 1], in[3 * t + 2]};
  Vec3 b{in[3 * t + 2], in[3 * t], in[3 * t + 1]};
  Vec3 c = cross3(a, b);
  binop_t op = g_ops[sel[t] % 3];
  out[t] = dot3(c, a) + op(a.x, b.y);
  dout[t] = sum_big(make_big(in[t], t));
  uout[t] = fib(sel[t] & 15) + (unsigned long long)jump_table(sel[t], t, 7);
  int trail[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  no_return(reinterpret_cast<int*>(uout) + 1, even_depth(sel[t] & 7, trail));
#ifdef __CUDACC_RDC__
  out[t] += external_hook(t);
#endif
}

__global__ void virtual_kernel(const float* __restrict__ in, float* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  Circle c(in[t]);
  Rect r(in[t], 2.f);
  const Shape* s = (t & 1) ? static_cast<const Shape*>(&c) : static_cast<const Shape*>(&r);
  out[t] = area_of(s);
}
