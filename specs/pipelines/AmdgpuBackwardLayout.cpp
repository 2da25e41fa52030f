//===- AmdgpuBackwardLayout.cpp - The backward on pipeline=mfma and wmma --===//
#include "specs/pipelines/AmdgpuBackwardLayout.h"
#include "specs/Keys.h"
#include "specs/pipelines/AmdgpuMatrixLayout.h"

using namespace fmhajit;
using llvm::Twine;

AmdgpuBackwardLayout::AmdgpuBackwardLayout(const KernelSpec &spec,
                                           const ArchInfo &arch)
    : queryInShared(spec.pipeline == Pipeline::Wmma), spec(spec), arch(arch) {
  AmdgpuMatrixLayout forward(spec, arch);
  m = forward.m, k = forward.k;
  queryTilesPerWave = forward.queryTilesPerWave;
  if (m && spec.warps)
    keyBlocksPerWave = spec.bn / (spec.warps * m);
  unsigned size = dtypeBytes(spec.dtype),
           pad = AmdgpuMatrixLayout::kPadElements;
  unsigned d = spec.d, dv = spec.headDimV(), bm = spec.bm, bn = spec.bn;
  unsigned queryRows = queryInShared ? bm : 0;
  query = {0, queryRows, d + pad, size};
  dO = {query.end(), queryRows, dv + pad, size};
  keys = {dO.end(), bn, d + pad, size};
  values = {keys.end(), bn, dv + pad, size};
  keysT = {values.end(), d, bn + pad, size};
  queryT = {keysT.end(), d, bm + pad, size};
  dOT = {queryT.end(), dv, bm + pad, size};
  probsT = {dOT.end(), bn, bm + pad, size};
  gradsT = {probsT.end(), bn, bm + pad, size};
}

// Past 64 KB of LDS (gfx90a, gfx942, RDNA) the larger tile takes head dims
// up to 64 only; the smaller one takes 128 (AmdgpuBackwardLayoutTest).
std::vector<const TileConfig *>
AmdgpuBackwardLayout::defaultTiles(Pipeline pipeline) {
  static const TileConfig mfma[] = {{kMaxHeadDim, 64, 64, 2, 1},
                                    {kMaxHeadDim, 32, 32, 1, 1}};
  static const TileConfig wmma[] = {{kMaxHeadDim, 32, 32, 2, 1},
                                    {kMaxHeadDim, 16, 16, 1, 1}};
  const TileConfig *rows = pipeline == Pipeline::Wmma ? wmma : mfma;
  return {&rows[0], &rows[1]};
}

unsigned AmdgpuBackwardLayout::accumulatorsPerLane() const {
  unsigned queries = queryTilesPerWave * m, scores = spec.softcap ? 3 : 2;
  unsigned keysOfWave = keyBlocksPerWave * m, dv = spec.headDimV();
  return (queries * (scores * spec.bn + spec.d) + keysOfWave * (spec.d + dv)) /
         arch.waveSize;
}

unsigned AmdgpuBackwardLayout::bytes() const {
  return spec.family == Family::BwdDqDkDv ? gradsT.end() : 0;
}

void AmdgpuBackwardLayout::check(ErrorList &errors) const {
  AmdgpuMatrixLayout forward(spec, arch);
  std::string pipeline = keyOf(spec.pipeline).str();
  if (!m || 2 * m != arch.waveSize)
    return forward.check(errors); // the table's shape: its error
  if (spec.stages != 1)
    addTileError(errors, "stages", spec.stages,
                 "the backward on pipeline " + pipeline +
                     " loads one tile at a time: use 1");
  unsigned perWave = m * spec.warps;
  if (spec.bm % perWave)
    addTileError(errors, "bm", spec.bm,
                 "the backward on pipeline " + pipeline +
                     " gives each wave whole " + Twine(m) +
                     "-query tiles: use a multiple of " + Twine(perWave) +
                     " for warps=" + Twine(spec.warps));
  if (spec.bn % perWave)
    addTileError(errors, "bn", spec.bn,
                 "the backward on pipeline " + pipeline +
                     " gives each wave whole " + Twine(m) +
                     "-key blocks of dK and dV: use a multiple of " +
                     Twine(perWave) + " for warps=" + Twine(spec.warps));
  for (auto [key, dim] : {std::pair{"d", spec.d}, {"dv", spec.headDimV()}})
    if ((dim % m || dim > kMaxHeadDim) && (key[1] != 'v' || dim != spec.d))
      addTileError(errors, key, dim,
                   "the backward on pipeline " + pipeline +
                       " keeps dK and dV in registers, a lane per column: "
                       "use a multiple of " +
                       Twine(m) + " up to " + Twine(kMaxHeadDim));
  if (accumulatorsPerLane() > AmdgpuMatrixLayout::kMaxAccumulatorsPerLane)
    addTileError(
        errors, "bm", spec.bm,
        "the backward on pipeline " + pipeline +
            " keeps S, dP, dQ, dK and dV in registers: bm=" + Twine(spec.bm) +
            ",bn=" + Twine(spec.bn) + ",warps=" + Twine(spec.warps) +
            " needs " + Twine(accumulatorsPerLane()) + " a lane, at most " +
            Twine(AmdgpuMatrixLayout::kMaxAccumulatorsPerLane) +
            " fit: use a smaller bm or bn, or more warps");
}
