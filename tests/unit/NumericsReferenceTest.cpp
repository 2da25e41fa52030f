//===- NumericsReferenceTest.cpp - The float64 reference forward ----------===//
//
// Tiny cases computed by hand pin down the semantics (masks aligned top-left
// or bottom-right, windows, softcap, ALiBi, rows that see no key); larger
// random cases check that batching, GQA and varlen only change addressing.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/Reference.h"
#include "gtest/gtest.h"
#include <cmath>
#include <limits>

using namespace fmhajit;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

KernelSpec tinySpec(Mask mask, unsigned d = 1) {
  KernelSpec spec;
  spec.dtype = DType::F32;
  spec.d = d;
  spec.mask = mask;
  return spec;
}

/// One sequence, one head, d = dv = 1, scale 1.
AttentionProblem tinyProblem(const KernelSpec &spec, int64_t sq, int64_t sk) {
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.seqlenQ = sq, p.seqlenK = sk, p.scale = 1;
  return p;
}

void expectValid(const KernelSpec &spec, const AttentionProblem &p) {
  if (llvm::Error err = p.validate(spec))
    ADD_FAILURE() << llvm::toString(std::move(err));
}

ReferenceOutput run(const KernelSpec &spec, const AttentionProblem &p,
                    std::vector<float> q, std::vector<float> k,
                    std::vector<float> v) {
  expectValid(spec, p);
  return referenceForward(spec, p, q, k, v);
}

/// With zero keys every visible key scores 0: o is the mean of the visible
/// values v_j = j, and lse = log(count).
void expectVisibleMeans(const KernelSpec &spec, const AttentionProblem &p,
                        std::vector<double> means, std::vector<int> counts) {
  std::vector<float> v;
  for (int64_t j = 0; j < p.seqlenK; ++j)
    v.push_back(static_cast<float>(j));
  ReferenceOutput r = run(spec, p, std::vector<float>(p.seqlenQ, 1.0f),
                          std::vector<float>(p.seqlenK, 0.0f), v);
  for (size_t i = 0; i < means.size(); ++i) {
    EXPECT_DOUBLE_EQ(r.o[i], means[i]) << "row " << i;
    EXPECT_DOUBLE_EQ(r.lse[i], counts[i] ? std::log(counts[i]) : kNegInf)
        << "row " << i;
  }
}

TEST(Reference, SingleQueryIsTheSoftmaxMean) {
  KernelSpec spec = tinySpec(Mask::None);
  ReferenceOutput r = run(spec, tinyProblem(spec, 1, 2), {1}, {1, 2}, {3, 5});
  double e1 = std::exp(1.0), e2 = std::exp(2.0);
  EXPECT_DOUBLE_EQ(r.o[0], (3 * e1 + 5 * e2) / (e1 + e2));
  EXPECT_DOUBLE_EQ(r.lse[0], std::log(e1 + e2));
}

TEST(Reference, DefaultScaleIsInverseSqrtD) {
  KernelSpec spec = tinySpec(Mask::None, 4);
  AttentionProblem p = tinyProblem(spec, 1, 1);
  p.scale = 0;
  ReferenceOutput r = run(spec, p, {1, 1, 1, 1}, {1, 2, 3, 4}, {7, 7, 7, 7});
  EXPECT_DOUBLE_EQ(r.lse[0], 0.5 * 10);
}

TEST(Reference, RowThatSeesNoKeyIsZeroWithMinusInfLse) {
  // Sq = 3 > Sk = 1, bottom-right: only the last query sees the key.
  KernelSpec spec = tinySpec(Mask::CausalBr);
  expectVisibleMeans(spec, tinyProblem(spec, 3, 1), {0, 0, 0}, {0, 0, 1});
}

// The sink is a logit with no value row: in the denominator and the LSE.
TEST(Reference, SinkJoinsTheDenominatorWithNoValue) {
  KernelSpec spec = tinySpec(Mask::None);
  spec.sink = true;
  AttentionProblem p = tinyProblem(spec, 1, 2);
  p.sinks = {float(std::log(2.0))};
  ReferenceOutput r = run(spec, p, {1}, {0, 0}, {3, 5});
  // e^sink = 2, each key e^0 = 1: o = (3 + 5) / 4, lse = log 4.
  EXPECT_NEAR(r.o[0], 2.0, 1e-7);
  EXPECT_NEAR(r.lse[0], std::log(4.0), 1e-7);
}

