//===- MmaLayout.cpp - pipeline=mma layout and rules ----------------------===//
#include "specs/pipelines/MmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

MmaLayout::MmaLayout(const KernelSpec &spec, const ArchInfo &arch)
    : queryTilesPerWarp(spec.bm / (kTileRows * spec.warps)), spec(spec),
      arch(arch) {
  unsigned size = dtypeBytes(spec.dtype);
  query = {0, spec.bm, spec.d + kPadElements, size};
  keys = {query.end(), spec.bn, spec.d + kPadElements, size};
  values = {keys.end(), spec.bn, spec.headDimV() + kPadElements, size};
}

unsigned MmaLayout::bytes() const {
  return query.bytes() + spec.stages * (keys.bytes() + values.bytes());
}

void MmaLayout::check(ErrorList &errors) const {
  checkStagesInRange(spec, arch, errors);
  unsigned perWarp = kTileRows * spec.warps;
  if (spec.bm % perWarp)
    addTileError(
        errors, "bm", spec.bm,
        "pipeline mma gives each warp whole 16-row tiles: use a multiple of " +
            Twine(perWarp) + " for warps=" + Twine(spec.warps));
  else if (queryTilesPerWarp > kMaxQueryTilesPerWarp)
    addTileError(errors, "bm", spec.bm,
                 "pipeline mma gives each warp at most " +
                     Twine(kMaxQueryTilesPerWarp) +
                     " 16-row tiles: use bm up to " +
                     Twine(kMaxQueryTilesPerWarp * perWarp) +
                     " for warps=" + Twine(spec.warps) + ", or more warps");
  if (spec.bn % kStep)
    addTileError(
        errors, "bn", spec.bn,
        "pipeline mma multiplies 16 keys at a time: use a multiple of 16");
  checkHeadDimMultiple(spec, kStep,
                       "pipeline mma multiplies 16 columns at a time", errors);
}
