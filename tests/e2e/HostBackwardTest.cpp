//===- HostBackwardTest.cpp - Host backward gradients vs float64 ----------===//
//
// Each case JITs the forward (for O and LSE), bwd_dot_do_o and
// bwd_dq_dk_dv on the host, runs them on fresh seeded inputs with dQ, dK,
// dV and D poisoned with NaN, and compares the gradients with the float64
// reference (runtime/numerics/BackwardReference.h). Lengths are odd and
// Sq != Sk so partial tiles of both kinds of work item are exercised; every
// mask, GQA and MQA, softcap and ALiBi, and varlen appear. Then: rows that see
// no key get exactly zero gradients, and results are bitwise identical from run
// to run and across thread counts (the host default is deterministic). Every
// case runs twice: with key and query items, and with head items
// (head_items=1), whose dQ sums (in dQAccum, poisoned with NaN, or in an fp32
// dQ itself) the kernel must zero.
//
//===----------------------------------------------------------------------===//
#include "ForwardHarness.h"
#include "runtime/harness/BackwardCase.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"
#include <cstring>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

struct BackwardTestCase {
  std::string label;
  std::string spec;
  Shape shape;
  uint64_t seed = 1;
};

void PrintTo(const BackwardTestCase &c, std::ostream *os) { *os << c.spec; }

/// Makes \p text's case, run once; fails the calling test on error.
std::unique_ptr<harness::BackwardCase> runCase(const std::string &text,
                                               const Shape &shape,
                                               uint64_t seed,
                                               unsigned threads = 2) {
  std::optional<KernelSpec> spec = resolveSpec(text);
  if (!spec)
    return nullptr;
  HostForwardRunner *runner = HostForwardRunner::shared();
  if (!runner)
    return nullptr;
  auto c = harness::BackwardCase::make(*spec, makeProblem(*spec, shape), seed,
                                       runner->cache(), threads);
  if (!c) {
    ADD_FAILURE() << text << ": " << llvm::toString(c.takeError());
    return nullptr;
  }
  (*c)->run();
  return std::move(*c);
}

class HostBackward : public ::testing::TestWithParam<BackwardTestCase> {};

TEST_P(HostBackward, GradientsMatchReference) {
  const BackwardTestCase &t = GetParam();
  auto c = runCase(t.spec, t.shape, t.seed);
  ASSERT_TRUE(c);
  harness::BackwardCheck check = c->check();
  EXPECT_TRUE(check.pass())
      << encodeName(c->gradSpec()) << ": " << check.summary();
}

const char *const kBwd = "family=bwd_dq_dk_dv,";

BackwardTestCase bwdCase(std::string label, std::string features, Shape shape) {
  return {std::move(label), kBwd + features, std::move(shape)};
}

/// The cases of both schedules.
const BackwardTestCase kCases[] = {
    bwdCase("fp32_d64_none", "dtype=fp32,d=64",
            Shape::dense(2, 2, 2, 100, 100)),
    bwdCase("fp32_d64_causal_gqa", "dtype=fp32,d=64,mask=causal",
            Shape::dense(1, 4, 2, 77, 130)),
    bwdCase("fp32_d32_causal_br_mqa", "dtype=fp32,d=32,mask=causal_br",
            Shape::dense(1, 4, 1, 130, 77)),
    bwdCase("fp32_d96_window", "dtype=fp32,d=96,mask=window",
            Shape::dense(1, 2, 1, 200, 211).window(16, 8)),
    bwdCase("fp32_d64_softcap_alibi_causal",
            "dtype=fp32,d=64,mask=causal,bias=alibi,softcap=1",
            Shape::dense(1, 4, 2, 65, 190).softcap(5.0f).slopes()),
    bwdCase("fp32_d128_softcap", "dtype=fp32,d=128,softcap=1",
            Shape::dense(1, 2, 2, 50, 70).softcap(2.0f)),
    bwdCase("bf16_d128_causal_br", "dtype=bf16,d=128,mask=causal_br",
            Shape::dense(2, 2, 1, 150, 97)),
    bwdCase("fp16_d32_window", "dtype=fp16,d=32,mask=window",
            Shape::dense(1, 4, 1, 200, 200).window(-1, 0)),
    bwdCase("fp16_d80_alibi", "dtype=fp16,d=80,bias=alibi",
            Shape::dense(1, 2, 2, 90, 45)),
    bwdCase("bf16_d256_causal", "dtype=bf16,d=256,mask=causal",
            Shape::dense(1, 2, 1, 33, 47)),
    bwdCase("bf16_d192_dv128", "dtype=bf16,d=192,dv=128",
            Shape::dense(1, 2, 2, 61, 83)),
    bwdCase("bf16_out_fp32_d160", "dtype=bf16,out=fp32,d=160,mask=causal",
            Shape::dense(1, 2, 2, 70, 70)),
    bwdCase("fp32_small_tiles", "dtype=fp32,d=64,mask=causal,bm=32,bn=16",
            Shape::dense(1, 3, 1, 99, 101)),
    // Varlen: sequences shorter than a tile, longer than the key tiles
    // of the others (key items past a sequence's end do nothing), and
    // Sq > Sk with rows that see no key.
    bwdCase("fp32_varlen_causal_br_gqa",
            "dtype=fp32,d=64,mask=causal_br,varlen=1",
            Shape::varlen({1, 77, 200, 33}, {5, 130, 150, 33}, 4, 2)),
    bwdCase("bf16_varlen_window_alibi_softcap",
            "dtype=bf16,d=128,mask=window,bias=alibi,softcap=1,varlen=1",
            Shape::varlen({100, 3, 64}, {100, 3, 64}, 2, 1)
                .window(20, 5)
                .softcap(3.0f)),
    bwdCase("fp16_varlen_none_mqa", "dtype=fp16,d=32,varlen=1",
            Shape::varlen({70, 129}, {200, 9}, 3, 1)),
    // Long enough for many key and query tiles per item and fp32 sums
    // over ~700 terms.
    bwdCase("fp32_d128_causal_long", "dtype=fp32,d=128,mask=causal",
            Shape::dense(1, 4, 2, 701, 733)),
    bwdCase("bf16_d64_long", "dtype=bf16,d=64",
            Shape::dense(2, 2, 2, 640, 515)),
};

