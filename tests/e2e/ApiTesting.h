//===- ApiTesting.h - Running the public API against the reference -------===//
//
// Makes seeded random inputs for an api::Problem in its own layouts (any
// strides: the buffers span what the strides address, padding included),
// plans and runs it through the public API only, gathers O back into the
// packed layout and compares it (and LSE) with the float64 reference.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/Compare.h"
#include <cstdint>
#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit::e2e {

/// A kernel cache directory for this test process, removed at exit.
const std::string &apiCacheDir();

/// A packed problem of these shapes (no mask, no LSE).
api::Problem denseProblem(int64_t batch, int64_t headsQ, int64_t headsKv,
                          int64_t seqlenQ, int64_t seqlenK, int64_t headDim,
                          api::DType dtype);

/// \p n seeded uniform samples in [-1, 1).
std::vector<float> uniformValues(size_t n, unsigned seed);

/// Why GPU tests skip here (no driver, no GPU), or empty where a plan for
/// Device::Cuda can be made.
std::string noGpuReason();

/// Skips the running GPU test where noGpuReason() gives a reason.
#define REQUIRE_GPU()                                                          \
  if (std::string why = fmhajit::e2e::noGpuReason(); !why.empty())             \
  GTEST_SKIP() << why

/// The text of examples/variants/\p file, from the checkout the build came
/// from or FMHAJIT_SOURCE_DIR (the GPU machine's copy); empty if unreadable.
std::string readVariantExample(const std::string &file);

/// What one checked run found.
struct ApiCheck {
  api::Plan plan;
  CompareResult compare;
};

/// Plans \p problem with \p options (cacheDir set to apiCacheDir() when
/// empty), runs it on fresh inputs with poisoned outputs and \p
/// variantTensors (the variant's run-time tensors, in slot order) and
/// compares with the reference. Fails the calling test on any error.
ApiCheck checkApi(const api::Problem &problem, api::Options options = {},
                  uint64_t seed = 1,
                  std::vector<std::vector<float>> variantTensors = {});

/// plan(\p problem, \p options) (an api::Problem or api::AppendProblem),
/// cacheDir set to apiCacheDir() when empty; a refusal fails the calling
/// test and gives nothing.
template <typename AnyProblem>
std::optional<api::Plan> planChecked(const AnyProblem &problem,
                                     api::Options options = {}) {
  if (options.cacheDir.empty())
    options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::plan(problem, options);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  if (!plan.ok())
    return std::nullopt;
  return *plan;
}

/// Plans \p problem (an api::Problem or api::AppendProblem) with \p options
/// (cacheDir set to apiCacheDir()) and expects a refusal: status \p code
/// with \p says in its message.
template <typename AnyProblem>
void expectPlanRefused(const AnyProblem &problem, api::StatusCode code,
                       const std::string &says, api::Options options = {}) {
  options.cacheDir = apiCacheDir();
  api::Result<api::Plan> plan = api::plan(problem, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), code) << plan.status().toString();
  EXPECT_NE(plan.status().message().find(says), std::string::npos)
      << plan.status().message();
}

} // namespace fmhajit::e2e
