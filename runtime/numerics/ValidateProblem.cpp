//===- ValidateProblem.cpp - Rejecting bad run-time arguments -------------===//
//
// Each check adds one message naming the argument, its value and what is
// allowed; all problems are reported at once, as validateSpec() does for
// specs.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/AttentionProblem.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>
#include <cstdio>
#include <limits>

using namespace fmhajit;
using llvm::Twine;

static constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max();

// Twine has no floating-point constructor.
static std::string show(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

static void checkHeads(const AttentionProblem &p, ErrorList &errs) {
  if (p.headsQ < 1 || p.headsKv < 1) {
    errs.add(ErrorKind::Usage, "heads_q " + Twine(p.headsQ) + " and heads_kv " +
                                   Twine(p.headsKv) + " must both be >= 1");
    return;
  }
  if (p.headsQ % p.headsKv != 0)
    errs.add(ErrorKind::Usage,
             "heads_q " + Twine(p.headsQ) + " is not a multiple of heads_kv " +
                 Twine(p.headsKv) +
                 ": each K/V head serves heads_q / heads_kv query heads; use "
                 "a heads_kv that divides heads_q");
}

static void checkHeadDims(const AttentionProblem &p, const KernelSpec &spec,
                          ErrorList &errs) {
  if (p.d != spec.d || p.dv != spec.headDimV())
    errs.add(ErrorKind::Usage,
             "problem head dims d=" + Twine(p.d) + ", dv=" + Twine(p.dv) +
                 " differ from the spec's d=" + Twine(spec.d) +
                 ", dv=" + Twine(spec.headDimV()) +
                 ": build the problem with AttentionProblem::forSpec");
}

static bool allPositive(llvm::ArrayRef<int64_t> lengths) {
  return llvm::all_of(lengths, [](int64_t len) { return len >= 1; });
}

static void checkVarlen(const AttentionProblem &p, const KernelSpec &spec,
                        ErrorList &errs) {
  if (!spec.varlen) {
    if (p.isVarlen())
      errs.add(ErrorKind::Usage, "per-sequence lengths (varlen_q, varlen_k) "
                                 "need a spec with varlen=1");
    return;
  }
  if (p.seqlensQ.empty() || p.seqlensK.empty()) {
    errs.add(ErrorKind::Usage, "the spec has varlen=1: give the query and key "
                               "length of every sequence (varlen_q, varlen_k)");
    return;
  }
  if (p.seqlensQ.size() != p.seqlensK.size())
    errs.add(ErrorKind::Usage,
             "varlen_q has " + Twine(p.seqlensQ.size()) +
                 " lengths but varlen_k has " + Twine(p.seqlensK.size()) +
                 ": give one query and one key length per sequence");
  else if (p.batch != static_cast<int64_t>(p.seqlensQ.size()))
    errs.add(ErrorKind::Usage,
             "batch " + Twine(p.batch) + " does not match the " +
                 Twine(p.seqlensQ.size()) + " varlen sequences");
  if (!allPositive(p.seqlensQ) || !allPositive(p.seqlensK))
    errs.add(ErrorKind::Usage, "every varlen sequence length must be >= 1");
}

static void checkLengths(const AttentionProblem &p, ErrorList &errs) {
  if (p.batch < 1)
    errs.add(ErrorKind::Usage, "batch " + Twine(p.batch) + " must be >= 1");
  if (!p.isVarlen() && (p.seqlenQ < 1 || p.seqlenK < 1))
    errs.add(ErrorKind::Usage, "seqlen_q " + Twine(p.seqlenQ) +
                                   " and seqlen_k " + Twine(p.seqlenK) +
                                   " must both be >= 1");
}

/// Positions x heads of the query (or key) tensor, saturating at 2^64 - 1 so
/// that absurd sizes cannot wrap around and pass the range check.
static uint64_t rowCount(const AttentionProblem &p, bool query) {
  uint64_t positions = 0;
  if (p.isVarlen()) {
    for (int64_t len : query ? p.seqlensQ : p.seqlensK)
      positions = llvm::SaturatingAdd(positions, static_cast<uint64_t>(len));
  } else {
    positions = llvm::SaturatingMultiply(
        static_cast<uint64_t>(p.batch),
        static_cast<uint64_t>(query ? p.seqlenQ : p.seqlenK));
  }
  return llvm::SaturatingMultiply(
      positions, static_cast<uint64_t>(query ? p.headsQ : p.headsKv));
}

static std::string showRows(uint64_t rows) {
  return rows == std::numeric_limits<uint64_t>::max() ? "over 2^64"
                                                      : std::to_string(rows);
}

// Row indices (position x heads) and cu_seqlens are int32 in the kernel.
static void checkRowRange(const AttentionProblem &p, ErrorList &errs) {
  uint64_t qRows = rowCount(p, /*query=*/true);
  uint64_t kRows = rowCount(p, /*query=*/false);
  if (qRows > kMaxRows || kRows > kMaxRows)
    errs.add(ErrorKind::Usage,
             "the problem has " + showRows(qRows) + " query rows and " +
                 showRows(kRows) +
                 " key rows (positions x heads), more than the kernel's "
                 "32-bit row index holds (" +
                 Twine(kMaxRows) +
                 "): use a smaller batch, fewer heads or shorter sequences");
}

static void checkSoftcap(const AttentionProblem &p, const KernelSpec &spec,
                         ErrorList &errs) {
  if (!spec.softcap) {
    if (p.softcap != 0)
      errs.add(ErrorKind::Usage,
               "softcap " + show(p.softcap) + " needs a spec with softcap=1");
    return;
  }
  if (!(p.softcap > 0) || !std::isfinite(p.softcap))
    errs.add(ErrorKind::Usage,
             "the spec has softcap=1: give a finite softcap value c > 0 "
             "(scores become c*tanh(s/c)); got " +
                 show(p.softcap));
}

static void checkWindow(const AttentionProblem &p, const KernelSpec &spec,
                        ErrorList &errs) {
  std::string window =
      ("window (" + Twine(p.windowLeft) + ", " + Twine(p.windowRight) + ")")
          .str();
  if (spec.mask != Mask::Window) {
    if (p.windowLeft != -1 || p.windowRight != -1)
      errs.add(ErrorKind::Usage, Twine(window) +
                                     " needs a spec with mask=window; this "
                                     "spec has mask=" +
                                     keyOf(spec.mask));
    return;
  }
  auto valid = [](int64_t w) { return w >= -1 && w <= kMaxRows; };
  if (!valid(p.windowLeft) || !valid(p.windowRight))
    errs.add(ErrorKind::Usage, Twine(window) +
                                   " is invalid: each side is a key count "
                                   ">= 0, or -1 for unbounded");
}

static void checkAlibi(const AttentionProblem &p, const KernelSpec &spec,
                       ErrorList &errs) {
  if (p.alibiSlopes.empty())
    return;
  if (spec.bias != Bias::Alibi)
    errs.add(ErrorKind::Usage, "ALiBi slopes need a spec with bias=alibi");
  else if (static_cast<int64_t>(p.alibiSlopes.size()) != p.headsQ)
    errs.add(ErrorKind::Usage, "got " + Twine(p.alibiSlopes.size()) +
                                   " ALiBi slopes for " + Twine(p.headsQ) +
                                   " query heads: give one slope per head");
  else if (!llvm::all_of(p.alibiSlopes,
                         [](float s) { return std::isfinite(s); }))
    errs.add(ErrorKind::Usage, "ALiBi slopes must be finite");
}

static void checkSinks(const AttentionProblem &p, const KernelSpec &spec,
                       ErrorList &errs) {
  if (p.sinks.empty())
    return;
  if (!spec.sink)
    errs.add(ErrorKind::Usage, "sinks need a spec with sink=1");
  else if (static_cast<int64_t>(p.sinks.size()) != p.headsQ)
    errs.add(ErrorKind::Usage, "got " + Twine(p.sinks.size()) + " sinks for " +
                                   Twine(p.headsQ) +
                                   " query heads: give one sink per head");
  else if (!llvm::all_of(p.sinks, [](float s) {
             return std::isfinite(s) || s == -INFINITY;
           }))
    errs.add(ErrorKind::Usage,
             "sinks must be finite, or -inf for a head without one");
}

// The bias's values are optional (the kernel reads the tensors), but when
// given they must cover [batch, headsQ, seqlenQ, seqlenK].
static void checkBias(const AttentionProblem &p, const KernelSpec &spec,
                      ErrorList &errs) {
  bool elementwise = spec.bias == Bias::Elementwise;
  if (elementwise && p.isVarlen())
    errs.add(ErrorKind::Unsupported,
             "bias=elementwise with varlen is not implemented yet");
  if (p.bias.empty())
    return;
  int64_t want = p.batch * p.headsQ * p.seqlenQ * p.seqlenK;
  if (!elementwise)
    errs.add(ErrorKind::Usage, "bias values need a spec with bias=elementwise");
  else if (static_cast<int64_t>(p.bias.size()) != want)
    errs.add(ErrorKind::Usage,
             "got " + Twine(p.bias.size()) + " bias values for " + Twine(want) +
                 ": give them packed [batch, headsQ, seqlenQ, seqlenK]");
}

// p is a run-time argument of a dropout=1 kernel: [0, 1), and 0 elsewhere.
static void checkDropout(const AttentionProblem &p, const KernelSpec &spec,
                         ErrorList &errs) {
  float prob = p.dropout.p;
  if (!spec.dropout && prob != 0)
    errs.add(ErrorKind::Usage,
             "dropout p " + show(prob) + " needs a spec with dropout=1");
  else if (spec.dropout && !(prob >= 0 && prob < 1))
    errs.add(ErrorKind::Usage,
             "dropout p " + show(prob) +
                 " must be in [0, 1): the probability of dropping");
}

llvm::Error AttentionProblem::validate(const KernelSpec &spec) const {
  ErrorList errs;
  checkHeads(*this, errs);
  checkHeadDims(*this, spec, errs);
  checkVarlen(*this, spec, errs);
  checkLengths(*this, errs);
  // Kernels without score modifiers take each row's max of the unscaled
  // scores (ir/ForwardKernel.cpp): a negative scale would need the min.
  if (!std::isfinite(scale) || scale < 0)
    errs.add(ErrorKind::Usage, "scale " + show(scale) +
                                   " must be finite and > 0 (0 for 1/sqrt(d))");
  checkSoftcap(*this, spec, errs);
  checkWindow(*this, spec, errs);
  checkAlibi(*this, spec, errs);
  checkSinks(*this, spec, errs);
  checkBias(*this, spec, errs);
  checkDropout(*this, spec, errs);
  // Sizes are only meaningful once every length and head count is sane.
  if (errs.empty())
    checkRowRange(*this, errs);
  return errs.take();
}
