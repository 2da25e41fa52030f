//===- DispatchTableTest.cpp - specs/dispatch/*.json and the registry -----===//
//
// The dispatch data is sane: every target has a table (the embedded files
// name real targets, each once), every tile a table can choose validates for
// each dtype its pipeline takes and each head dim, rows are reachable, and
// every target's registry expands and finds each feature set it holds.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/DispatchTable.h"
#include "runtime/api/Registry.h"
#include "specs/ArchTable.h"
#include "specs/EmbeddedData.h"
#include "specs/EncodedName.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

std::vector<std::string> archNames() {
  std::vector<std::string> names;
  for (const ArchInfo &a : allArchs())
    names.push_back(a.name);
  return names;
}

class DispatchData : public ::testing::TestWithParam<std::string> {
protected:
  const ArchInfo &arch() const { return *findArch(GetParam()); }
  const DispatchTable &table() const {
    return DispatchTable::forTarget(GetParam());
  }
};

TEST_P(DispatchData, EveryTargetHasAFile) {
  EXPECT_FALSE(table().file.empty())
      << GetParam() << " is in no specs/dispatch file";
  EXPECT_FALSE(table().profiles.empty());
}

TEST_P(DispatchData, EveryChoosableTileValidates) {
  for (Pipeline p : arch().autoOrder)
    for (DType t : arch().pipeline(p)->dtypes)
      for (unsigned d : arch().headDims)
        for (Mask m : {Mask::None, Mask::Causal})
          for (const Tile &tile :
               table().tilesFor(arch(), p, d, t, m, /*withSplitTiles=*/true)) {
            KernelSpec s;
            s.dtype = t, s.d = d, s.pipeline = p, s.target = GetParam();
            s.mask = m;
            s.bm = tile.bm, s.bn = tile.bn, s.warps = tile.warps,
            s.stages = tile.stages, s.v_pretranspose = tile.vPretranspose;
            llvm::Expected<KernelSpec> r = validateSpec(s);
            // fp8 takes only the wgmma rows its V transposers fit; the
            // dispatcher keeps every candidate when no row fits
            // (DispatcherTest's Fp8 cases).
            if (!r && isFp8(t) && p == Pipeline::Wgmma) {
              llvm::consumeError(r.takeError());
              continue;
            }
            EXPECT_TRUE(bool(r))
                << GetParam() << " " << keyOf(p).str() << " " << keyOf(t).str()
                << " d=" << d << " " << tile.str() << ": "
                << (r ? "" : llvm::toString(r.takeError()));
            if (!r)
              llvm::consumeError(r.takeError());
          }
}

