//===- Registry.h - The candidate kernels of each target ------------------===//
//
// The registry of a target is what the dispatcher chooses from: every spec
// of the profiles its dispatch table names (specs/dispatch/*.json; the
// "dispatch" profile by default) on every pipeline of the target's auto
// order that takes its dtype, each in every tile the table can choose for
// that pipeline and head dim. Specs are resolved and each name is held
// once. warmup() of the same profiles compiles them (ProfileWarmup.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/DispatchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <vector>

namespace fmhajit {

/// What a kernel computes, without how: family, dtypes, head dims, mask,
/// bias, softcap, lse, dropout, sink, varlen and target. Specs with equal
/// keys are interchangeable for a problem. pack_gqa is in the key too,
/// although it is a how: the dispatcher's rule 0 decides it before rule 1
/// matches, so packed and unpacked kernels never compete in one dispatch.
std::string featureKey(const KernelSpec &spec);

/// The resolved specs \p spec stands for as candidates: with an attention
/// loop, one per pipeline of \p arch's auto order that takes its dtype
/// (or its own pipeline, when outside that order) and tile \p table can
/// choose for it (a fwd_splitkv or fwd_paged spec: its split tiles too);
/// otherwise \p spec itself. Invalid variants are dropped.
std::vector<KernelSpec> candidateVariants(const KernelSpec &spec,
                                          const ArchInfo &arch,
                                          const DispatchTable &table);

class Registry {
public:
  /// The registry of \p target, built on first use and kept.
  static llvm::Expected<const Registry &> forTarget(llvm::StringRef target);

  /// Builds the registry of \p target from \p table's profiles.
  static llvm::Expected<Registry> build(llvm::StringRef target,
                                        const DispatchTable &table);

  llvm::ArrayRef<KernelSpec> candidates() const { return specs; }
  const std::vector<std::string> &profiles() const { return profileNames; }
  /// The candidates whose featureKey is \p key, in registry order.
  std::vector<KernelSpec> matching(const std::string &key) const;

private:
  std::vector<KernelSpec> specs;
  std::vector<std::string> profileNames;
  std::map<std::string, std::vector<size_t>> byFeatures;
};

} // namespace fmhajit
