//===- Reference.cpp - The float64 reference forward attention ------------===//
#include "runtime/numerics/Reference.h"
#include "llvm/Support/Parallel.h"
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>

using namespace fmhajit;

namespace {
/// Where sequence b's rows start in the packed tensors.
struct SequenceRows {
  int64_t firstQ, firstK, sq, sk;
  int64_t b; ///< the sequence
};

/// Everything one (sequence, query head) task reads, resolved once.
struct ReferenceTask {
  const KernelSpec &spec;
  const AttentionProblem &p;
  llvm::ArrayRef<float> q, k, v;
  std::vector<double> &o, &lse;
  double scale, softcap;
  std::vector<float> slopes;
  std::vector<float> sinks;      ///< sink=1 only
  std::vector<int32_t> cuQ, cuK; ///< varlen only
  const ReferenceVariant &variant;
  std::optional<DropoutMask> dropout; ///< dropout=1 only

  SequenceRows rowsOf(int64_t b) const;
  double score(int64_t qRow, int64_t kRow, int64_t h, int64_t hKv) const;
  double scoreRow(const SequenceRows &rows, int64_t i, int64_t h,
                  std::vector<double> &s) const;
  void run(int64_t b, int64_t h) const;
};
} // namespace

bool fmhajit::isKeyVisible(const KernelSpec &spec,
                           const AttentionProblem &problem, int64_t i,
                           int64_t j, int64_t sq, int64_t sk) {
  int64_t diag = i + sk - sq; // the key aligned with query i, bottom-right
  switch (spec.mask) {
  case Mask::None:
    return true;
  case Mask::Causal:
    return j <= i;
  case Mask::CausalBr:
    return j <= diag;
  case Mask::Window:
    return (problem.windowLeft < 0 || j >= diag - problem.windowLeft) &&
           (problem.windowRight < 0 || j <= diag + problem.windowRight);
  }
  return true;
}

SequenceRows ReferenceTask::rowsOf(int64_t b) const {
  if (!p.isVarlen())
    return {b * p.seqlenQ, b * p.seqlenK, p.seqlenQ, p.seqlenK, b};
  return {cuQ[b], cuK[b], p.seqlenQOf(b), p.seqlenKOf(b), b};
}

/// scale * q.k, then softcap: the score before position-dependent terms.
double ReferenceTask::score(int64_t qRow, int64_t kRow, int64_t h,
                            int64_t hKv) const {
  const float *qv = &q[(qRow * p.headsQ + h) * p.d];
  const float *kv = &k[(kRow * p.headsKv + hKv) * p.d];
  double dot = 0;
  for (int64_t c = 0; c < p.d; ++c)
    dot += static_cast<double>(qv[c]) * kv[c];
  double s = scale * dot;
  return spec.softcap ? softcap * std::tanh(s / softcap) : s;
}

/// Fills \p s with query i's final scores (-inf where masked) and returns
/// their maximum.
double ReferenceTask::scoreRow(const SequenceRows &rows, int64_t i, int64_t h,
                               std::vector<double> &s) const {
  int64_t hKv = h / (p.headsQ / p.headsKv);
  double slope = spec.bias == Bias::Alibi ? slopes[h] : 0.0;
  double rowMax = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < rows.sk; ++j) {
    s[j] = -std::numeric_limits<double>::infinity();
    if (!isKeyVisible(spec, p, i, j, rows.sq, rows.sk) ||
        (variant.maskMod && !variant.maskMod(rows.b, h, i, j)))
      continue;
    double distance = std::abs(static_cast<double>(i + rows.sk - rows.sq - j));
    s[j] = score(rows.firstQ + i, rows.firstK + j, h, hKv) - slope * distance;
    if (spec.bias == Bias::Elementwise) // after softcap, before score_mod
      s[j] +=
          p.bias[size_t(((rows.b * p.headsQ + h) * rows.sq + i) * rows.sk + j)];
    if (variant.scoreMod)
      s[j] = variant.scoreMod(s[j], rows.b, h, i, j);
    rowMax = std::max(rowMax, s[j]);
  }
  return rowMax;
}

