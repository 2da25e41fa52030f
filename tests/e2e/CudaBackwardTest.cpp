//===- CudaBackwardTest.cpp - The backward on CUDA against float64 --------===//
//
// bwd_dq_dk_dv on pipeline mma through the public API (GpuBackwardCase):
// fresh seeded inputs, gradients poisoned with NaN before each run, the
// float64 reference's verdict on dQ, dK and dV. Odd lengths, Sq != Sk, GQA
// and MQA, every mask, softcap, ALiBi, varlen, both dQ modes, the default
// tile and one whose warps split the keys (bm < bn); fully masked
// rows' gradients are exactly zero; deterministic=1 twice is bitwise the
// same. Skipped without a GPU and driver.
//
//===----------------------------------------------------------------------===//
#include "CudaForwardRunner.h"
#include "runtime/harness/GpuBackwardCase.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "gtest/gtest.h"
#include <cstring>

using namespace fmhajit;

namespace {
struct BwdCase {
  const char *name;
  const char *features; ///< spec keys past family, dtype and d
  api::DType dtype;
  int64_t d, batch, headsQ, headsKv, seqlenQ, seqlenK;
  std::vector<int32_t> cuQ = {}, cuK = {}; ///< varlen: cumulative lengths
};

void PrintTo(const BwdCase &c, std::ostream *os) { *os << c.name; }

/// "" for success, else the error's text.
std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : "";
}

const char *dtypeKey(api::DType t) {
  return t == api::DType::F16 ? "fp16" : "bf16";
}

/// The public problem of \p c under \p spec's features.
api::Problem problemOf(const BwdCase &c, const KernelSpec &spec) {
  api::Problem p;
  p.device = api::Device::Cuda;
  p.batch = c.batch, p.headsQ = c.headsQ, p.headsKv = c.headsKv;
  p.seqlenQ = c.seqlenQ, p.seqlenK = c.seqlenK;
  p.cuSeqlensQ = c.cuQ, p.cuSeqlensK = c.cuK;
  p.headDim = c.d, p.dtype = c.dtype;
  p.mask = spec.mask == Mask::Causal     ? api::Mask::Causal
           : spec.mask == Mask::CausalBr ? api::Mask::CausalBottomRight
           : spec.mask == Mask::Window   ? api::Mask::Window
                                         : api::Mask::None;
  if (spec.mask == Mask::Window)
    p.windowLeft = 37, p.windowRight = 5;
  p.softcap = spec.softcap ? 20.0f : 0.0f;
  p.alibi = spec.bias == Bias::Alibi;
  return p;
}

class CudaBackward : public ::testing::TestWithParam<BwdCase> {
protected:
  void SetUp() override {
    if (!e2e::CudaForwardRunner::shared())
      GTEST_SKIP() << e2e::CudaForwardRunner::unavailableReason();
  }
  /// \p c's spec on this GPU's target.
  KernelSpec specOf(const BwdCase &c) {
    std::string text = std::string("family=bwd_dq_dk_dv,dtype=") +
                       dtypeKey(c.dtype) + ",d=" + std::to_string(c.d) +
                       (*c.features ? "," : "") + c.features;
    auto spec = parseSpec(text);
    EXPECT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
    api::Options probe;
    probe.load = false;
    auto forward = api::plan(problemOf(c, *spec), probe);
    EXPECT_TRUE(forward.ok()) << forward.status().message();
    spec->target = forward->target();
    auto resolved = validateSpec(*spec);
    EXPECT_TRUE(bool(resolved)) << llvm::toString(resolved.takeError());
    return *resolved;
  }
  std::unique_ptr<harness::GpuBackwardCase> make(const BwdCase &c,
                                                 const KernelSpec &spec) {
    api::Problem p = problemOf(c, spec);
    auto made = harness::GpuBackwardCase::make(
        spec, p, harness::backwardProblem(spec, p), 1234);
    EXPECT_TRUE(bool(made)) << llvm::toString(made.takeError());
    return made ? std::move(*made) : nullptr;
  }
};

TEST_P(CudaBackward, MatchesReference) {
  KernelSpec spec = specOf(GetParam());
  auto c = make(GetParam(), spec);
  ASSERT_TRUE(c);
  ASSERT_EQ(errorOf(c->run()), "");
  harness::BackwardCheck verdict = c->check();
  EXPECT_TRUE(verdict.pass()) << verdict.summary();
}

