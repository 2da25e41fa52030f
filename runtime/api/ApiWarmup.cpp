//===- ApiWarmup.cpp - api::warmup: a profile into the kernel cache -------===//
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ApiContext.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/ProfileWarmup.h"

using namespace fmhajit;
using namespace fmhajit::api;

Status api::warmup(const std::string &profile, const std::string &target,
                   const std::string &cacheDir) {
  auto cache = kernelCacheFor(cacheDir);
  if (!cache)
    return toStatus(cache.takeError());
  auto compiled = compileProfile(profile, target, *cache);
  return toStatus(compiled ? llvm::Error::success() : compiled.takeError());
}
