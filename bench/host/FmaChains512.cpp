//===- FmaChains512.cpp - 512-bit FMA chains (built with -mavx512f -mfma) -===//
#include "bench/host/FmaChains.h"
#include <immintrin.h>

using namespace fmhajit::bench;

// acc = acc / 2 + 1/2 converges to 1: no overflow, no denormals. a and b
// come from a volatile, so the compiler cannot fold the chain away.
float fmhajit::bench::fmaChains512(uint64_t iterations) {
  volatile float half = 0.5f; // opaque: the chain cannot be folded
  const __m512 a = _mm512_set1_ps(half);
  const __m512 b = a;
  __m512 acc[kChains512];
  for (unsigned i = 0; i < kChains512; ++i)
    acc[i] = _mm512_set1_ps(1.0f + float(i) * 1e-3f);
  for (uint64_t it = 0; it < iterations; ++it) {
#pragma clang loop unroll(full)
    for (unsigned i = 0; i < kChains512; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (unsigned i = 1; i < kChains512; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}
