//===- BackwardKernel.cpp - The flash-attention backward recipes ----------===//
//
// The backward's three kernels (BackwardKernel.h). bwd_dot_do_o and
// bwd_convert_dq, one pass over a query tile each, are written out here;
// bwd_dq_dk_dv's work items are BackwardWorkItems.cpp's, and the gradients
// of each of their steps BackwardScoreGrads.cpp's.
//
//===----------------------------------------------------------------------===//
#include "ir/BackwardKernel.h"
#include "ir/BackwardEmitter.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "specs/EncodedName.h"

using namespace fmhajit;
using namespace llvm;

// Where dQ is summed by atomic adds
// (bwdKeyItemsAddDq), this kernel also zeroes the item's dQAccum rows, as
// FlashAttention-2's does, sparing the caller a memset.
void BackwardEmitter::emitDotDoO(Value *workItem) {
  WorkItem s = locateWorkItem(b, p, spec, workItem, {});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] {
    Value *rows = signedMin(b, i32(spec.bm), b.CreateSub(s.rows, s.i0));
    unsigned dv = spec.headDimV();
    Tile dO = ops->makeTile(TileRole::Query, spec.bm, dv, "do");
    Tile o = ops->makeTile(TileRole::Query, spec.bm, dv, "o");
    RowVec dsum = ops->makeRowVec(spec.bm, "dsum");
    Value *row = tileQueryRow(b, s);
    ops->load(dO, rowsOf(kDO, kDOStrides, s, row, s.h, spec.outType()), rows,
              nullptr);
    ops->load(o, rowsOf(kO, kOStrides, s, row, s.h, spec.outType()), rows,
              nullptr);
    ops->zip(dO, o, [](IRBuilderBase &b, Value *x, Value *y) {
      return b.CreateFMul(x, y);
    });
    ops->rowSum(dO, dsum);
    ops->store(dsum, lseRows(kDPsum, s), rows);
    if (!ops->addsToMemory())
      return;
    Value *accum = p.get(kDQAccum);
    emitIf(b, b.CreateIsNotNull(accum), "zero.dq", [&] {
      Tile zero = ops->makeTile(TileRole::Output, spec.bm, spec.d, "dq.zero");
      ops->fill(zero, 0.0f);
      ops->store(zero, dqAccumRows(s, row), rows);
    });
  });
}

// One work item per query tile, as the forward's: dQ = dQAccum in the out
// dtype (the softmax scale is in dS already).
void BackwardEmitter::emitConvertDq(Value *workItem) {
  WorkItem s = locateWorkItem(b, p, spec, workItem, {});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] {
    Value *rows = signedMin(b, i32(spec.bm), b.CreateSub(s.rows, s.i0));
    Value *row = tileQueryRow(b, s);
    Tile dQ = ops->makeTile(TileRole::Output, spec.bm, spec.d, "dq");
    ops->load(dQ, dqAccumRows(s, row), rows, nullptr);
    ops->store(dQ, rowsOf(kDQ, kDQStrides, s, row, s.h, spec.outType()), rows);
  });
}

void fmhajit::emitDotDoOKernel(const KernelSpec &spec, TargetInfo &target,
                               Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        BackwardEmitter(spec, target, b, params).emitDotDoO(workItem);
      });
}

void fmhajit::emitDqDkDvKernel(const KernelSpec &spec, TargetInfo &target,
                               Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        BackwardEmitter(spec, target, b, params).emitDqDkDv(workItem);
      });
}

void fmhajit::emitConvertDqKernel(const KernelSpec &spec, TargetInfo &target,
                                  Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        BackwardEmitter(spec, target, b, params).emitConvertDq(workItem);
      });
}
