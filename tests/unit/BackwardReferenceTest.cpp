//===- BackwardReferenceTest.cpp - The reference gradients, by differences ===//
//
// The backward kernels are checked against referenceBackward, so it is
// checked here against something independent: central finite differences
// of L = sum(dO * O), O from the forward reference, on every element of Q,
// K and V of a small problem with every score modifier (softcap, ALiBi, a
// bottom-right causal mask whose first rows see no key) and GQA.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/BackwardReference.h"
#include "runtime/numerics/Reference.h"
#include "gtest/gtest.h"
#include <cmath>
#include <random>

using namespace fmhajit;

namespace {

std::vector<float> randomValues(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float &e : x)
    e = dist(gen);
  return x;
}

struct Inputs {
  std::vector<float> q, k, v, dO;
};

double loss(const KernelSpec &spec, const AttentionProblem &p,
            const Inputs &in) {
  ReferenceOutput out = referenceForward(spec, p, in.q, in.k, in.v);
  double l = 0;
  for (size_t i = 0; i < out.o.size(); ++i)
    l += in.dO[i] * out.o[i];
  return l;
}

/// dL/dx[i] by central differences, with the steps the floats actually took.
double difference(const KernelSpec &spec, const AttentionProblem &p, Inputs &in,
                  std::vector<float> &x, size_t i) {
  const float h = 1e-3f, saved = x[i];
  float up = saved + h, down = saved - h;
  x[i] = up;
  double lUp = loss(spec, p, in);
  x[i] = down;
  double lDown = loss(spec, p, in);
  x[i] = saved;
  return (lUp - lDown) / (double(up) - double(down));
}

TEST(BackwardReference, MatchesFiniteDifferences) {
  KernelSpec spec;
  spec.d = spec.dv = 16;
  spec.mask = Mask::CausalBr;
  spec.bias = Bias::Alibi;
  spec.softcap = true;
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.headsQ = 4, p.headsKv = 2, p.seqlenQ = 6, p.seqlenK = 5;
  p.softcap = 2.0f; // small enough that tanh's curve matters
  p.scale = 0.5f;
  if (llvm::Error err = p.validate(spec))
    FAIL() << llvm::toString(std::move(err));
  Inputs in{randomValues(numElements(p.qShape()), 1),
            randomValues(numElements(p.kShape()), 2),
            randomValues(numElements(p.vShape()), 3),
            randomValues(numElements(p.oShape()), 4)};
  ReferenceGrads g = referenceBackward(spec, p, in.q, in.k, in.v, in.dO);
  struct Tensor {
    const char *name;
    std::vector<float> &x;
    const std::vector<double> &grad;
  } tensors[] = {{"dq", in.q, g.dq}, {"dk", in.k, g.dk}, {"dv", in.v, g.dv}};
  double largest = 0;
  for (Tensor &t : tensors)
    for (size_t i = 0; i < t.x.size(); ++i) {
      double fd = difference(spec, p, in, t.x, i);
      EXPECT_NEAR(t.grad[i], fd, 1e-5 + 1e-4 * std::abs(fd))
          << t.name << "[" << i << "]";
      largest = std::max(largest, std::abs(fd));
    }
  EXPECT_GT(largest, 0.1); // the gradients are not all (near) zero
  // Query row 0 sees no key (Sq > Sk under causal_br): exactly zero.
  for (int64_t e = 0; e < p.headsQ * p.d; ++e)
    EXPECT_EQ(g.dq[e], 0.0) << "dq of row 0, element " << e;
}

// Under varlen the reference must compute each sequence as the dense
// problem of that sequence alone: the packed rows of sequence b are its
// rows, at cu_seqlens[b].
TEST(BackwardReference, VarlenIsEachSequenceAlone) {
  KernelSpec spec;
  spec.d = spec.dv = 16;
  spec.mask = Mask::Causal;
  spec.varlen = true;
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.headsQ = 2, p.headsKv = 1;
  p.seqlensQ = {3, 5}, p.seqlensK = {6, 2};
  p.batch = 2;
  if (llvm::Error err = p.validate(spec))
    FAIL() << llvm::toString(std::move(err));
  Inputs in{randomValues(numElements(p.qShape()), 5),
            randomValues(numElements(p.kShape()), 6),
            randomValues(numElements(p.vShape()), 7),
            randomValues(numElements(p.oShape()), 8)};
  ReferenceGrads g = referenceBackward(spec, p, in.q, in.k, in.v, in.dO);
  KernelSpec dense = spec;
  dense.varlen = false;
  int64_t firstQ = 0, firstK = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    AttentionProblem one = AttentionProblem::forSpec(dense);
    one.headsQ = 2, one.headsKv = 1;
    one.seqlenQ = p.seqlensQ[b], one.seqlenK = p.seqlensK[b];
    size_t qRow = 2 * 16, kRow = 16; // elements per packed row
    auto slice = [](const std::vector<float> &x, int64_t first, int64_t rows,
                    size_t width) {
      return std::vector<float>(x.begin() + first * width,
                                x.begin() + (first + rows) * width);
    };
    ReferenceGrads alone =
        referenceBackward(dense, one, slice(in.q, firstQ, one.seqlenQ, qRow),
                          slice(in.k, firstK, one.seqlenK, kRow),
                          slice(in.v, firstK, one.seqlenK, kRow),
                          slice(in.dO, firstQ, one.seqlenQ, qRow));
    for (size_t e = 0; e < alone.dq.size(); ++e)
      ASSERT_EQ(g.dq[firstQ * qRow + e], alone.dq[e]) << "dq, sequence " << b;
    for (size_t e = 0; e < alone.dk.size(); ++e) {
      ASSERT_EQ(g.dk[firstK * kRow + e], alone.dk[e]) << "dk, sequence " << b;
      ASSERT_EQ(g.dv[firstK * kRow + e], alone.dv[e]) << "dv, sequence " << b;
    }
    firstQ += one.seqlenQ, firstK += one.seqlenK;
  }
}

} // namespace
