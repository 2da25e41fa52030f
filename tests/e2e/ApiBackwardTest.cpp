//===- ApiBackwardTest.cpp - The backward through the public API ----------===//
//
// The forward and then the backward of one api::Problem, through the public
// API only (plan/run, planBackward/backward), on fresh inputs in the
// problem's own layouts with the outputs and gradients poisoned; dQ, dK, dV
// gathered back into packed order and compared with the float64 reference.
// Then determinism through the API (and with or without a workspace), and
// every refusal, each a Status naming what to change.
//
//===----------------------------------------------------------------------===//
#include "ApiTesting.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/harness/BackwardCase.h"
#include "runtime/harness/LaidOutTensor.h"
#include "runtime/numerics/BackwardReference.h"
#include "gtest/gtest.h"
#include <cstring>

using namespace fmhajit;
using namespace fmhajit::e2e;
using harness::LaidOutTensor;

namespace {

/// The tensors of one forward and backward call in the problem's layouts.
struct BackwardBuffers {
  BackwardBuffers(const LoweredProblem &l, uint64_t seed)
      : q(l.features.dtype, l.qShape, l.strides.q),
        k(l.features.dtype, l.kShape, l.strides.k),
        v(l.features.dtype, l.vShape, l.strides.v),
        o(l.features.outType(), l.oShape, l.strides.o),
        dO(l.features.outType(), l.oShape, l.strides.o),
        dQ(l.features.outType(), l.qShape, l.strides.q),
        dK(l.features.outType(), l.kShape, l.strides.k),
        dV(l.features.outType(), l.vShape, l.strides.v),
        lse(size_t(numElements(l.problem.lseShape())), NAN) {
    q.data.fillNormal(seed);
    k.data.fillNormal(seed + 1);
    v.data.fillNormal(seed + 2);
    dO.data.fillNormal(seed + 3);
    o.data.poison();
  }
  void poisonGradients() {
    dQ.data.poison();
    dK.data.poison();
    dV.data.poison();
  }
  api::Tensors forward() {
    api::Tensors t;
    t.q = q.data.data(), t.k = k.data.data(), t.v = v.data.data();
    t.o = o.data.data(), t.lse = lse.data();
    return t;
  }
  api::BackwardTensors backward() {
    api::BackwardTensors t;
    t.q = q.data.data(), t.k = k.data.data(), t.v = v.data.data();
    t.o = o.data.data(), t.lse = lse.data(), t.dO = dO.data.data();
    t.dQ = dQ.data.data(), t.dK = dK.data.data(), t.dV = dV.data.data();
    return t;
  }

