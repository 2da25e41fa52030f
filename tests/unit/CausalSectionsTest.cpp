// How many heads a section of the persistent causal schedule holds
// (runtime/device/CausalSections.h), on an H100's 132 blocks.
#include "runtime/device/CausalSections.h"
#include "SpecTesting.h"
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
constexpr int64_t kBlocks = 132;

// A causal problem of `heads` (batch x head) pairs of seqlenQ queries and
// seqlenK keys, in the spec's query tiles.
KernelArgs problem(const KernelSpec &spec, int64_t heads, int32_t seqlenQ,
                   int32_t seqlenK) {
  KernelArgs args{};
  args.batch = 1;
  args.headsQ = args.headsKv = int32_t(heads);
  args.seqlenQ = seqlenQ;
  args.seqlenK = seqlenK;
  args.numQTiles = int32_t((seqlenQ + spec.bm - 1) / spec.bm);
  return args;
}

int32_t headsFor(llvm::StringRef text, int64_t heads, int32_t seqlenQ,
                 int32_t seqlenK, int64_t sectionBytes = 0) {
  KernelSpec spec = resolvedSpec(text);
  KernelArgs args = problem(spec, heads, seqlenQ, seqlenK);
  return causalSectionHeads(spec, args, heads * args.numQTiles, kBlocks,
                            sectionBytes);
}

constexpr const char *kD128 =
    "family=fwd,dtype=bf16,d=128,mask=causal,bm=128,bn=128,target=sm_90a";
constexpr const char *kD64 = "family=fwd,dtype=bf16,d=64,mask=causal,bm=192,bn="
                             "128,warps=12,target=sm_90a";
constexpr const char *kFp8 =
    "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,bm=192,bn=96,warps=12,"
    "stages=2,v_pretranspose=1,target=sm_90a";
} // namespace

// 4 query tiles a head: 33 heads fill the 132 blocks exactly, where the L2
// budget (32 MiB of 256 KiB heads) would take 128 heads over four rounds.
TEST(CausalSections, ShortSequencesTakeOneRound) {
  EXPECT_EQ(headsFor(kD128, 512, 512, 512), 33);
  EXPECT_EQ(headsFor(kD128, 256, 1024, 1024), 16); // 128 items: 4 idle
}

// 86 tiles a head (d = 64, bm = 192, S = 16384) fill one round with 46 of
// 132 blocks idle: the sections follow the L2 budget (4 MiB a head).
TEST(CausalSections, RoundsThatLeaveBlocksIdleFollowL2) {
  EXPECT_EQ(headsFor(kD64, 32, 16384, 16384), 8);
  EXPECT_EQ(headsFor(kD128, 16, 16384, 16384), 1); // 128 of 132: one round
}

// The L2 budget caps a round too, and a section always holds a head.
TEST(CausalSections, L2BudgetCapsAndAtLeastOneHead) {
  EXPECT_EQ(headsFor(kD128, 512, 512, 131072), 1); // 64 MiB a head
  EXPECT_EQ(headsFor(kD128, 512, 512, 16384), 4);  // 8 MiB a head: 4, not 33
}

// FMHAJIT_SECTION_BYTES replaces the budget and drops the one-round rule.
TEST(CausalSections, BudgetOverride) {
  EXPECT_EQ(headsFor(kD128, 512, 512, 512, 32ll << 20), 128);
  EXPECT_EQ(headsFor(kD128, 512, 512, 512, 8ll << 20), 32);
  EXPECT_EQ(headsFor(kFp8, 32, 8192, 8192, 32ll << 20), 16);
}

// Two one-round sections of 33 heads x 4 tiles (1-4 key tiles each): the
// snake gives every block tiles 4 and 1, or 3 and 2: 5 key tiles and two
// moves, in quarters.
TEST(CausalSections, SpanOfEvenRoundsIsBalanced) {
  KernelSpec spec = resolvedSpec(kD128);
  KernelArgs args = problem(spec, 66, 512, 512);
  EXPECT_EQ(causalScheduleSpan(spec, args, 66 * 4, kBlocks, 33), 22);
  // One section of all 66 heads, two rounds: the same pairs.
  EXPECT_EQ(causalScheduleSpan(spec, args, 66 * 4, kBlocks, 66), 22);
  // Three one-round sections: block 0 takes tiles 4, 1 and 4 again.
  KernelArgs odd = problem(spec, 99, 512, 512);
  EXPECT_EQ(causalScheduleSpan(spec, odd, 99 * 4, kBlocks, 33), 4 * 9 + 3);
}

// fp8 d = 128's three-warpgroup tile at S = 8192: 43 query tiles a head, so
// a round holds 3 heads; 32 heads end on an odd round of 2 heads' 86 items,
// whose first blocks take the dearest tiles alone (the slowest block 518
// key tiles, where the average is 459). Sections of 9 heads end the walk
// about 9% sooner.
TEST(CausalSections, OddLastRoundGivesWay) {
  KernelSpec spec = resolvedSpec(kFp8);
  KernelArgs args = problem(spec, 32, 8192, 8192);
  int64_t items = 32 * 43;
  int64_t rule = causalScheduleSpan(spec, args, items, kBlocks, 3);
  int32_t chosen = headsFor(kFp8, 32, 8192, 8192);
  EXPECT_NE(chosen, 3);
  int64_t span = causalScheduleSpan(spec, args, items, kBlocks, chosen);
  EXPECT_LT(span * 108, rule * 100); // more than 8% sooner
  // Unweighed (FMHAJIT_SECTION_SPAN=0), the rule stands.
  EXPECT_EQ(causalSectionHeads(spec, args, items, kBlocks, 0, false), 3);
  // The same tile at S = 16384 (86 tiles, 16 heads): the rule stands.
  EXPECT_EQ(headsFor(kFp8, 16, 16384, 16384), 8);
}

// Short items keep the rule unweighed: fp8 d = 256 at S = 512 (at most 6 key
// tiles of 96) ran 10% slower on the 128-head sections its spans preferred.
TEST(CausalSections, ShortItemsKeepTheRule) {
  constexpr const char *kFp8D256 =
      "family=fwd,dtype=fp8_e4m3,d=256,mask=causal,bm=128,bn=96,warps=8,"
      "stages=2,target=sm_90a";
  EXPECT_EQ(headsFor(kFp8D256, 256, 512, 512), 33);
}
