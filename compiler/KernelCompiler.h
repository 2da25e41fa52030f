//===- KernelCompiler.h - Resolved spec to artifact, stage by stage -------===//
#pragma once

#include "compiler/KernelCache.h"
#include "ir/TargetInfo.h"
#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace fmhajit {

/// The dumpable stages of the pipeline.
enum class Stage {
  Llvm, ///< the recipe's IR, before optimization
  Opt,  ///< after the -O3 pipeline
  Asm,  ///< target assembly (x86 assembly, PTX, GCN assembly)
  Obj,  ///< the loadable artifact (host ELF object; PTX for NVPTX; .hsaco for
        ///< AMDGPU)
};
std::optional<Stage> parseStage(llvm::StringRef text);

/// Choices that change the code besides the spec.
struct CompileOptions {
  /// NVPTX: the PTX ISA version to emit, e.g. 87 for 8.7 (an older driver
  /// rejects a newer ISA); 0 takes the target's minimum (min_ptx).
  unsigned ptxVersion = 0;
  /// The IR's own choices (EmitOptions::boundedWaits).
  EmitOptions emit;
};

/// The options FMHAJIT_BOUNDED_WAITS=1 in the environment asks for, with
/// \p ptxVersion: what every compile of a kernel to run uses.
CompileOptions compileOptionsFromEnvironment(unsigned ptxVersion = 0);

/// Runs the pipeline on a resolved spec up to \p stage and returns the text
/// (or bytes, for Obj).
llvm::Expected<std::string> compileToStage(const KernelSpec &spec, Stage stage,
                                           const CompileOptions &options = {});

/// Everything besides the name that changes a kernel's code on \p arch:
/// fmhajit's version and sources, LLVM's and clang's (variants) versions,
/// triple, CPU, features and
/// the target's capability table.
std::string kernelFingerprint(const ArchInfo &arch,
                              const CompileOptions &options = {});

/// The loadable artifact of a resolved spec, through \p cache.
llvm::Expected<std::shared_ptr<const Artifact>>
compileKernel(const KernelSpec &spec, KernelCache &cache,
              const CompileOptions &options = {});

} // namespace fmhajit
