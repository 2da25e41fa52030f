//===- HostPackGqaTest.cpp - pack_gqa kernels vs the float64 reference ----===//
//
// pack_gqa puts the query heads of one K/V head, times the query tokens, in
// one tile (packed row R: token R / ratio, head h + R % ratio). Each case is
// one pack_gqa spec, run on fresh seeded inputs with poisoned outputs over a
// sweep of GQA ratios and query lengths, and compared with the reference
// (O and LSE; rows that see no key exactly 0). A row mapped to the wrong
// token or head, a mask or ALiBi term read from the tile row instead of the
// packed row's token and head, or a row left unwritten fails the compare.
//
// Tiles of bm = 16 rows make ratios 3, 5 and 6 split a token's heads across
// two tiles, and Sq * ratio > bm gives a work item several tiles, so each
// tile's key range (from its first and last token) is exercised.
//
//===----------------------------------------------------------------------===//
#include "FamilyHarness.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {
enum class Runner { Fwd, SplitKv, Paged };

struct PackCase {
  std::string label;
  std::string spec; ///< a pack_gqa=1 spec
  Runner runner = Runner::Fwd;
  std::vector<int64_t> ratios = {1, 2, 4, 8, 16};
  std::vector<int64_t> seqlensQ = {1, 2, 3, 4, 5, 6, 7, 8};
  int64_t headsKv = 2;
  /// Keys of each run: keysBase + keysPerQuery * Sq (a varlen batch scales
  /// its own lengths).
  int64_t keysBase = 70, keysPerQuery = 13;
};

void PrintTo(const PackCase &c, std::ostream *os) { *os << c.spec; }

class HostPackGqa : public ::testing::TestWithParam<PackCase> {};

Shape shapeFor(const KernelSpec &spec, const PackCase &c, int64_t ratio,
               int64_t sq) {
  int64_t hq = ratio * c.headsKv, sk = c.keysBase + c.keysPerQuery * sq;
  Shape shape = spec.varlen ? Shape::varlen({sq, 1, sq + 3}, {sk, 9, 2 * sk},
                                            hq, c.headsKv)
                            : Shape::dense(2, hq, c.headsKv, sq, sk);
  shape.window(9, 2);
  if (spec.bias == Bias::Alibi)
    shape.slopes();
  return shape;
}

/// Pages of 16 rows for every sequence (lengths as the dense shape's keys,
/// one ending mid-page, one a single row) plus a spare NaN page.
PagedProblem pagedFor(const KernelSpec &spec, const PackCase &c, int64_t ratio,
                      int64_t sq) {
  AttentionProblem a = AttentionProblem::forSpec(spec);
  std::vector<int64_t> lens = {c.keysBase + c.keysPerQuery * sq, 1, 64};
  a.batch = int64_t(lens.size());
  a.headsQ = ratio * c.headsKv;
  a.headsKv = c.headsKv;
  a.seqlenQ = sq;
  if (spec.softcap)
    a.softcap = kDefaultSoftcap;
  const int64_t page = 16;
  int64_t pages = 1, longest = 0;
  for (int64_t len : lens) {
    pages += (len + page - 1) / page;
    longest = std::max(longest, len);
  }
  return PagedProblem::make(
      spec, a,
      KvCacheLayout::paged(page, pages, (longest + page - 1) / page + 1), lens);
}

void expectPasses(const KernelSpec &spec, const CompareResult &compare,
                  const std::vector<float> &o, const std::vector<double> &ref) {
  EXPECT_TRUE(compare.pass) << encodeName(spec) << ": " << compare.summary();
  size_t wrongZeros = 0;
  for (size_t i = 0; i < o.size(); ++i)
    wrongZeros += ref[i] == 0.0 && o[i] != 0.0f;
  EXPECT_EQ(wrongZeros, 0u) << "rows that see no key must be exactly 0";
}

void runOne(const KernelSpec &spec, const PackCase &c, int64_t ratio,
            int64_t sq, uint64_t seed) {
  if (c.runner == Runner::Paged) {
    for (unsigned n : {1u, 3u}) {
      llvm::Expected<PagedCheck> check =
          checkPaged(spec, pagedFor(spec, c, ratio, sq), n, seed);
      ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
      expectPasses(spec, check->compare, check->o, check->refO);
    }
    return;
  }
  AttentionProblem problem = makeProblem(spec, shapeFor(spec, c, ratio, sq));
  for (unsigned n : c.runner == Runner::SplitKv ? std::vector<unsigned>{1, 3}
                                                : std::vector<unsigned>{0}) {
    auto run = [n](const KernelSpec &s, const AttentionProblem &p,
                   ForwardData &d) -> llvm::Error {
      if (n == 0)
        return (*HostForwardRunner::shared())(s, p, d);
      return runSplitKv(s, p, d, n);
    };
    llvm::Expected<ForwardCheck> check =
        checkForward(spec, problem, seed + n, run);
    ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
    expectPasses(spec, check->compare, check->o, check->refO);
  }
}

