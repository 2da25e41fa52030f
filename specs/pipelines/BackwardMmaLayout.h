//===- BackwardMmaLayout.h - The backward on pipeline=mma -----------------===//
//
// NvptxBackwardTileOps (ir/targets) runs bwd_dq_dk_dv with FlashAttention-2's
// data flow on mma.sync m16n8k16: each warp owns 16-row m-tiles of the query
// tile for S = Q K^T and dP = dO V^T, and the same number of 16-row m-tiles
// of the key tile for dK and dV. So bm = bn (one count of m-tiles serves
// both). P and dS go through shared memory as 16-bit tiles [bm][bn], where
// the key-major products (dV += P^T dO, dK += dS^T Q) read them transposed
// by ldmatrix.trans. Shared memory holds, each row padded by 16 bytes:
//
//   Q [bm][d] | dO [bm][dv] | K [bn][d] | V [bn][dv] | P [bm][bn] | dS [bm][bn]
//
// bwd_dot_do_o and bwd_convert_dq keep their tiles in registers and use no
// shared memory. A warp keeps dK and dV of its keys (2 * 16 * d / 32
// floats a thread per m-tile) with S and dP in registers: head dims past 128
// would spill, so they are refused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

/// Whether \p f is one of the backward families.
inline bool isBackwardFamily(Family f) {
  return f == Family::BwdDotDoO || f == Family::BwdDqDkDv ||
         f == Family::BwdConvertDq;
}

class BackwardMmaLayout {
public:
  /// The widest head dim (d and dv) whose dK and dV stay in registers.
  static constexpr unsigned kMaxHeadDim = 128;

  explicit BackwardMmaLayout(const KernelSpec &spec);

  /// The backward's default tile on pipeline mma (bm = bn = 64, 4 warps).
  static const TileConfig &defaultTile();

  unsigned tilesPerWarp;
  SharedTile query, dO, keys, values, probs, grads;

  /// The shared tiles' bytes (bwd_dq_dk_dv), else 0.
  unsigned bytes() const;
  /// bm = bn in whole m-tiles per warp; head dims multiples of 16 up to
  /// kMaxHeadDim; stages = 1.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
};

} // namespace fmhajit
