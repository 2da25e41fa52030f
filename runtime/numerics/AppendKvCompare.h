//===- AppendKvCompare.h - Checking what append_kv left behind ------------===//
//
// An append must write its rows right and nothing else: the appended rows
// of both caches (and the rotated Q) are compared with referenceAppendKv at
// the dtype's tolerance; every other cache element must keep its bits
// (NaN included), so a write to the wrong page or row is counted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/Compare.h"
#include "runtime/numerics/FamilyReference.h"
#include "runtime/numerics/KvCache.h"
#include "llvm/ADT/ArrayRef.h"
#include <string>

namespace fmhajit {

struct AppendKvCheck {
  CompareResult k, v, q; ///< appended rows; q only when rotating Q
  bool hasQ = false;
  size_t clobbered = 0; ///< elements outside the appended rows that changed
  bool pass = false;

  /// One line: PASS/FAIL, then each part's errors.
  std::string summary() const;
};

/// Compares caches \p kAfter / \p vAfter (as floats, after the append; the
/// bits of \p kBefore / \p vBefore elsewhere) and \p qOut with \p ref.
AppendKvCheck
compareAppendKv(const AppendKvProblem &problem,
                llvm::ArrayRef<int32_t> blockTable,
                const AppendKvReference &ref, llvm::ArrayRef<float> kAfter,
                llvm::ArrayRef<float> vAfter, llvm::ArrayRef<float> kBefore,
                llvm::ArrayRef<float> vBefore, llvm::ArrayRef<float> qOut,
                DType dtype, DType outType);

} // namespace fmhajit