TEST(Reference, RowThatSeesNoKeyButASinkIsZeroWithTheSinksLse) {
  KernelSpec spec = tinySpec(Mask::CausalBr);
  spec.sink = true;
  AttentionProblem p = tinyProblem(spec, 3, 1);
  p.sinks = {1.5f};
  ReferenceOutput r = run(spec, p, {1, 1, 1}, {0}, {7});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r.o[i], 0.0) << i;
    EXPECT_EQ(r.lse[i], 1.5) << i;
  }
  // The last row sees its key: o = 7 e^0 / (e^1.5 + 1).
  EXPECT_DOUBLE_EQ(r.o[2], 7 / (std::exp(1.5) + 1));
}

TEST(Reference, SinkOfMinusInfinityIsNoSinkAndAHugeOneDoesNotOverflow) {
  KernelSpec plain = tinySpec(Mask::None);
  KernelSpec spec = plain;
  spec.sink = true;
  AttentionProblem p = tinyProblem(spec, 1, 2);
  p.sinks = {-std::numeric_limits<float>::infinity()};
  ReferenceOutput none =
      run(plain, tinyProblem(plain, 1, 2), {1}, {1, 2}, {3, 5});
  ReferenceOutput r = run(spec, p, {1}, {1, 2}, {3, 5});
  EXPECT_EQ(r.o, none.o);
  EXPECT_EQ(r.lse, none.lse);
  p.sinks = {1000.0f};
  r = run(spec, p, {1}, {1, 2}, {3, 5});
  EXPECT_EQ(r.lse[0], 1000.0);
  EXPECT_LT(r.o[0], 1e-300);
}

TEST(Reference, CausalIsTopLeftAligned) {
  KernelSpec spec = tinySpec(Mask::Causal);
  expectVisibleMeans(spec, tinyProblem(spec, 2, 4), {0, 0.5}, {1, 2});
  expectVisibleMeans(spec, tinyProblem(spec, 4, 2), {0, 0.5, 0.5, 0.5},
                     {1, 2, 2, 2});
}

TEST(Reference, CausalBrIsBottomRightAligned) {
  KernelSpec spec = tinySpec(Mask::CausalBr);
  expectVisibleMeans(spec, tinyProblem(spec, 2, 4), {1, 1.5}, {3, 4});
  expectVisibleMeans(spec, tinyProblem(spec, 4, 2), {0, 0, 0, 0.5},
                     {0, 0, 1, 2});
}

TEST(Reference, WindowIsBottomRightAligned) {
  KernelSpec spec = tinySpec(Mask::Window);
  AttentionProblem p = tinyProblem(spec, 5, 5);
  p.windowLeft = 1, p.windowRight = 0; // keys i-1 .. i
  expectVisibleMeans(spec, p, {0, 0.5, 1.5, 2.5, 3.5}, {1, 2, 2, 2, 2});
  p = tinyProblem(spec, 2, 5);
  p.windowLeft = 1, p.windowRight = 1; // keys i+2 .. i+4, clipped to Sk
  expectVisibleMeans(spec, p, {3, 3.5}, {3, 2});
  p.windowLeft = -1, p.windowRight = 0; // unbounded left: causal_br
  expectVisibleMeans(spec, p, {1.5, 2}, {4, 5});
  p.windowLeft = 0, p.windowRight = -1; // unbounded right
  expectVisibleMeans(spec, p, {3.5, 4}, {2, 1});
}

TEST(Reference, SoftcapAppliesToTheScaledScore) {
  KernelSpec spec = tinySpec(Mask::None);
  spec.softcap = true;
  AttentionProblem p = tinyProblem(spec, 1, 2);
  p.scale = 0.5, p.softcap = 2;
  ReferenceOutput r = run(spec, p, {2}, {1, 3}, {3, 5});
  double s0 = 2 * std::tanh(0.5 * 2 / 2), s1 = 2 * std::tanh(0.5 * 6 / 2);
  double w0 = std::exp(s0), w1 = std::exp(s1);
  EXPECT_DOUBLE_EQ(r.o[0], (3 * w0 + 5 * w1) / (w0 + w1));
  EXPECT_DOUBLE_EQ(r.lse[0], std::log(w0 + w1));
}

