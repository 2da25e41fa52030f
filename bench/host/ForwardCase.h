//===- ForwardCase.h - One forward-throughput case and its outcome --------===//
#pragma once

#include "bench/host/BenchTimer.h"
#include "bench/host/UnfusedAttention.h"
#include "specs/KernelSpec.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fmhajit::bench {

/// Tokens per case: heads = max(1, kTokensPerCase / S), so every case with
/// S <= kTokensPerCase moves the same number of query rows.
inline constexpr int64_t kTokensPerCase = 8192;

/// One row of the throughput table: batch 1, Sq = Sk = seqlen.
struct ForwardCase {
  DType dtype = DType::F32;
  unsigned d = 128;
  int64_t seqlen = 2048;
  bool causal = false;
  unsigned threads = 1;
  int64_t heads = 1;
  int64_t batch = 1;

  /// 4 * B * H * S * S * d, halved under the causal mask.
  double flops() const;
};

/// The cases of a run: the full grid (d in {64, 128}, S in {512, 2048,
/// 8192}, both masks, fp32 and bf16, one thread and \p allThreads), or a
/// couple of small ones in quick mode.
std::vector<ForwardCase> forwardCases(bool quick, unsigned allThreads);

/// What running one case found. Times are best-of-runs, in seconds.
struct ForwardResult {
  ForwardCase config;
  std::string kernel; ///< fmhajit's encoded name
  Timing fmhajit, peer;
  PeerThreading peerMode = PeerThreading::Serial; ///< the faster one, kept
  double peerOtherSeconds = 0; ///< best time of the mode not kept (0: one mode)
  double relL2 = 0;            ///< ||o_fmhajit - o_peer|| / ||o_peer||
  double tolerance = 0;
  bool checked = false; ///< relL2 <= tolerance
  /// The FMA peak at the case's thread count measured in the same turns as
  /// fmhajit and the peer (0: not measured).
  double peakGflops = 0;
  std::string error; ///< set when the case could not run

  double fmhajitGflops() const;
  double peerGflops() const;
  /// peer time / fmhajit time.
  double speedup() const;
};

} // namespace fmhajit::bench
