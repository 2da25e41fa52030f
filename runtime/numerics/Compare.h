//===- Compare.h - Checking a kernel's outputs against the reference ------===//
//
// Compares O (and LSE when given) from a kernel run, read back as float,
// with the float64 reference, and decides PASS/FAIL against a Tolerance. A
// non-finite value where the reference is finite always fails: that is how a
// NaN left by HostTensor::poison() (an element never written) is caught.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/Tolerance.h"
#include "llvm/ADT/ArrayRef.h"
#include <cstddef>
#include <string>

namespace fmhajit {

struct CompareResult {
  bool pass = true;
  Tolerance tolerance{};
  double relL2 = 0;      ///< ||o - ref||_2 / ||ref||_2 over finite pairs
  double maxAbs = 0;     ///< max |o - ref| over finite pairs
  double refMaxAbs = 0;  ///< max |ref|
  size_t worstIndex = 0; ///< where maxAbs occurs
  size_t nonFinite = 0;  ///< o elements not finite where ref is
  bool hasLse = false;
  double lseMaxRel = 0;   ///< max |lse - ref| / max(1, |ref|), finite pairs
  size_t lseMismatch = 0; ///< lse elements whose infinity/NaN differs

  /// One line: PASS/FAIL, each error next to its tolerance, and counts of
  /// non-finite mismatches when any.
  std::string summary() const;
};

/// Compares \p o with \p refO and, when \p lse is not empty, \p lse with
/// \p refLse (where -inf must match -inf exactly).
CompareResult compareOutputs(llvm::ArrayRef<float> o,
                             llvm::ArrayRef<double> refO,
                             llvm::ArrayRef<float> lse,
                             llvm::ArrayRef<double> refLse,
                             const Tolerance &tolerance);

/// As above, with the tolerance of outputs of \p outType.
inline CompareResult compareOutputs(llvm::ArrayRef<float> o,
                                    llvm::ArrayRef<double> refO,
                                    llvm::ArrayRef<float> lse,
                                    llvm::ArrayRef<double> refLse,
                                    DType outType) {
  return compareOutputs(o, refO, lse, refLse, toleranceFor(outType));
}

} // namespace fmhajit
