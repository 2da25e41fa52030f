//===- ThroughputBench.h - Timing fmhajit against the peer on one case ----===//
#pragma once

#include "bench/host/BenchTimer.h"
#include "bench/host/FmaPeak.h"
#include "bench/host/ForwardCase.h"
#include "compiler/KernelCache.h"

namespace fmhajit::bench {

/// Runs \p config: loads fmhajit's kernel through \p cache (untimed), makes
/// random inputs, times fmhajit and the OpenBLAS peer on them under
/// \p policy (with several threads, the peer in both threading modes, the
/// faster kept) and checks the two outputs against each other. \p peak,
/// when given, is FMA work on config.threads threads, timed in the same
/// turns. Failures are reported in ForwardResult::error, never thrown.
ForwardResult runForwardCase(const ForwardCase &config, KernelCache &cache,
                             const TimingPolicy &policy, const FmaWork *peak);

/// The relative L2 distance the two outputs of a \p dtype case may have:
/// 1e-3 for fp32, 2e-2 for bf16.
double agreementTolerance(DType dtype);

} // namespace fmhajit::bench
