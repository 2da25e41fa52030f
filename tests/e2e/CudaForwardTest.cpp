//===- CudaForwardTest.cpp - CUDA forward attention vs the reference ------===//
//
// The host tests' procedure (ForwardHarness.h) on the GPU: every feature of
// a forward kernel for sm_90a, compiled to PTX, JIT-loaded by the driver
// and run on random inputs with outputs poisoned on the device, checked
// against the float64 host reference. Each table runs for pipeline=simt
// and pipelines mma, wgmma and wgmma with stages=2 (its TMA ring and
// producer warp; fp16/bf16, and fp8 in a table of its own); a tensor-core
// kernel whose
// code generation reports ErrorKind::Unsupported is skipped with the reason.
//
//   DTypesAndHeadDims  fp16/bf16/fp32 x d = 64, 128, 256 and d=192,dv=128,
//                      with masks, lse and GQA rotated across the grid
//   NarrowSwizzles     fp16/bf16 x d = 32, 80, 96, 160
//   Masks              Sq = 1, Sk < Sq (rows that see no key), windows
//   GroupedQuery       Hq/Hkv = 1, 2, 4 (MQA)
//   ScoreModifiers     softcap, ALiBi (default and custom slopes), scale
//   Varlen             mixed lengths, length 1, Sk < Sq in one sequence
//   PackGqa            GQA groups sharing a tile (pack_gqa), every pipeline
//   PackGqaRing        pack_gqa on the TMA ring's decode tiles (issue 13)
//   Large              many blocks: lengths past several tiles
//   Walks              persistent blocks that take several work items
//
// Without a GPU and driver every test is skipped, so the suite passes on
// machines without CUDA. CudaRunTest.cpp runs `fmhajit run --device cuda
// --check` the same way.
//
//===----------------------------------------------------------------------===//
#include "CudaForwardRunner.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

/// A case of a table, run with one pipeline.
struct CudaCase {
  ForwardCase base;
  const char *pipeline;
};

void PrintTo(const CudaCase &c, std::ostream *os) {
  fmhajit::e2e::PrintTo(c.base, os);
  *os << " pipeline=" << c.pipeline;
}

class CudaForward : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaForward, MatchesReference) {
  CudaForwardRunner *runner = CudaForwardRunner::shared();
  if (!runner)
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  const CudaCase &c = GetParam();
  ForwardCase fc = c.base;
  fc.spec += std::string(",pipeline=") + c.pipeline + ",target=sm_90a";
  std::optional<KernelSpec> spec = resolveSpec(fc.spec);
  if (!spec)
    return;
  // Load first, to tell "not implemented yet" from a failure.
  auto kernel = runner->load(*spec);
  if (!kernel) {
    Problems problems = takeProblems(kernel.takeError());
    std::string text = llvm::join(problems.messages, "; ");
    if (spec->pipeline != Pipeline::Simt &&
        problems.kind == ErrorKind::Unsupported)
      GTEST_SKIP() << encodeName(*spec) << " is not supported yet: " << text;
    FAIL() << encodeName(*spec) << ": " << text;
  }
  expectCasePasses(fc, [&](const KernelSpec &s, const AttentionProblem &p,
                           ForwardData &d) { return (*runner)(s, p, d); });
}

/// Every case of \p cases with simt, and with mma, wgmma and wgmma's TMA
/// ring (stages=2) unless its dtype is fp32; the ring takes only K/V rows a
/// fixed-shape tensor map can describe (no paged K/V; pack_gqa's Q rows the
/// consumers copy). Varlen's "wgmma" default is the ring too (unless packed:
/// the dispatcher keeps packed rows on cp.async), so its second wgmma run
/// pins the cp.async tile (stages=1) instead.
std::vector<CudaCase> withPipelines(const std::vector<ForwardCase> &cases) {
  std::vector<CudaCase> out;
  for (const char *pipeline : {"simt", "mma", "wgmma", "wgmma,stages=2"})
    for (const ForwardCase &c : cases) {
      llvm::StringRef spec = c.spec, name = pipeline;
      if (name != "simt" && spec.contains("dtype=fp32"))
        continue;
      if (name.contains("stages=2") && spec.contains("fwd_paged"))
        continue;
      bool cpAsync = name.contains("stages=2") && spec.contains("varlen=1") &&
                     !spec.contains("pack_gqa=1");
      out.push_back({c, cpAsync ? "wgmma,stages=1" : pipeline});
    }
  return out;
}

