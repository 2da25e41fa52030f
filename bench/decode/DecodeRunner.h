//===- DecodeRunner.h - One decode row: the dispatcher's plan against all
//---===//
//
// A decode row is one problem (batch, Hq, Hkv, Sq = 1, Sk, d) with seeded
// bf16 inputs, timed on the same buffers and thread count as
//   - the single-pass kernel (family fwd),
//   - split-KV (fwd_splitkv + splitkv_combine) at each candidate part
//     count, and
//   - what api::plan() chooses for the problem (the dispatcher and
//     SplitPlanner, as a user gets it), run through api::run(),
// so every figure of the row is measured in the same run. The plan's
// choice passes when it is the fastest of them or within 5% of the
// fastest. Each output is compared with the single-pass O (relative L2),
// which catches a broken combine before its speed is reported.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/host/BenchTimer.h"
#include "compiler/KernelCache.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/SplitKv.h"
#include "runtime/numerics/AttentionProblem.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit::bench {

struct DecodeShape {
  int64_t batch = 1, headsQ = 8, headsKv = 1, seqlenK = 1024;
  unsigned d = 128;
  int64_t pageSize = 0; ///< GPU grid: rows per K/V page; 0: contiguous
  int64_t seqlenQ = 1;  ///< query tokens per sequence (speculative: 2-8)
  /// A batch of mixed lengths (serving): > 0 draws each sequence's keys
  /// from [mixedMin, seqlenK] (mixedLengths), K/V then varlen (contiguous)
  /// or paged with per-sequence lengths; 0: every sequence seqlenK keys.
  int64_t mixedMin = 0;
};

/// Each sequence's keys: seqlenK each, or for a mixed row lengths drawn
/// uniformly from [mixedMin, seqlenK] by a 64-bit LCG seeded with the
/// batch (torch_decode.py's mixed_lengths draws the same).
std::vector<int32_t> keyLengths(const DecodeShape &shape);

/// Keys of every sequence together.
int64_t totalKeys(const DecodeShape &shape);

/// The timing of one split count.
struct SplitTiming {
  unsigned numSplits = 1;
  Timing timing;
  double relL2 = 0; ///< O against the single-pass kernel's
};

struct DecodeResult {
  DecodeShape shape;
  unsigned threads = 1;
  Timing single;                   ///< the fwd kernel
  std::vector<SplitTiming> splits; ///< in increasing part count
  /// What api::plan() chose: its key splits (1: single pass), its first
  /// kernel, and api::run() of the plan timed like the others.
  unsigned planSplits = 1;
  std::string planKernel;
  Timing plan;
  double planRelL2 = 0; ///< the plan's O against the single-pass kernel's

  /// The fastest time of the row: single-pass, any split count, the plan.
  double bestSeconds() const;
  /// The part count of the fastest direct run (1: single pass).
  unsigned bestSplits() const;
  /// The test: the plan's choice is the fastest of the row, or
  /// within 5% of it.
  bool planWithin5Percent() const;
  /// Every split run and the plan's run matched the single-pass output.
  bool outputsAgree() const;
};

/// The two specs a decode row runs: `family=<family>,dtype=bf16,d=<d>,bm=16`.
std::string decodeSpecText(const char *family, unsigned d);

/// The row's problem as a user describes it: BSHD, bf16, every default left.
api::Problem decodeProblem(const DecodeShape &shape, api::Device device);
/// Pages of one sequence's keys, for a shape with a page size.
int64_t pagesPerSeq(const DecodeShape &shape);
/// decodeProblem, varlen (cuSeqlensQ/K) for a contiguous mixed row, with
/// K/V in a pool of \p poolPages pages when the shape
/// has a page size (every sequence holding seqlenK keys).
api::Problem pagedDecodeProblem(const DecodeShape &shape, api::Device device,
                                int64_t poolPages);

/// The row's problem for \p spec's kernels (Sq = 1), validated by callers.
AttentionProblem decodeAttentionProblem(const DecodeShape &shape,
                                        const KernelSpec &spec);

/// Runs one row: loads the kernels through \p cache, plans the problem
/// through api::plan() (the process's kernel cache, \p executor's thread
/// count), then times the single-pass kernel, every count of \p candidates
/// (the plan's count is added when missing) and the plan, in turns
/// (timeInterleaved, \p policy's budget for the whole row).
llvm::Expected<DecodeResult> runDecodeRow(const DecodeShape &shape,
                                          std::vector<unsigned> candidates,
                                          HostExecutor &executor,
                                          KernelCache &cache,
                                          const TimingPolicy &policy);

} // namespace fmhajit::bench
