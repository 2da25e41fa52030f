//===- ApiPagedTest.cpp - Paged K/V through the public API, end to end ----===//
//
// api::Problem with pagesKv set: plan() picks fwd_paged (and, for decode
// shapes with threads to spare, fwd_paged cut into parts + the combine),
// run() reads the caller's pools and block table. Checked against
// referencePaged on caches whose pages are shuffled, whose last pages are
// partial and whose unused rows are NaN; a short sequence beside a long one
// takes one part of a split schedule. Then the refusals: inconsistent pages,
// lengths and tensors each give one Status naming what to change.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;
using api::StatusCode;

namespace {

struct PagedCase {
  std::string label;
  Problem problem;
};

void PrintTo(const PagedCase &c, std::ostream *os) { *os << c.label; }

class ApiPagedMatchesReference : public ::testing::TestWithParam<PagedCase> {};

TEST_P(ApiPagedMatchesReference, PlanAndRun) {
  api::Options options;
  options.threads = 2;
  ApiCheck check = checkApi(GetParam().problem, options, 3);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_EQ(check.plan.steps()[0].role, "paged forward")
      << check.plan.describe();
  EXPECT_NE(check.plan.steps()[0].kernel.find("fmha_fwdpaged_"),
            std::string::npos);
}

std::vector<PagedCase> pagedCases() {
  Problem decode =
      pagedProblem(16, 2, 1, 128, DType::BF16, {1, 17, 300, 64, 1000}, 16);
  decode.wantLse = true;
  Problem causal = pagedProblem(4, 2, 5, 64, DType::F16, {3, 100, 257}, 64);
  causal.mask =
      Mask::CausalBottomRight; // the 3-key sequence's first rows see no key
  causal.wantLse = true;
  Problem window = pagedProblem(4, 4, 7, 64, DType::F32, {500, 129}, 4);
  window.mask = Mask::Window;
  window.windowLeft = 100, window.windowRight = 0;
  Problem scores = pagedProblem(8, 1, 2, 128, DType::BF16, {33, 400}, 16);
  scores.softcap = 30.0f;
  scores.alibi = true;
  scores.mask = Mask::CausalBottomRight;
  return {{"DecodeGqa8Page16", decode},
          {"CausalBrFp16Page64", causal},
          {"WindowFp32Page4", window},
          {"SoftcapAlibiBf16", scores}};
}
INSTANTIATE_TEST_SUITE_P(Cases, ApiPagedMatchesReference,
                         ::testing::ValuesIn(pagedCases()),
                         [](const auto &info) { return info.param.label; });

// Decode, GQA 8:1, 8 threads, sequences of 9000 and 5 keys: mixed lengths
// get a split schedule (SplitSchedule.h), parts of 16 key tiles (1024
// keys, the host's least): 9 for the long sequence, 1 for the short one,
// which its split item finishes alone (the combine skips it). Both end
// mid-page. (Before the schedule this plan cut both into 8 even parts, the
// short one's 7 of them empty.)
TEST(ApiPagedDecode, SplitPlanForMixedLengths) {
  Problem p = pagedProblem(8, 1, 1, 128, DType::BF16, {9000, 5}, 16);
  p.wantLse = true;
  api::Options options;
  options.threads = 8;
  ApiCheck check = checkApi(p, options, 5);
  const std::vector<api::PlanStep> &steps = check.plan.steps();
  ASSERT_EQ(steps.size(), 2u) << check.plan.describe();
  EXPECT_EQ(steps[0].role, "paged split-KV forward");
  EXPECT_EQ(steps[0].keySplits, 9);
  EXPECT_EQ(steps[0].workItems, 10);
  EXPECT_EQ(steps[1].role, "combine");
  EXPECT_GT(check.plan.workspaceBytes(), 0);
  EXPECT_NE(check.plan.describe().find("paged K/V: "), std::string::npos);
  EXPECT_NE(check.plan.describe().find("split schedule of 10 parts"),
            std::string::npos)
      << check.plan.describe();
}

// One plan serves a cache that grows: Tensors::seqlensK gives this call's
// lengths (within the pages), which the kernel reads at run time.
TEST(ApiPagedDecode, RunsWithTheCallersLengths) {
  Problem p = pagedProblem(4, 2, 1, 64, DType::F32, {40, 200}, 16);
  api::Options options;
  options.threads = 2;
  std::optional<api::Plan> plan = planChecked(p, options);
  ASSERT_TRUE(plan);
  PagedPools pools = makePools(p, 9);
  // Fewer keys than planned: rows past them are data, but must not be read.
  fmhajit::CompareResult r =
      runPagedAgainstReference(*plan, p, pools, {17, 131}, 9);
  EXPECT_TRUE(r.pass) << r.summary();
}

//===-- Refusals ----------------------------------------------------------===//

struct BadPaged {
  std::string label;
  Problem problem;
  std::string says;
};

void PrintTo(const BadPaged &c, std::ostream *os) { *os << c.label; }

class ApiPagedRefuses : public ::testing::TestWithParam<BadPaged> {};

TEST_P(ApiPagedRefuses, WithAStatus) {
  expectPlanRefused(GetParam().problem, StatusCode::InvalidArgument,
                    GetParam().says);
}

std::vector<BadPaged> badPaged() {
  Problem base = pagedProblem(4, 1, 1, 128, DType::BF16, {100, 30}, 16);
  Problem notPow2 = base;
  notPow2.pagesKv.pageSize = 24;
  Problem tooLong = base;
  tooLong.seqlensK = {100, 200}; // 13 pages, the table row holds 8
  Problem count = base;
  count.batch = 3;
  Problem noPages = base;
  noPages.pagesKv = {};
  Problem layout = base;
  layout.k = api::TensorLayout::bhsd();
  Problem varlen = base;
  varlen.cuSeqlensQ = {0, 1, 2};
  varlen.cuSeqlensK = {0, 100, 130};
  Problem empty = base;
  empty.seqlensK = {100, 0};
  return {{"PageSizeNotPowerOfTwo", notPow2,
           "pagesKv.pageSize 24 must be a power of two"},
          {"LengthsExceedPages", tooLong, "raise maxPagesPerSeq"},
          {"OneLengthPerSequence", count,
           "seqlensK holds 2 lengths but batch is 3"},
          {"LengthsWithoutPages", noPages,
           "seqlensK is given but pagesKv.pageSize is 0"},
          {"PoolsArePacked", layout,
           "leave Problem::k and v at TensorLayout::bshd()"},
          {"NoVarlenWithPages", varlen, "leave cuSeqlensQ/K empty"},
          {"EverySequenceHasKeys", empty, "seqlensK[1] = 0"}};
}
INSTANTIATE_TEST_SUITE_P(Problems, ApiPagedRefuses,
                         ::testing::ValuesIn(badPaged()),
                         [](const auto &info) { return info.param.label; });

// run() checks what the kernel would follow: the table must be there, and
// the pages and lengths it reads must lie in the pools.
TEST(ApiPagedRefuses, BadTensorsAtRunTime) {
  Problem p = pagedProblem(2, 1, 1, 64, DType::F32, {20, 40}, 16);
  api::Options options;
  options.threads = 2;
  std::optional<api::Plan> plan = planChecked(p, options);
  ASSERT_TRUE(plan);
  PagedPools pools = makePools(p, 2);
  std::vector<float> q(2 * 64), o(2 * 2 * 64);
  api::Tensors t{q.data(), pools.kPool.data(), pools.vPool.data(), o.data()};
  api::Status missing = api::run(*plan, t);
  EXPECT_EQ(missing.code(), StatusCode::InvalidArgument);
  EXPECT_NE(missing.message().find("set Tensors::blockTable"),
            std::string::npos);

  std::vector<int32_t> table = pools.blockTable;
  table[1] = int32_t(p.pagesKv.numPages); // sequence 0's second page
  t.blockTable = table.data();
  api::Status badPage = api::run(*plan, t);
  EXPECT_NE(badPage.message().find("Tensors::blockTable[0][1]"),
            std::string::npos)
      << badPage.toString();

  std::vector<int32_t> lengths = {20,
                                  int32_t(p.pagesKv.maxPagesPerSeq * 16 + 1)};
  t.blockTable = pools.blockTable.data();
  t.seqlensK = lengths.data();
  api::Status tooLong = api::run(*plan, t);
  EXPECT_NE(tooLong.message().find("Tensors::seqlensK[1]"), std::string::npos)
      << tooLong.toString();
}

} // namespace
