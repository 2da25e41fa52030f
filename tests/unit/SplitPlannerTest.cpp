//===- SplitPlannerTest.cpp - chooseSplit's tile and parts, as a table ----===//
//
// What chooseSplit (runtime/api/SplitPlanner.h) picks for decode problems on
// an H100's 132 SMs: the split kernel's tile and the part count. Where the
// m64n128 tile's key tiles cap the parts (1k-8k keys at few packed items),
// sm_90a takes the dispatch table's split tile, wgmma m64n64, and counts its
// parts on its own key tiles, unless it would take more than 64; longer key
// ranges, batches that fill the GPU and tiles of more than 32 packed rows
// keep m64n128 (issue 13's grid,
// bench/decode/plan_misses.py). The m64n128 tile runs as its TMA ring twin
// (stages=2) in parts for about half a block an SM: a power of two rounded
// down, or up for paged rows of thin packed tiles. Other targets have no
// split tile. Paged rows on the narrowed tile run its ring twin in as
// many parts, unless an item has at most 16 packed rows or the narrowed
// blocks outnumber the SMs. Items of at most 16 packed rows, contiguous or
// paged, run the m64n128 ring twin with keys as the products' rows
// (m8n128w4s2, or m16n128w4s2 past 8 rows where its blocks fill half the
// SMs). Where the cp.async tile fills the SMs in one part, items of at most
// 8 packed rows take m8n128w4s2 in one part (from 1k keys, 4k paged).
//
//===----------------------------------------------------------------------===//
#include "runtime/api/SplitPlanner.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/api/ProfileWarmup.h"
#include "specs/EncodedName.h"
#include "specs/SpecParser.h"
#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

struct SplitCase {
  const char *label;
  const char *features; ///< spec text: family fwd or fwd_paged, target
  int64_t batch, headsQ, headsKv, seqlenQ, seqlenK;
  const char *kernel; ///< the split kernel's encoded name
  unsigned parts;
};

void PrintTo(const SplitCase &c, std::ostream *os) { *os << c.label; }

const char *const kFwd = "family=fwd,dtype=bf16,d=128,target=sm_90a";
const char *const kPaged = "family=fwd_paged,dtype=bf16,d=128,target=sm_90a";
const char *const kNarrow =
    "fmha_fwdsplitkv_bf16_d128_pgqa_m64n64w4s1_wgmma_sm90a";
// Paged, the narrowed tile runs as its TMA ring twin.
const char *const kPagedNarrowRing =
    "fmha_fwdpaged_bf16_d128_pgqa_m64n64w4s2_wgmma_sm90a";
// The TMA ring's twins of the m64n128 tile.
const char *const kWideRing =
    "fmha_fwdsplitkv_bf16_d128_pgqa_m64n128w4s2_wgmma_sm90a";
const char *const kPagedWideRing =
    "fmha_fwdpaged_bf16_d128_pgqa_m64n128w4s2_wgmma_sm90a";
// The ring twin with keys as the products' rows: items of at most 8 packed
// rows (one token of a 32/8, 64/8 or 8:1 group), and of 9 to 16 on m16.
const char *const kKeyRows =
    "fmha_fwdsplitkv_bf16_d128_pgqa_m8n128w4s2_wgmma_sm90a";
const char *const kPagedKeyRows =
    "fmha_fwdpaged_bf16_d128_pgqa_m8n128w4s2_wgmma_sm90a";
const char *const kKeyRows16 =
    "fmha_fwdsplitkv_bf16_d128_pgqa_m16n128w4s2_wgmma_sm90a";
const char *const kPagedKeyRows16 =
    "fmha_fwdpaged_bf16_d128_pgqa_m16n128w4s2_wgmma_sm90a";

LoweredProblem lower(const SplitCase &c, const KernelSpec &features) {
  LoweredProblem l;
  l.features = features;
  AttentionProblem &a = l.problem;
  a.batch = c.batch, a.headsQ = c.headsQ, a.headsKv = c.headsKv;
  a.seqlenQ = c.seqlenQ, a.seqlenK = c.seqlenK;
  a.d = a.dv = features.d;
  if (features.family == Family::FwdPaged) {
    int64_t pages = (c.seqlenK + 15) / 16;
    l.pagedCache = KvCacheLayout::paged(16, c.batch * pages, pages);
    l.seqlensK.assign(size_t(c.batch), int32_t(c.seqlenK));
  }
  return l;
}

