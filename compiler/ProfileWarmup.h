//===- ProfileWarmup.h - A profile's kernels into the kernel cache --------===//
//
// api::warmup and `fmhajit cache warm` compile a profile's kernels ahead of
// their first plans, side by side (Concurrently.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// Compiles every kernel of \p profile (specs/profiles) for \p target into
/// \p cache and returns how many there were; the kernels that failed are
/// reported together, so one unimplemented family does not hide the rest.
llvm::Expected<size_t> compileProfile(const std::string &profile,
                                      const std::string &target,
                                      KernelCache &cache);

} // namespace fmhajit
