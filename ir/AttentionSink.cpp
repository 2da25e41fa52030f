//===- AttentionSink.cpp - The sink logit in the online softmax -----------===//
#include "ir/AttentionSink.h"
#include "ir/TargetInfo.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

// The sink of tile row \p row's head (\p row: i32, scalar or vector) under
// pack_gqa: a gather, as ALiBi's slopes are (ScoreMods.cpp).
static Value *sinkOfRow(IRBuilderBase &b, const WorkItem &s, Value *sinks,
                        Value *row) {
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Type *heads = row->getType()->getWithNewType(b.getInt64Ty());
  Value *head = b.CreateAdd(b.CreateZExt(queryHeadOffset(b, s, packed), heads),
                            splatLike(b, s.h, row));
  Value *at = b.CreateInBoundsGEP(b.getFloatTy(), sinks, head);
  if (at->getType()->isVectorTy())
    return b.CreateMaskedGather(row->getType()->getWithNewType(b.getFloatTy()),
                                at, Align(4));
  return b.CreateLoad(b.getFloatTy(), at);
}

void fmhajit::startAtSink(IRBuilderBase &b, ArgsReader &p, TileOps &ops,
                          const WorkItem &s, Value *active, Tile &scratch,
                          RowVec &m, RowVec &l, double fp8Shift) {
  Value *sinks = p.get(kSinks, "sinks");
  Constant *negInf = ConstantFP::getInfinity(b.getFloatTy(), /*Negative=*/true);
  Constant *log2e = ConstantFP::get(b.getFloatTy(), kLog2e);
  // sink * log2e where active (or always), -inf (no sink) elsewhere.
  auto inLog2 = [&](IRBuilderBase &b, Value *sink, Value *x) {
    Value *scaled = b.CreateFMul(sink, splatLike(b, log2e, sink), "m.sink");
    if (!active)
      return scaled;
    return b.CreateSelect(active, scaled, splatLike(b, negInf, x), "m.sink");
  };
  if (!s.group) {
    Value *sink =
        b.CreateLoad(b.getFloatTy(),
                     b.CreateInBoundsGEP(b.getFloatTy(), sinks, s.h), "sink");
    Value *start = inLog2(b, sink, sink);
    ops.mapRows(m, {&m}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      return splatLike(b, start, v[0]);
    });
  } else {
    ops.map(scratch, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
      Value *first = b.CreateICmpEQ(col, splatLike(b, b.getInt32(0), col));
      return b.CreateSelect(first, inLog2(b, sinkOfRow(b, s, sinks, row), x),
                            splatLike(b, negInf, x));
    });
    ops.rowMax(scratch, m);
  }
  // l = 2^(sink - m) = 1, times the 2^shift fp8's P carries; 0 with no sink.
  Constant *one = ConstantFP::get(b.getFloatTy(), std::exp2(fp8Shift));
  Constant *zero = ConstantFP::getZero(b.getFloatTy());
  ops.mapRows(l, {&m}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *none = b.CreateFCmpOEQ(v[0], splatLike(b, negInf, v[0]));
    return b.CreateSelect(none, splatLike(b, zero, v[0]),
                          splatLike(b, one, v[0]), "l.sink");
  });
}
