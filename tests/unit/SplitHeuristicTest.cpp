//===- SplitHeuristicTest.cpp - chooseNumSplits' documented rule ----------===//
//
// The rules of SplitHeuristic.h as tables. GPU: enough parts for
// kGpuBlocksPerSm blocks per multiprocessor, a power of two, no more than
// the key tiles or kGpuMaxSplits; busy GPUs and unknown ones never split.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/SplitHeuristic.h"
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
    {"UnknownGpuNeverSplits", 8, 2048, 0, 1},
    {"BusyGpuNeverSplits", 256, 2048, 132, 1},
    {"BlockAndAHalfPerSmIsEnough", 198, 2048, 132, 1},
    {"EightHeadsOnH100", 8, 2048, 132, 32},    // 198 / 8 = 24.75 -> 32
    {"BatchFourGqaOnH100", 128, 2048, 132, 2}, // 1.55 -> 2
    {"PowerOfTwoAbove", 3, 2048, 16, 8},       // 24 / 3 = 8
    {"KeysBoundTheCount", 8, 12, 132, 12},
    {"OneTileNeverSplits", 8, 1, 132, 1},
    {"NoMoreThanMaxSplits", 1, 100000, 1024, 128},
    {"OnePackedItemOnH100", 1, 1024, 132, 128}, // 198 -> 256 -> kGpuMaxSplits
};

INSTANTIATE_TEST_SUITE_P(Table, SplitRule, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<RuleCase> &info) {
                           return std::string(info.param.label);
                         });

struct HostCase {
  const char *label;
  int64_t items, seqlenK;
  unsigned workers, expected;
};

class HostSplitRule : public ::testing::TestWithParam<HostCase> {};

TEST_P(HostSplitRule, ChoosesDocumentedCount) {
  const HostCase &c = GetParam();
  EXPECT_EQ(chooseHostNumSplits(c.items, c.seqlenK, c.workers), c.expected);
}

// bf16 d=128: 512 bytes of K and V per key, so a 1 MiB part holds 2048 keys.
TEST(HostSplitRule, GqaPartsFitTheCache) {
  EXPECT_EQ(chooseHostNumSplits(8, 65536, 2, 8, 512),
            32u); // 65536 / 2048, over 8 for balance
  EXPECT_EQ(chooseHostNumSplits(8, 8192, 2, 8, 512),
            8u); // balance wants more than 4
  EXPECT_EQ(chooseHostNumSplits(8, 65536, 2, 1, 512),
            8u); // no group: balance alone
  EXPECT_EQ(chooseHostNumSplits(8, 2048, 2, 8, 512),
            1u); // short keys never split
  EXPECT_EQ(chooseHostNumSplits(8, 1 << 20, 2, 8, 512),
            64u); // at most kMaxSplits
  EXPECT_EQ(chooseHostNumSplits(8, 65536, 1, 8, 512),
            32u); // one thread gains from the cache too
  EXPECT_EQ(chooseHostNumSplits(8, 65536, 1, 1, 512),
            1u); // but not from balance
}

const HostCase kHostCases[] = {
    {"OneThreadNeverSplits", 8, 131072, 1, 1},
    {"ShortKeysNeverSplit", 8, 1023, 16, 1},
    {"IdleThreadsSplitSooner", 8, 1024, 16, 4}, // 64 wanted, 1024 / 256 = 4
    {"BusyThreadsWaitLonger", 16, 2048, 16, 1},
    {"BusyThreadsAtTheThreshold", 16, 4096, 16, 16}, // 32 wanted, 4096 / 256
    {"ThirtyTwoItemsPerThread", 8, 131072, 16, 64},  // 32 * 16 / 8 = 64
    {"RoundsUpToAPowerOfTwo", 24, 131072, 16, 32},   // 32 * 16 / 24 -> 22 -> 32
    {"TwoThreads", 8, 65536, 2, 8},
    {"ManyItemsDoNotSplit", 512, 65536, 16, 1},
    {"CappedByKeysPerPart", 1, 5000, 16, 19}, // 5000 / 256
};

INSTANTIATE_TEST_SUITE_P(Table, HostSplitRule, ::testing::ValuesIn(kHostCases),
                         [](const ::testing::TestParamInfo<HostCase> &info) {
                           return std::string(info.param.label);
                         });

TEST(SplitRule, FollowsTheSpecsBackend) {
  KernelSpec spec; // target=host
  spec.bm = 16;
  spec.bn = 64;
  AttentionProblem p;
  p.batch = 1;
  p.headsQ = 8;
  p.seqlenQ = 1;
  p.seqlenK = 65536; // 1024 key tiles
  EXPECT_EQ(chooseNumSplits(spec, p, 16), 64u) << "host: 32 items per thread";
  EXPECT_EQ(chooseNumSplits(spec, p, 2), 32u)
      << "host: GQA 8:1, 2048-key parts fit the cache";
  p.seqlenQ = 64; // 4 query tiles per head: 32 items
  EXPECT_EQ(chooseNumSplits(spec, p, 16), 32u);
  p.headsKv = 8; // no group shares a part: balance alone
  EXPECT_EQ(chooseNumSplits(spec, p, 16), 16u);
  p.headsKv = 1;
  spec.target = "sm_90a";
  EXPECT_EQ(chooseNumSplits(spec, p, 132), 8u) << "GPU: 32 items on 132 SMs";
  p.seqlenQ = 1;
  EXPECT_EQ(chooseNumSplits(spec, p, 132), 32u) << "GPU: 8 items on 132 SMs";
}

// Under pack_gqa the items are (b, K/V head, packed tile): a group of 8
// heads is one item, so the rules see 8 times fewer items and cut more.
TEST(SplitRule, CountsPackedItems) {
  KernelSpec spec;
  spec.target = "sm_90a";
  spec.bm = 64;
  spec.bn = 64;
  AttentionProblem p;
  p.batch = 1;
  p.headsQ = 32;
  p.headsKv = 4;
  p.seqlenQ = 1;
  p.seqlenK = 32768;
  EXPECT_EQ(chooseNumSplits(spec, p, 132), 8u) << "32 items on 132 SMs";
  spec.pack_gqa = true;
  EXPECT_EQ(chooseNumSplits(spec, p, 132), 64u) << "4 items on 132 SMs";
  p.seqlenQ = 16; // 16 x 8 packed rows: two 64-row tiles a group
  EXPECT_EQ(chooseNumSplits(spec, p, 132), 32u) << "8 items on 132 SMs";
  spec.target = "host";
  spec.bm = 16;
  p.seqlenQ = 1;
  EXPECT_EQ(chooseNumSplits(spec, p, 2), 16u)
      << "host: 4 items on 2 threads; no GQA cache term, the group is one item";
}
} // namespace
