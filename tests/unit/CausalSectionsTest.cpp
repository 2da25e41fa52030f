// How many heads a section of the persistent causal schedule holds
// (runtime/device/CausalSections.h), on an H100's 132 blocks.
#include "runtime/device/CausalSections.h"
#include "SpecTesting.h"
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
constexpr int64_t kBlocks = 132;

int32_t headsFor(llvm::StringRef spec, int32_t seqlenK, int32_t numQTiles,
                 int64_t sectionBytes = 0) {
  KernelArgs args{};
  args.seqlenK = seqlenK;
  args.numQTiles = numQTiles;
  return causalSectionHeads(resolvedSpec(spec), args, kBlocks, sectionBytes);
}

constexpr const char *kD128 =
    "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a";
constexpr const char *kD64 =
    "family=fwd,dtype=bf16,d=64,mask=causal,target=sm_90a";
} // namespace

// 4 query tiles a head: 33 heads fill the 132 blocks exactly, where the L2
// budget (32 MiB of 256 KiB heads) would take 128 heads over four rounds.
TEST(CausalSections, ShortSequencesTakeOneRound) {
  EXPECT_EQ(headsFor(kD128, 512, 4), 33);
  EXPECT_EQ(headsFor(kD128, 1024, 8), 16); // 128 items: 4 blocks idle
}

// 86 tiles a head (d = 64, bm = 192, S = 16384) fill one round with 46 of
// 132 blocks idle: the sections follow the L2 budget (4 MiB a head).
TEST(CausalSections, RoundsThatLeaveBlocksIdleFollowL2) {
  EXPECT_EQ(headsFor(kD64, 16384, 86), 8);
  EXPECT_EQ(headsFor(kD128, 16384, 128), 1); // 128 of 132: one round
}

// The L2 budget caps a round too, and a section always holds a head.
TEST(CausalSections, L2BudgetCapsAndAtLeastOneHead) {
  EXPECT_EQ(headsFor(kD128, 131072, 4), 1); // 64 MiB a head
  EXPECT_EQ(headsFor(kD128, 16384, 4), 4);  // 8 MiB a head: 4, not 33
}

// FMHAJIT_SECTION_BYTES replaces the budget and drops the one-round rule.
TEST(CausalSections, BudgetOverride) {
  EXPECT_EQ(headsFor(kD128, 512, 4, 32ll << 20), 128);
  EXPECT_EQ(headsFor(kD128, 512, 4, 8ll << 20), 32);
}
