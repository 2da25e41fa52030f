//===- ApiMixedLengthsTest.cpp - Batches of mixed key lengths, end to end -===//
//
// Decode over sequences whose caches differ in length (paged seqlensK, or
// varlen cuSeqlensK): plan() gives them a split schedule (SplitSchedule.h),
// parts in proportion to each sequence's keys in one list, and the combine
// merges a different number of parts per sequence. Checked through the
// public API only against the float64 reference with poisoned outputs:
// every mask, soft-cap, ALiBi, sinks, LSE, GQA 1 to 16, d = 64/128/256,
// sequences of one key, run-time lengths other than the planned ones, a
// pinned kernel, and the cases that must not get a schedule.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;

namespace {

bool hasSchedule(const api::Plan &plan) {
  for (const std::string &d : plan.decisions())
    if (d.find("split schedule") != std::string::npos)
      return true;
  return false;
}

/// The plan cut the keys with a schedule: split kernel + combine, and some
/// sequence in more than one part.
void expectScheduled(const api::Plan &plan) {
  const std::vector<api::PlanStep> &steps = plan.steps();
  ASSERT_EQ(steps.size(), 2u) << plan.describe();
  EXPECT_NE(steps[0].role.find("split-KV forward"), std::string::npos);
  EXPECT_GT(steps[0].keySplits, 1);
  EXPECT_EQ(steps[1].role, "combine");
  EXPECT_TRUE(hasSchedule(plan)) << plan.describe();
  EXPECT_NE(steps[0].grid.find("parts of the sequences' keys"),
            std::string::npos)
      << steps[0].grid;
}

struct MixedCase {
  std::string label;
  Problem problem;
};

void PrintTo(const MixedCase &c, std::ostream *os) { *os << c.label; }

class ApiMixedLengths : public ::testing::TestWithParam<MixedCase> {};

TEST_P(ApiMixedLengths, ScheduledAndExact) {
  api::Options options;
  options.threads = 8;
  ApiCheck check = checkApi(GetParam().problem, options, 11);
  expectScheduled(check.plan);
}

Problem varlenDecode(int64_t headsQ, int64_t headsKv, int64_t d, DType dtype,
                     std::vector<int32_t> queries, std::vector<int32_t> keys) {
  Problem p =
      denseProblem(int64_t(keys.size()), headsQ, headsKv, 0, 0, d, dtype);
  p.cuSeqlensQ = {0};
  p.cuSeqlensK = {0};
  for (size_t b = 0; b < keys.size(); ++b) {
    p.cuSeqlensQ.push_back(p.cuSeqlensQ.back() + queries[b]);
    p.cuSeqlensK.push_back(p.cuSeqlensK.back() + keys[b]);
  }
  return p;
}

std::vector<MixedCase> mixedCases() {
  // GQA 8:1, one-key and odd-length sequences beside a long one.
  Problem gqa8 = pagedProblem(32, 4, 1, 128, DType::BF16,
                              {9000, 5, 1, 3001, 777, 2048}, 16);
  gqa8.wantLse = true;
  // MQA 16:1, two query tokens (speculative decode), bottom-right causal:
  // the one-key sequence's first token sees no key (O = 0, LSE = -inf).
  Problem mqa16 =
      pagedProblem(16, 1, 2, 64, DType::F16, {4000, 1, 33, 1500}, 64);
  mqa16.mask = Mask::CausalBottomRight;
  mqa16.softcap = 30.0f;
  mqa16.alibi = true;
  mqa16.wantLse = true;
  // No GQA, a window: later parts of the long sequence see no key.
  Problem window = pagedProblem(4, 4, 1, 64, DType::F32, {5000, 10, 2100}, 16);
  window.mask = Mask::Window;
  window.windowLeft = 300, window.windowRight = 0;
  window.wantLse = true;
  // d = 256, GQA 2:1, attention sinks (counted once, by each part 0).
  Problem sinks = pagedProblem(4, 2, 1, 256, DType::BF16, {3000, 17, 1200}, 16);
  sinks.sink = true;
  sinks.sinks = {0.5f, -1.0f, 2.0f, -INFINITY};
  // Contiguous varlen K (cu_seqlens_k), one query per sequence.
  Problem varlen =
      varlenDecode(8, 2, 128, DType::BF16, {1, 1, 1, 1}, {6000, 1, 99, 2000});
  varlen.mask = Mask::CausalBottomRight;
  varlen.wantLse = true;
  // Varlen with 3 and 1 query tokens, GQA 4:1 at d = 64, top-left causal.
  Problem spec = varlenDecode(8, 2, 64, DType::F32, {3, 1, 3}, {4000, 3, 997});
  spec.mask = Mask::Causal;
  spec.wantLse = true;
  return {{"PagedGqa8Bf16D128", gqa8},  {"PagedMqa16SoftcapAlibi", mqa16},
          {"PagedWindowF32", window},   {"PagedSinksD256", sinks},
          {"VarlenDecodeGqa4", varlen}, {"VarlenSpeculativeCausal", spec}};
}
INSTANTIATE_TEST_SUITE_P(Cases, ApiMixedLengths,
                         ::testing::ValuesIn(mixedCases()),
                         [](const auto &info) { return info.param.label; });

// A sequence with no keys has no place in a varlen batch: one clear
// refusal, schedule or not (a paged one: ApiPagedRefuses).
TEST(ApiMixedLengthsEdges, VarlenSequenceWithoutKeysRefused) {
  Problem p = varlenDecode(4, 1, 64, DType::F32, {1, 1, 1}, {5000, 0, 1300});
  api::Options options;
  options.threads = 8;
  expectPlanRefused(p, api::StatusCode::InvalidArgument,
                    "every varlen sequence length must be >= 1", options);
}

// One plan serves lengths other than the planned ones (a cache that grew or
// was cut): each sequence's last part runs to its end, and parts past it
// are empty.
TEST(ApiMixedLengthsEdges, RunsWithOtherLengths) {
  // The pools hold data for the longest lengths run; the plan sees shorter.
  Problem grown = pagedProblem(8, 2, 1, 64, DType::F32, {9020, 31, 17}, 16);
  grown.wantLse = true;
  Problem p = grown;
  p.seqlensK = {9000, 5, 1};
  api::Options options;
  options.threads = 8;
  std::optional<api::Plan> plan = planChecked(p, options);
  ASSERT_TRUE(plan);
  expectScheduled(*plan);
  PagedPools pools = makePools(grown, 13);
  for (std::vector<int32_t> lens :
       {std::vector<int32_t>{9020, 31, 17}, std::vector<int32_t>{100, 1, 1},
        std::vector<int32_t>{9000, 5, 1}}) {
    fmhajit::CompareResult r =
        runPagedAgainstReference(*plan, p, pools, lens, 13);
    EXPECT_TRUE(r.pass) << lens[0] << "," << lens[1] << "," << lens[2] << ": "
                        << r.summary();
  }
}

// Equal lengths keep the measured numSplits rule; one sequence has nothing
// to balance.
TEST(ApiMixedLengthsEdges, EqualLengthsGetNoSchedule) {
  api::Options options;
  options.threads = 8;
  for (std::vector<int32_t> lens :
       {std::vector<int32_t>{9000, 9000}, std::vector<int32_t>{9000}}) {
    Problem p = pagedProblem(8, 1, 1, 128, DType::BF16, lens, 16);
    std::optional<api::Plan> plan = planChecked(p, options);
    ASSERT_TRUE(plan);
    EXPECT_FALSE(hasSchedule(*plan)) << plan->describe();
  }
}

// A pinned split kernel takes the schedule unless Options::numSplits says
// how many even parts.
TEST(ApiMixedLengthsEdges, PinnedKernel) {
  Problem p = varlenDecode(8, 2, 128, DType::BF16, {1, 1, 1}, {7000, 3, 900});
  api::Options options;
  options.threads = 8;
  options.kernel = "family=fwd_splitkv,dtype=bf16,d=128,varlen=1,bm=16,bn=64";
  ApiCheck scheduled = checkApi(p, options, 14);
  expectScheduled(scheduled.plan);
  options.numSplits = 3;
  ApiCheck even = checkApi(p, options, 14);
  EXPECT_FALSE(hasSchedule(even.plan)) << even.plan.describe();
  ASSERT_FALSE(even.plan.steps().empty());
  EXPECT_EQ(even.plan.steps()[0].keySplits, 3);
}

} // namespace
