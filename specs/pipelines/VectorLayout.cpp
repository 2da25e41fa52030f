//===- VectorLayout.cpp - pipeline=vector rules ---------------------------===//
#include "specs/pipelines/VectorLayout.h"

using namespace fmhajit;

// Measured against the forward's bm=192, bn=64 (one thread, 4 heads, fp32
// and bf16, d=128 at S=1024 and 2048, causal and not; d=64 and 256 at
// S=1024, fp32): 5-18% faster everywhere. A key item streams its query tiles,
// so a short bm keeps the panels of dV += P^T dO and dK += dS^T Q (bm x 64
// floats) in L1, and a long bn spreads each query tile's loads over more
// keys.
const TileConfig &VectorLayout::backwardTile() {
  static const TileConfig tile{256, 64, 128, 1, 1};
  return tile;
}

unsigned VectorLayout::bytes() const {
  unsigned d = spec.d, dv = spec.headDimV(), bm = spec.bm, bn = spec.bn;
  return 4 * (bm * d + bn * d + bn * dv + bm * bn + bm * dv);
}

void VectorLayout::check(ErrorList &errors) const {
  if (spec.stages != 1)
    addTileError(errors, "stages", spec.stages,
                 "pipeline vector loads one tile at a time; use stages=1");
  for (auto [key, value] :
       {std::pair<const char *, unsigned>{"bm", spec.bm}, {"bn", spec.bn}})
    if (value % kMaxLanes)
      addTileError(errors, key, value,
                   "pipeline vector steps over whole vectors of " +
                       llvm::Twine(kMaxLanes) + " floats; use a multiple of " +
                       llvm::Twine(kMaxLanes));
  checkHeadDimMultiple(spec, kMaxLanes,
                       "pipeline vector steps over whole vectors of " +
                           llvm::Twine(kMaxLanes) + " floats",
                       errors);
}
