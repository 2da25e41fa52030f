//===- BackwardMmaLayout.cpp - The backward on pipeline=mma ---------------===//
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/MmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

BackwardMmaLayout::BackwardMmaLayout(const KernelSpec &spec)
    : tilesPerWarp(spec.bn / (MmaLayout::kTileRows * spec.warps)),
      rowGroups(tilesPerWarp ? spec.bm / (MmaLayout::kTileRows * tilesPerWarp)
                             : 0),
      keyGroups(rowGroups ? spec.warps / rowGroups : 0), spec(spec) {
  unsigned size = dtypeBytes(spec.dtype), pad = MmaLayout::kPadElements;
  unsigned dv = spec.headDimV();
  query = {0, spec.bm, spec.d + pad, size};
  dO = {query.end(), spec.bm, dv + pad, size};
  keys = {dO.end(), spec.bn, spec.d + pad, size};
  values = {keys.end(), spec.bn, dv + pad, size};
  probs = {values.end(), spec.bm, spec.bn + pad, size};
  grads = {probs.end(), spec.bm, spec.bn + pad, size};
}

const TileConfig &BackwardMmaLayout::defaultTile(const KernelSpec &spec) {
  static const TileConfig tile{kMaxHeadDim, 64, 64, 4, 1};
  // Two Philox draws per step on top of the 255 registers the 64-row tile
  // takes spilled 60-408 bytes on sm_80/sm_90a; 32 query rows have room.
  // So does the soft-cap's derivative at d = 128 (32-76 bytes at 64 rows).
  static const TileConfig narrowTile{kMaxHeadDim, 32, 64, 4, 1};
  bool wide = std::max(spec.d, spec.headDimV()) > 96;
  return spec.dropout || (spec.softcap && wide) ? narrowTile : tile;
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
  if (spec.bn % perWarp || !tilesPerWarp)
    addTileError(errors, "bn", spec.bn,
                 "the backward on pipeline mma gives each warp whole 16-row "
                 "tiles of keys: use a multiple of " +
                     Twine(perWarp) + " for warps=" + Twine(spec.warps));
  else if (tilesPerWarp > MmaLayout::kMaxQueryTilesPerWarp)
    addTileError(errors, "bn", spec.bn,
                 "the backward on pipeline mma gives each warp at most " +
                     Twine(MmaLayout::kMaxQueryTilesPerWarp) +
                     " 16-row tiles of keys: use bn up to " +
                     Twine(perWarp * MmaLayout::kMaxQueryTilesPerWarp) +
                     " for warps=" + Twine(spec.warps));
  else if (unsigned rows = MmaLayout::kTileRows * tilesPerWarp;
           spec.bm % rows || spec.bm > spec.bn ||
           spec.warps % (spec.bm / rows)) {
    std::string allowed; // bn / g for the key groups g that divide warps
    for (unsigned g = 1; g <= spec.warps; g *= 2)
      allowed += (g > 1 ? ", " : "") + std::to_string(spec.bn / g);
    addTileError(errors, "bm", spec.bm,
                 "the backward on pipeline mma gives each warp " + Twine(rows) +
                     " query rows and splits the keys of a row among the "
                     "warps that share them: use " +
                     allowed + " for bn=" + Twine(spec.bn) +
                     ",warps=" + Twine(spec.warps));
  }
  for (auto [key, dim] : {std::pair{"d", spec.d}, {"dv", spec.headDimV()}})
    if (dim % MmaLayout::kStep || dim > kMaxHeadDim)
      addTileError(errors, key, dim,
                   "the backward on pipeline mma keeps dK and dV in "
                   "registers: use a multiple of 16 up to " +
                       Twine(kMaxHeadDim));
  if (keyGroups > 1 && spec.d % (MmaLayout::kStep * keyGroups))
    addTileError(errors, "d", spec.d,
                 "the backward on pipeline mma splits dQ's columns among " +
                     Twine(keyGroups) + " warps (bm = " + Twine(spec.bm) +
                     ", bn = " + Twine(spec.bn) + "): use a multiple of " +
                     Twine(MmaLayout::kStep * keyGroups) + ", or bm = bn");
}