TEST_P(HostPackGqa, MatchesReference) {
  const PackCase &c = GetParam();
  ASSERT_TRUE(HostForwardRunner::shared());
  std::optional<KernelSpec> spec = resolveSpec(c.spec);
  ASSERT_TRUE(spec);
  ASSERT_TRUE(spec->pack_gqa);
  uint64_t seed = 1;
  for (int64_t ratio : c.ratios)
    for (int64_t sq : c.seqlensQ) {
      SCOPED_TRACE("ratio " + std::to_string(ratio) + ", Sq " +
                   std::to_string(sq));
      runOne(*spec, c, ratio, sq, seed++);
      if (HasFatalFailure() || HasNonfatalFailure())
        return; // one failing shape says enough
    }
}

std::string caseName(const ::testing::TestParamInfo<PackCase> &info) {
  return testName(info.param.label);
}

std::vector<PackCase> packCases() {
  const std::string fwd = "family=fwd,pack_gqa=1,bm=16,bn=16,";
  std::vector<PackCase> cases;
  for (const char *mask : {"none", "causal", "causal_br", "window"})
    cases.push_back({std::string("fwd_fp32_d64_") + mask,
                     fwd + "dtype=fp32,d=64,lse=1,mask=" + mask});
  cases.push_back({"fwd_bf16_d128_alibi_softcap",
                   fwd + "dtype=bf16,d=128,mask=causal_br,bias=alibi,"
                         "softcap=1,lse=1"});
  cases.push_back({"fwd_fp16_d256_causal_br",
                   fwd + "dtype=fp16,d=256,mask=causal_br,lse=1",
                   Runner::Fwd,
                   {4, 8},
                   {1, 5}});
  // Ratios whose heads straddle tiles, and queries past one tile.
  cases.push_back({"fwd_fp32_d64_odd_ratios_window",
                   fwd + "dtype=fp32,d=64,mask=window,bias=alibi,lse=1",
                   Runner::Fwd,
                   {3, 5, 6},
                   {1, 4, 7, 40}});
  cases.push_back({"fwd_fp32_d64_prefill_causal",
                   fwd + "dtype=fp32,d=64,mask=causal,lse=1",
                   Runner::Fwd,
                   {4},
                   {37, 70},
                   1,
                   0,
                   1});
  // causal_br with fewer keys than queries: leading rows see no key.
  cases.push_back({"fwd_fp32_d64_rows_without_keys",
                   fwd + "dtype=fp32,d=64,mask=causal_br,lse=1",
                   Runner::Fwd,
                   {2, 8},
                   {6, 8},
                   2,
                   3,
                   0});
  cases.push_back({"fwd_bf16_d64_varlen_causal_br",
                   fwd + "dtype=bf16,d=64,mask=causal_br,varlen=1,lse=1",
                   Runner::Fwd,
                   {1, 4, 16},
                   {1, 3, 8}});
  // Host default tile (bm = 192): the whole group in one tile.
  cases.push_back({"fwd_bf16_d128_default_tile",
                   "family=fwd,pack_gqa=1,dtype=bf16,d=128,lse=1",
                   Runner::Fwd,
                   {8, 16},
                   {1, 8}});
  cases.push_back({"splitkv_bf16_d128_causal_br_alibi",
                   "family=fwd_splitkv,pack_gqa=1,bm=16,dtype=bf16,d=128,"
                   "mask=causal_br,bias=alibi,lse=1",
                   Runner::SplitKv,
                   {1, 4, 8, 16},
                   {1, 2, 8},
                   2,
                   300,
                   13});
  cases.push_back({"splitkv_fp32_d64_varlen_window",
                   "family=fwd_splitkv,pack_gqa=1,bm=16,dtype=fp32,d=64,"
                   "mask=window,varlen=1,lse=1",
                   Runner::SplitKv,
                   {2, 8},
                   {1, 4},
                   2,
                   200,
                   13});
  cases.push_back({"paged_bf16_d128_causal_br_softcap",
                   "family=fwd_paged,pack_gqa=1,bm=16,dtype=bf16,d=128,"
                   "mask=causal_br,softcap=1,lse=1",
                   Runner::Paged,
                   {1, 4, 8, 16},
                   {1, 3, 8},
                   2,
                   250,
                   13});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Cases, HostPackGqa, ::testing::ValuesIn(packCases()),
                         caseName);

/// A pack_gqa kernel and the same kernel without it give the same answer on
/// the same inputs: the packing changes where rows live, not the math.
TEST(HostPackGqaAgainstUnpacked, SameOutputs) {
  std::optional<KernelSpec> packed =
      resolveSpec("family=fwd,pack_gqa=1,dtype=fp32,d=64,bm=16,mask=causal_br,"
                  "lse=1");
  ASSERT_TRUE(packed);
  KernelSpec plain = *packed;
  plain.pack_gqa = false;
  AttentionProblem problem =
      makeProblem(*packed, Shape::dense(2, 8, 2, 5, 150));
  llvm::Expected<ForwardCheck> a = checkOnHost(*packed, problem, 42);
  llvm::Expected<ForwardCheck> b = checkOnHost(plain, problem, 42);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  ASSERT_EQ(a->o.size(), b->o.size());
  for (size_t i = 0; i < a->o.size(); ++i)
    ASSERT_NEAR(a->o[i], b->o[i], 1e-5) << "element " << i;
  for (size_t i = 0; i < a->lse.size(); ++i)
    ASSERT_NEAR(a->lse[i], b->lse[i], 1e-5) << "LSE row " << i;
}
} // namespace
