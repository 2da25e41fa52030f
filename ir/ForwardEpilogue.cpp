//===- ForwardEpilogue.cpp - O, the LSE and the partials of a query tile --===//
//
// After the key loop: O / l (times V's fp8 descale and dropout's 1/(1-p)),
// the LSE in natural log units, stored as outputs or, for a part of a
// split key range, as fp32 partials for splitkv_combine.
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardEmitter.h"
#include "ir/Loops.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

void ForwardEmitter::emitEpilogue(const WorkItem &s, Tile &out, RowVec &m,
                                  RowVec &l, Value *rows) {
  bool fp8 = isFp8(spec.dtype);
  Value *numerator = fp8 ? p.get(kVScale) : f32(1);
  if (spec.dropout) // O = sum (P * keep / (1 - p)) V / l
    numerator = b.CreateFMul(numerator, p.get(kDropoutScale));
  RowVec inv = ops->makeRowVec(spec.bm, "inv.l");
  ops->mapRows(inv, {&l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[0], splatLike(b, f32(0), v[0]));
    return b.CreateSelect(seen,
                          b.CreateFDiv(splatLike(b, numerator, v[0]), v[0]),
                          splatLike(b, f32(0), v[0]));
  });
  ops->mapWithRow(out, inv, [](IRBuilderBase &b, Value *x, Value *row) {
    return b.CreateFMul(x, row);
  });
  RowVec lse = ops->makeRowVec(spec.bm, "lse");
  if (spec.lse || splits || tail)
    ops->mapRows(lse, {&m, &l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      Value *seen = b.CreateFCmpOGT(v[1], splatLike(b, f32(0), v[1]));
      Value *logSum = b.CreateFAdd(v[0], target.log2(b, v[1]));
      if (fp8)
        logSum = b.CreateFSub(logSum,
                              splatLike(b, f32(kFp8ProbabilityShift), logSum));
      return b.CreateSelect(
          seen, b.CreateFMul(logSum, splatLike(b, f32(kLn2), logSum)),
          splatLike(b, f32(-INFINITY), v[0]));
    });
  if (!splits && !tail) {
    storeOutputs(s, out, lse, rows);
    return;
  }
  Value *partial = b.CreateICmpSGT(s.parts, i32(1), "partial");
  if (tail) {
    // Whole items and the last part of a split one store O, in one place:
    // two copies of the stores cost registers that spilled.
    Value *finishes = finishTailPart(s, out, lse, rows, partial);
    emitIf(b, finishes, "finish", [&] { storeOutputs(s, out, lse, rows); });
    return;
  }
  // One part is the whole range: finish here, no combine needed.
  emitIfElse(
      b, partial, "partial", [&] { storePartials(s, out, lse, rows); },
      [&] { storeOutputs(s, out, lse, rows); });
}

QueryTileRows ForwardEmitter::queryRows(const WorkItem &s,
                                        KernelArgsField tensor,
                                        KernelArgsField strides, DType dtype) {
  return {s, rowsOf(tensor, strides, s.b, tileQueryRow(b, s), s.h, dtype),
          p.stride(strides, 1), s.group ? p.stride(strides, 2) : nullptr,
          dtype};
}

QueryTileRows ForwardEmitter::lseRows(const WorkItem &s, Value *base,
                                      Value *rowIndex, unsigned width,
                                      Value *headStride) {
  Value *w = b.getInt64(width);
  auto times = [&](Value *x) { return width == 1 ? x : b.CreateMul(x, w); };
  if (!headStride)
    headStride = lseHeadStride(b, p, spec);
  headStride = s.group ? times(headStride) : nullptr;
  return {s, b.CreateInBoundsGEP(b.getFloatTy(), base, times(rowIndex)), w,
          headStride, DType::F32};
}

void ForwardEmitter::storeOutputs(const WorkItem &s, Tile &out, RowVec &lse,
                                  Value *rows) {
  QueryTileRows oRows = queryRows(s, kO, kOStrides, spec.outType());
  ops->store(out, oRows.rows(b), rows);
  if (!spec.lse)
    return;
  QueryTileRows lseOut = lseRows(
      s, p.get(kLse), lseRowIndex(b, p, spec, s, tileQueryRow(b, s)), 1);
  ops->store(lse, lseOut.rows(b), rows);
}

// Partials sit split-major, each split laid out like the LSE with dv floats
// per row: row index = split * plane + lseRowIndex; under a split schedule
// slot-major over the part's own sequence (partialRow, WorkItem.h).
void ForwardEmitter::storePartials(const WorkItem &s, Tile &out, RowVec &lse,
                                   Value *rows) {
  auto [row, headStride] = partialRow(b, p, spec, s, tileQueryRow(b, s));
  QueryTileRows oRows =
      lseRows(s, p.get(kOAccum), row, spec.headDimV(), headStride);
  ops->store(out, oRows.rows(b), rows);
  QueryTileRows lseOut = lseRows(s, p.get(kLseAccum), row, 1, headStride);
  ops->store(lse, lseOut.rows(b), rows);
}
