//===- HostVariantTensorTest.cpp - Variants that read run-time tensors ----===//
//
// Variants that read tensors with fmhajit_tensor run through the public API
// on the host into NaN-poisoned O and LSE, and are compared with the
// float64 reference, whose score_mod/mask_mod are the same lookups written
// again here on the same tables (docs/variants.md#run-time-tensors):
//  - examples/variants/relative_position_table.cpp, a learned bias indexed
//    by q - k clamped to 128, whose table has rows for fewer heads than the
//    problem (the last head reads 0 everywhere), with GQA, two sequences,
//    ragged lengths, single-pass and split-KV;
//  - a key-padding mask read from a tensor, for which plan() builds no
//    block map (it has no tensor) and says so;
//  - autotuning, which times kernels before any tensor is given;
//  - run()'s refusals: a missing, extra, empty or null tensor.
//
//===----------------------------------------------------------------------===//
#include "compiler/variants/VariantCompiler.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/Reference.h"
#include "tests/e2e/ApiTesting.h"
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
constexpr int64_t kMaxDistance = 128, kRowLength = 2 * kMaxDistance + 1;

/// The example's table, rows for \p heads heads, values in [-2, 2).
std::vector<float> biasTable(int64_t heads) {
  std::vector<float> table = e2e::uniformValues(size_t(heads * kRowLength), 7);
  for (float &x : table)
    x *= 2;
  return table;
}

/// relative_position_table.cpp, written again: row h, column q - k clamped
/// to [-128, 128] and shifted by 128; a row past the table reads 0.
ReferenceVariant relativePositionMath(const std::vector<float> &table) {
  int64_t rows = int64_t(table.size()) / kRowLength;
  return {[&table, rows](double s, int64_t, int64_t h, int64_t q, int64_t k) {
            if (h >= rows)
              return s;
            int64_t d = std::clamp<int64_t>(q - k, -kMaxDistance, kMaxDistance);
            return s + double(table[size_t(h * kRowLength + d + kMaxDistance)]);
          },
          nullptr};
}

/// Inputs, outputs and the reference of one host problem.
struct HostRun {
  api::Problem p;
  AttentionProblem a;
  KernelSpec features;
  std::vector<float> q, k, v, o, lse;

  explicit HostRun(const api::Problem &problem) : p(problem) {
    auto lowered = lowerProblem(p, "host");
    EXPECT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
    if (!lowered)
      return;
    a = lowered->problem;
    features = lowered->features;
    q = e2e::uniformValues(size_t(a.totalQ() * a.headsQ * 64), 1);
    k = e2e::uniformValues(size_t(a.totalK() * a.headsKv * 64), 2);
    v = e2e::uniformValues(size_t(a.totalK() * a.headsKv * 64), 3);
  }

  /// Runs \p plan on fresh NaN outputs with \p tables as the variant's
  /// tensors.
  api::Status run(const api::Plan &plan,
                  std::vector<api::VariantTensor> tables) {
    o.assign(q.size(), std::nanf(""));
    lse.assign(size_t(a.totalQ() * a.headsQ), std::nanf(""));
    api::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.data()};
    t.variantTensors = std::move(tables);
    return api::run(plan, t);
  }

  CompareResult compare(const ReferenceVariant &math) const {
    ReferenceOutput ref = referenceForward(features, a, q, k, v, math);
    return compareOutputs(o, ref.o, lse, ref.lse, DType::F32);
  }
};

api::Problem tableProblem() {
  api::Problem p;
  p.batch = 2, p.headsQ = 4, p.headsKv = 2;
  p.seqlenQ = 301, p.seqlenK = 333;
  p.headDim = 64;
  p.dtype = api::DType::F32;
  p.scale = 1.0f; // large scores, so that the bias's changes matter
  p.wantLse = true;
  p.variant = e2e::readVariantExample("relative_position_table.cpp");
  p.variantName = "relative_position_table.cpp";
  return p;
}

std::string decisionsOf(const api::Plan &plan) {
  std::string text;
  for (const std::string &d : plan.decisions())
    text += d + "\n";
  return text;
}

class HostVariantTensor : public testing::TestWithParam<bool> {};

// Three of the four heads have a row; the fourth reads 0 (the bounds rule
// at work inside a kernel). GetParam(): split-KV.
TEST_P(HostVariantTensor, RelativePositionTableMatchesTheReference) {
  api::Problem p = tableProblem();
  ASSERT_FALSE(p.variant.empty()) << "cannot read the example";
  std::vector<float> table = biasTable(3);
  api::Options options;
  if (GetParam()) {
    options.kernel = "family=fwd_splitkv,dtype=fp32,d=64,lse=1,variant=" +
                     hashVariant(p.variant).hex;
    options.numSplits = 3;
  }
  auto plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->variantTensorCount(), 1);
  EXPECT_NE(decisionsOf(*plan).find("variant: reads tensor slot 0 "
                                    "(score_mod); run() takes 1 "
                                    "Tensors::variantTensors"),
            std::string::npos)
      << decisionsOf(*plan);
  HostRun r(p);
  api::Status s = r.run(*plan, {{table.data(), int64_t(table.size())}});
  ASSERT_TRUE(s.ok()) << s.message();
  CompareResult result = r.compare(relativePositionMath(table));
  EXPECT_TRUE(result.pass) << result.summary();
}

