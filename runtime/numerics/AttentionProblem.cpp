//===- AttentionProblem.cpp - Derived sizes and default arguments ---------===//
#include "runtime/numerics/AttentionProblem.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

using namespace fmhajit;

AttentionProblem AttentionProblem::forSpec(const KernelSpec &spec) {
  AttentionProblem p;
  p.d = spec.d;
  p.dv = spec.headDimV();
  return p;
}

int64_t AttentionProblem::seqlenQOf(int64_t b) const {
  assert(b >= 0 && b < batch && "sequence out of range");
  return isVarlen() ? seqlensQ[b] : seqlenQ;
}

int64_t AttentionProblem::seqlenKOf(int64_t b) const {
  assert(b >= 0 && b < batch && "sequence out of range");
  return isVarlen() ? seqlensK[b] : seqlenK;
}

int64_t AttentionProblem::maxSeqlenQ() const {
  return isVarlen() ? *llvm::max_element(seqlensQ) : seqlenQ;
}

int64_t AttentionProblem::maxSeqlenK() const {
  return isVarlen() ? *llvm::max_element(seqlensK) : seqlenK;
}

int64_t AttentionProblem::totalQ() const {
  return isVarlen()
             ? std::accumulate(seqlensQ.begin(), seqlensQ.end(), int64_t(0))
             : batch * seqlenQ;
}

int64_t AttentionProblem::totalK() const {
  return isVarlen()
             ? std::accumulate(seqlensK.begin(), seqlensK.end(), int64_t(0))
             : batch * seqlenK;
}

static std::vector<int32_t> cumulative(llvm::ArrayRef<int64_t> lengths) {
  std::vector<int32_t> cu(1, 0);
  for (int64_t len : lengths)
    cu.push_back(static_cast<int32_t>(cu.back() + len));
  return cu;
}

std::vector<int32_t> AttentionProblem::cuSeqlensQ() const {
  return cumulative(seqlensQ);
}

std::vector<int32_t> AttentionProblem::cuSeqlensK() const {
  return cumulative(seqlensK);
}

float AttentionProblem::resolvedScale() const {
  if (scale != 0)
    return scale;
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
}

std::vector<float> AttentionProblem::resolvedAlibiSlopes() const {
  return alibiSlopes.empty() ? defaultAlibiSlopes(headsQ) : alibiSlopes;
}

llvm::SmallVector<int64_t, 4> AttentionProblem::qShape() const {
  if (isVarlen())
    return {totalQ(), headsQ, d};
  return {batch, seqlenQ, headsQ, d};
}

llvm::SmallVector<int64_t, 4> AttentionProblem::kShape() const {
  if (isVarlen())
    return {totalK(), headsKv, d};
  return {batch, seqlenK, headsKv, d};
}

llvm::SmallVector<int64_t, 4> AttentionProblem::vShape() const {
  if (isVarlen())
    return {totalK(), headsKv, dv};
  return {batch, seqlenK, headsKv, dv};
}

llvm::SmallVector<int64_t, 4> AttentionProblem::oShape() const {
  if (isVarlen())
    return {totalQ(), headsQ, dv};
  return {batch, seqlenQ, headsQ, dv};
}

llvm::SmallVector<int64_t, 4> AttentionProblem::lseShape() const {
  if (isVarlen())
    return {headsQ, totalQ()};
  return {batch, headsQ, seqlenQ};
}

// Slopes 2^(-8(h*stride+1)/n): computed in double and rounded to float once,
// the precision the kernel reads them in.
static void appendPowerOfTwoSlopes(int64_t n, int64_t count, int64_t stride,
                                   std::vector<float> &out) {
  for (int64_t h = 0; h < count; ++h)
    out.push_back(static_cast<float>(
        std::exp2(-8.0 * static_cast<double>(h * stride + 1) / n)));
}

std::vector<float> fmhajit::defaultAlibiSlopes(int64_t heads) {
  assert(heads > 0 && "ALiBi needs at least one head");
  int64_t m = int64_t(1) << (63 - __builtin_clzll(heads)); // largest 2^k <= n
  std::vector<float> slopes;
  appendPowerOfTwoSlopes(m, m, 1, slopes);
  // The paper's interpolation: the odd-numbered slopes of 2m heads, which
  // fall between the slopes already taken.
  appendPowerOfTwoSlopes(2 * m, heads - m, 2, slopes);
  return slopes;
}

int64_t fmhajit::numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  return n;
}
