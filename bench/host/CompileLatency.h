//===- CompileLatency.h - How long a spec takes to become callable --------===//
//
// Three figures, each against the goal:
//  - cold: spec text -> validateSpec -> KernelCache::create over an empty
//    directory -> HostKernel::load of a spec this process never saw (code
//    generation, the disk write, JIT linking), median over several specs.
//    The first cold load also creates the process's JIT.
//  - memory hit: the same spec loaded again in-process (validateSpec +
//    HostKernel::load), median over many.
//  - disk hit: a fresh `fmhajit run SPEC --seqlen-q 1 --iters 1` process
//    pointed at the warmed directory, its own `load X ms (disk)` figure,
//    median over several processes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit::bench {

struct CompileLatencyOptions {
  /// Specs never loaded by this process; the first is reused for the hits.
  std::vector<std::string> specs;
  unsigned memoryHitRuns = 2000;
  unsigned diskHitRuns = 5;
  std::string fmhajitBinary; ///< the `fmhajit` CLI
};

struct CompileLatency {
  std::vector<std::string> specs;
  std::vector<double> coldMs; ///< one per spec, in order
  double coldMedianMs = 0;
  unsigned memoryHitRuns = 0;
  double memoryHitMedianUs = 0;
  double memoryHitValidateUs = 0; ///< median of the validateSpec part
  double memoryHitLoadUs = 0;     ///< median of the HostKernel::load part
  std::string diskSpec;
  std::vector<double> diskHitMs;     ///< each process's own load figure
  std::vector<double> diskProcessMs; ///< each process, start to exit
  double diskHitMedianMs = 0;
};

/// Measures all three in a fresh temporary cache directory, removed after.
llvm::Expected<CompileLatency>
measureCompileLatency(const CompileLatencyOptions &options);

} // namespace fmhajit::bench
