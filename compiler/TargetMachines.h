//===- TargetMachines.h - An LLVM TargetMachine for each fmhajit target ---===//
#pragma once

#include "specs/ArchTable.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"
#include <memory>

namespace fmhajit {

/// Registers the x86, NVPTX and AMDGPU backends (once per process).
void initializeTargets();

/// What the code is generated for: the host's own CPU and features for
/// target "host", else the table's triple and CPU.
struct CodegenTarget {
  std::string triple;
  std::string cpu;
  std::string features;
};
CodegenTarget codegenTarget(const ArchInfo &arch);

/// The PTX ISA version to emit for \p arch: \p requested, or the target's
/// minimum when 0 (a request below the minimum is raised to it).
unsigned ptxVersionFor(const ArchInfo &arch, unsigned requested);

/// A TargetMachine for \p arch at -O3 (NVPTX: -O2, the same PTX in less
/// time) with fused multiply-adds allowed; NVPTX targets emit PTX ISA
/// ptxVersionFor(arch, ptxVersion).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ArchInfo &arch, unsigned ptxVersion = 0);

} // namespace fmhajit
