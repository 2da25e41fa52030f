//===- TileRules.cpp - Ask the spec's pipeline about its tile -------------===//
#include "specs/pipelines/TileRules.h"
#include "specs/Keys.h"
#include "specs/pipelines/AmdgpuBackwardLayout.h"
#include "specs/pipelines/AmdgpuMatrixLayout.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/MmaLayout.h"
#include "specs/pipelines/SimtLayout.h"
#include "specs/pipelines/VectorLayout.h"
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>

using namespace fmhajit;
using llvm::Twine;

void fmhajit::addTileError(ErrorList &errors, llvm::StringRef key,
                           const Twine &value, const Twine &why) {
  errors.add(ErrorKind::Spec, key + "=" + value + ": " + why);
}

void fmhajit::checkStagesInRange(const KernelSpec &spec, const ArchInfo &arch,
                                 ErrorList &errors) {
  if (spec.stages < 1 || spec.stages > arch.maxStages)
    addTileError(errors, "stages", spec.stages,
                 "use 1 to " + Twine(arch.maxStages) + " on " + arch.name);
}

void fmhajit::checkHeadDimMultiple(const KernelSpec &spec, unsigned multiple,
                                   const Twine &why, ErrorList &errors) {
  if (spec.d % multiple)
    addTileError(errors, "d", spec.d,
                 why + ": use a multiple of " + Twine(multiple));
  if (spec.headDimV() != spec.d && spec.headDimV() % multiple)
    addTileError(errors, "dv", spec.headDimV(),
                 why + ": use a multiple of " + Twine(multiple));
}

// The pipeline's own rules, then (only if they hold) its footprint.
void fmhajit::checkTileRules(const KernelSpec &s, const ArchInfo &arch,
                             ErrorList &errors) {
  ErrorList broken;
  // The GPU backward is written for mma.sync (BackwardMmaLayout.h), wgmma
  // (WgmmaBackwardLayout.h) and AMD's matrix instructions
  // (AmdgpuBackwardLayout.h) alone.
  bool backward = isBackwardFamily(s.family);
  bool nvptxBackward = backward && arch.backend == Backend::Nvptx;
  bool amdgpuBackward = backward && arch.backend == Backend::Amdgpu;
  bool amdgpuMatrix =
      s.pipeline == Pipeline::Mfma || s.pipeline == Pipeline::Wmma;
  if (nvptxBackward && s.pipeline == Pipeline::Wgmma)
    WgmmaBackwardLayout(s).check(broken);
  else if (nvptxBackward && s.pipeline != Pipeline::Mma)
    addTileError(broken, "pipeline", keyOf(s.pipeline),
                 "the backward on " + arch.name + " runs on pipeline mma" +
                     (arch.pipeline(Pipeline::Wgmma) ? " or wgmma" : ""));
  else if (nvptxBackward)
    BackwardMmaLayout(s).check(broken);
  else if (amdgpuBackward && !amdgpuMatrix)
    addTileError(broken, "pipeline", keyOf(s.pipeline),
                 "the backward on " + arch.name + " runs on pipeline " +
                     (arch.pipeline(Pipeline::Mfma) ? "mfma" : "wmma") +
                     " (fp16, bf16)");
  else if (amdgpuBackward)
    AmdgpuBackwardLayout(s, arch).check(broken);
  else
    switch (s.pipeline) {
    case Pipeline::Vector:
      VectorLayout(s).check(broken);
      break;
    case Pipeline::Simt:
      SimtLayout(s).check(broken);
      break;
    case Pipeline::Mma:
      MmaLayout(s, arch).check(broken);
      break;
    case Pipeline::Mfma:
    case Pipeline::Wmma:
      AmdgpuMatrixLayout(s, arch).check(broken);
      break;
    case Pipeline::Wgmma:
      WgmmaLayout(s, arch).check(broken);
      break;
    case Pipeline::Auto:
      llvm_unreachable("checkTileRules takes resolved specs");
    }
  if (!broken.empty()) {
    errors.add(broken.take());
    return;
  }
  unsigned bytes = tileFootprintBytes(s, arch);
  if (bytes > arch.sharedBytes)
    addTileError(errors, "bm", s.bm,
                 "tiles bm=" + Twine(s.bm) + ",bn=" + Twine(s.bn) + ",stages=" +
                     Twine(s.stages) + " need " + Twine(bytes) + " bytes but " +
                     arch.name + " has " + Twine(arch.sharedBytes) +
                     "; use smaller bm, bn or stages");
}

CombineShape fmhajit::combineShape(unsigned dv, unsigned threads) {
  unsigned minWidth = threads > 1 && dv % 4 == 0 ? 4 : 1;
  CombineShape shape;
  for (unsigned c = 1; c <= std::min(threads, dv / minWidth); ++c)
    if (dv % c == 0)
      shape.columnThreads = c;
  shape.width = dv / shape.columnThreads;
  shape.groups = threads / shape.columnThreads;
  return shape;
}

unsigned fmhajit::combineScratchBytes(const CombineShape &shape, unsigned dv) {
  if (shape.groups <= 1)
    return 0;
  return shape.groups * (dv + 2) * unsigned(sizeof(float));
}

unsigned fmhajit::tileFootprintBytes(const KernelSpec &s,
                                     const ArchInfo &arch) {
  // The combine has no tiles: a GPU block's groups merge through scratch.
  if (s.family == Family::SplitKvCombine) {
    unsigned threads =
        arch.backend == Backend::Host ? 1 : blockWarps(s) * arch.waveSize;
    return combineScratchBytes(combineShape(s.headDimV(), threads),
                               s.headDimV());
  }
  switch (s.pipeline) {
  case Pipeline::Vector:
    return VectorLayout(s).bytes();
  case Pipeline::Simt:
    return SimtLayout(s).bytes();
  case Pipeline::Mma:
    if (isBackwardFamily(s.family))
      return BackwardMmaLayout(s).bytes();
    return MmaLayout(s, arch).bytes();
  case Pipeline::Mfma:
  case Pipeline::Wmma:
    if (isBackwardFamily(s.family))
      return AmdgpuBackwardLayout(s, arch).bytes();
    return AmdgpuMatrixLayout(s, arch).bytes();
  case Pipeline::Wgmma:
    if (isBackwardFamily(s.family))
      return WgmmaBackwardLayout(s).bytes();
    return WgmmaLayout(s, arch).bytes();
  case Pipeline::Auto:
    break;
  }
  llvm_unreachable("tileFootprintBytes takes resolved specs");
}

unsigned fmhajit::blockWarps(const KernelSpec &spec) {
  return spec.warps + (usesTensorMaps(spec) ? WgmmaLayout::kWarpsPerGroup : 0);
}
