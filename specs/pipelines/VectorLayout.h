//===- VectorLayout.h - pipeline=vector: the host's tile buffers ----------===//
//
// HostTileOps keeps every tile as an fp32 buffer on the stack of the thread
// running the work item, unpadded: Q^T [d][bm], K [bn][d], V [bn][dv],
// S^T [bn][bm] and O [bm][dv]. Its loops step over whole vectors of up to
// kMaxLanes floats (AVX-512), so every tile edge is a multiple of that.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class VectorLayout {
public:
  /// The widest vector the host tile loops use (fp32 lanes).
  static constexpr unsigned kMaxLanes = 16;

  explicit VectorLayout(const KernelSpec &spec) : spec(spec) {}

  /// The backward families' default tile, every head dim: bm=64, bn=128.
  static const TileConfig &backwardTile();

  /// Bytes of the five fp32 buffers, against the target's per-thread budget.
  unsigned bytes() const;
  /// stages=1; bm, bn, d and dv whole vectors.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
};

} // namespace fmhajit
