//===- ApiTest.cpp - The public API, end to end on the host ---------------===//
//
// plan() + run() through fmhajit/Fmhajit.h only, checked against the float64
// reference: every layout (BSHD, BHSD, odd strides with padding), varlen,
// GQA/MQA, every mask, softcap, ALiBi, LSE, scale and output dtype, and the
// split-KV plan of a decode problem. Then the contract's other half: bad
// problems, tensors and plans give a Status naming what to change (never a
// crash), warmup() fills the cache, and autotuning stores its winner.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CudaDriver.h"
#include "tests/e2e/ApiTesting.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace fmhajit::e2e;
namespace api = fmhajit::api;
using api::DType;
using api::Mask;
using api::Problem;
using api::StatusCode;
using api::TensorLayout;

namespace {

struct ApiCase {
  std::string label;
  Problem problem;
  unsigned threads = 2;
};

void PrintTo(const ApiCase &c, std::ostream *os) { *os << c.label; }

class ApiMatchesReference : public ::testing::TestWithParam<ApiCase> {};

TEST_P(ApiMatchesReference, PlanAndRun) {
  api::Options options;
  options.threads = GetParam().threads;
  checkApi(GetParam().problem, options);
}

std::vector<ApiCase> layoutCases() {
  Problem bshd = denseProblem(2, 4, 4, 70, 97, 64, DType::BF16);
  bshd.mask = Mask::Causal;
  Problem bhsd = denseProblem(2, 4, 2, 33, 50, 128, DType::F32);
  bhsd.q = bhsd.k = bhsd.v = bhsd.o = TensorLayout::bhsd();
  // Rows padded by 24 elements, heads by 8, batches by 100; K in BHSD; V
  // with heads outermost inside a batch; O padded differently again.
  Problem odd = denseProblem(2, 3, 3, 21, 40, 64, DType::F16);
  int64_t qRow = 3 * (64 + 8) + 24;
  odd.q = TensorLayout::strided(21 * qRow + 100, qRow, 64 + 8);
  odd.k = TensorLayout::bhsd();
  odd.v = TensorLayout::strided(3 * 40 * 64 + 64, 64, 40 * 64);
  odd.o = TensorLayout::strided(21 * 3 * 80, 3 * 80, 80);
  odd.mask = Mask::CausalBottomRight;
  Problem mixed = denseProblem(1, 2, 1, 17, 17, 32, DType::BF16);
  mixed.q = TensorLayout::bhsd();
  mixed.o = TensorLayout::bhsd();
  return {{"Bshd", bshd},
          {"Bhsd", bhsd},
          {"OddStrides", odd},
          {"MixedLayouts", mixed}};
}
INSTANTIATE_TEST_SUITE_P(Layouts, ApiMatchesReference,
                         ::testing::ValuesIn(layoutCases()),
                         [](const auto &info) { return info.param.label; });

std::vector<ApiCase> varlenCases() {
  Problem thd = denseProblem(3, 4, 1, 0, 0, 64, DType::BF16);
  thd.cuSeqlensQ = {0, 5, 77, 78};
  thd.cuSeqlensK = {0, 100, 180, 181};
  thd.mask = Mask::Causal;
  thd.wantLse = true;
  Problem htd = thd;
  htd.q = htd.k = htd.v = htd.o = TensorLayout::bhsd();
  htd.mask = Mask::CausalBottomRight;
  htd.headsKv = 2;
  return {{"VarlenThdMqa", thd}, {"VarlenHtdGqa", htd}};
}
INSTANTIATE_TEST_SUITE_P(Varlen, ApiMatchesReference,
                         ::testing::ValuesIn(varlenCases()),
                         [](const auto &info) { return info.param.label; });

std::vector<ApiCase> featureCases() {
  Problem gqa = denseProblem(1, 8, 2, 45, 45, 64, DType::F32);
  gqa.mask = Mask::Causal;
  Problem window = denseProblem(2, 2, 2, 60, 80, 64, DType::F32);
  window.mask = Mask::Window;
  window.windowLeft = 16, window.windowRight = 4;
  Problem softcap = denseProblem(1, 2, 2, 40, 40, 128, DType::BF16);
  softcap.softcap = 30.0f;
  softcap.mask = Mask::Causal;
  Problem alibi = denseProblem(1, 4, 4, 30, 50, 64, DType::F32);
  alibi.alibi = true;
  Problem slopes = alibi;
  slopes.alibiSlopes = {0.5f, 0.25f, 0.125f, 0.0625f};
  slopes.mask = Mask::Causal;
  // Sk < Sq under a top-left causal mask... every row sees key 0; under
  // bottom-right the first rows see none: lse = -inf, o = 0.
  Problem lse = denseProblem(2, 2, 2, 40, 25, 64, DType::F32);
  lse.mask = Mask::CausalBottomRight;
  lse.wantLse = true;
  Problem scale = denseProblem(1, 2, 2, 20, 20, 64, DType::F16);
  scale.scale = 0.3f;
  Problem out = denseProblem(1, 2, 2, 20, 33, 64, DType::BF16);
  out.outDtype = DType::F32;
  return {{"Gqa4to1", gqa},        {"Window", window},
          {"Softcap", softcap},    {"AlibiDefault", alibi},
          {"AlibiSlopes", slopes}, {"LseEmptyRows", lse},
          {"Scale", scale},        {"OutFp32", out}};
}
INSTANTIATE_TEST_SUITE_P(Features, ApiMatchesReference,
                         ::testing::ValuesIn(featureCases()),
                         [](const auto &info) { return info.param.label; });

// Decode: one query against many keys on few heads, with more threads than
// work items: SplitPlanner plans split-KV + combine (chooseNumSplits cuts
// 9000 keys for 8 threads), and the two launches must match the reference.
TEST(ApiDecode, SplitKvMatchesReference) {
  Problem p = denseProblem(1, 2, 1, 1, 9000, 128, DType::BF16);
  p.wantLse = true;
  api::Options options;
  options.threads = 8;
  ApiCheck check = checkApi(p, options);
  ASSERT_EQ(check.plan.steps().size(), 2u) << check.plan.describe();
  EXPECT_EQ(check.plan.steps()[0].role, "split-KV forward");
  EXPECT_EQ(check.plan.steps()[1].role, "combine");
  EXPECT_GT(check.plan.workspaceBytes(), 0);
}

// Multi-token decode with GQA groups of 8: rule 0 packs each group's 3 x 8
// rows into one tile (pack_gqa), the grid runs over K/V heads, and O and
// LSE under causal_br must still match the reference.
TEST(ApiDecode, PacksGqaGroups) {
  Problem p = denseProblem(2, 16, 2, 3, 700, 128, DType::BF16);
  p.mask = Mask::CausalBottomRight;
  p.wantLse = true;
  api::Options options;
  options.threads = 2;
  ApiCheck check = checkApi(p, options);
  ASSERT_EQ(check.plan.steps().size(), 1u) << check.plan.describe();
  const api::PlanStep &step = check.plan.steps()[0];
  EXPECT_NE(step.kernel.find("_pgqa_"), std::string::npos) << step.kernel;
  EXPECT_EQ(step.workItems, 2 * 2) << step.grid; // batch x heads_kv x 1 tile
  EXPECT_NE(step.grid.find("heads_kv"), std::string::npos) << step.grid;
  EXPECT_NE(check.plan.describe().find("0 pack: "), std::string::npos)
      << check.plan.describe();
}

// A GPU plan made on a machine without the GPU cannot know its SM count,
// which sizes GPU split-KV: it stays one pass and says why.
TEST(ApiDecode, GpuPlanWithoutDriverStaysSinglePass) {
  auto driver = fmhajit::CudaDriver::get();
  if (driver)
    GTEST_SKIP()
        << "a CUDA driver is present: ApiCudaSplit covers this machine";
  llvm::consumeError(driver.takeError());
  Problem p = denseProblem(1, 8, 1, 1, 8000, 128, DType::BF16);
  p.device = api::Device::Cuda;
  api::Options options;
  options.load = false;
  options.target = "sm_90a";
  api::Result<api::Plan> plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_EQ(plan->steps().size(), 1u) << plan->describe();
  EXPECT_NE(plan->describe().find(
                "sized by the GPU's SM count, which needs its driver"),
            std::string::npos)
      << plan->describe();
}

// fp8 on sm_90a from 4096 queries: the plan's kernel reads V^T, which its
// pass writes into the workspace, so the plan asks for one (V^T's bytes:
// batch x K/V heads x dv x keys rounded up to 64), and shorter rows do not.
// Planned without loading, so no GPU is needed (with one, a split tail's
// partials may follow V^T).
TEST(ApiPlan, Fp8PrefillKeepsVTransposedInTheWorkspace) {
  api::Options options;
  options.load = false;
  options.target = "sm_90a";
  Problem p = denseProblem(2, 16, 4, 8100, 8100, 128, DType::F8E4M3);
  p.device = api::Device::Cuda;
  api::Result<api::Plan> plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_EQ(plan->steps().size(), 1u) << plan->describe();
  EXPECT_NE(plan->steps().front().kernel.find("_vpt_"), std::string::npos)
      << plan->describe();
  // Where a driver reports the SMs, the plan may also split its last round
  // of items by keys, and their partials follow V^T in the workspace.
  auto expectWorkspace = [](const api::Plan &plan, int64_t valuesT) {
    if (plan.steps().front().grid.find("parts by keys") != std::string::npos)
      EXPECT_GT(plan.workspaceBytes(), valuesT) << plan.describe();
    else
      EXPECT_EQ(plan.workspaceBytes(), valuesT) << plan.describe();
  };
  expectWorkspace(*plan, int64_t(2) * 4 * 128 * 8128); // 8100 -> 8128
  Problem shortRows = denseProblem(2, 16, 4, 2048, 2048, 128, DType::F8E4M3);
  shortRows.device = api::Device::Cuda;
  api::Result<api::Plan> short_ = api::plan(shortRows, options);
  ASSERT_TRUE(short_.ok()) << short_.status().toString();
  EXPECT_EQ(short_->steps().front().kernel.find("_vpt_"), std::string::npos)
      << short_->describe();
  expectWorkspace(*short_, 0);
}

//===-- Errors: a Status that says what to change -------------------------===//

struct BadProblem {
  std::string label;
  Problem problem;
  StatusCode code;
  std::string says;
  std::string target = "";
};

void PrintTo(const BadProblem &c, std::ostream *os) { *os << c.label; }

class ApiRefuses : public ::testing::TestWithParam<BadProblem> {};

TEST_P(ApiRefuses, WithAStatus) {
  api::Options options;
  options.target = GetParam().target;
  expectPlanRefused(GetParam().problem, GetParam().code, GetParam().says,
                    options);
}

std::vector<BadProblem> badProblems() {
  Problem ok = denseProblem(1, 4, 4, 16, 16, 64, DType::F32);
  std::vector<BadProblem> cases;
  auto add = [&](std::string label, auto edit, StatusCode code,
                 std::string says, std::string target = "") {
    Problem p = ok;
    edit(p);
    cases.push_back(
        {std::move(label), p, code, std::move(says), std::move(target)});
  };
  add(
      "HeadDim", [](Problem &p) { p.headDim = 72; },
      StatusCode::InvalidArgument,
      "headDim 72 is not supported on host; use one of 32, 64");
  add(
      "Heads",
      [](Problem &p) {
        p.headsQ = 6;
        p.headsKv = 4;
      },
      StatusCode::InvalidArgument, "heads_q 6 is not a multiple of heads_kv 4");
  add(
      "WindowWithoutMask", [](Problem &p) { p.windowLeft = 8; },
      StatusCode::InvalidArgument, "set mask = Mask::Window");
  add(
      "HalfVarlen", [](Problem &p) { p.cuSeqlensQ = {0, 4}; },
      StatusCode::InvalidArgument,
      "varlen needs both cuSeqlensQ and cuSeqlensK");
  add(
      "VarlenBatch",
      [](Problem &p) { p.cuSeqlensQ = p.cuSeqlensK = {0, 4, 9, 12}; },
      StatusCode::InvalidArgument, "set batch = 3");
  add(
      "CuSeqlensFalling",
      [](Problem &p) {
        p.cuSeqlensQ = p.cuSeqlensK = {0, 4, 2};
        p.batch = 2;
      },
      StatusCode::InvalidArgument, "never decreasing");
  add(
      "OverlappingOutput",
      [](Problem &p) { p.o = TensorLayout::strided(0, 64, 64); },
      StatusCode::InvalidArgument, "overlap");
  add(
      "NegativeStride",
      [](Problem &p) { p.k = TensorLayout::strided(0, -256, 64); },
      StatusCode::InvalidArgument, "negative stride");
  add(
      "Fp8OnHost", [](Problem &p) { p.dtype = DType::F8E4M3; },
      StatusCode::InvalidArgument, "dtype fp8_e4m3 is not supported on host");
  add(
      "NegativeSoftcap", [](Problem &p) { p.softcap = -1; },
      StatusCode::InvalidArgument,
      "softcap must be 0 (off) or a finite value > 0");
  add(
      "SlopesWithoutAlibi", [](Problem &p) { p.alibiSlopes = {1, 1, 1, 1}; },
      StatusCode::InvalidArgument, "set alibi = true");
  add(
      "SlopeCount",
      [](Problem &p) {
        p.alibi = true;
        p.alibiSlopes = {1};
      },
      StatusCode::InvalidArgument, "give one slope per head");
  add(
      "ZeroLength", [](Problem &p) { p.seqlenQ = 0; },
      StatusCode::InvalidArgument, "must both be >= 1");
  add(
      "GpuTargetOnHost", [](Problem &) {}, StatusCode::InvalidArgument,
      "does not run on device host", "sm_90a");
  add(
      "UnknownTarget", [](Problem &) {}, StatusCode::InvalidArgument,
      "target sm_99 is unknown", "sm_99");
  return cases;
}
INSTANTIATE_TEST_SUITE_P(BadProblems, ApiRefuses,
                         ::testing::ValuesIn(badProblems()),
                         [](const auto &info) { return info.param.label; });

TEST(ApiRefuses, EveryProblemAtOnce) {
  Problem p = denseProblem(1, 4, 4, 16, 16, 72, DType::F32);
  p.windowLeft = 3;
  p.softcap = -2;
  api::Result<api::Plan> plan = api::plan(p, {});
  ASSERT_FALSE(plan.ok());
  const std::string &m = plan.status().message();
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 2) << m;
}

