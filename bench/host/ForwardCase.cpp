//===- ForwardCase.cpp - One forward-throughput case and its outcome ------===//
#include "bench/host/ForwardCase.h"
#include <algorithm>

using namespace fmhajit;
using namespace fmhajit::bench;

double ForwardCase::flops() const {
  double s = double(seqlen);
  return 4.0 * batch * heads * s * s * d * (causal ? 0.5 : 1.0);
}

static ForwardCase makeCase(DType dtype, unsigned d, int64_t seqlen,
                            bool causal, unsigned threads) {
  ForwardCase c;
  c.dtype = dtype;
  c.d = d;
  c.seqlen = seqlen;
  c.causal = causal;
  c.threads = threads;
  c.heads = std::max<int64_t>(1, kTokensPerCase / seqlen);
  return c;
}

std::vector<ForwardCase> fmhajit::bench::forwardCases(bool quick,
                                                      unsigned allThreads) {
  if (quick)
    return {makeCase(DType::F32, 64, 512, false, 1),
            makeCase(DType::BF16, 64, 512, true, allThreads)};
  std::vector<ForwardCase> cases;
  for (DType dtype : {DType::F32, DType::BF16})
    for (unsigned d : {64u, 128u})
      for (int64_t seqlen : {512, 2048, 8192})
        for (bool causal : {false, true})
          for (unsigned threads : {1u, allThreads}) {
            cases.push_back(makeCase(dtype, d, seqlen, causal, threads));
            if (allThreads == 1)
              break;
          }
  return cases;
}

double ForwardResult::fmhajitGflops() const {
  return fmhajit.bestSeconds > 0 ? config.flops() / fmhajit.bestSeconds / 1e9
                                 : 0;
}

double ForwardResult::peerGflops() const {
  return peer.bestSeconds > 0 ? config.flops() / peer.bestSeconds / 1e9 : 0;
}

double ForwardResult::speedup() const {
  return fmhajit.bestSeconds > 0 ? peer.bestSeconds / fmhajit.bestSeconds : 0;
}
