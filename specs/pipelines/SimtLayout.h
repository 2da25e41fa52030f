//===- SimtLayout.h - pipeline=simt: fp32 tiles in shared memory ----------===//
//
// GpuSimtTileOps (NVPTX and AMDGPU) keeps Q [bm][d], K [bn][d] (the rows
// of K^T's columns), V [bn][dv] and S [bm][bn] as fp32 in shared memory,
// each row padded by one word so column walks hit distinct banks and each
// tile rounded up to 16 bytes, in that order; then kRowVectors fp32 row
// vectors of bm (m, l, and the online softmax's and epilogue's
// temporaries). The output accumulator lives in registers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class SimtLayout {
public:
  /// The row vectors the forward recipe makes: m, l, m.new, alpha, rowsum,
  /// inv.l and lse.
  static constexpr unsigned kRowVectors = 7;
  /// Padding per shared row, in fp32 elements.
  static constexpr unsigned kPadElements = 1;

  explicit SimtLayout(const KernelSpec &spec);

  SharedTile query, keys, values, scores;

  /// Where row vector \p i (< kRowVectors) starts.
  unsigned rowVectorOffset(unsigned i) const {
    return rowVectors0 + i * rowVectorBytes;
  }
  unsigned bytes() const { return rowVectorOffset(kRowVectors); }
  /// stages=1.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  unsigned rowVectors0, rowVectorBytes;
};

} // namespace fmhajit
