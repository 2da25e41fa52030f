//===- WgmmaLayout.cpp - pipeline=wgmma layout and rules ------------------===//
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

// Rows are whole slab rows (no padding: the swizzle, not padding, spreads
// ldmatrix-free wgmma reads over the banks), and every tile's row count is a
// multiple of 8, so each tile ends on a swizzle-atom boundary.
WgmmaLayout::WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch)
    : spec(spec), arch(arch) {
  unsigned size = dtypeBytes(spec.dtype);
  query = {0, spec.bm, spec.d, size};
  keys = {query.end(), spec.bn, spec.d, size};
  values = {keys.end(), spec.bn, spec.headDimV(), size};
}

unsigned WgmmaLayout::slabElements() const {
  return kSlabRowBytes / dtypeBytes(spec.dtype);
}

unsigned WgmmaLayout::bytes() const {
  return query.bytes() + spec.stages * (keys.bytes() + values.bytes());
}

void WgmmaLayout::check(ErrorList &errors) const {
  checkStagesInRange(spec, arch, errors);
  if (spec.warps % kWarpsPerGroup)
    addTileError(errors, "warps", spec.warps,
                 "pipeline wgmma runs whole warpgroups of 4 warps: use a "
                 "multiple of 4 up to " +
                     Twine(arch.maxWarps) + " on " + arch.name);
  else if (spec.bm != kRowsPerWarp * spec.warps)
    addTileError(errors, "bm", spec.bm,
                 "pipeline wgmma gives each warp 16 query rows: use bm=" +
                     Twine(kRowsPerWarp * spec.warps) +
                     " for warps=" + Twine(spec.warps) +
                     ", or warps=" + Twine(spec.bm / kRowsPerWarp));
  if (spec.bn % kStep || spec.bn > kMaxN)
    addTileError(errors, "bn", spec.bn,
                 "pipeline wgmma multiplies 16 keys at a time, at most 256 "
                 "per instruction: use a multiple of 16 up to 256");
  if (spec.headDimV() > kMaxN)
    addTileError(errors, "dv", spec.headDimV(),
                 "pipeline wgmma computes O with one instruction of at most "
                 "256 columns: use dv up to 256");
  checkHeadDimMultiple(spec, slabElements(),
                       "pipeline wgmma reads Q, K and V in swizzled slabs of "
                       "128 bytes",
                       errors);
}
