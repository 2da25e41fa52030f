//===- ApiCudaTest.cpp - The public API on a CUDA GPU ---------------------===//
//
// The same contract as ApiTest.cpp with Device::Cuda: device pointers in
// Tensors (cu_seqlens, ALiBi slopes, sinks and the bias included), the GPU's
// own target,
// a tensor-core pipeline (wgmma on sm_90a, else mma) when K/V rows are 16-byte
// aligned and simt when they are not, and autotuning timed with CUDA events.
// Then the multi-stage plans: decode split over the GPU's SMs with the combine
// after it (workspace in device memory), paged K/V with the block table and
// lengths on the device, and appends (contiguous and paged, rotary) as in
// ApiPagedTest/ApiAppendTest. Skipped without a driver.
//
//===----------------------------------------------------------------------===//
#include "../unit/ScopedEnv.h"
#include "runtime/harness/ForwardCase.h"
#include "tests/e2e/ApiCacheTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;
using api::TensorLayout;

namespace {

Problem gpuProblem(int64_t batch, int64_t headsQ, int64_t headsKv, int64_t sq,
                   int64_t sk, int64_t d, DType dtype) {
  Problem p;
  p.batch = batch, p.headsQ = headsQ, p.headsKv = headsKv;
  p.seqlenQ = sq, p.seqlenK = sk, p.headDim = d, p.dtype = dtype;
  p.device = api::Device::Cuda;
  return p;
}

struct GpuCase {
  std::string label;
  Problem problem;
  std::string pipeline; ///< what the chosen name holds: "mma_sm" (mma or wgmma)
                        ///< or "_simt_"
};

void PrintTo(const GpuCase &c, std::ostream *os) { *os << c.label; }

class ApiCuda : public ::testing::TestWithParam<GpuCase> {};

TEST_P(ApiCuda, MatchesReference) {
  REQUIRE_GPU();
  ApiCheck check = checkApi(GetParam().problem);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_NE(check.plan.steps().front().kernel.find(GetParam().pipeline),
            std::string::npos)
      << check.plan.describe();
}

std::vector<GpuCase> gpuCases() {
  Problem bshd = gpuProblem(2, 8, 2, 300, 300, 128, DType::BF16);
  bshd.mask = Mask::Causal;
  bshd.wantLse = true;
  Problem bhsd = gpuProblem(2, 4, 4, 40, 130, 64, DType::F16);
  bhsd.q = bhsd.k = bhsd.v = bhsd.o = TensorLayout::bhsd();
  // K/V rows 2 bytes off 16: mma cannot copy them, simt can.
  Problem odd = gpuProblem(1, 2, 2, 33, 70, 64, DType::BF16);
  odd.k = TensorLayout::strided(0, 2 * 64 + 1, 64);
  odd.v = TensorLayout::strided(0, 2 * 64 + 1, 64);
  Problem fp32 = gpuProblem(1, 4, 1, 50, 50, 64, DType::F32);
  fp32.mask = Mask::Window;
  fp32.windowLeft = 8, fp32.windowRight = 2;
  Problem varlen = gpuProblem(3, 4, 2, 0, 0, 64, DType::BF16);
  varlen.cuSeqlensQ = {0, 5, 77, 78};
  varlen.cuSeqlensK = {0, 100, 180, 181};
  varlen.mask = Mask::CausalBottomRight;
  Problem alibi = gpuProblem(1, 4, 4, 64, 64, 128, DType::BF16);
  alibi.alibi = true;
  alibi.softcap = 30;
  // Sinks (device copies from the harness): the persistent wgmma walk with
  // causal rows, simt with rows that see no key (bottom-right, Sk < Sq),
  // the cp.async wgmma row under varlen, and softcap + ALiBi + window.
  Problem sink = bshd;
  sink.sink = true;
  Problem sinkSimt = gpuProblem(1, 4, 1, 50, 30, 64, DType::F32);
  sinkSimt.mask = Mask::CausalBottomRight;
  sinkSimt.sink = sinkSimt.wantLse = true;
  Problem sinkVarlen = varlen;
  sinkVarlen.sink = sinkVarlen.wantLse = true;
  Problem sinkMods = gpuProblem(2, 4, 4, 200, 260, 64, DType::F16);
  sinkMods.mask = Mask::Window;
  sinkMods.windowLeft = 30, sinkMods.windowRight = 0;
  sinkMods.alibi = true;
  sinkMods.softcap = 30;
  sinkMods.sink = sinkMods.wantLse = true;
  // An elementwise bias (a device copy from the harness, one element in
  // eight -inf): full with GQA and causal rows on the tensor cores, key
  // padding on simt with rows that see no key, and one bias shared by the
  // batch under a soft-cap.
  Problem biasFull = bshd;
  biasFull.bias = true;
  Problem biasKeys = gpuProblem(2, 4, 1, 50, 30, 64, DType::F32);
  biasKeys.mask = Mask::CausalBottomRight;
  biasKeys.bias = biasKeys.wantLse = true;
  biasKeys.biasStrides = api::BiasStrides{30, 0, 0, 1};
  Problem biasBatch = gpuProblem(2, 4, 4, 200, 260, 64, DType::F16);
  biasBatch.softcap = 30;
  biasBatch.bias = biasBatch.wantLse = true;
  biasBatch.biasStrides = api::BiasStrides{0, 200 * 260, 260, 1};
  // Dropout (the harness's p = 0.25, seed and offset): the kernels' Philox
  // mask must be the reference's for O to match. The wgmma tile with
  // bn = 64 (validation's pick), mma under varlen, simt in fp32.
  Problem dropout = bshd;
  dropout.dropout = true;
  Problem dropoutVarlen = varlen;
  dropoutVarlen.dropout = true;
  Problem dropoutSimt = gpuProblem(1, 4, 1, 50, 70, 64, DType::F32);
  dropoutSimt.mask = Mask::Window;
  dropoutSimt.windowLeft = 8, dropoutSimt.windowRight = 2;
  dropoutSimt.dropout = dropoutSimt.wantLse = true;
  return {{"BshdGqaCausalLse", bshd, "mma_sm"},
          {"DropoutCausalLse", dropout, "mma_sm"},
          {"DropoutVarlen", dropoutVarlen, "mma_sm"},
          {"DropoutSimtWindow", dropoutSimt, "_simt_"},
          {"Bhsd", bhsd, "mma_sm"},
          {"MisalignedKvIsSimt", odd, "_simt_"},
          {"Fp32Window", fp32, "_simt_"},
          {"VarlenDeviceCuSeqlens", varlen, "mma_sm"},
          {"AlibiSoftcap", alibi, "mma_sm"},
          {"SinkCausalLse", sink, "mma_sm"},
          {"SinkSimtRowsWithoutKeys", sinkSimt, "_simt_"},
          {"SinkVarlen", sinkVarlen, "mma_sm"},
          {"SinkWindowAlibiSoftcap", sinkMods, "mma_sm"},
          {"BiasFullGqaCausal", biasFull, "mma_sm"},
          {"BiasKeyPaddingSimt", biasKeys, "_simt_"},
          {"BiasBatchBroadcastSoftcap", biasBatch, "mma_sm"}};
}
INSTANTIATE_TEST_SUITE_P(Gpu, ApiCuda, ::testing::ValuesIn(gpuCases()),
                         [](const auto &info) { return info.param.label; });

TEST(ApiCudaRun, VarlenNeedsDeviceCuSeqlens) {
  REQUIRE_GPU();
  Problem p = gpuProblem(2, 2, 2, 0, 0, 64, DType::BF16);
  p.cuSeqlensQ = p.cuSeqlensK = {0, 3, 9};
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  int dummy[4];
  api::Status s = api::run(*plan, {dummy, dummy, dummy, dummy});
  EXPECT_NE(s.message().find("Tensors::cuSeqlensQ and cuSeqlensK"),
            std::string::npos)
      << s.message();
}

// A plan whose kernel loads by TMA (wgmma, stages 2 on sm_90a) encodes its
// tensor maps once and binds each run's pointers into them
// (runtime/device/GpuTensorMaps.h): one plan run on two sets of buffers,
// both alive, must match each set's own reference.
TEST(ApiCudaRun, TmaPlanBindsEachRunsPointers) {
  REQUIRE_GPU();
  Problem p = gpuProblem(2, 4, 2, 300, 333, 64, DType::BF16);
  p.mask = Mask::CausalBottomRight;
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  auto first = fmhajit::harness::ForwardCase::make(p, plan->target(), 1);
  auto second = fmhajit::harness::ForwardCase::make(p, plan->target(), 2);
  ASSERT_TRUE(first && second) << llvm::toString(first.takeError())
                               << llvm::toString(second.takeError());
  for (fmhajit::harness::ForwardCase *run : {&*first, &*second, &*first}) {
    llvm::Error err = run->run(*plan);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    fmhajit::CompareResult compare = run->check();
    EXPECT_TRUE(compare.pass) << compare.summary() << "\n" << plan->describe();
  }
}

// A plan whose kernel cuts its last round's items by keys
// (runtime/device/TailSplit.h): its workspace holds V^T (fp8) and the
// parts' counters and partials side by side, and each run clears the
// counters first, so one plan runs twice on the same workspace. fp8 as the
// plan picks it (V^T by a pass, its own choice of parts), and bf16 with
// forced parts, where part 0 alone starts at the sink and dropout's mask
// follows each key wherever its part runs.
TEST(ApiCudaTail, PlansSplitTheLastRound) {
  REQUIRE_GPU();
  Problem fp8 = gpuProblem(1, 2, 2, 4096, 4096, 128, DType::F8E4M3);
  fp8.wantLse = true;
  Problem bf16 = gpuProblem(1, 6, 3, 1000, 1300, 128, DType::BF16);
  bf16.sink = bf16.dropout = bf16.wantLse = true;
  for (auto [problem, parts] :
       {std::pair{fp8, (const char *)nullptr}, std::pair{bf16, "3"}}) {
    fmhajit::ScopedEnv env;
    env.set("FMHAJIT_TAIL_PARTS", parts);
    std::optional<api::Plan> plan = planChecked(problem);
    ASSERT_TRUE(plan);
    ASSERT_NE(plan->describe().find("parts by keys"), std::string::npos)
        << plan->describe();
    auto run = fmhajit::harness::ForwardCase::make(problem, plan->target(), 1);
    ASSERT_TRUE(bool(run)) << llvm::toString(run.takeError());
    for (int launch = 0; launch < 2; ++launch) {
      llvm::Error err = run->run(*plan);
      ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
      fmhajit::CompareResult compare = run->check();
      EXPECT_TRUE(compare.pass) << compare.summary() << "\n"
                                << plan->describe();
    }
  }
}

TEST(ApiCudaAutotune, TimesWithEvents) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 4, 4, 200, 200, 64, DType::BF16);
  api::Options options;
  options.autotune = true;
  options.cacheDir = apiCacheDir();
  ApiCheck check = checkApi(p, options);
  EXPECT_GE(check.plan.timings().size(), 2u) << check.plan.describe();
}

