//===- HalfPrecision.cpp - Software fp16 and bf16 conversions -------------===//
#include "runtime/numerics/HalfPrecision.h"
#include "runtime/numerics/Fp8.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace fmhajit;

namespace {
constexpr uint32_t kF32Inf = 0x7f800000;
constexpr uint32_t kF32SignMask = 0x80000000;
constexpr uint16_t kF16Inf = 0x7c00;
constexpr uint16_t kF16QuietBit = 0x0200;
/// Smallest float magnitude that rounds to fp16 infinity: 65520, halfway
/// between the largest half 65504 and 2^16 (the tie goes to the even inf).
constexpr uint32_t kF16OverflowBits = 0x477ff000;
/// 2^-14, the smallest normal half.
constexpr uint32_t kF16MinNormalBits = 0x38800000;
/// 2^-25, half the smallest subnormal half: anything below rounds to 0.
constexpr uint32_t kF16HalfMinSubnormalBits = 0x33000000;
/// Rebiases a float exponent (bias 127) to a half exponent (bias 15).
constexpr uint32_t kF32ToF16Rebias = (127 - 15) << 23;
} // namespace

/// Shifts \p value right by \p shift bits, rounding to nearest even.
static uint32_t shiftRightRne(uint32_t value, unsigned shift) {
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    ++kept;
  return kept;
}

uint16_t fmhajit::floatToFp16(float f) {
  uint32_t bits = llvm::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((bits & kF32SignMask) >> 16);
  uint32_t mag = bits & ~kF32SignMask;
  if (mag > kF32Inf) // NaN: keep the top payload bits, force quiet
    return sign | kF16Inf | kF16QuietBit | ((mag >> 13) & 0x3ff);
  if (mag >= kF16OverflowBits)
    return sign | kF16Inf;
  // Normal half: rebias the exponent and round off 13 mantissa bits; a carry
  // out of the mantissa correctly bumps the exponent.
  if (mag >= kF16MinNormalBits)
    return sign | shiftRightRne(mag - kF32ToF16Rebias, 13);
  if (mag < kF16HalfMinSubnormalBits)
    return sign;
  // Subnormal half: the value in units of 2^-24 is mant * 2^(exp - 126).
  uint32_t exp = mag >> 23;
  uint32_t mant = (mag & 0x7fffff) | 0x800000;
  return sign | shiftRightRne(mant, 126 - exp);
}

float fmhajit::fp16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f)
    return llvm::bit_cast<float>(sign | kF32Inf | (mant << 13));
  if (exp == 0) { // zero or subnormal: mant * 2^-24, exact in float
    float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  return llvm::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fmhajit::floatToBf16(float f) {
  uint32_t bits = llvm::bit_cast<uint32_t>(f);
  if ((bits & ~kF32SignMask) > kF32Inf) // NaN: truncating could give inf
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  // Adding 0x7fff plus the kept lsb rounds to nearest even; a carry into the
  // exponent is the correct rounding, up to infinity.
  uint32_t lsb = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7fff + lsb) >> 16);
}

float fmhajit::bf16ToFloat(uint16_t bits) {
  return llvm::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float fmhajit::roundToDType(float f, DType type) {
  switch (type) {
  case DType::F32:
    return f;
  case DType::F16:
    return fp16ToFloat(floatToFp16(f));
  case DType::BF16:
    return bf16ToFloat(floatToBf16(f));
  case DType::F8E4M3:
  case DType::F8E5M2:
    return fp8ToFloat(floatToFp8(f, type), type);
  }
  llvm_unreachable("unknown dtype");
}
