//===- HostVariant.h - A variant compiled for this CPU, callable from C++ -===//
//
// The float64 reference applies a kernel's variant by calling the same
// source compiled for the host (its own small ORC JIT), so --check compares
// a kernel with the math the user wrote, not with a second copy of it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantCompiler.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

class HostVariant {
public:
  using ScoreModFn = float (*)(float, int, int, int, int);
  using MaskModFn = bool (*)(int, int, int, int);

  static llvm::Expected<std::unique_ptr<HostVariant>>
  create(const VariantSource &source);

  /// Null where the variant does not define the function.
  ScoreModFn scoreMod() const { return score; }
  MaskModFn maskMod() const { return mask; }

private:
  explicit HostVariant(std::unique_ptr<llvm::orc::LLJIT> jit)
      : jit(std::move(jit)) {}

  std::unique_ptr<llvm::orc::LLJIT> jit;
  ScoreModFn score = nullptr;
  MaskModFn mask = nullptr;
};

} // namespace fmhajit
