//===- BenchReport.h - Everything one bench run measured, and its goals ---===//
//
// The bench measures into a BenchReport; ReportTable.cpp prints it as
// tables and ReportJson.cpp writes it as JSON (schema in docs/bench.md).
// Goals are the targets, judged against figures of the same run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/host/CompileLatency.h"
#include "bench/host/FmaPeak.h"
#include "bench/host/ForwardCase.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit::bench {

struct BenchReport {
  bool quick = false;
  std::string cpu;         ///< LLVM's host CPU name
  unsigned allThreads = 1; ///< the "all threads" count: one per hardware thread
  std::vector<FmaPeak> peaks; ///< one per thread count
  std::vector<ForwardResult> forward;
  std::optional<CompileLatency> compile;
  std::string compileError; ///< why compile latency is missing
  double totalSeconds = 0;

  /// The peak measured with \p threads threads, or null.
  const FmaPeak *peakFor(unsigned threads) const;
  /// The peak a row is judged against: the higher of the run's peak at its
  /// thread count and the one measured in the row's own turns (either can
  /// catch the machine slow; neither can make it faster); 0 without one.
  double peakGflops(const ForwardResult &row) const;
  /// \p gflops, one of \p row's rates, as a fraction of peakGflops(row);
  /// 0 without a peak.
  double fractionOfPeak(const ForwardResult &row, double gflops) const;
};

/// One of the goals, judged on this run.
struct Goal {
  std::string name; ///< what is measured
  std::string unit; ///< "", "x", "ms", "us"
  bool atMost =
      false; ///< the value must be <= limit (else >= limit, or > for "x")
  double limit = 0;
  std::optional<double> value; ///< unset when this run did not measure it
  bool pass = false;
  std::string note; ///< why a measured value still misses, if not by value
};

/// The goals: fp32 d=128 S=2048 non-causal one-thread throughput
/// (>= 60% of the FMA peak, faster than the peer) and compile latency
/// (cold <= 150 ms, memory hit <= 5 us, disk hit <= 5 ms).
std::vector<Goal> evaluateGoals(const BenchReport &report);

// Tables (ReportTable.cpp).
void printPeaks(llvm::raw_ostream &os, const BenchReport &report);
void printForwardHeader(llvm::raw_ostream &os);
void printForwardRow(llvm::raw_ostream &os, const ForwardResult &result,
                     const BenchReport &report);
void printCompileLatency(llvm::raw_ostream &os, const BenchReport &report);
void printGoals(llvm::raw_ostream &os, const std::vector<Goal> &goals);

/// Writes \p report and \p goals as JSON to \p path (ReportJson.cpp).
llvm::Error writeJsonReport(const BenchReport &report,
                            const std::vector<Goal> &goals,
                            llvm::StringRef path);

} // namespace fmhajit::bench
