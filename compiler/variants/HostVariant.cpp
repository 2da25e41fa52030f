//===- HostVariant.cpp - A variant compiled for this CPU ------------------===//
#include "compiler/variants/HostVariant.h"
#include "ir/Variant.h"
#include "specs/ArchTable.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/TargetSelect.h"
#include <algorithm>
#include <cassert>
#include <iterator>

using namespace fmhajit;
using namespace llvm;
using namespace llvm::orc;

template <typename Fn>
static Expected<Fn> lookupEntry(LLJIT &jit, bool defined, StringRef symbol) {
  if (!defined)
    return nullptr;
  Expected<ExecutorAddr> address = jit.lookup(symbol);
  if (!address)
    return address.takeError();
  return address->toPtr<Fn>();
}

// A JIT of \p m alone; math the backend leaves to libm (tanhf) comes from
// this process.
static Expected<std::unique_ptr<LLJIT>>
jitModule(std::unique_ptr<Module> m, std::unique_ptr<LLVMContext> ctx) {
  Expected<std::unique_ptr<LLJIT>> jit = LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  m->setDataLayout((*jit)->getDataLayout());
  auto libm = DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!libm)
    return libm.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*libm));
  if (Error err =
          (*jit)->addIRModule(ThreadSafeModule(std::move(m), std::move(ctx))))
    return std::move(err);
  return jit;
}

Expected<std::unique_ptr<HostVariant>>
HostVariant::create(const VariantSource &source) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  auto ctx = std::make_unique<LLVMContext>();
  Expected<CompiledVariant> compiled =
      compileVariant(source, variantTriple(*findArch("host")), *ctx);
  if (!compiled)
    return compiled.takeError();
  const Module &m = *compiled->module;
  bool hasScore = findScoreMod(m), hasMask = findMaskMod(m);
  // Read before the JIT takes the module: compileVariant optimized it, so
  // an argument with no use is one the result does not depend on.
  bool argRead[4] = {true, true, true, true};
  if (Function *maskFn = findMaskMod(m))
    for (unsigned i = 0; i < 4; ++i)
      argRead[i] = !maskFn->getArg(i)->use_empty();
  Expected<std::unique_ptr<LLJIT>> jit =
      jitModule(std::move(compiled->module), std::move(ctx));
  if (!jit)
    return jit.takeError();
  std::unique_ptr<HostVariant> variant(new HostVariant(std::move(*jit)));
  Expected<ScoreModFn> score =
      lookupEntry<ScoreModFn>(*variant->jit, hasScore, kScoreModSymbol);
  if (!score)
    return score.takeError();
  Expected<MaskModFn> mask =
      lookupEntry<MaskModFn>(*variant->jit, hasMask, kMaskModSymbol);
  if (!mask)
    return mask.takeError();
  variant->score = *score;
  variant->mask = *mask;
  std::copy(std::begin(argRead), std::end(argRead), variant->maskArgRead);
  variant->tensorUse = compiled->tensors;
  return std::move(variant);
}

// JIT-compiled code carries no function-type signature in the 8 bytes
// before it, which UBSan's -fsanitize=function (FMHAJIT_SANITIZE) reads at
// every indirect call, and it often starts a page whose predecessor is
// unmapped, so the check itself faults (as HostExecutor's callKernel).
LLVM_NO_SANITIZE("function")
float HostVariant::scoreMod(float s, int b, int h, int q, int k,
                            const VariantTensors *tensors) const {
  assert(score && "the variant defines no score_mod");
  return score(s, b, h, q, k, tensors);
}

LLVM_NO_SANITIZE("function")
bool HostVariant::maskMod(int b, int h, int q, int k,
                          const VariantTensors *tensors) const {
  assert(mask && "the variant defines no mask_mod");
  return mask(b, h, q, k, tensors);
}
