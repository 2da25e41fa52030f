//===- BlockMaskTest.cpp - The block classification behind block sparsity -===//
//
// runtime/numerics/BlockMask.h on small tiles (4 x 4), drawn as grids: one
// row of letters per query tile, one letter per key tile, H hidden (not in
// the list), F full, P partial. Ragged edges are the interesting part: a
// block cut by the end of the queries or keys is judged on its real
// elements only. A table of masks is also checked against the definition
// element by element, on lengths that cut tiles every way.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/BlockMask.h"
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
KernelSpec tileSpec(Mask mask) {
  KernelSpec spec;
  spec.bm = 4;
  spec.bn = 4;
  spec.mask = mask;
  return spec;
}

AttentionProblem problemOf(int64_t sq, int64_t sk, int64_t heads = 1) {
  AttentionProblem a;
  a.seqlenQ = sq;
  a.seqlenK = sk;
  a.headsQ = a.headsKv = heads;
  return a;
}

/// The map of sequence \p b, head \p h as letters, query tiles separated
/// by spaces.
std::string draw(const BlockMap &map, int64_t b, int64_t h) {
  std::string out;
  for (int64_t t = 0; t < map.queryTiles; ++t) {
    const int32_t *row = &map.entries[b * map.batchStride + h * map.headStride +
                                      t * map.tileStride];
    std::string letters(map.keyTiles, 'H');
    for (int32_t i = 0; i < row[0]; ++i)
      letters[row[1 + i] >> 1] = row[1 + i] & 1 ? 'F' : 'P';
    out += (t ? " " : "") + letters;
  }
  return out;
}

struct GridCase {
  const char *name;
  Mask mask;
  int64_t sq, sk;
  MaskModFn maskMod;
  const char *grid;
};

const GridCase kGrids[] = {
    {"CausalThroughMaskMod", Mask::None, 10, 10,
     [](int, int, int q, int k) { return k <= q; }, "PHH FPH FFP"},
    // The last block holds query 8 and key 8 only: k <= q on all of it.
    {"RaggedCornerBecomesFull", Mask::None, 9, 9,
     [](int, int, int q, int k) { return k <= q; }, "PHH FPH FFF"},
    // mask_mod is false only past the keys' end: no block is partial.
    {"FalseOnlyPastTheEnd", Mask::None, 5, 9,
     [](int, int, int, int k) { return k < 9; }, "FFF FFF"},
    // The spec's causal mask hides block (0, 1); where mask_mod is true on
    // all of a block it is full (the kernel applies the spec's mask).
    {"SpecMaskHides", Mask::Causal, 8, 8,
     [](int, int, int, int) { return true; }, "FH FF"},
    // Documents of 3 tokens: tiles of 4 cut them, nothing is full.
    {"DocumentsAcrossTiles", Mask::None, 8, 8,
     [](int, int, int q, int k) { return q / 3 == k / 3; }, "PP PP"},
    {"NothingVisible", Mask::None, 6, 7,
     [](int, int, int, int) { return false; }, "HH HH"},
};

class BlockMaskGrids : public testing::TestWithParam<GridCase> {};

TEST_P(BlockMaskGrids, DrawTheExpectedGrid) {
  const GridCase &c = GetParam();
  BlockMap map = buildBlockMap(tileSpec(c.mask), problemOf(c.sq, c.sk),
                               c.maskMod, {false, false});
  EXPECT_EQ(draw(map, 0, 0), c.grid);
  EXPECT_EQ(map.hidden + map.partial + map.full, map.queryTiles * map.keyTiles);
}

INSTANTIATE_TEST_SUITE_P(Grids, BlockMaskGrids, testing::ValuesIn(kGrids),
                         [](const testing::TestParamInfo<GridCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(BlockMask, MapPerHeadWhereMaskModReadsH) {
  MaskModFn mask = [](int, int h, int q, int k) { return h == 0 || k <= q; };
  BlockMap perHead = buildBlockMap(tileSpec(Mask::None), problemOf(4, 4, 2),
                                   mask, {false, true});
  EXPECT_EQ(perHead.batchStride, 0);
  EXPECT_EQ(perHead.headStride, perHead.queryTiles * perHead.tileStride);
  EXPECT_EQ(draw(perHead, 0, 0), "F");
  EXPECT_EQ(draw(perHead, 0, 1), "P");
  BlockMap shared = buildBlockMap(tileSpec(Mask::None), problemOf(4, 4, 2),
                                  mask, {false, false});
  EXPECT_EQ(shared.headStride, 0); // evaluated at h = 0 only
  EXPECT_EQ(shared.entries.size(), size_t(shared.tileStride));
}

TEST(BlockMask, VarlenSequencesGetTheirOwnLengths) {
  AttentionProblem a = problemOf(0, 0);
  a.batch = 2;
  a.seqlensQ = {5, 2};
  a.seqlensK = {5, 9};
  BlockMap map = buildBlockMap(tileSpec(Mask::None), a,
                               [](int, int, int q, int k) { return k <= q; },
                               {false, false});
  EXPECT_EQ(map.queryTiles, 2);
  EXPECT_EQ(map.keyTiles, 3);
  EXPECT_EQ(draw(map, 0, 0), "PHH FFH"); // the last query tile holds q=4
  EXPECT_EQ(draw(map, 1, 0), "PHH HHH"); // no rows in the second tile
}

// Every block of every mask against the definition: hidden iff no real
// element is visible under the spec's mask and mask_mod; full iff mask_mod
// holds on every real element.
TEST(BlockMask, AgreesWithTheDefinitionElementByElement) {
  const MaskModFn masks[] = {
      [](int, int, int q, int k) { return (q * 7 + k * 13) % 11 != 0; },
      [](int, int, int q, int k) { return q / 5 == k / 5 || k < 2; },
      [](int, int, int q, int k) { return k >= q - 3 && k <= q; },
  };
  for (Mask specMask : {Mask::None, Mask::Causal, Mask::CausalBr})
    for (const MaskModFn &mask : masks)
      for (auto [sq, sk] : std::vector<std::pair<int64_t, int64_t>>{
               {13, 13}, {7, 18}, {17, 6}, {1, 9}}) {
        KernelSpec spec = tileSpec(specMask);
        AttentionProblem a = problemOf(sq, sk);
        BlockMap map = buildBlockMap(spec, a, mask, {false, false});
        std::string grid = draw(map, 0, 0);
        for (int64_t t = 0; t < map.queryTiles; ++t)
          for (int64_t kt = 0; kt < map.keyTiles; ++kt) {
            bool any = false, all = true;
            for (int64_t i = t * 4; i < std::min<int64_t>(t * 4 + 4, sq); ++i)
              for (int64_t j = kt * 4; j < std::min<int64_t>(kt * 4 + 4, sk);
                   ++j) {
                bool causal = specMask == Mask::None     ? true
                              : specMask == Mask::Causal ? j <= i
                                                         : j <= i + sk - sq;
                all &= mask(0, 0, int(i), int(j));
                any |= mask(0, 0, int(i), int(j)) && causal;
              }
            char want = !any ? 'H' : all ? 'F' : 'P';
            EXPECT_EQ(grid[t * (map.keyTiles + 1) + kt], want)
                << "spec mask " << int(specMask) << ", " << sq << "x" << sk
                << ", block (" << t << ", " << kt << ") of " << grid;
          }
      }
}
} // namespace
