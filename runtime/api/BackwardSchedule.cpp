//===- BackwardSchedule.cpp - Which work items the host backward runs -----===//
#include "runtime/api/BackwardSchedule.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <vector>

using namespace fmhajit;

bool fmhajit::headItemsKeepUp(llvm::ArrayRef<double> headWork,
                              unsigned threads) {
  threads = std::max(threads, 1u);
  // Each thread's busy time, the least first; items go from the last.
  std::priority_queue<double, std::vector<double>, std::greater<double>> busy;
  for (unsigned t = 0; t < threads; ++t)
    busy.push(0);
  double longest = 0;
  for (double work : llvm::reverse(headWork)) {
    double done = busy.top() + work;
    busy.pop();
    busy.push(done);
    longest = std::max(longest, done);
  }
  double total = std::accumulate(headWork.begin(), headWork.end(), 0.0);
  return longest <= total * kHostSplitCost / threads;
}

bool fmhajit::hostBackwardTakesHeadItems(const AttentionProblem &problem,
                                         unsigned threads) {
  std::vector<double> work; // item w = b * headsKv + hk
  for (int64_t b = 0; b < problem.batch; ++b)
    for (int64_t hk = 0; hk < problem.headsKv; ++hk)
      work.push_back(double(problem.seqlenQOf(b)) *
                     double(problem.seqlenKOf(b)));
  return headItemsKeepUp(work, threads);
}
