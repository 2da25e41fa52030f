//===- BackwardReference.cpp - The float64 reference gradients ------------===//
#include "runtime/numerics/BackwardReference.h"
#include "runtime/numerics/Reference.h"
#include "llvm/Support/Parallel.h"
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>

using namespace fmhajit;

namespace {
/// One (sequence, K/V head) task: it owns that head's dK and dV rows and
/// the dQ rows of its group's query heads, so tasks never share an output.
struct GradTask {
  const KernelSpec &spec;
  const AttentionProblem &p;
  llvm::ArrayRef<float> q, k, v, dO;
  ReferenceGrads &out;
  double scale;
  std::vector<float> slopes;
  std::vector<int32_t> cuQ, cuK;      ///< varlen only
  std::optional<DropoutMask> dropout; ///< dropout=1 only

  /// The packed row of query (key) \p i of sequence \p b.
  int64_t qIndex(int64_t b, int64_t i) const {
    return (p.isVarlen() ? cuQ[b] : b * p.seqlenQ) + i;
  }
  int64_t kIndex(int64_t b, int64_t j) const {
    return (p.isVarlen() ? cuK[b] : b * p.seqlenK) + j;
  }
  const float *qRow(int64_t b, int64_t i, int64_t h) const {
    return &q[(qIndex(b, i) * p.headsQ + h) * p.d];
  }
  const float *kRow(int64_t b, int64_t j, int64_t hk) const {
    return &k[(kIndex(b, j) * p.headsKv + hk) * p.d];
  }
  const float *vRow(int64_t b, int64_t j, int64_t hk) const {
    return &v[(kIndex(b, j) * p.headsKv + hk) * p.dv];
  }
  const float *dORow(int64_t b, int64_t i, int64_t h) const {
    return &dO[(qIndex(b, i) * p.headsQ + h) * p.dv];
  }
  void queryRow(int64_t b, int64_t h, int64_t hk, int64_t i) const;
  void run(int64_t b, int64_t hk) const;
};
} // namespace

static double dot(const float *x, const float *y, int64_t n) {
  double sum = 0;
  for (int64_t c = 0; c < n; ++c)
    sum += static_cast<double>(x[c]) * y[c];
  return sum;
}

// One query row's contribution: its scores, P, O, D, then dS against every
// visible key.
void GradTask::queryRow(int64_t b, int64_t h, int64_t hk, int64_t i) const {
  const double inf = std::numeric_limits<double>::infinity();
  int64_t sq = p.seqlenQOf(b), sk = p.seqlenKOf(b);
  std::vector<double> s(sk, -inf), u(sk, 0.0);
  double rowMax = -inf;
  for (int64_t j = 0; j < sk; ++j) {
    if (!isKeyVisible(spec, p, i, j, sq, sk))
      continue;
    u[j] = scale * dot(qRow(b, i, h), kRow(b, j, hk), p.d);
    s[j] = spec.softcap ? p.softcap * std::tanh(u[j] / p.softcap) : u[j];
    if (spec.bias == Bias::Alibi)
      s[j] -= slopes[h] * std::abs(static_cast<double>(i + sk - sq - j));
    rowMax = std::max(rowMax, s[j]);
  }
  if (rowMax == -inf)
    return; // sees no key: dQ stays 0, adds nothing to dK and dV
  double sum = 0;
  for (int64_t j = 0; j < sk; ++j)
    sum += std::exp(s[j] - rowMax);
  double lse = rowMax + std::log(sum);
  // kept[j]: dropout's Z_j / (1 - p) (1 without dropout); O uses P * kept.
  std::vector<double> prob(sk), kept(sk, 1.0), o(p.dv, 0.0);
  for (int64_t j = 0; j < sk; ++j) {
    prob[j] = std::exp(s[j] - lse);
    if (dropout)
      kept[j] = dropout->keeps(b, h, i, j) ? dropout->scale() : 0.0;
    for (int64_t c = 0; c < p.dv; ++c)
      o[c] += prob[j] * kept[j] * vRow(b, j, hk)[c];
  }
  const float *g = dORow(b, i, h);
  double dsum = 0;
  for (int64_t c = 0; c < p.dv; ++c)
    dsum += g[c] * o[c];
  double *dq = &out.dq[(qIndex(b, i) * p.headsQ + h) * p.d];
  for (int64_t j = 0; j < sk; ++j) {
    if (prob[j] == 0)
      continue;
    double dp = kept[j] * dot(g, vRow(b, j, hk), p.dv);
    double ds = prob[j] * (dp - dsum);
    if (spec.softcap) {
      double t = std::tanh(u[j] / p.softcap);
      ds *= 1 - t * t;
    }
    double *dk = &out.dk[(kIndex(b, j) * p.headsKv + hk) * p.d];
    double *dv = &out.dv[(kIndex(b, j) * p.headsKv + hk) * p.dv];
    for (int64_t c = 0; c < p.d; ++c) {
      dq[c] += scale * ds * kRow(b, j, hk)[c];
      dk[c] += scale * ds * qRow(b, i, h)[c];
    }
    for (int64_t c = 0; c < p.dv; ++c)
      dv[c] += prob[j] * kept[j] * g[c];
  }
}

void GradTask::run(int64_t b, int64_t hk) const {
  int64_t group = p.headsQ / p.headsKv;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
    for (int64_t i = 0; i < p.seqlenQOf(b); ++i)
      queryRow(b, h, hk, i);
}

ReferenceGrads fmhajit::referenceBackward(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          llvm::ArrayRef<float> q,
                                          llvm::ArrayRef<float> k,
                                          llvm::ArrayRef<float> v,
                                          llvm::ArrayRef<float> dO) {
  assert(static_cast<int64_t>(q.size()) == numElements(problem.qShape()) &&
         static_cast<int64_t>(k.size()) == numElements(problem.kShape()) &&
         static_cast<int64_t>(v.size()) == numElements(problem.vShape()) &&
         static_cast<int64_t>(dO.size()) == numElements(problem.oShape()) &&
         "input sizes do not match the problem");
  ReferenceGrads out;
  out.dq.assign(q.size(), 0.0);
  out.dk.assign(k.size(), 0.0);
  out.dv.assign(v.size(), 0.0);
  GradTask task{spec,
                problem,
                q,
                k,
                v,
                dO,
                out,
                problem.resolvedScale(),
                spec.bias == Bias::Alibi ? problem.resolvedAlibiSlopes()
                                         : std::vector<float>(),
                problem.cuSeqlensQ(),
                problem.cuSeqlensK(),
                std::nullopt};
  if (spec.dropout)
    task.dropout.emplace(problem.dropout, problem.headsQ);
  llvm::parallelFor(0, problem.batch * problem.headsKv, [&](size_t item) {
    int64_t b = static_cast<int64_t>(item) / problem.headsKv;
    task.run(b, static_cast<int64_t>(item) % problem.headsKv);
  });
  return out;
}
