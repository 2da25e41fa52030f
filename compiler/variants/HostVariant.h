//===- HostVariant.h - A variant compiled for this CPU, callable from C++ -===//
//
// The float64 reference applies a kernel's variant by calling the same
// source compiled for the host (its own small ORC JIT), so --check compares
// a kernel with the math the user wrote, not with a second copy of it. The
// functions take the run-time tensors the variant reads as their last
// argument, as the kernel does (ir/VariantTensorReads.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantCompiler.h"
#include "ir/KernelAbi.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

class HostVariant {
public:
  /// The last argument: the variant's tensors, slot by slot (slots it
  /// does not read may be null and 0).
  using ScoreModFn = float (*)(float, int, int, int, int,
                               const VariantTensors *);
  using MaskModFn = bool (*)(int, int, int, int, const VariantTensors *);

  static llvm::Expected<std::unique_ptr<HostVariant>>
  create(const VariantSource &source);

  /// Whether the variant defines score_mod / mask_mod.
  bool hasScoreMod() const { return score != nullptr; }
  bool hasMaskMod() const { return mask != nullptr; }
  /// Calls the variant's score_mod / mask_mod, which it must define. The
  /// only way to call them: the calls are exempt from UBSan's function-type
  /// check (HostVariant.cpp says why).
  float scoreMod(float s, int b, int h, int q, int k,
                 const VariantTensors *tensors) const;
  bool maskMod(int b, int h, int q, int k, const VariantTensors *tensors) const;
  /// Whether mask_mod's result can depend on its b (\p arg 0) or h (1)
  /// argument: false when the optimized function never reads it. A variant
  /// reads nothing but its arguments (no globals, no memory: VariantChecks),
  /// so an argument without a use cannot change the result, and the plan
  /// may share one block map across sequences or heads (docs/design.md).
  bool maskReads(unsigned arg) const { return maskArgRead[arg]; }
  /// The tensor slots the functions read.
  const VariantTensorUse &tensors() const { return tensorUse; }

private:
  explicit HostVariant(std::unique_ptr<llvm::orc::LLJIT> jit)
      : jit(std::move(jit)) {}

  std::unique_ptr<llvm::orc::LLJIT> jit;
  ScoreModFn score = nullptr;
  MaskModFn mask = nullptr;
  bool maskArgRead[4] = {true, true, true, true};
  VariantTensorUse tensorUse;
};

} // namespace fmhajit