/// The spec keys that pick each schedule of the host backward.
const char *const kSchedules[] = {"", ",head_items=1"};

std::vector<BackwardTestCase> withHeadItems() {
  std::vector<BackwardTestCase> cases(std::begin(kCases), std::end(kCases));
  for (BackwardTestCase &c : cases)
    c.spec += kSchedules[1];
  return cases;
}

std::string caseLabel(const ::testing::TestParamInfo<BackwardTestCase> &info) {
  return info.param.label;
}

INSTANTIATE_TEST_SUITE_P(Host, HostBackward, ::testing::ValuesIn(kCases),
                         caseLabel);
INSTANTIATE_TEST_SUITE_P(HeadItems, HostBackward,
                         ::testing::ValuesIn(withHeadItems()), caseLabel);

// Under causal_br with Sq > Sk the first Sq - Sk rows see no key: the
// forward writes LSE = -inf and O = 0, and their dQ must be exactly 0 (P is
// 0, not NaN from -inf - -inf). A window that ends before the first key
// does the same to rows in the middle of a tile.
TEST(HostBackward, RowsThatSeeNoKeyGetZeroGradients) {
  for (const char *schedule : kSchedules)
    for (const char *mask : {"mask=causal_br", "mask=window"}) {
      std::string text =
          std::string(kBwd) + "dtype=fp32,d=64," + mask + schedule;
      Shape shape = Shape::dense(1, 2, 1, 90, 40).window(0, 0);
      auto c = runCase(text, shape, 7);
      ASSERT_TRUE(c);
      harness::BackwardCheck check = c->check();
      EXPECT_TRUE(check.pass()) << text << ": " << check.summary();
      const AttentionProblem &p = c->problem();
      std::vector<float> dq = c->dqPacked();
      size_t blind = 0;
      for (int64_t i = 0; i < p.seqlenQ; ++i)
        for (int64_t h = 0; h < p.headsQ; ++h) {
          if (c->lse()[h * p.seqlenQ + i] != -INFINITY)
            continue;
          ++blind;
          for (int64_t e = 0; e < p.d; ++e)
            ASSERT_EQ(dq[(i * p.headsQ + h) * p.d + e], 0.0f)
                << text << ": row " << i << " head " << h;
        }
      EXPECT_EQ(blind, size_t(2 * 50)) << text; // rows 0..49 of both heads
    }
}

