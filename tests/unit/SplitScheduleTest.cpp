//===- SplitScheduleTest.cpp - Split schedules for batches of mixed lengths
//===//
//
// SplitSchedule.h's list and rule as tables: every sequence's parts cover
// its tiles with splitTiles each (the last takes the rest), slots follow
// the sequences, the list runs from the smallest part to the largest, and
// the schedule is left out where numSplits serves.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/SplitSchedule.h"
#include "runtime/api/SplitHeuristic.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

struct Entry {
  int32_t seq, index, parts, slot;
};

std::vector<Entry> entriesOf(const SplitSchedule &s) {
  std::vector<Entry> out;
  for (int32_t g = 0; g < s.parts; ++g)
    out.push_back({s.entries[4 * g], s.entries[4 * g + 1], s.entries[4 * g + 2],
                   s.entries[4 * g + 3]});
  return out;
}

TEST(SplitSchedule, PartsFollowEachSequencesLength) {
  // Tiles 10, 1, 0, 7 in parts of 4: 3 + 1 + 1 (empty) + 2 parts.
  SplitSchedule s = makeSplitSchedule({10, 1, 0, 7}, 4);
  EXPECT_EQ(s.parts, 7);
  EXPECT_EQ(s.splitTiles, 4);
  EXPECT_EQ(s.mostParts, 3);
  ASSERT_EQ(s.entries.size(), size_t(4 * 7 + 5));
  std::vector<int32_t> first(s.entries.begin() + 28, s.entries.end());
  EXPECT_EQ(first, (std::vector<int32_t>{0, 3, 4, 5, 7}));
  std::vector<int> seen(7, 0);
  int64_t lastSize = -1;
  const int64_t tiles[] = {10, 1, 0, 7};
  for (const Entry &e : entriesOf(s)) {
    EXPECT_EQ(e.slot, first[e.seq] + e.index) << "slots follow sequences";
    EXPECT_EQ(e.parts, first[e.seq + 1] - first[e.seq]);
    ++seen[e.slot];
    int64_t size = std::min<int64_t>(4, tiles[e.seq] - 4 * e.index);
    EXPECT_GE(size, lastSize) << "smallest first, largest last";
    lastSize = size;
  }
  EXPECT_EQ(seen, std::vector<int>(7, 1)) << "every slot once";
}

struct TilesCase {
  const char *label;
  std::vector<int64_t> tiles;
  int64_t bn, items;
  unsigned workers;
  Backend backend;
  int64_t expected;
};

class SplitTilesRule : public ::testing::TestWithParam<TilesCase> {};

TEST_P(SplitTilesRule, ChoosesDocumentedSize) {
  const TilesCase &c = GetParam();
  EXPECT_EQ(chooseSplitTiles(c.tiles, c.bn, c.items, c.workers, c.backend),
            c.expected);
}

const TilesCase kTiles[] = {
    // 64 x 8 packed items over 8192 tiles on 132 SMs: 8192 * 8 / 528.
    {"GpuBatch64", std::vector<int64_t>(64, 128), 128, 8, 132, Backend::Nvptx,
     125},
    // One long sequence, few items: at most kGpuMaxSplits parts.
    {"GpuCapsParts", {1024, 8}, 128, 1, 132, Backend::Nvptx, 8},
    {"GpuLeastTiles",
     {40, 8},
     128,
     1,
     132,
     Backend::Nvptx,
     kGpuScheduleMinPartTiles},
    // Host: 32 parts a thread, 1024 keys at least (16 tiles of 64).
    {"HostLeastKeys", {141, 1}, 64, 1, 8, Backend::Host, 16},
    {"HostBalance", {4000, 1000}, 64, 2, 2, Backend::Host, 157},
};
INSTANTIATE_TEST_SUITE_P(Table, SplitTilesRule, ::testing::ValuesIn(kTiles),
                         [](const auto &info) { return info.param.label; });

TEST(SplitSchedule, LeftOutWhereNumSplitsServes) {
  EXPECT_FALSE(planSplitSchedule({9000}, 64, 1, 8, Backend::Host));
  EXPECT_FALSE(planSplitSchedule({9000, 9000}, 64, 1, 8, Backend::Host));
  EXPECT_FALSE(planSplitSchedule({9000, 5}, 64, 1, 0, Backend::Nvptx));
  // Every sequence fits one part: nothing to cut.
  EXPECT_FALSE(planSplitSchedule({900, 5}, 64, 1, 8, Backend::Host));
  std::optional<SplitSchedule> s =
      planSplitSchedule({9000, 5}, 64, 1, 8, Backend::Host);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->splitTiles, 16);
  EXPECT_EQ(s->mostParts, 9); // 141 tiles
  EXPECT_EQ(s->parts, 10);
}

} // namespace
