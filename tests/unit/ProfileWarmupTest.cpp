//===- ProfileWarmupTest.cpp - A warm-up holds what the plans pick --------===//
//
// `fmhajit cache warm --profile P` (runtime/api/ProfileWarmup.h) compiles
// every kernel of the plans P serves, so a warmed plan compiles nothing, on
// the GPU targets: for training the forward with LSE and the backward's two
// or three kernels, over dtypes, head dims, masks, varlen, dropout and
// deterministic=1; for prefill the forward over every head dim and mask,
// short and long, LSE, varlen and fp8. (Decode plans against profile
// decode: SplitPlannerTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "runtime/api/ProfileWarmup.h"
#include "fmhajit/Fmhajit.h"
#include "specs/EncodedName.h"
#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

llvm::StringSet<> warmedNames(const std::string &profile,
                              const std::string &target) {
  llvm::StringSet<> names;
  auto specs = warmupSpecs(profile, target);
  EXPECT_TRUE(bool(specs)) << llvm::toString(specs.takeError());
  if (specs)
    for (const KernelSpec &s : *specs)
      names.insert(encodeName(s));
  return names;
}

/// The problems a training step runs, as the profile lists them.
std::vector<api::Problem> trainingProblems() {
  std::vector<api::Problem> out;
  for (api::DType dtype : {api::DType::F16, api::DType::BF16})
    for (int64_t d : {64, 96, 128})
      for (api::Mask mask : {api::Mask::None, api::Mask::Causal,
                             api::Mask::CausalBottomRight, api::Mask::Window})
        for (int64_t seqlen : {512, 4096}) {
          api::Problem p;
          p.batch = 2, p.headsQ = 16, p.headsKv = 4;
          p.seqlenQ = seqlen, p.headDim = d, p.dtype = dtype, p.mask = mask;
          if (mask == api::Mask::Window)
            p.windowLeft = 256, p.windowRight = 0;
          p.wantLse = true;
          p.device = api::Device::Cuda;
          out.push_back(p);
          if (d == 128 && dtype == api::DType::BF16 &&
              (mask == api::Mask::None || mask == api::Mask::Causal)) {
            api::Problem dropout = p;
            dropout.dropout = true;
            out.push_back(dropout);
            api::Problem varlen = p;
            varlen.batch = 3;
            varlen.cuSeqlensQ = {0, 100, 1100, 1100 + int32_t(seqlen)};
            varlen.cuSeqlensK = varlen.cuSeqlensQ;
            out.push_back(varlen);
          }
        }
  return out;
}

/// Plans of \p p for \p target, without loading: the forward's,
/// and with \p backward also the backward's, plain and deterministic.
std::vector<api::Result<api::Plan>> plansOf(const api::Problem &p,
                                            const char *target, bool backward) {
  api::Options options;
  options.target = target;
  options.load = false;
  std::vector<api::Result<api::Plan>> plans;
  plans.push_back(api::plan(p, options));
  if (!backward)
    return plans;
  plans.push_back(api::planBackward(p, options));
  options.deterministic = true;
  plans.push_back(api::planBackward(p, options));
  return plans;
}

/// Every kernel of every plan of \p problems for \p target is in
/// \p profile's warm-up for it.
void expectWarmed(const std::string &profile, const char *target,
                  const std::vector<api::Problem> &problems, bool backward) {
  llvm::StringSet<> warmed = warmedNames(profile, target);
  size_t kernels = 0;
  for (const api::Problem &p : problems)
    for (const api::Result<api::Plan> &plan : plansOf(p, target, backward)) {
      ASSERT_TRUE(plan.ok()) << plan.status().message();
      for (const api::PlanStep &step : plan->steps()) {
        ++kernels;
        EXPECT_TRUE(warmed.contains(step.kernel))
            << step.kernel << " (" << step.role << ") on " << target;
      }
    }
  EXPECT_GT(kernels, 0u);
}

