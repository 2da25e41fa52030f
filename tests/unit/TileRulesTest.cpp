//===- TileRulesTest.cpp - The pipelines' layouts and tile rules ----------===//
//
// The layout classes in specs/pipelines place the tiles code generation
// uses, so their offsets are checked against hand-computed ones, and their
// footprint against the tiles they place. Their rules must hold for any
// table, so some tests hand them tables that differ from the shipped ones.
//
//===----------------------------------------------------------------------===//
#include "specs/pipelines/TileRules.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "specs/pipelines/AmdgpuBackwardLayout.h"
#include "specs/pipelines/AmdgpuMatrixLayout.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/MmaLayout.h"
#include "specs/pipelines/SimtLayout.h"
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

/// The messages checkTileRules gives \p spec on \p arch.
std::vector<std::string> ruleProblems(const KernelSpec &spec,
                                      const ArchInfo &arch) {
  ErrorList errors;
  checkTileRules(spec, arch, errors);
  return takeProblems(errors.take()).messages;
}

TEST(MmaLayout, PlacesPaddedRowsOfQThenKThenV) {
  KernelSpec s = resolvedSpec(
      "d=128,dv=64,bm=128,bn=64,warps=4,pipeline=mma,target=sm_80");
  MmaLayout layout(s, *findArch("sm_80"));
  EXPECT_EQ(layout.queryTilesPerWarp, 2u);
  EXPECT_EQ(layout.query.offset, 0u);
  EXPECT_EQ(layout.query.pitch, 136u);
  EXPECT_EQ(layout.keys.offset, 128u * 136 * 2);
  EXPECT_EQ(layout.values.offset, layout.keys.offset + 64u * 136 * 2);
  EXPECT_EQ(layout.values.pitch, 72u);
  EXPECT_EQ(layout.bytes(), layout.values.end());
  EXPECT_EQ(tileFootprintBytes(s, *findArch("sm_80")), layout.bytes());
}

// Warps own 16 keys each; the warps that share a row group's queries split
// its keys (and dQ's columns) where bm < bn.
TEST(BackwardMmaLayout, SplitsKeysAmongWarpsThatShareQueries) {
  struct Row {
    const char *tile;
    unsigned tilesPerWarp, rowGroups, keyGroups;
  };
  for (Row r : {Row{"bm=64,bn=64,warps=4", 1, 4, 1},
                Row{"bm=64,bn=128,warps=8", 1, 4, 2},
                Row{"bm=32,bn=128,warps=8", 1, 2, 4},
                Row{"bm=128,bn=128,warps=4", 2, 4, 1}}) {
    KernelSpec s = resolvedSpec(std::string("family=bwd_dq_dk_dv,d=128,") +
                                r.tile + ",pipeline=mma,target=sm_90a");
    BackwardMmaLayout layout(s);
    EXPECT_EQ(layout.tilesPerWarp, r.tilesPerWarp) << r.tile;
    EXPECT_EQ(layout.rowGroups, r.rowGroups) << r.tile;
    EXPECT_EQ(layout.keyGroups, r.keyGroups) << r.tile;
    EXPECT_EQ(layout.rowGroups * layout.keyGroups, s.warps) << r.tile;
    // Q, dO [bm] | K, V [bn] | P, dS [bm][bn], rows padded by 8 elements
    unsigned bytes =
        2 * (2 * s.bm * 136 + 2 * s.bn * 136 + 2 * s.bm * (s.bn + 8));
    EXPECT_EQ(layout.bytes(), bytes) << r.tile;
    EXPECT_EQ(tileFootprintBytes(s, *findArch("sm_90a")), bytes) << r.tile;
  }
}

