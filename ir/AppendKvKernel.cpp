//===- AppendKvKernel.cpp - Appending new K/V rows to a cache -------------===//
//
// A copy kernel with a rotation on the way: no tiles, one row at a time,
// GPU threads striding over a row's pairs and elements. Whether the cache
// is paged, whether Q is rotated and which rotary form applies are run-time
// arguments, so one kernel per (dtype, d, dv) serves every cache.
//
//===----------------------------------------------------------------------===//
#include "ir/AppendKvKernel.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class AppendEmitter {
public:
  AppendEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                Value *params)
      : spec(spec), target(target), b(b), p(b, params) {}

  void emitWorkItem(Value *w);

private:
  Value *cacheRow(KernelArgsField pool, KernelArgsField strides, Value *batch,
                  Value *pos, Value *head);
  void rotateRow(Value *src, DType srcType, Value *dst, DType dstType,
                 Value *pos);
  void copyElements(Value *src, DType srcType, Value *dst, DType dstType,
                    Value *begin, unsigned end);
  /// for (i = tid + begin; i < end; i += threads)
  void forThreadStrided(Value *begin, Value *end, const Twine &name,
                        function_ref<void(Value *)> body) {
    emitFor(b, b.CreateAdd(begin, tid), end, b.getInt32(target.itemThreads()),
            name, body);
  }
  Value *loadFloat(Value *row, DType t, Value *index) {
    Type *elem = elementType(b.getContext(), t);
    Value *x = b.CreateLoad(
        elem,
        b.CreateInBoundsGEP(elem, row, b.CreateZExt(index, b.getInt64Ty())));
    return elem->isFloatTy() ? x : b.CreateFPExt(x, b.getFloatTy());
  }
  void storeFloat(Value *row, DType t, Value *index, Value *x) {
    Type *elem = elementType(b.getContext(), t);
    b.CreateStore(
        target.narrow(b, x, t),
        b.CreateInBoundsGEP(elem, row, b.CreateZExt(index, b.getInt64Ty())));
  }

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ArgsReader p;
  Value *tid = nullptr;
};
} // namespace

// Whether the cache is paged is known only at run time (blockTable null or
// not), so the page and the row inside it are chosen by a branch.
Value *AppendEmitter::cacheRow(KernelArgsField pool, KernelArgsField strides,
                               Value *batch, Value *pos, Value *head) {
  Value *page = entryAlloca(b, b.getInt64Ty(), "page");
  Value *offset = entryAlloca(b, b.getInt64Ty(), "offset");
  b.CreateStore(batch, page);
  b.CreateStore(b.CreateSExt(pos, b.getInt64Ty()), offset);
  Value *table = p.get(kBlockTable);
  emitIf(b, b.CreateIsNotNull(table), "paged", [&] {
    Value *log2Page = p.get(kLog2PageSize);
    Value *slot =
        b.CreateAdd(b.CreateMul(batch, b.CreateSExt(p.get(kMaxPagesPerSeq),
                                                    b.getInt64Ty())),
                    b.CreateZExt(b.CreateLShr(pos, log2Page), b.getInt64Ty()));
    Value *index = b.CreateLoad(
        b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), table, slot));
    Value *mask =
        b.CreateSub(b.CreateShl(b.getInt32(1), log2Page), b.getInt32(1));
    b.CreateStore(b.CreateSExt(index, b.getInt64Ty()), page);
    b.CreateStore(b.CreateZExt(b.CreateAnd(pos, mask), b.getInt64Ty()), offset);
  });
  Value *elements =
      b.CreateAdd(b.CreateAdd(b.CreateMul(b.CreateLoad(b.getInt64Ty(), page),
                                          p.stride(strides, 0)),
                              b.CreateMul(b.CreateLoad(b.getInt64Ty(), offset),
                                          p.stride(strides, 1))),
                  b.CreateMul(head, p.stride(strides, 2)));
  return b.CreateInBoundsGEP(elementType(b.getContext(), spec.dtype),
                             p.get(pool), elements);
}

void AppendEmitter::copyElements(Value *src, DType srcType, Value *dst,
                                 DType dstType, Value *begin, unsigned end) {
  Type *elem = elementType(b.getContext(), srcType);
  forThreadStrided(begin, b.getInt32(end), "copy", [&](Value *c) {
    if (srcType != dstType) {
      storeFloat(dst, dstType, c, loadFloat(src, srcType, c));
      return;
    }
    Value *index =
        b.CreateZExt(c, b.getInt64Ty()); // same type: the bits as they are
    b.CreateStore(b.CreateLoad(elem, b.CreateInBoundsGEP(elem, src, index)),
                  b.CreateInBoundsGEP(elem, dst, index));
  });
}

