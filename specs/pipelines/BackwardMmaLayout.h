//===- BackwardMmaLayout.h - The backward on pipeline=mma -----------------===//
//
// NvptxBackwardTileOps (ir/targets) runs bwd_dq_dk_dv with FlashAttention-2's
// data flow on mma.sync m16n8k16. Each warp owns tilesPerWarp 16-row m-tiles
// of the key tile for dK and dV (bn = 16 * tilesPerWarp * warps), and as
// many m-tiles of the query tile for S = Q K^T and dP = dO V^T. Where bm is
// smaller than bn, the warps that share query rows split the keys (and dQ's
// columns) among them: warp w owns query rows of row group w % rowGroups and
// keys (dQ columns) of key group w / rowGroups,
//
//   bm = 64, bn = 128, 8 warps:   S, dP: warp w has queries 16 (w % 4)..,
//                                 keys 64 (w / 4)..; dK, dV: keys 16 w..;
//                                 dQ: queries 16 (w % 4).., columns
//                                 d/2 (w / 4)..
//
// P and dS go through shared memory as 16-bit tiles [bm][bn], where the
// key-major products (dV += P^T dO, dK += dS^T Q) read them transposed by
// ldmatrix.trans, and dQ += dS K reads dS when the keys are split. Shared
// memory holds, each row padded by 16 bytes:
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

  /// The backward's default tile on pipeline mma for \p spec (bm = bn = 64,
  /// 4 warps; bm = 32 under dropout=1, which has registers for the Philox
  /// draws, and with softcap=1 past d = 96, for the tanh derivative).
  static const TileConfig &defaultTile(const KernelSpec &spec);

  /// 16-row m-tiles a warp owns: of keys for dK and dV, of queries for S.
  unsigned tilesPerWarp;
  /// Warps with distinct query rows, and warps that split each row group's
  /// keys (and dQ's columns): rowGroups * keyGroups = warps.
  unsigned rowGroups, keyGroups;
  SharedTile query, dO, keys, values, probs, grads;

  /// The shared tiles' bytes (bwd_dq_dk_dv), else 0.
  unsigned bytes() const;
  /// bn in whole m-tiles per warp; bm in whole row groups that divide the
  /// warps; head dims multiples of 16 up to kMaxHeadDim, d of 16 * keyGroups;
  /// stages = 1.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
};

} // namespace fmhajit
