//===- BackwardCase.h - One backward call on seeded inputs, checked -------===//
//
// What `fmhajit run family=bwd_dq_dk_dv` and the e2e tests share: seeded
// random Q, K, V and dO, the forward kernel run once for O and LSE, then the
// backward's two host kernels (bwd_dot_do_o for D = rowsum(dO * O), then
// bwd_dq_dk_dv) on gradients poisoned with NaN, and the float64 reference's
// verdict on dQ, dK and dV. Where the grad kernel sums dQ in the workspace
// (head_items=1 with a dQ that is not fp32) the case holds that fp32
// dQAccum too, poisoned as well: the kernel must zero it. Host only, in the
// packed layouts of AttentionProblem (BSHD, or THD under varlen).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include "runtime/harness/LaidOutTensor.h"
#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>
#include <vector>

namespace fmhajit::harness {

/// The reference's verdict on each gradient.
struct BackwardCheck {
  CompareResult dq, dk, dv;

  bool pass() const { return dq.pass && dk.pass && dv.pass; }
  /// "dq PASS: ...; dk ...; dv ...", one clause per gradient.
  std::string summary() const;
};

/// \p p as the backward kernels of \p spec and the reference read it
/// (varlen's cumulative lengths become lengths).
AttentionProblem backwardProblem(const KernelSpec &spec, const api::Problem &p);

/// 2.5 times the forward's 2 (d + dv) per visible (query, key) pair of
/// \p problem under \p spec's mask, FlashAttention's convention.
double backwardFlops(const KernelSpec &spec, const AttentionProblem &problem);

class BackwardCase {
public:
  /// For \p spec (resolved, family bwd_dq_dk_dv, a host target) and
  /// \p problem: loads the forward, bwd_dot_do_o and \p spec's kernels
  /// through \p cache, fills Q, K, V, dO from seeds seed .. seed + 3 and
  /// runs the forward for O and LSE on \p threads threads (0: all). dO, dQ,
  /// dK and dV are laid out as \p gradLayout (Q, K, V, O packed).
  static llvm::Expected<std::unique_ptr<BackwardCase>>
  make(const KernelSpec &spec, const AttentionProblem &problem, uint64_t seed,
       KernelCache &cache, unsigned threads,
       const api::TensorLayout &gradLayout = api::TensorLayout::bshd());

  /// Poisons D, dQ, dK, dV (and dQAccum) with NaN and runs the backward once.
  void run();
  /// The backward's two kernels again on the same buffers (timing).
  void launch();
  /// The float64 reference's verdict on the last run().
  BackwardCheck check() const;
  /// Writes the last run's bundle into \p dir (docs/run.md, "Backward"):
  /// q, k, v, o, lse, do, dq, dk, dv as float32 .npy in the packed layouts
  /// and meta.json (the forward's keys, then the three kernels and the seed).
  llvm::Error save(const std::string &dir) const;

  /// 2.5 times the forward's 2 (d + dv) per visible (query, key) pair,
  /// FlashAttention's convention.
  double flops() const;

  const KernelSpec &forwardSpec() const { return forward.spec(); }
  const KernelSpec &dotSpec() const { return dot.spec(); }
  const KernelSpec &gradSpec() const { return grad.spec(); }
  const AttentionProblem &problem() const { return p; }
  /// The gradients' storage, in their layout (for bitwise comparisons).
  const HostTensor &dq() const { return dQ.data; }
  const HostTensor &dk() const { return dK.data; }
  const HostTensor &dv() const { return dV.data; }
  /// dQ in the packed order of AttentionProblem's qShape().
  std::vector<float> dqPacked() const { return dQ.packed(); }
  const HostTensor &o() const { return out; }
  const std::vector<float> &lse() const { return lseRows; }

private:
  BackwardCase(const AttentionProblem &problem, HostKernel forwardKernel,
               HostKernel dotKernel, HostKernel gradKernel, unsigned threads,
               const api::TensorLayout &gradLayout);
  /// The shape of a Q-like (\p queries) or K-like tensor of \p dim.
  TensorShape shapeOf(bool queries, int64_t dim) const;
  KernelArgs argsFor(const KernelSpec &spec);

  AttentionProblem p;
  HostKernel forward, dot, grad;
  HostExecutor executor;
  HostTensor q, k, v, out;
  LaidOutTensor dO, dQ, dK, dV;
  std::vector<float> lseRows, dsum, slopes;
  std::vector<float> dqAccum;    ///< bwdSumsDqInWorkspace only
  std::vector<int32_t> cuQ, cuK; ///< varlen only
  uint64_t seed = 0;
};

} // namespace fmhajit::harness
