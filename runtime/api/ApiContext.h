//===- ApiContext.h - What the public entry points look up ----------------===//
//
// The process-wide things plan() and warmup() need besides the problem:
// which target a device means, and which kernel cache a directory means.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "fmhajit/Problem.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// The target for \p device: \p requested when given (it must run on that
/// device), else "host" on the host and the GPU's own target on CUDA and HIP.
llvm::Expected<std::string> resolveTarget(api::Device device,
                                          const std::string &requested);

/// The workers a split-KV plan spreads its items over: \p hostThreads on
/// the host, the GPU's SMs (CUDA) or CUs (HIP); 0 when unknown (a GPU
/// plan made without a driver).
unsigned splitWorkers(api::Device device, unsigned hostThreads);

/// The kernel cache of \p dir, one per directory per process; an empty
/// \p dir is KernelCache::global() (the environment's directory).
llvm::Expected<KernelCache &> kernelCacheFor(const std::string &dir);

} // namespace fmhajit