std::string caseName(const ::testing::TestParamInfo<CudaCase> &info) {
  return testName(std::string(info.param.pipeline) + "_" +
                  info.param.base.label);
}

#define CUDA_TABLE(table, cases)                                               \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      table, CudaForward, ::testing::ValuesIn(withPipelines(cases)), caseName)

//===-- Dtypes x head dims ------------------------------------------------===//

CUDA_TABLE(DTypesAndHeadDims,
           dtypeHeadDimGrid({"fp16", "bf16", "fp32"},
                            {"d=64", "d=128", "d=256", "d=192,dv=128"}, 150,
                            197));

// Rows of 64, 160 and 192 bytes: wgmma's 64- and 32-byte swizzles.
CUDA_TABLE(NarrowSwizzles,
           dtypeHeadDimGrid({"bf16", "fp16"}, {"d=32", "d=80", "d=96", "d=160"},
                            70, 133));

// fp8 (e4m3, e5m2) runs only on wgmma's TMA ring, whose producer warpgroup
// transposes V: every head dim, masks, lse and GQA from the grid, narrow
// swizzles (d = 96) and dv != d. Descale factors are 1 here; the CLI tests
// (and `fmhajit run --check`) run them at 0.5, 0.25 and 2. The same grid
// runs with V^T written by the pass before the kernel (v_pretranspose=1):
// key counts that are not multiples of its 64 (the zeros past the end),
// GQA (one V^T per K/V head) and windows that start mid-tile.
std::vector<CudaCase> fp8Cases(const char *pipeline) {
  std::vector<CudaCase> out;
  for (const ForwardCase &c :
       dtypeHeadDimGrid({"fp8_e4m3", "fp8_e5m2"},
                        {"d=64", "d=128", "d=256", "d=96,dv=64"}, 150, 397))
    out.push_back({c, pipeline});
  return out;
}
INSTANTIATE_TEST_SUITE_P(Fp8, CudaForward,
                         ::testing::ValuesIn(fp8Cases("wgmma,stages=2")),
                         caseName);
INSTANTIATE_TEST_SUITE_P(
    Fp8Pretransposed, CudaForward,
    ::testing::ValuesIn(fp8Cases("wgmma,stages=2,v_pretranspose=1")), caseName);

//===-- Masks -------------------------------------------------------------===//

std::vector<ForwardCase> maskCases() {
  std::vector<ForwardCase> cases;
  for (const char *base : {"family=fwd,dtype=bf16,d=128,lse=1",
                           "family=fwd,dtype=fp16,d=64,lse=1"}) {
    std::string tag =
        llvm::StringRef(base).contains("bf16") ? "bf16_" : "fp16_";
    auto add = [&](const char *label, const char *mask, Shape shape) {
      cases.push_back({tag + label, std::string(base) + "," + mask, shape});
    };
    add("none_sq1", "mask=none", Shape::dense(2, 2, 1, 1, 300));
    add("none_sk1", "mask=none", Shape::dense(1, 2, 2, 200, 1));
    add("none_odd", "mask=none", Shape::dense(1, 3, 3, 129, 65));
    add("causal_square", "mask=causal", Shape::dense(2, 2, 1, 257, 257));
    add("causal_sq1", "mask=causal", Shape::dense(1, 2, 2, 1, 200));
    add("causal_sk_lt_sq", "mask=causal", Shape::dense(1, 2, 2, 300, 70));
    add("causal_sq_lt_sk", "mask=causal", Shape::dense(1, 2, 2, 70, 300));
    add("causal_br_sq1", "mask=causal_br", Shape::dense(1, 2, 1, 1, 200));
    // Rows 0..179 see no key: o = 0 and lse = -inf.
    add("causal_br_sk_lt_sq_empty_rows", "mask=causal_br",
        Shape::dense(1, 2, 2, 250, 70));
    add("causal_br_sq_lt_sk", "mask=causal_br", Shape::dense(1, 2, 2, 70, 300));
    add("window_16_m1", "mask=window",
        Shape::dense(1, 2, 1, 100, 230).window(16, -1));
    add("window_0_0_diagonal", "mask=window",
        Shape::dense(1, 2, 2, 130, 130).window(0, 0));
    add("window_7_3_sk_lt_sq_empty_rows", "mask=window",
        Shape::dense(1, 2, 2, 250, 70).window(7, 3));
    add("window_wide", "mask=window",
        Shape::dense(1, 2, 2, 90, 150).window(200, 300));
  }
  return cases;
}
CUDA_TABLE(Masks, maskCases());

