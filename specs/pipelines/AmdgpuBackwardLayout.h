//===- AmdgpuBackwardLayout.h - The backward on pipeline=mfma and wmma ----===//
//
// AmdgpuBackwardTileOps (ir/targets) runs bwd_dq_dk_dv on the forward's
// matrix tiles (AmdgpuMatrixLayout.h): each wave owns queryTilesPerWave
// m-query tiles of S^T = K Q^T and dP^T = V dO^T (fp32 accumulators, a lane
// per query), and keyBlocksPerWave m-key blocks of dK and dV (a lane per
// column of d). dQ^T += K^T dS^T reads dS^T from the accumulators, as the
// forward's O^T += V^T P^T reads P^T. The key-major products read both
// operands from LDS, rows of their k (queries) contiguous:
//
//   dV += P^T dO    A = P^T rows [bn][bm], B = dO^T rows [dv][bm]
//   dK += dS^T Q    A = dS^T rows [bn][bm], B = Q^T rows [d][bm]
//
// LDS, in this order, each row padded by 16 bytes:
//
//   Q [bm][d] | dO [bm][dv]      (wmma only: mfma keeps them in VGPRs)
//   K [bn][d] | V [bn][dv] | K^T [d][bn] | Q^T [d][bm] | dO^T [dv][bm]
//   P^T [bn][bm] | dS^T [bn][bm]
//
// bwd_dot_do_o and bwd_convert_dq keep their tiles in registers (the
// accumulators' layout) and use no LDS.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"
#include <vector>

namespace fmhajit {

class AmdgpuBackwardLayout {
public:
  /// The widest head dim (d and dv) whose dK and dV stay in registers.
  static constexpr unsigned kMaxHeadDim = 128;

  AmdgpuBackwardLayout(const KernelSpec &spec, const ArchInfo &arch);

  /// The tiles validation tries, in order, where the spec leaves them
  /// unset: the first whose rules and LDS footprint hold is taken.
  static std::vector<const TileConfig *> defaultTiles(Pipeline pipeline);

  unsigned m = 0, k = 0; ///< the matrix instruction's (AmdgpuMatrixLayout)
  unsigned queryTilesPerWave = 0, keyBlocksPerWave = 0;
  bool queryInShared;
  SharedTile query, dO, keys, values, keysT, queryT, dOT, probsT, gradsT;

  /// fp32 accumulators a lane holds: S^T, dP^T (and the soft-cap's
  /// derivative), dQ^T, dK and dV.
  unsigned accumulatorsPerLane() const;
  /// The LDS tiles' bytes (bwd_dq_dk_dv), else 0.
  unsigned bytes() const;
  /// The forward's shape rules; stages = 1; bm whole query tiles and bn
  /// whole key blocks per wave; d and dv whole m-blocks up to kMaxHeadDim;
  /// the accumulators fit a lane's registers.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
