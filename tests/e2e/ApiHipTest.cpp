//===- ApiHipTest.cpp - The public API on Device::Hip, without an AMD GPU -===//
//
// Device::Hip plans and runs through the same code as Device::Cuda
// (GpuDriver, GpuKernel, GpuForwardStep). No AMD GPU exists where these
// run, so they check what needs none: without HIP, a plan that loads is
// the no-runtime error that says how to plan anyway (as CudaDriver's
// missing-library tests do for CUDA); with Options::load = false a plan
// for an AMD target is made and described; a target of another device is
// refused. On a machine with HIP the driver-less checks skip.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/HipRuntime.h"
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Problem;
using api::StatusCode;

namespace {

Problem hipProblem() {
  Problem p;
  p.batch = 1, p.headsQ = 4, p.headsKv = 4;
  p.seqlenQ = 16, p.seqlenK = 16, p.headDim = 64, p.dtype = DType::BF16;
  p.device = api::Device::Hip;
  return p;
}

#define SKIP_WITH_HIP()                                                        \
  if (auto hip = fmhajit::HipRuntime::get())                                   \
    GTEST_SKIP() << "HIP is present: " << hip->describe();                     \
  else                                                                         \
    llvm::consumeError(hip.takeError())

// The GPU's own target needs the runtime: the error names what is missing
// and how to plan for a GPU this machine lacks.
TEST(ApiHip, PlanWithoutHipIsTheNoRuntimeError) {
  SKIP_WITH_HIP();
  expectPlanRefused(hipProblem(), StatusCode::DeviceError,
                    "no HIP runtime: libamdhip64.so");
  expectPlanRefused(hipProblem(), StatusCode::DeviceError,
                    "set Options::target and Options::load = false");
}

// A named AMD target gets past target resolution; loading needs HIP.
TEST(ApiHip, LoadingAnAmdTargetWithoutHipIsTheNoRuntimeError) {
  SKIP_WITH_HIP();
  api::Options options;
  options.target = "gfx942";
  expectPlanRefused(hipProblem(), StatusCode::DeviceError, "no HIP runtime",
                    options);
}

TEST(ApiHip, AppendWithoutHipIsTheNoRuntimeError) {
  SKIP_WITH_HIP();
  api::AppendProblem p = appendProblem({0, 15}, 1, 16, api::Rotary::None);
  p.device = api::Device::Hip;
  api::Options options;
  options.target = "gfx1100";
  expectPlanRefused(p, StatusCode::DeviceError, "no HIP runtime", options);
}

TEST(ApiHip, PlansAnAmdTargetWithoutLoading) {
  for (const char *target : {"gfx942", "gfx1100"}) {
    api::Options options;
    options.target = target;
    options.load = false;
    std::optional<api::Plan> plan = planChecked(hipProblem(), options);
    ASSERT_TRUE(plan.has_value()) << target;
    EXPECT_EQ(plan->target(), target);
    EXPECT_EQ(plan->device(), api::Device::Hip);
    EXPECT_FALSE(plan->loaded());
    ASSERT_FALSE(plan->steps().empty());
    EXPECT_NE(plan->steps().front().kernel.find(target), std::string::npos)
        << plan->describe();
    std::vector<uint16_t> x(4 * 16 * 64);
    api::Status s = api::run(*plan, {x.data(), x.data(), x.data(), x.data()});
    EXPECT_NE(s.message().find("Options::load = false"), std::string::npos)
        << s.message();
  }
}

TEST(ApiHip, RefusesATargetOfAnotherDevice) {
  api::Options options;
  options.target = "sm_90a";
  expectPlanRefused(hipProblem(), StatusCode::InvalidArgument,
                    "target sm_90a does not run on device hip", options);
}

} // namespace