// bwd_dq_dk_dv takes pipeline wgmma on sm_90a by default up to d = 128: its
// tile per head dim and features, how the warpgroups split dQ, and where
// the tiles sit (each on a 1024-byte boundary). The helpers, deterministic=1,
// dropout=1 and d = 96 stay on mma.
TEST(WgmmaBackwardLayout, DefaultTilesAndPlacement) {
  struct Row {
    const char *spec;
    const char *pipeline;
    unsigned bm, bn, warps, dqRowGroups, dqColGroups;
  };
  for (Row r : {Row{"d=128", "wgmma", 64, 128, 8, 1, 2},
                Row{"d=128,mask=causal,bias=alibi", "wgmma", 64, 128, 8, 1, 2},
                Row{"d=64", "wgmma", 128, 128, 8, 2, 1},
                Row{"d=64,mask=causal", "wgmma", 128, 128, 8, 2, 1},
                Row{"d=64,mask=window", "wgmma", 64, 64, 4, 1, 1},
                Row{"d=64,softcap=1", "wgmma", 64, 64, 4, 1, 1},
                Row{"d=32", "wgmma", 64, 64, 4, 1, 1},
                Row{"d=96", "mma", 64, 64, 4, 0, 0},
                Row{"d=128,softcap=1", "mma", 32, 64, 4, 0, 0},
                Row{"d=128,deterministic=1", "mma", 64, 64, 4, 0, 0},
                Row{"d=128,dropout=1", "mma", 32, 64, 4, 0, 0}}) {
    KernelSpec s = resolvedSpec(std::string("family=bwd_dq_dk_dv,dtype=bf16,") +
                                r.spec + ",target=sm_90a");
    EXPECT_EQ(keyOf(s.pipeline), r.pipeline) << r.spec;
    EXPECT_EQ(s.bm, r.bm) << r.spec;
    EXPECT_EQ(s.bn, r.bn) << r.spec;
    EXPECT_EQ(s.warps, r.warps) << r.spec;
    if (s.pipeline != Pipeline::Wgmma)
      continue;
    WgmmaBackwardLayout layout(s);
    EXPECT_EQ(layout.dqRowGroups, r.dqRowGroups) << r.spec;
    EXPECT_EQ(layout.dqColGroups, r.dqColGroups) << r.spec;
    // K | V | Q x 2 | dO x 2 | dS^T | LSE x 2 | D x 2
    unsigned kBytes = s.bn * s.d * 2, qBytes = s.bm * s.d * 2;
    EXPECT_EQ(layout.values.offset, kBytes) << r.spec;
    EXPECT_EQ(layout.query.offset, 2 * kBytes) << r.spec;
    EXPECT_EQ(layout.dO.offset, 2 * kBytes + 2 * qBytes) << r.spec;
    EXPECT_EQ(layout.grads.offset, 2 * kBytes + 4 * qBytes) << r.spec;
    EXPECT_EQ(layout.lse.offset, layout.grads.end()) << r.spec;
    EXPECT_EQ(layout.dsum.offset, layout.lse.offset + 8 * s.bm) << r.spec;
    EXPECT_EQ(tileFootprintBytes(s, *findArch("sm_90a")),
              layout.dsum.offset + 8 * s.bm)
        << r.spec;
  }
  KernelSpec helper =
      resolvedSpec("family=bwd_dot_do_o,dtype=bf16,d=128,target=sm_90a");
  EXPECT_EQ(helper.pipeline, Pipeline::Mma);
}

TEST(WgmmaBackwardLayout, RefusesWhatItCannotHold) {
  auto problems = [](const std::string &spec) {
    auto resolved = resolveText(spec);
    if (resolved)
      return std::string("valid");
    return llvm::join(specProblems(resolved.takeError(), spec), "; ");
  };
  const char *base = "family=bwd_dq_dk_dv,dtype=bf16,pipeline=wgmma,";
  auto with = [&](const char *rest) { return std::string(base) + rest; };
  EXPECT_NE(problems(with("d=128,bm=64,bn=64,warps=8,target=sm_90a"))
                .find("gives each warpgroup 64 keys: use bn=128"),
            std::string::npos);
  EXPECT_NE(problems(with("d=128,bm=192,bn=128,warps=8,target=sm_90a"))
                .find("in rows of 64"),
            std::string::npos);
  EXPECT_NE(problems(with("d=128,bm=128,bn=128,warps=8,target=sm_90a"))
                .find("320 registers a thread, at most 224"),
            std::string::npos);
  EXPECT_NE(problems(with("d=64,bm=64,bn=128,warps=8,target=sm_90a"))
                .find("splits dQ's columns among 2 warpgroups in slabs of 64"),
            std::string::npos);
  EXPECT_NE(
      problems(with("d=64,bm=128,bn=128,warps=8,mask=window,target=sm_90a"))
          .find("128 query rows only without ALiBi"),
      std::string::npos);
  EXPECT_NE(problems(with("d=128,bm=64,bn=128,warps=8,deterministic=1,"
                          "target=sm_90a"))
                .find("adds dQ atomically"),
            std::string::npos);
  EXPECT_NE(problems(with("d=128,bm=64,bn=128,warps=8,stages=2,target=sm_90a"))
                .find("copies with cp.async: use 1"),
            std::string::npos);
}

