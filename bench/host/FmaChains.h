//===- FmaChains.h - Independent FMA chains, the machine's FMA limit ------===//
//
// Each function runs `iterations` rounds of acc[i] = acc[i] * a + b over
// independent vector accumulators: enough chains to cover the FMA latency
// times the number of FMA ports, so the loop is bound by FMA throughput
// alone. Each lives in its own file compiled for its ISA (FmaChains512.cpp
// with -mavx512f -mfma, FmaChains256.cpp with -mavx2 -mfma); call one only
// after checking the CPU has it (FmaPeak.cpp does). The result is a checksum
// that keeps the work alive.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace fmhajit::bench {

/// Accumulators (independent chains) of each variant.
inline constexpr unsigned kChains512 = 16; ///< of 32 zmm registers
inline constexpr unsigned kChains256 = 12; ///< of 16 ymm registers

/// Flops of one iteration: chains * lanes * 2 (an FMA is two flops).
inline constexpr double kFlopsPerIteration512 = kChains512 * 16 * 2;
inline constexpr double kFlopsPerIteration256 = kChains256 * 8 * 2;

/// 512-bit FMA chains (AVX-512F).
float fmaChains512(uint64_t iterations);
/// 256-bit FMA chains (AVX2 + FMA).
float fmaChains256(uint64_t iterations);

} // namespace fmhajit::bench
