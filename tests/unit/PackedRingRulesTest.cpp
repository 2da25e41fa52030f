//===- PackedRingRulesTest.cpp - pack_gqa on wgmma's TMA ring, as rules ---===//
//
// Under pack_gqa the ring's consumers copy Q's packed rows while the
// producer loads K and V by TMA (WgmmaLayout::copiesQueryRows): the layout,
// the walk's register rule and the default tiles that keep packed specs off
// the ring until it is timed into the plan (defaultTileServes).
//
//===----------------------------------------------------------------------===//
#include "specs/ArchTable.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/StringRef.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

// pack_gqa on the TMA ring (issue 13): Q's rows are (token, head) pairs no
// tensor map boxes, so the consumers copy them (copiesQueryRows) while the
// producer loads K and V, one K/V head's boxes as without pack_gqa. The
// layout, barriers and footprint are the unpacked kernel's.
TEST(TileRules, WgmmaRingCopiesPackedQueryRows) {
  for (const char *family : {"fwd", "fwd_splitkv"})
    for (unsigned d : {64u, 128u, 256u})
      for (const char *tile :
           {"bm=64,warps=4,stages=2", "bm=64,warps=4,stages=3",
            "bm=128,warps=8,stages=2"}) {
        std::string text = std::string("family=") + family +
                           ",d=" + std::to_string(d) +
                           ",pipeline=wgmma,target=sm_90a," + tile;
        if (d == 256 && llvm::StringRef(tile).contains("stages=3"))
          continue; // three slots of K and V do not fit at d = 256
        llvm::Expected<KernelSpec> packed = resolveText(text + ",pack_gqa=1");
        ASSERT_TRUE(bool(packed))
            << text << ": " << llvm::toString(packed.takeError());
        KernelSpec plain = resolvedSpec(text);
        const ArchInfo &arch = *findArch("sm_90a");
        EXPECT_TRUE(usesTensorMaps(*packed)) << text;
        EXPECT_TRUE(WgmmaLayout(*packed, arch).copiesQueryRows()) << text;
        EXPECT_FALSE(WgmmaLayout(plain, arch).copiesQueryRows()) << text;
        EXPECT_EQ(tileFootprintBytes(*packed, arch),
                  tileFootprintBytes(plain, arch))
            << text;
        EXPECT_EQ(blockWarps(*packed), blockWarps(plain)) << text;
      }
  EXPECT_FALSE(WgmmaLayout(resolvedSpec("d=128,pack_gqa=1,pipeline=wgmma,"
                                        "stages=1,target=sm_90a"),
                           *findArch("sm_90a"))
                   .copiesQueryRows());
  // fp8, whose V the transposers turn, takes it too.
  EXPECT_TRUE(bool(resolveText("family=fwd_splitkv,dtype=fp8_e4m3,d=128,"
                               "pack_gqa=1,stages=2,target=sm_90a")));
}

// A packed family=fwd kernel on the ring walks work items as an unpacked
// one does, but for two consumer warpgroups past d = 128 or bn = 128,
// which spilled walking (their per-row tokens and heads).
TEST(TileRules, PackedRingWalksWhereItsRegistersAllow) {
  auto walks = [](const std::string &keys) {
    return walksWorkItems(resolvedSpec(
        "family=fwd,dtype=bf16,pipeline=wgmma,pack_gqa=1,target=sm_90a," +
        keys));
  };
  EXPECT_TRUE(walks("d=128,bm=64,bn=128,warps=4,stages=2"));
  EXPECT_TRUE(walks("d=256,bm=64,bn=80,warps=4,stages=2,mask=causal_br"));
  EXPECT_TRUE(walks("d=128,bm=128,bn=128,warps=8,stages=2,mask=causal"));
  EXPECT_TRUE(walks("d=64,bm=192,bn=128,warps=12,stages=2"));
  EXPECT_FALSE(walks("d=256,bm=128,bn=80,warps=8,stages=2"));
  EXPECT_FALSE(walks("d=128,bm=128,bn=160,warps=8,stages=2"));
  EXPECT_TRUE(walksWorkItems(resolvedSpec(
      "family=fwd,d=256,bm=128,bn=80,warps=8,pipeline=wgmma,stages=2,"
      "target=sm_90a")));
  EXPECT_FALSE(walksWorkItems(resolvedSpec(
      "family=fwd_splitkv,dtype=bf16,d=128,bm=64,bn=128,warps=4,pipeline="
      "wgmma,stages=2,pack_gqa=1,target=sm_90a")));
}

// Default tiles keep pack_gqa off the ring until its tiles are timed
// against stages=1's (defaultTileServes): a packed spec that leaves stages
// to the arch's rows gets their stages=1 row, as before the ring took
// packed rows; one that names stages gets the ring. fp8, which has no
// stages=1 row, must name it.
TEST(TileRules, PackedSpecsTakeTheRingOnlyByNamingStages) {
  for (unsigned d : {64u, 128u, 256u})
    for (const char *family : {"fwd", "fwd_splitkv"}) {
      std::string text = std::string("family=") + family +
                         ",dtype=bf16,d=" + std::to_string(d) +
                         ",pack_gqa=1,target=sm_90a";
      KernelSpec byDefault = resolvedSpec(text);
      EXPECT_EQ(byDefault.pipeline, Pipeline::Wgmma) << text;
      EXPECT_EQ(byDefault.stages, 1u) << text;
      EXPECT_EQ(resolvedSpec(text + ",bm=64,bn=128,warps=4").stages, 1u)
          << text;
      EXPECT_TRUE(usesTensorMaps(resolvedSpec(text + ",stages=2"))) << text;
      EXPECT_FALSE(defaultTileServes(resolvedSpec(text + ",stages=2")));
      EXPECT_TRUE(defaultTileServes(byDefault));
    }
  std::string fp8 = "family=fwd_splitkv,dtype=fp8_e4m3,d=128,pack_gqa=1,"
                    "target=sm_90a";
  llvm::Expected<KernelSpec> spec = resolveText(fp8);
  ASSERT_FALSE(bool(spec));
  std::vector<std::string> problems = specProblems(spec.takeError(), fp8);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "stages=2: pack_gqa takes pipeline wgmma's TMA ring only where "
            "the spec names stages (its tiles are not yet timed against "
            "stages=1's): name stages=2 to use it");
  EXPECT_TRUE(bool(resolveText(fp8 + ",stages=2")));
}

} // namespace