//===-- GQA / MQA, softcap, ALiBi, scale ----------------------------------===//

std::vector<ForwardCase> gqaAndScoreCases() {
  const char *causal = "family=fwd,dtype=bf16,d=128,mask=causal,lse=1";
  return {
      {"gqa_ratio1", causal, Shape::dense(2, 4, 4, 177, 177)},
      {"gqa_ratio2", causal, Shape::dense(2, 4, 2, 177, 200)},
      {"gqa_ratio4_mqa", causal, Shape::dense(1, 4, 1, 200, 177)},
      {"softcap50_fp16", "family=fwd,dtype=fp16,d=64,softcap=1",
       Shape::dense(1, 2, 2, 190, 110)},
      {"softcap1p5_fp32_causal_lse",
       "family=fwd,dtype=fp32,d=64,mask=causal,softcap=1,lse=1",
       Shape::dense(1, 2, 1, 110, 90).softcap(1.5f).scale(0.5f)},
      {"softcap5_bf16_window",
       "family=fwd,dtype=bf16,d=128,mask=window,softcap=1",
       Shape::dense(2, 4, 2, 80, 220).window(16, -1).softcap(5)},
      {"alibi_bf16_default_slopes", "family=fwd,dtype=bf16,d=128,bias=alibi",
       Shape::dense(1, 4, 4, 90, 210)},
      {"alibi_fp16_causal_3heads_custom",
       "family=fwd,dtype=fp16,d=64,mask=causal,bias=alibi,lse=1",
       Shape::dense(1, 3, 1, 210, 90).slopes()},
      {"alibi_softcap_bf16_causal_br_lse",
       "family=fwd,dtype=bf16,d=128,mask=causal_br,bias=alibi,softcap=1,lse=1",
       Shape::dense(2, 4, 2, 100, 230).softcap(3)},
      {"scale0p3_fp16_lse", "family=fwd,dtype=fp16,d=128,lse=1",
       Shape::dense(1, 2, 2, 70, 200).scale(0.3f)},
  };
}
CUDA_TABLE(GqaAndScores, gqaAndScoreCases());

//===-- Varlen ------------------------------------------------------------===//

