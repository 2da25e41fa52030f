//===- WorkItem.cpp - Which query tile a work item owns, where it lives ---===//
#include "ir/WorkItem.h"
#include "ir/Loops.h"

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

// The item's lengths and first packed rows: dense, paged or varlen.
void fmhajit::locateSequence(IRBuilderBase &b, ArgsReader &p,
                             const KernelSpec &spec, WorkItemShape shape,
                             WorkItem &s) {
  if (!spec.varlen) {
    s.sq = p.get(kSeqlenQ, "sq");
    s.sk = shape.cacheLengths ? loadI32(b, p.get(kCacheSeqlens), s.b, "sk")
                              : p.get(kSeqlenK, "sk");
    s.qStart = s.kStart = b.getInt64(0);
    return;
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
}

static Value *hasSchedule(IRBuilderBase &b, ArgsReader &p) {
  Value *schedule = p.get(kSplitSchedule);
  return b.CreateICmpNE(schedule, Constant::getNullValue(schedule->getType()),
                        "scheduled");
}

// The split fields of part g (i64) of the call: from the schedule's entry
// g when there is one, else part g / batch of sequence g % batch. A branch,
// since a null schedule cannot be read; the allocas become phis.
static void locatePart(IRBuilderBase &b, ArgsReader &p, Value *g, WorkItem &s) {
  Type *i32 = b.getInt32Ty();
  const char *names[] = {"part.b", "part.split", "part.parts", "part.slot"};
  AllocaInst *slots[4];
  for (int i = 0; i < 4; ++i)
    slots[i] = entryAlloca(b, i32, names[i]);
  s.scheduled = hasSchedule(b, p);
  emitIfElse(
      b, s.scheduled, "schedule",
      [&] {
        Value *entry = b.CreateInBoundsGEP(i32, p.get(kSplitSchedule),
                                           b.CreateMul(g, b.getInt64(4)));
        for (int i = 0; i < 4; ++i)
          b.CreateStore(b.CreateAlignedLoad(
                            i32, b.CreateConstInBoundsGEP1_64(i32, entry, i),
                            Align(i == 0 ? 16 : 4)),
                        slots[i]);
      },
      [&] {
        Value *batch = b.CreateSExt(p.get(kBatch), b.getInt64Ty());
        Value *plain[] = {b.CreateSRem(g, batch), b.CreateSDiv(g, batch),
                          numSplits(b, p), g};
        for (int i = 0; i < 4; ++i)
          b.CreateStore(b.CreateTrunc(plain[i], i32), slots[i]);
      });
  auto read = [&](int i, const char *name) {
    return b.CreateLoad(i32, slots[i], name);
  };
  s.b = b.CreateSExt(read(0, "seq"), b.getInt64Ty(), "b");
  s.split = read(1, "split");
  s.parts = read(2, "parts");
  s.slot = b.CreateSExt(read(3, "part.slot"), b.getInt64Ty(), "slot");
}

// The item and part of a split tail's work item w (WorkItem.h): sets the
// split fields and returns the item. tailItems may be 0 (no split), where
// every w is whole: the divisor is kept at 1 for those. In 32 bits: the
// launch keeps a walking kernel's items below 2^31, and a 64-bit division
// cost the 160-register fp8 consumers a spill.
static Value *locateTailPart(IRBuilderBase &b, ArgsReader &p, Value *w,
                             WorkItem &s) {
  Value *parts = p.get(kTailParts);
  parts = b.CreateSelect(b.CreateICmpSGT(parts, b.getInt32(1)), parts,
                         b.getInt32(1), "tail.parts");
  Value *items = p.get(kTailItems, "tail.items");
  Value *divisor = b.CreateSelect(b.CreateICmpSGT(items, b.getInt32(0)), items,
                                  b.getInt32(1));
  Value *w32 = b.CreateTrunc(w, b.getInt32Ty());
  Value *isPart = b.CreateICmpULT(w32, b.CreateMul(items, parts), "tail.part");
  Value *whole =
      b.CreateSub(w32, b.CreateMul(items, b.CreateSub(parts, b.getInt32(1))));
  s.split = b.CreateSelect(isPart, b.CreateUDiv(w32, divisor), b.getInt32(0),
                           "split");
  s.parts = b.CreateSelect(isPart, parts, b.getInt32(1), "parts");
  s.scheduled = b.getFalse();
  s.slot = b.CreateZExt(w32, b.getInt64Ty(), "slot");
  return b.CreateZExt(
      b.CreateSelect(isPart, b.CreateURem(w32, divisor), whole, "item"),
      b.getInt64Ty());
}

WorkItem fmhajit::locateWorkItem(IRBuilderBase &b, ArgsReader &p,
                                 const KernelSpec &spec, Value *w,
                                 WorkItemShape shape) {
  WorkItem s;
  if (shape.tail)
    w = locateTailPart(b, p, w, s);
  Value *numQTiles = b.CreateSExt(p.get(kNumQTiles), b.getInt64Ty());
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *headsKv = b.CreateSExt(p.get(kHeadsKv), b.getInt64Ty());
  Value *heads = spec.pack_gqa ? headsKv : headsQ;
  Value *qTile = b.CreateSRem(w, numQTiles, "qtile");
  Value *gh = b.CreateSDiv(w, numQTiles);
  Value *head = b.CreateSRem(gh, heads, spec.pack_gqa ? "hk" : "h");
  // g: the sequence, or with split items part * batch + sequence (or the
  // schedule's entry): the slowest index, see WorkItem.h.
  Value *g = b.CreateSDiv(gh, heads, shape.split ? "g" : "b");
  if (shape.split)
    locatePart(b, p, g, s);
  else
    s.b = g;
  Value *group = b.CreateSDiv(headsQ, headsKv); // GQA groups
  if (spec.pack_gqa) {
    s.hk = head;
    s.h = b.CreateMul(s.hk, group, "h");
    s.group = b.CreateTrunc(group, b.getInt32Ty(), "group");
  } else {
    s.h = head;
    s.hk = b.CreateSDiv(s.h, group, "hk");
  }
  s.i0 = b.CreateMul(b.CreateTrunc(qTile, b.getInt32Ty()), b.getInt32(spec.bm),
                     "i0");
  locateSequence(b, p, spec, shape, s);
  s.rows = s.group ? b.CreateMul(s.sq, s.group, "packed.rows") : s.sq;
  return s;
}

Value *fmhajit::queryToken(IRBuilderBase &b, const WorkItem &s, Value *row) {
  return s.group ? b.CreateUDiv(row, splatLike(b, s.group, row), "token") : row;
}

Value *fmhajit::queryHeadOffset(IRBuilderBase &b, const WorkItem &s,
                                Value *row) {
  if (!s.group)
    return splatLike(b, b.getInt32(0), row);
  return b.CreateURem(row, splatLike(b, s.group, row), "head.offset");
}

Value *fmhajit::tileQueryRow(IRBuilderBase &b, const WorkItem &s) {
  if (s.group)
    return s.qStart;
  return b.CreateAdd(s.qStart, b.CreateSExt(s.i0, b.getInt64Ty()));
}

GlobalRows QueryTileRows::rows(IRBuilderBase &b) const {
  if (item.group)
    return {nullptr, nullptr, dtype, *this};
  return {base, tokenStride, dtype};
}

Value *QueryTileRows::operator()(IRBuilderBase &b, Value *r) const {
  Value *row = b.CreateAdd(item.i0, b.CreateTrunc(r, b.getInt32Ty()));
  Value *token = b.CreateZExt(queryToken(b, item, row), b.getInt64Ty());
  Value *head = b.CreateZExt(queryHeadOffset(b, item, row), b.getInt64Ty());
  Value *offset = b.CreateAdd(b.CreateMul(token, tokenStride),
                              b.CreateMul(head, headStride));
  return b.CreateInBoundsGEP(elementType(b.getContext(), dtype), base, offset);
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

Value *fmhajit::lseHeadStride(IRBuilderBase &b, ArgsReader &p,
                              const KernelSpec &spec) {
  return spec.varlen ? totalQ(b, p)
                     : b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty());
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

// Under a schedule a part's partials hold only its own sequence's rows:
// slot-major, then head, then the sequence's query row.
static Value *scheduledRow(IRBuilderBase &b, ArgsReader &p, const WorkItem &s,
                           Value *slot, Value *qRow) {
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *seqlenQ = b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty());
  return b.CreateAdd(
      b.CreateMul(b.CreateAdd(b.CreateMul(slot, headsQ), s.h), seqlenQ),
      b.CreateSub(qRow, s.qStart));
}

std::pair<Value *, Value *> fmhajit::partialRow(IRBuilderBase &b, ArgsReader &p,
                                                const KernelSpec &spec,
                                                const WorkItem &s,
                                                Value *qRow) {
  Value *split = b.CreateSExt(s.split, b.getInt64Ty());
  Value *plain = b.CreateAdd(b.CreateMul(split, lsePlaneSize(b, p, spec)),
                             lseRowIndex(b, p, spec, s, qRow));
  Value *row = b.CreateSelect(s.scheduled, scheduledRow(b, p, s, s.slot, qRow),
                              plain, "partial.row");
  Value *headStride =
      b.CreateSelect(s.scheduled, b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty()),
                     lseHeadStride(b, p, spec), "partial.head.stride");
  return {row, headStride};
}

