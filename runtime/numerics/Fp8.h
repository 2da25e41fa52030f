//===- Fp8.h - Software fp8 (e4m3, e5m2) conversions ----------------------===//
//
// The OCP 8-bit formats the fp8 kernels read: e4m3 (bias 7, no infinity,
// S.1111.111 is NaN, largest 448) and e5m2 (bias 15, IEEE-like, largest
// 57344). Conversions go through a table of the 128 non-negative codes, so
// they are exact and the same on every machine. Float to fp8 rounds to
// nearest even and saturates to the largest finite value, as the kernels'
// cvt.rn.satfinite does; NaN stays NaN.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

/// The fp8 code of \p type nearest to \p f (\p type is e4m3 or e5m2).
uint8_t floatToFp8(float f, DType type);
/// The float equal to fp8 code \p bits of \p type (exact).
float fp8ToFloat(uint8_t bits, DType type);

} // namespace fmhajit
