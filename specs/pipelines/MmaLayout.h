//===- MmaLayout.h - pipeline=mma: NVPTX mma.sync m16n8k16 tiles ----------===//
//
// NvptxMmaTileOps gives each warp queryTilesPerWarp m-tiles of 16 query
// rows, and keeps S and O as mma accumulator fragments in registers. Q
// [bm][d], K [bn][d] and V [bn][dv] are rows of the input dtype in shared
// memory, in that order, each row padded by 16 bytes so the eight rows an
// ldmatrix reads fall in distinct banks. Products step over 16 columns of d
// (and of bn for P V) and ldmatrix.x4 loads 16 columns of K or V, so d, dv
// and bn are multiples of 16.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class MmaLayout {
public:
  /// Rows of an m-tile (the m of m16n8k16).
  static constexpr unsigned kTileRows = 16;
  /// Columns one product step, or one ldmatrix.x4 of K or V, covers.
  static constexpr unsigned kStep = 16;
  /// Padding per shared row, in elements (16 bytes of 16-bit elements).
  static constexpr unsigned kPadElements = 8;
  /// The most m-tiles a warp owns: the emitter keeps every m-tile's Q (or
  /// P) A fragments of a step in a register array this long.
  static constexpr unsigned kMaxQueryTilesPerWarp = 8;

  explicit MmaLayout(const KernelSpec &spec, const ArchInfo &arch);

  unsigned queryTilesPerWarp;
  SharedTile query, keys, values; ///< K and V: the first stage's buffers

  /// Q and `stages` K/V buffers.
  unsigned bytes() const;
  /// Stages in range; bm whole m-tiles per warp, at most
  /// kMaxQueryTilesPerWarp of them; d, dv and bn multiples of kStep.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
