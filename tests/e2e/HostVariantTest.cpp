//===- HostVariantTest.cpp - examples/variants/ on the host ---------------===//
//
// Each example variant runs through the public API on the host and is
// compared with the float64 reference, whose score_mod/mask_mod are the
// same math written here again, independently of the example's source.
//
//===----------------------------------------------------------------------===//
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/Reference.h"
#include "runtime/numerics/Tolerance.h"
#include "tests/e2e/ApiTesting.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
struct Example {
  const char *file; ///< under examples/variants/
  ReferenceVariant math;
  int64_t heads, seqlen;
};

using Score = std::function<double(double, int64_t, int64_t, int64_t, int64_t)>;
using Visible = std::function<bool(int64_t, int64_t, int64_t, int64_t)>;

const Example kExamples[] = {
    {"relative_position_bias.cpp",
     {Score([](double s, int64_t, int64_t h, int64_t q, int64_t k) {
        double distance = std::min<double>(std::llabs(q - k), 128);
        return s - 0.125 * double(h + 1) * std::log2(1 + distance);
      }),
      nullptr},
     3,
     300},
    {"document_mask.cpp",
     {nullptr, Visible([](int64_t, int64_t, int64_t q, int64_t k) {
        return q / 2048 == k / 2048 && k <= q;
      })},
     1,
     2300},
    {"prefix_lm.cpp",
     {nullptr, Visible([](int64_t, int64_t, int64_t q, int64_t k) {
        return k <= q || k < 256;
      })},
     2,
     400},
    {"chunked_local.cpp",
     {nullptr, Visible([](int64_t, int64_t, int64_t q, int64_t k) {
        return q / 128 == k / 128 && k <= q;
      })},
     2,
     400},
    {"softcap_tanh.cpp",
     {Score([](double s, int64_t, int64_t, int64_t, int64_t) {
        return 30 * std::tanh(s / 30);
      }),
      nullptr},
     2,
     300},
    {"alibi.cpp",
     {Score([](double s, int64_t, int64_t h, int64_t q, int64_t k) {
        return s - std::pow(2.0, -double(h + 1)) * double(q - k);
      }),
      Visible([](int64_t, int64_t, int64_t q, int64_t k) { return k <= q; })},
     4,
     300},
};

class HostVariants : public testing::TestWithParam<Example> {};

TEST_P(HostVariants, MatchTheFloat64Reference) {
  const Example &e = GetParam();
  api::Problem p;
  p.headsQ = e.heads;
  p.seqlenQ = e.seqlen;
  p.headDim = 64;
  p.dtype = api::DType::F32;
  p.scale = 1.0f; // large scores, so that score_mod's changes matter
  p.variant = fmhajit::e2e::readVariantExample(e.file);
  p.variantName = e.file;
  ASSERT_FALSE(p.variant.empty()) << "cannot read " << e.file;
  auto plan = api::plan(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  size_t n = size_t(e.heads * e.seqlen * 64);
  std::vector<float> q = fmhajit::e2e::uniformValues(n, 1),
                     k = fmhajit::e2e::uniformValues(n, 2),
                     v = fmhajit::e2e::uniformValues(n, 3);
  std::vector<float> o(n, std::nanf("")); // poison: unwritten rows show
  api::Status s = api::run(*plan, {q.data(), k.data(), v.data(), o.data()});
  ASSERT_TRUE(s.ok()) << s.message();
  auto lowered = lowerProblem(p, "host");
  ASSERT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
  ReferenceOutput ref =
      referenceForward(lowered->features, lowered->problem, q, k, v, e.math);
  CompareResult result = compareOutputs(o, ref.o, {}, {}, DType::F32);
  EXPECT_TRUE(result.pass) << e.file << ": " << result.summary();
}

INSTANTIATE_TEST_SUITE_P(Examples, HostVariants, testing::ValuesIn(kExamples),
                         [](const testing::TestParamInfo<Example> &info) {
                           std::string name = info.param.file;
                           return name.substr(0, name.find('.'));
                         });
} // namespace
