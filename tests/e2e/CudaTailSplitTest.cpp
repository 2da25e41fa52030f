//===- CudaTailSplitTest.cpp - The last round's items cut by keys, on a GPU
//===//
//
// A walking kernel whose items cost the same may cut its last round's items
// into parts by keys, the last part of each folding the others' partials in
// (ir/ForwardTail.cpp, runtime/device/TailSplit.h). The launch chooses the
// parts; FMHAJIT_TAIL_PARTS forces them here, so that problems a few rounds
// long run every path: parts of whole and partial query tiles, a part with
// no key tile (more parts than a range's tiles cut evenly give one), GQA,
// the LSE, fp8 with V transposed in the kernel and by the
// pass, and the counters cleared between launches (each case runs twice,
// the second on the counters the first left). Each is checked against the
// float64 reference with outputs poisoned, as CudaForwardTest's tables are.
//
//===----------------------------------------------------------------------===//
#include "../unit/ScopedEnv.h"
#include "CudaForwardRunner.h"
#include "runtime/device/TailSplit.h"
#include "specs/EncodedName.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

struct TailCase {
  ForwardCase base;
  const char *parts; ///< FMHAJIT_TAIL_PARTS
};

void PrintTo(const TailCase &c, std::ostream *os) {
  fmhajit::e2e::PrintTo(c.base, os);
  *os << " FMHAJIT_TAIL_PARTS=" << c.parts;
}

class CudaTailSplit : public ::testing::TestWithParam<TailCase> {};

TEST_P(CudaTailSplit, MatchesReference) {
  CudaForwardRunner *runner = CudaForwardRunner::shared();
  if (!runner)
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  const TailCase &c = GetParam();
  ScopedEnv env;
  env.set("FMHAJIT_TAIL_PARTS", c.parts);
  ForwardCase fc = c.base;
  fc.spec += ",pipeline=wgmma,stages=2,target=sm_90a";
  std::optional<KernelSpec> spec = resolveSpec(fc.spec);
  ASSERT_TRUE(spec);
  ASSERT_TRUE(splitsTail(*spec)) << encodeName(*spec);
  // The launch does split: the case is not checking a whole-item kernel.
  const Shape &s = fc.shape;
  int64_t items = s.batch * s.headsQ * ((s.seqlenQ + spec->bm - 1) / spec->bm);
  TailSplit split = chooseTailSplit(*spec, items, s.seqlenK,
                                    runner->driver().device().computeUnits);
  EXPECT_TRUE(split.splits()) << encodeName(*spec);
  for (int launch = 0; launch < 2; ++launch)
    expectCasePasses(fc, [&](const KernelSpec &k, const AttentionProblem &p,
                             ForwardData &d) { return (*runner)(k, p, d); });
}

std::string tailName(const ::testing::TestParamInfo<TailCase> &info) {
  return testName(info.param.base.label + "_p" + info.param.parts);
}

// 16 heads x 16 query tiles of 192 rows: 256 items, two rounds on 132
// blocks, the second holding 124. bm = 128 tiles: 20 heads x 9 tiles.
std::vector<TailCase> tailCases() {
  const char *fp8W12 = "family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,warps=12";
  return {
      {{"e4m3_w12_vpt_lse", std::string(fp8W12) + ",v_pretranspose=1,lse=1",
        Shape::dense(1, 16, 16, 3072, 3072)},
       "3"},
      {{"e4m3_w12_vpt_gqa_partial_tiles",
        std::string(fp8W12) + ",v_pretranspose=1",
        Shape::dense(1, 16, 4, 3000, 2900)},
       "2"},
      {{"e4m3_w8_transposers_lse",
        "family=fwd,dtype=fp8_e4m3,d=128,bm=128,bn=128,warps=8,lse=1",
        Shape::dense(1, 20, 20, 1100, 1500)},
       "5"},
      {{"bf16_n160_lse_odd_keys",
        "family=fwd,dtype=bf16,d=128,bm=128,bn=160,warps=8,lse=1",
        Shape::dense(1, 20, 20, 1100, 1500)},
       "4"},
      // 5 key tiles in 4 parts of 2: the last part holds none.
      {{"bf16_n160_empty_part_lse",
        "family=fwd,dtype=bf16,d=128,bm=128,bn=160,warps=8,lse=1",
        Shape::dense(1, 20, 20, 1100, 700)},
       "4"},
      {{"fp16_n128_gqa_lse",
        "family=fwd,dtype=fp16,d=128,bm=128,bn=128,warps=8,lse=1",
        Shape::dense(2, 10, 5, 1100, 1300)},
       "3"},
      {{"bf16_d192_dv128", "family=fwd,dtype=bf16,d=192,dv=128,lse=1",
        Shape::dense(1, 20, 20, 1100, 1200)},
       "2"},
  };
}
INSTANTIATE_TEST_SUITE_P(Tails, CudaTailSplit, ::testing::ValuesIn(tailCases()),
                         tailName);

} // namespace
