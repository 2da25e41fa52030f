//===- Fp8Test.cpp - Host fp8 conversions and fp8 host tensors ------------===//
//
// The harness quantizes fp8 inputs on the host and the reference reads them
// back, so both directions must be exact: every code decodes to the value
// its format defines, encoding rounds to nearest even and saturates as the
// kernels' cvt.rn.satfinite does, and a code survives a round trip.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/Fp8.h"
#include "runtime/numerics/HalfPrecision.h"
#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/Tolerance.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;

namespace {

class Fp8Format : public ::testing::TestWithParam<DType> {};

TEST_P(Fp8Format, EveryFiniteCodeRoundTrips) {
  DType type = GetParam();
  unsigned finite = 0;
  for (unsigned code = 0; code < 256; ++code) {
    float v = fp8ToFloat(uint8_t(code), type);
    if (!std::isfinite(v))
      continue;
    ++finite;
    // +0 and -0 keep their sign, like every other code.
    EXPECT_EQ(floatToFp8(v, type), code) << "code " << code << " value " << v;
  }
  // e4m3 gives up two NaN codes; e5m2 six NaNs and two infinities.
  EXPECT_EQ(finite, type == DType::F8E4M3 ? 254u : 248u);
}

TEST_P(Fp8Format, HalfwayRoundsToEvenAndLargeSaturates) {
  DType type = GetParam();
  float one = 1.0f, ulp = type == DType::F8E4M3 ? 0.125f : 0.25f;
  // 1 + ulp/2 lies halfway between 1 (even code) and 1 + ulp (odd).
  EXPECT_EQ(fp8ToFloat(floatToFp8(one + ulp / 2, type), type), one);
  // 1 + 3 ulp/2: halfway between 1 + ulp (odd) and 1 + 2 ulp (even).
  EXPECT_EQ(fp8ToFloat(floatToFp8(one + 3 * ulp / 2, type), type),
            one + 2 * ulp);
  float largest = type == DType::F8E4M3 ? 448.0f : 57344.0f;
  EXPECT_EQ(fp8ToFloat(floatToFp8(1e9f, type), type), largest);
  EXPECT_EQ(fp8ToFloat(floatToFp8(-INFINITY, type), type), -largest);
  EXPECT_TRUE(std::isnan(fp8ToFloat(floatToFp8(NAN, type), type)));
}

INSTANTIATE_TEST_SUITE_P(Fp8, Fp8Format,
                         ::testing::Values(DType::F8E4M3, DType::F8E5M2));

TEST(Fp8, KnownValues) {
  EXPECT_EQ(fp8ToFloat(0x7e, DType::F8E4M3), 448.0f);
  EXPECT_TRUE(std::isnan(fp8ToFloat(0x7f, DType::F8E4M3)));
  EXPECT_EQ(fp8ToFloat(0x01, DType::F8E4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8ToFloat(0x08, DType::F8E4M3), std::ldexp(1.0f, -6));
  EXPECT_EQ(fp8ToFloat(0x38, DType::F8E4M3), 1.0f);
  EXPECT_EQ(fp8ToFloat(0xb8, DType::F8E4M3), -1.0f);
  EXPECT_EQ(fp8ToFloat(0x7b, DType::F8E5M2), 57344.0f);
  EXPECT_EQ(fp8ToFloat(0x7c, DType::F8E5M2), INFINITY);
  EXPECT_EQ(fp8ToFloat(0x01, DType::F8E5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8ToFloat(0x3c, DType::F8E5M2), 1.0f);
  // Below half the smallest subnormal: zero.
  EXPECT_EQ(floatToFp8(std::ldexp(1.0f, -11), DType::F8E4M3), 0x00);
  EXPECT_EQ(roundToDType(0.3f, DType::F8E4M3), 0.3125f);
}

TEST(Fp8, HostTensorHoldsCodes) {
  HostTensor t(DType::F8E4M3, 4);
  EXPECT_EQ(t.sizeInBytes(), 4u);
  t.set(2, 0.3f);
  EXPECT_EQ(static_cast<const uint8_t *>(t.data())[2],
            floatToFp8(0.3f, DType::F8E4M3));
  EXPECT_EQ(t.get(2), 0.3125f);
  t.fillNormal(7);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_NE(t.get(i), 0.0f);
    EXPECT_EQ(roundToDType(t.get(i), DType::F8E4M3), t.get(i));
  }
  t.poison();
  EXPECT_TRUE(std::isnan(t.get(0)));
}

TEST(Fp8, InputsHaveTheirOwnTolerance) {
  Tolerance fp8 = toleranceFor(DType::F8E4M3, DType::BF16);
  Tolerance bf16 = toleranceFor(DType::BF16, DType::BF16);
  EXPECT_GT(fp8.relL2, bf16.relL2);
  EXPECT_EQ(toleranceFor(DType::F16, DType::F16).relL2,
            toleranceFor(DType::F16).relL2);
}

} // namespace
