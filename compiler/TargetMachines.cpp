//===- TargetMachines.cpp - An LLVM TargetMachine per target --------------===//
#include "compiler/TargetMachines.h"
#include "ir/targets/HostTarget.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"
#include <map>
#include <mutex>

using namespace fmhajit;
using namespace llvm;

extern "C" {
#define FMHAJIT_TARGET(T)                                                      \
  void LLVMInitialize##T##TargetInfo();                                        \
  void LLVMInitialize##T##Target();                                            \
  void LLVMInitialize##T##TargetMC();                                          \
  void LLVMInitialize##T##AsmPrinter();
FMHAJIT_TARGET(X86)
FMHAJIT_TARGET(NVPTX)
FMHAJIT_TARGET(AMDGPU)
#undef FMHAJIT_TARGET
void LLVMInitializeX86AsmParser();
void LLVMInitializeX86Disassembler();
}

void fmhajit::initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
#define FMHAJIT_TARGET(T)                                                      \
  LLVMInitialize##T##TargetInfo();                                             \
  LLVMInitialize##T##Target();                                                 \
  LLVMInitialize##T##TargetMC();                                               \
  LLVMInitialize##T##AsmPrinter();
    FMHAJIT_TARGET(X86)
    FMHAJIT_TARGET(NVPTX)
    FMHAJIT_TARGET(AMDGPU)
#undef FMHAJIT_TARGET
    LLVMInitializeX86AsmParser();
  });
}

CodegenTarget fmhajit::codegenTarget(const ArchInfo &arch) {
  if (arch.backend != Backend::Host)
    return {arch.triple, arch.cpu, ""};
  CodegenTarget t{sys::getProcessTriple(), arch.cpu, ""};
  if (arch.cpu == "native") {
    t.cpu = sys::getHostCPUName().str();
    // Sorted, so that the fingerprint is the same in every process.
    std::map<std::string, bool> sorted;
    for (const auto &f : hostCpuFeatures())
      sorted[f.first().str()] = f.second;
    SubtargetFeatures features;
    for (const auto &[name, on] : sorted)
      features.AddFeature(name, on);
    t.features = features.getString();
  }
  return t;
}

unsigned fmhajit::ptxVersionFor(const ArchInfo &arch, unsigned requested) {
  return std::max(arch.minPtx, requested);
}

// NVPTX at Default rather than Aggressive: the code generator's IR passes
// then clean up with EarlyCSE where they ran GVN twice, ~12 of the heavy
// sm_90a kernel's ~80 ms of code generation, and the PTX of every NVPTX
// kernel of the profiles is byte for byte the same (docs/design.md, "Cold
// JIT").
static CodeGenOptLevel codegenOptLevel(const ArchInfo &arch) {
  return arch.backend == Backend::Nvptx ? CodeGenOptLevel::Default
                                        : CodeGenOptLevel::Aggressive;
}

Expected<std::unique_ptr<TargetMachine>>
fmhajit::createTargetMachine(const ArchInfo &arch, unsigned ptxVersion) {
  initializeTargets();
  CodegenTarget ct = codegenTarget(arch);
  if (arch.backend == Backend::Nvptx)
    ct.features = "+ptx" + std::to_string(ptxVersionFor(arch, ptxVersion));
  Triple triple(ct.triple);
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError(ErrorKind::Jit,
                     "no LLVM backend for " + ct.triple + ": " + error);
  TargetOptions options;
  options.AllowFPOpFusion = FPOpFusion::Fast;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, ct.cpu, ct.features, options, Reloc::PIC_, std::nullopt,
      codegenOptLevel(arch)));
  if (!tm)
    return makeError(ErrorKind::Jit,
                     "LLVM could not create a target machine for " + ct.triple +
                         " cpu " + ct.cpu);
  return std::move(tm);
}
