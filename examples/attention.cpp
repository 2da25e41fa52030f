//===- attention.cpp - Plan and run attention through the public API ------===//
//
// A causal grouped-query attention (8 query heads sharing 2 K/V heads) on
// the host, with every tensor in BHSD layout ([batch, heads, seq, dim]),
// planned and run through fmhajit/Fmhajit.h, then checked against the
// float64 reference (runtime/numerics/Reference.h, which reads packed BSHD).
// docs/api.md walks through it. Exit code 0 when the check passes.
//
//===----------------------------------------------------------------------===//
#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/Reference.h"
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace api = fmhajit::api;

// [B, H, S, D] (BHSD) -> [B, S, H, D] (BSHD), the reference's layout.
static std::vector<float> toBshd(const std::vector<float> &bhsd, int64_t b,
                                 int64_t h, int64_t s, int64_t d) {
  std::vector<float> out(bhsd.size());
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t ih = 0; ih < h; ++ih)
      for (int64_t is = 0; is < s; ++is)
        for (int64_t id = 0; id < d; ++id)
          out[((ib * s + is) * h + ih) * d + id] =
              bhsd[((ib * h + ih) * s + is) * d + id];
  return out;
}

static std::vector<float> randomTensor(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> t(n);
  for (float &x : t)
    x = normal(rng);
  return t;
}

int main() {
  // 1. Describe the problem: shapes, dtype, layout, mask.
  api::Problem p;
  p.batch = 2;
  p.headsQ = 8;
  p.headsKv = 2; // GQA: query heads 0-3 read K/V head 0, 4-7 head 1
  p.seqlenQ = p.seqlenK = 100;
  p.headDim = 64;
  p.dtype = api::DType::F32;
  p.mask = api::Mask::Causal;
  p.q = p.k = p.v = p.o = api::TensorLayout::bhsd();

  // 2. Plan once: fmhajit picks, compiles (or finds in its cache) and loads
  //    the kernel.
  api::Options options;
  options.threads = 2;
  api::Result<api::Plan> plan = api::plan(p, options);
  if (!plan) {
    std::fprintf(stderr, "plan failed: %s\n", plan.status().toString().c_str());
    return 1;
  }
  std::printf("%s", plan->describe().c_str());

  // 3. Run on our own memory, as many times as we like.
  int64_t d = p.headDim, sq = p.seqlenQ, sk = p.seqlenK;
  std::vector<float> q = randomTensor(size_t(p.batch * p.headsQ * sq * d), 1);
  std::vector<float> k = randomTensor(size_t(p.batch * p.headsKv * sk * d), 2);
  std::vector<float> v = randomTensor(size_t(p.batch * p.headsKv * sk * d), 3);
  std::vector<float> o(q.size());
  api::Status status =
      api::run(*plan, {q.data(), k.data(), v.data(), o.data()});
  if (!status.ok()) {
    std::fprintf(stderr, "run failed: %s\n", status.toString().c_str());
    return 1;
  }

  // 4. Check against the float64 reference.
  fmhajit::KernelSpec spec;
  spec.dtype = fmhajit::DType::F32;
  spec.d = unsigned(d);
  spec.mask = fmhajit::Mask::Causal;
  fmhajit::AttentionProblem ref = fmhajit::AttentionProblem::forSpec(spec);
  ref.batch = p.batch, ref.headsQ = p.headsQ, ref.headsKv = p.headsKv;
  ref.seqlenQ = sq, ref.seqlenK = sk;
  fmhajit::ReferenceOutput expected =
      fmhajit::referenceForward(spec, ref, toBshd(q, p.batch, p.headsQ, sq, d),
                                toBshd(k, p.batch, p.headsKv, sk, d),
                                toBshd(v, p.batch, p.headsKv, sk, d));
  std::vector<float> got = toBshd(o, p.batch, p.headsQ, sq, d);
  double maxError = 0;
  for (size_t i = 0; i < got.size(); ++i)
    maxError = std::max(maxError, std::fabs(got[i] - expected.o[i]));
  bool pass = maxError < 1e-4;
  std::printf("check      max |o - reference| = %.3g: %s\n", maxError,
              pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