// Rows are tried in order: a row that an earlier one always wins over is
// dead data.
// Row j hides a later row i when it serves every query length, head dim,
// dtype and mask that i does.
TEST_P(DispatchData, EveryRowIsReachable) {
  auto covers = [](const auto &outer, const auto &inner) {
    return outer.empty() ||
           (!inner.empty() && llvm::all_of(inner, [&](const auto &x) {
             return llvm::is_contained(outer, x);
           }));
  };
  for (const auto *list : {&table().tiles, &table().splitTiles})
    for (const auto &[pipeline, rows] : *list)
      for (size_t i = 0; i < rows.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          EXPECT_FALSE(rows[j].maxSeqlenQ >= rows[i].maxSeqlenQ &&
                       rows[j].maxD >= rows[i].maxD &&
                       covers(rows[j].dtypes, rows[i].dtypes) &&
                       covers(rows[j].masks, rows[i].masks))
              << GetParam() << " " << keyOf(pipeline).str() << ": row " << i
              << " is hidden by row " << j;
}

TEST_P(DispatchData, RegistryExpandsAndIndexesByFeatures) {
  llvm::Expected<const Registry &> r = Registry::forTarget(GetParam());
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  ASSERT_FALSE(r->candidates().empty());
  for (const KernelSpec &s : r->candidates()) {
    std::vector<KernelSpec> same = r->matching(featureKey(s));
    EXPECT_NE(std::find(same.begin(), same.end(), s), same.end())
        << encodeName(s);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTargets, DispatchData,
                         ::testing::ValuesIn(archNames()),
                         [](const auto &info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(DispatchTable, HostBucketsFollowTheQueryLength) {
  const ArchInfo &host = *findArch("host");
  const DispatchTable &t = DispatchTable::forTarget("host");
  auto bm = [&](int64_t sq) {
    return t.choose(host, Pipeline::Vector, 128, DType::F32, Mask::None, sq)
        ->tile.bm;
  };
  EXPECT_EQ(bm(1), 16u);
  EXPECT_EQ(bm(16), 16u);
  EXPECT_EQ(bm(17), 32u);
  EXPECT_EQ(bm(32), 32u);
  EXPECT_EQ(bm(33), 64u);
  EXPECT_EQ(bm(1 << 20), 64u);
}

TEST(DispatchTable, TilesForAreWhatChooseReturns) {
  const ArchInfo &arch = *findArch("sm_90a");
  const DispatchTable &t = DispatchTable::forTarget("sm_90a");
  std::vector<Tile> tiles =
      t.tilesFor(arch, Pipeline::Mma, 64, DType::BF16, Mask::None);
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[0].str(), "m64n64w4s1");
  EXPECT_EQ(tiles[1].str(), "m128n64w8s1");
  EXPECT_EQ(
      t.tilesFor(arch, Pipeline::Mma, 256, DType::BF16, Mask::None).size(), 1u);
}

// split_tiles: a split-KV decode of up to 32 packed rows on sm_90a may take
// wgmma m64n64 instead of m64n128 (SplitPlanner.h says when); the registry
// holds it for the split families only, and no other pipeline has one.
TEST(DispatchTable, SplitTilesNarrowDecodeKeyTiles) {
  const ArchInfo &arch = *findArch("sm_90a");
  const DispatchTable &t = DispatchTable::forTarget("sm_90a");
  std::optional<TileChoice> narrow =
      t.chooseSplitTile(arch, Pipeline::Wgmma, 128, DType::BF16, Mask::None, 8);
  ASSERT_TRUE(narrow);
  EXPECT_EQ(narrow->tile.str(), "m64n64w4s1");
  EXPECT_EQ(narrow->row, "split_tiles: seqlen_q <= 32, d <= 128, dtypes "
                         "fp16/bf16 (dispatch/nvptx.json)");
  EXPECT_EQ(t.choose(arch, Pipeline::Wgmma, 128, DType::BF16, Mask::None, 8)
                ->tile.str(),
            "m64n128w4s1");
  EXPECT_FALSE(t.chooseSplitTile(arch, Pipeline::Wgmma, 128, DType::BF16,
                                 Mask::None, 64));
  EXPECT_FALSE(t.chooseSplitTile(arch, Pipeline::Wgmma, 256, DType::BF16,
                                 Mask::None, 8));
  EXPECT_FALSE(
      t.chooseSplitTile(arch, Pipeline::Mma, 128, DType::BF16, Mask::None, 8));
  auto hasNarrow = [&](bool withSplitTiles) {
    return llvm::any_of(t.tilesFor(arch, Pipeline::Wgmma, 128, DType::BF16,
                                   Mask::None, withSplitTiles),
                        [](const Tile &x) { return x.str() == "m64n64w4s1"; });
  };
  EXPECT_TRUE(hasNarrow(true));
  EXPECT_FALSE(hasNarrow(false));
  EXPECT_TRUE(DispatchTable::forTarget("host").splitTiles.empty());
}

// Rows may name masks: without one, fp16/bf16 d = 128 takes a wider key
// tile from 2048 queries (bn = 160), which causal kernels spill; fp8 d = 128
// runs on three consumer warpgroups (bm = 192, bn = 96) at every length
// without a mask and from 8192 causal, with V^T from the pass
// (v_pretranspose) from 4096 queries unmasked and 8192 causal (d = 256:
// from 4096); causal d = 64 takes 128 query rows
// instead of 192 up to 1024, and causal d = 256 a narrower key tile up to
// 1024.
TEST(DispatchTable, RowsMayNameMasks) {
  const ArchInfo &arch = *findArch("sm_90a");
  const DispatchTable &t = DispatchTable::forTarget("sm_90a");
  struct Pick {
    unsigned d;
    DType dtype;
    Mask mask;
    int64_t seqlenQ;
    const char *tile;
  };
  for (const Pick &p : std::initializer_list<Pick>{
           {128, DType::BF16, Mask::None, 1024, "m128n128w8s2"},
           {128, DType::BF16, Mask::None, 2048, "m128n160w8s2"},
           {128, DType::F8E4M3, Mask::None, 2048, "m192n96w12s2"},
           {128, DType::BF16, Mask::None, 8192, "m128n160w8s2"},
           {128, DType::F16, Mask::None, 8192, "m128n160w8s2"},
           {128, DType::BF16, Mask::Causal, 8192, "m128n128w8s2"},
           {128, DType::F8E4M3, Mask::None, 4096, "vpt_m192n96w12s2"},
           {128, DType::F8E4M3, Mask::None, 8192, "vpt_m192n96w12s2"},
           {128, DType::F8E4M3, Mask::Causal, 2048, "m128n128w8s2"},
           {128, DType::F8E4M3, Mask::Causal, 4096, "vpt_m192n96w12s2"},
           {128, DType::F8E4M3, Mask::Causal, 8192, "vpt_m192n96w12s2"},
           {256, DType::F8E4M3, Mask::None, 2048, "m128n96w8s2"},
           {256, DType::F8E4M3, Mask::None, 4096, "vpt_m128n96w8s2"},
           {64, DType::BF16, Mask::Causal, 1024, "m128n128w8s2"},
           {64, DType::BF16, Mask::Causal, 2048, "m192n128w12s2"},
           {64, DType::BF16, Mask::Causal, 16384, "m192n128w12s2"},
           {64, DType::BF16, Mask::None, 2048, "m192n128w12s2"},
           {256, DType::BF16, Mask::Causal, 1024, "m128n64w8s2"},
           {256, DType::BF16, Mask::Causal, 2048, "m128n80w8s2"},
           {256, DType::BF16, Mask::None, 512, "m128n80w8s2"},
           {256, DType::F8E4M3, Mask::Causal, 512, "m128n96w8s2"}})
    EXPECT_EQ(t.choose(arch, Pipeline::Wgmma, p.d, p.dtype, p.mask, p.seqlenQ)
                  ->tile.str(),
              p.tile)
        << "d=" << p.d << " " << keyOf(p.dtype).str() << " "
        << keyOf(p.mask).str() << " seqlen_q=" << p.seqlenQ;
  // The plan's explanation names what selected the row.
  EXPECT_EQ(
      t.choose(arch, Pipeline::Wgmma, 128, DType::BF16, Mask::None, 8192)->row,
      "any seqlen_q, d <= 128, dtypes fp16/bf16, masks none "
      "(dispatch/nvptx.json)");
  std::vector<Tile> registered =
      t.tilesFor(arch, Pipeline::Wgmma, 128, DType::BF16, Mask::None);
  EXPECT_TRUE(llvm::any_of(
      registered, [](const Tile &x) { return x.str() == "m128n160w8s2"; }));
  EXPECT_FALSE(llvm::any_of(
      t.tilesFor(arch, Pipeline::Wgmma, 128, DType::BF16, Mask::Causal),
      [](const Tile &x) { return x.bn == 160; }));
}

} // namespace
