//===- HostAppendKvTest.cpp - append_kv, then attention over the cache ----===//
//
// Each case appends new K/V rows (rotated: interleaved, half, a partial
// rotary dim, or not at all; Q too when asked) into a contiguous or paged
// cache (pages shuffled, partial pages, every unused row NaN) and expects
//   - the appended rows and the rotated Q to match referenceAppendKv, and
//     every other cache element to keep its bits (AppendKvCompare.h);
//   - attention over the updated cache (fwd_paged, with one part and with
//     three; fwd with the cache's strides when contiguous) to match the
//     forward reference on the reference's cache: the append writes rows
//     where the attention kernels read them.
//
//===----------------------------------------------------------------------===//
#include "FamilyHarness.h"
#include "runtime/numerics/HalfPrecision.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {
struct AppendCase {
  std::string label;
  std::string dtype; ///< "bf16", "fp16", "fp32"
  int64_t d, headsQ, headsKv, newTokens;
  std::vector<int64_t> cacheLens; ///< before the append
  int64_t pageSize;               ///< 0: contiguous
  RotaryForm rotary;
  int64_t rotaryDim; ///< 0: d
  bool rotateQ;
  uint64_t seed;
};

void PrintTo(const AppendCase &c, std::ostream *os) {
  *os << c.dtype << " d=" << c.d << " H=" << c.headsQ << "/" << c.headsKv
      << " new=" << c.newTokens << " page=" << c.pageSize
      << " rotary=" << rotaryFormName(c.rotary).str()
      << (c.rotateQ ? "+q" : "");
}

AppendKvProblem makeAppend(const KernelSpec &spec, const AppendCase &c) {
  AppendKvProblem p = AppendKvProblem::forSpec(spec);
  p.batch = static_cast<int64_t>(c.cacheLens.size());
  p.headsQ = c.headsQ;
  p.headsKv = c.headsKv;
  p.newTokens = c.newTokens;
  p.cacheLens = c.cacheLens;
  p.rotary = c.rotary;
  p.rotaryDim = c.rotaryDim;
  p.rotateQ = c.rotateQ;
  int64_t longest = 0, pages = 1;
  for (int64_t len : c.cacheLens) {
    longest = std::max(longest, len + c.newTokens);
    if (c.pageSize)
      pages += (len + c.newTokens + c.pageSize - 1) / c.pageSize;
  }
  p.cache = c.pageSize
                ? KvCacheLayout::paged(c.pageSize, pages,
                                       (longest + c.pageSize - 1) / c.pageSize)
                : KvCacheLayout::contiguous(longest + 3);
  return p;
}

