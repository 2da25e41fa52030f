//===- HostPagedTest.cpp - fwd_paged vs the reference, with splits --------===//
//
// Paged caches as KvCacheData builds them: each sequence's pages in a
// seeded random order, partial last pages, every unused row NaN (a read of
// the wrong page or past a sequence's end turns O into NaN). Page sizes 16,
// 64 and 256 around the key tile (bn = 64); cache lengths 1 (a single row),
// page multiples, and lengths that end mid-page; each with one part and
// with several, so paged split-KV (fwd_paged + splitkv_combine) is covered.
//
//===----------------------------------------------------------------------===//
#include "FamilyHarness.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {
struct PagedCase {
  std::string label;
  std::string spec; ///< a fwd_paged spec
  int64_t headsQ, headsKv, seqlenQ;
  std::vector<int64_t> cacheLens;
  int64_t pageSize;
  std::vector<unsigned> splits;
  int64_t windowLeft = -1, windowRight = -1;
  uint64_t seed = 1;
};

void PrintTo(const PagedCase &c, std::ostream *os) {
  *os << c.spec << " H=" << c.headsQ << "/" << c.headsKv << " Sq=" << c.seqlenQ
      << " page " << c.pageSize << " lens=";
  for (int64_t len : c.cacheLens)
    *os << len << ",";
}

/// Pages for every sequence plus two spare (NaN) pages.
PagedProblem makePaged(const KernelSpec &spec, const PagedCase &c) {
  AttentionProblem a = AttentionProblem::forSpec(spec);
  a.batch = static_cast<int64_t>(c.cacheLens.size());
  a.headsQ = c.headsQ;
  a.headsKv = c.headsKv;
  a.seqlenQ = c.seqlenQ;
  if (spec.mask == Mask::Window) {
    a.windowLeft = c.windowLeft;
    a.windowRight = c.windowRight;
  }
  if (spec.softcap)
    a.softcap = kDefaultSoftcap;
  int64_t pages = 2, longest = 0;
  for (int64_t len : c.cacheLens) {
    pages += (len + c.pageSize - 1) / c.pageSize;
    longest = std::max(longest, len);
  }
  KvCacheLayout layout = KvCacheLayout::paged(
      c.pageSize, pages, (longest + c.pageSize - 1) / c.pageSize + 1);
  return PagedProblem::make(spec, a, layout, c.cacheLens);
}

class HostPaged : public ::testing::TestWithParam<PagedCase> {};

TEST_P(HostPaged, MatchesReference) {
  const PagedCase &c = GetParam();
  std::optional<KernelSpec> spec = resolveSpec(c.spec);
  ASSERT_TRUE(spec);
  PagedProblem problem = makePaged(*spec, c);
  for (unsigned n : c.splits) {
    SCOPED_TRACE("numSplits " + std::to_string(n));
    llvm::Expected<PagedCheck> check = checkPaged(*spec, problem, n, c.seed);
    ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
    EXPECT_TRUE(check->compare.pass)
        << encodeName(*spec) << ": " << check->compare.summary();
    for (size_t i = 0; i < check->o.size(); ++i)
      if (check->refO[i] == 0.0)
        ASSERT_EQ(check->o[i], 0.0f)
            << "a row that sees no key must be exactly 0";
  }
}

std::string caseName(const ::testing::TestParamInfo<PagedCase> &info) {
  return testName(info.param.label);
}

const char *const kDecode = "family=fwd_paged,dtype=bf16,d=128,lse=1";