// The AMD backward's default tile per head dim and target: the first of
// AmdgpuBackwardLayout::defaultTiles whose LDS fits (64 KB on gfx90a,
// gfx942 and gfx1201, 160 KB on gfx950), and its LDS tiles' placement.
TEST(AmdgpuBackwardLayout, DefaultTileIsTheFirstThatFits) {
  struct Row {
    const char *spec;
    unsigned bm, bn, warps, queryTiles, keyBlocks, bytes;
  };
  for (Row r : {Row{"d=64,target=gfx90a", 64, 64, 2, 1, 1, 64512},
                Row{"d=96,target=gfx942", 32, 32, 1, 1, 1, 41472},
                Row{"d=128,target=gfx942", 32, 32, 1, 1, 1, 53248},
                Row{"d=128,target=gfx950", 64, 64, 2, 1, 1, 108544},
                Row{"d=64,target=gfx1201", 32, 32, 2, 1, 1, 38912},
                Row{"d=128,target=gfx1201", 16, 16, 1, 1, 1, 37376}}) {
    KernelSpec s = resolvedSpec(std::string("family=bwd_dq_dk_dv,") + r.spec);
    const ArchInfo &arch = *findArch(s.target);
    AmdgpuBackwardLayout layout(s, arch);
    EXPECT_EQ(s.bm, r.bm) << r.spec;
    EXPECT_EQ(s.bn, r.bn) << r.spec;
    EXPECT_EQ(s.warps, r.warps) << r.spec;
    EXPECT_EQ(layout.queryTilesPerWave, r.queryTiles) << r.spec;
    EXPECT_EQ(layout.keyBlocksPerWave, r.keyBlocks) << r.spec;
    // [Q | dO (wmma)] | K | V | K^T | Q^T | dO^T | P^T | dS^T, padded by 8
    unsigned d = s.d, rows = layout.queryInShared ? 2 * s.bm * (d + 8) : 0;
    unsigned bytes = 2 * (rows + 2 * s.bn * (d + 8) + d * (s.bn + 8) +
                          2 * d * (s.bm + 8) + 2 * s.bn * (s.bm + 8));
    EXPECT_EQ(layout.bytes(), bytes) << r.spec;
    EXPECT_EQ(layout.bytes(), r.bytes) << r.spec;
    EXPECT_EQ(tileFootprintBytes(s, arch), r.bytes) << r.spec;
    EXPECT_EQ(layout.gradsT.end(), r.bytes) << r.spec;
    ErrorList errors;
    layout.check(errors);
    EXPECT_TRUE(errors.empty()) << r.spec;
  }
}

// A lane per column of dK, dV and dQ: head dims in whole m-blocks up to
// 128; bn in whole key blocks per wave; the accumulators within 256 a lane.
TEST(AmdgpuBackwardLayout, RefusesWhatDoesNotDivide) {
  struct Row {
    unsigned d, bm, bn, warps;
    const char *target, *key;
  };
  for (Row r : {Row{80, 32, 32, 1, "gfx942", "d=80"},
                Row{256, 32, 32, 1, "gfx950", "d=256"},
                Row{64, 64, 32, 2, "gfx942", "bn=32"},
                Row{128, 128, 128, 2, "gfx950", "bm=128"}}) {
    KernelSpec s = resolvedSpec(
        std::string("family=bwd_dq_dk_dv,dtype=bf16,d=64,target=") + r.target);
    s.d = s.dv = r.d, s.bm = r.bm, s.bn = r.bn, s.warps = r.warps;
    std::string text = llvm::join(ruleProblems(s, *findArch(s.target)), "\n");
    EXPECT_NE(text.find(r.key), std::string::npos) << r.key << ": " << text;
  }
}

