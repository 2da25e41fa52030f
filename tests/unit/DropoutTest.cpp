//===- DropoutTest.cpp - The reference's Philox and dropout keep-mask
//------===//
//
// The float64 reference regenerates the kernels' keep-mask with its own
// Philox4x32-10 (runtime/numerics/Dropout.h); these tests check that
// implementation against Random123's published known answers, and the
// mask's keep rate against a binomial bound, so that a kernel agreeing with
// the reference agrees with Philox itself.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/Dropout.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;

namespace {

// Random123's tests/kat_vectors (github.com/DEShawResearch/random123), the
// three "philox4x32 10" lines: counter (4 words), key (2 words), result.
struct KnownAnswer {
  std::array<uint32_t, 4> counter;
  std::array<uint32_t, 2> key;
  std::array<uint32_t, 4> result;
};
const KnownAnswer kKnownAnswers[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, MatchesRandom123KnownAnswers) {
  for (const KnownAnswer &a : kKnownAnswers)
    EXPECT_EQ(philox4x32x10(a.counter, a.key), a.result)
        << "counter " << std::hex << a.counter[0] << " key " << a.key[0];
}

TEST(Dropout, ThresholdIsPTimes2To32) {
  EXPECT_EQ(dropoutThreshold(0.0f), 0u);
  EXPECT_EQ(dropoutThreshold(0.5f), 0x80000000u);
  EXPECT_EQ(dropoutThreshold(0.25f), 0x40000000u);
  EXPECT_EQ(dropoutThreshold(std::nextafter(1.0f, 0.0f)), 0xffffff00u);
  EXPECT_FLOAT_EQ(dropoutScale(0.25f), 4.0f / 3.0f);
}

TEST(Dropout, ZeroProbabilityKeepsEverything) {
  DropoutMask mask({0.0f, 0x1234, 7}, 3);
  for (int64_t k = 0; k < 64; ++k)
    EXPECT_TRUE(mask.keeps(1, 2, 5, k));
}

// The mask is Philox of (k / 4, q, b * headsQ + h, offset) under the key
// (seed lo, seed hi), word k % 4: spelled out here for a few elements.
TEST(Dropout, MaskIsPhiloxOfThePosition) {
  DropoutParams params{0.5f, 0x0123456789abcdefull, 11};
  DropoutMask mask(params, 5);
  for (auto [b, h, q, k] : {std::array<int64_t, 4>{0, 0, 0, 0},
                            {1, 4, 33, 7},
                            {3, 2, 1000, 4097},
                            {0, 1, 2, 3}}) {
    std::array<uint32_t, 4> r =
        philox4x32x10({uint32_t(k / 4), uint32_t(q), uint32_t(b * 5 + h), 11},
                      {0x89abcdef, 0x01234567});
    EXPECT_EQ(mask.keeps(b, h, q, k), r[k % 4] >= 0x80000000u)
        << b << " " << h << " " << q << " " << k;
  }
}

/// Kept elements of a [heads, queries, keys] block: n Bernoulli(1 - p)
/// draws if Philox is a good generator. The bound is 6 standard deviations
/// (a false alarm about once in 5e8 seeds; the seeds here are fixed, so the
/// test is deterministic), which a threshold off by 1% of p already fails.
void expectKeepRate(float p, uint64_t seed, uint32_t offset) {
  DropoutMask mask({p, seed, offset}, 4);
  int64_t n = 0, kept = 0;
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t q = 0; q < 64; ++q)
      for (int64_t k = 0; k < 256; ++k, ++n)
        kept += mask.keeps(1, h, q, k);
  double mean = n * (1.0 - p), sd = std::sqrt(n * p * (1.0 - p));
  EXPECT_LE(std::abs(kept - mean), 6 * sd)
      << "p " << p << ": kept " << kept << " of " << n;
}

TEST(Dropout, KeepRateIsBinomial) {
  for (float p : {0.1f, 0.25f, 0.5f, 0.9f})
    expectKeepRate(p, 42, 0);
  expectKeepRate(0.3f, 0xffffffffffffffffull, 0xffffffffu);
}

// Different offsets (and seeds) give independent masks: two masks of
// keep rate 1/2 agree on about half the elements.
TEST(Dropout, OffsetsAndSeedsGiveIndependentMasks) {
  DropoutMask a({0.5f, 9, 0}, 2), b({0.5f, 9, 1}, 2), c({0.5f, 10, 0}, 2);
  int64_t n = 0, sameOffset = 0, sameSeed = 0;
  for (int64_t q = 0; q < 128; ++q)
    for (int64_t k = 0; k < 128; ++k, ++n) {
      sameOffset += a.keeps(0, 1, q, k) == b.keeps(0, 1, q, k);
      sameSeed += a.keeps(0, 1, q, k) == c.keeps(0, 1, q, k);
    }
  double sd = std::sqrt(n * 0.25);
  EXPECT_LE(std::abs(sameOffset - n / 2.0), 6 * sd);
  EXPECT_LE(std::abs(sameSeed - n / 2.0), 6 * sd);
}

} // namespace
