//===- HostBiasTest.cpp - bias=elementwise vs the float64 reference -------===//
//
// An elementwise bias through the public API on the host: each case plans a
// problem with Problem::bias (pinning a kernel where the case needs a form
// the dispatcher would not pick), runs it on seeded inputs and a seeded
// bias (unit variance, one element in eight -inf) with poisoned outputs,
// and compares O and LSE with the float64 reference, which adds the bias
// after the soft-cap and before the mask. The bias is as large as the
// scores, so a kernel that dropped it, read it transposed, ignored a
// stride or took another head's or sequence's would fail the compare.
//
//===----------------------------------------------------------------------===//
#include "ApiTesting.h"
#include "gtest/gtest.h"
#include <vector>

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::BiasStrides;
using api::DType;
using api::Mask;
using api::Problem;
using api::StatusCode;

namespace {

Problem biasProblem(int64_t batch, int64_t headsQ, int64_t headsKv, int64_t sq,
                    int64_t sk, int64_t d, DType dtype) {
  Problem p = denseProblem(batch, headsQ, headsKv, sq, sk, d, dtype);
  p.bias = true;
  p.wantLse = true;
  return p;
}

struct BiasCase {
  std::string label;
  Problem problem;
  std::string kernel; ///< Options::kernel; empty: the dispatcher's
  unsigned numSplits = 0;
};

void PrintTo(const BiasCase &c, std::ostream *os) { *os << c.label; }

class HostBiasMatchesReference : public ::testing::TestWithParam<BiasCase> {};

TEST_P(HostBiasMatchesReference, PlanAndRun) {
  api::Options options;
  options.threads = 2;
  options.kernel = GetParam().kernel;
  options.numSplits = GetParam().numSplits;
  ApiCheck check = checkApi(GetParam().problem, options, 5);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_NE(check.plan.steps()[0].kernel.find("_elembias"), std::string::npos)
      << check.plan.describe();
}

// Full, batch-broadcast ([1, H, Sq, Sk]) and key-padding ([B, 1, 1, Sk])
// biases, with causal masks, GQA, soft-cap and 16-bit inputs; a bias whose
// rows are padded (query stride > Sk) and laid out heads-last checks that
// every stride is the caller's.
std::vector<BiasCase> denseCases() {
  Problem full = biasProblem(2, 8, 2, 45, 70, 64, DType::F32);
  full.mask = Mask::Causal;
  Problem batch = biasProblem(3, 4, 1, 37, 90, 64, DType::BF16);
  batch.biasStrides = BiasStrides{0, 37 * 90, 90, 1};
  Problem keys = biasProblem(2, 4, 2, 50, 33, 128, DType::F16);
  keys.mask = Mask::CausalBottomRight; // Sk < Sq: rows 0-16 see no key
  keys.biasStrides = BiasStrides{33, 0, 0, 1};
  Problem softcap = biasProblem(1, 4, 4, 30, 50, 64, DType::F32);
  softcap.softcap = 20.0f;
  softcap.mask = Mask::Window;
  softcap.windowLeft = 7, softcap.windowRight = 3;
  // [batch, Sq, heads, Sk + 5]: heads inside each query's row, padded keys.
  Problem strided = biasProblem(2, 3, 3, 20, 40, 32, DType::F32);
  strided.biasStrides = BiasStrides{20 * 3 * 45, 45, 3 * 45, 1};
  Problem headsOnly = biasProblem(2, 6, 3, 17, 17, 64, DType::F32);
  headsOnly.mask = Mask::Causal;
  headsOnly.biasStrides = BiasStrides{0, 1, 0, 0}; // one value per head
  return {{"FullGqaCausal", full},          {"BatchBroadcastBf16", batch},
          {"KeyPaddingCausalBrFp16", keys}, {"SoftcapWindow", softcap},
          {"StridedPaddedRows", strided},   {"PerHeadScalar", headsOnly}};
}
INSTANTIATE_TEST_SUITE_P(Dense, HostBiasMatchesReference,
                         ::testing::ValuesIn(denseCases()),
                         [](const auto &info) { return info.param.label; });

// Split-KV: every part reads its own keys' bias (3 parts, 1 part, and the
// decode the dispatcher splits by itself); pack_gqa: a tile's rows belong
// to several heads, each reading its own head's bias.
std::vector<BiasCase> splitAndPackedCases() {
  Problem decode = biasProblem(1, 4, 2, 3, 500, 64, DType::F32);
  decode.biasStrides = BiasStrides{500, 0, 0, 1};
  Problem causal = biasProblem(2, 4, 4, 20, 170, 64, DType::F32);
  causal.mask = Mask::CausalBottomRight;
  Problem longDecode = biasProblem(2, 8, 1, 1, 2000, 64, DType::BF16);
  Problem packed = biasProblem(1, 8, 2, 30, 90, 64, DType::F32);
  packed.mask = Mask::CausalBottomRight;
  const char *split = "family=fwd_splitkv,dtype=fp32,d=64,lse=1,"
                      "bias=elementwise";
  return {{"Decode3Parts", decode, split, 3},
          {"Decode1Part", decode, split, 1},
          {"CausalBr7Parts", causal,
           "family=fwd_splitkv,dtype=fp32,d=64,mask=causal_br,lse=1,"
           "bias=elementwise",
           7},
          {"DispatchedDecode", longDecode},
          {"PackGqa", packed,
           "family=fwd,dtype=fp32,d=64,mask=causal_br,lse=1,bias=elementwise,"
           "pack_gqa=1"}};
}
INSTANTIATE_TEST_SUITE_P(SplitAndPacked, HostBiasMatchesReference,
                         ::testing::ValuesIn(splitAndPackedCases()),
                         [](const auto &info) { return info.param.label; });

// run() needs the bias: a plan with Problem::bias and no Tensors::bias is
// refused with what to set, not run on a null pointer.
TEST(HostBias, RunWithoutTheBiasSaysWhatToSet) {
  Problem p = biasProblem(1, 2, 2, 4, 6, 32, DType::F32);
  std::vector<float> q(4 * 2 * 32, 0.25f), k(6 * 2 * 32, 0.5f),
      v(6 * 2 * 32, 1.0f), o(q.size()), lse(2 * 4);
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  api::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.data()};
  api::Status status = api::run(*plan, t);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("Tensors::bias"), std::string::npos)
      << status.toString();
}

