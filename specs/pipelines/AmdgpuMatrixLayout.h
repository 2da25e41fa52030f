//===- AmdgpuMatrixLayout.h - pipeline=mfma and wmma: AMD matrix tiles ----===//
//
// One layout for both, as AmdgpuMatrixTileOps is one emitter for both. The
// matrix instruction computes an m x m block over a wave of two lane groups
// of m lanes (wave64 with m = 32 under mfma, wave32 with m = 16 under wmma)
// and steps over k, both read from the table's shape ("32x32x8"). Each wave
// owns queryTilesPerWave query tiles of m queries; S^T and O^T are
// accumulators in registers. In LDS, in this order and each row padded by
// 16 bytes: Q [bm][d] under wmma only (RDNA's 256 VGPRs a lane cannot also
// hold Q beside the accumulators; CDNA keeps it in registers), K [bn][d],
// and V^T [dv][bn]. Rows are copied 8 elements (16 bytes) at a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class AmdgpuMatrixLayout {
public:
  /// Padding per LDS row, in elements (16 bytes of 16-bit elements).
  static constexpr unsigned kPadElements = 8;
  /// Elements one LDS copy moves.
  static constexpr unsigned kCopyElements = 8;
  /// Registers a lane may give the S and O accumulators: the 256 AGPRs of
  /// a CDNA lane, the 256 VGPRs of an RDNA one. Past it the kernel spills
  /// most of its accumulators and LLVM takes minutes to allocate them.
  static constexpr unsigned kMaxAccumulatorsPerLane = 256;

  AmdgpuMatrixLayout(const KernelSpec &spec, const ArchInfo &arch);

  unsigned m = 0, k = 0; ///< from the shape; 0 if it does not parse
  unsigned queryTilesPerWave = 0;
  bool queryInShared;
  SharedTile query;         ///< rows = 0 when Q lives in registers
  SharedTile keys, valuesT; ///< the first stage's buffers

  /// fp32 registers each lane holds for S^T and O^T: the wave's
  /// queryTilesPerWave * m queries times (bn + dv), over the wave's lanes.
  unsigned accumulatorsPerLane() const;
  /// Q (if in LDS) and `stages` K/V^T buffers.
  unsigned bytes() const;
  /// The shape fits the wave; stages in range; bm whole query tiles per
  /// wave; bn whole key blocks; d whole k-steps; dv whole copies; the
  /// accumulators fit a lane's registers.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