class ApiRun : public ::testing::Test {
protected:
  static api::Plan planFor(const Problem &p, bool load = true) {
    api::Options options;
    options.cacheDir = apiCacheDir();
    options.load = load;
    api::Result<api::Plan> plan = api::plan(p, options);
    EXPECT_TRUE(plan.ok()) << plan.status().toString();
    return plan.ok() ? *plan : api::Plan();
  }
  std::vector<float> q = std::vector<float>(4 * 16 * 64, 0.5f), o = q;
};

TEST_F(ApiRun, RefusesAnEmptyPlan) {
  api::Status s =
      api::run(api::Plan(), {q.data(), q.data(), q.data(), o.data()});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the plan is empty"), std::string::npos);
}

TEST_F(ApiRun, RefusesAnUnloadedPlan) {
  api::Plan plan =
      planFor(denseProblem(1, 4, 4, 16, 16, 64, DType::F32), /*load=*/false);
  EXPECT_FALSE(plan.loaded());
  api::Status s = api::run(plan, {q.data(), q.data(), q.data(), o.data()});
  EXPECT_NE(s.message().find("Options::load = false"), std::string::npos)
      << s.message();
}

TEST_F(ApiRun, RefusesMissingTensors) {
  Problem p = denseProblem(1, 4, 4, 16, 16, 64, DType::F32);
  p.wantLse = true;
  api::Plan plan = planFor(p);
  api::Status noQ = api::run(plan, {nullptr, q.data(), q.data(), o.data()});
  EXPECT_NE(noQ.message().find("q, k, v and o must all point"),
            std::string::npos);
  api::Status noLse = api::run(plan, {q.data(), q.data(), q.data(), o.data()});
  EXPECT_NE(noLse.message().find("set Tensors::lse"), std::string::npos)
      << noLse.message();
}

