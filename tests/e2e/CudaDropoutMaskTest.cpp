//===- CudaDropoutMaskTest.cpp - The GPU's keep-mask vs its definition ----===//
//
// HostDropoutTest's exact check on a CUDA GPU: with Q = 0 every visible key
// scores alike, and with V one-hot (key j's row is e_j) O[i][j] is P_ij
// itself after dropout, keep_ij / (1 - p) / visible_i, so each element of O
// shows one bit of the kernel's mask, which must equal the reference's own
// Philox (runtime/numerics/Dropout.h) everywhere. The cases pin both NVIDIA
// tensor-core pipelines: wgmma on sm_90a (TMA tiles, the varlen cp.async
// tile, d = 64 and 128, several key tiles of bn = 64, causal tile edges) and
// mma; each also counts the keep rate against a binomial bound. fp16 and
// bf16 inputs (the tensor cores' dtypes); O's values are far apart for kept
// (about 1/visible) and dropped (0) keys, so the output's rounding does not
// blur a bit. Skipped without a CUDA driver; the wgmma cases without sm_90a.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CudaDriver.h"
#include "runtime/device/GpuResources.h"
#include "runtime/numerics/Dropout.h"
#include "runtime/numerics/HalfPrecision.h"
#include "tests/e2e/ApiTesting.h"
#include "tests/e2e/CudaForwardRunner.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

struct GpuMaskCase {
  std::string label;
  api::DType dtype;
  int64_t headDim; ///< >= every sequence's keys: V rows are one-hot
  int64_t headsQ, headsKv;
  std::vector<int32_t> lengthsQ, lengthsK; ///< more than one: varlen
  api::Mask mask;
  std::string pipeline; ///< "wgmma" or "mma", pinned through Options::kernel
};

void PrintTo(const GpuMaskCase &c, std::ostream *os) { *os << c.label; }

/// The 16-bit pattern of \p f in \p type.
uint16_t bitsOf(float f, api::DType type) {
  return type == api::DType::F16 ? floatToFp16(f) : floatToBf16(f);
}
float valueOf(uint16_t bits, api::DType type) {
  return type == api::DType::F16 ? fp16ToFloat(bits) : bf16ToFloat(bits);
}

std::vector<int32_t> cumulative(const std::vector<int32_t> &lengths) {
  std::vector<int32_t> cu = {0};
  for (int32_t n : lengths)
    cu.push_back(cu.back() + n);
  return cu;
}

api::Problem problemOf(const GpuMaskCase &c) {
  api::Problem p;
  p.headsQ = c.headsQ, p.headsKv = c.headsKv, p.headDim = c.headDim;
  p.dtype = c.dtype, p.mask = c.mask, p.dropout = true;
  p.device = api::Device::Cuda;
  if (c.lengthsQ.size() > 1) {
    p.cuSeqlensQ = cumulative(c.lengthsQ);
    p.cuSeqlensK = cumulative(c.lengthsK);
    p.batch = int64_t(c.lengthsQ.size());
  } else {
    p.seqlenQ = c.lengthsQ[0], p.seqlenK = c.lengthsK[0];
  }
  return p;
}

/// The spec that pins \p c's pipeline.
std::string kernelOf(const GpuMaskCase &c) {
  return std::string("family=fwd,dtype=") +
         (c.dtype == api::DType::F16 ? "fp16" : "bf16") +
         ",d=" + std::to_string(c.headDim) + ",dropout=1" +
         (c.mask == api::Mask::Causal ? ",mask=causal" : "") +
         (c.lengthsQ.size() > 1 ? ",varlen=1" : "") + ",pipeline=" + c.pipeline;
}

class CudaDropoutMask : public ::testing::TestWithParam<GpuMaskCase> {};

