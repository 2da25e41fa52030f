//===- WgmmaLayout.cpp - pipeline=wgmma rules
//------------------------------===//
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;

unsigned WgmmaLayout::bytes() const {
  unsigned d = spec.d, dv = spec.headDimV();
  return dtypeBytes(spec.dtype) *
         (spec.bm * d + spec.stages * spec.bn * (d + dv));
}

void WgmmaLayout::check(ErrorList &errors) const {
  checkStagesInRange(spec, arch, errors);
  if (spec.warps % kWarpsPerGroup)
    addTileError(errors, "warps", spec.warps,
                 "pipeline wgmma runs whole warpgroups of 4 warps: use a "
                 "multiple of 4 up to " +
                     llvm::Twine(arch.maxWarps) + " on " + arch.name);
}
