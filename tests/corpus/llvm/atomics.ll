; Atomic read-modify-write in global and shared memory as clang emits it
; for atomicAdd/atomicCAS/atomicExch/atomicMax: atomicrmw and cmpxchg
; instructions (monotonic/seq_cst), f32 fadd, i64 CAS, and a CAS loop.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@counts = internal addrspace(3) global [32 x i32] undef, align 4

define void @atomics_kernel(i32 addrspace(1)* %gi, i64 addrspace(1)* %gl, float addrspace(1)* %gf, i32 addrspace(1)* %old) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lane = and i32 %tid, 31
  %lanel = zext i32 %lane to i64
  %sp = getelementptr inbounds [32 x i32], [32 x i32] addrspace(3)* @counts, i64 0, i64 %lanel
  store i32 0, i32 addrspace(3)* %sp, align 4
  call void @llvm.nvvm.barrier0()
  %r0 = atomicrmw add i32 addrspace(3)* %sp, i32 1 monotonic, align 4
  %r1 = atomicrmw add i32 addrspace(1)* %gi, i32 %tid seq_cst, align 4
  %gi1 = getelementptr inbounds i32, i32 addrspace(1)* %gi, i64 1
  %r2 = atomicrmw xchg i32 addrspace(1)* %gi1, i32 %tid monotonic, align 4
  %gi2 = getelementptr inbounds i32, i32 addrspace(1)* %gi, i64 2
  %r3 = atomicrmw max i32 addrspace(1)* %gi2, i32 %tid monotonic, align 4
  %gi3 = getelementptr inbounds i32, i32 addrspace(1)* %gi, i64 3
  %r4 = atomicrmw umin i32 addrspace(1)* %gi3, i32 %tid monotonic, align 4
  %gi4 = getelementptr inbounds i32, i32 addrspace(1)* %gi, i64 4
  %pair = cmpxchg i32 addrspace(1)* %gi4, i32 0, i32 %tid seq_cst seq_cst, align 4
  %r5 = extractvalue { i32, i1 } %pair, 0
  %tidl = zext i32 %tid to i64
  %r6 = atomicrmw add i64 addrspace(1)* %gl, i64 %tidl monotonic, align 8
  %gl1 = getelementptr inbounds i64, i64 addrspace(1)* %gl, i64 1
  %pair64 = cmpxchg i64 addrspace(1)* %gl1, i64 0, i64 %tidl monotonic monotonic, align 8
  %f = uitofp i32 %tid to float
  %r7 = atomicrmw fadd float addrspace(1)* %gf, float %f monotonic, align 4
  %r7i = fptoui float %r7 to i32
  %s1 = add i32 %r0, %r1
  %s2 = add i32 %s1, %r2
  %s3 = add i32 %s2, %r3
  %s4 = add i32 %s3, %r4
  %s5 = add i32 %s4, %r5
  %s6 = add i32 %s5, %r7i
  %r6t = trunc i64 %r6 to i32
  %s7 = add i32 %s6, %r6t
  %po = getelementptr inbounds i32, i32 addrspace(1)* %old, i64 %tidl
  store i32 %s7, i32 addrspace(1)* %po, align 4
  br label %casloop

; atomic float max through a 32-bit CAS loop
casloop:
  %gfi = bitcast float addrspace(1)* %gf to i32 addrspace(1)*
  %gfm = getelementptr inbounds i32, i32 addrspace(1)* %gfi, i64 1
  %cur = load atomic i32, i32 addrspace(1)* %gfm monotonic, align 4
  br label %retry

retry:
  %expected = phi i32 [ %cur, %casloop ], [ %seen, %retry_again ]
  %ef = bitcast i32 %expected to float
  %bigger = fcmp ogt float %f, %ef
  br i1 %bigger, label %try, label %exit

try:
  %fi = bitcast float %f to i32
  %res = cmpxchg i32 addrspace(1)* %gfm, i32 %expected, i32 %fi monotonic monotonic, align 4
  %seen = extractvalue { i32, i1 } %res, 0
  %okc = extractvalue { i32, i1 } %res, 1
  br i1 %okc, label %exit, label %retry_again

retry_again:
  br label %retry

exit:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()

attributes #0 = { convergent nounwind }

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, i64 addrspace(1)*, float addrspace(1)*, i32 addrspace(1)*)* @atomics_kernel, !"kernel", i32 1}
