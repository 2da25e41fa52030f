//===- BackwardScheduleTest.cpp - The host backward's schedule rule -------===//
//
// BackwardSchedule.h's rule as a table: head items (one per (sequence, K/V
// head)) where their list schedule on the threads ends no later than the
// split's evenly spread work times kHostSplitCost; else key and query items.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/BackwardSchedule.h"
#include "gtest/gtest.h"
#include <vector>

using namespace fmhajit;

namespace {
struct ScheduleCase {
  const char *label;
  std::vector<double> headWork; ///< item w's work, w = b * headsKv + hk
  unsigned threads;
  bool headItems;
};

class HeadItemsRule : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(HeadItemsRule, ChoosesDocumentedSchedule) {
  const ScheduleCase &c = GetParam();
  EXPECT_EQ(headItemsKeepUp(c.headWork, c.threads), c.headItems);
}

const std::vector<double> kEqual16(16, 1.0);

const ScheduleCase kCases[] = {
    {"OneThreadAlways", {1}, 1, true},
    {"OneThreadUnequal", {9, 1, 1}, 1, true},
    {"AHeadAThread", kEqual16, 16, true},
    {"TwoHeadsAThread", kEqual16, 8, true},
    {"OneHeadTooMany", std::vector<double>(17, 1.0), 16, false},
    {"HalfTheThreadsIdle", std::vector<double>(8, 1.0), 16, false},
    {"ThreeOnTwo", {1, 1, 1}, 2, false}, // 2 against 1.875
    {"FiveOnFour", {1, 1, 1, 1, 1}, 4, false},
    {"FourOnTwo", {1, 1, 1, 1}, 2, true},
    // Varlen: the long sequence's heads go first and pair with short ones.
    {"UnequalSequencesPair", {1, 1, 3, 3}, 2, true}, // 4 against 5
    {"OneLongSequence", {1, 1, 1, 8}, 4, false},     // 8 against 3.4
};

INSTANTIATE_TEST_SUITE_P(Table, HeadItemsRule, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ScheduleCase> &i) {
                           return std::string(i.param.label);
                         });

// The problem's items: batch * headsKv, each its sequence's Sq * Sk.
TEST(HeadItemsRule, CountsSequencesAndKvHeads) {
  AttentionProblem p;
  p.batch = 1, p.headsQ = 16, p.headsKv = 16, p.seqlenQ = p.seqlenK = 2048;
  EXPECT_TRUE(hostBackwardTakesHeadItems(p, 16));
  EXPECT_TRUE(hostBackwardTakesHeadItems(p, 1));
  p.headsKv = 4; // GQA: four items, whatever the query heads
  EXPECT_FALSE(hostBackwardTakesHeadItems(p, 16));
  EXPECT_TRUE(hostBackwardTakesHeadItems(p, 4));
  p.seqlensQ = {100, 2000}, p.seqlensK = {100, 2000}, p.batch = 2;
  p.headsKv = 2; // two long heads, two short: the long pair sets the pace
  EXPECT_TRUE(hostBackwardTakesHeadItems(p, 2));
  EXPECT_FALSE(hostBackwardTakesHeadItems(p, 4));
}
} // namespace
