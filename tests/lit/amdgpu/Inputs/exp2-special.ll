; llvm.amdgcn.exp2 on the inputs the online softmax relies on.
target triple = "amdgcn-amd-amdhsa"

declare float @llvm.amdgcn.exp2.f32(float)

define float @minus_infinity() {
  %r = call float @llvm.amdgcn.exp2.f32(float 0xFFF0000000000000)
  ret float %r
}

define float @nan() {
  %r = call float @llvm.amdgcn.exp2.f32(float 0x7FF8000000000000)
  ret float %r
}

define float @zero() {
  %r = call float @llvm.amdgcn.exp2.f32(float 0.0)
  ret float %r
}
