//===- TargetInfo.cpp - Shared parts of the target interface --------------===//
#include "ir/TargetInfo.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/PatternMatch.h"

using namespace fmhajit;
using namespace llvm;
using namespace llvm::PatternMatch;

TargetInfo::~TargetInfo() = default;
TileOps::~TileOps() = default;

void TileOps::scaleRows(Tile &t, const RowVec &factor) {
  mapWithRow(t, factor, [](IRBuilderBase &b, Value *x, Value *f) {
    return b.CreateFMul(x, f);
  });
}

void TileOps::mmaRescaled(Tile &acc, const RowVec &accScale, const Tile &a,
                          const Tile &b) {
  scaleRows(acc, accScale);
  mma(acc, a, b);
}

void TileOps::startProduct(Tile &acc, const Tile &a, const Tile &b,
                           bool accumulate) {
  if (accumulate)
    mma(acc, a, b);
  else
    matmul(acc, a, b);
}

void TileOps::copy(Tile &, const Tile &) {
  llvm_unreachable("copy() belongs to targets that overlap products");
}

Tile TileOps::transposed(const Tile &) {
  llvm_unreachable("transposed() belongs to targets that run the backward");
}

void TileOps::zip(Tile &, const Tile &, ZipFn) {
  llvm_unreachable("zip() belongs to targets that run the backward");
}

void TileOps::loadRows(RowVec &, const GlobalRows &, Value *, float) {
  llvm_unreachable("loadRows() belongs to targets that run the backward "
                   "or split tails");
}

void TileOps::addScaledRows(Tile &, const GlobalRows &, Value *,
                            const RowVec &) {
  llvm_unreachable("addScaledRows() belongs to targets that split tails");
}

void TileOps::storeAdd(const Tile &, const GlobalRows &, Value *) {
  llvm_unreachable("storeAdd() belongs to targets where addsToMemory()");
}

void TileOps::matmul(Tile &acc, const Tile &a, const Tile &b) {
  fill(acc, 0.0f);
  mma(acc, a, b);
}

void TileOps::mapWithRowThenSum(Tile &t, const RowVec &row, WithRowFn fn,
                                RowVec &sum) {
  mapWithRow(t, row, fn);
  rowSum(t, sum);
}

Value *TargetInfo::log2(IRBuilderBase &b, Value *x) {
  return b.CreateUnaryIntrinsic(Intrinsic::log2, x);
}

Value *TargetInfo::narrow(IRBuilderBase &b, Value *x, DType t) {
  Type *to = x->getType()->getWithNewType(elementType(b.getContext(), t));
  return to == x->getType() ? x : b.CreateFPTrunc(x, to);
}

Value *TargetInfo::itemThread(IRBuilderBase &b) { return b.getInt32(0); }

Value *TargetInfo::itemScratch(IRBuilderBase &b, unsigned bytes) {
  return entryAlloca(b, b.getInt8Ty(), "scratch", 16, bytes);
}

Value *TargetInfo::reciprocal(IRBuilderBase &b, Value *x) {
  return b.CreateFDiv(splatLike(b, ConstantFP::get(b.getFloatTy(), 1.0), x), x);
}

Value *TargetInfo::tanh(IRBuilderBase &b, Value *x) {
  Value *one = splatLike(b, ConstantFP::get(b.getFloatTy(), 1.0), x);
  Value *two = splatLike(b, ConstantFP::get(b.getFloatTy(), 2.0), x);
  Value *absX = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
  Value *e = exp2(
      b,
      b.CreateFMul(
          absX, splatLike(b, ConstantFP::get(b.getFloatTy(), 2 * kLog2e), x)));
  Value *t =
      b.CreateFSub(one, b.CreateFMul(two, reciprocal(b, b.CreateFAdd(e, one))));
  return b.CreateBinaryIntrinsic(Intrinsic::copysign, t, x);
}

Value *fmhajit::splatLike(IRBuilderBase &b, Value *scalar, Value *like) {
  if (auto *vt = dyn_cast<VectorType>(like->getType()))
    return b.CreateVectorSplat(vt->getElementCount(), scalar);
  return scalar;
}

Value *GlobalRows::rowPointer(IRBuilderBase &b, Value *row) const {
  if (rowAddress)
    return rowAddress(b, row);
  Value *offset = match(rowStride, m_One()) ? row : b.CreateMul(row, rowStride);
  return b.CreateInBoundsGEP(elementType(b.getContext(), dtype), base, offset);
}

Value *GlobalRows::rowPointerOrFirst(IRBuilderBase &b, Value *row,
                                     Value *inside) const {
  Value *safeRow = b.CreateSelect(inside, row, b.getInt32(0));
  return rowPointer(b, b.CreateZExt(safeRow, b.getInt64Ty()));
}
