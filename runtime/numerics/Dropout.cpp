//===- Dropout.cpp - The keep-mask of dropout=1, defined once on the host -===//
#include "runtime/numerics/Dropout.h"
#include <cassert>
#include <cmath>

using namespace fmhajit;

// Random123's constants (philox.h): the round multipliers and the Weyl
// sequence that bumps the key between rounds.
static constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
static constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;

std::array<uint32_t, 4> fmhajit::philox4x32x10(std::array<uint32_t, 4> c,
                                               std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kPhiloxM0) * c[0];
    uint64_t p1 = uint64_t(kPhiloxM1) * c[2];
    auto hi = [](uint64_t x) { return uint32_t(x >> 32); };
    c = {hi(p1) ^ c[1] ^ key[0], uint32_t(p1), hi(p0) ^ c[3] ^ key[1],
         uint32_t(p0)};
    key = {key[0] + kPhiloxW0, key[1] + kPhiloxW1};
  }
  return c;
}

uint32_t fmhajit::dropoutThreshold(float p) {
  assert(p >= 0 && p < 1 && "dropout p is in [0, 1)");
  double t = std::floor(double(p) * 4294967296.0);
  return t >= 4294967295.0 ? 0xffffffffu : uint32_t(t);
}

float fmhajit::dropoutScale(float p) { return float(1.0 / (1.0 - double(p))); }

bool DropoutMask::keeps(int64_t b, int64_t h, int64_t q, int64_t k) const {
  std::array<uint32_t, 4> counter = {uint32_t(k >> 2), uint32_t(q),
                                     uint32_t(b * headsQ + h), params.offset};
  std::array<uint32_t, 2> key = {uint32_t(params.seed),
                                 uint32_t(params.seed >> 32)};
  return philox4x32x10(counter, key)[k & 3] >= threshold;
}
