//===- ProfileWarmupTest.cpp - A warm-up holds what the plans pick --------===//
//
// `fmhajit cache warm --profile training` (runtime/api/ProfileWarmup.h)
// compiles every kernel of a training step's plans, so a warmed plan
// compiles nothing: the forward with LSE and the backward's two or three
// kernels, over dtypes, head dims, masks, varlen, dropout and
// deterministic=1, on the GPU targets. (Decode plans against profile decode:
// SplitPlannerTest.cpp.)
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

TEST(ProfileWarmupTest, TrainingHoldsEveryKernelOfItsPlans) {
  for (const char *target : {"sm_90a", "sm_80"}) {
    llvm::StringSet<> warmed = warmedNames("training", target);
    size_t kernels = 0;
    for (const api::Problem &p : trainingProblems()) {
      api::Options options;
      options.target = target;
      options.load = false;
      std::vector<api::Result<api::Plan>> plans;
      plans.push_back(api::plan(p, options));
      plans.push_back(api::planBackward(p, options));
      options.deterministic = true;
      plans.push_back(api::planBackward(p, options));
      for (const api::Result<api::Plan> &plan : plans) {
        ASSERT_TRUE(plan.ok()) << plan.status().message();
        for (const api::PlanStep &step : plan->steps()) {
          ++kernels;
          EXPECT_TRUE(warmed.contains(step.kernel))
              << step.kernel << " (" << step.role << ") on " << target;
        }
      }
    }
    EXPECT_GT(kernels, 0u);
  }
}

} // namespace
