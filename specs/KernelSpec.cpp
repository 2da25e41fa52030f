//===- KernelSpec.cpp - Spec defaults and comparisons ---------------------===//
#include "specs/KernelSpec.h"

using namespace fmhajit;

DType KernelSpec::outType() const {
  if (out)
    return *out;
  return isFp8(dtype) ? DType::BF16 : dtype;
}

bool fmhajit::operator==(const KernelSpec &a, const KernelSpec &b) {
#define SPEC_KEY(Name, Type, Default, Help)                                    \
  if (a.Name != b.Name)                                                        \
    return false;
#include "specs/SpecKeys.def"
  return true;
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

bool fmhajit::isVariantHash(const std::string &hex) {
  if (hex.size() != kVariantHashDigits)
    return false;
  for (char c : hex)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

bool fmhajit::isFp8(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2;
}