  LaidOutTensor q, k, v, o, dO, dQ, dK, dV;
  std::vector<float> lse;
};

api::Problem problemOf(api::DType dtype, int64_t d, api::Mask mask) {
  api::Problem p;
  p.dtype = dtype;
  p.headDim = d;
  p.mask = mask;
  p.wantLse = true;
  return p;
}

/// Forward, then backward, through the API (both with \p dropout; the
/// backward on \p threads host threads, 0: all); the reference's verdict.
void expectGradientsMatch(const api::Problem &problem, uint64_t seed = 1,
                          api::Dropout dropout = {}, unsigned threads = 0) {
  auto l = lowerProblem(problem, "host");
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  l->problem.dropout = {dropout.p, dropout.seed, dropout.offset};
  BackwardBuffers buf(*l, seed);
  std::optional<api::Plan> forward = planChecked(problem);
  ASSERT_TRUE(forward);
  api::Tensors forwardTensors = buf.forward();
  forwardTensors.dropout = dropout;
  ASSERT_TRUE(api::run(*forward, forwardTensors).ok());
  api::Options options;
  options.cacheDir = apiCacheDir();
  options.threads = threads;
  api::Result<api::Plan> plan = api::planBackward(problem, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_EQ(plan->steps().size(), 2u);
  EXPECT_EQ(plan->steps()[0].role, "bwd_dot_do_o");
  EXPECT_EQ(plan->steps()[1].role, "bwd_dq_dk_dv");
  buf.poisonGradients();
  api::BackwardTensors backwardTensors = buf.backward();
  backwardTensors.dropout = dropout;
  api::Status status = api::backward(*plan, backwardTensors);
  ASSERT_TRUE(status.ok()) << status.toString();
  ReferenceGrads ref =
      referenceBackward(l->features, l->problem, buf.q.packed(), buf.k.packed(),
                        buf.v.packed(), buf.dO.packed());
  Tolerance tol =
      backwardToleranceFor(l->features.dtype, l->features.outType());
  for (auto [name, got, want] : {std::tuple{"dq", buf.dQ.packed(), &ref.dq},
                                 std::tuple{"dk", buf.dK.packed(), &ref.dk},
                                 std::tuple{"dv", buf.dV.packed(), &ref.dv}}) {
    CompareResult r = compareOutputs(got, *want, {}, {}, tol);
    EXPECT_TRUE(r.pass) << name << ": " << r.summary();
  }
}

TEST(ApiBackward, GqaCausalSoftcapAlibi) {
  api::Problem p = problemOf(api::DType::F32, 64, api::Mask::Causal);
  p.batch = 2, p.headsQ = 4, p.headsKv = 2, p.seqlenQ = 97, p.seqlenK = 130;
  p.softcap = 4.0f;
  p.alibi = true;
  expectGradientsMatch(p);
}

/// Whether the host plan of \p p on \p threads threads runs head items.
bool plansHeadItems(const api::Problem &p, unsigned threads) {
  api::Options options;
  options.cacheDir = apiCacheDir();
  options.threads = threads;
  options.load = false;
  api::Result<api::Plan> plan = api::planBackward(p, options);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  return plan.ok() && plan->steps()[1].kernel.find("_hi_") != std::string::npos;
}

// Both host schedules (runtime/api/BackwardSchedule.h): one thread takes
// head items, eight threads for four (sequence, K/V head) pairs key and
// query items. bf16, so that head items sum dQ in the workspace.
TEST(ApiBackward, BothHostSchedules) {
  api::Problem p = problemOf(api::DType::BF16, 64, api::Mask::Causal);
  p.batch = 2, p.headsQ = 4, p.headsKv = 2, p.seqlenQ = 97, p.seqlenK = 130;
  p.softcap = 4.0f;
  p.alibi = true;
  for (unsigned threads : {1u, 8u}) {
    SCOPED_TRACE(threads);
    EXPECT_EQ(plansHeadItems(p, threads), threads == 1);
    expectGradientsMatch(p, 21, {}, threads);
  }
}

// Q, K, V, O (and so dQ, dK, dV, dO) laid out BHSD.
TEST(ApiBackward, BhsdLayouts) {
  api::Problem p =
      problemOf(api::DType::BF16, 128, api::Mask::CausalBottomRight);
  p.headsQ = 2, p.headsKv = 1, p.seqlenQ = 150, p.seqlenK = 90;
  p.q = p.k = p.v = p.o = api::TensorLayout::bhsd();
  expectGradientsMatch(p, 3);
}

TEST(ApiBackward, VarlenWindow) {
  api::Problem p = problemOf(api::DType::F16, 32, api::Mask::Window);
  p.headsQ = 3, p.headsKv = 1;
  p.cuSeqlensQ = {0, 40, 41, 141};
  p.cuSeqlensK = {0, 70, 75, 175};
  p.batch = 3;
  p.windowLeft = 30, p.windowRight = 4;
  expectGradientsMatch(p, 5);
}

// Dropout (docs/families.md#dropout): the forward's keep-mask regenerated
// by the backward. p = 0.3 drops about a third of P, so a mask that
// differs from the reference's (another counter, seed or word) moves dV
// and dQ far past the tolerance.
TEST(ApiBackward, DropoutGqaCausalSoftcap) {
  api::Problem p = problemOf(api::DType::F32, 64, api::Mask::Causal);
  p.batch = 2, p.headsQ = 4, p.headsKv = 2, p.seqlenQ = 97, p.seqlenK = 130;
  p.softcap = 4.0f;
  p.dropout = true;
  expectGradientsMatch(p, 11, {0.3f, 0x1234567890abcdefull, 9});
}

TEST(ApiBackward, DropoutVarlenBf16) {
  api::Problem p = problemOf(api::DType::BF16, 128, api::Mask::None);
  p.headsQ = 2, p.headsKv = 1;
  p.cuSeqlensQ = {0, 40, 41, 141};
  p.cuSeqlensK = {0, 70, 75, 175};
  p.batch = 3;
  p.dropout = true;
  expectGradientsMatch(p, 13, {0.1f, 42, 0});
}

// p = 0 keeps every probability: the same gradients as no dropout.
TEST(ApiBackward, DropoutWithZeroProbability) {
  api::Problem p = problemOf(api::DType::F16, 64, api::Mask::Window);
  p.headsQ = 2, p.seqlenQ = 50, p.seqlenK = 80;
  p.windowLeft = 10, p.windowRight = 3;
  p.dropout = true;
  expectGradientsMatch(p, 17, {0.0f, 5, 5});
}

/// Appends to \p runs the gradients' bytes of three backward calls of
/// \p p's plan on \p threads threads: two without a workspace, one with.
void runAllWays(const api::Problem &p, unsigned threads, BackwardBuffers &buf,
                std::vector<std::vector<uint8_t>> &runs) {
  api::Options options;
  options.cacheDir = apiCacheDir();
  options.threads = threads;
  api::Result<api::Plan> plan = api::planBackward(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  std::vector<uint8_t> workspace(size_t(plan->workspaceBytes()));
  for (void *space :
       {(void *)nullptr, (void *)nullptr, (void *)workspace.data()}) {
    buf.poisonGradients();
    api::BackwardTensors t = buf.backward();
    t.workspace = space;
    ASSERT_TRUE(api::backward(*plan, t).ok());
    std::vector<uint8_t> bytes;
    for (LaidOutTensor *g : {&buf.dQ, &buf.dK, &buf.dV}) {
      auto *data = static_cast<const uint8_t *>(g->data.data());
      bytes.insert(bytes.end(), data, data + g->data.sizeInBytes());
    }
    runs.push_back(std::move(bytes));
  }
}

// Twice on the same inputs, and once with a workspace of the caller's:
// the same bits. On three threads (key and query items) and on one (head
// items, whose dQ sums are in the workspace too); without a window the
// two schedules sum in one order, so they agree as well.
TEST(ApiBackward, IsDeterministic) {
  api::Problem p = problemOf(api::DType::BF16, 64, api::Mask::Causal);
  p.batch = 2, p.headsQ = 4, p.headsKv = 1, p.seqlenQ = 200;
  auto l = lowerProblem(p, "host");
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  BackwardBuffers buf(*l, 9);
  std::optional<api::Plan> forward = planChecked(p);
  ASSERT_TRUE(forward);
  ASSERT_TRUE(api::run(*forward, buf.forward()).ok());
  std::vector<std::vector<uint8_t>> runs;
  for (unsigned threads : {3u, 1u}) {
    EXPECT_EQ(plansHeadItems(p, threads), threads == 1);
    runAllWays(p, threads, buf, runs);
  }
  ASSERT_EQ(runs.size(), 6u);
  for (size_t i = 1; i < runs.size(); ++i)
    EXPECT_EQ(runs[0], runs[i]) << "run " << i;
}

void expectBackwardRefused(const api::Problem &p, const std::string &says,
                           api::Options options = {}) {
  options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::planBackward(p, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), api::StatusCode::InvalidArgument)
      << plan.status().toString();
  EXPECT_NE(plan.status().message().find(says), std::string::npos)
      << plan.status().message();
}

TEST(ApiBackward, RefusesWhatItCannotRun) {
  api::Problem p = problemOf(api::DType::BF16, 64, api::Mask::None);
  p.seqlenQ = 16;
  api::Problem amd = p;
  amd.device = api::Device::Hip;
  api::Options gfx;
  gfx.target = "gfx942";
  gfx.load = false;
  expectBackwardRefused(amd, "the backward runs on the host and CUDA", gfx);
  api::Options splits;
  splits.numSplits = 2;
  expectBackwardRefused(p, "Options::numSplits", splits);
  api::Options other;
  other.kernel = "family=bwd_dq_dk_dv,dtype=bf16,d=64,mask=causal";
  expectBackwardRefused(p, "does not compute this backward", other);
  api::Problem d72 = p;
  d72.headDim = 72;
  expectBackwardRefused(d72, "72");
}

TEST(ApiBackward, PlansRunOnlyThroughTheirOwnEntry) {
  api::Problem p = problemOf(api::DType::F32, 32, api::Mask::None);
  p.seqlenQ = 16;
  api::Options options;
  options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::planBackward(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  std::optional<api::Plan> forward = planChecked(p);
  ASSERT_TRUE(forward);
  api::Tensors tensors;
  EXPECT_NE(api::run(*plan, tensors).message().find("api::backward"),
            std::string::npos);
  api::BackwardTensors none;
  EXPECT_NE(api::backward(*forward, none).message().find("planBackward"),
            std::string::npos);
  EXPECT_NE(api::backward(*plan, none).message().find("dO"), std::string::npos);
  EXPECT_NE(api::backward(api::Plan(), none).message().find("empty"),
            std::string::npos);
  options.load = false;
  api::Result<api::Plan> unloaded = api::planBackward(p, options);
  ASSERT_TRUE(unloaded.ok());
  EXPECT_NE(api::backward(*unloaded, none).message().find("Options::load"),
            std::string::npos);
  EXPECT_EQ(unloaded->workspaceBytes(), 4 * 16);
}

// Planned for an H100 this machine may lack: by default three launches and
// a workspace holding D and the fp32 dQ sums; deterministic, two and D only.
TEST(ApiBackward, PlansTheGpuSplitWithoutAGpu) {
  api::Problem p = problemOf(api::DType::BF16, 128, api::Mask::Causal);
  p.device = api::Device::Cuda;
  p.batch = 2, p.headsQ = 4, p.headsKv = 2, p.seqlenQ = 100;
  api::Options options;
  options.target = "sm_90a";
  options.load = false;
  options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::planBackward(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_EQ(plan->steps().size(), 3u);
  EXPECT_EQ(plan->steps()[2].role, "bwd_convert_dq");
  int64_t dsum = 4 * 2 * 4 * 100, dq = 4 * 2 * 100 * 4 * 128;
  EXPECT_EQ(plan->workspaceBytes(), (dsum + 255) / 256 * 256 + dq);
  options.deterministic = true;
  api::Result<api::Plan> det = api::planBackward(p, options);
  ASSERT_TRUE(det.ok()) << det.status().toString();
  ASSERT_EQ(det->steps().size(), 2u);
  EXPECT_NE(det->steps()[1].kernel.find("_det_"), std::string::npos)
      << det->steps()[1].kernel;
  EXPECT_EQ(det->workspaceBytes(), (dsum + 255) / 256 * 256);
}

} // namespace
