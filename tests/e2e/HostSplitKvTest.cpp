//===- HostSplitKvTest.cpp - fwd_splitkv + combine vs reference and fwd ---===//
//
// Each case runs fwd_splitkv with every listed part count (1: the split
// kernel finishes alone; more: the combine merges the parts) on the inputs
// checkForward makes, and expects
//   - a match with the float64 forward reference (O and LSE), rows that see
//     no key exactly 0;
//   - a match with the single-pass fwd kernel on the same inputs, bit for
//     bit with one part (the same loop, one run of it).
// Shapes leave parts empty on purpose: keys shorter than a tile cut 7 ways,
// causal_br rows that see no key, windows whose band covers a few tiles.
//
//===----------------------------------------------------------------------===//
#include "FamilyHarness.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"
#include <cstring>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {
struct SplitCase {
  std::string label;
  std::string spec; ///< a fwd_splitkv spec
  Shape shape;
  std::vector<unsigned> splits;
  uint64_t seed = 1;
};

void PrintTo(const SplitCase &c, std::ostream *os) {
  ForwardCase fc{c.label, c.spec, c.shape, c.seed};
  fmhajit::e2e::PrintTo(fc, os);
}

class HostSplitKv : public ::testing::TestWithParam<SplitCase> {};

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  // Empty vectors (no LSE) have null data, which memcmp must not get.
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_P(HostSplitKv, MatchesReferenceAndSinglePass) {
  const SplitCase &c = GetParam();
  std::optional<KernelSpec> spec = resolveSpec(c.spec);
  ASSERT_TRUE(spec);
  KernelSpec single = *spec;
  single.family = Family::Fwd;
  AttentionProblem problem = makeProblem(*spec, c.shape);
  llvm::Expected<ForwardCheck> reference = checkOnHost(single, problem, c.seed);
  ASSERT_TRUE(bool(reference)) << llvm::toString(reference.takeError());
  for (unsigned n : c.splits) {
    SCOPED_TRACE("numSplits " + std::to_string(n));
    llvm::Expected<ForwardCheck> check =
        checkForward(*spec, problem, c.seed,
                     [n](const KernelSpec &s, const AttentionProblem &p,
                         ForwardData &d) { return runSplitKv(s, p, d, n); });
    ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
    EXPECT_TRUE(check->compare.pass)
        << encodeName(*spec) << ": " << check->compare.summary();
    for (size_t i = 0; i < check->o.size(); ++i)
      if (check->refO[i] == 0.0)
        ASSERT_EQ(check->o[i], 0.0f)
            << "a row that sees no key must be exactly 0 (element " << i << ")";
    std::vector<double> singleO(reference->o.begin(), reference->o.end());
    std::vector<double> singleLse(reference->lse.begin(), reference->lse.end());
    CompareResult vsSingle = compareOutputs(check->o, singleO, check->lse,
                                            singleLse, spec->outType());
    EXPECT_TRUE(vsSingle.pass)
        << "against the single-pass kernel: " << vsSingle.summary();
    if (n == 1) {
      EXPECT_TRUE(sameBits(check->o, reference->o))
          << "one part must be the single-pass kernel";
      EXPECT_TRUE(sameBits(check->lse, reference->lse));
    }
  }
}

std::string caseName(const ::testing::TestParamInfo<SplitCase> &info) {
  return testName(info.param.label);
}

// 16 and 19 take the combine's steps of 8 parts (with 3 left over for 19:
// the one-at-a-time tail); the rest only the tail.
const std::vector<unsigned> kSplits = {1, 2, 3, 7, 16, 19};

std::vector<SplitCase> splitCases() {
  return {
      // Decode: one query, GQA 8:1, keys over many tiles.
      {"decode_bf16_d128_gqa8", "family=fwd_splitkv,dtype=bf16,d=128,lse=1",
       Shape::dense(2, 16, 2, 1, 1000), kSplits, 1},
      {"decode_fp16_d64_causal_br_gqa8",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal_br,lse=1",
       Shape::dense(1, 8, 1, 1, 777), kSplits, 2},
      {"fp32_d64_causal",
       "family=fwd_splitkv,dtype=fp32,d=64,mask=causal,lse=1",
       Shape::dense(1, 4, 2, 130, 200), kSplits, 3},
      {"bf16_d128_causal_br",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br",
       Shape::dense(2, 4, 1, 5, 300), kSplits, 4},
      {"fp32_d64_window",
       "family=fwd_splitkv,dtype=fp32,d=64,mask=window,lse=1",
       Shape::dense(1, 4, 4, 70, 500).window(100, 0), kSplits, 5},
      {"fp32_d64_window_both_sides",
       "family=fwd_splitkv,dtype=fp32,d=64,mask=window,lse=1",
       Shape::dense(1, 2, 1, 40, 400).window(7, 90), kSplits, 6},
      // Keys shorter than one tile: every part but one is empty.
      {"fp32_d32_short_keys",
       "family=fwd_splitkv,dtype=fp32,d=32,lse=1",
       Shape::dense(1, 2, 1, 3, 20),
       {2, 3, 7},
       7},
      {"fp32_d32_three_tiles_seven_parts",
       "family=fwd_splitkv,dtype=fp32,d=32,lse=1",
       Shape::dense(2, 2, 2, 9, 130),
       {7},
       8},
      // Rows that see no key (Sq > Sk under causal_br): O = 0, LSE = -inf.
      {"fp32_d64_rows_without_keys",
       "family=fwd_splitkv,dtype=fp32,d=64,mask=causal_br,lse=1",
       Shape::dense(1, 2, 2, 100, 30), kSplits, 9},
      {"bf16_d64_varlen", "family=fwd_splitkv,dtype=bf16,d=64,varlen=1,lse=1",
       Shape::varlen({1, 77, 5}, {200, 5, 333}, 4, 2), kSplits, 10},
      {"bf16_d64_softcap_alibi",
       "family=fwd_splitkv,dtype=bf16,d=64,mask=causal_br,softcap=1,bias=alibi,"
       "lse=1",
       Shape::dense(1, 4, 2, 3, 250).slopes(),
       {1, 3},
       11},
      {"fp32_d64_small_tiles",
       "family=fwd_splitkv,dtype=fp32,d=64,bm=16,bn=16,lse=1",
       Shape::dense(1, 2, 1, 17, 100), kSplits, 12},
      {"fp16_d192_dv128",
       "family=fwd_splitkv,dtype=fp16,d=192,dv=128,lse=1",
       Shape::dense(1, 2, 1, 2, 260),
       {1, 3},
       13},
  };
}
INSTANTIATE_TEST_SUITE_P(Cases, HostSplitKv, ::testing::ValuesIn(splitCases()),
                         caseName);

/// The combine on its own: a varlen split call with more parts than key
/// tiles, so most parts of short sequences are empty.
TEST(HostSplitKvCombine, VarlenWithManyEmptyParts) {
  std::optional<KernelSpec> spec =
      resolveSpec("family=fwd_splitkv,dtype=fp32,d=32,varlen=1,lse=1");
  ASSERT_TRUE(spec);
  AttentionProblem problem =
      makeProblem(*spec, Shape::varlen({2, 1, 3}, {1, 64, 300}, 2, 1));
  llvm::Expected<ForwardCheck> check =
      checkForward(*spec, problem, 21,
                   [](const KernelSpec &s, const AttentionProblem &p,
                      ForwardData &d) { return runSplitKv(s, p, d, 16); });
  ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
  EXPECT_TRUE(check->compare.pass) << check->compare.summary();
}
} // namespace
