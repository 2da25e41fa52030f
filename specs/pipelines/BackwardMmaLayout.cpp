//===- BackwardMmaLayout.cpp - The backward on pipeline=mma ---------------===//
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/MmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

BackwardMmaLayout::BackwardMmaLayout(const KernelSpec &spec)
    : tilesPerWarp(spec.bm / (MmaLayout::kTileRows * spec.warps)), spec(spec) {
  unsigned size = dtypeBytes(spec.dtype), pad = MmaLayout::kPadElements;
  unsigned dv = spec.headDimV();
  query = {0, spec.bm, spec.d + pad, size};
  dO = {query.end(), spec.bm, dv + pad, size};
  keys = {dO.end(), spec.bn, spec.d + pad, size};
  values = {keys.end(), spec.bn, dv + pad, size};
  probs = {values.end(), spec.bm, spec.bn + pad, size};
  grads = {probs.end(), spec.bm, spec.bn + pad, size};
}

const TileConfig &BackwardMmaLayout::defaultTile() {
  static const TileConfig tile{kMaxHeadDim, 64, 64, 4, 1};
  return tile;
}

unsigned BackwardMmaLayout::bytes() const {
  return spec.family == Family::BwdDqDkDv ? grads.end() : 0;
}

void BackwardMmaLayout::check(ErrorList &errors) const {
  if (spec.stages != 1)
    addTileError(
        errors, "stages", spec.stages,
        "the backward on pipeline mma loads one tile at a time: use 1");
  unsigned perWarp = MmaLayout::kTileRows * spec.warps;
  if (spec.bm % perWarp || tilesPerWarp > MmaLayout::kMaxQueryTilesPerWarp)
    addTileError(errors, "bm", spec.bm,
                 "the backward on pipeline mma gives each warp whole 16-row "
                 "tiles: use a multiple of " +
                     Twine(perWarp) + " up to " +
                     Twine(perWarp * MmaLayout::kMaxQueryTilesPerWarp) +
                     " for warps=" + Twine(spec.warps));
  if (spec.bn != spec.bm)
    addTileError(errors, "bn", spec.bn,
                 "the backward on pipeline mma splits keys among warps as it "
                 "splits queries: use bn = bm (" +
                     Twine(spec.bm) + ")");
  for (auto [key, dim] : {std::pair{"d", spec.d}, {"dv", spec.headDimV()}})
    if (dim % MmaLayout::kStep || dim > kMaxHeadDim)
      addTileError(errors, key, dim,
                   "the backward on pipeline mma keeps dK and dV in "
                   "registers: use a multiple of 16 up to " +
                       Twine(kMaxHeadDim));
}