struct RefusedBias {
  std::string label;
  void (*edit)(Problem &);
  StatusCode code;
  std::string says;
};

class HostBiasRefused : public ::testing::TestWithParam<RefusedBias> {};

TEST_P(HostBiasRefused, PlanSaysWhy) {
  Problem p = biasProblem(1, 2, 2, 8, 8, 64, DType::F32);
  GetParam().edit(p);
  expectPlanRefused(p, GetParam().code, GetParam().says);
}

INSTANTIATE_TEST_SUITE_P(
    Problems, HostBiasRefused,
    ::testing::Values(
        RefusedBias{"StridesWithoutBias",
                    [](Problem &p) {
                      p.bias = false;
                      p.biasStrides = BiasStrides{64, 64, 8, 1};
                    },
                    StatusCode::InvalidArgument,
                    "biasStrides are given but bias is false"},
        RefusedBias{
            "NegativeStride",
            [](Problem &p) { p.biasStrides = BiasStrides{0, 0, -8, 1}; },
            StatusCode::InvalidArgument, "biasStrides must be >= 0"},
        RefusedBias{"WithAlibi", [](Problem &p) { p.alibi = true; },
                    StatusCode::InvalidArgument, "bias and alibi are both set"},
        RefusedBias{"Varlen",
                    [](Problem &p) {
                      p.cuSeqlensQ = {0, 8};
                      p.cuSeqlensK = {0, 8};
                    },
                    StatusCode::Unsupported,
                    "bias is not implemented with varlen"},
        RefusedBias{"Paged",
                    [](Problem &p) {
                      p.pagesKv = {16, 2, 1};
                      p.seqlensK = {8};
                    },
                    StatusCode::Unsupported,
                    "bias is not implemented with paged K/V"}),
    [](const auto &info) { return info.param.label; });

// The backward has no gradient for the bias: planBackward refuses it.
TEST(HostBias, BackwardRefusesTheBias) {
  Problem p = biasProblem(1, 2, 2, 8, 8, 64, DType::F32);
  api::Options options;
  options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::planBackward(p, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::Unsupported);
  EXPECT_NE(plan.status().message().find("no gradient for the bias"),
            std::string::npos)
      << plan.status().toString();
}

} // namespace