TEST(SimtLayout, RoundsEachTileTo16Bytes) {
  KernelSpec s =
      resolvedSpec("d=32,bm=16,bn=16,warps=1,pipeline=simt,target=sm_80");
  SimtLayout layout(s);
  EXPECT_EQ(layout.query.pitch, 33u);
  EXPECT_EQ(layout.keys.offset, 16u * 33 * 4); // 2112, already a multiple of 16
  EXPECT_EQ(layout.scores.pitch, 17u);
  // S is 16 x 17 floats = 1088 bytes; the row vectors start at a multiple
  // of 16.
  EXPECT_EQ(layout.rowVectorOffset(0), layout.scores.end());
  EXPECT_EQ(layout.rowVectorOffset(0) % 16, 0u);
  EXPECT_EQ(layout.bytes(),
            layout.rowVectorOffset(0) + SimtLayout::kRowVectors * 64);
}

TEST(AmdgpuMatrixLayout, QueryInLdsOnlyUnderWmma) {
  KernelSpec mfma = resolvedSpec("d=128,bm=128,bn=64,warps=4,target=gfx942");
  AmdgpuMatrixLayout cdna(mfma, *findArch("gfx942"));
  EXPECT_EQ(cdna.m, 32u);
  EXPECT_EQ(cdna.k, 8u);
  EXPECT_EQ(cdna.queryTilesPerWave, 1u);
  EXPECT_EQ(cdna.query.bytes(), 0u);
  EXPECT_EQ(cdna.keys.offset, 0u);
  EXPECT_EQ(cdna.valuesT.pitch, 72u);
  EXPECT_EQ(cdna.bytes(), cdna.valuesT.end());

  KernelSpec wmma = resolvedSpec("d=64,bm=64,bn=64,warps=4,target=gfx1201");
  AmdgpuMatrixLayout rdna(wmma, *findArch("gfx1201"));
  EXPECT_EQ(rdna.m, 16u);
  EXPECT_EQ(rdna.k, 16u);
  EXPECT_EQ(rdna.keys.offset, 64u * 72 * 2);
  EXPECT_EQ(rdna.bytes(), rdna.valuesT.end());
}

// Regression (issue 11): validation accepted 16 m-tiles a warp, and the mma
// emitter indexed its 8-long fragment array past its end.
TEST(TileRules, MmaWarpsOwnAtMostEightMTiles) {
  std::string text = "family=fwd,dtype=bf16,d=32,bm=256,bn=16,warps=1,pipeline="
                     "mma,target=sm_80";
  llvm::Expected<KernelSpec> spec = resolveText(text);
  ASSERT_FALSE(bool(spec));
  std::vector<std::string> problems = specProblems(spec.takeError(), text);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(
      problems[0],
      "bm=256: pipeline mma gives each warp at most 8 16-row tiles: use bm "
      "up to 128 for warps=1, or more warps");
  EXPECT_TRUE(
      bool(resolveText("d=32,bm=256,bn=16,warps=2,pipeline=mma,target=sm_80")));
}

// A table whose matrix shape does not split its wave is refused, not built.
TEST(TileRules, AmdMatrixShapeMustFitTheWave) {
  ArchInfo arch = *findArch("gfx942");
  arch.waveSize = 32;
  KernelSpec s =
      resolvedSpec("d=128,bm=128,bn=64,warps=4,pipeline=mfma,target=gfx942");
  std::vector<std::string> problems = ruleProblems(s, arch);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(problems[0])
                  .starts_with("pipeline=mfma: its shape '32x32x8'"))
      << problems[0];
}

