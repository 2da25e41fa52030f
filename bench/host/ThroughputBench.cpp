//===- ThroughputBench.cpp - Timing fmhajit against the peer on one case --===//
#include "bench/host/ThroughputBench.h"
#include "bench/host/FmhajitRunner.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>
#include <functional>

using namespace fmhajit;
using namespace fmhajit::bench;

double fmhajit::bench::agreementTolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-3 : 2e-2;
}

static std::string errorText(llvm::Error err) {
  return llvm::join(takeProblems(std::move(err)).messages, "; ");
}

static double relativeL2(const HostTensor &o, const HostTensor &ref) {
  std::vector<float> a = o.toFloat(), b = ref.toFloat();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = double(a[i]) - double(b[i]);
    diff += d * d;
    norm += double(b[i]) * double(b[i]);
  }
  double rel = std::sqrt(diff / norm);
  return std::isfinite(rel) ? rel : INFINITY; // NaN left in o counts as failing
}

static PeerProblem peerProblem(const ForwardCase &c) {
  PeerProblem problem;
  problem.batch = c.batch;
  problem.heads = c.heads;
  problem.seqlenQ = problem.seqlenK = c.seqlen;
  problem.d = c.d;
  problem.causal = c.causal;
  problem.scale = float(1.0 / std::sqrt(double(c.d)));
  problem.dtype = c.dtype;
  return problem;
}

ForwardResult fmhajit::bench::runForwardCase(const ForwardCase &c,
                                             KernelCache &cache,
                                             const TimingPolicy &policy,
                                             const FmaWork *peak) {
  ForwardResult result;
  result.config = c;
  result.tolerance = agreementTolerance(c.dtype);
  auto runner = FmhajitRunner::create(c, cache);
  if (!runner) {
    result.error = errorText(runner.takeError());
    return result;
  }
  result.kernel = runner->kernelName();
  size_t qSize = c.batch * c.seqlen * c.heads * c.d;
  HostTensor q(c.dtype, qSize), k(c.dtype, qSize), v(c.dtype, qSize);
  HostTensor o(c.dtype, qSize), peerO(c.dtype, qSize);
  q.fillNormal(1);
  k.fillNormal(2);
  v.fillNormal(3);
  o.poison();
  peerO.poison();
  HostExecutor executor(c.threads);
  UnfusedAttention peer(peerProblem(c), c.threads);
  std::vector<PeerThreading> modes = {PeerThreading::Serial};
  if (c.threads > 1)
    modes = {PeerThreading::BlocksParallel, PeerThreading::BlasThreaded};
  // fmhajit, each peer mode and the FMA peak in turns, so the machine's
  // drift falls on all.
  std::vector<std::function<void()>> contenders = {
      [&] { runner->run(q.data(), k.data(), v.data(), o.data(), executor); }};
  for (PeerThreading mode : modes)
    contenders.push_back([&, mode] {
      peer.run(q.data(), k.data(), v.data(), peerO.data(), mode);
    });
  if (peak)
    contenders.push_back([&] { peak->run(); });
  std::vector<Timing> times = timeInterleaved(contenders, policy);
  if (peak)
    result.peakGflops = peak->gflops(times.back().bestSeconds);
  result.fmhajit = times[0];
  for (size_t i = 0; i < modes.size(); ++i) { // keep the faster peer mode
    const Timing &t = times[1 + i];
    if (!result.peer.runs || t.bestSeconds < result.peer.bestSeconds) {
      result.peerOtherSeconds = result.peer.bestSeconds;
      result.peer = t;
      result.peerMode = modes[i];
    } else {
      result.peerOtherSeconds = t.bestSeconds;
    }
  }
  result.relL2 = relativeL2(o, peerO);
  result.checked = result.relL2 <= result.tolerance;
  return result;
}