// Decode, GQA 8:1: 8 work items cannot fill the SMs, so the plan cuts the
// 8000 keys into parts and combines them.
TEST(ApiCudaSplit, DecodeSplitsOverSms) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 8, 1, 1, 8000, 128, DType::BF16);
  p.wantLse = true;
  ApiCheck check = checkApi(p);
  ASSERT_EQ(check.plan.steps().size(), 2u) << check.plan.describe();
  EXPECT_EQ(check.plan.steps()[0].role, "split-KV forward");
  EXPECT_GT(check.plan.steps()[0].keySplits, 1);
  EXPECT_EQ(check.plan.steps()[1].role, "combine");
  EXPECT_GT(check.plan.workspaceBytes(), 0);
}

// The sink joins part 0's partials only: with many parts and the combine
// after them it must still count once.
TEST(ApiCudaSplit, DecodeWithSinksCountsThemOnce) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 8, 1, 1, 8000, 128, DType::BF16);
  p.wantLse = p.sink = true;
  ApiCheck check = checkApi(p);
  ASSERT_EQ(check.plan.steps().size(), 2u) << check.plan.describe();
  EXPECT_GT(check.plan.steps()[0].keySplits, 1);
}

// The bias under split-KV: each part reads its own keys' bias elements.
TEST(ApiCudaSplit, DecodeWithBias) {
  REQUIRE_GPU();
  Problem p = gpuProblem(2, 8, 1, 1, 8000, 128, DType::BF16);
  p.wantLse = p.bias = true;
  ApiCheck check = checkApi(p);
  ASSERT_EQ(check.plan.steps().size(), 2u) << check.plan.describe();
  EXPECT_GT(check.plan.steps()[0].keySplits, 1);
}

