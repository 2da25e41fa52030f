//===- ProfileWarmup.cpp - A profile's kernels into the kernel cache ------===//
#include "compiler/ProfileWarmup.h"
#include "compiler/Concurrently.h"
#include "compiler/KernelCompiler.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "llvm/ADT/StringExtras.h"

using namespace fmhajit;

/// Failures listed in full before "and N more".
static constexpr size_t kListedFailures = 5;

llvm::Expected<size_t> fmhajit::compileProfile(const std::string &profile,
                                               const std::string &target,
                                               KernelCache &cache) {
  if (!findArch(target))
    return makeError(ErrorKind::Usage, "target " + target +
                                           " is unknown; use one of " +
                                           allArchNames());
  auto specs = expandProfile(profile, llvm::StringRef(target));
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
