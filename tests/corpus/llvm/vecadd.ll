; Element-wise kernels in the shape clang -x cuda --cuda-device-only emits:
; generic pointer parameters (NVPTXLowerArgs/InferAddressSpaces turn the
; accesses into ld.global/st.global), sreg intrinsics for the thread index,
; and kernels marked through !nvvm.annotations.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define dso_local void @_Z6vecaddPKfS0_Pfi(float* noundef readonly %a, float* noundef readonly %b, float* noundef %c, i32 noundef %n) #0 {
entry:
  %ctaid = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = tail call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %tid = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %mul = mul nsw i32 %ctaid, %ntid
  %i = add nsw i32 %mul, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit

body:
  %idx = sext i32 %i to i64
  %pa = getelementptr inbounds float, float* %a, i64 %idx
  %va = load float, float* %pa, align 4
  %pb = getelementptr inbounds float, float* %b, i64 %idx
  %vb = load float, float* %pb, align 4
  %sum = fadd contract float %va, %vb
  %pc = getelementptr inbounds float, float* %c, i64 %idx
  store float %sum, float* %pc, align 4
  br label %exit

exit:
  ret void
}

; 2D Jacobi step with explicit global-address-space pointers.
define dso_local void @jacobi2d(float addrspace(1)* noalias readonly %in, float addrspace(1)* noalias %out, i32 %nx, i32 %ny) #0 {
entry:
  %bx = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %dx = tail call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %dy = tail call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %tx = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = tail call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %i0 = mul i32 %bx, %dx
  %i = add i32 %i0, %tx
  %j0 = mul i32 %by, %dy
  %j = add i32 %j0, %ty
  %nx1 = add i32 %nx, -1
  %ny1 = add i32 %ny, -1
  %c1 = icmp sgt i32 %i, 0
  %c2 = icmp slt i32 %i, %nx1
  %c3 = icmp sgt i32 %j, 0
  %c4 = icmp slt i32 %j, %ny1
  %a1 = and i1 %c1, %c2
  %a2 = and i1 %c3, %c4
  %ok = and i1 %a1, %a2
  br i1 %ok, label %body, label %exit

body:
  %row = mul nsw i32 %j, %nx
  %c = add nsw i32 %row, %i
  %cl = sext i32 %c to i64
  %nxl = sext i32 %nx to i64
  %pw = getelementptr inbounds float, float addrspace(1)* %in, i64 %cl
  %pwl = getelementptr inbounds float, float addrspace(1)* %pw, i64 -1
  %pwr = getelementptr inbounds float, float addrspace(1)* %pw, i64 1
  %nnx = sub nsw i64 0, %nxl
  %pwn = getelementptr inbounds float, float addrspace(1)* %pw, i64 %nnx
  %pws = getelementptr inbounds float, float addrspace(1)* %pw, i64 %nxl
  %l = load float, float addrspace(1)* %pwl, align 4
  %r = load float, float addrspace(1)* %pwr, align 4
  %n = load float, float addrspace(1)* %pwn, align 4
  %s = load float, float addrspace(1)* %pws, align 4
  %s1 = fadd float %l, %r
  %s2 = fadd float %s1, %n
  %s3 = fadd float %s2, %s
  %res = fmul float %s3, 2.500000e-01
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %cl
  store float %res, float addrspace(1)* %po, align 4
  br label %exit

exit:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()

attributes #0 = { convergent mustprogress norecurse nounwind "target-cpu"="sm_75" }

!nvvm.annotations = !{!0, !1}
!0 = !{void (float*, float*, float*, i32)* @_Z6vecaddPKfS0_Pfi, !"kernel", i32 1}
!1 = !{void (float addrspace(1)*, float addrspace(1)*, i32, i32)* @jacobi2d, !"kernel", i32 1}
