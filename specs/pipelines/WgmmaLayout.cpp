//===- WgmmaLayout.cpp - pipeline=wgmma layout and rules ------------------===//
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

// Rows are whole slab rows (no padding: the swizzle spreads accesses over
// the banks); each tile starts on a 1024-byte boundary.
WgmmaLayout::WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch)
    : spec(spec), arch(arch) {
  unsigned size = dtypeBytes(spec.dtype);
  auto aligned = [](unsigned offset) {
    return (offset + kTileAlignment - 1) / kTileAlignment * kTileAlignment;
  };
  query = {0, spec.bm, spec.d, size};
  keys = {aligned(query.end()), spec.bn, spec.d, size};
  values = {aligned(keys.end()), spec.bn, spec.headDimV(), size};
}

unsigned WgmmaLayout::slabBytes(unsigned width) const {
  unsigned rowBytes = width * dtypeBytes(spec.dtype);
  for (unsigned bytes : {128u, 64u})
    if (rowBytes % bytes == 0)
      return bytes;
  return 32;
}

// Further stages would repeat the K and V tiles after the first.
unsigned WgmmaLayout::bytes() const {
  return keys.offset + spec.stages * (values.end() - keys.offset);
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
  checkHeadDimMultiple(spec, 32 / dtypeBytes(spec.dtype),
                       "pipeline wgmma reads Q, K and V in swizzled slabs of "
                       "at least 32 bytes",
                       errors);
}