/// What chooseSplit makes of a case on 132 SMs, with what it was given.
struct Chosen {
  LoweredProblem lowered;
  std::optional<Dispatch> single;
  std::optional<SplitChoice> split;
  std::vector<std::string> notes;
  std::string lastNote() const { return notes.empty() ? "" : notes.back(); }
};

/// chooseSplit's answer for a case, which may be a single pass (none);
/// \p log2PageSize as the plan's query gives it (-1: not paged).
void chooseAny(const SplitCase &c, Chosen &out, int log2PageSize = -1) {
  llvm::Expected<KernelSpec> features = parseSpec(c.features);
  ASSERT_TRUE(bool(features)) << llvm::toString(features.takeError());
  out.lowered = lower(c, *features);
  llvm::Expected<const Registry &> registry =
      Registry::forTarget(features->target);
  ASSERT_TRUE(bool(registry)) << llvm::toString(registry.takeError());
  const DispatchTable &table = DispatchTable::forTarget(features->target);
  DispatchQuery query{*features,    c.seqlenQ, c.seqlenK,
                      std::nullopt, 16,        c.headsQ / c.headsKv};
  query.log2PageSize = log2PageSize;
  llvm::Expected<Dispatch> single = dispatch(query, *registry, table);
  ASSERT_TRUE(bool(single)) << llvm::toString(single.takeError());
  out.single = *single;
  auto split = chooseSplit(out.lowered, *single, query, *registry, table, 132,
                           out.notes);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  out.split = std::move(*split);
}

void choose(const SplitCase &c, Chosen &out) {
  ASSERT_NO_FATAL_FAILURE(chooseAny(c, out));
  ASSERT_TRUE(out.split.has_value()) << out.lastNote();
}

class SplitPlanner : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SplitPlanner, PicksTheMeasuredTileAndParts) {
  const SplitCase &c = GetParam();
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(choose(c, chosen));
  EXPECT_EQ(encodeName(chosen.split->split.chosen), c.kernel)
      << chosen.lastNote();
  EXPECT_EQ(chosen.split->numSplits, c.parts) << chosen.lastNote();
}

