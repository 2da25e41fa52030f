//===- Reference.h - The float64 reference forward attention --------------===//
//
// The definition the kernels are checked against: the plain two-pass
// softmax(score) * V, evaluated in double per (sequence, query head), with
// the mask, softcap, ALiBi, bias, sink and GQA rules of AttentionProblem.h. It
// is meant to be obviously right, not fast; (batch, head) pairs run in
// parallel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <functional>
#include <vector>

namespace fmhajit {

/// The reference's outputs, in the packed layouts of AttentionProblem.
struct ReferenceOutput {
  std::vector<double> o;   ///< oShape()
  std::vector<double> lse; ///< lseShape(); -inf for a row that sees no key
};

/// Whether key \p j is visible to query \p i of a sequence with \p sq queries
/// and \p sk keys under \p spec's mask and \p problem's window.
bool isKeyVisible(const KernelSpec &spec, const AttentionProblem &problem,
                  int64_t i, int64_t j, int64_t sq, int64_t sk);

/// A variant's functions (docs/variants.md) as the reference applies them:
/// score_mod on the score after softcap and ALiBi, mask_mod ANDed with the
/// spec's mask; b is the sequence, h the query head, q and k positions in
/// the sequence. Either may be empty.
struct ReferenceVariant {
  std::function<double(double score, int64_t b, int64_t h, int64_t q,
                       int64_t k)>
      scoreMod;
  std::function<bool(int64_t b, int64_t h, int64_t q, int64_t k)> maskMod;
};

/// Forward attention of \p problem, which validate(spec) accepted. \p q, \p k
/// and \p v are packed (qShape(), kShape(), vShape()) and already rounded to
/// the spec's dtype. A query row that sees no key gets o = 0, lse = -inf
/// (lse = sink_h under sink=1, whose problem holds its sinks).
ReferenceOutput
referenceForward(const KernelSpec &spec, const AttentionProblem &problem,
                 llvm::ArrayRef<float> q, llvm::ArrayRef<float> k,
                 llvm::ArrayRef<float> v, const ReferenceVariant &variant = {});

} // namespace fmhajit
