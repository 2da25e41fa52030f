//===- WgmmaBackwardLayout.cpp - The backward on pipeline=wgmma -----------===//
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "specs/Keys.h"
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;
using llvm::Twine;

static unsigned alignedTile(unsigned offset) {
  unsigned a = WgmmaLayout::kTileAlignment;
  return (offset + a - 1) / a * a;
}

WgmmaBackwardLayout::WgmmaBackwardLayout(const KernelSpec &spec)
    : groups(spec.warps / WgmmaLayout::kWarpsPerGroup), spec(spec) {
  dqRowGroups = std::max(1u, spec.bm / kKeysPerGroup);
  dqColGroups = std::max(1u, groups / dqRowGroups);
  unsigned size = dtypeBytes(spec.dtype), dv = spec.headDimV();
  keys = {0, spec.bn, spec.d, size};
  values = {alignedTile(keys.end()), spec.bn, dv, size};
  query = {alignedTile(values.end()), spec.bm, spec.d, size};
  dO = {alignedTile(query.end() + bufferBytes(query)), spec.bm, dv, size};
  grads = {alignedTile(dO.end() + bufferBytes(dO)), spec.bn, spec.bm, size};
  lse = {alignedTile(grads.end()), 1, spec.bm, 4};
  dsum = {lse.end() + lse.bytes(), 1, spec.bm, 4};
}

std::vector<const TileConfig *> WgmmaBackwardLayout::defaultTiles(unsigned d) {
  // d = 32 on two warpgroups spilled 16 bytes under a causal mask.
  static const TileConfig oneGroup{64, 64, 64, 4, 1, {}};
  static const TileConfig narrow{64, 128, 128, 8, 1, {}};
  static const TileConfig wide{128, 64, 128, 8, 1, {}};
  if (d <= 32)
    return {&oneGroup};
  if (d <= narrow.maxD)
    return {&narrow, &oneGroup};
  if (d <= wide.maxD)
    return {&wide};
  return {};
}

unsigned WgmmaBackwardLayout::slabBytes(unsigned width) {
  unsigned rowBytes = 2 * width;
  for (unsigned bytes : {128u, 64u})
    if (rowBytes % bytes == 0)
      return bytes;
  return 32;
}

unsigned WgmmaBackwardLayout::bufferBytes(const SharedTile &tile) {
  return alignedTile(tile.bytes());
}

unsigned WgmmaBackwardLayout::bytes() const {
  return dsum.end() + dsum.bytes();
}

void WgmmaBackwardLayout::check(ErrorList &errors) const {
  if (spec.family != Family::BwdDqDkDv) {
    addTileError(errors, "pipeline", "wgmma",
                 "family=" + keyOf(spec.family) +
                     " runs on pipeline mma (pipeline wgmma computes "
                     "bwd_dq_dk_dv)");
    return;
  }
  if (spec.dtype != DType::F16 && spec.dtype != DType::BF16)
    addTileError(errors, "dtype", keyOf(spec.dtype),
                 "the backward on pipeline wgmma takes fp16 and bf16");
  if (spec.stages != 1)
    addTileError(errors, "stages", spec.stages,
                 "the backward on pipeline wgmma copies with cp.async: use 1");
  if (spec.warps % WgmmaLayout::kWarpsPerGroup || !groups)
    addTileError(errors, "warps", spec.warps,
                 "pipeline wgmma computes in whole warpgroups of 4 warps");
  else if (spec.bn != kKeysPerGroup * groups)
    addTileError(errors, "bn", spec.bn,
                 "the backward on pipeline wgmma gives each warpgroup 64 keys: "
                 "use bn=" +
                     Twine(kKeysPerGroup * groups) +
                     " for warps=" + Twine(spec.warps));
  if (spec.bm % kKeysPerGroup || spec.bm > WgmmaLayout::kMaxN ||
      (groups && groups % dqRowGroups))
    addTileError(
        errors, "bm", spec.bm,
        "the backward on pipeline wgmma splits dQ among its "
        "warpgroups in rows of 64: use a multiple of 64 that divides " +
            Twine(kKeysPerGroup * std::max(groups, 1u)));
  checkHeadDimMultiple(spec, 16,
                       "pipeline wgmma reads Q, K and V in swizzled slabs of "
                       "at least 32 bytes",
                       errors);
  unsigned slabElements = slabBytes(spec.d) / 2;
  if (spec.d % (dqColGroups * slabElements))
    addTileError(errors, "d", spec.d,
                 "the backward on pipeline wgmma splits dQ's columns among " +
                     Twine(dqColGroups) + " warpgroups in slabs of " +
                     Twine(slabElements) +
                     ": use bm=" + Twine(kKeysPerGroup * groups) +
                     ", or a multiple of " + Twine(dqColGroups * slabElements));
  unsigned accumulators = (spec.d + spec.headDimV()) / 2 + spec.bm +
                          (spec.softcap ? spec.bm / 2 : 0) +
                          spec.d / (2 * dqColGroups);
  if (accumulators > kMaxAccumulators)
    addTileError(errors, "bm", spec.bm,
                 "the backward on pipeline wgmma keeps dK, dV, S, dP (and the "
                 "soft-cap's derivative) and dQ in " +
                     Twine(accumulators) + " registers a thread, at most " +
                     Twine(kMaxAccumulators) +
                     ": use a smaller bm, or pipeline mma");
  // With bm = 128 a thread holds 64 scores each of S and dP: the band's
  // other masks (their offsets and second bound) and ALiBi's distances then
  // spilled 8-32 bytes on sm_90a; no mask and causal did not.
  bool plainScores = (spec.mask == Mask::None || spec.mask == Mask::Causal) &&
                     spec.bias != Bias::Alibi;
  if (spec.bm > kKeysPerGroup && !plainScores)
    addTileError(errors, "bm", spec.bm,
                 "the backward on pipeline wgmma has registers for 128 query "
                 "rows only without ALiBi and with mask none or causal: use "
                 "bm=64");
  if (spec.dropout)
    addTileError(errors, "dropout", 1,
                 "the backward on pipeline wgmma has no dropout yet: use "
                 "pipeline mma");
  if (spec.deterministic)
    addTileError(errors, "deterministic", 1,
                 "the backward on pipeline wgmma adds dQ atomically: use "
                 "pipeline mma for deterministic=1");
}