const SplitCase kCases[] = {
    // 8 packed items want 32 parts; 1k keys are 8 tiles of 128, 16 of 64.
    {"Gqa32x8Keys1k", kFwd, 1, 32, 8, 1, 1024, kNarrow, 16},
    // 32 parts of 128 keys: one m64n128 tile each, two of 64.
    {"Gqa32x8Keys4k", kFwd, 1, 32, 8, 1, 4096, kNarrow, 32},
    {"Gqa64x8Keys4k", kFwd, 1, 64, 8, 1, 4096, kNarrow, 32},
    {"Gqa8x1Batch8Keys4k", kFwd, 8, 8, 1, 1, 4096, kNarrow, 32},
    // One packed item wants 256 parts: the key tiles of 64 would allow 128,
    // more than the narrowed tile takes (kMostNarrowedParts), so the wide
    // tile's ring twin runs at 64, contiguous and paged.
    {"Gqa8x1Keys8k", kFwd, 1, 8, 1, 1, 8192, kKeyRows, 64},
    {"PagedGqa8x1Keys8k", kPaged, 1, 8, 1, 1, 8192, kPagedKeyRows, 64},
    {"Gqa32x8TwoTokensKeys4k", kFwd, 1, 32, 8, 2, 4096, kNarrow, 32},
    // 32 parts of 256 keys hold two m64n128 tiles: no narrowing. Its ring
    // twin takes 8 (66 blocks wanted for 8 items, rounded down).
    {"Gqa32x8Keys8k", kFwd, 1, 32, 8, 1, 8192, kKeyRows, 8},
    {"Gqa32x8Keys128k", kFwd, 1, 32, 8, 1, 131072, kKeyRows, 8},
    // Paged, thin packed tiles round up: 16.
    {"PagedGqa32x8Keys32k", kPaged, 1, 32, 8, 1, 32768, kPagedKeyRows, 16},
    // One packed item: 64 parts contiguous, 128 paged.
    {"Gqa8x1Keys32k", kFwd, 1, 8, 1, 1, 32768, kKeyRows, 64},
    {"PagedGqa8x1Keys128k", kPaged, 1, 8, 1, 1, 131072, kPagedKeyRows, 128},
    // 64 packed items would take 4 parts of the cp.async tile; on the ring
    // they fill half the SMs in one part each (no combine), two paged.
    {"Gqa32x8Batch8Keys4k", kFwd, 8, 32, 8, 1, 4096, kKeyRows, 1},
    {"Gqa32x8Batch8Keys1k", kFwd, 8, 32, 8, 1, 1024, kKeyRows, 1},
    // 64 packed rows (8 tokens x 8 heads): the split tile serves up to 32;
    // the key tiles cap the ring's 64 parts at 32.
    {"Gqa8x1EightTokensKeys4k", kFwd, 1, 8, 1, 8, 4096, kWideRing, 32},
    // At 32k keys: 64, with any number of tokens contiguous.
    {"Gqa8x1EightTokensKeys32k", kFwd, 1, 8, 1, 8, 32768, kWideRing, 64},
    {"Gqa8x1FourTokensKeys32k", kFwd, 1, 8, 1, 4, 32768, kWideRing, 64},
    // Two tokens of one group (16 rows) in 64 m16 blocks would leave half
    // the SMs idle: m8, two items of 8 rows.
    {"Gqa8x1TwoTokensKeys32k", kFwd, 1, 8, 1, 2, 32768, kKeyRows, 64},
    // 128 items of 16 rows fill the SMs in one part: m16.
    {"Gqa32x8FourTokensBatch16Keys4k", kFwd, 16, 32, 8, 4, 4096, kKeyRows16, 1},
    // Paged: more than 8 packed rows (2 or 4 tokens of one 8:1 group) round
    // down (128 parts would be past kMostRoundedUpParts). 8 tokens of a 32/8
    // sequence (32 rows) or of 8 sequences round up to 16 at 32k keys, where
    // each part keeps 16 key tiles; 4 tokens of a 32/8 sequence too, on m16
    // (its 128 blocks fill the SMs).
    {"PagedGqa32x8EightTokensKeys32k", kPaged, 1, 32, 8, 8, 32768,
     kPagedWideRing, 16},
    {"PagedGqa8x1EightTokensBatch8Keys32k", kPaged, 8, 8, 1, 8, 32768,
     kPagedWideRing, 16},
    {"Gqa32x8EightTokensKeys32k", kFwd, 1, 32, 8, 8, 32768, kWideRing, 8},
    {"PagedGqa8x1FourTokensKeys128k", kPaged, 1, 8, 1, 4, 131072,
     kPagedWideRing, 64},
    {"PagedGqa8x1TwoTokensKeys128k", kPaged, 1, 8, 1, 2, 131072, kPagedKeyRows,
     64},
    {"PagedGqa32x8FourTokensKeys32k", kPaged, 1, 32, 8, 4, 32768,
     kPagedKeyRows16, 16},
    // Paged with at most 16 packed rows, the wide tile stays (its ring twin
    // with keys as rows, parts rounded up for thin tiles); with more rows
    // the narrowed tile runs as its own ring twin, unless its blocks would
    // outnumber the SMs: then the wide ring, at 4k keys in 8 parts (16 would
    // hold two key tiles each).
    {"PagedGqa32x8Keys1k", kPaged, 1, 32, 8, 1, 1024, kPagedKeyRows, 8},
    {"PagedGqa32x8Keys4k", kPaged, 1, 32, 8, 1, 4096, kPagedKeyRows, 16},
    {"PagedGqa8x1Keys4k", kPaged, 1, 8, 1, 1, 4096, kPagedKeyRows, 32},
    {"PagedGqa8x1TwoTokensKeys4k", kPaged, 1, 8, 1, 2, 4096, kPagedKeyRows, 32},
    {"PagedGqa8x1FourTokensKeys4k", kPaged, 1, 8, 1, 4, 4096, kPagedNarrowRing,
     64},
    {"PagedGqa32x8EightTokensKeys4k", kPaged, 1, 32, 8, 8, 4096, kPagedWideRing,
     8},
    {"PagedGqa8x1FourTokensBatch8Keys4k", kPaged, 8, 8, 1, 4, 4096,
     kPagedWideRing, 8},
    {"PagedGqa32x8Batch8Keys4k", kPaged, 8, 32, 8, 1, 4096, kPagedKeyRows, 2},
    // 64 packed items at 1k keys (8 ring tiles, under
    // kLeastKeyTilesForTwoPagedParts): one paged part, not two of 4 tiles.
    {"PagedGqa64x8Batch8Keys1k", kPaged, 8, 64, 8, 1, 1024, kPagedKeyRows, 1},
    {"PagedGqa8x1Batch64Keys1k", kPaged, 64, 8, 1, 1, 1024, kPagedKeyRows, 1},
    {"PagedGqa8x1Batch64Keys4k", kPaged, 64, 8, 1, 1, 4096, kPagedKeyRows, 2},
    // 512 items of 4 or 8 packed rows fill the SMs in one part of the
    // cp.async tile; the ring with keys as rows takes them in one part too,
    // contiguous from 1k keys (8 tiles), paged from 4k (32 tiles).
    {"Gqa32x8Batch64Keys4k", kFwd, 64, 32, 8, 1, 4096, kKeyRows, 1},
    {"Gqa64x8Batch64Keys1k", kFwd, 64, 64, 8, 1, 1024, kKeyRows, 1},
    {"PagedGqa32x8Batch64Keys4k", kPaged, 64, 32, 8, 1, 4096, kPagedKeyRows, 1},
    {"PagedGqa64x8Batch64Keys4k", kPaged, 64, 64, 8, 1, 4096, kPagedKeyRows, 1},
    // sm_80's mma tile is bn = 64 already, and its table has no split tile.
    {"Sm80Gqa32x8Keys4k", "family=fwd,dtype=bf16,d=128,target=sm_80", 1, 32, 8,
     1, 4096, "fmha_fwdsplitkv_bf16_d128_pgqa_m64n64w4s1_mma_sm80", 32},
};