void AppendEmitter::rotateRow(Value *src, DType srcType, Value *dst,
                              DType dstType, Value *pos) {
  Value *rotaryDim = p.get(kRotaryDim, "rotary.dim");
  Value *half = b.CreateLShr(rotaryDim, b.getInt32(1));
  Value *interleaved = b.CreateICmpNE(p.get(kRotaryInterleaved), b.getInt32(0));
  Value *tableRow = b.CreateMul(b.CreateSExt(pos, b.getInt64Ty()),
                                b.CreateZExt(half, b.getInt64Ty()));
  Value *cosRow =
      b.CreateInBoundsGEP(b.getFloatTy(), p.get(kRotaryCos), tableRow);
  Value *sinRow =
      b.CreateInBoundsGEP(b.getFloatTy(), p.get(kRotarySin), tableRow);
  forThreadStrided(b.getInt32(0), half, "pair", [&](Value *k) {
    Value *e0 = b.CreateSelect(interleaved, b.CreateShl(k, b.getInt32(1)), k);
    Value *e1 = b.CreateSelect(interleaved, b.CreateAdd(e0, b.getInt32(1)),
                               b.CreateAdd(k, half));
    Value *x0 = loadFloat(src, srcType, e0), *x1 = loadFloat(src, srcType, e1);
    Value *c = loadFloat(cosRow, DType::F32, k),
          *s = loadFloat(sinRow, DType::F32, k);
    storeFloat(dst, dstType, e0,
               b.CreateFSub(b.CreateFMul(x0, c), b.CreateFMul(x1, s)));
    storeFloat(dst, dstType, e1,
               b.CreateFAdd(b.CreateFMul(x1, c), b.CreateFMul(x0, s)));
  });
  copyElements(src, srcType, dst, dstType, rotaryDim, spec.d);
}

void AppendEmitter::emitWorkItem(Value *w) {
  tid = target.itemThread(b);
  WorkItem s = locateWorkItem(b, p, spec, w, {false, /*cacheLengths=*/true});
  Value *rows = b.CreateSub(s.sq, s.i0);
  rows = b.CreateSelect(b.CreateICmpSLT(rows, b.getInt32(spec.bm)), rows,
                        b.getInt32(spec.bm));
  Value *ownsKv = b.CreateICmpSLT(
      s.h, b.CreateSExt(p.get(kHeadsKv), b.getInt64Ty()), "owns.kv");
  Value *rotatesQ = b.CreateIsNotNull(p.get(kQ), "rotates.q");
  emitFor(b, b.getInt32(0), rows, b.getInt32(1), "row", [&](Value *i) {
    Value *newRow = b.CreateSExt(b.CreateAdd(s.i0, i), b.getInt64Ty());
    Value *pos = b.CreateAdd(s.sk, b.CreateAdd(s.i0, i), "pos");
    emitIf(b, ownsKv, "kv", [&] {
      Value *kSrc = tensorRow(b, p, false, kKNew, kKNewStrides, s.b, newRow,
                              s.h, spec.dtype);
      rotateRow(kSrc, spec.dtype, cacheRow(kK, kKStrides, s.b, pos, s.h),
                spec.dtype, pos);
      Value *vSrc = tensorRow(b, p, false, kVNew, kVNewStrides, s.b, newRow,
                              s.h, spec.dtype);
      copyElements(vSrc, spec.dtype, cacheRow(kV, kVStrides, s.b, pos, s.h),
                   spec.dtype, b.getInt32(0), spec.headDimV());
    });
    emitIf(b, rotatesQ, "q", [&] {
      Value *qSrc =
          tensorRow(b, p, false, kQ, kQStrides, s.b, newRow, s.h, spec.dtype);
      Value *qDst = tensorRow(b, p, false, kO, kOStrides, s.b, newRow, s.h,
                              spec.outType());
      rotateRow(qSrc, spec.dtype, qDst, spec.outType(), pos);
    });
  });
}

void fmhajit::emitAppendKvKernel(const KernelSpec &spec, TargetInfo &target,
                                 Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        AppendEmitter(spec, target, b, params).emitWorkItem(workItem);
      });
}