// Granularity the emitters need holds even where a table would allow less.
TEST(TileRules, HeadDimsAndKeysFollowTheEmitters) {
  KernelSpec mma =
      resolvedSpec("d=64,bm=64,bn=64,warps=4,pipeline=mma,target=sm_80");
  mma.d = 72;
  mma.bn = 40;
  std::vector<std::string> problems = ruleProblems(mma, *findArch("sm_80"));
  EXPECT_EQ(
      llvm::join(problems, "\n"),
      "bn=40: pipeline mma multiplies 16 keys at a time: use a multiple of 16\n"
      "d=72: pipeline mma multiplies 16 columns at a time: use a multiple of "
      "16");

  KernelSpec host = resolvedSpec("d=64,dv=32,target=x86-64-v4");
  host.dv = 40;
  problems = ruleProblems(host, *findArch("x86-64-v4"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(problems[0]).starts_with("dv=40: "))
      << problems[0];

  KernelSpec mfma = resolvedSpec("d=64,bm=128,bn=64,warps=4,target=gfx950");
  mfma.bn = 48;
  mfma.d = 72; // gfx950's k is 16
  problems = ruleProblems(mfma, *findArch("gfx950"));
  EXPECT_EQ(llvm::join(problems, "\n"),
            "bn=48: pipeline mfma multiplies 32 keys at a time: use a multiple "
            "of 32\n"
            "d=72: pipeline mfma steps over d 16 columns at a time: use a "
            "multiple of 16");
}

TEST(TileRules, WgmmaRunsWholeWarpgroups) {
  std::string text = "pipeline=wgmma,warps=2,target=sm_90a";
  llvm::Expected<KernelSpec> spec = resolveText(text);
  ASSERT_FALSE(bool(spec));
  std::vector<std::string> problems = specProblems(spec.takeError(), text);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(problems[0])
                  .starts_with("warps=2: pipeline wgmma computes in whole "
                               "warpgroups"))
      << problems[0];
}

// stages=2 is wgmma's TMA ring: a producer warpgroup on top of the
// computing warps, two K/V slots and nine mbarriers after them; what a
// fixed-shape tensor map cannot describe is refused by name.
TEST(TileRules, WgmmaRingAddsAProducerAndBarriers) {
  KernelSpec ring = resolvedSpec("d=128,pipeline=wgmma,bm=128,bn=128,"
                                 "warps=8,stages=2,target=sm_90a");
  EXPECT_EQ(blockWarps(ring), 12u);
  EXPECT_TRUE(usesTensorMaps(ring));
  WgmmaLayout layout(ring, *findArch("sm_90a"));
  unsigned tile = 128 * 128 * 2; // Q, K and V tiles alike
  EXPECT_EQ(layout.stageBytes(), 2 * tile);
  EXPECT_EQ(layout.barrierOffset(), tile + 2 * 2 * tile);
  // Q's full and empty, then full and empty of each K and V slot.
  EXPECT_EQ(tileFootprintBytes(ring, *findArch("sm_90a")),
            layout.barrierOffset() + 10 * 8);
  KernelSpec deeper = resolvedSpec("d=128,pipeline=wgmma,bm=128,bn=128,"
                                   "warps=8,stages=3,target=sm_90a");
  EXPECT_TRUE(usesTensorMaps(deeper));
  EXPECT_EQ(tileFootprintBytes(deeper, *findArch("sm_90a")),
            tile + 3 * 2 * tile + 14 * 8);
  // The forward walks work items, causal ones too (in an order sorted by
  // cost); three consumer warpgroups with soft-capping and a mask have no
  // registers to spare for the walk.
  EXPECT_TRUE(walksWorkItems(ring));
  EXPECT_TRUE(walksWorkItems(
      resolvedSpec("d=128,mask=causal,pipeline=wgmma,stages=2,target=sm_90a")));
  EXPECT_FALSE(walksWorkItems(resolvedSpec(
      "d=64,mask=causal,softcap=1,pipeline=wgmma,stages=2,target=sm_90a")));
  // A window's persistent grid was never timed: a block per item.
  EXPECT_FALSE(walksWorkItems(
      resolvedSpec("d=128,mask=window,pipeline=wgmma,stages=2,target=sm_90a")));
  EXPECT_FALSE(walksWorkItems(resolvedSpec(
      "family=fwd_splitkv,d=128,pipeline=wgmma,stages=2,target=sm_90a")));
  // fp8 walks too, causal or not (its hang was Q's release, now per warp).
  EXPECT_TRUE(walksWorkItems(resolvedSpec(
      "dtype=fp8_e4m3,d=128,pipeline=wgmma,stages=2,target=sm_90a")));
  EXPECT_TRUE(
      walksWorkItems(resolvedSpec("dtype=fp8_e4m3,d=256,mask=causal,pipeline="
                                  "wgmma,stages=2,target=sm_90a")));
  KernelSpec copies = resolvedSpec("d=128,pipeline=wgmma,bm=128,bn=128,"
                                   "warps=8,stages=1,target=sm_90a");
  EXPECT_EQ(blockWarps(copies), 8u);
  EXPECT_FALSE(usesTensorMaps(copies));

  // Varlen's packed rows are one sequence to a tensor map (with or without
  // pack_gqa, whose Q the consumers copy: below).
  EXPECT_TRUE(usesTensorMaps(
      resolvedSpec("d=128,varlen=1,pipeline=wgmma,stages=2,target=sm_90a")));
  EXPECT_TRUE(usesTensorMaps(
      resolvedSpec("family=fwd_splitkv,d=128,varlen=1,pack_gqa=1,"
                   "pipeline=wgmma,stages=2,target=sm_90a")));
  // A paged cache's pools are pages of rows to a tensor map (with or
  // without pack_gqa), but V^T's pass is the forward family's alone.
  for (const char *keys : {"family=fwd_paged", "family=fwd_paged,pack_gqa=1",
                           "family=fwd_paged,dtype=fp8_e4m3"}) {
    KernelSpec paged = resolvedSpec(
        std::string("d=128,pipeline=wgmma,stages=2,target=sm_90a,") + keys);
    EXPECT_TRUE(usesTensorMaps(paged)) << keys;
    EXPECT_TRUE(loadsPagedBoxes(paged)) << keys;
    // A default tile knows no page size: 16-bit paged kernels default to
    // stages=1, which reads any; fp8 has only the ring.
    EXPECT_EQ(defaultTileServes(paged), isFp8(paged.dtype)) << keys;
  }
  EXPECT_EQ(resolvedSpec("family=fwd_paged,dtype=fp8_e4m3,d=128,target=sm_90a")
                .stages,
            2u);
  EXPECT_EQ(
      resolvedSpec("family=fwd_paged,dtype=bf16,d=128,target=sm_90a").stages,
      1u);
  EXPECT_FALSE(loadsPagedBoxes(resolvedSpec(
      "family=fwd_paged,d=128,pipeline=wgmma,stages=1,target=sm_90a")));
  std::string text = "family=fwd_paged,dtype=fp8_e4m3,d=128,v_pretranspose=1,"
                     "pipeline=wgmma,stages=2,target=sm_90a";
  llvm::Expected<KernelSpec> spec = resolveText(text);
  ASSERT_FALSE(bool(spec)) << text;
  std::vector<std::string> problems = specProblems(spec.takeError(), text);
  ASSERT_EQ(problems.size(), 1u) << text;
  EXPECT_NE(problems[0].find("v_pretranspose=1: only family fwd takes it"),
            std::string::npos)
      << problems[0];
}