// pack_gqa: each row of a tile reads its own head's bias.
TEST(ApiCudaBias, PackGqaReadsEachRowsHead) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 8, 2, 40, 300, 64, DType::BF16);
  p.mask = Mask::CausalBottomRight;
  p.wantLse = p.bias = true;
  api::Options options;
  options.kernel = "family=fwd,dtype=bf16,d=64,mask=causal_br,lse=1,"
                   "bias=elementwise,pack_gqa=1";
  checkApi(p, options);
}

// pack_gqa: each row of a tile reads its own head's sink.
TEST(ApiCudaSink, PackGqaReadsEachRowsSink) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 8, 2, 40, 300, 64, DType::BF16);
  p.mask = Mask::CausalBottomRight;
  p.wantLse = p.sink = true;
  api::Options options;
  options.kernel = "family=fwd,dtype=bf16,d=64,mask=causal_br,lse=1,sink=1,"
                   "pack_gqa=1";
  checkApi(p, options);
}

// pack_gqa on the TMA ring, pinned as bench/decode pins its tiles: the
// plan's tensor maps are prepared once and bound at each run, K and V by
// TMA and Q copied by the consumers, split into parts and combined; with
// the elementwise bias or sinks each packed row reads its own head's.
TEST(ApiCudaSplit, PinnedPackedRingDecode) {
  REQUIRE_GPU();
  Problem p = gpuProblem(2, 32, 4, 1, 6000, 128, DType::BF16);
  p.mask = Mask::CausalBottomRight;
  p.wantLse = true;
  const char *ring = "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,"
                     "lse=1,pipeline=wgmma,bm=64,bn=128,warps=4,stages=2,"
                     "pack_gqa=1";
  for (unsigned splits : {1u, 6u}) {
    api::Options options;
    options.kernel = ring;
    options.numSplits = splits;
    ApiCheck check = checkApi(p, options);
    ASSERT_FALSE(check.plan.steps().empty());
    EXPECT_NE(check.plan.steps().front().kernel.find("pgqa_m64n128w4s2_wgmma"),
              std::string::npos)
        << check.plan.describe();
  }
  for (const char *feature : {"bias=elementwise", "sink=1"}) {
    Problem mods = gpuProblem(1, 16, 2, 2, 3000, 128, DType::BF16);
    mods.mask = Mask::CausalBottomRight;
    mods.wantLse = true;
    (llvm::StringRef(feature).starts_with("bias") ? mods.bias : mods.sink) =
        true;
    api::Options options;
    options.kernel = std::string("family=fwd_splitkv,dtype=bf16,d=128,mask="
                                 "causal_br,lse=1,pipeline=wgmma,bm=64,bn=128,"
                                 "warps=4,stages=2,pack_gqa=1,") +
                     feature;
    options.numSplits = 4;
    checkApi(mods, options);
  }
}

