//===- BackwardKernels.h - The kernels a backward runs beside its grad ----===//
//
// A backward plan runs bwd_dq_dk_dv (the grad kernel) after bwd_dot_do_o,
// and before bwd_convert_dq where the grad kernel adds dQ atomically
// (bwdKeyItemsAddDq: a GPU without deterministic=1). Both helpers follow
// from the grad kernel alone, so plans and warm-ups derive them here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace fmhajit {

/// The backward's kernels in launch order for the grad kernel \p grad:
/// bwd_dot_do_o, \p grad, and bwd_convert_dq where \p grad adds dQ
/// atomically. The helpers take \p grad's dtypes, head dims, varlen and
/// target, in the target's default tile.
llvm::Expected<std::vector<KernelSpec>> backwardKernels(const KernelSpec &grad);

} // namespace fmhajit