void ReferenceTask::run(int64_t b, int64_t h) const {
  SequenceRows rows = rowsOf(b);
  int64_t hKv = h / (p.headsQ / p.headsKv);
  int64_t lseBase = p.isVarlen() ? h * p.totalQ() + rows.firstQ
                                 : (b * p.headsQ + h) * p.seqlenQ;
  std::vector<double> s(rows.sk);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // The sink is a logit with no value row: in the max and the sum only.
  double sink = sinks.empty() ? kNegInf : double(sinks[h]);
  for (int64_t i = 0; i < rows.sq; ++i) {
    double rowMax = std::max(scoreRow(rows, i, h, s), sink);
    double *out = &o[((rows.firstQ + i) * p.headsQ + h) * p.dv];
    lse[lseBase + i] = rowMax; // -inf, and o stays 0, when no key is visible
    if (rowMax == kNegInf)
      continue;
    double sum = sink == kNegInf ? 0.0 : std::exp(sink - rowMax);
    for (int64_t j = 0; j < rows.sk; ++j) {
      double w = std::exp(s[j] - rowMax); // 0 for masked keys
      sum += w; // the LSE is the softmax's before dropout
      if (dropout)
        w = dropout->keeps(b, h, i, j) ? w * dropout->scale() : 0.0;
      const float *vv = &v[((rows.firstK + j) * p.headsKv + hKv) * p.dv];
      for (int64_t c = 0; c < p.dv; ++c)
        out[c] += w * vv[c];
    }
    for (int64_t c = 0; c < p.dv; ++c)
      out[c] /= sum;
    lse[lseBase + i] = rowMax + std::log(sum);
  }
}

ReferenceOutput fmhajit::referenceForward(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          llvm::ArrayRef<float> q,
                                          llvm::ArrayRef<float> k,
                                          llvm::ArrayRef<float> v,
                                          const ReferenceVariant &variant) {
  assert((spec.bias != Bias::Elementwise ||
          static_cast<int64_t>(problem.bias.size()) ==
              problem.batch * problem.headsQ * problem.seqlenQ *
                  problem.seqlenK) &&
         "a bias problem's reference needs its bias");
  assert((!spec.sink ||
          static_cast<int64_t>(problem.sinks.size()) == problem.headsQ) &&
         "a sink problem's reference needs its sinks");
  assert(static_cast<int64_t>(q.size()) == numElements(problem.qShape()) &&
         static_cast<int64_t>(k.size()) == numElements(problem.kShape()) &&
         static_cast<int64_t>(v.size()) == numElements(problem.vShape()) &&
         "input sizes do not match the problem");
  ReferenceOutput out;
  out.o.assign(numElements(problem.oShape()), 0.0);
  out.lse.assign(numElements(problem.lseShape()), 0.0);
  ReferenceTask task{spec,
                     problem,
                     q,
                     k,
                     v,
                     out.o,
                     out.lse,
                     problem.resolvedScale(),
                     problem.softcap,
                     spec.bias == Bias::Alibi ? problem.resolvedAlibiSlopes()
                                              : std::vector<float>(),
                     spec.sink ? problem.sinks : std::vector<float>(),
                     problem.cuSeqlensQ(),
                     problem.cuSeqlensK(),
                     variant,
                     std::nullopt};
  if (spec.dropout)
    task.dropout.emplace(problem.dropout, problem.headsQ);
  // Each (b, h) task writes its own rows of O and LSE, so no locking.
  llvm::parallelFor(0, problem.batch * problem.headsQ, [&](size_t item) {
    int64_t b = static_cast<int64_t>(item) / problem.headsQ;
    task.run(b, static_cast<int64_t>(item) % problem.headsQ);
  });
  return out;
}
