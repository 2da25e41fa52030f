//===- HalfPrecision.h - Software fp16 and bf16 conversions ---------------===//
//
// Host-side conversions between float and the 16-bit dtypes, written in
// integer arithmetic so they are exact and the same on every machine: the
// reference must see exactly the values the kernel reads. Float to 16-bit
// rounds to nearest even; overflow goes to infinity, NaNs stay (quiet) NaNs
// with their sign, and fp16 subnormals are produced and read exactly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

/// IEEE binary16 bits nearest to \p f (ties to even).
uint16_t floatToFp16(float f);
/// The float equal to the binary16 value \p bits (exact).
float fp16ToFloat(uint16_t bits);

/// bfloat16 bits nearest to \p f (ties to even).
uint16_t floatToBf16(float f);
/// The float equal to the bfloat16 value \p bits (exact).
float bf16ToFloat(uint16_t bits);

/// \p f rounded to \p type and back: what a kernel reading \p type sees
/// (fp8: Fp8.h's rounding).
float roundToDType(float f, DType type);

} // namespace fmhajit
