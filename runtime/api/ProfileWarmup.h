//===- ProfileWarmup.h - A profile's kernels into the kernel cache --------===//
//
// api::warmup and `fmhajit cache warm` compile a profile's kernels ahead of
// their first plans, side by side (compiler/Concurrently.h), so that plans
// and `fmhajit run` find what they pick: each spec of the profile in its
// default tile and in every tile the target's dispatch table can pick for
// it, as the registry holds them (Registry.h); a split kernel's twins, which
// a GPU plan runs in its place by the problem's shape (splitTwins); and
// beside a bwd_dq_dk_dv spec the backward's other kernels
// (backwardKernels).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit {

/// The kernels a warm-up of \p profile for \p target compiles: each of its
/// specs in its default tile and as candidateVariants gives it, with the
/// kernels plans run in place of or beside those, each name once, in
/// profile order. \p profile may list several, "decode,training": their
/// kernels in that order, each once.
llvm::Expected<std::vector<KernelSpec>> warmupSpecs(const std::string &profile,
                                                    const std::string &target);

/// Compiles every kernel of \p profile (specs/profiles) for \p target into
/// \p cache (warmupSpecs) and returns how many there were; the kernels that
/// failed are reported together, so one unimplemented family does not hide the
/// rest.
llvm::Expected<size_t> compileProfile(const std::string &profile,
                                      const std::string &target,
                                      KernelCache &cache);

} // namespace fmhajit
