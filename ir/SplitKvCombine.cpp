//===- SplitKvCombine.cpp - Merging split-KV partial results --------------===//
//
// A plain loop per work item, no tiles: the combine reads numSplits * dv
// floats per row and does a handful of flops on each, so it is bound by
// memory latency, not by any unit. The item's threads form groups
// (CombineShape, specs/pipelines/TileRules.h): a group's threads hold
// adjacent columns, and the groups take the parts in turn, each folding its
// parts into a running (max, sum, row) as the online softmax does. GPU
// groups then merge through shared memory; the host has one group, whose
// one thread holds the row as a vector.
//
// Why groups: a GPU decode row is one block, and every part it folds is a
// wait on L2. With one group (all threads splitting the columns) bench/decode
// on an H100 saw about 0.3 us per part, so a row of 32 parts cost ~10 us of
// a 60 us call and 256 parts were never worth their blocks.
//
// Why whole steps: a group loads a step's parts together and waits once, so
// its waits are its steps. The last step of a group is not cut short: its
// loads past the group's parts read the step's first part again (in cache,
// no wait of their own) and weigh 0, so a group of 1 to 8 parts waits once
// on a GPU, where one part at a time after the whole steps waited up to
// three more times.
//
//===----------------------------------------------------------------------===//
#include "ir/SplitKvCombine.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"
#include "specs/pipelines/TileRules.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/bit.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

namespace {
/// A partial merge of some parts of a row: their largest LSE m, the sum of
/// exp(lse_s - m) and the sum of exp(lse_s - m) * o_s over this thread's
/// columns (a vector of the shape's width).
struct Folded {
  Value *max, *sum, *row;
};

class CombineEmitter {
public:
  CombineEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                 Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        shape(combineShape(spec.headDimV(), target.itemThreads())),
        rowType(FixedVectorType::get(b.getFloatTy(), shape.width)) {}

  void emitWorkItem(Value *w);

private:
  /// A group's parts per step, all loads issued first: 8 on a GPU (8
  /// rows of 4 columns a thread), 4 on the host, whose one thread holds
  /// each part's whole row in vector registers.
  unsigned partsPerStep() const { return shape.columnThreads > 1 ? 8 : 4; }

  void emitRow(const WorkItem &s, Value *row, PartialRows parts);
  /// This group's parts s = group + k * groups, folded.
  Folded foldOwnParts(Value *n, Value *plane, Value *lseRow);
  /// \p cur with the parts \p splits folded in, each where its \p counts
  /// bit is set (its load is made either way).
  Folded fold(ArrayRef<Value *> splits, ArrayRef<Value *> counts, Folded cur,
              Value *plane, Value *lseRow);
  /// Every group's fold merged, valid in group 0 (shared memory; GPU).
  Folded mergeGroups(Folded own);
  /// O (and LSE) of the row from its whole fold; group 0 only.
  void store(const WorkItem &s, Value *qRow, Value *lseRow, Folded all);
  void storeInPieces(Value *row, Value *first, Type *element);

