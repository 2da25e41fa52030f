//===- AttentionProblem.h - The run-time shape of one forward problem -----===//
//
// A KernelSpec fixes what a kernel computes; an AttentionProblem gives the
// run-time arguments of one call: batch, heads, sequence lengths (or one
// length per sequence under varlen), scale, softcap value, window and ALiBi
// slopes. validate() checks them against the spec before anything runs, so
// the kernel, the reference and the saved bundle all see the same numbers.
//
// Semantics shared with the kernel (sequence-local indices i of the query,
// j of the key, Sq/Sk the lengths of that sequence, diag = i + Sk - Sq):
//   s = scale * q.k;  softcap: s = c * tanh(s / c);
//   alibi: s -= slope_h * |diag - j|;  bias=elementwise: s += bias[b,h,i,j]
//   dropout: P_ij is kept with probability 1 - p and scaled by 1 / (1 - p),
//   else 0, after the softmax (the LSE is the softmax's before dropout);
//   the keep-mask is Philox of (b, h, i, j), seed and offset (Dropout.h)
//   sink: sink_h joins the softmax's denominator (and the LSE) as a logit
//   with no value row; a row that sees no key gets o = 0, lse = sink_h
//   causal: j <= i;  causal_br: j <= diag;
//   window: diag - left <= j <= diag + right (-1: unbounded on that side)
//   query head h reads K/V head h / (Hq / Hkv)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/Dropout.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fmhajit {

/// One forward attention problem. Lengths are int64 so that validate() can
/// see, and reject, sizes the kernel's 32-bit indices cannot address.
struct AttentionProblem {
  int64_t batch = 1;   ///< sequences; under varlen, seqlensQ.size()
  int64_t headsQ = 1;  ///< query (and output) heads
  int64_t headsKv = 1; ///< K/V heads; divides headsQ
  int64_t seqlenQ = 1; ///< query length of every sequence; unused under varlen
  int64_t seqlenK = 1; ///< key length of every sequence; unused under varlen
  std::vector<int64_t> seqlensQ; ///< varlen: query length of each sequence
  std::vector<int64_t> seqlensK; ///< varlen: key length of each sequence
  int64_t d = 0;                 ///< Q/K head dim, from the spec
  int64_t dv = 0;                ///< V/O head dim, from the spec
  float scale = 0;               ///< softmax scale; 0: 1/sqrt(d)
  float softcap = 0; ///< c in c*tanh(s/c); set exactly when spec.softcap
  int64_t windowLeft = -1, windowRight = -1; ///< mask=window; -1 unbounded
  std::vector<float> alibiSlopes; ///< bias=alibi; empty: the default slopes
  /// sink=1: one logit per query head, finite or -inf. Empty: given with
  /// the tensors at run time (the reference and bundles need them here).
  std::vector<float> sinks;
  /// bias=elementwise: the bias packed [batch, headsQ, seqlenQ, seqlenK]
  /// (broadcast dims expanded), for the reference and bundles. Empty: the
  /// kernel reads it from the tensors at run time.
  std::vector<float> bias;
  /// dropout=1: p, the seed and the offset (Dropout.h); p = 0 elsewhere.
  DropoutParams dropout;
  /// The variant's C++ source (spec key variant), for run bundles.
  std::string variantSource;
  /// The variant's run-time tensors in slot order (what its
  /// fmhajit_tensor(slot, i) reads), for the reference and run bundles.
  std::vector<std::vector<float>> variantTensors;

  /// A one-sequence, one-head problem with the head dims of \p spec.
  static AttentionProblem forSpec(const KernelSpec &spec);

  /// Checks every run-time argument against \p spec, reporting each problem
  /// with one ErrorKind::Usage message.
  llvm::Error validate(const KernelSpec &spec) const;

  bool isVarlen() const { return !seqlensQ.empty() || !seqlensK.empty(); }
  /// Query / key length of sequence \p b.
  int64_t seqlenQOf(int64_t b) const;
  int64_t seqlenKOf(int64_t b) const;
  /// The longest query / key sequence (KernelArgs::seqlenQ/seqlenK).
  int64_t maxSeqlenQ() const;
  int64_t maxSeqlenK() const;
  /// Rows of the packed query / key tensors: batch * seqlen, or the sum of
  /// the varlen lengths.
  int64_t totalQ() const;
  int64_t totalK() const;
  /// Cumulative lengths [batch + 1] starting at 0; meaningful after
  /// validate() accepted a varlen problem.
  std::vector<int32_t> cuSeqlensQ() const;
  std::vector<int32_t> cuSeqlensK() const;
  /// The scale the kernel is given: `scale`, or 1/sqrt(d) when 0.
  float resolvedScale() const;
  /// `alibiSlopes`, or the default slopes for headsQ heads when empty.
  std::vector<float> resolvedAlibiSlopes() const;

  /// Shapes of the packed tensors: Q [B,Sq,Hq,d], K [B,Sk,Hkv,d],
  /// V [B,Sk,Hkv,dv], O [B,Sq,Hq,dv], LSE [B,Hq,Sq]; under varlen
  /// Q [totalQ,Hq,d] ... and LSE [Hq,totalQ].
  llvm::SmallVector<int64_t, 4> qShape() const;
  llvm::SmallVector<int64_t, 4> kShape() const;
  llvm::SmallVector<int64_t, 4> vShape() const;
  llvm::SmallVector<int64_t, 4> oShape() const;
  llvm::SmallVector<int64_t, 4> lseShape() const;
};

/// The ALiBi paper's slopes for \p heads heads: 2^(-8(h+1)/n) for n a power
/// of two; otherwise those of the largest power of two m < n, followed by
/// every other slope of 2m heads (ofirpress/attention_with_linear_biases).
std::vector<float> defaultAlibiSlopes(int64_t heads);

/// Elements in a tensor of \p shape.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

} // namespace fmhajit
