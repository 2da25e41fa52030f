//===- ApiWarmup.cpp - api::warmup: a profile into the kernel cache -------===//
#include "compiler/KernelCompiler.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ApiContext.h"
#include "runtime/api/ApiStatus.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "llvm/ADT/StringExtras.h"

using namespace fmhajit;
using namespace fmhajit::api;

/// Failures listed in full before "and N more".
static constexpr size_t kListedFailures = 5;

// Compiles every kernel and reports the ones that failed together, so one
// unimplemented family does not hide the state of the rest.
static llvm::Error compileProfile(const std::string &profile,
                                  const std::string &target,
                                  KernelCache &cache) {
  if (!findArch(target))
    return makeError(ErrorKind::Usage, "target " + target +
                                           " is unknown; use one of " +
                                           allArchNames());
  auto specs = expandProfile(profile, llvm::StringRef(target));
  if (!specs)
    return specs.takeError();
  std::vector<std::string> failures;
  for (const KernelSpec &spec : *specs) {
    auto artifact = compileKernel(spec, cache);
    if (!artifact)
      failures.push_back(
          encodeName(spec) + ": " +
          llvm::join(takeProblems(artifact.takeError()).messages, "; "));
  }
  if (failures.empty())
    return llvm::Error::success();
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

Status api::warmup(const std::string &profile, const std::string &target,
                   const std::string &cacheDir) {
  auto cache = kernelCacheFor(cacheDir);
  if (!cache)
    return toStatus(cache.takeError());
  return toStatus(compileProfile(profile, target, *cache));
}