// dO, dQ, dK and dV have strides of their own (KernelArgs' dOStrides...):
// laid out BHSD while Q, K, V and O stay BSHD, a kernel that read or wrote
// a gradient with its input's strides would fail the check. Dense and varlen.
TEST(HostBackward, GradientsInTheirOwnLayout) {
  struct {
    const char *features;
    Shape shape;
  } cases[] = {
      {"dtype=fp32,d=64,mask=causal", Shape::dense(2, 4, 2, 70, 90)},
      {"dtype=bf16,d=32,dv=64,varlen=1",
       Shape::varlen({20, 65}, {40, 7}, 2, 1)},
      {"dtype=fp32,d=64,mask=causal,head_items=1",
       Shape::dense(2, 4, 2, 70, 90)},
      {"dtype=bf16,d=32,dv=64,varlen=1,head_items=1",
       Shape::varlen({20, 65}, {40, 7}, 2, 1)},
  };
  for (const auto &t : cases) {
    std::string text = std::string(kBwd) + t.features;
    std::optional<KernelSpec> spec = resolveSpec(text);
    ASSERT_TRUE(spec);
    HostForwardRunner *runner = HostForwardRunner::shared();
    ASSERT_TRUE(runner);
    auto c = harness::BackwardCase::make(*spec, makeProblem(*spec, t.shape), 5,
                                         runner->cache(), 2,
                                         api::TensorLayout::bhsd());
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    (*c)->run();
    harness::BackwardCheck check = (*c)->check();
    EXPECT_TRUE(check.pass()) << text << ": " << check.summary();
  }
}

bool sameBytes(const HostTensor &x, const HostTensor &y) {
  return x.sizeInBytes() == y.sizeInBytes() &&
         std::memcmp(x.data(), y.data(), x.sizeInBytes()) == 0;
}

void expectDeterministic(const std::string &text) {
  Shape shape = Shape::dense(2, 4, 2, 300, 300);
  auto first = runCase(text, shape, 3, 4);
  ASSERT_TRUE(first);
  std::vector<uint8_t> dq(static_cast<const uint8_t *>(first->dq().data()),
                          static_cast<const uint8_t *>(first->dq().data()) +
                              first->dq().sizeInBytes());
  first->run(); // poisons, runs again on the same inputs
  EXPECT_EQ(std::memcmp(dq.data(), first->dq().data(), dq.size()), 0);
  auto single = runCase(text, shape, 3, 1);
  ASSERT_TRUE(single);
  EXPECT_TRUE(sameBytes(first->dq(), single->dq()));
  EXPECT_TRUE(sameBytes(first->dk(), single->dk()));
  EXPECT_TRUE(sameBytes(first->dv(), single->dv()));
  EXPECT_TRUE(first->check().pass());
}

// Every gradient element has one writer that sums in a fixed order, so the
// results do not depend on which thread ran which item, or how many ran.
// Head items too: each sums its group's dQ alone, key tile after key tile.
TEST(HostBackward, IsDeterministic) {
  for (const char *schedule : kSchedules) {
    SCOPED_TRACE(schedule);
    expectDeterministic(std::string(kBwd) + "dtype=bf16,d=64,mask=causal" +
                        schedule);
  }
}

// A query item sums its dQ over the key tiles it sees from the first, as a
// head item's steps add into it, and dK and dV come from the same steps:
// the two schedules give the same bits.
TEST(HostBackward, SchedulesAgreeBitwise) {
  for (const char *features :
       {"dtype=fp32,d=64,mask=causal", "dtype=bf16,d=128,mask=causal_br"}) {
    std::string text = std::string(kBwd) + features;
    Shape shape = Shape::dense(2, 4, 2, 200, 170);
    auto split = runCase(text, shape, 11);
    auto heads = runCase(text + kSchedules[1], shape, 11);
    ASSERT_TRUE(split && heads);
    EXPECT_TRUE(sameBytes(split->dq(), heads->dq())) << text;
    EXPECT_TRUE(sameBytes(split->dk(), heads->dk())) << text;
    EXPECT_TRUE(sameBytes(split->dv(), heads->dv())) << text;
  }
}

// The steps of the backward are refused as runs of their own.
TEST(HostBackward, OnlyTheGradientFamilyRunsAsACase) {
  std::optional<KernelSpec> spec =
      resolveSpec("family=bwd_dot_do_o,dtype=fp32,d=64");
  ASSERT_TRUE(spec);
  HostForwardRunner *runner = HostForwardRunner::shared();
  ASSERT_TRUE(runner);
  auto c = harness::BackwardCase::make(
      *spec, makeProblem(*spec, Shape::dense(1, 1, 1, 16, 16)), 1,
      runner->cache(), 1);
  ASSERT_FALSE(bool(c));
  EXPECT_NE(llvm::toString(c.takeError()).find("run family=bwd_dq_dk_dv"),
            std::string::npos);
}

} // namespace
