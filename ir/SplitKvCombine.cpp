//===- SplitKvCombine.cpp - Merging split-KV partial results --------------===//
//
// A plain loop per work item, no tiles: the combine reads numSplits * dv
// floats per row and does a handful of flops on each, so it is bound by
// memory and needs no matrix unit. GPU threads split a row's columns;
// every thread recomputes the row's LSE (numSplits loads, cached).
//
//===----------------------------------------------------------------------===//
#include "ir/SplitKvCombine.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

namespace {
class CombineEmitter {
public:
  CombineEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                 Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        threads(target.itemThreads()),
        perThread((spec.headDimV() + threads - 1) / threads) {}

  void emitWorkItem(Value *w);

private:
  void emitRow(const WorkItem &s, Value *row);
  Value *rowLse(Value *n, Value *plane, Value *lseRow);
  Value *exp(Value *x) { return target.exp2(b, b.CreateFMul(x, f32(kLog2e))); }
  Value *f32(double v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *partialLse(Value *s, Value *plane, Value *lseRow) {
    Value *index = b.CreateAdd(
        b.CreateMul(b.CreateSExt(s, b.getInt64Ty()), plane), lseRow);
    return b.CreateLoad(
        b.getFloatTy(),
        b.CreateInBoundsGEP(b.getFloatTy(), p.get(kLseAccum), index));
  }
  /// Calls body(k, c) for the columns c = tid + k * threads < dv this
  /// thread owns.
  void forOwnedColumns(function_ref<void(Value *k, Value *c)> body);

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ArgsReader p;
  unsigned threads, perThread;
  Value *tid = nullptr;
};
} // namespace

void CombineEmitter::forOwnedColumns(
    function_ref<void(Value *, Value *)> body) {
  emitFor(b, perThread, "cols", [&](Value *k) {
    // Neighbouring GPU threads take neighbouring columns (coalesced).
    Value *c = b.CreateAdd(tid, b.CreateMul(b.CreateTrunc(k, b.getInt32Ty()),
                                            b.getInt32(threads)));
    if (spec.headDimV() % threads == 0) {
      body(k, c);
      return;
    }
    emitIf(b, b.CreateICmpULT(c, b.getInt32(spec.headDimV())), "col",
           [&] { body(k, c); });
  });
}

// ln(sum_s exp(lse_s - mx)) + mx in two passes over the splits' LSEs.
Value *CombineEmitter::rowLse(Value *n, Value *plane, Value *lseRow) {
  Value *mx =
      emitForCarried(b, b.getInt32(0), n, b.getInt32(1), "max",
                     {f32(-INFINITY)}, [&](Value *s, ArrayRef<Value *> cur) {
                       return SmallVector<Value *, 16>{b.CreateMaxNum(
                           cur[0], partialLse(s, plane, lseRow))};
                     })[0];
  Value *empty = b.CreateFCmpOEQ(mx, f32(-INFINITY), "empty");
  Value *mxSafe = b.CreateSelect(empty, f32(0), mx);
  Value *sum = emitForCarried(
      b, b.getInt32(0), n, b.getInt32(1), "sum", {f32(0)},
      [&](Value *s, ArrayRef<Value *> cur) {
        Value *w = exp(b.CreateFSub(partialLse(s, plane, lseRow), mxSafe));
        return SmallVector<Value *, 16>{b.CreateFAdd(cur[0], w)};
      })[0];
  Value *lse = b.CreateFAdd(mx, b.CreateFMul(target.log2(b, sum), f32(kLn2)));
  return b.CreateSelect(empty, f32(-INFINITY), lse, "lse");
}

void CombineEmitter::emitRow(const WorkItem &s, Value *i) {
  Value *qRow =
      b.CreateAdd(s.qStart, b.CreateSExt(b.CreateAdd(s.i0, i), b.getInt64Ty()));
  Value *lseRow = lseRowIndex(b, p, spec, s, qRow);
  Value *plane = lsePlaneSize(b, p, spec);
  Value *n = numSplits(b, p);
  Value *lse = rowLse(n, plane, lseRow);
  // With every part empty, lse - 0 = -inf gives weights 0 and O = 0.
  Value *lseSafe =
      b.CreateSelect(b.CreateFCmpOEQ(lse, f32(-INFINITY)), f32(0), lse);
  Value *acc = entryAlloca(b, b.getFloatTy(), "acc", 4, perThread);
  forOwnedColumns([&](Value *k, Value *) {
    b.CreateStore(f32(0), b.CreateInBoundsGEP(b.getFloatTy(), acc, k));
  });
  Value *dv = b.getInt64(spec.headDimV());
  emitFor(b, b.getInt32(0), n, b.getInt32(1), "split", [&](Value *split) {
    Value *w = exp(b.CreateFSub(partialLse(split, plane, lseRow), lseSafe));
    Value *index = b.CreateAdd(
        b.CreateMul(b.CreateSExt(split, b.getInt64Ty()), plane), lseRow);
    Value *partial = b.CreateInBoundsGEP(b.getFloatTy(), p.get(kOAccum),
                                         b.CreateMul(index, dv));
    forOwnedColumns([&](Value *k, Value *c) {
      Value *slot = b.CreateInBoundsGEP(b.getFloatTy(), acc, k);
      Value *x = b.CreateLoad(
          b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), partial,
                                              b.CreateZExt(c, b.getInt64Ty())));
      b.CreateStore(
          b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                            {w, x, b.CreateLoad(b.getFloatTy(), slot)}),
          slot);
    });
  });
  DType out = spec.outType();
  Value *oRow =
      tensorRow(b, p, spec.varlen, kO, kOStrides, s.b, qRow, s.h, out);
  forOwnedColumns([&](Value *k, Value *c) {
    Value *x = b.CreateLoad(b.getFloatTy(),
                            b.CreateInBoundsGEP(b.getFloatTy(), acc, k));
    b.CreateStore(target.narrow(b, x, out),
                  b.CreateInBoundsGEP(elementType(b.getContext(), out), oRow,
                                      b.CreateZExt(c, b.getInt64Ty())));
  });
  if (spec.lse)
    emitIf(b, b.CreateICmpEQ(tid, b.getInt32(0)), "lse", [&] {
      b.CreateStore(lse,
                    b.CreateInBoundsGEP(b.getFloatTy(), p.get(kLse), lseRow));
    });
}

void CombineEmitter::emitWorkItem(Value *w) {
  tid = target.itemThread(b);
  WorkItem s = locateWorkItem(b, p, spec, w, {});
  Value *rows = b.CreateSub(s.sq, s.i0);
  rows = b.CreateSelect(b.CreateICmpSLT(rows, b.getInt32(spec.bm)), rows,
                        b.getInt32(spec.bm));
  emitFor(b, b.getInt32(0), rows, b.getInt32(1), "row",
          [&](Value *i) { emitRow(s, i); });
}

void fmhajit::emitSplitKvCombineKernel(const KernelSpec &spec,
                                       TargetInfo &target, Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        CombineEmitter(spec, target, b, params).emitWorkItem(workItem);
      });
}
