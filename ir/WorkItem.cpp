//===- WorkItem.cpp - Which query tile a work item owns, and where it lives
//===//
#include "ir/WorkItem.h"

using namespace fmhajit;
using namespace llvm;

Value *fmhajit::numSplits(IRBuilderBase &b, ArgsReader &p) {
  Value *n = p.get(kNumSplits);
  return b.CreateSelect(b.CreateICmpSGT(n, b.getInt32(1)), n, b.getInt32(1),
                        "splits");
}

static Value *loadI32(IRBuilderBase &b, Value *base, Value *index,
                      const Twine &name = "") {
  return b.CreateLoad(b.getInt32Ty(),
                      b.CreateInBoundsGEP(b.getInt32Ty(), base, index), name);
}

WorkItem fmhajit::locateWorkItem(IRBuilderBase &b, ArgsReader &p,
                                 const KernelSpec &spec, Value *w,
                                 WorkItemShape shape) {
  WorkItem s;
  Value *numQTiles = b.CreateSExt(p.get(kNumQTiles), b.getInt64Ty());
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *headsKv = b.CreateSExt(p.get(kHeadsKv), b.getInt64Ty());
  if (shape.split) { // the part is the slowest index: see WorkItem.h
    Value *batch = b.CreateSExt(p.get(kBatch), b.getInt64Ty());
    Value *perSplit =
        b.CreateMul(b.CreateMul(batch, headsQ), numQTiles, "items.per.split");
    s.split = b.CreateTrunc(b.CreateSDiv(w, perSplit), b.getInt32Ty(), "split");
    w = b.CreateSRem(w, perSplit);
  }
  Value *qTile = b.CreateSRem(w, numQTiles, "qtile");
  Value *bh = b.CreateSDiv(w, numQTiles);
  s.h = b.CreateSRem(bh, headsQ, "h");
  s.b = b.CreateSDiv(bh, headsQ, "b");
  s.hk = b.CreateSDiv(s.h, b.CreateSDiv(headsQ, headsKv), "hk"); // GQA groups
  s.i0 = b.CreateMul(b.CreateTrunc(qTile, b.getInt32Ty()), b.getInt32(spec.bm),
                     "i0");
  if (!spec.varlen) {
    s.sq = p.get(kSeqlenQ, "sq");
    s.sk = shape.cacheLengths ? loadI32(b, p.get(kCacheSeqlens), s.b, "sk")
                              : p.get(kSeqlenK, "sk");
    s.qStart = s.kStart = b.getInt64(0);
    return s;
  }
  auto bounds = [&](KernelArgsField cu, Value *&start, Value *&len) {
    Value *base = p.get(cu);
    Value *first = loadI32(b, base, s.b);
    Value *next = loadI32(b, base, b.CreateAdd(s.b, b.getInt64(1)));
    start = b.CreateSExt(first, b.getInt64Ty());
    len = b.CreateSub(next, first);
  };
  bounds(kCuSeqlensQ, s.qStart, s.sq);
  bounds(kCuSeqlensK, s.kStart, s.sk);
  return s;
}

Value *fmhajit::tensorRow(IRBuilderBase &b, ArgsReader &p, bool varlen,
                          KernelArgsField tensor, KernelArgsField strides,
                          Value *batch, Value *row, Value *head, DType dtype) {
  Value *offset = b.CreateAdd(b.CreateMul(row, p.stride(strides, 1)),
                              b.CreateMul(head, p.stride(strides, 2)));
  if (!varlen)
    offset = b.CreateAdd(offset, b.CreateMul(batch, p.stride(strides, 0)));
  return b.CreateInBoundsGEP(elementType(b.getContext(), dtype), p.get(tensor),
                             offset);
}

static Value *totalQ(IRBuilderBase &b, ArgsReader &p) {
  Value *batch = b.CreateSExt(p.get(kBatch), b.getInt64Ty());
  return b.CreateSExt(loadI32(b, p.get(kCuSeqlensQ), batch), b.getInt64Ty(),
                      "totalq");
}

Value *fmhajit::lseRowIndex(IRBuilderBase &b, ArgsReader &p,
                            const KernelSpec &spec, const WorkItem &s,
                            Value *qRow) {
  if (spec.varlen)
    return b.CreateAdd(b.CreateMul(s.h, totalQ(b, p)), qRow);
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *seqlenQ = b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty());
  return b.CreateAdd(
      b.CreateMul(b.CreateAdd(b.CreateMul(s.b, headsQ), s.h), seqlenQ), qRow);
}

Value *fmhajit::lsePlaneSize(IRBuilderBase &b, ArgsReader &p,
                             const KernelSpec &spec) {
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  if (spec.varlen)
    return b.CreateMul(headsQ, totalQ(b, p), "plane");
  Value *batch = b.CreateSExt(p.get(kBatch), b.getInt64Ty());
  return b.CreateMul(b.CreateMul(batch, headsQ),
                     b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty()), "plane");
}
