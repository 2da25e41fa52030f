//===- HostForwardTest.cpp - Host JIT forward attention vs the reference --===//
//
// Every feature of a host forward kernel, JIT-compiled and run on random
// inputs with poisoned outputs, checked against the float64 reference. The
// tables cover each feature value with a few combinations of the others
// (pairwise, not the cartesian product: each distinct spec costs a compile):
//
//   DTypesAndHeadDims  fp32/fp16/bf16 x every head dim (and d=192,dv=128),
//                      masks, lse and GQA rotated across the grid
//   Masks              every mask over shapes that cross its edges: Sq = 1,
//                      Sk = 1, Sq != Sk, Sk < Sq (rows that see no key), and
//                      windows (-1,0), (16,-1), (0,0), (7,3), ...
//   GroupedQuery       Hq/Hkv = 1, 2, 3, 4 and MQA
//   ScoreModifiers     softcap, alibi (default and custom slopes), scale, lse
//   Varlen             mixed lengths, length 1, many sequences
//   Tiles              bm,bn = 32,16 / 128,32 / 16,64 / 16,16
//   Targets            x86-64-v3 (8 lanes) and x86-64-v4 (16 lanes)
//
// Lengths are small and odd (not multiples of a tile) so the whole binary
// runs in a minute or two. HostForwardSweepTest.cpp adds a random sweep,
// HostForwardErrorsTest.cpp the features and problems that must be refused.
//
//===----------------------------------------------------------------------===//
#include "ForwardHarness.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

class HostForward : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(HostForward, MatchesReference) { expectCasePasses(GetParam()); }

std::string caseName(const ::testing::TestParamInfo<ForwardCase> &info) {
  return testName(info.param.label);
}

#define FWD_TABLE(table, cases)                                                \
  INSTANTIATE_TEST_SUITE_P(table, HostForward, ::testing::ValuesIn(cases),     \
                           caseName)

//===-- Dtypes x head dims ------------------------------------------------===//

// The full dtype x head-dim grid (27 kernels), each point also taking one
// mask, lse on or off and one GQA ratio, rotated so that every value of
// those meets every dtype; lengths alternate Sq < Sk and Sq > Sk.
FWD_TABLE(DTypesAndHeadDims,
          dtypeHeadDimGrid({"fp32", "fp16", "bf16"},
                           {"d=32", "d=64", "d=80", "d=96", "d=128", "d=160",
                            "d=192", "d=256", "d=192,dv=128"},
                           70, 97));

//===-- Masks -------------------------------------------------------------===//

// Shapes chosen for each mask's edges; lse=1 so that rows that see no key
// must also give lse = -inf. fp32 d=64 (tight tolerance), then bf16 d=128.
const char *const kF32 = "family=fwd,dtype=fp32,d=64,lse=1";
const char *const kBF16 = "family=fwd,dtype=bf16,d=128,lse=1";

std::string with(const char *base, const char *extra) {
  return std::string(base) + "," + extra;
}