TEST(ProfileWarmupTest, TrainingHoldsEveryKernelOfItsPlans) {
  for (const char *target : {"sm_90a", "sm_80"})
    expectWarmed("training", target, trainingProblems(), /*backward=*/true);
}

/// Prompts as profile prefill lists them: every head dim and mask at short
/// and long lengths, LSE, varlen, d = 192 with dv = 128, and fp8.
std::vector<api::Problem> prefillProblems() {
  std::vector<api::Problem> out;
  auto add = [&](api::DType dtype, int64_t d, api::Mask mask, int64_t seqlen) {
    api::Problem p;
    p.device = api::Device::Cuda;
    p.batch = 2, p.headsQ = 16, p.headsKv = 4;
    p.seqlenQ = seqlen, p.headDim = d, p.dtype = dtype, p.mask = mask;
    if (mask == api::Mask::Window)
      p.windowLeft = 256, p.windowRight = 0;
    out.push_back(p);
    p.wantLse = true;
    out.push_back(p);
    return p;
  };
  for (api::DType dtype : {api::DType::F16, api::DType::BF16})
    for (int64_t d : {64, 80, 96, 128, 160, 192, 256})
      for (api::Mask mask : {api::Mask::None, api::Mask::Causal,
                             api::Mask::CausalBottomRight, api::Mask::Window})
        for (int64_t seqlen : {512, 2048, 8192})
          add(dtype, d, mask, seqlen);
  for (int64_t d : {64, 128, 256})
    for (api::Mask mask : {api::Mask::None, api::Mask::Causal})
      for (int64_t seqlen : {1024, 4096, 16384})
        add(api::DType::F8E4M3, d, mask, seqlen);
  for (int64_t d : {64, 128}) {
    api::Problem varlen = add(api::DType::BF16, d, api::Mask::Causal, 4096);
    varlen.batch = 3;
    varlen.cuSeqlensQ = {0, 100, 1100, 5100};
    varlen.cuSeqlensK = varlen.cuSeqlensQ;
    out.push_back(varlen);
  }
  api::Problem narrowV = add(api::DType::BF16, 192, api::Mask::Causal, 4096);
  narrowV.headDimV = 128;
  out.push_back(narrowV);
  return out;
}

TEST(ProfileWarmupTest, PrefillHoldsEveryKernelOfItsPlans) {
  std::vector<api::Problem> problems = prefillProblems();
  expectWarmed("prefill", "sm_90a", problems, /*backward=*/false);
  llvm::erase_if(problems, [](const api::Problem &p) {
    return p.dtype == api::DType::F8E4M3; // sm_80 has no fp8 products
  });
  expectWarmed("prefill", "sm_80", problems, /*backward=*/false);
}

// "decode,training" warms both: each profile's kernels in that order, a
// kernel both hold once; a name that is no profile is refused, named.
TEST(ProfileWarmupTest, SeveralProfilesWarmTheirKernelsOnce) {
  auto both = warmupSpecs("decode, training", "sm_90a");
  ASSERT_TRUE(bool(both)) << llvm::toString(both.takeError());
  std::vector<std::string> names;
  llvm::StringSet<> once;
  for (const KernelSpec &s : *both) {
    names.push_back(encodeName(s));
    EXPECT_TRUE(once.insert(names.back()).second) << names.back();
  }
  llvm::StringSet<> decode = warmedNames("decode", "sm_90a"),
                    training = warmedNames("training", "sm_90a");
  size_t shared = 0;
  for (const auto &entry : training)
    shared += decode.contains(entry.getKey());
  EXPECT_GT(shared, 0u); // the test needs kernels both hold
  EXPECT_EQ(names.size(), decode.size() + training.size() - shared);
  for (const std::string &n : names)
    EXPECT_TRUE(decode.contains(n) || training.contains(n)) << n;
  EXPECT_TRUE(decode.contains(names.front()));
  EXPECT_TRUE(training.contains(names.back()));

  auto unknown = warmupSpecs("decode,nope", "sm_90a");
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("profile=nope"),
            std::string::npos);
}

} // namespace
