//===- VectorLayout.cpp - pipeline=vector rules ---------------------------===//
#include "specs/pipelines/VectorLayout.h"

using namespace fmhajit;

unsigned VectorLayout::bytes() const {
  unsigned d = spec.d, dv = spec.headDimV(), bm = spec.bm, bn = spec.bn;
  return 4 * (bm * d + bn * d + bn * dv + bm * bn + bm * dv);
}

void VectorLayout::check(ErrorList &errors) const {
  if (spec.stages != 1)
    addTileError(errors, "stages", spec.stages,
                 "pipeline vector loads one tile at a time; use stages=1");
  for (auto [key, value] :
       {std::pair<const char *, unsigned>{"bm", spec.bm}, {"bn", spec.bn}})
    if (value % kMaxLanes)
      addTileError(errors, key, value,
                   "pipeline vector steps over whole vectors of " +
                       llvm::Twine(kMaxLanes) + " floats; use a multiple of " +
                       llvm::Twine(kMaxLanes));
  checkHeadDimMultiple(spec, kMaxLanes,
                       "pipeline vector steps over whole vectors of " +
                           llvm::Twine(kMaxLanes) + " floats",
                       errors);
}
