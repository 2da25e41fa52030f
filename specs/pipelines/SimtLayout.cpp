//===- SimtLayout.cpp - pipeline=simt layout and rules --------------------===//
#include "specs/pipelines/SimtLayout.h"
#include "llvm/Support/MathExtras.h"

using namespace fmhajit;

/// \p rows fp32 rows of \p width, padded, placed at \p offset rounded up to
/// 16 bytes.
static SharedTile paddedRows(unsigned offset, unsigned rows, unsigned width) {
  return {unsigned(llvm::alignTo(offset, 16)), rows,
          width + SimtLayout::kPadElements, 4};
}

SimtLayout::SimtLayout(const KernelSpec &spec) : spec(spec) {
  unsigned d = spec.d, dv = spec.headDimV();
  query = paddedRows(0, spec.bm, d);
  keys = paddedRows(query.end(), spec.bn, d);
  values = paddedRows(keys.end(), spec.bn, dv);
  scores = paddedRows(values.end(), spec.bm, spec.bn);
  rowVectors0 = llvm::alignTo(scores.end(), 16);
  rowVectorBytes = llvm::alignTo(4 * spec.bm, 16);
}

void SimtLayout::check(ErrorList &errors) const {
  if (spec.stages != 1)
    addTileError(errors, "stages", spec.stages,
                 "pipeline simt loads one tile at a time; use stages=1");
}
