//===- ProblemFlags.h - The problem flags `run` and `plan` share ----------===//
//
// Sizes, per-sequence lengths, window, scale, softcap, device, target and
// threads become the fields of an api::Problem and api::Options the same
// way for `fmhajit run` and `fmhajit plan`. Only the syntax is checked
// here (usage errors, exit 2); whether the numbers make a valid problem is
// the API's call.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "specs/Errors.h"
#include "specs/KernelSpec.h"
#include "tools/fmhajit/Args.h"
#include "llvm/ADT/ArrayRef.h"
#include <vector>

namespace fmhajit {

/// The largest length, count or size a flag takes: 2^30.
inline constexpr int64_t kMaxFlagLength = int64_t(1) << 30;

/// --batch --heads --heads-kv --seqlen-q --seqlen-k --varlen-q --varlen-k
/// --window --scale --softcap --device --target --threads --variant
/// --no-block-sparsity.
llvm::ArrayRef<OptionSpec> problemFlags();

/// Reads the sizes, lengths and score flags of problemFlags() into \p p.
void readProblemFlags(const Args &args, api::Problem &p, ErrorList &errors);
/// Reads --device, --target, --threads and --no-block-sparsity.
void readPlacement(const Args &args, api::Problem &p, api::Options &options,
                   ErrorList &errors);

/// \p text of flag --\p flag as comma-separated whole numbers from \p min
/// to \p max.
llvm::Expected<std::vector<int64_t>> parseLengths(llvm::StringRef flag,
                                                  llvm::StringRef text,
                                                  int64_t min, int64_t max);

/// A pool of \p pageSize-row pages holding each of \p lengths' rows, plus
/// \p sparePages pages no sequence uses.
void layOutPages(api::PagedKv &pages, llvm::ArrayRef<int32_t> lengths,
                 int64_t pageSize, int64_t sparePages);

api::DType publicDType(DType type);
api::Mask publicMask(Mask mask);

} // namespace fmhajit
