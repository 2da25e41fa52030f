//===- CudaVariantExamplesTest.cpp - examples/variants/ on a CUDA GPU -----===//
//
// Each example variant through the public API on the GPU (Device::Cuda), on
// both NVIDIA pipelines, against the float64 reference with poisoned
// outputs (e2e::checkApi: the reference calls the same variant compiled for
// the host; HostVariantTest checks each example's math independently).
// GQA, odd lengths and the LSE are on, so the variant's (b, h, q, k) and
// the ragged last tiles are exercised. Skipped without a driver.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;

namespace {

struct ExampleCase {
  const char *file;
  const char *kernel; ///< Options::kernel: empty for the dispatcher's pick
};

class CudaVariantExamples : public testing::TestWithParam<ExampleCase> {};

TEST_P(CudaVariantExamples, MatchesReference) {
  REQUIRE_GPU();
  const ExampleCase &c = GetParam();
  api::Problem p;
  p.batch = 2, p.headsQ = 8, p.headsKv = 2;
  p.seqlenQ = 1000, p.seqlenK = 1100, p.headDim = 128;
  p.dtype = api::DType::BF16;
  p.device = api::Device::Cuda;
  p.wantLse = true;
  p.variant = readVariantExample(c.file);
  p.variantName = c.file;
  ASSERT_FALSE(p.variant.empty()) << "cannot read examples/variants/" << c.file;
  api::Options options;
  options.kernel = c.kernel;
  checkApi(p, options);
}

std::vector<ExampleCase> cases() {
  std::vector<ExampleCase> out;
  for (const char *file :
       {"alibi.cpp", "chunked_local.cpp", "document_mask.cpp", "prefix_lm.cpp",
        "relative_position_bias.cpp", "softcap_tanh.cpp"})
    for (const char *kernel :
         {"", "family=fwd,dtype=bf16,d=128,lse=1,pipeline=mma"})
      out.push_back({file, kernel});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Examples, CudaVariantExamples,
                         testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<ExampleCase> &info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           return name +
                                  (*info.param.kernel ? "_mma" : "_default");
                         });

} // namespace