const BwdCase kCases[] = {
    {"bf16_d128", "", api::DType::BF16, 128, 2, 4, 4, 257, 257},
    {"fp16_d64_causal_sq_ne_sk", "mask=causal", api::DType::F16, 64, 2, 4, 2,
     77, 190},
    {"bf16_d64_causalbr_gqa", "mask=causal_br", api::DType::BF16, 64, 1, 8, 2,
     300, 129},
    {"bf16_d128_window_mqa", "mask=window", api::DType::BF16, 128, 2, 4, 1, 161,
     161},
    {"fp16_d96_softcap_alibi", "softcap=1,bias=alibi,mask=causal",
     api::DType::F16, 96, 1, 4, 4, 130, 130},
    {"bf16_d32_varlen",
     "varlen=1,mask=causal",
     api::DType::BF16,
     32,
     3,
     4,
     2,
     0,
     0,
     {0, 17, 150, 300},
     {0, 40, 150, 333}},
    {"bf16_d128_deterministic", "deterministic=1,mask=causal", api::DType::BF16,
     128, 1, 4, 2, 199, 199},
    {"fp16_d64_deterministic_varlen_alibi",
     "deterministic=1,varlen=1,bias=alibi",
     api::DType::F16,
     64,
     2,
     4,
     4,
     0,
     0,
     {0, 65, 200},
     {0, 100, 131}},
    // bm < bn: two warps share each query row group and split its keys and
    // dQ's columns; dQ's products read dS from shared memory.
    {"bf16_d128_split_keys", "bm=64,bn=128,warps=8", api::DType::BF16, 128, 2,
     4, 4, 257, 257},
    {"fp16_d64_split_keys_causal_gqa", "bm=64,bn=128,warps=8,mask=causal",
     api::DType::F16, 64, 1, 8, 2, 190, 300},
    {"bf16_d96_split_keys_window_softcap_alibi",
     "bm=64,bn=128,warps=8,mask=window,softcap=1,bias=alibi", api::DType::BF16,
     96, 1, 4, 4, 300, 300},
    {"fp16_d64_split_keys_deterministic_varlen",
     "bm=64,bn=128,warps=8,deterministic=1,varlen=1,mask=causal",
     api::DType::F16,
     64,
     3,
     4,
     2,
     0,
     0,
     {0, 17, 150, 300},
     {0, 40, 150, 333}},
};
INSTANTIATE_TEST_SUITE_P(Cases, CudaBackward, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return info.param.name; });

// Top-left causal with Sq > Sk: queries past Sk see every key, none sees
// nothing; bottom-right with Sq > Sk: the first Sq - Sk queries see no key,
// so their dQ is exactly zero and they add nothing to dK and dV.
TEST_F(CudaBackward, FullyMaskedRowsAreZero) {
  BwdCase c{"masked", "mask=causal_br", api::DType::BF16, 64, 1, 2, 2, 200, 70};
  KernelSpec spec = specOf(c);
  auto run = make(c, spec);
  ASSERT_TRUE(run);
  ASSERT_EQ(errorOf(run->run()), "");
  EXPECT_TRUE(run->check().pass()) << run->check().summary();
  std::vector<float> dq = run->dq().toFloat();
  for (int64_t row = 0; row < 200 - 70; ++row)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < 64; ++e)
        ASSERT_EQ(dq[(row * 2 + h) * 64 + e], 0.0f) << "row " << row;
}

TEST_F(CudaBackward, DeterministicIsBitwiseRepeatable) {
  BwdCase c{
      "det", "deterministic=1,mask=causal", api::DType::BF16, 128, 2, 8, 2, 513,
      513};
  KernelSpec spec = specOf(c);
  auto run = make(c, spec);
  ASSERT_TRUE(run);
  ASSERT_EQ(errorOf(run->run()), "");
  HostTensor grads[] = {run->dq(), run->dk(), run->dv()};
  ASSERT_EQ(errorOf(run->run()), "");
  const HostTensor *again[] = {&run->dq(), &run->dk(), &run->dv()};
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(
        std::memcmp(grads[i].data(), again[i]->data(), grads[i].sizeInBytes()),
        0)
        << "gradient " << i << " differs between two runs";
  EXPECT_TRUE(run->check().pass()) << run->check().summary();
}
} // namespace