std::vector<ForwardCase> maskCases() {
  std::vector<ForwardCase> cases;
  for (const char *base : {kF32, kBF16}) {
    std::string tag = base == kF32 ? "f32_" : "bf16_";
    auto add = [&](const char *label, const char *mask, Shape shape) {
      cases.push_back({tag + label, with(base, mask), shape});
    };
    add("none_square", "mask=none", Shape::dense(2, 2, 2, 130, 130));
    add("none_sq1", "mask=none", Shape::dense(1, 2, 1, 1, 200));
    add("none_sk1", "mask=none", Shape::dense(1, 2, 2, 200, 1));
    add("none_tile_plus_one", "mask=none", Shape::dense(1, 1, 1, 65, 64));
    add("causal_square", "mask=causal", Shape::dense(2, 2, 1, 130, 130));
    add("causal_sq1", "mask=causal", Shape::dense(1, 2, 2, 1, 200));
    add("causal_sk_lt_sq", "mask=causal", Shape::dense(1, 2, 2, 200, 70));
    add("causal_sq_lt_sk", "mask=causal", Shape::dense(1, 2, 2, 70, 200));
    add("causal_br_square", "mask=causal_br", Shape::dense(2, 2, 2, 130, 130));
    add("causal_br_sq1", "mask=causal_br", Shape::dense(1, 2, 1, 1, 200));
    // Rows 0..179 see no key: o = 0 and lse = -inf.
    add("causal_br_sk_lt_sq_empty_rows", "mask=causal_br",
        Shape::dense(1, 2, 2, 250, 70));
    add("causal_br_sq_lt_sk", "mask=causal_br", Shape::dense(1, 2, 2, 70, 200));
    add("window_m1_0_is_causal_br", "mask=window",
        Shape::dense(1, 2, 2, 130, 130).window(-1, 0));
    add("window_16_m1", "mask=window",
        Shape::dense(1, 2, 1, 100, 230).window(16, -1));
    add("window_0_0_diagonal", "mask=window",
        Shape::dense(1, 2, 2, 130, 130).window(0, 0));
    add("window_7_3", "mask=window",
        Shape::dense(2, 2, 2, 130, 150).window(7, 3));
    add("window_7_3_sk_lt_sq_empty_rows", "mask=window",
        Shape::dense(1, 2, 2, 250, 70).window(7, 3));
    add("window_0_m1", "mask=window",
        Shape::dense(1, 2, 2, 90, 150).window(0, -1));
    add("window_unbounded_is_none", "mask=window",
        Shape::dense(1, 2, 2, 90, 150).window(-1, -1));
    add("window_wider_than_sequence", "mask=window",
        Shape::dense(1, 2, 2, 90, 150).window(200, 300));
    // The CLI's largest sides (2^30): no 32-bit wrap in the band's ends.
    add("window_2p30_sides", "mask=window",
        Shape::dense(1, 2, 2, 130, 70).window(1 << 30, 1 << 30));
    add("window_0_2p30", "mask=window",
        Shape::dense(1, 2, 2, 70, 130).window(0, 1 << 30));
    add("window_3_100_sk_lt_sq", "mask=window",
        Shape::dense(1, 2, 2, 200, 70).window(3, 100));
    add("window_0_0_single", "mask=window",
        Shape::dense(3, 1, 1, 1, 1).window(0, 0));
    add("window_0_0_sq1", "mask=window",
        Shape::dense(1, 2, 2, 1, 77).window(0, 0));
  }
  return cases;
}
FWD_TABLE(Masks, maskCases());

//===-- GQA / MQA ---------------------------------------------------------===//

std::vector<ForwardCase> gqaCases() {
  const char *causal = "family=fwd,dtype=bf16,d=64,mask=causal,lse=1";
  const char *window = "family=fwd,dtype=fp16,d=128,mask=window";
  const char *alibi = "family=fwd,dtype=fp32,d=32,bias=alibi";
  return {
      {"ratio1_causal", causal, Shape::dense(2, 4, 4, 77, 77)},
      {"ratio2_causal", causal, Shape::dense(2, 4, 2, 77, 100)},
      {"ratio4_causal", causal, Shape::dense(1, 4, 1, 100, 77)},
      {"ratio3_causal", causal, Shape::dense(1, 3, 1, 50, 90)},
      {"mqa2_window", window, Shape::dense(1, 2, 1, 100, 120).window(20, 5)},
      {"ratio3_window", window, Shape::dense(2, 3, 3, 70, 70).window(20, 5)},
      {"ratio2_window", window, Shape::dense(1, 4, 2, 33, 140).window(-1, 8)},
      {"ratio2_alibi", alibi, Shape::dense(2, 4, 2, 60, 90)},
      {"mqa4_alibi", alibi, Shape::dense(1, 4, 1, 90, 60)},
  };
}
FWD_TABLE(GroupedQuery, gqaCases());

//===-- Softcap, ALiBi, scale, lse ----------------------------------------===//

