//===- HostBlockSparsityTest.cpp - Block maps on the host, end to end -----===//
//
// Each case runs a mask_mod variant through the public API on the host
// twice, with the block map (Options::blockSparsity) and without, into
// NaN-poisoned O and LSE, and compares both with the float64 reference,
// whose mask is the same rule written again here. Skipping a block that
// has a visible key, or skipping mask_mod on a block that has a hidden one,
// fails the comparison; the map is also asked to have skipped something
// where the mask leaves whole blocks hidden, so a plan that quietly built
// no map fails too. Lengths are odd (ragged last tiles of the host's
// 192 x 64 tile), and the cases cover varlen, GQA, a mask that reads h, one
// that reads b, the spec's own mask ANDed in, rows that see no key, and
// split-KV.
//
//===----------------------------------------------------------------------===//
#include "compiler/variants/VariantCompiler.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/Reference.h"
#include "tests/e2e/ApiTesting.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
using Visible = std::function<bool(int64_t, int64_t, int64_t, int64_t)>;

struct Case {
  const char *name;
  const char *source; ///< the variant
  Visible math;       ///< the same rule, written again
  int64_t batch, headsQ, headsKv, seqlenQ, seqlenK;
  std::vector<int32_t> varlenQ, varlenK; ///< per-sequence lengths, or empty
  api::Mask mask = api::Mask::None;
  bool skipsBlocks = true; ///< the map must hide some blocks
  const char *kernel = ""; ///< Options::kernel, for split-KV
};

const Case kCases[] = {
    {"DocumentMask",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return q / 300 == k / 300 && k <= q;\n}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) {
       return q / 300 == k / 300 && k <= q;
     },
     1,
     2,
     2,
     1001,
     1001,
     {},
     {}},
    {"PrefixLm",
     "bool mask_mod(int b, int h, int q, int k) { return k <= q || k < 100; "
     "}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) { return k <= q || k < 100; },
     2,
     2,
     1,
     777,
     777,
     {},
     {}},
    {"ChunkedLocal",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return q / 96 == k / 96 && k <= q;\n}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) {
       return q / 96 == k / 96 && k <= q;
     },
     1,
     3,
     3,
     650,
     650,
     {},
     {}},
    {"CausalThroughMaskMod",
     "bool mask_mod(int b, int h, int q, int k) { return k <= q; }\n",
     [](int64_t, int64_t, int64_t q, int64_t k) { return k <= q; },
     1,
     2,
     2,
     333,
     517,
     {},
     {}},
    // A window per query head: the map is per head (mask_mod reads h), and
    // GQA pairs two query heads with each K/V head.
    {"WindowPerHeadGqa",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return k <= q && q - k < 64 * (h + 1);\n}\n",
     [](int64_t, int64_t h, int64_t q, int64_t k) {
       return k <= q && q - k < 64 * (h + 1);
     },
     1,
     4,
     2,
     701,
     701,
     {},
     {}},
    // Documents of a length per sequence: the map is per sequence.
    {"DocumentPerSequence",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return b == 0   ? q / 100 == k / 100\n"
     "         : b == 1 ? q / 250 == k / 250\n"
     "                  : q / 400 == k / 400;\n}\n",
     [](int64_t b, int64_t, int64_t q, int64_t k) {
       int64_t n = b == 0 ? 100 : b == 1 ? 250 : 400;
       return q / n == k / n;
     },
     3,
     1,
     1,
     611,
     611,
     {},
     {}},
    {"VarlenDocuments",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return q / 200 == k / 200 && k <= q;\n}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) {
       return q / 200 == k / 200 && k <= q;
     },
     3,
     2,
     1,
     0,
     0,
     {450, 1, 517},
     {450, 130, 517}},
    // The spec's causal mask ANDed with a mask_mod that alone hides little:
    // the map must honour both.
    {"SpecCausalAndMaskMod",
     "bool mask_mod(int b, int h, int q, int k) { return k % 5 != 3; }\n",
     [](int64_t, int64_t, int64_t q, int64_t k) {
       return k % 5 != 3 && k <= q;
     },
     1,
     1,
     1,
     640,
     640,
     {},
     {},
     api::Mask::Causal},
    // Rows 0..199 see no key: O = 0, LSE = -inf, as without a map.
    {"RowsThatSeeNothing",
     "bool mask_mod(int b, int h, int q, int k) { return q >= 200 && k < q; "
     "}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) { return q >= 200 && k < q; },
     1,
     1,
     1,
     450,
     450,
     {},
     {}},
    // A mask that hides nothing: every block full, none skipped.
    {"AllVisible",
     "bool mask_mod(int b, int h, int q, int k) { return k >= 0; }\n",
     [](int64_t, int64_t, int64_t, int64_t) { return true; },
     1,
     1,
     1,
     300,
     300,
     {},
     {},
     api::Mask::None,
     false},
    {"SplitKv",
     "bool mask_mod(int b, int h, int q, int k) {\n"
     "  return q / 250 == k / 250;\n}\n",
     [](int64_t, int64_t, int64_t q, int64_t k) { return q / 250 == k / 250; },
     1,
     2,
     2,
     5,
     1201,
     {},
     {},
     api::Mask::None,
     true,
     "family=fwd_splitkv,dtype=fp32,d=64,lse=1"},
};

