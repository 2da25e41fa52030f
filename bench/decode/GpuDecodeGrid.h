//===- GpuDecodeGrid.h - The issue-13 decode grid on a CUDA GPU -----------===//
//
// fmhajit-bench-decode --device cuda: one row per (Hq/Hkv, batch, Sk,
// contiguous or paged) problem, Sq = 1, bf16, every figure measured in the
// same process. A row times, on the same device buffers:
//   - what api::plan() chooses for the problem (the plan), and
//   - every configuration it could have picked: each tile of the --tiles
//     list, with and without pack_gqa, at each part count of --splits,
//     each pinned through Options::kernel and Options::numSplits and run
//     through api::run(), as a user would.
// Each contender's output is poisoned (NaN) first and compared with the
// row's reference run (one query head per tile, one part), so a wrong
// combine or a lost row shows before its speed. Times are CUDA events
// around api::run(), median of --reps runs after a warm-up; successive runs
// read different copies of K/V (docs/bench.md) so that rows smaller than
// the L2 are not timed from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/decode/DecodeRunner.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>
#include <string>
#include <vector>

namespace fmhajit::bench {

/// One configuration of a row, pinned: its spec text and part count.
struct GridConfigTiming {
  std::string spec; ///< "pipeline=mma,bm=16,bn=64,warps=1,pack_gqa=1"
  unsigned splits = 1;
  double ms = 0;    ///< median of the timed runs
  double relL2 = 0; ///< O against the row's reference run
};

struct DecodeGridRow {
  DecodeShape shape;      ///< shape.pageSize: 0 contiguous, else paged
  std::string planKernel; ///< the encoded name of the plan's first kernel
  unsigned planSplits = 1;
  double planMs = 0, planRelL2 = 0;
  /// The plan's time first and last in its row; planMs is the faster.
  double planMsFirst = 0, planMsLast = 0;
  std::vector<GridConfigTiming> configs;
  double kvBytes = 0;    ///< K and V the row reads
  double movedBytes = 0; ///< K, V, Q read and O written: the floor

  /// The fastest configuration (the plan's own counts too when faster).
  double bestMs() const;
  const GridConfigTiming *bestConfig() const;
  double planOverBest() const { return planMs / bestMs(); }
  bool outputsAgree() const;
};

struct GpuGridOptions {
  std::vector<std::string> tiles; ///< spec keys of each tile
  std::vector<unsigned> splits;   ///< part counts to try
  unsigned reps = 10;
  /// Untimed batches of reps before each contender's timing, for at least
  /// this many milliseconds (GpuDecodeRunner.cpp says why).
  unsigned warmUpMs = 2;
  size_t poolBytes = size_t(1) << 30; ///< per K and V tensor
  /// Paged rows' tables name consecutive pages of the pool instead of a
  /// shuffled draw: how much the scattered pages themselves cost.
  bool pagesInOrder = false;
};

/// The device side of the grid: the GPU's driver, a stream, event timers
/// and a K and a V pool of random bf16 that every row reads from.
class GpuDecodeBench {
public:
  static llvm::Expected<std::unique_ptr<GpuDecodeBench>>
  create(const GpuGridOptions &options);
  ~GpuDecodeBench();

  /// Times one row (its K/V must fit in the pools).
  llvm::Expected<DecodeGridRow> run(const DecodeShape &shape);
  /// The GPU's name and SM count, for the table's header.
  std::string describe() const;

  struct State;

private:
  explicit GpuDecodeBench(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// The grid's rows on the host (HostDecodeGrid.cpp): the plan only, timed by
/// the wall clock on \p threads threads (0: all), from K/V pools in memory.
class HostDecodeBench {
public:
  static std::unique_ptr<HostDecodeBench> create(const GpuGridOptions &options,
                                                 unsigned threads);
  ~HostDecodeBench();
  llvm::Expected<DecodeGridRow> run(const DecodeShape &shape);

  struct State;

private:
  explicit HostDecodeBench(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// PyTorch's figures for the same grid (bench/decode/torch_decode.py).
struct TorchPeers {
  double copyGbps = 0;
  std::string device, version;
  struct Row {
    int64_t headsQ, headsKv, batch, seqlenK;
    double ms;
    std::string backend;
    int64_t seqlenQ = 1;
    int64_t mixedMin = 0; ///< a mixed row's shortest draw; 0: uniform
  };
  std::vector<Row> rows;
  /// The row of the same problem (paged rows take the contiguous one).
  const Row *find(const DecodeShape &shape) const;
};

llvm::Expected<TorchPeers> readTorchPeers(llvm::StringRef path);

/// The one table of the issue: its header, then a line per row as each
/// row finishes.
void printGpuHeader(llvm::raw_ostream &os, const TorchPeers *peers,
                    llvm::StringRef device);
void printGpuRow(llvm::raw_ostream &os, const DecodeGridRow &r,
                 const TorchPeers *peers);
/// Writes every row, each configuration's time included, as JSON.
llvm::Error writeGpuGridJson(llvm::ArrayRef<DecodeGridRow> rows,
                             const TorchPeers *peers, llvm::StringRef device,
                             llvm::StringRef jsonPath);

} // namespace fmhajit::bench
