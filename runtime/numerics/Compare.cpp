//===- Compare.cpp - Checking a kernel's outputs against the reference ----===//
#include "runtime/numerics/Compare.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cassert>
#include <cmath>

using namespace fmhajit;

/// Same class of non-finite value: both NaN, or the same infinity.
static bool sameNonFinite(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

static void compareO(llvm::ArrayRef<float> o, llvm::ArrayRef<double> ref,
                     CompareResult &r) {
  assert(o.size() == ref.size() && "output and reference differ in size");
  double diffSq = 0, refSq = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    if (!std::isfinite(ref[i]) || !std::isfinite(o[i])) {
      if (!sameNonFinite(o[i], ref[i]))
        ++r.nonFinite;
      continue;
    }
    double diff = std::abs(o[i] - ref[i]);
    diffSq += diff * diff;
    refSq += ref[i] * ref[i];
    r.refMaxAbs = std::max(r.refMaxAbs, std::abs(ref[i]));
    if (diff > r.maxAbs) {
      r.maxAbs = diff;
      r.worstIndex = i;
    }
  }
  // An all-zero reference (every row masked) makes the errors absolute.
  r.relL2 = refSq > 0 ? std::sqrt(diffSq / refSq) : std::sqrt(diffSq);
}

static void compareLse(llvm::ArrayRef<float> lse, llvm::ArrayRef<double> ref,
                       CompareResult &r) {
  assert(lse.size() == ref.size() && "lse and reference differ in size");
  r.hasLse = true;
  for (size_t i = 0; i < lse.size(); ++i) {
    if (!std::isfinite(ref[i]) || !std::isfinite(lse[i])) {
      if (!sameNonFinite(lse[i], ref[i]))
        ++r.lseMismatch;
      continue;
    }
    double rel = std::abs(lse[i] - ref[i]) / std::max(1.0, std::abs(ref[i]));
    r.lseMaxRel = std::max(r.lseMaxRel, rel);
  }
}

static double relativeMaxAbs(const CompareResult &r) {
  return r.refMaxAbs > 0 ? r.maxAbs / r.refMaxAbs : r.maxAbs;
}

CompareResult fmhajit::compareOutputs(llvm::ArrayRef<float> o,
                                      llvm::ArrayRef<double> refO,
                                      llvm::ArrayRef<float> lse,
                                      llvm::ArrayRef<double> refLse,
                                      const Tolerance &tolerance) {
  CompareResult r;
  r.tolerance = tolerance;
  compareO(o, refO, r);
  // No kernel LSE means the spec has none: the reference's is not compared.
  if (!lse.empty())
    compareLse(lse, refLse, r);
  // Written as !(x <= tol) so that a NaN error fails.
  bool oFails = r.nonFinite > 0 || !(r.relL2 <= tolerance.relL2) ||
                !(relativeMaxAbs(r) <= tolerance.maxAbs);
  bool lseFails =
      r.hasLse && (r.lseMismatch > 0 || !(r.lseMaxRel <= tolerance.lseRel));
  r.pass = !oFails && !lseFails;
  return r;
}

std::string CompareResult::summary() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (pass ? "PASS" : "FAIL")
     << llvm::format(
            ": rel_l2 %.3g (tol %.3g), max_abs %.3g = %.3g of max|ref| %.3g "
            "(tol %.3g) at %zu",
            relL2, tolerance.relL2, maxAbs, relativeMaxAbs(*this), refMaxAbs,
            tolerance.maxAbs, worstIndex);
  if (nonFinite)
    os << ", " << nonFinite << " non-finite where the reference is finite";
  if (hasLse)
    os << llvm::format(", lse max_rel %.3g (tol %.3g)", lseMaxRel,
                       tolerance.lseRel);
  if (lseMismatch)
    os << ", " << lseMismatch << " lse infinities/NaNs differ";
  return text;
}