api::Problem problemOf(const Case &c) {
  api::Problem p;
  p.batch = c.batch;
  p.headsQ = c.headsQ;
  p.headsKv = c.headsKv;
  p.seqlenQ = c.seqlenQ;
  p.seqlenK = c.seqlenK;
  auto cumulative = [](const std::vector<int32_t> &lengths) {
    std::vector<int32_t> cu{0};
    for (int32_t n : lengths)
      cu.push_back(cu.back() + n);
    return cu;
  };
  if (!c.varlenQ.empty()) {
    p.cuSeqlensQ = cumulative(c.varlenQ);
    p.cuSeqlensK = cumulative(c.varlenK);
  }
  p.headDim = 64;
  p.dtype = api::DType::F32;
  p.mask = c.mask;
  p.wantLse = true;
  p.variant = c.source;
  p.variantName = std::string(c.name) + ".cpp";
  return p;
}

/// O and LSE of one run, poisoned first.
struct Outputs {
  std::vector<float> o, lse;
};

class HostBlockSparsity : public testing::TestWithParam<Case> {};

TEST_P(HostBlockSparsity, MatchesTheReferenceWithAndWithoutTheMap) {
  const Case &c = GetParam();
  api::Problem p = problemOf(c);
  auto lowered = lowerProblem(p, "host");
  ASSERT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
  const AttentionProblem &a = lowered->problem;
  std::vector<float> q = fmhajit::e2e::uniformValues(a.totalQ() * a.headsQ * 64,
                                                     1),
                     k = fmhajit::e2e::uniformValues(
                         a.totalK() * a.headsKv * 64, 2),
                     v = fmhajit::e2e::uniformValues(
                         a.totalK() * a.headsKv * 64, 3);
  ReferenceOutput ref = referenceForward(lowered->features, a, q, k, v,
                                         ReferenceVariant{nullptr, c.math});
  std::vector<Outputs> outputs;
  for (bool sparse : {true, false}) {
    api::Options options;
    options.blockSparsity = sparse;
    // A pinned kernel names the variant by hash.
    if (*c.kernel)
      options.kernel =
          std::string(c.kernel) + ",variant=" + hashVariant(c.source).hex;
    options.numSplits = *c.kernel ? 3 : 0;
    auto plan = api::plan(p, options);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    std::string decisions;
    for (const std::string &d : plan->decisions())
      decisions += d + "\n";
    bool hasMap = decisions.find("block map:") != std::string::npos;
    EXPECT_EQ(hasMap, sparse) << decisions;
    if (sparse && c.skipsBlocks)
      EXPECT_EQ(decisions.find("block map: 0 of"), std::string::npos)
          << "the map should hide blocks: " << decisions;
    Outputs out{std::vector<float>(a.totalQ() * a.headsQ * 64, std::nanf("")),
                std::vector<float>(a.totalQ() * a.headsQ, std::nanf(""))};
    api::Tensors t{q.data(), k.data(), v.data(), out.o.data()};
    t.lse = out.lse.data();
    api::Status s = api::run(*plan, t);
    ASSERT_TRUE(s.ok()) << s.message();
    CompareResult result =
        compareOutputs(out.o, ref.o, out.lse, ref.lse, DType::F32);
    EXPECT_TRUE(result.pass)
        << (sparse ? "with" : "without") << " the map: " << result.summary();
    outputs.push_back(std::move(out));
  }
  // Skipped blocks add exactly nothing and full blocks' mask is all-true,
  // so the two walks compute the same sums in the same order. (Split-KV
  // cuts the map's list and the range into different parts, so its
  // partial sums differ in rounding.)
  if (!*c.kernel)
    EXPECT_EQ(0, std::memcmp(outputs[0].o.data(), outputs[1].o.data(),
                             outputs[0].o.size() * sizeof(float)))
        << "the map changed O";
}

INSTANTIATE_TEST_SUITE_P(Cases, HostBlockSparsity, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });
} // namespace
