//===- KernelSpec.cpp - Spec defaults and comparisons ---------------------===//
#include "specs/KernelSpec.h"
#include <tuple>

using namespace fmhajit;

DType KernelSpec::outType() const {
  if (out)
    return *out;
  return isFp8(dtype) ? DType::BF16 : dtype;
}

static auto fields(const KernelSpec &s) {
  return std::tie(s.family, s.dtype, s.out, s.d, s.dv, s.mask, s.bias,
                  s.softcap, s.lse, s.dropout, s.sink, s.varlen, s.bm, s.bn,
                  s.warps, s.stages, s.pipeline, s.target);
}

bool fmhajit::operator==(const KernelSpec &a, const KernelSpec &b) {
  return fields(a) == fields(b);
}

unsigned fmhajit::dtypeBytes(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F8E4M3:
  case DType::F8E5M2:
    return 1;
  }
  return 0;
}

bool fmhajit::isFp8(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2;
}