std::vector<ForwardCase> varlenCases() {
  return {
      {"bf16_causal_lse",
       "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,varlen=1",
       Shape::varlen({130, 1, 64, 265}, {130, 64, 1, 300}, 2, 1)},
      // Sequence 0 has Sk < Sq: 70 rows see no key.
      {"fp16_causal_br_lse_empty_rows",
       "family=fwd,dtype=fp16,d=64,mask=causal_br,lse=1,varlen=1",
       Shape::varlen({100, 5}, {30, 200}, 2, 2)},
      {"bf16_window_gqa4_lse",
       "family=fwd,dtype=bf16,d=64,mask=window,lse=1,varlen=1",
       Shape::varlen({64, 129, 3}, {100, 129, 250}, 4, 1).window(16, -1)},
      {"fp16_d192v128_alibi_softcap",
       "family=fwd,dtype=fp16,d=192,dv=128,mask=causal,bias=alibi,softcap=1,"
       "lse=1,varlen=1",
       Shape::varlen({50, 120}, {120, 50}, 2, 1).softcap(6)},
      {"bf16_d256_eight_short",
       "family=fwd,dtype=bf16,d=256,mask=causal,lse=1,varlen=1",
       Shape::varlen({1, 2, 1, 3, 1, 64, 1, 65}, {1, 1, 2, 3, 70, 64, 1, 1}, 2,
                     2)},
      {"fp32_none_mixed", "family=fwd,dtype=fp32,d=64,varlen=1",
       Shape::varlen({1, 77, 130}, {200, 1, 64}, 2, 2)},
      // On the TMA ring a K/V tile runs on into the next sequence's rows
      // (masked) and the last one's past the tensor (zeros), and a query
      // tile's rows past its sequence belong to the next (not stored):
      // lengths that straddle several tiles, one of a single row.
      {"bf16_none_straddling", "family=fwd,dtype=bf16,d=128,lse=1,varlen=1",
       Shape::varlen({700, 1, 300, 513}, {700, 129, 300, 513}, 4, 1)},
      {"bf16_causal_straddling",
       "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,varlen=1",
       Shape::varlen({700, 1, 300, 513}, {900, 129, 300, 513}, 4, 2)},
      {"fp16_d64_causal_br_straddling",
       "family=fwd,dtype=fp16,d=64,mask=causal_br,varlen=1",
       Shape::varlen({400, 77, 1, 260}, {130, 500, 64, 260}, 2, 2)},
  };
}
CUDA_TABLE(Varlen, varlenCases());

// fp8 has only the TMA ring, so varlen fp8 arrived with varlen on it
// (with the transposers: V^T's pass does not take varlen).
INSTANTIATE_TEST_SUITE_P(
    Fp8Varlen, CudaForward,
    ::testing::Values(
        CudaCase{
            {"e4m3_d128_causal_lse",
             "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,lse=1,varlen=1",
             Shape::varlen({700, 1, 300, 513}, {900, 129, 300, 513}, 4, 2)},
            "wgmma,stages=2"},
        CudaCase{{"e5m2_d256_none", "family=fwd,dtype=fp8_e5m2,d=256,varlen=1",
                  Shape::varlen({130, 260, 5}, {300, 64, 200}, 2, 1)},
                 "wgmma,stages=2"},
        CudaCase{{"e4m3_d64_window_gqa",
                  "family=fwd,dtype=fp8_e4m3,d=64,mask=window,varlen=1",
                  Shape::varlen({200, 90}, {330, 90}, 4, 1).window(40, 8)},
                 "wgmma,stages=2"}),
    caseName);

//===-- pack_gqa: GQA groups share a tile
//----------------------------------===//

// Ratios 1-16 (and 3, 6, whose heads straddle mma's 16-row tiles) at
// Sq = 1..8 and past a tile, every mask, ALiBi and softcap (per packed
// row's head and token), LSE, varlen and head dims 64, 128 and 256.
std::vector<ForwardCase> packGqaCases() {
  const char *masks[] = {"none", "causal", "causal_br", "window"};
  const char *dims[] = {"dtype=bf16,d=128", "dtype=fp16,d=64",
                        "dtype=bf16,d=256"};
  const int64_t shapes[][2] = {{1, 1},  {2, 3}, {4, 8}, {8, 2},
                               {16, 5}, {3, 7}, {6, 4}, {16, 8}};
  std::vector<ForwardCase> cases;
  unsigned i = 0;
  for (auto [ratio, sq] : shapes) {
    const char *mask = masks[i % 4];
    std::string spec = std::string("family=fwd,pack_gqa=1,lse=1,") +
                       dims[i % 3] + ",mask=" + mask +
                       (i % 4 == 2 ? ",bias=alibi,softcap=1" : "");
    Shape shape = Shape::dense(2, 2 * ratio, 2, sq, 150 + 37 * sq);
    shape.window(20, 3);
    cases.push_back({"r" + std::to_string(ratio) + "_sq" + std::to_string(sq) +
                         "_" + mask + "_" + std::to_string(i),
                     spec, shape, i + 1});
    ++i;
  }
  cases.push_back({"prefill_causal_r4",
                   "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=128,mask=causal",
                   Shape::dense(1, 8, 2, 100, 100)});
  cases.push_back({"rows_without_keys_r8",
                   "family=fwd,pack_gqa=1,lse=1,dtype=fp16,d=64,mask=causal_br",
                   Shape::dense(1, 16, 2, 8, 3)});
  cases.push_back(
      {"varlen_r4_window",
       "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=128,mask=window,varlen=1",
       Shape::varlen({1, 8, 3}, {300, 8, 90}, 16, 4).window(40, 0)});
  cases.push_back({"fp32_r8_causal_br_alibi",
                   "family=fwd,pack_gqa=1,lse=1,dtype=fp32,d=64,"
                   "mask=causal_br,bias=alibi",
                   Shape::dense(2, 16, 2, 4, 200).slopes()});
  return cases;
}
CUDA_TABLE(PackGqa, packGqaCases());