// Descale factors scale fp8 inputs only; a bad or misplaced one is refused
// before anything runs.
TEST_F(ApiRun, RefusesDescalesOutsideFp8) {
  api::Plan plan = planFor(denseProblem(1, 4, 4, 16, 16, 64, DType::F32));
  api::Tensors t{q.data(), q.data(), q.data(), o.data()};
  t.descaleV = 2;
  api::Status scaled = api::run(plan, t);
  EXPECT_EQ(scaled.code(), StatusCode::InvalidArgument);
  EXPECT_NE(scaled.message().find("scale fp8 inputs only"), std::string::npos)
      << scaled.message();
  t.descaleV = 1;
  t.descaleQ = 0;
  api::Status zero = api::run(plan, t);
  EXPECT_NE(zero.message().find("finite and > 0"), std::string::npos)
      << zero.message();
  t.descaleQ = 1;
  EXPECT_TRUE(api::run(plan, t).ok());
}

TEST(ApiPlan, DescribesItself) {
  Problem p = denseProblem(2, 8, 2, 128, 128, 64, DType::BF16);
  p.mask = Mask::Causal;
  p.q = p.k = p.v = TensorLayout::bhsd();
  api::Options options;
  options.load = false;
  api::Result<api::Plan> plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  std::string text = plan->describe();
  for (const char *words :
       {"plan for target host (device host)", "heads 8 q / 2 kv (GQA 4:1)",
        "layouts q BHSD k BHSD v BHSD o BSHD",
        "forward fmha_fwd_bf16_d64_causal_m64n64w1s1_vector_host",
        "2 x 8 x 2 (batch x heads_q x query tiles of 64) = 32 work items",
        "1 features: ", "2 tiles: ", "3 priority: ", "not loaded"})
    EXPECT_NE(text.find(words), std::string::npos)
        << "missing '" << words << "' in\n"
        << text;
  EXPECT_EQ(api::Plan().describe().find("an empty plan"), 0u);
}

