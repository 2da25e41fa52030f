//===- Dropout.h - The keep-mask of dropout=1, defined once on the host ---===//
//
// Dropout on the attention probabilities (docs/families.md#dropout): each
// probability P_ij is kept with probability 1 - p and then scaled by
// 1 / (1 - p), or set to 0. The keep-mask is a function of the run-time
// seed and offset and of the element's logical position only, so every
// target, tile shape and varlen packing draws the same mask:
//
//   key     = (seed & 0xffffffff, seed >> 32)
//   counter = (k / 4, q, b * headsQ + h, offset)
//   r       = Philox4x32-10(counter, key)[k % 4]
//   keep    = r >= threshold,  threshold = min(floor(p * 2^32), 2^32 - 1)
//
// b is the sequence, h the query head, q and k the positions inside the
// sequence (varlen too). This is the float64 reference's own Philox, written
// from Random123's description and checked against its known-answer vectors
// (tests/unit/DropoutTest.cpp); the kernels' is ir/Dropout.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>

namespace fmhajit {

/// Philox4x32 with 10 rounds (Salmon et al., SC'11; Random123's
/// philox4x32_R(10, counter, key)).
std::array<uint32_t, 4> philox4x32x10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key);

/// A dropout call's run-time arguments: the probability p of dropping, in
/// [0, 1), the Philox seed and the offset that picks one of 2^32 streams
/// of the same seed (a layer, a step).
struct DropoutParams {
  float p = 0;
  uint64_t seed = 0;
  uint32_t offset = 0;
};

/// r < threshold drops: min(floor(p * 2^32), 2^32 - 1) for p in [0, 1).
uint32_t dropoutThreshold(float p);
/// 1 / (1 - p) in fp32, what the kernels scale kept values by.
float dropoutScale(float p);

/// The keep-mask of one call (\p headsQ query heads).
class DropoutMask {
public:
  DropoutMask(const DropoutParams &params, int64_t headsQ)
      : params(params), headsQ(headsQ), threshold(dropoutThreshold(params.p)) {}

  /// Whether P of query \p q and key \p k of sequence \p b, query head
  /// \p h, is kept.
  bool keeps(int64_t b, int64_t h, int64_t q, int64_t k) const;
  /// 1 / (1 - p), exactly.
  double scale() const { return 1.0 / (1.0 - double(params.p)); }

private:
  DropoutParams params;
  int64_t headsQ;
  uint32_t threshold;
};

} // namespace fmhajit
