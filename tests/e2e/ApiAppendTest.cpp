//===- ApiAppendTest.cpp - Appending to K/V caches through the public API -===//
//
// plan(AppendProblem) + append(): contiguous and paged caches (shuffled
// pages, NaN past each length), interleaved, half and no rotary, partial
// rotary dims, K only or K and Q, one and 70 new rows, the plan's rotary
// tables and the caller's; checked against referenceAppendKv, every other
// cache element keeping its bits. Then a decode step end to end: append,
// then paged attention over the grown cache through run(). Then refusals.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::AppendProblem;
using api::DType;
using api::Rotary;
using api::StatusCode;

namespace {

struct AppendCase {
  std::string label;
  AppendProblem problem;
  bool callerTables = false;
};

void PrintTo(const AppendCase &c, std::ostream *os) { *os << c.label; }

class ApiAppendMatchesReference : public ::testing::TestWithParam<AppendCase> {
};

TEST_P(ApiAppendMatchesReference, PlanAndAppend) {
  AppendOutcome out =
      checkApiAppend(GetParam().problem, GetParam().callerTables, 4);
  ASSERT_EQ(out.plan.steps().size(), 1u);
  EXPECT_EQ(out.plan.steps()[0].role, "append");
  EXPECT_NE(out.plan.steps()[0].kernel.find("fmha_appendkv_"),
            std::string::npos);
}

std::vector<AppendCase> appendCases() {
  AppendProblem contiguous = appendProblem({0, 15, 33}, 1, 0, Rotary::None);
  AppendProblem half = appendProblem({0, 15, 33}, 1, 16, Rotary::Half);
  half.rotateQ = true;
  AppendProblem interleaved =
      appendProblem({5, 64, 200}, 1, 64, Rotary::Interleaved);
  AppendProblem partial =
      appendProblem({3, 100}, 70, 16, Rotary::Half, 64, DType::F16);
  partial.rotaryDim = 32;
  partial.rotateQ = true;
  AppendProblem contiguousRope =
      appendProblem({7, 0}, 70, 0, Rotary::Interleaved, 64, DType::F32);
  contiguousRope.rotaryDim = 48;
  AppendProblem tables = appendProblem({9, 31}, 2, 256, Rotary::Half);
  tables.rotateQ = true;
  tables.rotaryBase = 500000.0f;
  return {{"ContiguousNoRotary", contiguous},
          {"PagedHalfRotateQ", half},
          {"PagedInterleaved", interleaved},
          {"PartialRotary70Rows", partial},
          {"ContiguousInterleaved70Rows", contiguousRope},
          {"CallerTablesPage256", tables, true}};
}
INSTANTIATE_TEST_SUITE_P(Cases, ApiAppendMatchesReference,
                         ::testing::ValuesIn(appendCases()),
                         [](const auto &info) { return info.param.label; });

// A decode step: append one token to each sequence of a paged cache, then
// attend over the grown cache with a split plan, through the API only.
TEST(ApiAppendDecodeStep, AttentionReadsTheAppendedRows) {
  AppendProblem a = appendProblem({4999, 2}, 1, 16, Rotary::Half);
  a.headsQ = 16;
  AppendOutcome out = checkApiAppend(a, false, 6);
  ASSERT_TRUE(out.check.pass);
  api::Problem p;
  p.batch = 2, p.headsQ = 16, p.headsKv = 2, p.seqlenQ = 1, p.headDim = 128;
  p.pagesKv = a.pagesKv;
  p.seqlensK = {5000, 3};
  api::Options options;
  options.threads = 8;
  std::optional<api::Plan> plan = planChecked(p, options);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->steps().size(), 2u) << plan->describe();
  fmhajit::CompareResult r =
      runPagedAgainstReference(*plan, p, out.caches, {}, 6);
  EXPECT_TRUE(r.pass) << r.summary() << "\n" << plan->describe();
}

//===-- Refusals ----------------------------------------------------------===//

struct BadAppend {
  std::string label;
  AppendProblem problem;
  std::string says;
};

void PrintTo(const BadAppend &c, std::ostream *os) { *os << c.label; }

class ApiAppendRefuses : public ::testing::TestWithParam<BadAppend> {};

TEST_P(ApiAppendRefuses, WithAStatus) {
  expectPlanRefused(GetParam().problem, StatusCode::InvalidArgument,
                    GetParam().says);
}

std::vector<BadAppend> badAppends() {
  AppendProblem base = appendProblem({10, 20}, 1, 16, Rotary::Half);
  AppendProblem odd = base;
  odd.rotaryDim = 33;
  AppendProblem full = base;
  full.seqlens = {10, int32_t(base.pagesKv.maxPagesPerSeq * 16)};
  AppendProblem noCache = base;
  noCache.pagesKv = {};
  AppendProblem notPow2 = base;
  notPow2.pagesKv.pageSize = 12;
  AppendProblem rotateNothing = base;
  rotateNothing.rotary = Rotary::None;
  rotateNothing.rotateQ = true;
  AppendProblem heads = base;
  heads.headsQ = 5;
  return {{"OddRotaryDim", odd, "rotaryDim 33 must be even"},
          {"RowsPastTheCache", full, "raise pagesKv.maxPagesPerSeq"},
          {"NoCache", noCache, "a contiguous cache needs capacity"},
          {"PageSizeNotPowerOfTwo", notPow2,
           "pagesKv.pageSize 12 must be a power of two"},
          {"RotateQWithoutRotary", rotateNothing,
           "choose Rotary::Interleaved or Rotary::Half"},
          {"HeadsDivide", heads, "must be >= 1 and divide headsQ 5"}};
}
INSTANTIATE_TEST_SUITE_P(Problems, ApiAppendRefuses,
                         ::testing::ValuesIn(badAppends()),
                         [](const auto &info) { return info.param.label; });

// An append plan runs through append() only, a forward plan through run()
// only; and the tensors a paged append writes through must be given.
TEST(ApiAppendRefuses, WrongEntryAndMissingTensors) {
  api::Options options;
  options.threads = 2;
  options.cacheDir = apiCacheDir();
  AppendProblem a = appendProblem({10, 20}, 1, 16, Rotary::Half);
  a.rotateQ = true;
  api::Result<api::Plan> appendPlan = api::plan(a, options);
  ASSERT_TRUE(appendPlan.ok()) << appendPlan.status().toString();
  int dummy = 0;
  api::Status viaRun = api::run(*appendPlan, {&dummy, &dummy, &dummy, &dummy});
  EXPECT_NE(viaRun.message().find("call fmhajit::api::append"),
            std::string::npos);

  api::Problem f;
  f.headDim = 64, f.dtype = DType::F32;
  api::Result<api::Plan> forward = api::plan(f, options);
  ASSERT_TRUE(forward.ok()) << forward.status().toString();
  api::Status viaAppend =
      api::append(*forward, {&dummy, &dummy, &dummy, &dummy});
  EXPECT_NE(viaAppend.message().find("call fmhajit::api::run"),
            std::string::npos);

  api::Status noTable =
      api::append(*appendPlan, {&dummy, &dummy, &dummy, &dummy});
  EXPECT_NE(noTable.message().find("set AppendTensors::blockTable"),
            std::string::npos)
      << noTable.toString();
  int32_t table[64] = {};
  api::Status noQ =
      api::append(*appendPlan, {&dummy, &dummy, &dummy, &dummy, table});
  EXPECT_NE(noQ.message().find("set AppendTensors::q and qOut"),
            std::string::npos)
      << noQ.toString();
}

} // namespace