std::vector<ForwardCase> scoreModifierCases() {
  return {
      {"softcap50_f32", "family=fwd,dtype=fp32,d=64,softcap=1",
       Shape::dense(1, 2, 2, 90, 110)},
      // A cap well inside the scores' range, so tanh saturates.
      {"softcap1p5_f32_causal_lse",
       "family=fwd,dtype=fp32,d=64,mask=causal,softcap=1,lse=1",
       Shape::dense(1, 2, 1, 110, 90).softcap(1.5f).scale(0.5f)},
      {"softcap5_bf16_window",
       "family=fwd,dtype=bf16,d=128,mask=window,softcap=1",
       Shape::dense(2, 4, 2, 80, 120).window(16, -1).softcap(5)},
      {"softcap_fp16_causal_br_lse_empty_rows",
       "family=fwd,dtype=fp16,d=96,mask=causal_br,softcap=1,lse=1",
       Shape::dense(1, 2, 2, 150, 60).softcap(2)},
      {"alibi_f32_default_slopes", "family=fwd,dtype=fp32,d=64,bias=alibi",
       Shape::dense(1, 4, 4, 90, 110)},
      {"alibi_f32_causal_3heads_custom",
       "family=fwd,dtype=fp32,d=64,mask=causal,bias=alibi,lse=1",
       Shape::dense(1, 3, 1, 110, 90).slopes()},
      // Three heads: the default slopes' non-power-of-two interpolation.
      {"alibi_f32_causal_3heads_default",
       "family=fwd,dtype=fp32,d=64,mask=causal,bias=alibi,lse=1",
       Shape::dense(1, 3, 3, 110, 90)},
      {"alibi_bf16_causal_br_lse",
       "family=fwd,dtype=bf16,d=128,mask=causal_br,bias=alibi,lse=1",
       Shape::dense(2, 4, 2, 100, 130)},
      {"alibi_fp16_window", "family=fwd,dtype=fp16,d=80,mask=window,bias=alibi",
       Shape::dense(1, 4, 1, 120, 100).window(30, 10).slopes()},
      {"alibi_softcap_f32_causal_lse",
       "family=fwd,dtype=fp32,d=128,mask=causal,bias=alibi,softcap=1,lse=1",
       Shape::dense(1, 4, 2, 90, 120).softcap(3)},
      {"alibi_softcap_bf16_window_varlen_lse",
       "family=fwd,dtype=bf16,d=256,mask=window,bias=alibi,softcap=1,lse=1,"
       "varlen=1",
       Shape::varlen({40, 1, 70}, {90, 60, 1}, 2, 1)
           .window(8, 8)
           .softcap(4)
           .slopes()},
      {"scale0p3_f32_lse", "family=fwd,dtype=fp32,d=64,lse=1",
       Shape::dense(1, 2, 2, 70, 100).scale(0.3f)},
      {"scale2_f32_causal_lse", "family=fwd,dtype=fp32,d=64,mask=causal,lse=1",
       Shape::dense(1, 2, 2, 100, 70).scale(2.0f)},
      {"scale0p3_fp16_softcap", "family=fwd,dtype=fp16,d=64,softcap=1",
       Shape::dense(1, 2, 1, 70, 100).scale(0.3f).softcap(8)},
  };
}
FWD_TABLE(ScoreModifiers, scoreModifierCases());

//===-- Varlen ------------------------------------------------------------===//

std::vector<ForwardCase> varlenCases() {
  return {
      {"f32_none_mixed", "family=fwd,dtype=fp32,d=64,varlen=1",
       Shape::varlen({1, 77, 130}, {200, 1, 64}, 2, 2)},
      {"bf16_causal_lse",
       "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,varlen=1",
       Shape::varlen({130, 1, 64, 65}, {130, 64, 1, 200}, 2, 1)},
      // Sequence 0 has Sk < Sq: 70 rows see no key.
      {"fp16_causal_br_lse_empty_rows",
       "family=fwd,dtype=fp16,d=64,mask=causal_br,lse=1,varlen=1",
       Shape::varlen({100, 5}, {30, 200}, 2, 2)},
      {"f32_window_7_3_sq1", "family=fwd,dtype=fp32,d=32,mask=window,varlen=1",
       Shape::varlen({1, 1, 1}, {1, 50, 300}, 1, 1).window(7, 3)},
      {"bf16_window_gqa4_lse",
       "family=fwd,dtype=bf16,d=96,mask=window,lse=1,varlen=1",
       Shape::varlen({64, 129, 3}, {100, 129, 250}, 4, 1).window(16, -1)},
      {"f32_d192v128_causal_alibi_lse",
       "family=fwd,dtype=fp32,d=192,dv=128,mask=causal,bias=alibi,lse=1,varlen="
       "1",
       Shape::varlen({50, 120}, {120, 50}, 2, 1)},
      {"fp16_d160_softcap", "family=fwd,dtype=fp16,d=160,softcap=1,varlen=1",
       Shape::varlen({33, 97}, {97, 33}, 2, 2).softcap(6)},
      {"f32_single_sequence", "family=fwd,dtype=fp32,d=64,varlen=1",
       Shape::varlen({300}, {300}, 1, 1)},
      {"f32_eight_length1", "family=fwd,dtype=fp32,d=64,varlen=1",
       Shape::varlen({1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}, 2, 1)},
      {"bf16_causal_lse_eight_length1",
       "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,varlen=1",
       Shape::varlen({1, 2, 1, 3, 1, 64, 1, 65}, {1, 1, 2, 3, 70, 64, 1, 1}, 2,
                     2)},
  };
}
FWD_TABLE(Varlen, varlenCases());

