; Warp-synchronous code as gpucc lowers __shfl_*_sync and __ballot_sync:
; llvm.nvvm.shfl.sync.{down,bfly,up,idx}.{i32,f32}, the .p variants that
; also return the in-range predicate, vote.ballot.sync, and a reduction
; loop kept as a loop (phi nodes, no unrolling).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @warp_reduce_loop(float addrspace(1)* %in, float addrspace(1)* %out) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %gid = add i32 %base, %tid
  %gidl = zext i32 %gid to i64
  %p = getelementptr inbounds float, float addrspace(1)* %in, i64 %gidl
  %v0 = load float, float addrspace(1)* %p, align 4
  br label %loop

loop:
  %v = phi float [ %v0, %entry ], [ %vn, %loop ]
  %off = phi i32 [ 16, %entry ], [ %offn, %loop ]
  %other = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v, i32 %off, i32 31)
  %vn = fadd float %v, %other
  %offn = lshr i32 %off, 1
  %more = icmp ne i32 %offn, 0
  br i1 %more, label %loop, label %done

done:
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %is0 = icmp eq i32 %lane, 0
  br i1 %is0, label %store, label %exit

store:
  %w = lshr i32 %gid, 5
  %wl = zext i32 %w to i64
  %q = getelementptr inbounds float, float addrspace(1)* %out, i64 %wl
  store float %vn, float addrspace(1)* %q, align 4
  br label %exit

exit:
  ret void
}

define void @shuffle_mix(i32 addrspace(1)* %io, i32 %src) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %tl = zext i32 %tid to i64
  %p = getelementptr inbounds i32, i32 addrspace(1)* %io, i64 %tl
  %v = load i32, i32 addrspace(1)* %p, align 4
  %x = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v, i32 1, i32 31)
  %u = call i32 @llvm.nvvm.shfl.sync.up.i32(i32 -1, i32 %v, i32 2, i32 0)
  %b = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %v, i32 %src, i32 31)
  %dp = call { i32, i1 } @llvm.nvvm.shfl.sync.down.i32p(i32 -1, i32 %v, i32 3, i32 31)
  %d = extractvalue { i32, i1 } %dp, 0
  %inr = extractvalue { i32, i1 } %dp, 1
  %dsel = select i1 %inr, i32 %d, i32 0
  %pos = icmp sgt i32 %v, 0
  %bal = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %pos)
  %all = call i1 @llvm.nvvm.vote.all.sync(i32 -1, i1 %pos)
  %alli = zext i1 %all to i32
  %s1 = add i32 %x, %u
  %s2 = add i32 %s1, %b
  %s3 = add i32 %s2, %dsel
  %s4 = xor i32 %s3, %bal
  %s5 = add i32 %s4, %alli
  store i32 %s5, i32 addrspace(1)* %p, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.up.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
declare { i32, i1 } @llvm.nvvm.shfl.sync.down.i32p(i32, i32, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare i1 @llvm.nvvm.vote.all.sync(i32, i1)

attributes #0 = { convergent nounwind }

!nvvm.annotations = !{!0, !1}
!0 = !{void (float addrspace(1)*, float addrspace(1)*)* @warp_reduce_loop, !"kernel", i32 1}
!1 = !{void (i32 addrspace(1)*, i32)* @shuffle_mix, !"kernel", i32 1}
