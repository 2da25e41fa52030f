//===- BackwardReference.h - The float64 reference gradients --------------===//
//
// The definition the backward kernels are checked against: for the loss
// L = sum(dO * O), with O = softmax(s) V and s the forward's scores
// (Reference.h: mask, softcap, ALiBi, GQA), the gradients dL/dQ, dL/dK and
// dL/dV evaluated in double from the inputs alone (O and the LSE are
// recomputed exactly, not read from a kernel):
//   P = exp(s - lse);  D_i = sum_c dO_ic O_ic;  dP = dO V^T
//   dS = P * (dP - D);  dU = dS * (1 - tanh^2(u / c)) under softcap, with
//   u = scale * q.k;  dQ = scale dU K;  dK = scale dU^T Q;  dV = P^T dO
// Under dropout=1 (Z the keep-mask, Dropout.h, and z = Z / (1 - p)):
// O = (P * z) V, dV = (P * z)^T dO, dP = z * (dO V^T), and D = rowsum(dO O)
// = sum_j P_j dP_j as before, so dS = P * (dP - D) keeps its form.
// dK and dV sum over the query heads of a K/V head's group. A query row
// that sees no key has P = 0: its dQ is 0 and it adds nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include <vector>

namespace fmhajit {

/// Gradients in the packed layouts of AttentionProblem: dQ as Q, dK as K,
/// dV as V.
struct ReferenceGrads {
  std::vector<double> dq, dk, dv;
};

/// The gradients of sum(dO * O) for \p problem (validated against
/// \p spec; dense or varlen). \p q, \p k, \p v and \p dO (oShape()) are packed
/// and already rounded to the dtypes the kernel reads.
ReferenceGrads
referenceBackward(const KernelSpec &spec, const AttentionProblem &problem,
                  llvm::ArrayRef<float> q, llvm::ArrayRef<float> k,
                  llvm::ArrayRef<float> v, llvm::ArrayRef<float> dO);

} // namespace fmhajit