INSTANTIATE_TEST_SUITE_P(H100, SplitPlanner, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<SplitCase> &info) {
                           return std::string(info.param.label);
                         });

// The plan's note says why the tile changed.
TEST(SplitPlannerNotes, SayWhyTheTileNarrowed) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kFwd, 1, 32, 8, 1, 1024, kNarrow, 16}, chosen));
  EXPECT_NE(chosen.lastNote().find(
                "chooseNumSplits gives 16 for 132 SMs (the m64n128w4s1 "
                "tile's 8 key tiles capped it at 8: its split tile "
                "m64n64w4s1)"),
            std::string::npos)
      << chosen.lastNote();
  bool saysSplitTiles = false;
  for (const RuleOutcome &r : chosen.split->split.rules)
    saysSplitTiles |=
        r.rule == "2 tiles" &&
        r.outcome.find("split_tiles: seqlen_q <= 32") != std::string::npos;
  EXPECT_TRUE(saysSplitTiles);
}

// Paged rows on the narrowed tile run its ring twin, and the note says so.
TEST(SplitPlannerNotes, SayThePagedNarrowedTileRunsItsRingTwin) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kPaged, 1, 8, 1, 4, 4096, kPagedNarrowRing, 64}, chosen));
  EXPECT_NE(chosen.lastNote().find("its split tile m64n64w4s1); paged, its TMA "
                                   "ring twin m64n64w4s2 in as many parts"),
            std::string::npos)
      << chosen.lastNote();
}

// Paged with few packed rows the wide tile stays, and the note says why.
TEST(SplitPlannerNotes, SayPagedFewRowsKeepTheWideTile) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kPaged, 1, 32, 8, 1, 4096, kPagedKeyRows, 16}, chosen));
  EXPECT_NE(chosen.lastNote().find(
                "(paged with 4 packed rows an item: the wide tile stays, not "
                "its split tile m64n64w4s1)"),
            std::string::npos)
      << chosen.lastNote();
}

// Paged with more packed rows, the wide tile stays where the narrowed
// tile's count would give its ring more blocks than SMs.
TEST(SplitPlannerNotes, SayPagedNarrowBlocksPastTheSMsKeepTheWideTile) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kPaged, 1, 32, 8, 8, 4096, kPagedWideRing, 8}, chosen));
  EXPECT_NE(chosen.lastNote().find("(paged: its split tile m64n64w4s1 would "
                                   "run 256 blocks on 132 SMs: the wide tile "
                                   "stays)"),
            std::string::npos)
      << chosen.lastNote();
}

// Where the ring twin takes one part the plan is that one launch: the split
// kernel writes O itself, with no combine step after it.
TEST(SplitPlannerNotes, OneRingPartIsOneLaunch) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kFwd, 8, 32, 8, 1, 4096, kKeyRows, 1}, chosen));
  EXPECT_NE(chosen.lastNote().find("its TMA ring twin m64n128w4s2 in 1 part "),
            std::string::npos)
      << chosen.lastNote();
  EXPECT_NE(chosen.lastNote().find("with keys as the products' rows "
                                   "(m8n128w4s2: 4 packed rows an item)"),
            std::string::npos)
      << chosen.lastNote();
  PlanLayout layout =
      layoutPlan(chosen.lowered, *chosen.single, std::move(chosen.split));
  ASSERT_EQ(layout.steps.size(), 1u);
  EXPECT_EQ(encodeName(layout.steps[0].spec), kKeyRows);
  EXPECT_EQ(layout.steps[0].keySplits, 1);
}

