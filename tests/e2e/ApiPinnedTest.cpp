//===- ApiPinnedTest.cpp - Options::kernel and Options::numSplits ---------===//
//
// A caller (and `fmhajit run SPEC`) may name the kernel a plan runs instead
// of the dispatcher's pick. The named kernel runs exactly as written,
// checked against the float64 reference; one that cannot serve the problem
// is refused with the feature that differs; a fwd_splitkv kernel takes the
// part count it is given, and a part count without such a kernel is refused.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "tests/e2e/ApiTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;

namespace {

api::Problem decodeProblem() {
  api::Problem p;
  p.headsQ = 4, p.headsKv = 1, p.seqlenQ = 1, p.seqlenK = 300, p.headDim = 32;
  p.dtype = api::DType::F32;
  p.wantLse = true;
  return p;
}

TEST(ApiPinned, RunsTheNamedTileAsWritten) {
  api::Problem p = decodeProblem();
  p.seqlenQ = 40, p.mask = api::Mask::CausalBottomRight;
  api::Options options;
  options.threads = 1;
  options.kernel =
      "family=fwd,dtype=fp32,d=32,mask=causal_br,lse=1,bm=32,bn=16";
  ApiCheck check = checkApi(p, options);
  ASSERT_EQ(check.plan.steps().size(), 1u);
  EXPECT_EQ(check.plan.steps()[0].kernel,
            "fmha_fwd_fp32_d32_causalbr_lse_m32n16w1s1_vector_host");
  EXPECT_EQ(check.plan.steps()[0].why, "named by Options::kernel");
  EXPECT_EQ(check.plan.steps()[0].load.origin.empty(), false);
}

// The problem brings the variant's source; its hash is not something a
// caller writes, so a pinned spec without one takes the problem's.
TEST(ApiPinned, TakesTheProblemsVariant) {
  api::Problem p = decodeProblem();
  p.seqlenQ = 40;
  p.variant = "float score_mod(float s, int b, int h, int q, int k) "
              "{ return s - 0.01f * (q - k); }\n";
  api::Options options;
  options.threads = 1;
  options.kernel = "family=fwd,dtype=fp32,d=32,lse=1,bm=32,bn=16";
  ApiCheck check = checkApi(p, options);
  ASSERT_EQ(check.plan.steps().size(), 1u);
  EXPECT_NE(check.plan.steps()[0].kernel.find("_var"), std::string::npos)
      << check.plan.steps()[0].kernel;
}

TEST(ApiPinned, AcceptsAnEncodedName) {
  api::Options options;
  options.kernel = "fmha_fwd_fp32_d32_lse_m64n32w1s1_vector_host";
  ApiCheck check = checkApi(decodeProblem(), options);
  EXPECT_EQ(check.plan.steps().at(0).kernel, options.kernel);
}

TEST(ApiPinned, SplitKvTakesTheGivenParts) {
  api::Options options;
  options.kernel = "family=fwd_splitkv,dtype=fp32,d=32,lse=1";
  options.numSplits = 5;
  ApiCheck check = checkApi(decodeProblem(), options);
  ASSERT_EQ(check.plan.steps().size(), 2u);
  EXPECT_EQ(check.plan.steps()[0].keySplits, 5);
  EXPECT_EQ(check.plan.steps()[1].role, "combine");
}

TEST(ApiPinned, SplitKvOfOnePartRunsNoCombine) {
  api::Options options;
  options.kernel = "family=fwd_splitkv,dtype=fp32,d=32,lse=1";
  options.numSplits = 1;
  ApiCheck check = checkApi(decodeProblem(), options);
  EXPECT_EQ(check.plan.steps().size(), 1u);
}

TEST(ApiPinned, PagedKernelSplitsPages) {
  api::Problem p = pagedProblem(4, 2, 2, 32, api::DType::F32, {5, 70, 33}, 16);
  api::Options options;
  options.kernel = "family=fwd_paged,dtype=fp32,d=32";
  options.numSplits = 3;
  ApiCheck check = checkApi(p, options);
  EXPECT_EQ(check.plan.steps().at(0).keySplits, 3);
}

// A kernel loading a paged cache in TMA boxes (fwd_paged on sm_90a's ring)
// needs pages of at least 8 rows: pinned for pages of 4, the plan says so
// (no GPU needed: the plan is not loaded).
TEST(ApiPinned, RefusesARingKernelForPagesItCannotBox) {
  api::Problem p = pagedProblem(4, 2, 2, 128, api::DType::BF16, {5, 70, 33}, 4);
  p.device = api::Device::Cuda;
  api::Options options;
  options.target = "sm_90a";
  options.load = false;
  options.kernel =
      "family=fwd_paged,dtype=bf16,d=128,pipeline=wgmma,stages=2,target=sm_90a";
  expectPlanRefused(p, api::StatusCode::InvalidArgument,
                    "loads TMA boxes of at least 8 rows of a page, but the "
                    "pages have 4: use pages of at least 8 rows, or stages=1",
                    options);
}

TEST(ApiPinned, RefusesAKernelOfOtherFeatures) {
  api::Options options;
  options.kernel = "family=fwd,dtype=fp32,d=64,lse=1";
  expectPlanRefused(decodeProblem(), api::StatusCode::InvalidArgument,
                    "computes fwd fp32->fp32 d64v64 none none lse @host, but "
                    "the problem needs "
                    "fwd fp32->fp32 d32v32 none none lse @host",
                    options);
}

TEST(ApiPinned, RefusesAKernelOfAnotherTarget) {
  api::Options options;
  options.kernel = "family=fwd,dtype=fp32,d=32,lse=1,target=sm_90a";
  expectPlanRefused(decodeProblem(), api::StatusCode::InvalidArgument,
                    "is for target sm_90a, but the plan's target is host",
                    options);
}

TEST(ApiPinned, RefusesAnInvalidSpec) {
  api::Options options;
  options.kernel = "family=fwd,dtype=fp32,d=32,lse=1,bm=7";
  expectPlanRefused(decodeProblem(), api::StatusCode::InvalidArgument, "bm=7",
                    options);
}

TEST(ApiPinned, RefusesPartsWithoutASplitKernel) {
  api::Options options;
  options.numSplits = 4;
  expectPlanRefused(decodeProblem(), api::StatusCode::InvalidArgument,
                    "Options::numSplits applies to a pinned kernel", options);
  options.kernel = "family=fwd,dtype=fp32,d=32,lse=1";
  expectPlanRefused(
      decodeProblem(), api::StatusCode::InvalidArgument,
      "Options::numSplits needs a fwd_splitkv or fwd_paged kernel", options);
}

TEST(ApiPinned, AppendTakesItsKernel) {
  api::AppendProblem a =
      appendProblem({3, 20}, 2, 16, api::Rotary::None, 32, api::DType::F32);
  api::Options options;
  options.kernel = "family=append_kv,dtype=fp32,d=32,bm=16";
  std::optional<api::Plan> plan = planChecked(a, options);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->steps().at(0).kernel,
            "fmha_appendkv_fp32_d32_m16n64w1s1_vector_host");
}

} // namespace
