// clang-19 with CUDA 13: built with -nocudainc, so no CUDA headers; the kernel
// uses clang's attribute and NVVM builtins instead (written for ptxasw).
extern "C" __attribute__((global)) void shift_left(float *out, const float *in, int n) {
  int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
  if (i + 1 < n) out[i] = in[i + 1];
}
