; Device functions and module data as gpucc emits them: a noinline
; internal function (.func with .param passing), an external visible device
; function, a switch (a branch chain; LLVM 14 NVPTX emits no jump tables),
; constant tables in addrspace(4), a global whose initialiser points at
; another global (generic(...) in PTX), and math intrinsics.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@coeffs = internal addrspace(4) constant [4 x float] [float 1.000000e+00, float -5.000000e-01, float 2.500000e-01, float 1.250000e-01], align 4
@table = addrspace(1) global [4 x i32] [i32 3, i32 1, i32 4, i32 1], align 4
; Pointer-valued initialisers. LLVM 14's NVPTX printer handles an
; addrspacecast to generic only inside an aggregate, a generic-space global
; (addrspace 0, still placed in .global) directly, and raw addrspace(1)
; pointers with offsets; a scalar addrspacecast makes llc abort.
@answer = addrspace(1) global i32 42, align 4
@generic_data = global [2 x double] [double 2.500000e-01, double 4.000000e+00], align 8
@table_ptr = addrspace(1) global [2 x i32*] [i32* addrspacecast (i32 addrspace(1)* @answer to i32*), i32* null], align 8
@scale_ptr = addrspace(1) global [2 x double]* @generic_data, align 8
@raw_ptrs = addrspace(1) global [2 x i32 addrspace(1)*] [i32 addrspace(1)* @answer, i32 addrspace(1)* getelementptr (i32, i32 addrspace(1)* @answer, i64 1)], align 8
@scale = addrspace(1) global double 1.500000e+00, align 8

define internal float @horner(float %x) #1 {
entry:
  %c0 = load float, float addrspace(4)* getelementptr inbounds ([4 x float], [4 x float] addrspace(4)* @coeffs, i64 0, i64 3), align 4
  %c1 = load float, float addrspace(4)* getelementptr inbounds ([4 x float], [4 x float] addrspace(4)* @coeffs, i64 0, i64 2), align 4
  %c2 = load float, float addrspace(4)* getelementptr inbounds ([4 x float], [4 x float] addrspace(4)* @coeffs, i64 0, i64 1), align 4
  %c3 = load float, float addrspace(4)* getelementptr inbounds ([4 x float], [4 x float] addrspace(4)* @coeffs, i64 0, i64 0), align 4
  %a = call float @llvm.fma.f32(float %c0, float %x, float %c1)
  %b = call float @llvm.fma.f32(float %a, float %x, float %c2)
  %c = call float @llvm.fma.f32(float %b, float %x, float %c3)
  ret float %c
}

define double @scaled_norm(double %x, double %y) #1 {
entry:
  %xx = fmul double %x, %x
  %r = call double @llvm.fma.f64(double %y, double %y, double %xx)
  %s = call double @llvm.sqrt.f64(double %r)
  %k0 = load double, double addrspace(1)* @scale, align 8
  %gp = load [2 x double]*, [2 x double]* addrspace(1)* @scale_ptr, align 8
  %ep = getelementptr inbounds [2 x double], [2 x double]* %gp, i64 0, i64 1
  %k1 = load double, double* %ep, align 8
  %rp = load i32 addrspace(1)*, i32 addrspace(1)* addrspace(1)* getelementptr inbounds ([2 x i32 addrspace(1)*], [2 x i32 addrspace(1)*] addrspace(1)* @raw_ptrs, i64 0, i64 1), align 8
  %ri = load i32, i32 addrspace(1)* %rp, align 4
  %rd = sitofp i32 %ri to double
  %k2 = fmul double %k0, %k1
  %k = fadd double %k2, %rd
  %m = fmul double %s, %k
  ret double %m
}

define void @calls_kernel(float addrspace(1)* %out, double addrspace(1)* %dout, i32 %sel) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %tf = uitofp i32 %tid to float
  %h = call float @horner(float %tf)
  %td = uitofp i32 %tid to double
  %nrm = call double @scaled_norm(double %td, double 2.000000e+00)
  %tp = load i32*, i32* addrspace(1)* getelementptr inbounds ([2 x i32*], [2 x i32*] addrspace(1)* @table_ptr, i64 0, i64 0), align 8
  %tv = load i32, i32* %tp, align 4
  %mix = add i32 %sel, %tv
  switch i32 %mix, label %dflt [
    i32 0, label %case0
    i32 1, label %case1
    i32 2, label %case2
    i32 3, label %case3
    i32 4, label %case4
    i32 5, label %case5
  ]

case0:
  br label %join
case1:
  %v1 = call float @llvm.sqrt.f32(float %h)
  br label %join
case2:
  %v2 = call float @llvm.nvvm.rsqrt.approx.f(float %h)
  br label %join
case3:
  %v3 = call float @llvm.fabs.f32(float %h)
  br label %join
case4:
  %v4 = call float @llvm.minnum.f32(float %h, float 1.000000e+00)
  br label %join
case5:
  %v5 = fneg float %h
  br label %join
dflt:
  %v6 = fmul float %h, 3.000000e+00
  br label %join

join:
  %v = phi float [ %h, %case0 ], [ %v1, %case1 ], [ %v2, %case2 ], [ %v3, %case3 ], [ %v4, %case4 ], [ %v5, %case5 ], [ %v6, %dflt ]
  %tl = zext i32 %tid to i64
  %po = getelementptr inbounds float, float addrspace(1)* %out, i64 %tl
  store float %v, float addrspace(1)* %po, align 4
  %pd = getelementptr inbounds double, double addrspace(1)* %dout, i64 %tl
  store double %nrm, double addrspace(1)* %pd, align 8
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @llvm.fma.f32(float, float, float)
declare double @llvm.fma.f64(double, double, double)
declare double @llvm.sqrt.f64(double)
declare float @llvm.sqrt.f32(float)
declare float @llvm.fabs.f32(float)
declare float @llvm.minnum.f32(float, float)
declare float @llvm.nvvm.rsqrt.approx.f(float)

attributes #0 = { convergent nounwind }
attributes #1 = { noinline nounwind }

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, double addrspace(1)*, i32)* @calls_kernel, !"kernel", i32 1}