// A short paged range in one part is the same single launch, its split
// kernel reading the pages and writing O with no workspace for partials.
TEST(SplitPlannerNotes, OnePagedPartIsOneLaunch) {
  Chosen chosen;
  ASSERT_NO_FATAL_FAILURE(
      choose({"", kPaged, 64, 8, 1, 1, 1024, kPagedKeyRows, 1}, chosen));
  PlanLayout layout =
      layoutPlan(chosen.lowered, *chosen.single, std::move(chosen.split));
  ASSERT_EQ(layout.steps.size(), 1u);
  EXPECT_EQ(encodeName(layout.steps[0].spec), kPagedKeyRows);
  EXPECT_EQ(layout.steps[0].keySplits, 1);
  EXPECT_EQ(layout.workspaceBytes, 0);
}

// Where the cp.async tile fills the SMs in one part and the ring with keys
// as rows did not measure faster, the plan stays one pass of the forward
// kernel: a short paged range (1k keys, 8 tiles), or items of more than 8
// packed rows (two tokens of a 64/8 group).
TEST(SplitPlannerNotes, OnePassStaysWhereTheRingWasNotFaster) {
  for (const SplitCase &c : {SplitCase{"", kPaged, 64, 64, 8, 1, 1024, "", 0},
                             SplitCase{"", kFwd, 64, 64, 8, 2, 4096, "", 0}}) {
    Chosen chosen;
    ASSERT_NO_FATAL_FAILURE(chooseAny(c, chosen));
    EXPECT_FALSE(chosen.split.has_value())
        << encodeName(chosen.split->split.chosen);
    EXPECT_NE(chosen.lastNote().find("single pass"), std::string::npos)
        << chosen.lastNote();
  }
}

// `fmhajit cache warm --profile decode` compiles every kernel these plans
// pick, so a warmed decode plan compiles nothing: the single pass, the split
// kernel in whichever twin the shape takes (the TMA ring, keys as rows) and
// its combine, over GQA groups and ungrouped heads, tokens, batches, key
// lengths, head dims and both masks the profile lists, contiguous and on
// 16-token pages.
TEST(SplitPlannerWarmup, TheDecodeProfileHoldsEveryKernelAPlanPicks) {
  auto warm = warmupSpecs("decode", "sm_90a");
  ASSERT_TRUE(bool(warm)) << llvm::toString(warm.takeError());
  llvm::StringSet<> warmed;
  for (const KernelSpec &s : *warm)
    warmed.insert(encodeName(s));
  struct Heads {
    int64_t q, kv;
  };
  size_t splits = 0;
  for (const char *family : {"fwd", "fwd_paged"})
    for (unsigned d : {64u, 128u, 256u})
      for (const char *mask : {"none", "causal_br"}) {
        std::string features = std::string("family=") + family +
                               ",dtype=bf16,d=" + std::to_string(d) +
                               ",mask=" + mask + ",target=sm_90a";
        bool paged = llvm::StringRef(family) == "fwd_paged";
        for (Heads h : {Heads{32, 8}, Heads{64, 8}, Heads{8, 1}, Heads{16, 16}})
          for (int64_t tokens : {1, 2, 8})
            for (int64_t batch : {1, 8, 64})
              for (int64_t keys : {1024, 4096, 32768, 131072}) {
                SplitCase c{"",   features.c_str(), batch, h.q,
                            h.kv, tokens,           keys,  "",
                            0};
                Chosen chosen;
                ASSERT_NO_FATAL_FAILURE(chooseAny(c, chosen, paged ? 4 : -1));
                std::vector<std::string> names = {
                    encodeName(chosen.single->chosen)};
                if (chosen.split) {
                  ++splits;
                  names.push_back(encodeName(chosen.split->split.chosen));
                  if (chosen.split->numSplits > 1)
                    names.push_back(encodeName(chosen.split->combine));
                }
                for (const std::string &name : names)
                  EXPECT_TRUE(warmed.contains(name))
                      << name << " (" << features << ", " << h.q << "/" << h.kv
                      << ", " << tokens << " tokens, batch " << batch << ", "
                      << keys << " keys)";
              }
      }
  EXPECT_GT(splits, 0u); // the sweep reaches the split kernels
}

} // namespace