PartialRows fmhajit::combinedPartials(IRBuilderBase &b, ArgsReader &p,
                                      const KernelSpec &spec, const WorkItem &s,
                                      Value *qRow) {
  Type *i32 = b.getInt32Ty();
  AllocaInst *first = entryAlloca(b, i32, "first.slot");
  AllocaInst *parts = entryAlloca(b, i32, "seq.parts");
  Value *scheduled = hasSchedule(b, p);
  emitIfElse(
      b, scheduled, "schedule",
      [&] {
        Value *entries = b.CreateMul(
            b.CreateSExt(p.get(kNumSplits), b.getInt64Ty()), b.getInt64(4));
        Value *at = b.CreateInBoundsGEP(i32, p.get(kSplitSchedule),
                                        b.CreateAdd(entries, s.b));
        Value *start = b.CreateLoad(i32, at);
        Value *end =
            b.CreateLoad(i32, b.CreateConstInBoundsGEP1_64(i32, at, 1));
        b.CreateStore(start, first);
        b.CreateStore(b.CreateSub(end, start), parts);
      },
      [&] {
        b.CreateStore(b.getInt32(0), first);
        b.CreateStore(numSplits(b, p), parts);
      });
  Value *slot0 = b.CreateSExt(b.CreateLoad(i32, first), b.getInt64Ty());
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *seqlenQ = b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty());
  return {b.CreateLoad(i32, parts, "parts"),
          b.CreateSelect(scheduled, scheduledRow(b, p, s, slot0, qRow),
                         lseRowIndex(b, p, spec, s, qRow), "first.row"),
          b.CreateSelect(scheduled, b.CreateMul(headsQ, seqlenQ),
                         lsePlaneSize(b, p, spec), "part.stride")};
}