TEST(Reference, AlibiSubtractsSlopeTimesDistanceFromTheDiagonal) {
  KernelSpec spec = tinySpec(Mask::None);
  spec.bias = Bias::Alibi;
  AttentionProblem p = tinyProblem(spec, 1, 3); // query 0 sits at key 2
  p.alibiSlopes = {0.5f};
  ReferenceOutput r = run(spec, p, {1}, {0, 0, 0}, {1, 2, 4});
  double w[] = {std::exp(-1.0), std::exp(-0.5), 1.0};
  EXPECT_DOUBLE_EQ(r.o[0], (w[0] + 2 * w[1] + 4 * w[2]) / (w[0] + w[1] + w[2]));
  EXPECT_DOUBLE_EQ(r.lse[0], std::log(w[0] + w[1] + w[2]));
}

// The bias is added to the scaled score after the soft-cap (a -inf bias
// removes the key, which a cap would otherwise bring back to -c) and before
// the mask, at [b, h, i, j]: here query 1 of head 1 in sequence 1.
TEST(Reference, ElementwiseBiasIsAddedAfterTheSoftcap) {
  KernelSpec spec = tinySpec(Mask::Causal);
  spec.softcap = true;
  spec.bias = Bias::Elementwise;
  AttentionProblem p = tinyProblem(spec, 2, 3);
  p.batch = 2, p.headsQ = p.headsKv = 2;
  p.scale = 0.5, p.softcap = 2;
  p.bias.assign(2 * 2 * 2 * 3, 0.0f);
  float *row = &p.bias[((1 * 2 + 1) * 2 + 1) * 3]; // b 1, h 1, i 1
  row[0] = -std::numeric_limits<float>::infinity();
  row[1] = 0.75f;
  row[2] = 100.0f; // masked (causal: j <= 1): must not matter
  std::vector<float> q(2 * 2 * 2, 2.0f), k(2 * 3 * 2, 1.0f), v;
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 3; ++j)
      for (int h = 0; h < 2; ++h)
        v.push_back(float(10 * j + h));
  ReferenceOutput r = run(spec, p, q, k, v);
  // Only key 1 is left, so o = v[key 1, head 1] and lse = its score.
  size_t at = (1 * 2 + 1) * 2 + 1; // o [b, i, h]; lse [b, h, i]
  EXPECT_DOUBLE_EQ(r.o[at], 11.0);
  EXPECT_DOUBLE_EQ(r.lse[at], 2 * std::tanh(0.5 * 2 / 2) + 0.75);
  // Elsewhere the bias is 0: row 1 of head 0 sees keys 0 and 1 equally.
  EXPECT_DOUBLE_EQ(r.o[(1 * 2 + 1) * 2 + 0], 5.0);
}

TEST(Reference, ElementwiseBiasValuesMustCoverTheProblem) {
  KernelSpec spec = tinySpec(Mask::None);
  spec.bias = Bias::Elementwise;
  AttentionProblem p = tinyProblem(spec, 2, 3);
  p.bias = {1, 2, 3};
  llvm::Error err = p.validate(spec);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("got 3 bias values for 6"),
            std::string::npos);
}

//===-- Addressing: batch, GQA and varlen ---------------------------------===//

std::vector<float> randomFloats(size_t n, uint64_t seed) {
  HostTensor t(DType::BF16, n);
  t.fillNormal(seed);
  return t.toFloat();
}

/// Rows [first, first + count) of a packed [rows, heads, dim] tensor.
std::vector<float> sliceRows(const std::vector<float> &t, int64_t first,
                             int64_t count, int64_t rowSize) {
  return std::vector<float>(t.begin() + first * rowSize,
                            t.begin() + (first + count) * rowSize);
}

KernelSpec richSpec(bool varlen) {
  KernelSpec spec = tinySpec(Mask::CausalBr, 8);
  spec.dv = 4;
  spec.softcap = true;
  spec.bias = Bias::Alibi;
  spec.varlen = varlen;
  return spec;
}

