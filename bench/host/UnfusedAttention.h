//===- UnfusedAttention.h - The peer: attention from OpenBLAS sgemm -------===//
//
// What fmhajit is compared with: attention computed the unfused way, the
// score matrix written to memory between steps. Per (batch, head) and per
// block of kBlockRows query rows:
//
//   S = scale * Q_blk K^T      cblas_sgemm
//   causal mask, row softmax   softmaxRows (RowSoftmax.h)
//   O_blk = P V                cblas_sgemm
//
// Blocking the rows bounds the scratch memory (one S block per thread) and,
// under the causal mask, skips the key columns no row of the block sees,
// as a careful unfused implementation would. bf16 inputs are converted to
// fp32 first and the output back to bf16, inside the timed run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <vector>

namespace fmhajit::bench {

/// Query rows per S block.
inline constexpr int64_t kBlockRows = 256;

/// A problem in fmhajit's packed layouts: Q, O [B,Sq,H,d], K, V [B,Sk,H,d].
struct PeerProblem {
  int64_t batch = 1, heads = 1, seqlenQ = 1, seqlenK = 1, d = 64;
  bool causal = false; ///< key j visible to query i iff j <= i
  float scale = 1;
  DType dtype = DType::F32; ///< fp32 or bf16, inputs and output
};

/// How the peer uses several threads.
enum class PeerThreading {
  Serial,         ///< one thread, OpenBLAS single-threaded
  BlocksParallel, ///< (head, row block) items on our threads, OpenBLAS
                  ///< single-threaded
  BlasThreaded,   ///< items in turn, each sgemm on OpenBLAS's threads
};
llvm::StringRef threadingName(PeerThreading mode);

class UnfusedAttention {
public:
  /// A peer for \p problem on \p threads threads (scratch allocated here).
  UnfusedAttention(const PeerProblem &problem, unsigned threads);

  /// O = softmax(mask(scale Q K^T)) V; q, k, v and o hold elements of the
  /// problem's dtype.
  void run(const void *q, const void *k, const void *v, void *o,
           PeerThreading mode);

private:
  void convertInputs(const void *q, const void *k, const void *v);
  void attendBlock(const float *q, const float *k, const float *v, float *o,
                   int64_t item, unsigned thread) const;
  int64_t items() const;

  PeerProblem problem;
  unsigned threads;
  int64_t blocksPerHead;
  std::vector<float> qf, kf, vf, of; ///< fp32 copies, for bf16 problems
  mutable std::vector<std::vector<float>> scores; ///< one S block per thread
};

} // namespace fmhajit::bench
