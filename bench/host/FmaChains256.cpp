//===- FmaChains256.cpp - 256-bit FMA chains (built with -mavx2 -mfma) ----===//
#include "bench/host/FmaChains.h"
#include <immintrin.h>

using namespace fmhajit::bench;

// See FmaChains512.cpp: the accumulators stay near 1.
float fmhajit::bench::fmaChains256(uint64_t iterations) {
  volatile float half = 0.5f; // opaque: the chain cannot be folded
  const __m256 a = _mm256_set1_ps(half);
  const __m256 b = a;
  __m256 acc[kChains256];
  for (unsigned i = 0; i < kChains256; ++i)
    acc[i] = _mm256_set1_ps(1.0f + float(i) * 1e-3f);
  for (uint64_t it = 0; it < iterations; ++it) {
#pragma clang loop unroll(full)
    for (unsigned i = 0; i < kChains256; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (unsigned i = 1; i < kChains256; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes)
    total += lane;
  return total;
}
