//===- HostDropoutTest.cpp - dropout=1 on the host vs its definition ------===//
//
// The forward's keep-mask is checked exactly: with Q = 0 every visible key
// scores alike, and with V one-hot (key j's row is e_j) O[i][j] is P_ij
// itself after dropout, so each element of O shows one bit of the kernel's
// mask, which must equal the reference's own Philox (runtime/numerics/
// Dropout.h) everywhere, over several key tiles, GQA heads, varlen
// sequences and pack_gqa's rows. The same runs count the keep rate against
// a binomial bound. Then O and LSE against the float64 reference on fresh
// random inputs with poisoned outputs (the harness draws p = 0.25 and a
// seed), p = 0 against a kernel without dropout (the same bits), and the
// refusals.
//
//===----------------------------------------------------------------------===//
#include "ApiCacheTesting.h"
#include "ApiTesting.h"
#include "runtime/numerics/Dropout.h"
#include "gtest/gtest.h"
#include <cmath>
#include <cstring>
#include <vector>

using fmhajit::DropoutMask;
using fmhajit::DropoutParams;
using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;

namespace {

struct MaskCase {
  std::string label;
  Problem problem;
  std::string kernel; ///< Options::kernel; empty: the dispatcher's
};

void PrintTo(const MaskCase &c, std::ostream *os) { *os << c.label; }

/// fp32, d = dv = 128 (one-hot V rows for up to 128 keys), dropout on.
Problem maskProblem(int64_t batch, int64_t headsQ, int64_t headsKv, int64_t sq,
                    int64_t sk) {
  Problem p = denseProblem(batch, headsQ, headsKv, sq, sk, 128, DType::F32);
  p.dropout = true;
  return p;
}

int64_t lengthOf(const std::vector<int32_t> &cu, int64_t b, int64_t fixed) {
  return cu.empty() ? fixed : cu[b + 1] - cu[b];
}
int64_t startOf(const std::vector<int32_t> &cu, int64_t b, int64_t fixed) {
  return cu.empty() ? b * fixed : cu[b];
}

class HostDropoutMask : public ::testing::TestWithParam<MaskCase> {};

TEST_P(HostDropoutMask, IsPhiloxOfThePositionExactly) {
  const Problem &p = GetParam().problem;
  api::Options options;
  options.threads = 2;
  options.kernel = GetParam().kernel;
  std::optional<api::Plan> plan = planChecked(p, options);
  ASSERT_TRUE(plan);
  ASSERT_NE(plan->steps()[0].kernel.find("_do_"), std::string::npos);
  bool varlen = !p.cuSeqlensQ.empty();
  int64_t totalQ = varlen ? p.cuSeqlensQ.back() : p.batch * p.seqlenQ;
  int64_t totalK = varlen ? p.cuSeqlensK.back() : p.batch * p.seqlenK;
  std::vector<float> q(totalQ * p.headsQ * 128, 0.0f),
      k(totalK * p.headsKv * 128, 0.5f), v(totalK * p.headsKv * 128, 0.0f),
      o(q.size(), NAN);
  for (int64_t b = 0; b < p.batch; ++b) // key j of each sequence: e_j
    for (int64_t j = 0; j < lengthOf(p.cuSeqlensK, b, p.seqlenK); ++j)
      for (int64_t h = 0; h < p.headsKv; ++h)
        v[((startOf(p.cuSeqlensK, b, p.seqlenK) + j) * p.headsKv + h) * 128 +
          j] = 1.0f;
  DropoutParams params{0.3f, 0xfeedface12345678ull, 77};
  api::Tensors t{q.data(), k.data(), v.data(), o.data()};
  t.dropout = {params.p, params.seed, params.offset};
  ASSERT_TRUE(api::run(*plan, t).ok());
  DropoutMask mask(params, p.headsQ);
  int64_t kept = 0, seen = 0, wrong = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t sq = lengthOf(p.cuSeqlensQ, b, p.seqlenQ);
    int64_t sk = lengthOf(p.cuSeqlensK, b, p.seqlenK);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t h = 0; h < p.headsQ; ++h) {
        const float *row =
            &o[((startOf(p.cuSeqlensQ, b, p.seqlenQ) + i) * p.headsQ + h) *
               128];
        for (int64_t j = 0; j < 128; ++j) {
          bool keep = j < sk && mask.keeps(b, h, i, j);
          double want = keep ? mask.scale() / double(sk) : 0.0;
          wrong += std::abs(row[j] - want) > 1e-6 * std::abs(want) ||
                   std::isnan(row[j]);
          if (j < sk)
            ++seen, kept += keep;
        }
      }
  }
  EXPECT_EQ(wrong, 0) << "elements of O whose keep bit differs";
  // The mask's own keep rate: Bernoulli(0.7) draws, within 6 sigma.
  double sd = std::sqrt(seen * 0.3 * 0.7);
  EXPECT_LE(std::abs(kept - 0.7 * seen), 6 * sd) << kept << " of " << seen;
}

