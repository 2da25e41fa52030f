//===- KeysAsRowsRulesTest.cpp - wgmma tiles with keys as rows, as rules --===//
//
// pipeline=wgmma with bm under 64 (keysAsRows): one warpgroup computes
// S^T = K Q^T and O^T = V^T P^T with the query rows as wgmma's N. Which
// specs take it, the errors of those that cannot, and where P and the
// warps' exchange sit in shared memory.
//
//===----------------------------------------------------------------------===//
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/StringRef.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

const char *kDecode = "family=fwd_splitkv,dtype=bf16,d=128,pack_gqa=1,lse=1,"
                      "pipeline=wgmma,bn=128,warps=4,stages=2,target=sm_90a,";

TEST(KeysAsRows, TileRowsUnder64OnTheForwardFamilies) {
  for (unsigned bm : {8u, 16u, 32u, 56u}) {
    llvm::Expected<KernelSpec> spec =
        resolveText(std::string(kDecode) + "bm=" + std::to_string(bm));
    ASSERT_TRUE(bool(spec)) << bm << ": " << llvm::toString(spec.takeError());
    EXPECT_TRUE(keysAsRows(*spec)) << bm;
    EXPECT_TRUE(usesTensorMaps(*spec)) << bm;
  }
  EXPECT_FALSE(keysAsRows(resolvedSpec(std::string(kDecode) + "bm=64")));
  for (const char *family : {"fwd", "fwd_paged"})
    EXPECT_TRUE(keysAsRows(resolvedSpec(
        std::string("family=") + family +
        ",dtype=fp16,d=64,pipeline=wgmma,bm=16,bn=64,warps=4,stages=2,"
        "target=sm_90a")))
        << family;
  // The name carries the tile, and decodes back to it.
  KernelSpec spec = resolvedSpec(std::string(kDecode) + "bm=8");
  std::string name = encodeName(spec);
  EXPECT_EQ(name, "fmha_fwdsplitkv_bf16_d128_lse_pgqa_m8n128w4s2_wgmma_sm90a");
  llvm::Expected<KernelSpec> decoded = decodeName(name);
  ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
  EXPECT_EQ(*decoded, spec);
}

// Each rule's error names the key and what to use instead.
TEST(KeysAsRows, RefusesWhatOneWarpgroupCannotTake) {
  struct Case {
    const char *keys, *error;
  } cases[] = {
      {"bm=12,bn=128,warps=4,stages=2",
       "bm=12: pipeline wgmma with keys as rows (bm under 64) takes the query "
       "rows as the products' N, in swizzle atoms of 8"},
      {"bm=8,bn=128,warps=8,stages=2",
       "warps=8: pipeline wgmma with keys as rows (bm under 64) computes in "
       "one warpgroup: use warps=4"},
      {"bm=8,bn=96,warps=4,stages=2",
       "bn=96: pipeline wgmma with keys as rows (bm under 64) multiplies 64 "
       "keys a product"},
      {"bm=8,bn=128,warps=4,stages=1",
       "stages=1: pipeline wgmma with keys as rows (bm under 64) reads K and "
       "V from the TMA ring"},
      {"bm=8,bn=128,warps=4,stages=2,dv=96",
       "dv=96: pipeline wgmma with keys as rows (bm under 64) computes O^T 64 "
       "columns a product"},
      {"bm=8,bn=128,warps=4,stages=2,dtype=fp8_e4m3",
       "only 16-bit types have: dtype=fp8_e4m3 takes bm=64 or more"},
      {"bm=8,bn=64,warps=4,stages=2,family=fwd,dropout=1",
       "keys as rows (bm under 64) has no dropout"},
  };
  for (const Case &c : cases) {
    std::string text =
        std::string("d=128,pipeline=wgmma,target=sm_90a,") + c.keys;
    if (!llvm::StringRef(c.keys).contains("family="))
      text += ",family=fwd_splitkv";
    llvm::Expected<KernelSpec> spec = resolveText(text);
    ASSERT_FALSE(bool(spec)) << text;
    std::string message = llvm::toString(spec.takeError());
    EXPECT_NE(message.find(c.error), std::string::npos)
        << text << ": " << message;
  }
  // Under 64 rows but not wgmma: the pipeline's own edges.
  EXPECT_FALSE(bool(resolveText("family=fwd,dtype=bf16,d=128,pipeline=mma,"
                                "bm=8,warps=1,target=sm_90a")));
}

// Q, then P's two [bm][bn] buffers on the next atom, then the exchange's two
// buffers of bm rows of four floats, then the ring on the next atom. No
// persistent walk: its items are decode's.
TEST(KeysAsRows, PAndTheExchangeSitBetweenQAndTheRing) {
  const ArchInfo &arch = *findArch("sm_90a");
  KernelSpec spec = resolvedSpec(std::string(kDecode) + "bm=8");
  WgmmaLayout layout(spec, arch);
  EXPECT_EQ(layout.query.bytes(), 8u * 128 * 2);
  EXPECT_EQ(layout.probabilities.offset, 2048u);
  EXPECT_EQ(layout.probabilities.bytes(), 8u * 128 * 2);
  EXPECT_EQ(layout.exchange.offset, layout.probabilities.end() + 2048);
  EXPECT_EQ(layout.exchange.bytes(), 2u * 8 * 4 * 4);
  EXPECT_EQ(layout.keys.offset, 7168u); // 6400 to the next atom
  EXPECT_EQ(layout.stageBytes(), 2u * 128 * 128 * 2);
  EXPECT_EQ(tileFootprintBytes(spec, arch), layout.bytes());
  KernelSpec wide = resolvedSpec(std::string(kDecode) + "bm=64");
  EXPECT_EQ(WgmmaLayout(wide, arch).probabilities.bytes(), 0u);
  EXPECT_FALSE(walksWorkItems(resolvedSpec(
      "family=fwd,dtype=bf16,d=128,pipeline=wgmma,bm=16,bn=128,warps=4,"
      "stages=2,target=sm_90a")));
}

} // namespace
