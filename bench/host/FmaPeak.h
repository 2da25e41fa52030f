//===- FmaPeak.h - The FMA limit of this machine, measured in this run ----===//
//
// The peak every throughput figure is a fraction of: independent FMA
// chains (FmaChains.h) at the widest width the CPU has, on one thread or on
// several at once (one per hardware thread, all released together).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace fmhajit::bench {

/// One measured FMA peak.
struct FmaPeak {
  unsigned threads = 1;
  unsigned widthBits = 0;    ///< 512 (AVX-512F) or 256 (AVX2 + FMA); 0: none
  unsigned accumulators = 0; ///< independent chains per thread
  double gflops = 0;         ///< best of the repeats, all threads together
  unsigned repeats = 0;
};

/// The widest FMA width this CPU runs: 512, 256, or 0 without FMA.
unsigned fmaWidthBits();

/// A fixed amount of FMA-chain work on \p threads threads at once, sized
/// to take about \p seconds: run() it in turns with a kernel (BenchTimer's
/// timeInterleaved) and the kernel's fraction of peak compares two
/// functions timed under the same conditions.
class FmaWork {
public:
  /// Needs fmaWidthBits() != 0.
  FmaWork(unsigned threads, double seconds);
  /// Runs the work once on fresh threads, all released together.
  void run() const;
  /// The work's rate when one run takes \p seconds.
  double gflops(double seconds) const { return flops / seconds / 1e9; }

private:
  unsigned threads, widthBits;
  uint64_t iterations;
  double flops;
};

/// Measures the peak of \p threads threads running FMA chains concurrently,
/// each for about \p seconds, and keeps the best of \p repeats (anything
/// else on the machine can only lower a peak).
FmaPeak measureFmaPeak(unsigned threads, double seconds, unsigned repeats);

} // namespace fmhajit::bench