std::vector<MaskCase> maskCases() {
  Problem gqa = maskProblem(2, 4, 2, 70, 128); // 2 key tiles of 64
  Problem shortKeys = maskProblem(1, 3, 3, 200, 37);
  Problem varlen = maskProblem(3, 2, 1, 0, 0);
  varlen.cuSeqlensQ = {0, 1, 90, 120};
  varlen.cuSeqlensK = {0, 128, 131, 200};
  Problem packed = maskProblem(1, 8, 2, 5, 100);
  return {
      {"GqaTwoKeyTiles", gqa},
      {"ShortKeys", shortKeys},
      {"Varlen", varlen},
      {"PackGqa", packed, "family=fwd,dtype=fp32,d=128,dropout=1,pack_gqa=1"},
      {"SmallTile", gqa, "family=fwd,dtype=fp32,d=128,dropout=1,bm=16,bn=16"}};
}
INSTANTIATE_TEST_SUITE_P(Host, HostDropoutMask,
                         ::testing::ValuesIn(maskCases()),
                         [](const auto &info) { return info.param.label; });

struct ReferenceCase {
  std::string label;
  Problem problem;
};
void PrintTo(const ReferenceCase &c, std::ostream *os) { *os << c.label; }

class HostDropoutMatchesReference
    : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(HostDropoutMatchesReference, PlanAndRun) {
  api::Options options;
  options.threads = 2;
  ApiCheck check = checkApi(GetParam().problem, options, 21);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_NE(check.plan.steps()[0].kernel.find("_do_"), std::string::npos);
}

std::vector<ReferenceCase> referenceCases() {
  Problem causal = denseProblem(2, 8, 2, 150, 170, 64, DType::BF16);
  causal.mask = Mask::Causal;
  causal.dropout = causal.wantLse = true;
  Problem window = denseProblem(1, 4, 4, 60, 200, 128, DType::F16);
  window.mask = Mask::Window;
  window.windowLeft = 30, window.windowRight = 5;
  window.softcap = 20.0f;
  window.dropout = window.wantLse = true;
  // Bottom-right causal with Sk < Sq: the first rows see no key (O = 0).
  Problem empty = denseProblem(1, 2, 1, 50, 30, 64, DType::F32);
  empty.mask = Mask::CausalBottomRight;
  empty.dropout = empty.wantLse = true;
  Problem varlen = denseProblem(3, 4, 2, 0, 0, 96, DType::BF16);
  varlen.cuSeqlensQ = {0, 7, 107, 108};
  varlen.cuSeqlensK = {0, 300, 390, 391};
  varlen.alibi = true;
  varlen.dropout = true;
  // Decode-shaped: the plan must not split the keys (split-KV takes no
  // dropout).
  Problem decode = denseProblem(1, 8, 1, 1, 5000, 64, DType::F32);
  decode.dropout = true;
  Problem wide = denseProblem(1, 2, 2, 40, 90, 192, DType::F32);
  wide.headDimV = 128;
  wide.dropout = true;
  return {{"GqaCausalBf16", causal},    {"WindowSoftcapFp16", window},
          {"RowsWithoutKeys", empty},   {"VarlenAlibi", varlen},
          {"DecodeSinglePass", decode}, {"D192Dv128", wide}};
}
INSTANTIATE_TEST_SUITE_P(Host, HostDropoutMatchesReference,
                         ::testing::ValuesIn(referenceCases()),
                         [](const auto &info) { return info.param.label; });