/// Runs each sequence of \p whole as its own one-sequence problem and
/// expects exactly the same O and LSE.
void expectSameAsPerSequence(const KernelSpec &wholeSpec,
                             const AttentionProblem &whole) {
  expectValid(wholeSpec, whole);
  auto q = randomFloats(numElements(whole.qShape()), 1);
  auto k = randomFloats(numElements(whole.kShape()), 2);
  auto v = randomFloats(numElements(whole.vShape()), 3);
  ReferenceOutput all = referenceForward(wholeSpec, whole, q, k, v);
  KernelSpec spec = wholeSpec;
  spec.varlen = false;
  int64_t firstQ = 0, firstK = 0, hq = whole.headsQ, hkv = whole.headsKv;
  for (int64_t b = 0; b < whole.batch; ++b) {
    AttentionProblem one = whole;
    one.batch = 1, one.seqlensQ.clear(), one.seqlensK.clear();
    one.seqlenQ = whole.seqlenQOf(b), one.seqlenK = whole.seqlenKOf(b);
    ReferenceOutput r =
        run(spec, one, sliceRows(q, firstQ, one.seqlenQ, hq * whole.d),
            sliceRows(k, firstK, one.seqlenK, hkv * whole.d),
            sliceRows(v, firstK, one.seqlenK, hkv * whole.dv));
    for (size_t n = 0; n < r.o.size(); ++n)
      ASSERT_EQ(r.o[n], all.o[firstQ * hq * whole.dv + n]) << b;
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < one.seqlenQ; ++i) {
        int64_t at = whole.isVarlen() ? h * whole.totalQ() + firstQ + i
                                      : (b * hq + h) * whole.seqlenQ + i;
        ASSERT_EQ(r.lse[h * one.seqlenQ + i], all.lse[at]) << b << h << i;
      }
    firstQ += one.seqlenQ, firstK += one.seqlenK;
  }
}

TEST(Reference, VarlenEqualsPerSequenceRuns) {
  KernelSpec spec = richSpec(true);
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = 3, p.headsQ = 4, p.headsKv = 2, p.softcap = 5;
  p.seqlensQ = {3, 1, 5}, p.seqlensK = {4, 6, 2}; // the last has masked rows
  expectSameAsPerSequence(spec, p);
}

TEST(Reference, BatchEqualsPerSequenceRuns) {
  KernelSpec spec = richSpec(false);
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = 3, p.headsQ = 2, p.headsKv = 1, p.softcap = 5;
  p.seqlenQ = 7, p.seqlenK = 5;
  expectSameAsPerSequence(spec, p);
}

TEST(Reference, GqaReadsKvHeadHOverGroup) {
  // Hq = 6 over Hkv = 3 equals Hq = 6 over K/V with each head repeated twice.
  KernelSpec spec = richSpec(false);
  spec.bias = Bias::None, spec.softcap = false;
  AttentionProblem gqa = AttentionProblem::forSpec(spec);
  gqa.batch = 2, gqa.headsQ = 6, gqa.headsKv = 3, gqa.seqlenQ = 4,
  gqa.seqlenK = 5;
  AttentionProblem mha = gqa;
  mha.headsKv = 6;
  auto q = randomFloats(numElements(gqa.qShape()), 4);
  auto k = randomFloats(numElements(gqa.kShape()), 5);
  auto v = randomFloats(numElements(gqa.vShape()), 6);
  auto repeatHeads = [](const std::vector<float> &t, int64_t dim) {
    std::vector<float> out;
    for (size_t row = 0; row < t.size(); row += dim)
      for (int copy = 0; copy < 2; ++copy)
        out.insert(out.end(), t.begin() + row, t.begin() + row + dim);
    return out;
  };
  ReferenceOutput a = run(spec, gqa, q, k, v);
  ReferenceOutput b =
      run(spec, mha, q, repeatHeads(k, gqa.d), repeatHeads(v, gqa.dv));
  EXPECT_EQ(a.o, b.o);
  EXPECT_EQ(a.lse, b.lse);
}

} // namespace
