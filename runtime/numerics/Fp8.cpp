//===- Fp8.cpp - Software fp8 (e4m3, e5m2) conversions --------------------===//
#include "runtime/numerics/Fp8.h"
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

using namespace fmhajit;

namespace {
constexpr uint8_t kSignBit = 0x80;
constexpr uint8_t kNaN = 0x7f; // a NaN code of both formats

/// The values of the non-negative codes of one format, ascending, and the
/// largest finite code.
struct Fp8Format {
  std::array<float, 128> value{};
  uint8_t maxFinite = 0;

  Fp8Format(unsigned mantissaBits, int bias, bool hasInfinity) {
    unsigned exponentMax = (1u << (7 - mantissaBits)) - 1;
    for (unsigned code = 0; code < 128; ++code) {
      unsigned e = code >> mantissaBits, m = code & ((1u << mantissaBits) - 1);
      float fraction = float(m) / float(1u << mantissaBits);
      value[code] = e == 0 ? std::ldexp(fraction, 1 - bias)
                           : std::ldexp(1 + fraction, int(e) - bias);
    }
    // e4m3 gives up only S.1111.111 (NaN); e5m2 its top exponent.
    maxFinite = hasInfinity ? uint8_t((exponentMax << mantissaBits) - 1)
                            : uint8_t(kNaN - 1);
  }
};

const Fp8Format &formatOf(DType type) {
  static const Fp8Format e4m3(3, 7, /*hasInfinity=*/false);
  static const Fp8Format e5m2(2, 15, /*hasInfinity=*/true);
  assert(isFp8(type) && "fp8 conversions take e4m3 or e5m2");
  return type == DType::F8E4M3 ? e4m3 : e5m2;
}
} // namespace

// The nearest code by search; ties go to the even code, whose mantissa's
// last bit is 0.
uint8_t fmhajit::floatToFp8(float f, DType type) {
  const Fp8Format &format = formatOf(type);
  if (std::isnan(f))
    return kNaN;
  uint8_t sign = std::signbit(f) ? kSignBit : 0;
  float a = std::fabs(f);
  const float *begin = format.value.data();
  const float *end = begin + format.maxFinite + 1;
  if (a >= *(end - 1))
    return sign | format.maxFinite;
  const float *above = std::upper_bound(begin, end, a);
  uint8_t high = uint8_t(above - begin), low = uint8_t(high - 1);
  float toLow = a - format.value[low], toHigh = format.value[high] - a;
  uint8_t code = toLow < toHigh   ? low
                 : toHigh < toLow ? high
                                  : (low % 2 == 0 ? low : high);
  return sign | code;
}

float fmhajit::fp8ToFloat(uint8_t bits, DType type) {
  const Fp8Format &format = formatOf(type);
  uint8_t magnitude = bits & ~kSignBit;
  float v;
  if (magnitude <= format.maxFinite)
    v = format.value[magnitude];
  else if (type == DType::F8E5M2 && magnitude == format.maxFinite + 1)
    v = INFINITY;
  else
    v = NAN;
  return bits & kSignBit ? -v : v;
}
