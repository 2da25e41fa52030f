//===- FmhajitRunner.h - fmhajit's side of a throughput case --------------===//
#pragma once

#include "bench/host/ForwardCase.h"
#include "compiler/KernelCache.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit::bench {

/// The spec text of a case's kernel: `family=fwd,dtype=...,d=...[,mask=causal]`
/// for this host, every other key at its default.
std::string forwardSpecText(DType dtype, unsigned d, bool causal);

/// A loaded fmhajit kernel and its run-time problem, ready to time: all
/// compiling is done by create(), so run() is the kernel alone.
class FmhajitRunner {
public:
  /// Loads the kernel of \p config through \p cache.
  static llvm::Expected<FmhajitRunner> create(const ForwardCase &config,
                                              KernelCache &cache);

  /// The kernel's encoded name.
  const std::string &kernelName() const { return name; }

  /// O = attention(Q, K, V): packed tensors of the case's dtype.
  void run(const void *q, const void *k, const void *v, void *o,
           HostExecutor &executor) const;

private:
  FmhajitRunner(HostKernel kernel, AttentionProblem problem, std::string name)
      : kernel(std::move(kernel)), problem(std::move(problem)),
        name(std::move(name)) {}

  HostKernel kernel;
  AttentionProblem problem;
  std::string name;
};

} // namespace fmhajit::bench