std::vector<PagedCase> pagedCases() {
  std::vector<PagedCase> cases;
  // Decode, GQA 8:1, at each page size; lengths end mid-page, on a page
  // boundary and after a single row.
  for (int64_t page : {16, 64, 256})
    cases.push_back({"decode_gqa8_page" + std::to_string(page),
                     kDecode,
                     16,
                     2,
                     1,
                     {1, 17, 300, 64, 1000},
                     page,
                     {1, 3, 7},
                     -1,
                     -1,
                     uint64_t(page)});
  cases.push_back({"causal_br_fp16_page16",
                   "family=fwd_paged,dtype=fp16,d=64,mask=causal_br,lse=1",
                   4,
                   2,
                   5,
                   {3, 100, 257},
                   16,
                   {1, 2, 7},
                   -1,
                   -1,
                   3});
  cases.push_back({"rows_without_keys_fp32",
                   "family=fwd_paged,dtype=fp32,d=64,mask=causal_br,lse=1",
                   2,
                   1,
                   40,
                   {10, 70},
                   16,
                   {1, 3},
                   -1,
                   -1,
                   4});
  cases.push_back({"window_fp32_page64",
                   "family=fwd_paged,dtype=fp32,d=32,mask=window,lse=1",
                   4,
                   4,
                   7,
                   {500, 129},
                   64,
                   {1, 4},
                   100,
                   0,
                   5});
  cases.push_back(
      {"softcap_alibi_bf16_page16",
       "family=fwd_paged,dtype=bf16,d=128,softcap=1,bias=alibi,mask=causal_br",
       8,
       1,
       2,
       {33, 400},
       16,
       {1, 3},
       -1,
       -1,
       6});
  cases.push_back({"small_tiles_page256",
                   "family=fwd_paged,dtype=fp32,d=64,bm=16,bn=16,lse=1",
                   2,
                   2,
                   3,
                   {600, 5},
                   256,
                   {1, 5},
                   -1,
                   -1,
                   7});
  // Issue 13's decode shapes: one-row pages under a GQA group of 16 packed
  // into one tile, and speculative decode (4 tokens) at d = 256; 16 and 19
  // parts take the combine's 8-part steps.
  cases.push_back({"decode_gqa16_packed_page1",
                   "family=fwd_paged,dtype=bf16,d=128,lse=1,pack_gqa=1",
                   32,
                   2,
                   1,
                   {1, 37, 300},
                   1,
                   {1, 3, 19},
                   -1,
                   -1,
                   9});
  cases.push_back({"speculative_gqa4_packed_d256_page64",
                   "family=fwd_paged,dtype=fp16,d=256,mask=causal_br,lse=1,"
                   "pack_gqa=1",
                   8,
                   2,
                   4,
                   {5, 130, 700},
                   64,
                   {1, 16},
                   -1,
                   -1,
                   10});
  cases.push_back({"tiny_pages",
                   "family=fwd_paged,dtype=fp16,d=64,lse=1",
                   4,
                   1,
                   1,
                   {45, 2},
                   4,
                   {1, 2},
                   -1,
                   -1,
                   8});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Cases, HostPaged, ::testing::ValuesIn(pagedCases()),
                         caseName);

bool fails(llvm::Error err) {
  bool failed = bool(err);
  llvm::consumeError(std::move(err));
  return failed;
}

/// Pages out of range are refused before anything runs.
TEST(HostPagedErrors, RejectsBadLayouts) {
  std::optional<KernelSpec> spec = resolveSpec(kDecode);
  ASSERT_TRUE(spec);
  AttentionProblem a = AttentionProblem::forSpec(*spec);
  auto problem = [&](KvCacheLayout layout, std::vector<int64_t> lens) {
    a.batch = static_cast<int64_t>(lens.size());
    return PagedProblem::make(*spec, a, layout, lens);
  };
  EXPECT_TRUE(
      fails(problem(KvCacheLayout::paged(24, 8, 4), {10}).validate(*spec)))
      << "24 is not a power of two";
  EXPECT_TRUE(
      fails(problem(KvCacheLayout::paged(16, 8, 2), {33}).validate(*spec)))
      << "33 rows need 3 pages";
  EXPECT_TRUE(
      fails(problem(KvCacheLayout::contiguous(64), {10}).validate(*spec)))
      << "fwd_paged needs pages";
  EXPECT_TRUE(
      fails(problem(KvCacheLayout::paged(16, 8, 2), {0}).validate(*spec)))
      << "an empty cache has nothing to attend to";
  EXPECT_TRUE(
      fails(validateKvCache(KvCacheLayout::paged(16, 2, 2), 1, {20}, {0, 2})))
      << "page 2 of a 2-page pool";
  EXPECT_FALSE(
      fails(validateKvCache(KvCacheLayout::paged(16, 2, 2), 1, {20}, {1, 0})));
}
} // namespace
