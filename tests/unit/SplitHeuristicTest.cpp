//===- SplitHeuristicTest.cpp - chooseNumSplits' documented rule ----------===//
//
// The rule of SplitHeuristic.h as a table: busy machines never split, short
// key ranges never split (each part keeps kMinTilesPerSplit tiles), and
// otherwise the smallest count that keeps the waves about as full as the
// best count does.
//
//===----------------------------------------------------------------------===//
#include "runtime/SplitHeuristic.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {
struct RuleCase {
  const char *label;
  int64_t items, keyTiles;
  unsigned workers, expected;
};

class SplitRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(SplitRule, ChoosesDocumentedCount) {
  const RuleCase &c = GetParam();
  EXPECT_EQ(chooseNumSplits(c.items, c.keyTiles, c.workers), c.expected);
}

const RuleCase kCases[] = {
    {"OneWorkerNeverSplits", 1, 2048, 1, 1},
    {"BusyMachineNeverSplits", 32, 2048, 16, 1},
    {"EightyPercentBusyIsBusy", 13, 2048, 16, 1},
    {"HalfBusyDoubles", 8, 2048, 16, 2},
    {"OneItemNearlyFillsSixteen", 1, 2048, 16, 14}, // 14/16 >= 0.85
    {"ThreeItemsOnSixteen", 3, 2048, 16, 5},
    {"ShortKeysNeverSplit", 1, 7, 16, 1},
    {"KeysBoundTheCount", 1, 12, 16, 3},
    {"NoMoreThanMaxSplits", 1, 100000, 1024, 55}, // 55 >= 0.85 * 64
    {"TwoThreadsOneItem", 1, 64, 2, 2},
};

INSTANTIATE_TEST_SUITE_P(Table, SplitRule, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<RuleCase> &info) {
                           return std::string(info.param.label);
                         });

TEST(SplitRule, ReadsTheProblem) {
  KernelSpec spec;
  spec.bm = 16;
  spec.bn = 64;
  AttentionProblem p;
  p.batch = 1;
  p.headsQ = 8;
  p.seqlenQ = 1;
  p.seqlenK = 65536; // 1024 key tiles
  EXPECT_EQ(chooseNumSplits(spec, p, 16), 2u) << "8 items on 16 workers";
  EXPECT_EQ(chooseNumSplits(spec, p, 2), 1u) << "8 items already fill 2 workers";
  p.seqlenQ = 64; // 4 query tiles per head: 32 items
  EXPECT_EQ(chooseNumSplits(spec, p, 16), 1u);
}
} // namespace
