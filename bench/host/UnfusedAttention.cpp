//===- UnfusedAttention.cpp - The peer: attention from OpenBLAS sgemm -----===//
#include "bench/host/UnfusedAttention.h"
#include "bench/host/RowSoftmax.h"
#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cstring>
#include <thread>

using namespace fmhajit;
using namespace fmhajit::bench;

llvm::StringRef fmhajit::bench::threadingName(PeerThreading mode) {
  switch (mode) {
  case PeerThreading::Serial:
    return "serial";
  case PeerThreading::BlocksParallel:
    return "blocks";
  case PeerThreading::BlasThreaded:
    return "blas";
  }
  return "?";
}

// Runs fn(item, thread) for items [0, count) on \p threads threads, the
// last items (the heaviest under a causal mask) first.
template <typename Fn>
static void parallelFor(unsigned threads, int64_t count, Fn fn) {
  std::atomic<int64_t> next{0};
  auto worker = [&](unsigned thread) {
    for (int64_t claimed = next++; claimed < count; claimed = next++)
      fn(count - 1 - claimed, thread);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker, t);
  worker(0);
  for (std::thread &t : pool)
    t.join();
}

static void bf16ToFloat(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = uint32_t(in[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof bits);
  }
}

// Round to nearest even; the peer's outputs are finite.
static void floatToBf16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof bits);
    out[i] = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
}

UnfusedAttention::UnfusedAttention(const PeerProblem &problem, unsigned threads)
    : problem(problem), threads(std::max(1u, threads)),
      blocksPerHead((problem.seqlenQ + kBlockRows - 1) / kBlockRows),
      scores(this->threads) {
  int64_t rows = std::min(problem.seqlenQ, kBlockRows);
  for (std::vector<float> &s : scores)
    s.resize(rows * problem.seqlenK);
  if (problem.dtype == DType::F32)
    return;
  int64_t qSize = problem.batch * problem.seqlenQ * problem.heads * problem.d;
  int64_t kSize = problem.batch * problem.seqlenK * problem.heads * problem.d;
  qf.resize(qSize);
  kf.resize(kSize);
  vf.resize(kSize);
  of.resize(qSize);
}

int64_t UnfusedAttention::items() const {
  return problem.batch * problem.heads * blocksPerHead;
}

// Item w = (b * heads + h) * blocksPerHead + block.
void UnfusedAttention::attendBlock(const float *q, const float *k,
                                   const float *v, float *o, int64_t item,
                                   unsigned thread) const {
  const PeerProblem &p = problem;
  int64_t block = item % blocksPerHead, bh = item / blocksPerHead;
  int64_t b = bh / p.heads, h = bh % p.heads;
  int64_t ld = p.heads * p.d;
  int64_t row0 = block * kBlockRows,
          rows = std::min(kBlockRows, p.seqlenQ - row0);
  int64_t cols = p.causal ? std::min(p.seqlenK, row0 + rows) : p.seqlenK;
  const float *qBlock = q + (b * p.seqlenQ + row0) * ld + h * p.d;
  const float *kHead = k + b * p.seqlenK * ld + h * p.d;
  const float *vHead = v + b * p.seqlenK * ld + h * p.d;
  float *oBlock = o + (b * p.seqlenQ + row0) * ld + h * p.d;
  float *s = scores[thread].data();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, p.d, p.scale,
              qBlock, ld, kHead, ld, 0.0f, s, cols);
  softmaxRows(s, rows, cols, row0, p.causal);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, p.d, cols, 1.0f,
              s, cols, vHead, ld, 0.0f, oBlock, ld);
}

void UnfusedAttention::convertInputs(const void *q, const void *k,
                                     const void *v) {
  struct Part {
    const void *in;
    std::vector<float> *out;
  } parts[] = {{q, &qf}, {k, &kf}, {v, &vf}};
  parallelFor(threads, 3 * threads, [&](int64_t item, unsigned) {
    Part &part = parts[item % 3];
    int64_t n = part.out->size(), chunk = (n + threads - 1) / threads;
    int64_t begin = std::min(n, item / 3 * chunk),
            end = std::min(n, begin + chunk);
    bf16ToFloat(static_cast<const uint16_t *>(part.in) + begin,
                part.out->data() + begin, end - begin);
  });
}

void UnfusedAttention::run(const void *q, const void *k, const void *v, void *o,
                           PeerThreading mode) {
  bool fp32 = problem.dtype == DType::F32;
  if (!fp32)
    convertInputs(q, k, v);
  const float *qIn = fp32 ? static_cast<const float *>(q) : qf.data();
  const float *kIn = fp32 ? static_cast<const float *>(k) : kf.data();
  const float *vIn = fp32 ? static_cast<const float *>(v) : vf.data();
  float *out = fp32 ? static_cast<float *>(o) : of.data();
  bool ours = mode == PeerThreading::BlocksParallel;
  openblas_set_num_threads(mode == PeerThreading::BlasThreaded ? int(threads)
                                                               : 1);
  parallelFor(ours ? threads : 1, items(), [&](int64_t item, unsigned thread) {
    attendBlock(qIn, kIn, vIn, out, item, thread);
  });
  if (fp32)
    return;
  int64_t n = of.size(), chunk = (n + threads - 1) / threads;
  parallelFor(threads, threads, [&](int64_t t, unsigned) {
    int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    floatToBf16(of.data() + begin, static_cast<uint16_t *>(o) + begin,
                end - begin);
  });
}
