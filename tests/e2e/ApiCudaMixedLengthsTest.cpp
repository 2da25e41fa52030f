//===- ApiCudaMixedLengthsTest.cpp - Mixed-length batches on a CUDA GPU ---===//
//
// ApiMixedLengthsTest's checks on an NVIDIA GPU: paged and varlen decode
// over sequences of different lengths, planned with a split schedule sized
// for the GPU's SMs (the device copy of the schedule uploaded when the
// plan loads), every output poisoned and compared with the float64
// reference. Skipped without a driver.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"
#include <random>

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;

namespace {

Problem onGpu(Problem p) {
  p.device = api::Device::Cuda;
  return p;
}

/// \p n lengths drawn from [lo, hi], seeded, with a 1 and an odd one.
std::vector<int32_t> mixedLengths(size_t n, int32_t lo, int32_t hi,
                                  unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> len(lo, hi);
  std::vector<int32_t> out(n);
  for (int32_t &l : out)
    l = len(rng);
  out[1] = 1;
  out[n / 2] |= 1;
  return out;
}

Problem varlenOnGpu(int64_t headsQ, int64_t headsKv, int64_t d, DType dtype,
                    int32_t queries, std::vector<int32_t> keys) {
  Problem p =
      denseProblem(int64_t(keys.size()), headsQ, headsKv, 0, 0, d, dtype);
  p.cuSeqlensQ = {0};
  p.cuSeqlensK = {0};
  for (int32_t k : keys) {
    p.cuSeqlensQ.push_back(p.cuSeqlensQ.back() + queries);
    p.cuSeqlensK.push_back(p.cuSeqlensK.back() + k);
  }
  return onGpu(p);
}

struct GpuMixedCase {
  std::string label;
  Problem problem;
};

void PrintTo(const GpuMixedCase &c, std::ostream *os) { *os << c.label; }

class ApiCudaMixedLengths : public ::testing::TestWithParam<GpuMixedCase> {};

TEST_P(ApiCudaMixedLengths, ScheduledAndExact) {
  REQUIRE_GPU();
  ApiCheck check = checkApi(GetParam().problem, {}, 21);
  const std::vector<api::PlanStep> &steps = check.plan.steps();
  ASSERT_EQ(steps.size(), 2u) << check.plan.describe();
  EXPECT_GT(steps[0].keySplits, 1);
  bool scheduled = false;
  for (const std::string &d : check.plan.decisions())
    scheduled |= d.find("split schedule") != std::string::npos;
  EXPECT_TRUE(scheduled) << check.plan.describe();
}

std::vector<GpuMixedCase> gpuMixedCases() {
  // The bench's serving shape, smaller: 32/8 heads, 16-token pages.
  Problem serving = onGpu(pagedProblem(32, 8, 1, 128, DType::BF16,
                                       mixedLengths(24, 1, 9000, 1), 16));
  serving.wantLse = true;
  Problem mqa =
      onGpu(pagedProblem(16, 1, 2, 64, DType::BF16, {4000, 1, 33, 1500}, 64));
  mqa.mask = Mask::CausalBottomRight;
  mqa.softcap = 30.0f;
  mqa.alibi = true;
  mqa.wantLse = true;
  Problem d256 =
      onGpu(pagedProblem(4, 2, 1, 256, DType::F16, {3000, 17, 1200}, 16));
  d256.mask = Mask::Window;
  d256.windowLeft = 1500, d256.windowRight = 0;
  Problem sinks =
      onGpu(pagedProblem(8, 8, 1, 128, DType::BF16, {6000, 3, 2500}, 16));
  sinks.sink = true;
  sinks.wantLse = true;
  Problem varlen =
      varlenOnGpu(32, 8, 128, DType::BF16, 1, mixedLengths(16, 1, 12000, 2));
  varlen.mask = Mask::CausalBottomRight;
  varlen.wantLse = true;
  Problem speculative =
      varlenOnGpu(8, 2, 128, DType::BF16, 4, {5000, 4, 700, 2047});
  speculative.mask = Mask::CausalBottomRight;
  return {{"PagedServingGqa4", serving}, {"PagedMqa16SoftcapAlibi", mqa},
          {"PagedD256WindowFp16", d256}, {"PagedSinks", sinks},
          {"VarlenDecodeGqa4", varlen},  {"VarlenSpeculative4", speculative}};
}
INSTANTIATE_TEST_SUITE_P(Gpu, ApiCudaMixedLengths,
                         ::testing::ValuesIn(gpuMixedCases()),
                         [](const auto &info) { return info.param.label; });

} // namespace
