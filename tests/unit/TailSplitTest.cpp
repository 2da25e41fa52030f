// How a launch cuts the last round's items by keys
// (runtime/device/TailSplit.h), on an H100's 132 blocks, and the kernels
// that may (specs/pipelines/WgmmaLayout.h, splitsTail).
#include "runtime/device/TailSplit.h"
#include "SpecTesting.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
constexpr int64_t kBlocks = 132;
constexpr const char *kFp8 = "family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,"
                             "warps=12,stages=2,v_pretranspose=1,target=sm_90a";
} // namespace

// fp8 d = 128 at 16k tokens: 1408 items of 43 key tiles (S = 4096) leave 88
// in the 11th round; three parts each fill two rounds of a third.
TEST(TailSplit, ThirdsWhereTwoRoundsOfPartsFill) {
  TailSplit split = chooseTailSplit(1408, 43, kBlocks);
  EXPECT_EQ(split.parts, 3);
  EXPECT_EQ(split.items, 88);
}

// S = 8192 and 16384: 1376 items leave 56; halves fit in one round, and
// more parts would cost their folds more than they save.
TEST(TailSplit, HalvesWhereOneRoundHoldsThem) {
  for (int64_t keyTiles : {86, 171}) {
    TailSplit split = chooseTailSplit(1376, keyTiles, kBlocks);
    EXPECT_EQ(split.parts, 2) << keyTiles;
    EXPECT_EQ(split.items, 56) << keyTiles;
  }
}

// A full last round, short keys (S = 2048: 22 tiles, where a part's start
// and fold cost more than the round saves) and a saving under 1% of many
// rounds split nothing.
TEST(TailSplit, NoneWhereItDoesNotPay) {
  EXPECT_FALSE(chooseTailSplit(1320, 43, kBlocks).splits());
  EXPECT_FALSE(chooseTailSplit(1408, 22, kBlocks).splits());
  EXPECT_FALSE(chooseTailSplit(2048, 26, kBlocks).splits()); // bf16 bm=128
  EXPECT_FALSE(chooseTailSplit(1408, 1, kBlocks).splits());
  EXPECT_FALSE(chooseTailSplit(1408, 43, 0).splits());
}

// Fewer items than blocks: one round, whose items split to fill the grid.
TEST(TailSplit, OneRoundSplitsToFillTheGrid) {
  TailSplit split = chooseTailSplit(40, 171, kBlocks);
  EXPECT_EQ(split.items, 40);
  EXPECT_EQ(split.parts, 3); // 120 parts of 132 blocks
}

// FMHAJIT_TAIL_PARTS: 1 turns it off, more forces that many (at most the
// key tiles), even where it does not pay.
TEST(TailSplit, ForcedParts) {
  EXPECT_FALSE(chooseTailSplit(1408, 43, kBlocks, 1).splits());
  TailSplit forced = chooseTailSplit(1320, 43, kBlocks, 4);
  EXPECT_EQ(forced.parts, 4);
  EXPECT_EQ(forced.items, 132);
  EXPECT_EQ(chooseTailSplit(1320, 3, kBlocks, 8).parts, 3);
}

// Unmasked walking kernels of dv = 128 and up to 192-key tiles only: a
// causal schedule already balances its items, and elsewhere the fold
// spilled (no-spills.test).
TEST(TailSplit, KernelsThatSplitTheirTail) {
  EXPECT_TRUE(splitsTail(resolvedSpec(kFp8)));
  EXPECT_TRUE(splitsTail(
      resolvedSpec("family=fwd,dtype=bf16,d=128,bm=128,bn=160,warps=8,stages=2,"
                   "pipeline=wgmma,target=sm_90a")));
  for (const char *spec :
       {"family=fwd,dtype=fp8_e4m3,d=128,mask=causal,target=sm_90a",
        "family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,warps=12,stages=2,"
        "target=sm_90a",
        "family=fwd,dtype=bf16,d=256,stages=2,pipeline=wgmma,target=sm_90a",
        "family=fwd,dtype=bf16,d=128,varlen=1,stages=2,pipeline=wgmma,"
        "target=sm_90a",
        "family=fwd_splitkv,dtype=bf16,d=128,pipeline=wgmma,target=sm_90a",
        "family=fwd,dtype=bf16,d=128,pipeline=mma,target=sm_90a",
        "family=fwd,dtype=bf16,d=128,target=host"})
    EXPECT_FALSE(splitsTail(resolvedSpec(spec))) << spec;
}

// The workspace: counters, LSE partials, O partials, each 256-aligned; the
// kernel's fields point into it.
TEST(TailSplit, WorkspaceLayout) {
  KernelSpec spec = resolvedSpec(kFp8);
  TailSplit split{3, 88};
  int64_t rows = 3 * 88 * 192;
  int64_t counters = (88 * 4 * 4 + 255) / 256 * 256;
  int64_t lse = (rows * 4 + 255) / 256 * 256;
  EXPECT_EQ(tailWorkspaceBytes(spec, split), counters + lse + rows * 128 * 4);
  EXPECT_EQ(tailWorkspaceBytes(spec, {}), 0);
  KernelArgs args{};
  alignas(256) static char workspace[1];
  setTailSplit(args, spec, split, workspace);
  EXPECT_EQ(args.tailParts, 3);
  EXPECT_EQ(args.tailItems, 88);
  EXPECT_EQ(static_cast<void *>(args.tailCounters), workspace);
  EXPECT_EQ(reinterpret_cast<char *>(args.lseAccum) - workspace, counters);
  EXPECT_EQ(reinterpret_cast<char *>(args.oAccum) - workspace, counters + lse);
  setTailSplit(args, spec, {}, workspace);
  EXPECT_EQ(args.tailParts, 0);
  EXPECT_EQ(args.tailCounters, nullptr);
}