INSTANTIATE_TEST_SUITE_P(Passes, HostVariantTensor, testing::Bool(),
                         [](const testing::TestParamInfo<bool> &info) {
                           return info.param ? "SplitKv" : "SinglePass";
                         });

// Autotuning times each candidate before any run: the kernels read a
// one-element table of 0 then (plan() has no tensor), and the plan it keeps
// reads the run's.
TEST(HostVariantTensorAutotune, TimesWithoutTheRunsTensors) {
  api::Problem p = tableProblem();
  std::vector<float> table = biasTable(4);
  api::Options options;
  options.autotune = true;
  options.cacheDir = e2e::apiCacheDir();
  auto plan = api::plan(p, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  HostRun r(p);
  api::Status s = r.run(*plan, {{table.data(), int64_t(table.size())}});
  ASSERT_TRUE(s.ok()) << s.message();
  CompareResult result = r.compare(relativePositionMath(table));
  EXPECT_TRUE(result.pass) << result.summary();
}

// A mask read from a tensor: sequence b sees key k where padding[b * 333 +
// k] is 1. plan() has no tensor, so it builds no block map and says so.
TEST(HostVariantTensorMask, KeyPaddingFromATensor) {
  api::Problem p = tableProblem();
  p.mask = api::Mask::Causal;
  p.variant = "bool mask_mod(int b, int h, int q, int k) {\n"
              "  return fmhajit_tensor(0, b * 333L + k) > 0.5f;\n}\n";
  p.variantName = "key_padding.cpp";
  std::vector<float> padding(2 * 333);
  for (size_t i = 0; i < padding.size(); ++i)
    padding[i] = (i % 333) % 7 == 3 || i > 600 ? 0.0f : 1.0f;
  auto plan = api::plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_NE(decisionsOf(*plan).find("block map: none, mask_mod reads tensor "
                                    "slot 0 (mask_mod), which plan() does "
                                    "not have"),
            std::string::npos)
      << decisionsOf(*plan);
  HostRun r(p);
  api::Status s = r.run(*plan, {{padding.data(), int64_t(padding.size())}});
  ASSERT_TRUE(s.ok()) << s.message();
  ReferenceVariant math{nullptr,
                        [&padding](int64_t b, int64_t, int64_t, int64_t k) {
                          return padding[size_t(b * 333 + k)] > 0.5f;
                        }};
  CompareResult result = r.compare(math);
  EXPECT_TRUE(result.pass) << result.summary();
}

// run() takes exactly the tensors the variant reads, each with memory.
TEST(HostVariantTensorRefusals, RunNamesWhatIsMissing) {
  api::Problem p = tableProblem();
  auto plan = api::plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  HostRun r(p);
  std::vector<float> table = biasTable(4);
  api::VariantTensor good{table.data(), int64_t(table.size())};
  struct Refusal {
    std::vector<api::VariantTensor> given;
    const char *says;
  };
  const Refusal refusals[] = {
      {{},
       "the variant reads 1 run-time tensors (fmhajit_tensor's slots) "
       "and Tensors::variantTensors gives 0"},
      {{good, good}, "Tensors::variantTensors gives 2"},
      {{{table.data(), 0}},
       "Tensors::variantTensors[0] needs data and a length of at least 1"},
      {{{nullptr, 5}}, "Tensors::variantTensors[0] needs data"}};
  for (const Refusal &refusal : refusals) {
    api::Status s = r.run(*plan, refusal.given);
    EXPECT_EQ(s.code(), api::StatusCode::InvalidArgument) << s.message();
    EXPECT_NE(s.message().find(refusal.says), std::string::npos) << s.message();
  }
}

// A variant that reads no tensor takes none.
TEST(HostVariantTensorRefusals, NoneForAVariantThatReadsNone) {
  api::Problem p = tableProblem();
  p.variant = "float score_mod(float s, int b, int h, int q, int k) { "
              "return s; }\n";
  auto plan = api::plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->variantTensorCount(), 0);
  HostRun r(p);
  float one = 1;
  api::Status s = r.run(*plan, {{&one, 1}});
  EXPECT_NE(s.message().find("the variant reads 0 run-time tensors"),
            std::string::npos)
      << s.message();
}
} // namespace
