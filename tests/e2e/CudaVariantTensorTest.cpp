//===- CudaVariantTensorTest.cpp - Variants reading tensors on a CUDA GPU -===//
//
// Variants that read run-time tensors (fmhajit_tensor, docs/variants.md#
// run-time-tensors) through the public API on the GPU (Device::Cuda), on
// both NVIDIA pipelines, against the float64 reference with poisoned outputs
// (e2e::checkApi: the tensors go to the device as Tensors::variantTensors
// and to the reference, which calls the same variant compiled for the
// host on the host copies; HostVariantTensorTest checks the lookups
// independently):
//  - examples/variants/relative_position_table.cpp with a table of rows for
//    6 of the 8 heads (heads 6 and 7 read 0 everywhere);
//  - a key-padding mask_mod read from a tensor (no block map: plan() has no
//    tensor), under the spec's causal mask.
// GQA, odd lengths and the LSE are on. Skipped without a driver.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;

namespace {

constexpr int64_t kSeqlenK = 1100;

api::Problem gpuProblem() {
  api::Problem p;
  p.batch = 2, p.headsQ = 8, p.headsKv = 2;
  p.seqlenQ = 1000, p.seqlenK = kSeqlenK, p.headDim = 128;
  p.dtype = api::DType::BF16;
  p.device = api::Device::Cuda;
  p.wantLse = true;
  return p;
}

/// The example's table: 2 * 128 + 1 biases a head, for 6 heads, in
/// [-2, 2).
std::vector<float> biasTable() {
  std::vector<float> table = uniformValues(6 * 257, 7);
  for (float &x : table)
    x *= 2;
  return table;
}

/// [batch, seqlenK] of 1 (visible) and 0 (padding): one key in seven, and
/// the second sequence's last 150 keys.
std::vector<float> keyPadding() {
  std::vector<float> padding(2 * kSeqlenK, 1.0f);
  for (int64_t i = 0; i < int64_t(padding.size()); ++i)
    if ((i % kSeqlenK) % 7 == 3 || i >= 2 * kSeqlenK - 150)
      padding[size_t(i)] = 0.0f;
  return padding;
}

const char *const kKeyPadding =
    "bool mask_mod(int b, int h, int q, int k) {\n"
    "  return fmhajit_tensor(0, b * 1100L + k) > 0.5f;\n}\n";

struct TensorCase {
  const char *name;
  const char *kernel; ///< Options::kernel: empty for the dispatcher's pick
  bool mask;          ///< the key-padding mask, else the example's table
};

class CudaVariantTensors : public testing::TestWithParam<TensorCase> {};

TEST_P(CudaVariantTensors, MatchesReference) {
  REQUIRE_GPU();
  const TensorCase &c = GetParam();
  api::Problem p = gpuProblem();
  if (c.mask) {
    p.mask = api::Mask::Causal;
    p.variant = kKeyPadding;
    p.variantName = "key_padding.cpp";
  } else {
    p.variant = readVariantExample("relative_position_table.cpp");
    p.variantName = "relative_position_table.cpp";
    ASSERT_FALSE(p.variant.empty()) << "cannot read the example";
  }
  api::Options options;
  options.kernel = c.kernel;
  ApiCheck check =
      checkApi(p, options, 1, {c.mask ? keyPadding() : biasTable()});
  EXPECT_EQ(check.plan.variantTensorCount(), 1);
}

const TensorCase kCases[] = {
    {"table_default", "", false},
    {"table_mma", "family=fwd,dtype=bf16,d=128,lse=1,pipeline=mma", false},
    {"padding_default", "", true},
    {"padding_mma",
     "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,pipeline=mma", true},
};

INSTANTIATE_TEST_SUITE_P(Cases, CudaVariantTensors, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<TensorCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
