//===- CudaBlockSparsityTest.cpp - Block maps on a CUDA GPU ---------------===//
//
// mask_mod variants through the public API on the GPU (Device::Cuda), with
// the plan's block map in device memory, against the float64 reference with
// poisoned outputs (e2e::checkApi; the reference calls the same variant
// compiled for the host, the host tests check the math independently). The
// cases cover both NVIDIA pipelines: wgmma with TMA (its producer and
// consumers must walk the same list; the persistent walk where the launch
// takes it), wgmma's cp.async tile (varlen), mma, a mask that reads h under
// GQA, split-KV decode, and the same kernel without a map. Skipped without
// a driver.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;

namespace {

struct SparseCase {
  const char *name;
  const char *source;
  int64_t batch, headsQ, headsKv, seqlenQ, seqlenK, d;
  const char *kernel = ""; ///< Options::kernel: a pipeline or family
  bool blockSparsity = true;
  std::vector<int32_t> varlen; ///< per-sequence lengths (Q and K), or empty
};

const char *const kDocuments = "bool mask_mod(int b, int h, int q, int k) {\n"
                               "  return q / 300 == k / 300 && k <= q;\n}\n";

const SparseCase kCases[] = {
    {"DocumentsWgmma", kDocuments, 2, 4, 4, 2000, 2000, 128},
    {"DocumentsWgmmaNoMap", kDocuments, 2, 4, 4, 2000, 2000, 128, "", false},
    {"DocumentsMma", kDocuments, 1, 4, 2, 1500, 1500, 128,
     "family=fwd,dtype=bf16,d=128,lse=1,pipeline=mma"},
    {"CausalThroughMaskModD64",
     "bool mask_mod(int b, int h, int q, int k) "
     "{ return k <= q; }\n",
     2, 8, 8, 1777, 1777, 64},
    {"PrefixLmPersistent",
     "bool mask_mod(int b, int h, int q, int k) "
     "{ return k <= q || k < 200; }\n",
     1, 16, 16, 1100, 1100, 128},
    {"WindowPerHeadGqa",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return k <= q && q - k < 128 * (h + 1);\n}\n",
     1, 8, 2, 1300, 1300, 128},
    {"VarlenDocuments",
     kDocuments,
     3,
     4,
     4,
     0,
     0,
     128,
     "",
     true,
     {700, 1, 1033}},
    {"SplitKvDecode",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return k / 512 % 3 != 1;\n}\n",
     2, 8, 8, 1, 9000, 128},
};

class CudaBlockSparsity : public testing::TestWithParam<SparseCase> {};

TEST_P(CudaBlockSparsity, MatchesReference) {
  REQUIRE_GPU();
  const SparseCase &c = GetParam();
  api::Problem p;
  p.batch = c.batch, p.headsQ = c.headsQ, p.headsKv = c.headsKv;
  p.seqlenQ = c.seqlenQ, p.seqlenK = c.seqlenK, p.headDim = c.d;
  p.dtype = api::DType::BF16;
  p.device = api::Device::Cuda;
  p.wantLse = true;
  p.variant = c.source;
  p.variantName = std::string(c.name) + ".cpp";
  if (!c.varlen.empty()) {
    p.cuSeqlensQ = {0};
    for (int32_t n : c.varlen)
      p.cuSeqlensQ.push_back(p.cuSeqlensQ.back() + n);
    p.cuSeqlensK = p.cuSeqlensQ;
  }
  api::Options options;
  options.kernel = c.kernel;
  options.blockSparsity = c.blockSparsity;
  ApiCheck check = checkApi(p, options);
  std::string decisions;
  for (const std::string &d : check.plan.decisions())
    decisions += d + "\n";
  EXPECT_EQ(decisions.find("block map:") != std::string::npos, c.blockSparsity)
      << check.plan.describe();
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaBlockSparsity, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<SparseCase> &info) {
                           return std::string(info.param.name);
                         });
} // namespace
