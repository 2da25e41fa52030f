//===- PinnedKernel.h - A plan that runs the kernel its caller names ------===//
//
// Options::kernel replaces the dispatcher's three rules with one: the named
// spec serves the problem when it computes the problem's features on the
// plan's target and can read its K/V layout. A pinned fwd_splitkv kernel
// answers a fwd problem (its partials are combined afterwards), and a
// pinned fwd_paged kernel takes its part count like the dispatcher's pick.
// This is how `fmhajit run SPEC` runs exactly the kernel its user wrote.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/Dispatcher.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// The spec \p text names (a spec or an encoded name), validated for
/// \p target: a spec left at target host takes \p target, any other target
/// must be \p target.
llvm::Expected<KernelSpec> resolvePinnedKernel(const std::string &text,
                                               const std::string &target);

/// \p pinned as the dispatcher's answer to \p query, or an InvalidArgument
/// error naming the feature that differs. A pinned spec without a variant
/// takes the problem's (Problem::variant).
llvm::Expected<Dispatch> dispatchPinned(const KernelSpec &pinned,
                                        const DispatchQuery &query);

} // namespace fmhajit
