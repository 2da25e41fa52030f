//===- AmdgpuMatrixLayout.cpp - pipeline=mfma and wmma layout and rules ---===//
#include "specs/pipelines/AmdgpuMatrixLayout.h"
#include "specs/Keys.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <algorithm>

using namespace fmhajit;
using llvm::Twine;

/// m and k of an "MxMxK" shape, or {0, 0}.
static std::pair<unsigned, unsigned> parseShape(llvm::StringRef shape) {
  llvm::SmallVector<llvm::StringRef, 3> parts;
  shape.split(parts, 'x');
  unsigned m = 0, n = 0, k = 0;
  if (parts.size() != 3 || parts[0].getAsInteger(10, m) ||
      parts[1].getAsInteger(10, n) || parts[2].getAsInteger(10, k) || m != n ||
      m == 0 || k == 0)
    return {0, 0};
  return {m, k};
}

AmdgpuMatrixLayout::AmdgpuMatrixLayout(const KernelSpec &spec,
                                       const ArchInfo &arch)
    : queryInShared(spec.pipeline == Pipeline::Wmma), spec(spec), arch(arch) {
  if (const PipelineInfo *info = arch.pipeline(spec.pipeline))
    std::tie(m, k) = parseShape(info->shape);
  if (m && spec.warps)
    queryTilesPerWave = spec.bm / (spec.warps * m);
  unsigned size = dtypeBytes(spec.dtype);
  query = {0, queryInShared ? spec.bm : 0, spec.d + kPadElements, size};
  keys = {query.end(), spec.bn, spec.d + kPadElements, size};
  valuesT = {keys.end(), spec.headDimV(), spec.bn + kPadElements, size};
}

unsigned AmdgpuMatrixLayout::accumulatorsPerLane() const {
  return queryTilesPerWave * m * (spec.bn + spec.headDimV()) / arch.waveSize;
}

unsigned AmdgpuMatrixLayout::bytes() const {
  return query.bytes() + spec.stages * (keys.bytes() + valuesT.bytes());
}

void AmdgpuMatrixLayout::check(ErrorList &errors) const {
  std::string pipeline = keyOf(spec.pipeline).str();
  if (!m || 2 * m != arch.waveSize) { // the table's shape does not fit its wave
    addTileError(errors, "pipeline", pipeline,
                 "its shape '" + arch.pipeline(spec.pipeline)->shape + "' on " +
                     arch.name + " is not two lane groups of a " +
                     Twine(arch.waveSize) +
                     "-lane wave; this table is not supported");
    return;
  }
  checkStagesInRange(spec, arch, errors);
  unsigned perWave = m * spec.warps;
  if (spec.bm % perWave)
    addTileError(errors, "bm", spec.bm,
                 "pipeline " + pipeline + " gives each wave whole " + Twine(m) +
                     "-query tiles: use a multiple of " + Twine(perWave) +
                     " for warps=" + Twine(spec.warps));
  if (spec.bn % m)
    addTileError(errors, "bn", spec.bn,
                 "pipeline " + pipeline + " multiplies " + Twine(m) +
                     " keys at a time: use a multiple of " + Twine(m));
  unsigned dStep = std::max(k, kCopyElements);
  if (spec.d % dStep)
    addTileError(errors, "d", spec.d,
                 "pipeline " + pipeline + " steps over d " + Twine(dStep) +
                     " columns at a time: use a multiple of " + Twine(dStep));
  if (spec.headDimV() % kCopyElements)
    addTileError(errors, "dv", spec.headDimV(),
                 "pipeline " + pipeline +
                     " copies V 8 columns at a time: use a multiple of 8");
  if (accumulatorsPerLane() > kMaxAccumulatorsPerLane)
    addTileError(errors, "bm", spec.bm,
                 "pipeline " + pipeline +
                     " keeps S and O in registers: bm=" + Twine(spec.bm) +
                     ",bn=" + Twine(spec.bn) + ",warps=" + Twine(spec.warps) +
                     " needs " + Twine(accumulatorsPerLane()) +
                     " a lane, at most " + Twine(kMaxAccumulatorsPerLane) +
                     " fit: use a smaller bm or bn, or more warps");
}