// pack_gqa on wgmma's TMA ring (issue 13): K and V by TMA, each consumer
// warpgroup's Q rows copied by the warpgroup itself. The decode tile
// (m64n128w4) at 2 and 3 slots, the two-warpgroup m128 tile, d = 64 to 256
// (bn from the ring's rows at d = 256), GQA ratios 2, 4, 8, 16 at Sq = 1, 2
// and 8 (16 x 8 rows: two m64 tiles), causal bottom-right (decode's mask),
// top-left and a window, softcap with ALiBi (each packed row's head), LSE,
// rows that see no key (an item that takes no product: its Q copies must
// land before the block exits), and fp8 (its V through the transposers).
std::vector<CudaCase> packedRingCases() {
  const char *decode = "wgmma,bm=64,bn=128,warps=4,stages=2";
  const char *deeper = "wgmma,bm=64,bn=128,warps=4,stages=3";
  const char *narrow = "wgmma,bm=64,warps=4,stages=2"; // d = 256: bn = 80
  const char *wide = "wgmma,bm=128,warps=8,stages=2";
  struct Row {
    const char *label, *spec;
    int64_t ratio, sq, sk;
    const char *pipeline;
  };
  const char *bf16 = "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=128,";
  std::vector<Row> rows = {
      {"r2_sq1_none", "mask=none", 2, 1, 1000, decode},
      {"r4_sq2_causal_br", "mask=causal_br", 4, 2, 777, decode},
      {"r8_sq8_causal_br", "mask=causal_br", 8, 8, 1500, decode},
      {"r16_sq8_causal_br_two_tiles", "mask=causal_br", 16, 8, 300, decode},
      {"r16_sq1_causal_br", "mask=causal_br", 16, 1, 2000, decode},
      {"r8_sq2_causal_top_left", "mask=causal", 8, 2, 500, decode},
      {"r4_sq8_window", "mask=window", 4, 8, 900, decode},
      {"r8_sq1_softcap_alibi", "mask=causal_br,softcap=1,bias=alibi", 8, 1,
       1200, decode},
      {"r2_sq8_softcap_alibi_none", "mask=none,softcap=1,bias=alibi", 2, 8, 640,
       decode},
      {"r8_sq8_rows_without_keys", "mask=causal_br", 8, 8, 3, decode},
      {"r8_sq1_three_slots", "mask=causal_br", 8, 1, 3000, deeper},
      {"r4_sq2_three_slots_softcap", "mask=causal_br,softcap=1", 4, 2, 1100,
       deeper},
      {"r16_sq8_two_warpgroups", "mask=causal_br", 16, 8, 1000, wide},
      {"r4_sq8_two_warpgroups_alibi", "mask=none,bias=alibi", 4, 8, 700, wide}};
  std::vector<CudaCase> out;
  unsigned seed = 1;
  for (const Row &r : rows)
    out.push_back(
        {{std::string("bf16_d128_") + r.label, std::string(bf16) + r.spec,
          Shape::dense(2, 2 * r.ratio, 2, r.sq, r.sk).window(20, 3), seed++},
         r.pipeline});
  out.push_back({{"fp16_d64_r8_sq2_causal_br",
                  "family=fwd,pack_gqa=1,lse=1,dtype=fp16,d=64,mask=causal_br",
                  Shape::dense(2, 16, 2, 2, 900), seed++},
                 decode});
  out.push_back({{"fp16_d64_r16_sq8_softcap_alibi",
                  "family=fwd,pack_gqa=1,lse=1,dtype=fp16,d=64,mask=causal_br,"
                  "softcap=1,bias=alibi",
                  Shape::dense(1, 32, 2, 8, 700).softcap(20).slopes(), seed++},
                 wide});
  out.push_back({{"bf16_d256_r8_sq1_causal_br",
                  "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=256,mask=causal_br",
                  Shape::dense(2, 16, 2, 1, 1000), seed++},
                 narrow});
  out.push_back({{"bf16_d256_r4_sq2_softcap_alibi",
                  "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=256,mask=causal,"
                  "softcap=1,bias=alibi",
                  Shape::dense(1, 8, 2, 2, 600), seed++},
                 narrow});
  out.push_back({{"bf16_d256_r16_sq8_two_warpgroups",
                  "family=fwd,pack_gqa=1,lse=1,dtype=bf16,d=256,mask=causal_br",
                  Shape::dense(1, 32, 2, 8, 500), seed++},
                 wide});
  out.push_back({{"e4m3_d128_r8_sq1_causal_br",
                  "family=fwd,pack_gqa=1,lse=1,dtype=fp8_e4m3,d=128,"
                  "mask=causal_br",
                  Shape::dense(2, 16, 2, 1, 1000), seed++},
                 "wgmma,stages=2"});
  out.push_back({{"e4m3_d128_r4_sq8_none",
                  "family=fwd,pack_gqa=1,lse=1,dtype=fp8_e4m3,d=128",
                  Shape::dense(1, 8, 2, 8, 700), seed++},
                 "wgmma,stages=2"});
  return out;
}
INSTANTIATE_TEST_SUITE_P(PackGqaRing, CudaForward,
                         ::testing::ValuesIn(packedRingCases()), caseName);

