; A 1D three-point stencil staged through shared memory (addrspace(3)
; global, internal linkage) with llvm.nvvm.barrier0, halo loads by the
; first and last thread, and a kernel with !"maxntidx"/!"minctasm" hints.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile = internal addrspace(3) global [130 x float] undef, align 4

define void @stencil1d_smem(float addrspace(1)* noalias %in, float addrspace(1)* noalias %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %g0 = shl i32 %ctaid, 7
  %g = add i32 %g0, %tid
  %gl = sext i32 %g to i64
  %pin = getelementptr inbounds float, float addrspace(1)* %in, i64 %gl
  %v = load float, float addrspace(1)* %pin, align 4
  %t1 = add i32 %tid, 1
  %t1l = zext i32 %t1 to i64
  %sp = getelementptr inbounds [130 x float], [130 x float] addrspace(3)* @tile, i64 0, i64 %t1l
  store float %v, float addrspace(3)* %sp, align 4
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %left, label %chk_right

left:
  %pl = getelementptr inbounds float, float addrspace(1)* %pin, i64 -1
  %vl = load float, float addrspace(1)* %pl, align 4
  store float %vl, float addrspace(3)* getelementptr inbounds ([130 x float], [130 x float] addrspace(3)* @tile, i64 0, i64 0), align 4
  br label %chk_right

chk_right:
  %last = icmp eq i32 %tid, 127
  br i1 %last, label %right, label %sync

right:
  %pr = getelementptr inbounds float, float addrspace(1)* %pin, i64 1
  %vr = load float, float addrspace(1)* %pr, align 4
  store float %vr, float addrspace(3)* getelementptr inbounds ([130 x float], [130 x float] addrspace(3)* @tile, i64 0, i64 129), align 4
  br label %sync

sync:
  call void @llvm.nvvm.barrier0()
  %tl = zext i32 %tid to i64
  %s0p = getelementptr inbounds [130 x float], [130 x float] addrspace(3)* @tile, i64 0, i64 %tl
  %s0 = load float, float addrspace(3)* %s0p, align 4
  %s1 = load float, float addrspace(3)* %sp, align 4
  %t2 = add i32 %tid, 2
  %t2l = zext i32 %t2 to i64
  %s2p = getelementptr inbounds [130 x float], [130 x float] addrspace(3)* @tile, i64 0, i64 %t2l
  %s2 = load float, float addrspace(3)* %s2p, align 4
  %a = fmul float %s0, 2.500000e-01
  %b = fmul float %s1, 5.000000e-01
  %c = fmul float %s2, 2.500000e-01
  %ab = fadd float %a, %b
  %abc = fadd float %ab, %c
  %inr = icmp slt i32 %g, %n
  br i1 %inr, label %write, label %exit

write:
  %pout = getelementptr inbounds float, float addrspace(1)* %out, i64 %gl
  store float %abc, float addrspace(1)* %pout, align 4
  br label %exit

exit:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()

attributes #0 = { convergent nounwind }

!nvvm.annotations = !{!0, !1, !2}
!0 = !{void (float addrspace(1)*, float addrspace(1)*, i32)* @stencil1d_smem, !"kernel", i32 1}
!1 = !{void (float addrspace(1)*, float addrspace(1)*, i32)* @stencil1d_smem, !"maxntidx", i32 128}
!2 = !{void (float addrspace(1)*, float addrspace(1)*, i32)* @stencil1d_smem, !"minctasm", i32 2}