// Q = 0, K = 0.5, V one-hot per sequence; O poisoned with NaN.
TEST_P(CudaDropoutMask, IsPhiloxOfThePositionExactly) {
  REQUIRE_GPU();
  const GpuMaskCase &c = GetParam();
  auto driver = CudaDriver::get();
  ASSERT_TRUE(bool(driver)) << llvm::toString(driver.takeError());
  api::Problem p = problemOf(c);
  api::Options probe;
  probe.load = false;
  api::Result<api::Plan> unpinned = api::plan(p, probe);
  ASSERT_TRUE(unpinned.ok()) << unpinned.status().toString();
  if (c.pipeline == "wgmma" && unpinned->target() != "sm_90a")
    GTEST_SKIP() << "wgmma needs sm_90a; this GPU is " << unpinned->target();
  api::Options options;
  options.kernel = kernelOf(c);
  api::Result<api::Plan> plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  const std::string &kernel = plan->steps()[0].kernel;
  ASSERT_NE(kernel.find("_do_"), std::string::npos) << kernel;
  ASSERT_NE(kernel.find("_" + c.pipeline + "_sm"), std::string::npos) << kernel;

  // One sequence (dense, batch 1) or several (varlen), packed alike.
  const std::vector<int32_t> &lengthsQ = c.lengthsQ, &lengthsK = c.lengthsK;
  std::vector<int32_t> cuQ = cumulative(lengthsQ), cuK = cumulative(lengthsK);
  int64_t totalQ = cuQ.back(), totalK = cuK.back();
  int64_t d = c.headDim;
  std::vector<uint16_t> q(totalQ * c.headsQ * d, bitsOf(0.0f, c.dtype));
  std::vector<uint16_t> k(totalK * c.headsKv * d, bitsOf(0.5f, c.dtype));
  std::vector<uint16_t> v(k.size(), bitsOf(0.0f, c.dtype));
  std::vector<uint16_t> o(q.size(), bitsOf(NAN, c.dtype));
  for (size_t b = 0; b < lengthsK.size(); ++b)
    for (int64_t j = 0; j < lengthsK[b]; ++j)
      for (int64_t h = 0; h < c.headsKv; ++h)
        v[((cuK[b] + j) * c.headsKv + h) * d + j] = bitsOf(1.0f, c.dtype);

  GpuBuffer qd = uploadOrFail(*driver, q.data(), 2 * q.size(), "q");
  GpuBuffer kd = uploadOrFail(*driver, k.data(), 2 * k.size(), "k");
  GpuBuffer vd = uploadOrFail(*driver, v.data(), 2 * v.size(), "v");
  GpuBuffer od = uploadOrFail(*driver, o.data(), 2 * o.size(), "o");
  GpuBuffer cuQd = uploadOrFail(*driver, cuQ.data(), 4 * cuQ.size(), "cu_q");
  GpuBuffer cuKd = uploadOrFail(*driver, cuK.data(), 4 * cuK.size(), "cu_k");
  DropoutParams params{0.3f, 0xfeedface12345678ull, 77};
  api::Tensors t;
  t.q = qd.pointer(), t.k = kd.pointer(), t.v = vd.pointer();
  t.o = od.pointer();
  if (!p.cuSeqlensQ.empty()) {
    t.cuSeqlensQ = static_cast<const int32_t *>(cuQd.pointer());
    t.cuSeqlensK = static_cast<const int32_t *>(cuKd.pointer());
  }
  t.dropout = {params.p, params.seed, params.offset};
  api::Status status = api::run(*plan, t);
  ASSERT_TRUE(status.ok()) << status.toString();
  llvm::Error copied = od.copyTo(o.data(), 2 * o.size());
  ASSERT_FALSE(bool(copied)) << llvm::toString(std::move(copied));

  DropoutMask mask(params, c.headsQ);
  double tolerance = c.dtype == api::DType::F16 ? 2e-3 : 1e-2;
  int64_t kept = 0, seen = 0, wrong = 0;
  for (size_t b = 0; b < lengthsQ.size(); ++b) {
    int64_t sq = lengthsQ[b], sk = lengthsK[b];
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t h = 0; h < c.headsQ; ++h) {
        // Mask::Causal is top-left: query i sees keys 0..i.
        int64_t visible =
            c.mask == api::Mask::Causal ? std::min(i + 1, sk) : sk;
        const uint16_t *row = &o[((cuQ[b] + i) * c.headsQ + h) * d];
        for (int64_t j = 0; j < d; ++j) {
          bool keep = j < visible && mask.keeps(int64_t(b), h, i, j);
          double want = keep ? mask.scale() / double(visible) : 0.0;
          float got = valueOf(row[j], c.dtype);
          wrong += std::isnan(got) || std::abs(got - want) > tolerance * want;
          if (j < visible)
            ++seen, kept += keep;
        }
      }
  }
  EXPECT_EQ(wrong, 0) << "elements of O whose keep bit differs, of " << o.size()
                      << " (" << kernel << ")";
  double sd = std::sqrt(seen * 0.3 * 0.7);
  EXPECT_LE(std::abs(kept - 0.7 * seen), 6 * sd) << kept << " of " << seen;
}

std::vector<GpuMaskCase> gpuMaskCases() {
  using api::Mask;
  std::vector<GpuMaskCase> cases;
  for (std::string pipeline : {"wgmma", "mma"}) {
    std::string tag = pipeline == "wgmma" ? "Wgmma" : "Mma";
    // Two query tiles and two key tiles of 64 (bn <= 64 under dropout), GQA.
    cases.push_back({tag + "GqaTwoKeyTilesFp16",
                     api::DType::F16,
                     128,
                     4,
                     2,
                     {200},
                     {128},
                     Mask::None,
                     pipeline});
    cases.push_back({tag + "CausalBf16",
                     api::DType::BF16,
                     128,
                     2,
                     2,
                     {128},
                     {128},
                     Mask::Causal,
                     pipeline});
    cases.push_back({tag + "D64Bf16",
                     api::DType::BF16,
                     64,
                     8,
                     1,
                     {300},
                     {64},
                     Mask::None,
                     pipeline});
    cases.push_back({tag + "VarlenFp16",
                     api::DType::F16,
                     128,
                     2,
                     1,
                     {1, 150, 30},
                     {128, 3, 69},
                     Mask::None,
                     pipeline});
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Gpu, CudaDropoutMask,
                         ::testing::ValuesIn(gpuMaskCases()),
                         [](const auto &info) { return info.param.label; });

} // namespace