/// \p ref's cache rounded to \p dtype, as the kernel's would hold it.
std::vector<float> rounded(const std::vector<double> &ref, DType dtype) {
  std::vector<float> out(ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    out[i] = roundToDType(static_cast<float>(ref[i]), dtype);
  return out;
}

class HostAppendKv : public ::testing::TestWithParam<AppendCase> {};

/// Attention with the appended rows as queries over the whole updated
/// cache (causal_br: each new row sees the cache up to itself).
void expectAttentionOverCache(const AppendCase &c, const AppendKvProblem &p,
                              AppendData &data, const AppendKvReference &ref) {
  std::string features = ",d=" + std::to_string(c.d) + ",mask=causal_br,lse=1";
  std::vector<int64_t> after(p.cacheLens);
  for (int64_t &len : after)
    len += p.newTokens;
  HostTensor q(data.kNew.getType(), numElements(p.qShape()));
  q.fillNormal(c.seed * 11);
  if (p.rotateQ)
    for (size_t i = 0; i < q.size(); ++i)
      q.set(i, data.qOut.get(i));
  std::vector<float> kRef = rounded(ref.kCache, data.kCache.getType());
  std::vector<float> vRef = rounded(ref.vCache, data.vCache.getType());
  std::optional<KernelSpec> spec = resolveSpec(
      (c.pageSize ? "family=fwd_paged,dtype=" : "family=fwd,dtype=") + c.dtype +
      features);
  ASSERT_TRUE(spec);
  AttentionProblem a = AttentionProblem::forSpec(*spec);
  a.batch = p.batch;
  a.headsQ = p.headsQ;
  a.headsKv = p.headsKv;
  a.seqlenQ = p.newTokens;
  HostTensor o(spec->outType(),
               p.batch * p.newTokens * p.headsQ * spec->headDimV());
  std::vector<float> lse(p.batch * p.headsQ * p.newTokens);
  ForwardBuffers query{q.data(), data.kCache.data(), data.vCache.data(),
                       o.data(), lse.data()};
  for (unsigned n : {1u, 3u}) {
    o.poison();
    std::fill(lse.begin(), lse.end(), NAN);
    ReferenceOutput want;
    if (c.pageSize) {
      PagedProblem paged = PagedProblem::make(*spec, a, p.cache, after);
      ASSERT_FALSE(bool(paged.validate(*spec)));
      auto kernels = loadSplitKv(*spec);
      ASSERT_TRUE(bool(kernels)) << llvm::toString(kernels.takeError());
      SplitKvWorkspaceSize size = splitKvWorkspaceSize(*spec, a, n);
      std::vector<float> oAccum(size.oAccum, NAN), lseAccum(size.lseAccum, NAN);
      KvCacheBuffers cache{data.kCache.data(), data.vCache.data(),
                           data.blockTable.data(), nullptr};
      std::vector<int32_t> lens(after.begin(), after.end());
      cache.seqlens = lens.data();
      kernels->run(makePagedParams(*spec, paged, query, cache, n,
                                   {oAccum.data(), lseAccum.data()}),
                   familyExecutor());
      want = referencePaged(*spec, paged, q.toFloat(), kRef, vRef,
                            data.blockTable);
    } else { // every sequence has the same length here: dense fwd, cache
             // strides
      ASSERT_EQ(n == 1, true);
      a.seqlenK = after[0];
      ASSERT_FALSE(bool(a.validate(*spec)));
      HostForwardRunner *runner = HostForwardRunner::shared();
      auto kernel = runner->load(*spec);
      ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
      KernelArgs params = makeKernelArgs(*spec, a, query);
      params.kStrides.batch = p.cache.blockStride(p.headsKv, c.d);
      params.vStrides.batch = p.cache.blockStride(p.headsKv, spec->headDimV());
      kernel->run(params, familyExecutor());
      std::vector<float> k =
          gatherCacheRows(kRef, p.cache, {}, after, p.headsKv, c.d);
      std::vector<float> v = gatherCacheRows(vRef, p.cache, {}, after,
                                             p.headsKv, spec->headDimV());
      want = referenceForward(*spec, a, q.toFloat(), k, v);
    }
    CompareResult r =
        compareOutputs(o.toFloat(), want.o, lse, want.lse, spec->outType());
    EXPECT_TRUE(r.pass) << encodeName(*spec) << " after the append, " << n
                        << " parts: " << r.summary();
    if (!c.pageSize)
      break;
  }
}

TEST_P(HostAppendKv, WritesRowsThenAttentionReadsThem) {
  const AppendCase &c = GetParam();
  std::optional<KernelSpec> spec = resolveSpec(
      "family=append_kv,dtype=" + c.dtype + ",d=" + std::to_string(c.d));
  ASSERT_TRUE(spec);
  AppendKvProblem problem = makeAppend(*spec, c);
  std::unique_ptr<AppendData> data;
  AppendKvReference ref;
  llvm::Expected<AppendKvCheck> check =
      checkAppend(*spec, problem, c.seed, &data, &ref);
  ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
  EXPECT_TRUE(check->pass) << encodeName(*spec) << ": " << check->summary();
  if (check->pass)
    expectAttentionOverCache(c, problem, *data, ref);
}

std::string caseName(const ::testing::TestParamInfo<AppendCase> &info) {
  return testName(info.param.label);
}

std::vector<AppendCase> appendCases() {
  using R = RotaryForm;
  return {
      // Decode: one new token per sequence, GQA 8:1, into shuffled pages.
      {"decode_paged16_half_q",
       "bf16",
       128,
       16,
       2,
       1,
       {0, 15, 16, 40},
       16,
       R::Half,
       0,
       true,
       1},
      {"decode_paged64_interleaved_q",
       "bf16",
       128,
       16,
       2,
       1,
       {63, 1, 200},
       64,
       R::Interleaved,
       0,
       true,
       2},
      {"prefill_paged16_interleaved",
       "fp16",
       64,
       4,
       2,
       70,
       {5, 33},
       16,
       R::Interleaved,
       0,
       true,
       3},
      {"paged256_half_partial_dim",
       "fp32",
       64,
       4,
       1,
       9,
       {250, 0},
       256,
       R::Half,
       32,
       true,
       4},
      {"paged16_no_rotary",
       "bf16",
       64,
       2,
       2,
       20,
       {3, 17},
       16,
       R::None,
       0,
       false,
       5},
      {"paged16_rotate_k_only",
       "fp16",
       128,
       8,
       1,
       3,
       {30},
       16,
       R::Interleaved,
       0,
       false,
       6},
      // Contiguous caches: equal lengths, so attention runs as fwd.
      {"contiguous_half_q",
       "bf16",
       128,
       8,
       1,
       1,
       {37, 37},
       0,
       R::Half,
       0,
       true,
       7},
      {"contiguous_interleaved_q",
       "fp32",
       64,
       4,
       2,
       65,
       {10, 10, 10},
       0,
       R::Interleaved,
       0,
       true,
       8},
      {"contiguous_no_rotary",
       "fp16",
       64,
       2,
       2,
       5,
       {0},
       0,
       R::None,
       0,
       false,
       9},
      {"contiguous_half_partial_dim",
       "bf16",
       64,
       4,
       4,
       2,
       {100},
       0,
       R::Half,
       16,
       true,
       10},
  };
}
INSTANTIATE_TEST_SUITE_P(Cases, HostAppendKv,
                         ::testing::ValuesIn(appendCases()), caseName);

/// The rotation itself against hand-computed values: position 1 of a
/// 4-wide rotary with base 1 turns pair 0 by 1 rad and pair 1 by 1 rad too
/// (base^0 = base^(-1/2)... = 1), so the forms differ only in the pairing.
TEST(Rotary, FormsPairElementsAsDocumented) {
  RotaryTables t = makeRotaryTables(2, 4, 1.0);
  std::vector<float> x = {1, 2, 3, 4};
  double c = std::cos(1.0), s = std::sin(1.0);
  std::vector<double> inter =
      rotateRowReference(x, RotaryForm::Interleaved, t, 1);
  std::vector<double> half = rotateRowReference(x, RotaryForm::Half, t, 1);
  EXPECT_NEAR(inter[0], 1 * c - 2 * s, 1e-6);
  EXPECT_NEAR(inter[1], 2 * c + 1 * s, 1e-6);
  EXPECT_NEAR(half[0], 1 * c - 3 * s, 1e-6);
  EXPECT_NEAR(half[2], 3 * c + 1 * s, 1e-6);
  EXPECT_EQ(rotateRowReference(x, RotaryForm::Half, t, 0),
            std::vector<double>({1, 2, 3, 4}));
}
} // namespace