  Value *exp(Value *x) { return target.exp2(b, b.CreateFMul(x, f32(kLog2e))); }
  Value *f32(double v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *splat(Value *x) { return b.CreateVectorSplat(shape.width, x); }
  /// 0 where \p m is -inf (nothing folded yet), so that m - safe(m) and
  /// lse_s - safe(m) never compute -inf - -inf.
  Value *safe(Value *m) {
    return b.CreateSelect(b.CreateFCmpOEQ(m, f32(-INFINITY)), f32(0), m);
  }
  /// i64 row s * plane + lseRow of the partials.
  Value *partialRow(Value *s, Value *plane, Value *lseRow) {
    return b.CreateAdd(b.CreateMul(b.CreateSExt(s, b.getInt64Ty()), plane),
                       lseRow);
  }
  /// Bytes the partial row loads may assume: 16 for 4-column GPU loads (the
  /// workspace is 16-byte aligned, ApiRun.cpp), else a float's.
  Align rowAlign() const {
    return Align(shape.width % 4 == 0 && shape.columnThreads > 1 ? 16 : 4);
  }

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ArgsReader p;
  CombineShape shape;
  FixedVectorType *rowType;
  Value *group = nullptr;  ///< which group this thread is in (i32)
  Value *column = nullptr; ///< its first column (i64)
};
} // namespace

Folded CombineEmitter::fold(ArrayRef<Value *> splits, ArrayRef<Value *> counts,
                            Folded cur, Value *plane, Value *lseRow) {
  SmallVector<Value *, 8> lses, rows;
  for (auto [s, counted] : llvm::zip_equal(splits, counts)) {
    Value *r = partialRow(s, plane, lseRow);
    Value *lse =
        b.CreateLoad(b.getFloatTy(),
                     b.CreateInBoundsGEP(b.getFloatTy(), p.get(kLseAccum), r));
    // -inf weighs exp(-inf - base) = 0 and never raises the maximum.
    lses.push_back(b.CreateSelect(counted, lse, f32(-INFINITY)));
    Value *at =
        b.CreateAdd(b.CreateMul(r, b.getInt64(spec.headDimV())), column);
    rows.push_back(b.CreateAlignedLoad(
        rowType, b.CreateInBoundsGEP(b.getFloatTy(), p.get(kOAccum), at),
        rowAlign()));
  }
  Value *max = cur.max;
  for (Value *lse : lses)
    max = b.CreateMaxNum(max, lse);
  Value *base = safe(max);
  Value *scale = exp(b.CreateFSub(cur.max, base));
  Value *sum = b.CreateFMul(cur.sum, scale);
  Value *row = b.CreateFMul(cur.row, splat(scale));
  for (size_t u = 0; u < lses.size(); ++u) {
    Value *w = exp(b.CreateFSub(lses[u], base));
    sum = b.CreateFAdd(sum, w);
    row = b.CreateIntrinsic(Intrinsic::fmuladd, {rowType},
                            {splat(w), rows[u], row});
  }
  return {max, sum, row};
}

Folded CombineEmitter::foldOwnParts(Value *n, Value *plane, Value *lseRow) {
  Value *groups = b.getInt32(shape.groups);
  // ceil((n - group) / groups): 0 for a group past the last part, and for
  // the threads past the last whole group.
  Value *own = b.CreateSelect(
      b.CreateICmpULT(group, groups),
      b.CreateUDiv(
          b.CreateSub(b.CreateAdd(n, b.getInt32(shape.groups - 1)), group),
          groups),
      b.getInt32(0));
  unsigned step = partsPerStep();
  auto part = [&](Value *k) {
    return b.CreateAdd(group, b.CreateMul(k, groups));
  };
  Folded none{f32(-INFINITY), f32(0), Constant::getNullValue(rowType)};
  auto out = emitForCarried(
      b, b.getInt32(0), own, b.getInt32(step), "split.step",
      {none.max, none.sum, none.row}, [&](Value *k, ArrayRef<Value *> v) {
        // The step's own parts k.. and, past the last, part k again.
        SmallVector<Value *, 8> splits, counts;
        splits.push_back(part(k));
        counts.push_back(b.getTrue());
        for (unsigned u = 1; u < step; ++u) {
          Value *ku = b.CreateAdd(k, b.getInt32(u));
          Value *counted = b.CreateICmpULT(ku, own);
          splits.push_back(part(b.CreateSelect(counted, ku, k)));
          counts.push_back(counted);
        }
        Folded next = fold(splits, counts, {v[0], v[1], v[2]}, plane, lseRow);
        return SmallVector<Value *, 16>{next.max, next.sum, next.row};
      });
  return Folded{out[0], out[1], out[2]};
}

// Scratch: the groups' rows [groups][dv], then their maxima and sums.
Folded CombineEmitter::mergeGroups(Folded own) {
  unsigned dv = spec.headDimV(), groups = shape.groups;
  Value *scratch =
      target.itemScratch(b, combineScratchBytes(shape, spec.headDimV()));
  Type *f = b.getFloatTy();
  auto at = [&](unsigned offset, Value *index) {
    return b.CreateInBoundsGEP(f, scratch,
                               b.CreateAdd(b.getInt64(offset), index));
  };
  Value *g64 = b.CreateZExt(group, b.getInt64Ty());
  Value *inGroups = b.CreateICmpULT(group, b.getInt32(groups));
  emitIf(b, inGroups, "publish", [&] {
    b.CreateAlignedStore(
        own.row, at(0, b.CreateAdd(b.CreateMul(g64, b.getInt64(dv)), column)),
        rowAlign());
    emitIf(b, b.CreateICmpEQ(column, b.getInt64(0)), "publish.stats", [&] {
      b.CreateStore(own.max, at(groups * dv, g64));
      b.CreateStore(own.sum, at(groups * dv + groups, g64));
    });
  });
  target.itemBarrier(b);
  Value *max = f32(-INFINITY);
  for (unsigned g = 0; g < groups; ++g)
    max = b.CreateMaxNum(max,
                         b.CreateLoad(f, at(groups * dv + g, b.getInt64(0))));
  Value *base = safe(max);
  Value *sum = f32(0), *row = Constant::getNullValue(rowType);
  for (unsigned g = 0; g < groups; ++g) {
    Value *m = b.CreateLoad(f, at(groups * dv + g, b.getInt64(0)));
    Value *w = exp(b.CreateFSub(m, base));
    Value *l = b.CreateLoad(f, at(groups * dv + groups + g, b.getInt64(0)));
    sum = b.CreateIntrinsic(Intrinsic::fmuladd, {f}, {w, l, sum});
    Value *x = b.CreateAlignedLoad(rowType, at(g * dv, column), rowAlign());
    row = b.CreateIntrinsic(Intrinsic::fmuladd, {rowType}, {splat(w), x, row});
  }
  return {max, sum, row};
}

// A thread's columns of O in runs of a power of two: AMDGPU's gfx11 and
// gfx12 code generators cannot select a narrowing store of 5 halves (dv =
// 160 on a 32-thread group; found by the compile fuzzer, seed 10068276).
void CombineEmitter::storeInPieces(Value *row, Value *first, Type *element) {
  auto *vector = dyn_cast<FixedVectorType>(row->getType());
  unsigned width = vector ? vector->getNumElements() : 1;
  Align align(element->getScalarSizeInBits() / 8);
  for (unsigned at = 0; at < width;) {
    unsigned piece = llvm::bit_floor(width - at);
    Value *part = row;
    if (piece == 1 && vector)
      part = b.CreateExtractElement(row, b.getInt64(at));
    else if (piece < width)
      part = b.CreateShuffleVector(
          row, llvm::to_vector(llvm::seq<int>(at, at + piece)));
    b.CreateAlignedStore(part, b.CreateConstInBoundsGEP1_32(element, first, at),
                         align);
    at += piece;
  }
}

void CombineEmitter::store(const WorkItem &s, Value *qRow, Value *lseRow,
                           Folded all) {
  // A row whose parts are all empty has sum 0: O = 0 and LSE = -inf.
  Value *some = b.CreateFCmpOGT(all.sum, f32(0));
  Value *inv = b.CreateSelect(some, b.CreateFDiv(f32(1), all.sum), f32(0));
  Value *out = b.CreateFMul(all.row, splat(inv));
  DType type = spec.outType();
  Value *oRow =
      tensorRow(b, p, spec.varlen, kO, kOStrides, s.b, qRow, s.h, type);
  Type *element = elementType(b.getContext(), type);
  storeInPieces(target.narrow(b, out, type),
                b.CreateInBoundsGEP(element, oRow, column), element);
  if (!spec.lse)
    return;
  Value *ln = b.CreateFMul(
      target.log2(b, b.CreateSelect(some, all.sum, f32(1))), f32(kLn2));
  Value *lse =
      b.CreateSelect(some, b.CreateFAdd(all.max, ln), f32(-INFINITY), "lse");
  emitIf(b, b.CreateICmpEQ(column, b.getInt64(0)), "lse", [&] {
    b.CreateStore(lse,
                  b.CreateInBoundsGEP(b.getFloatTy(), p.get(kLse), lseRow));
  });
}

void CombineEmitter::emitRow(const WorkItem &s, Value *i, PartialRows parts) {
  Value *qRow =
      b.CreateAdd(s.qStart, b.CreateSExt(b.CreateAdd(s.i0, i), b.getInt64Ty()));
  Value *lseRow = lseRowIndex(b, p, spec, s, qRow);
  // Row i's parts start i rows after row 0's, with or without a schedule.
  Value *first = b.CreateAdd(parts.first, b.CreateSExt(i, b.getInt64Ty()));
  Folded own = foldOwnParts(parts.parts, parts.stride, first);
  if (target.itemThreads() == 1)
    return store(s, qRow, lseRow, own);
  Folded all = shape.groups > 1 ? mergeGroups(own) : own;
  emitIf(b, b.CreateICmpEQ(group, b.getInt32(0)), "group0",
         [&] { store(s, qRow, lseRow, all); });
  if (shape.groups > 1)
    target.itemBarrier(b); // the next row reuses the scratch
}

void CombineEmitter::emitWorkItem(Value *w) {
  Value *tid = target.itemThread(b);
  unsigned columnThreads = shape.columnThreads;
  group = b.CreateUDiv(tid, b.getInt32(columnThreads), "group");
  column =
      b.CreateZExt(b.CreateMul(b.CreateURem(tid, b.getInt32(columnThreads)),
                               b.getInt32(shape.width)),
                   b.getInt64Ty(), "column");
  WorkItem s = locateWorkItem(b, p, spec, w, {});
  Value *rows = b.CreateSub(s.sq, s.i0);
  rows = b.CreateSelect(b.CreateICmpSLT(rows, b.getInt32(spec.bm)), rows,
                        b.getInt32(spec.bm));
  // The row's parts, found once per item (one sequence, one head). A
  // sequence of one part was finished by its split item: nothing to merge.
  PartialRows parts = combinedPartials(
      b, p, spec, s, b.CreateAdd(s.qStart, b.CreateSExt(s.i0, b.getInt64Ty())));
  rows = b.CreateSelect(b.CreateICmpSGT(parts.parts, b.getInt32(1)), rows,
                        b.getInt32(0), "merged.rows");
  emitFor(b, b.getInt32(0), rows, b.getInt32(1), "row",
          [&](Value *i) { emitRow(s, i, parts); });
}

void fmhajit::emitSplitKvCombineKernel(const KernelSpec &spec,
                                       TargetInfo &target, Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        CombineEmitter(spec, target, b, params).emitWorkItem(workItem);
      });
}
