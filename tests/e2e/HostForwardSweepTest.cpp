//===- HostForwardSweepTest.cpp - A seeded random sweep of specs/shapes ---===//
//
// Forty cases drawn with a fixed seed: random valid specs (dtype, head dims,
// mask, softcap, alibi, lse, varlen, tile, target) on random shapes, so that
// combinations no table row thought of are tried too. The draw is
// deterministic: a failure names its case and reproduces.
//
//===----------------------------------------------------------------------===//
#include "ForwardHarness.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "gtest/gtest.h"
#include <random>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

constexpr uint64_t kSweepSeed = 0x5eed2024;
constexpr unsigned kSweepCases = 40;

// Draws reduce std::mt19937_64's output, which the standard fixes, by hand:
// the <random> distributions differ between standard libraries.
int64_t uniform(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

bool chance(std::mt19937_64 &rng, double p) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53 < p;
}

template <typename T, size_t N>
const T &pick(std::mt19937_64 &rng, const T (&values)[N]) {
  return values[uniform(rng, 0, N - 1)];
}

/// A random spec text that validateSpec accepts (drawn again until it does).
std::string drawSpec(std::mt19937_64 &rng) {
  static const char *const dtypes[] = {"fp32", "fp16", "bf16"};
  static const char *const dims[] = {"d=32",  "d=64",  "d=80",
                                     "d=96",  "d=128", "d=160",
                                     "d=192", "d=256", "d=192,dv=128"};
  static const char *const masks[] = {"none", "causal", "causal_br", "window"};
  static const char *const tiles[] = {"",
                                      "",
                                      "",
                                      "bm=16,bn=16",
                                      "bm=32,bn=16",
                                      "bm=16,bn=64",
                                      "bm=128,bn=32",
                                      "bm=32,bn=64"};
  static const char *const targets[] = {
      "", "", "", "", ",target=x86-64-v3", ",target=x86-64-v4"};
  while (true) {
    std::string spec = std::string("family=fwd,dtype=") + pick(rng, dtypes) +
                       "," + pick(rng, dims) + ",mask=" + pick(rng, masks);
    if (chance(rng, 0.3))
      spec += ",softcap=1";
    if (chance(rng, 0.3))
      spec += ",bias=alibi";
    if (chance(rng, 0.5))
      spec += ",lse=1";
    if (chance(rng, 0.3))
      spec += ",varlen=1";
    if (const char *tile = pick(rng, tiles); *tile)
      spec += std::string(",") + tile;
    spec += pick(rng, targets);
    auto parsed = parseSpec(spec);
    if (parsed) {
      if (auto resolved = validateSpec(*parsed))
        return spec;
      else
        llvm::consumeError(resolved.takeError());
    } else {
      llvm::consumeError(parsed.takeError());
    }
  }
}

/// A random shape for \p specText: lengths 1..300 (often 1 or near a tile
/// edge), 1..4 query heads with a dividing K/V head count.
Shape drawShape(std::mt19937_64 &rng, const std::string &specText) {
  auto length = [&] {
    static const int64_t edges[] = {1, 1, 15, 16, 17, 63, 64, 65, 127, 129};
    return chance(rng, 0.3) ? pick(rng, edges) : uniform(rng, 1, 300);
  };
  static const std::pair<int64_t, int64_t> heads[] = {
      {1, 1}, {2, 1}, {2, 2}, {3, 1}, {3, 3}, {4, 1}, {4, 2}, {4, 4}};
  auto [hq, hkv] = pick(rng, heads);
  Shape shape;
  if (specText.find("varlen=1") != std::string::npos) {
    std::vector<int64_t> q, k;
    for (int64_t b = 0, n = uniform(rng, 1, 4); b < n; ++b) {
      q.push_back(length());
      k.push_back(length());
    }
    shape = Shape::varlen(q, k, hq, hkv);
  } else {
    shape = Shape::dense(uniform(rng, 1, 2), hq, hkv, length(), length());
  }
  auto side = [&] {
    return chance(rng, 0.25) ? int64_t(-1) : uniform(rng, 0, 40);
  };
  int64_t left = side();
  shape.window(left, side());
  if (chance(rng, 0.5))
    shape.softcap(static_cast<float>(uniform(rng, 1, 30)));
  if (chance(rng, 0.3))
    shape.scale(0.05f * static_cast<float>(uniform(rng, 1, 10)));
  if (chance(rng, 0.5))
    shape.slopes();
  return shape;
}

std::vector<ForwardCase> sweepCases() {
  std::mt19937_64 rng(kSweepSeed);
  std::vector<ForwardCase> cases;
  for (unsigned i = 0; i < kSweepCases; ++i) {
    std::string spec = drawSpec(rng);
    Shape shape = drawShape(rng, spec);
    cases.push_back({"case" + std::to_string(i), spec, shape, kSweepSeed + i});
  }
  return cases;
}

class HostForwardSweep : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(HostForwardSweep, MatchesReference) { expectCasePasses(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Random, HostForwardSweep,
                         ::testing::ValuesIn(sweepCases()),
                         [](const ::testing::TestParamInfo<ForwardCase> &info) {
                           return testName(info.param.label);
                         });

} // namespace