// The sm_90a table has a wgmma row for every combination of the rules that
// narrow it: dropout (bn <= 64) with varlen (stages=1), at every head dim.
TEST(TileRules, WgmmaDefaultsTakeDropoutWithVarlen) {
  for (unsigned d : {64u, 96u, 128u, 256u})
    for (const char *keys : {"dropout=1", "dropout=1,varlen=1", "varlen=1"}) {
      std::string text =
          "d=" + std::to_string(d) + ",pipeline=wgmma,target=sm_90a," + keys;
      llvm::Expected<KernelSpec> spec = resolveText(text);
      ASSERT_TRUE(bool(spec))
          << text << ": " << llvm::toString(spec.takeError());
    }
}

// Every default tile of every target fits, and its footprint is exactly the
// tiles its layout places (stages=1 defaults; wgmma has no layout of tiles).
TEST(TileRules, DefaultTilesFillTheirFootprintExactly) {
  for (const ArchInfo &arch : allArchs())
    for (unsigned d : arch.headDims) {
      KernelSpec s =
          resolvedSpec("d=" + std::to_string(d) + ",target=" + arch.name);
      unsigned bytes = tileFootprintBytes(s, arch);
      EXPECT_LE(bytes, arch.sharedBytes) << printSpec(s);
      if (s.pipeline == Pipeline::Mma)
        EXPECT_EQ(bytes, MmaLayout(s, arch).values.end()) << printSpec(s);
      else if (s.pipeline == Pipeline::Mfma || s.pipeline == Pipeline::Wmma)
        EXPECT_EQ(bytes, AmdgpuMatrixLayout(s, arch).valuesT.end())
            << printSpec(s);
    }
}

} // namespace