TEST(ApiCudaRun, SinksNeedADeviceCopy) {
  REQUIRE_GPU();
  Problem p = gpuProblem(1, 2, 2, 8, 8, 64, DType::BF16);
  p.sink = true;
  p.sinks = {0.5f, 1.0f}; // a host copy does not do on a GPU
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  int dummy[4];
  api::Status s = api::run(*plan, {dummy, dummy, dummy, dummy});
  EXPECT_NE(s.message().find("Tensors::sinks"), std::string::npos)
      << s.message();
}

Problem onGpu(Problem p) {
  p.device = api::Device::Cuda;
  return p;
}

struct GpuPagedCase {
  std::string label;
  Problem problem;
  std::string kernel = "fmha_fwdpaged_"; ///< in the kernel's name
};

void PrintTo(const GpuPagedCase &c, std::ostream *os) { *os << c.label; }

class ApiCudaPaged : public ::testing::TestWithParam<GpuPagedCase> {};

TEST_P(ApiCudaPaged, MatchesReference) {
  REQUIRE_GPU();
  ApiCheck check = checkApi(GetParam().problem, {}, 5);
  ASSERT_FALSE(check.plan.steps().empty());
  EXPECT_NE(check.plan.steps()[0].kernel.find(GetParam().kernel),
            std::string::npos)
      << check.plan.describe();
}

