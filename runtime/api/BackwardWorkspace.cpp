//===- BackwardWorkspace.cpp - Where a backward plan keeps D and dQ's sums ===//
#include "runtime/api/BackwardWorkspace.h"

using namespace fmhajit;

BackwardWorkspace BackwardWorkspace::of(const AttentionProblem &problem,
                                        const KernelSpec &grad) {
  constexpr int64_t kAlign = 256;
  BackwardWorkspace w;
  w.dsumBytes = 4 * numElements(problem.lseShape());
  w.dqOffset = (w.dsumBytes + kAlign - 1) / kAlign * kAlign;
  int64_t d = grad.d, heads = problem.headsQ;
  w.dqStrides = {problem.maxSeqlenQ() * heads * d, heads * d, d};
  if (bwdSumsDqInWorkspace(grad))
    w.dqBytes = 4 * numElements(problem.qShape());
  return w;
}

void BackwardWorkspace::bind(KernelArgs &p, void *base) const {
  auto *bytes = static_cast<char *>(base);
  p.dPsum = reinterpret_cast<float *>(bytes);
  p.dQAccum = dqBytes ? reinterpret_cast<float *>(bytes + dqOffset) : nullptr;
  p.dQAccumStrides = dqStrides;
}