//===-- Large -------------------------------------------------------------===//

std::vector<ForwardCase> largeCases() {
  return {
      {"bf16_d128_causal_1024", "family=fwd,dtype=bf16,d=128,mask=causal,lse=1",
       Shape::dense(2, 8, 2, 1024, 1024)},
      {"fp16_d64_none_1000x1500", "family=fwd,dtype=fp16,d=64",
       Shape::dense(1, 16, 16, 1000, 1500)},
      {"bf16_d256_causal_br_700", "family=fwd,dtype=bf16,d=256,mask=causal_br",
       Shape::dense(1, 4, 4, 700, 777)},
  };
}
CUDA_TABLE(Large, largeCases());

//===-- Walks -------------------------------------------------------------===//

// More work items than an H100 has multiprocessors (132), so a persistent
// block takes a second item and its ring's phases run on across items, as
// they never do in the small cases above; without bounded waits, as users
// run. The last three hung every time before each warp released Q on its
// own (NvptxWgmmaTileOps::release): a warp that lagged its warpgroup found
// Q's full barrier two phases on. bn=176 is off the defaults; its spills
// make such a lag likely.
std::vector<CudaCase> walkCases() {
  std::vector<CudaCase> out;
  for (const ForwardCase &c : std::vector<ForwardCase>{
           {"bf16_d128_none_160_items", "family=fwd,dtype=bf16,d=128",
            Shape::dense(1, 20, 20, 1024, 1024)},
           {"bf16_d128_causal_160_items",
            "family=fwd,dtype=bf16,d=128,mask=causal,lse=1",
            Shape::dense(1, 20, 10, 1024, 1024)},
           {"fp16_d64_causal_144_items",
            "family=fwd,dtype=fp16,d=64,mask=causal",
            Shape::dense(1, 24, 24, 1024, 1024)},
           {"e4m3_d128_none_160_items", "family=fwd,dtype=fp8_e4m3,d=128",
            Shape::dense(1, 20, 20, 1024, 1024)},
           {"e4m3_d128_causal_160_items",
            "family=fwd,dtype=fp8_e4m3,d=128,mask=causal",
            Shape::dense(1, 20, 20, 1024, 1024)},
           {"bf16_d128_causal_n176_256_items",
            "family=fwd,dtype=bf16,d=128,mask=causal,bm=128,bn=176,warps=8",
            Shape::dense(1, 16, 16, 2048, 2048)},
           {"e4m3_d256_n96_256_items", "family=fwd,dtype=fp8_e4m3,d=256,bn=96",
            Shape::dense(1, 16, 16, 2048, 2048)},
           {"e4m3_d128_n224_256_items",
            "family=fwd,dtype=fp8_e4m3,d=128,bn=224",
            Shape::dense(1, 16, 16, 2048, 2048)},
           {"e4m3_d128_n192_256_items",
            "family=fwd,dtype=fp8_e4m3,d=128,bn=192",
            Shape::dense(1, 16, 16, 2048, 2048)},
           {"e4m3_d128_vpt_w12_n96_256_items",
            "family=fwd,dtype=fp8_e4m3,d=128,v_pretranspose=1,bm=192,bn=96,"
            "warps=12",
            Shape::dense(1, 16, 16, 3072, 3072)},
           {"e4m3_d128_vpt_causal_160_items",
            "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,v_pretranspose=1",
            Shape::dense(1, 20, 20, 1024, 1024)},
           // 120 heads of 4 tiles: sections of 33 heads, one round each
           // (runtime/device/CausalSections.h), the last one partial.
           {"bf16_d128_causal_one_round_sections_480_items",
            "family=fwd,dtype=bf16,d=128,mask=causal,lse=1",
            Shape::dense(8, 15, 5, 512, 512)},
           // pack_gqa: each warpgroup copies the next item's Q rows itself,
           // after its warps meet (the last item's products read them).
           // Decode groups of 4 on the m64 tile (160 items, unmasked) and
           // of 16 x 8 tokens on the two-warpgroup m128 tile (160 items,
           // bottom-right causal, sorted by cost).
           {"bf16_d128_packed_r4_160_items",
            "family=fwd,dtype=bf16,d=128,lse=1,pack_gqa=1,bm=64,bn=128,"
            "warps=4",
            Shape::dense(4, 160, 40, 1, 1024)},
           {"bf16_d128_packed_r16_causal_br_w8_160_items",
            "family=fwd,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,"
            "bm=128,bn=128,warps=8",
            Shape::dense(10, 256, 16, 8, 700)},
           // varlen: the walk's items cover the longest sequence, so the
           // shorter ones' past their end are empty for every role alike
           // (4 x 8 x 17 items, 160 of them with rows).
           {"bf16_d128_varlen_none_544_items",
            "family=fwd,dtype=bf16,d=128,lse=1,varlen=1",
            Shape::varlen({1500, 40, 2100, 700}, {1500, 900, 2100, 700}, 8, 2)},
           {"bf16_d128_varlen_causal_544_items",
            "family=fwd,dtype=bf16,d=128,mask=causal,varlen=1",
            Shape::varlen({1500, 40, 2100, 700}, {1500, 900, 2100, 700}, 8, 8)},
           {"e4m3_d128_varlen_causal_w12",
            "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,lse=1,varlen=1,"
            "bm=192,bn=96,warps=12",
            Shape::varlen({1500, 40, 2100, 700}, {1500, 900, 2100, 700}, 8,
                          2)}})
    out.push_back({c, "wgmma,stages=2"});
  return out;
}
INSTANTIATE_TEST_SUITE_P(Walks, CudaForward, ::testing::ValuesIn(walkCases()),
                         caseName);

} // namespace
