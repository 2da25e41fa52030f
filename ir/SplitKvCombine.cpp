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
  /// Parts per step of the accumulation's main loop.
  static constexpr unsigned kSplitsPerStep = 8;

  void emitRow(const WorkItem &s, Value *row);
  /// acc[k] += exp(lse_s - lse) * oAccum[r_s][c] for each part s of
  /// \p splits and column c = tid + k * threads this thread owns, every
  /// load issued before the first multiply-add.
  void accumulateParts(ArrayRef<Value *> splits, Value *plane, Value *lseRow,
                       Value *lse, Value *acc);
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

void CombineEmitter::accumulateParts(ArrayRef<Value *> splits, Value *plane,
                                     Value *lseRow, Value *lse, Value *acc) {
  Value *dv = b.getInt64(spec.headDimV());
  SmallVector<Value *, kSplitsPerStep> weights, partials;
  for (Value *split : splits)
    weights.push_back(partialLse(split, plane, lseRow));
  for (Value *&w : weights)
    w = exp(b.CreateFSub(w, lse));
  for (Value *split : splits) {
    Value *index = b.CreateAdd(
        b.CreateMul(b.CreateSExt(split, b.getInt64Ty()), plane), lseRow);
    partials.push_back(b.CreateInBoundsGEP(b.getFloatTy(), p.get(kOAccum),
                                           b.CreateMul(index, dv)));
  }
  forOwnedColumns([&](Value *k, Value *c) {
    Value *column = b.CreateZExt(c, b.getInt64Ty());
    SmallVector<Value *, kSplitsPerStep> xs;
    for (Value *partial : partials)
      xs.push_back(
          b.CreateLoad(b.getFloatTy(),
                       b.CreateInBoundsGEP(b.getFloatTy(), partial, column)));
    Value *slot = b.CreateInBoundsGEP(b.getFloatTy(), acc, k);
    Value *sum = b.CreateLoad(b.getFloatTy(), slot);
    for (size_t u = 0; u < xs.size(); ++u)
      sum = b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                              {weights[u], xs[u], sum});
    b.CreateStore(sum, slot);
  });
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
  // The parts kSplitsPerStep at a time, then one at a time: each step
  // issues all its loads before the first multiply-add, so a row waits for
  // memory once a step rather than once a part. On a GPU a decode row is
  // one block, and each wait a trip to L2: bench/decode on an H100 saw
  // GQA 8:1 at 128k keys take 17 us longer with 256 parts than with 128,
  // although the split kernel has twice the blocks.
  Value *steps = b.CreateAnd(n, b.getInt32(~int32_t(kSplitsPerStep - 1)));
  emitFor(b, b.getInt32(0), steps, b.getInt32(kSplitsPerStep), "split.step",
          [&](Value *first) {
            SmallVector<Value *, kSplitsPerStep> splits;
            for (unsigned u = 0; u < kSplitsPerStep; ++u)
              splits.push_back(b.CreateAdd(first, b.getInt32(u)));
            accumulateParts(splits, plane, lseRow, lseSafe, acc);
          });
  emitFor(b, steps, n, b.getInt32(1), "split", [&](Value *split) {
    accumulateParts({split}, plane, lseRow, lseSafe, acc);
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