/// O of \p p run with \p dropout on fixed inputs (seed 3).
std::vector<float> outputOf(const Problem &p, api::Dropout dropout,
                            const std::string &kernel = "") {
  api::Options options;
  options.threads = 2;
  options.kernel = kernel;
  std::optional<api::Plan> plan = planChecked(p, options);
  if (!plan)
    return {};
  size_t n = size_t(p.batch * p.seqlenQ * p.headsQ * p.headDim);
  size_t kv = size_t(p.batch * p.seqlenK * p.headsKv * p.headDim);
  std::vector<float> q = uniformValues(n, 3), k = uniformValues(kv, 4),
                     v = uniformValues(kv, 5), o(n, NAN);
  api::Tensors t{q.data(), k.data(), v.data(), o.data()};
  t.dropout = dropout;
  api::Status status = api::run(*plan, t);
  EXPECT_TRUE(status.ok()) << status.toString();
  return o;
}

// p = 0 keeps everything: the dropout kernel gives the plain kernel's bits.
// Another offset or seed gives another mask; the same ones the same bits.
TEST(HostDropout, SeedsOffsetsAndZeroProbability) {
  Problem p = denseProblem(1, 2, 2, 33, 70, 64, DType::F32);
  Problem plain = p;
  p.dropout = true;
  std::vector<float> none = outputOf(plain, {});
  EXPECT_EQ(outputOf(p, {0.0f, 99, 3}), none);
  std::vector<float> a = outputOf(p, {0.5f, 99, 3});
  EXPECT_EQ(outputOf(p, {0.5f, 99, 3}), a);
  EXPECT_NE(outputOf(p, {0.5f, 99, 4}), a);
  EXPECT_NE(outputOf(p, {0.5f, 100, 3}), a);
}

TEST(HostDropout, RefusesBadArguments) {
  Problem plain = denseProblem(1, 1, 1, 4, 4, 32, DType::F32);
  Problem p = plain;
  p.dropout = true;
  std::vector<float> q(4 * 32, 0.5f), o(q.size());
  auto status = [&](const Problem &problem, float prob) {
    std::optional<api::Plan> plan = planChecked(problem);
    api::Tensors t{q.data(), q.data(), q.data(), o.data()};
    t.dropout.p = prob;
    return api::run(*plan, t);
  };
  for (float bad : {1.0f, -0.1f, NAN}) {
    api::Status s = status(p, bad);
    EXPECT_EQ(s.code(), api::StatusCode::InvalidArgument) << s.toString();
    EXPECT_NE(s.message().find("[0, 1)"), std::string::npos) << s.message();
  }
  api::Status s = status(plain, 0.2f);
  EXPECT_EQ(s.code(), api::StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("Problem::dropout"), std::string::npos)
      << s.message();
  Problem paged = pagedProblem(2, 1, 2, 32, DType::BF16, {10, 20}, 16);
  paged.dropout = true;
  expectPlanRefused(paged, api::StatusCode::Unsupported, "paged");
  Problem fp8 = denseProblem(1, 1, 1, 64, 64, 128, DType::F8E4M3);
  fp8.dropout = true;
  api::Options sm90;
  sm90.target = "sm_90a";
  sm90.load = false;
  fp8.device = api::Device::Cuda;
  expectPlanRefused(fp8, api::StatusCode::Unsupported, "dropout", sm90);
}

} // namespace
