//===- CudaForwardStep.cpp - A plan's forward launch on a CUDA GPU --------===//
#include "runtime/CudaForwardStep.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include <cstdint>

using namespace fmhajit;

llvm::Error CudaForwardStep::run(const api::Tensors &t) const {
  auto misaligned = [&](const void *p) { return reinterpret_cast<uintptr_t>(p) % kvAlignment; };
  if (misaligned(t.k) || misaligned(t.v))
    return makeError(ErrorKind::Usage,
                     "Tensors::k and Tensors::v must start on " + llvm::Twine(kvAlignment) +
                         "-byte boundaries for kernel " + encodeName(kernel.spec()) +
                         " (it copies K/V rows in 16-byte pieces)");
  FwdParams p = params;
  p.q = t.q;
  p.k = t.k;
  p.v = t.v;
  p.o = t.o;
  p.lse = t.lse;
  p.cuSeqlensQ = t.cuSeqlensQ;
  p.cuSeqlensK = t.cuSeqlensK;
  p.alibiSlopes = t.alibiSlopes;
  void *s = t.stream ? t.stream : stream;
  return kernel.launch(p, static_cast<cuda::CUstream>(s));
}
