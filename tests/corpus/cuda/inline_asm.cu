// Inline PTX as users write it: bit tricks (lop3, prmt, bfe, bfi, shf,
// brev, bfind, popc), wide/high multiplies, nested { } scopes with their own
// .reg declarations, predicates built inside asm, special registers
// (%laneid, %warpid, %smid, %clock64, %globaltimer, %lanemask_lt),
// vector loads with cache hints, and a nanosleep back-off.

__device__ __forceinline__ unsigned lop3_maj(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(d) : "r"(a), "r"(b), "r"(c));  // majority
  return d;
}

__device__ __forceinline__ unsigned byte_swap(unsigned x) {
  unsigned y;
  asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ unsigned field(unsigned x, unsigned pos, unsigned len) {
  unsigned y;
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(y) : "r"(x), "r"(pos), "r"(len));
  return y;
}

__device__ __forceinline__ int sfield(int x) {
  int y;
  asm("bfe.s32 %0, %1, 4, 7;" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ unsigned insert(unsigned f, unsigned x) {
  unsigned y;
  asm("bfi.b32 %0, %1, %2, 8, 12;" : "=r"(y) : "r"(f), "r"(x));
  return y;
}

__device__ __forceinline__ unsigned rotl(unsigned x, unsigned n) {
  unsigned y;
  asm("shf.l.wrap.b32 %0, %1, %1, %2;" : "=r"(y) : "r"(x), "r"(n));
  return y;
}

__device__ __forceinline__ unsigned long long funnel64(unsigned lo, unsigned hi, unsigned n) {
  unsigned r_lo, r_hi;
  asm("shf.r.clamp.b32 %0, %2, %3, %4;\n\t"
      "shf.r.clamp.b32 %1, %3, 0, %4;"
      : "=r"(r_lo), "=r"(r_hi)
      : "r"(lo), "r"(hi), "r"(n));
  return ((unsigned long long)r_hi << 32) | r_lo;
}

__device__ __forceinline__ unsigned mulhi_add(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("mad.hi.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ unsigned long long mad_wide(unsigned a, unsigned b,
                                                       unsigned long long c) {
  unsigned long long d;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(c));
  return d;
}

// 64-bit add with carry written as two 32-bit halves (add.cc / addc).
__device__ __forceinline__ unsigned long long add_carry(unsigned long long a, unsigned long long b) {
  unsigned long long r;
  asm("{\n\t"
      ".reg .u32 alo, ahi, blo, bhi, rlo, rhi;\n\t"
      "mov.b64 {alo, ahi}, %1;\n\t"
      "mov.b64 {blo, bhi}, %2;\n\t"
      "add.cc.u32 rlo, alo, blo;\n\t"
      "addc.u32 rhi, ahi, bhi;\n\t"
      "mov.b64 %0, {rlo, rhi};\n\t"
      "}"
      : "=l"(r)
      : "l"(a), "l"(b));
  return r;
}

// Predicate computed and consumed inside one asm block.
__device__ __forceinline__ int clamp_neg(int x, int lo) {
  int y;
  asm("{\n\t"
      ".reg .pred p;\n\t"
      "setp.lt.s32 p, %1, %2;\n\t"
      "@p mov.b32 %0, %2;\n\t"
      "@!p mov.b32 %0, %1;\n\t"
      "}"
      : "=r"(y)
      : "r"(x), "r"(lo));
  return y;
}

__device__ __forceinline__ unsigned lane_id() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

__global__ void bit_tricks(const unsigned* __restrict__ in, unsigned* __restrict__ out,
                           unsigned long long* __restrict__ wide) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned a = in[3 * t], b = in[3 * t + 1], c = in[3 * t + 2];
  unsigned r = lop3_maj(a, b, c) ^ byte_swap(a) ^ field(b, 3, 9) ^ (unsigned)sfield((int)c);
  r += insert(a, b) + rotl(c, a & 31) + mulhi_add(a, b, c);
  unsigned brev, bf, pc;
  asm("brev.b32 %0, %1;" : "=r"(brev) : "r"(r));
  asm("bfind.u32 %0, %1;" : "=r"(bf) : "r"(r));
  asm("popc.b32 %0, %1;" : "=r"(pc) : "r"(r));
  out[t] = r + brev + bf + pc + (unsigned)clamp_neg((int)a, -5);
  wide[t] = funnel64(a, b, c & 63) + mad_wide(a, b, c) + add_carry(wide[t], a);
}

__global__ void special_registers(unsigned* __restrict__ out, unsigned long long* __restrict__ t64) {
  unsigned warp, sm, lt, nsm;
  unsigned long long c0, c1, gt;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsm));
  asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
  asm volatile("nanosleep.u32 %0;" ::"r"(lane_id() * 32));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[4 * t] = lane_id();
  out[4 * t + 1] = warp;
  out[4 * t + 2] = sm ^ nsm;
  out[4 * t + 3] = lt;
  t64[2 * t] = c1 - c0;
  t64[2 * t + 1] = gt;
}

// Vector loads/stores with explicit cache operators and an L2 prefetch.
__global__ void cache_hints(const float4* __restrict__ in, float4* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float4 v;
  asm volatile("prefetch.global.L2 [%0];" ::"l"(in + t + 256));
  asm volatile("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(in + t));
  asm volatile("st.global.wt.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(out + t), "f"(v.w), "f"(v.z),
               "f"(v.y), "f"(v.x)
               : "memory");
  float s = __ldg(&in[t].x) + __ldcs(&in[t].y) + __ldlu(&in[t].z) + __ldcv(&in[t].w);
  __stcs(&out[t].x, s);
  __stwt(&out[t].y, s * 2.f);
}