//===-- Tiles -------------------------------------------------------------===//

std::vector<ForwardCase> tileCases() {
  return {
      {"m32n16_f32_causal_lse",
       "family=fwd,dtype=fp32,d=64,mask=causal,lse=1,bm=32,bn=16",
       Shape::dense(1, 2, 2, 100, 100)},
      {"m32n16_f32_causal_lse_small",
       "family=fwd,dtype=fp32,d=64,mask=causal,lse=1,bm=32,bn=16",
       Shape::dense(2, 2, 1, 33, 17)},
      {"m32n16_bf16_d80_softcap_causal_br",
       "family=fwd,dtype=bf16,d=80,mask=causal_br,softcap=1,bm=32,bn=16",
       Shape::dense(1, 2, 2, 90, 40).softcap(4)},
      {"m128n32_bf16_window_7_3",
       "family=fwd,dtype=bf16,d=128,mask=window,bm=128,bn=32",
       Shape::dense(1, 2, 1, 200, 257).window(7, 3)},
      {"m128n32_f32_d192v128_causal_br_lse",
       "family=fwd,dtype=fp32,d=192,dv=128,mask=causal_br,lse=1,bm=128,bn=32",
       Shape::dense(1, 2, 2, 260, 100)},
      {"m16n64_fp16_causal_br_varlen_lse",
       "family=fwd,dtype=fp16,d=64,mask=causal_br,lse=1,varlen=1,bm=16,bn=64",
       Shape::varlen({17, 100, 1}, {130, 64, 65}, 2, 1)},
      {"m16n64_f32_d256_alibi",
       "family=fwd,dtype=fp32,d=256,bias=alibi,bm=16,bn=64",
       Shape::dense(1, 2, 2, 40, 150)},
      {"m16n16_f32_window_0_0",
       "family=fwd,dtype=fp32,d=32,mask=window,lse=1,bm=16,bn=16",
       Shape::dense(1, 2, 2, 50, 45).window(0, 0)},
  };
}
FWD_TABLE(Tiles, tileCases());

//===-- Targets -----------------------------------------------------------===//

// x86-64-v3 kernels use 8-lane vectors, v4 ones 16; this CPU runs both.
std::vector<ForwardCase> targetCases() {
  return {
      {"v3_f32_causal_lse",
       "family=fwd,dtype=fp32,d=64,mask=causal,lse=1,target=x86-64-v3",
       Shape::dense(1, 2, 1, 100, 130)},
      {"v3_bf16_window_varlen",
       "family=fwd,dtype=bf16,d=128,mask=window,varlen=1,target=x86-64-v3",
       Shape::varlen({50, 1, 90}, {80, 33, 90}, 2, 2).window(10, 2)},
      {"v3_fp16_d80_alibi_softcap",
       "family=fwd,dtype=fp16,d=80,bias=alibi,softcap=1,target=x86-64-v3",
       Shape::dense(1, 2, 2, 70, 90).softcap(5)},
      {"v3_m16n16_f32_causal_br_lse",
       "family=fwd,dtype=fp32,d=32,mask=causal_br,lse=1,bm=16,bn=16,target=x86-"
       "64-v3",
       Shape::dense(1, 2, 2, 70, 40)},
      {"v4_f32_d96_causal_br_lse",
       "family=fwd,dtype=fp32,d=96,mask=causal_br,lse=1,target=x86-64-v4",
       Shape::dense(1, 2, 2, 100, 77)},
      {"v4_bf16_d192v128_causal_alibi",
       "family=fwd,dtype=bf16,d=192,dv=128,mask=causal,bias=alibi,target=x86-"
       "64-v4",
       Shape::dense(1, 4, 2, 90, 90)},
  };
}
FWD_TABLE(Targets, targetCases());

/// Prints how many distinct kernels this process compiled, for the report.
class KernelCountReporter : public ::testing::Environment {
public:
  void TearDown() override {
    if (HostForwardRunner *runner = HostForwardRunner::shared())
      std::printf("[ e2e      ] %zu distinct host kernels loaded\n",
                  runner->distinctKernels());
  }
};
[[maybe_unused]] ::testing::Environment *const kReporter =
    ::testing::AddGlobalTestEnvironment(new KernelCountReporter);

} // namespace