TEST(ApiWarmup, CompilesAProfileAndRefusesUnknownOnes) {
  api::Status ok = api::warmup("smoke", "host", apiCacheDir());
  EXPECT_TRUE(ok.ok()) << ok.toString();
  api::Status profile = api::warmup("nope", "host", apiCacheDir());
  EXPECT_EQ(profile.code(), StatusCode::InvalidArgument);
  EXPECT_NE(profile.message().find("unknown profile"), std::string::npos)
      << profile.message();
  api::Status target = api::warmup("smoke", "sm_99", apiCacheDir());
  EXPECT_NE(target.message().find("target sm_99 is unknown"),
            std::string::npos);
}

// The first autotuned plan measures and stores; the second reuses it.
TEST(ApiAutotune, StoresTheWinnerAndReusesIt) {
  Problem p = denseProblem(1, 2, 2, 24, 64, 64, DType::F32);
  api::Options options;
  options.autotune = true;
  options.threads = 1;
  ApiCheck first = checkApi(p, options);
  ASSERT_FALSE(first.plan.timings().empty());
  EXPECT_LE(first.plan.timings().front().ms, first.plan.timings().back().ms);
  EXPECT_EQ(first.plan.steps().front().kernel,
            first.plan.timings().front().kernel);
  auto said = [](const api::Plan &plan, const char *words) {
    for (const std::string &d : plan.decisions())
      if (d.find(words) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(said(first.plan, "autotune: measured, stored in"));
  ApiCheck second = checkApi(p, options);
  EXPECT_TRUE(second.plan.timings().empty());
  EXPECT_TRUE(said(second.plan, "autotune: reused"));
  EXPECT_EQ(second.plan.steps().front().kernel,
            first.plan.steps().front().kernel);
}

} // namespace
