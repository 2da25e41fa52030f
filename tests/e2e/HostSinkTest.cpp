//===- HostSinkTest.cpp - Attention sinks vs the float64 reference --------===//
//
// sink=1 through the public API on the host: each case plans a problem with
// Problem::sink (pinning a kernel where the case needs a form the
// dispatcher would not pick), runs it on seeded inputs and seeded sinks
// near a row's log-sum-exp with poisoned outputs, and compares O and LSE
// with the float64 reference, which puts the sink in the softmax's max and
// sum. A kernel that dropped the sink, added it twice (once per split-KV
// part) or read another head's would fail the compare: the sinks carry a
// large share of every row's mass. Rows that see no key must give O = 0
// and LSE = sink_h.
//
//===----------------------------------------------------------------------===//
#include "ApiCacheTesting.h"
#include "ApiTesting.h"
#include "gtest/gtest.h"
#include <cmath>
#include <limits>
#include <vector>

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;
using api::StatusCode;

namespace {

Problem sinkProblem(int64_t batch, int64_t headsQ, int64_t headsKv, int64_t sq,
                    int64_t sk, int64_t d, DType dtype) {
  Problem p = denseProblem(batch, headsQ, headsKv, sq, sk, d, dtype);
  p.sink = true;
  p.wantLse = true;
  return p;
}

struct SinkCase {
  std::string label;
  Problem problem;
  std::string kernel; ///< Options::kernel; empty: the dispatcher's
  unsigned numSplits = 0;
};

void PrintTo(const SinkCase &c, std::ostream *os) { *os << c.label; }

class HostSinkMatchesReference : public ::testing::TestWithParam<SinkCase> {};

TEST_P(HostSinkMatchesReference, PlanAndRun) {
  api::Options options;
  options.threads = 2;
  options.kernel = GetParam().kernel;
  options.numSplits = GetParam().numSplits;
  ApiCheck check = checkApi(GetParam().problem, options, 7);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_NE(check.plan.steps()[0].kernel.find("_sk"), std::string::npos)
      << check.plan.describe();
}

std::vector<SinkCase> denseCases() {
  Problem gqa = sinkProblem(2, 8, 2, 45, 70, 64, DType::F32);
  gqa.mask = Mask::Causal;
  Problem window = sinkProblem(1, 4, 4, 60, 80, 64, DType::BF16);
  window.mask = Mask::Window;
  window.windowLeft = 8, window.windowRight = 0;
  // Bottom-right causal with Sk < Sq: the first 15 rows see no key.
  Problem empty = sinkProblem(2, 2, 2, 40, 25, 64, DType::F32);
  empty.mask = Mask::CausalBottomRight;
  Problem scores = sinkProblem(1, 4, 4, 30, 50, 64, DType::F32);
  scores.softcap = 30.0f;
  scores.alibi = true;
  Problem half = sinkProblem(1, 2, 2, 70, 97, 128, DType::F16);
  half.wantLse = false;
  Problem varlen = sinkProblem(3, 4, 2, 0, 0, 64, DType::BF16);
  varlen.cuSeqlensQ = {0, 5, 77, 78};
  varlen.cuSeqlensK = {0, 100, 180, 181};
  varlen.mask = Mask::CausalBottomRight;
  return {{"GqaCausal", gqa},         {"WindowBf16", window},
          {"RowsWithoutKeys", empty}, {"SoftcapAlibi", scores},
          {"Fp16NoLse", half},        {"VarlenGqa", varlen}};
}
INSTANTIATE_TEST_SUITE_P(Dense, HostSinkMatchesReference,
                         ::testing::ValuesIn(denseCases()),
                         [](const auto &info) { return info.param.label; });

// Split-KV: the sink joins part 0's partials only, so the combine counts it
// once whatever the number of parts, including parts with no keys (7 parts
// of 3 key tiles) and one part (no combine).
std::vector<SinkCase> splitCases() {
  Problem decode = sinkProblem(1, 4, 2, 3, 500, 64, DType::F32);
  Problem causal = sinkProblem(2, 4, 4, 20, 170, 64, DType::F32);
  causal.mask = Mask::CausalBottomRight;
  const char *split = "family=fwd_splitkv,dtype=fp32,d=64,lse=1,sink=1";
  const char *splitCausal =
      "family=fwd_splitkv,dtype=fp32,d=64,mask=causal_br,lse=1,sink=1";
  return {{"Decode3Parts", decode, split, 3},
          {"Decode1Part", decode, split, 1},
          {"CausalBr7Parts", causal, splitCausal, 7}};
}
INSTANTIATE_TEST_SUITE_P(SplitKv, HostSinkMatchesReference,
                         ::testing::ValuesIn(splitCases()),
                         [](const auto &info) { return info.param.label; });

// pack_gqa: a tile's rows belong to several heads, each with its own sink;
// paged K/V: the sink is the same recipe's, through a block table.
std::vector<SinkCase> packedAndPagedCases() {
  Problem packed = sinkProblem(1, 8, 2, 30, 90, 64, DType::F32);
  packed.mask = Mask::CausalBottomRight;
  Problem paged = pagedProblem(8, 2, 3, 64, DType::BF16, {3, 100, 257}, 16);
  paged.sink = true;
  paged.wantLse = true;
  paged.mask = Mask::CausalBottomRight;
  return {{"PackGqa", packed,
           "family=fwd,dtype=fp32,d=64,mask=causal_br,lse=1,sink=1,"
           "pack_gqa=1"},
          {"Paged", paged}};
}
INSTANTIATE_TEST_SUITE_P(PackedAndPaged, HostSinkMatchesReference,
                         ::testing::ValuesIn(packedAndPagedCases()),
                         [](const auto &info) { return info.param.label; });

// Sinks given in the Problem: -inf (a head without one) must equal no sink,
// and a sink far above every score must not overflow: O = 0, LSE = sink.
TEST(HostSink, ProblemSinksIncludingInfinityAndHuge) {
  Problem p = sinkProblem(1, 3, 3, 20, 33, 64, DType::F32);
  p.mask = Mask::Causal;
  p.sinks = {-std::numeric_limits<float>::infinity(), 80.0f, 1.5f};
  api::Options options;
  options.threads = 2;
  checkApi(p, options, 11);
}

// On the host a plan with Problem::sinks runs without Tensors::sinks; given,
// Tensors::sinks wins. Without either, run() says what to set.
TEST(HostSink, TensorsSinksOverrideTheProblems) {
  Problem p = sinkProblem(1, 2, 2, 4, 6, 32, DType::F32);
  std::vector<float> q(4 * 2 * 32, 0.25f), k(6 * 2 * 32, 0.5f),
      v(6 * 2 * 32, 1.0f), o(q.size()), lse(2 * 4);
  api::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.data()};
  auto lseWith = [&](const Problem &problem, const float *sinks) {
    std::optional<api::Plan> plan = planChecked(problem);
    if (!plan)
      return std::vector<float>();
    t.sinks = sinks;
    api::Status status = api::run(*plan, t);
    EXPECT_TRUE(status.ok()) << status.toString();
    return lse;
  };
  p.sinks = {0.0f, 2.0f};
  std::vector<float> fromProblem = lseWith(p, nullptr);
  std::vector<float> same = {0.0f, 2.0f}, other = {5.0f, -1.0f};
  EXPECT_EQ(lseWith(p, same.data()), fromProblem);
  std::vector<float> overridden = lseWith(p, other.data());
  // Every key has the same score s, so LSE = log(e^sink + 6 e^s).
  double s = 0.25 * 0.5 * 32 / std::sqrt(32.0);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      double expect = std::log(std::exp(double(other[h])) + 6 * std::exp(s));
      EXPECT_NEAR(overridden[h * 4 + i], expect, 1e-5) << h << " " << i;
      double fromP = std::log(std::exp(double(p.sinks[h])) + 6 * std::exp(s));
      EXPECT_NEAR(fromProblem[h * 4 + i], fromP, 1e-5) << h << " " << i;
    }

  Problem atRunTime = p;
  atRunTime.sinks.clear();
  std::optional<api::Plan> plan = planChecked(atRunTime);
  ASSERT_TRUE(plan);
  t.sinks = nullptr;
  api::Status status = api::run(*plan, t);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("Tensors::sinks"), std::string::npos)
      << status.toString();
}

struct RefusedSinks {
  std::string label;
  void (*edit)(Problem &);
  std::string says;
};

class HostSinkRefused : public ::testing::TestWithParam<RefusedSinks> {};

TEST_P(HostSinkRefused, PlanSaysWhy) {
  Problem p = sinkProblem(1, 2, 2, 8, 8, 64, DType::F32);
  GetParam().edit(p);
  expectPlanRefused(p, StatusCode::InvalidArgument, GetParam().says);
}

INSTANTIATE_TEST_SUITE_P(
    Problems, HostSinkRefused,
    ::testing::Values(
        RefusedSinks{"SinksWithoutSink",
                     [](Problem &p) {
                       p.sink = false;
                       p.sinks = {1, 2};
                     },
                     "sinks are given but sink is false"},
        RefusedSinks{"OneSinkForTwoHeads", [](Problem &p) { p.sinks = {1}; },
                     "got 1 sinks for 2 query heads"},
        RefusedSinks{"NanSink",
                     [](Problem &p) {
                       p.sinks = {1, std::numeric_limits<float>::quiet_NaN()};
                     },
                     "sinks must be finite, or -inf"}),
    [](const auto &info) { return info.param.label; });

} // namespace
