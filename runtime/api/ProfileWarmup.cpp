//===- ProfileWarmup.cpp - A profile's kernels into the kernel cache ------===//
#include "runtime/api/ProfileWarmup.h"
#include "compiler/Concurrently.h"
#include "compiler/KernelCompiler.h"
#include "runtime/api/BackwardKernels.h"
#include "runtime/api/DispatchTable.h"
#include "runtime/api/Registry.h"
#include "runtime/api/SplitPlanner.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace fmhajit;

/// Failures listed in full before "and N more".
static constexpr size_t kListedFailures = 5;

/// The kernels a GPU plan may run in place of \p candidate, which the
/// registry holds: a split kernel's twins (SplitPlanner.h).
static std::vector<KernelSpec> planTwins(const KernelSpec &candidate,
                                         const ArchInfo &arch,
                                         const DispatchTable &table) {
  if (!hasSplitWorkItems(candidate.family))
    return {};
  std::optional<TileChoice> split = table.chooseSplitTile(
      arch, candidate.pipeline, std::max(candidate.d, candidate.headDimV()),
      candidate.dtype, candidate.mask, /*seqlenQ=*/1);
  return splitTwins(candidate, split && split->tile == tileOf(candidate));
}

llvm::Expected<std::vector<KernelSpec>>
fmhajit::warmupSpecs(const std::string &profile, const std::string &target) {
  const ArchInfo *arch = findArch(target);
  if (!arch)
    return makeError(ErrorKind::Usage, "target " + target +
                                           " is unknown; use one of " +
                                           allArchNames());
  auto specs = expandProfile(profile, llvm::StringRef(target));
  if (!specs)
    return specs.takeError();
  const DispatchTable &table = DispatchTable::forTarget(target);
  std::vector<KernelSpec> out;
  llvm::StringSet<> seen;
  auto keep = [&](KernelSpec spec) {
    if (seen.insert(encodeName(spec)).second)
      out.push_back(std::move(spec));
  };
  for (const KernelSpec &spec : *specs) {
    keep(spec); // its default tile: what `fmhajit run SPEC` compiles
    if (spec.family == Family::BwdDqDkDv) {
      // A backward plan runs the default tile, with its helpers.
      auto kernels = backwardKernels(spec);
      if (!kernels)
        return kernels.takeError();
      for (KernelSpec &kernel : *kernels)
        keep(std::move(kernel));
      continue;
    }
    for (const KernelSpec &candidate : candidateVariants(spec, *arch, table)) {
      keep(candidate);
      for (KernelSpec &twin : planTwins(candidate, *arch, table))
        keep(std::move(twin));
    }
  }
  return out;
}

llvm::Expected<size_t> fmhajit::compileProfile(const std::string &profile,
                                               const std::string &target,
                                               KernelCache &cache) {
  auto specs = warmupSpecs(profile, target);
  if (!specs)
    return specs.takeError();
  auto artifacts = runConcurrently<std::shared_ptr<const Artifact>>(
      specs->size(), compileThreads(),
      [&](size_t i) { return compileKernel((*specs)[i], cache); });
  std::vector<std::string> failures;
  for (size_t i = 0; i < artifacts.size(); ++i)
    if (!artifacts[i])
      failures.push_back(
          encodeName((*specs)[i]) + ": " +
          llvm::join(takeProblems(artifacts[i].takeError()).messages, "; "));
  if (failures.empty())
    return specs->size();
  std::string text = std::to_string(failures.size()) + " of " +
                     std::to_string(specs->size()) + " kernels of profile " +
                     profile + " failed to compile for " + target;
  for (size_t i = 0; i < failures.size() && i < kListedFailures; ++i)
    text += "\n  " + failures[i];
  if (failures.size() > kListedFailures)
    text += "\n  and " + std::to_string(failures.size() - kListedFailures) +
            " more";
  return makeError(ErrorKind::Unsupported, text);
}