std::vector<GpuPagedCase> gpuPagedCases() {
  Problem decode = onGpu(
      pagedProblem(16, 2, 1, 128, DType::BF16, {1, 17, 300, 64, 1000}, 16));
  decode.wantLse = true;
  Problem causal =
      onGpu(pagedProblem(4, 2, 5, 64, DType::F16, {3, 100, 257}, 64));
  causal.mask = Mask::CausalBottomRight;
  Problem long8k =
      onGpu(pagedProblem(8, 1, 1, 128, DType::BF16, {9000, 5}, 16));
  // Prefill: the plan takes the TMA ring where pages hold 8 rows or more,
  // and its stages=1 twin for smaller pages.
  Problem prefill =
      onGpu(pagedProblem(8, 2, 300, 128, DType::BF16, {1000, 37, 300}, 16));
  prefill.mask = Mask::CausalBottomRight;
  prefill.wantLse = true;
  Problem smallPages =
      onGpu(pagedProblem(8, 2, 300, 128, DType::BF16, {1000, 37, 300}, 4));
  smallPages.mask = Mask::CausalBottomRight;
  return {{"DecodeGqaLse", decode},
          {"CausalBrFp16", causal},
          {"LongBesideShort", long8k},
          {"PrefillOnTheRing", prefill, "w8s2_wgmma"},
          {"PrefillPagesOf4", smallPages, "w8s1_wgmma"}};
}
INSTANTIATE_TEST_SUITE_P(Gpu, ApiCudaPaged,
                         ::testing::ValuesIn(gpuPagedCases()),
                         [](const auto &info) { return info.param.label; });

TEST(ApiCudaPagedRun, NeedsDeviceLengths) {
  REQUIRE_GPU();
  Problem p = onGpu(pagedProblem(4, 1, 1, 64, DType::BF16, {40, 20}, 16));
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  int dummy[4];
  api::Tensors t{dummy, dummy, dummy, dummy};
  t.blockTable = dummy;
  api::Status s = api::run(*plan, t);
  EXPECT_NE(s.message().find("Tensors::seqlensK"), std::string::npos)
      << s.message();
}

struct GpuAppendCase {
  std::string label;
  api::AppendProblem problem;
};

void PrintTo(const GpuAppendCase &c, std::ostream *os) { *os << c.label; }

class ApiCudaAppend : public ::testing::TestWithParam<GpuAppendCase> {};

TEST_P(ApiCudaAppend, MatchesReference) {
  REQUIRE_GPU();
  AppendOutcome out = checkApiAppend(GetParam().problem, false, 6);
  ASSERT_EQ(out.plan.steps().size(), 1u);
  EXPECT_NE(out.plan.target().find("sm_"), std::string::npos)
      << out.plan.describe();
}

std::vector<GpuAppendCase> gpuAppendCases() {
  auto gpu = [](api::AppendProblem p) {
    p.device = api::Device::Cuda;
    return p;
  };
  api::AppendProblem contiguous =
      gpu(appendProblem({0, 15, 33}, 1, 0, api::Rotary::None));
  api::AppendProblem pagedHalfQ =
      gpu(appendProblem({0, 15, 33}, 1, 16, api::Rotary::Half));
  pagedHalfQ.rotateQ = true;
  api::AppendProblem interleaved = gpu(appendProblem(
      {3, 100}, 70, 16, api::Rotary::Interleaved, 64, DType::F16));
  return {{"Contiguous", contiguous},
          {"PagedHalfRotaryQ", pagedHalfQ},
          {"PagedInterleaved70Rows", interleaved}};
}
INSTANTIATE_TEST_SUITE_P(Gpu, ApiCudaAppend,
                         ::testing::ValuesIn(gpuAppendCases()),
                         [](const auto &info) { return info.param.label; });

TEST(ApiCudaAppendRun, NeedsDeviceLengths) {
  REQUIRE_GPU();
  api::AppendProblem p = appendProblem({10, 20}, 1, 0, api::Rotary::None);
  p.device = api::Device::Cuda;
  std::optional<api::Plan> plan = planChecked(p);
  ASSERT_TRUE(plan);
  int dummy[4];
  api::Status s = api::append(*plan, {dummy, dummy, dummy, dummy});
  EXPECT_NE(s.message().find("AppendTensors::seqlens"), std::string::npos)
      << s.message();
}

} // namespace
