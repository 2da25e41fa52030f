//===- ForwardKernel.cpp - The flash-attention forward recipe -------------===//
//
// Written once in the tile vocabulary; the target decides what a tile is.
// Scores are kept in log2 units (Q carries scale*log2e) so the softmax uses
// exp2; softcap and alibi are applied in those units too.
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardKernel.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "specs/EncodedName.h"
#include <cmath>
#include <limits>

using namespace fmhajit;
using namespace llvm;

namespace {
/// Where one work item's sequence lives.
struct Sequence {
  Value *b, *h, *hk;   ///< batch, query head, key/value head (i64)
  Value *sq, *sk;      ///< this sequence's lengths (i32)
  Value *qStart, *kStart; ///< its first packed row under varlen, else 0 (i64)
  Value *i0;           ///< first query row of the tile (i32)
};

/// The mask's visible band around the diagonal: key j is visible to query i
/// iff j < sk, j <= i + offset + right (if upper) and j >= i + offset - left
/// (if lower).
struct Band {
  bool upper = false, lower = false;
  Value *offset = nullptr, *right = nullptr, *left = nullptr; ///< i32
};

class ForwardEmitter {
public:
  ForwardEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                 Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)) {}

  void emitWorkItem(Value *workItem);

private:
  Sequence locate(Value *workItem);
  Band band(const Sequence &s);
  Value *rowsOf(FwdParamsIndex tensor, FwdParamsIndex strides, Value *batch,
                Value *row, Value *head, DType dtype);
  void emitTile(const Sequence &s);
  void applyScoreMods(Tile &scores, const Sequence &s, const Band &band,
                      Value *j0, Value *rows);
  void emitOnlineSoftmax(Tile &scores, Tile &out, RowVec &m, RowVec &l);
  void emitEpilogue(const Sequence &s, Tile &out, RowVec &m, RowVec &l,
                    Value *rows);

  Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  Value *f32(double v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *minI(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *maxI(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSGT(x, y), x, y); }
  /// v, or 0 where v is -inf: keeps exp2(x - m) finite for rows that have
  /// seen no key yet.
  Value *finiteOrZero(Value *v) {
    Value *isNegInf = b.CreateFCmpOEQ(v, splatLike(b, f32(-INFINITY), v));
    return b.CreateSelect(isNegInf, splatLike(b, f32(0), v), v);
  }

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ParamsReader p;
  std::unique_ptr<TileOps> ops;
};
} // namespace

Sequence ForwardEmitter::locate(Value *w) {
  Sequence s;
  Value *numQTiles = b.CreateSExt(p.get(kNumQTiles), b.getInt64Ty());
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *headsKv = b.CreateSExt(p.get(kHeadsKv), b.getInt64Ty());
  Value *qTile = b.CreateSRem(w, numQTiles, "qtile");
  Value *bh = b.CreateSDiv(w, numQTiles);
  s.h = b.CreateSRem(bh, headsQ, "h");
  s.b = b.CreateSDiv(bh, headsQ, "b");
  s.hk = b.CreateSDiv(s.h, b.CreateSDiv(headsQ, headsKv), "hk"); // GQA groups
  s.i0 = b.CreateMul(b.CreateTrunc(qTile, b.getInt32Ty()), i32(spec.bm), "i0");
  if (!spec.varlen) {
    s.sq = p.get(kSeqlenQ, "sq");
    s.sk = p.get(kSeqlenK, "sk");
    s.qStart = s.kStart = b.getInt64(0);
    return s;
  }
  auto bounds = [&](FwdParamsIndex cu, Value *&start, Value *&len) {
    Value *base = p.get(cu);
    Value *first = b.CreateLoad(b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), base, s.b));
    Value *next = b.CreateLoad(
        b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), base, b.CreateAdd(s.b, b.getInt64(1))));
    start = b.CreateSExt(first, b.getInt64Ty());
    len = b.CreateSub(next, first);
  };
  bounds(kCuSeqlensQ, s.qStart, s.sq);
  bounds(kCuSeqlensK, s.kStart, s.sk);
  return s;
}

Band ForwardEmitter::band(const Sequence &s) {
  Band band;
  if (spec.mask == Mask::None)
    return band;
  band.upper = true;
  band.lower = spec.mask == Mask::Window;
  band.offset = spec.mask == Mask::Causal ? i32(0) : b.CreateSub(s.sk, s.sq);
  if (spec.mask != Mask::Window) {
    band.right = i32(0);
    return band;
  }
  // -1 (any negative) is unbounded, and so is anything past sk + sq, which
  // already reaches every key: clamping there keeps i + offset + right from
  // overflowing (as window sizes near 2^31 did). Unsigned compares catch both.
  Value *unbounded = b.CreateAdd(s.sk, s.sq);
  auto clamp = [&](Value *side) {
    return b.CreateSelect(b.CreateICmpUGT(side, unbounded), unbounded, side);
  };
  band.right = clamp(p.get(kWindowRight));
  band.left = clamp(p.get(kWindowLeft));
  return band;
}

Value *ForwardEmitter::rowsOf(FwdParamsIndex tensor, FwdParamsIndex strides,
                              Value *batch, Value *row, Value *head, DType dtype) {
  Value *offset = b.CreateAdd(b.CreateMul(row, p.stride(strides, 1)),
                              b.CreateMul(head, p.stride(strides, 2)));
  if (!spec.varlen)
    offset = b.CreateAdd(offset, b.CreateMul(batch, p.stride(strides, 0)));
  return b.CreateInBoundsGEP(elementType(b.getContext(), dtype), p.get(tensor),
                             offset);
}

void ForwardEmitter::applyScoreMods(Tile &scores, const Sequence &s,
                                    const Band &band, Value *j0, Value *rows) {
  if (spec.softcap) { // s = c * tanh(s / c), then into log2 units
    Value *c = p.get(kSoftcap);
    Value *invC = b.CreateFDiv(f32(1), c);
    Value *cLog2e = b.CreateFMul(c, f32(kLog2e));
    ops->map(scores, [&](IRBuilderBase &b, Value *, Value *, Value *x) {
      Value *t = target.tanh(b, b.CreateFMul(x, splatLike(b, invC, x)));
      return b.CreateFMul(t, splatLike(b, cLog2e, x));
    });
  }
  if (spec.bias == Bias::Alibi) { // s -= slope_h * |i + sk - sq - j|
    Value *slope = b.CreateLoad(
        b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), p.get(kAlibiSlopes), s.h));
    Value *slopeLog2 = b.CreateFMul(slope, f32(kLog2e));
    Value *rowOrigin = b.CreateAdd(s.i0, b.CreateSub(s.sk, s.sq));
    ops->map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
      Value *dist = b.CreateSub(b.CreateAdd(row, splatLike(b, rowOrigin, row)),
                                b.CreateAdd(col, splatLike(b, j0, col)));
      Value *absDist = b.CreateBinaryIntrinsic(Intrinsic::abs, dist, b.getFalse());
      Value *penalty = b.CreateFMul(b.CreateSIToFP(absDist, x->getType()),
                                    splatLike(b, slopeLog2, x));
      return b.CreateFSub(x, penalty);
    });
  }
  // Only tiles that cross the band's edges or the end of the keys pay for
  // the per-element mask.
  Value *jLast = b.CreateAdd(j0, i32(spec.bn - 1));
  Value *needsMask = b.CreateICmpSGE(jLast, s.sk);
  if (band.upper)
    needsMask = b.CreateOr(needsMask, b.CreateICmpSGT(jLast, b.CreateAdd(s.i0, b.CreateAdd(band.offset, band.right))));
  if (band.lower) {
    Value *lastRow = b.CreateAdd(s.i0, b.CreateSub(rows, i32(1)));
    needsMask = b.CreateOr(needsMask, b.CreateICmpSLT(j0, b.CreateSub(b.CreateAdd(lastRow, band.offset), band.left)));
  }
  emitIf(b, needsMask, "mask", [&] {
    ops->map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
      Value *i = b.CreateAdd(row, splatLike(b, s.i0, row));
      Value *j = b.CreateAdd(col, splatLike(b, j0, col));
      Value *visible = b.CreateICmpSLT(j, splatLike(b, s.sk, j));
      if (band.upper) {
        Value *limit = b.CreateAdd(i, splatLike(b, b.CreateAdd(band.offset, band.right), i));
        visible = b.CreateAnd(visible, b.CreateICmpSLE(j, limit));
      }
      if (band.lower) {
        Value *limit = b.CreateAdd(i, splatLike(b, b.CreateSub(band.offset, band.left), i));
        visible = b.CreateAnd(visible, b.CreateICmpSGE(j, limit));
      }
      return b.CreateSelect(visible, x, splatLike(b, f32(-INFINITY), x));
    });
  });
}

void ForwardEmitter::emitOnlineSoftmax(Tile &scores, Tile &out, RowVec &m,
                                       RowVec &l) {
  RowVec mNew = ops->makeRowVec(spec.bm, "m.new");
  RowVec alpha = ops->makeRowVec(spec.bm, "alpha");
  RowVec sum = ops->makeRowVec(spec.bm, "rowsum");
  ops->rowMax(scores, mNew);
  ops->mapRows(mNew, {&m, &mNew}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    return b.CreateMaxNum(v[0], v[1]);
  });
  ops->mapRows(alpha, {&m, &mNew}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    return target.exp2(b, b.CreateFSub(v[0], finiteOrZero(v[1])));
  });
  ops->mapRows(m, {&mNew}, [](IRBuilderBase &, ArrayRef<Value *> v) { return v[0]; });
  ops->mapWithRow(scores, m, [&](IRBuilderBase &b, Value *x, Value *row) { // P
    return target.exp2(b, b.CreateFSub(x, finiteOrZero(row)));
  });
  ops->rowSum(scores, sum);
  ops->mapRows(l, {&l, &alpha, &sum}, [](IRBuilderBase &b, ArrayRef<Value *> v) {
    return b.CreateFAdd(b.CreateFMul(v[0], v[1]), v[2]);
  });
  ops->mapWithRow(out, alpha, [](IRBuilderBase &b, Value *x, Value *row) {
    return b.CreateFMul(x, row);
  });
}

void ForwardEmitter::emitEpilogue(const Sequence &s, Tile &out, RowVec &m,
                                  RowVec &l, Value *rows) {
  RowVec inv = ops->makeRowVec(spec.bm, "inv.l");
  ops->mapRows(inv, {&l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[0], splatLike(b, f32(0), v[0]));
    return b.CreateSelect(seen, b.CreateFDiv(splatLike(b, f32(1), v[0]), v[0]),
                          splatLike(b, f32(0), v[0]));
  });
  ops->mapWithRow(out, inv, [](IRBuilderBase &b, Value *x, Value *row) {
    return b.CreateFMul(x, row);
  });
  Value *qRow = b.CreateAdd(s.qStart, b.CreateSExt(s.i0, b.getInt64Ty()));
  ops->store(out, {rowsOf(kO, kOStrides, s.b, qRow, s.h, spec.outType()),
                   p.stride(kOStrides, 1), spec.outType()},
             rows);
  if (!spec.lse)
    return;
  RowVec lse = ops->makeRowVec(spec.bm, "lse");
  ops->mapRows(lse, {&m, &l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[1], splatLike(b, f32(0), v[1]));
    Value *logSum = b.CreateFAdd(v[0], target.log2(b, v[1]));
    return b.CreateSelect(seen, b.CreateFMul(logSum, splatLike(b, f32(kLn2), logSum)),
                          splatLike(b, f32(-INFINITY), v[0]));
  });
  // [batch, headsQ, seqlenQ], or [headsQ, totalQ] under varlen.
  Value *headsQ = b.CreateSExt(p.get(kHeadsQ), b.getInt64Ty());
  Value *rowIndex;
  if (spec.varlen) {
    Value *cuQ = p.get(kCuSeqlensQ);
    Value *totalQ = b.CreateLoad(b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), cuQ, b.CreateSExt(p.get(kBatch), b.getInt64Ty())));
    rowIndex = b.CreateAdd(b.CreateMul(s.h, b.CreateSExt(totalQ, b.getInt64Ty())), qRow);
  } else {
    Value *seqlenQ = b.CreateSExt(p.get(kSeqlenQ), b.getInt64Ty());
    rowIndex = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(s.b, headsQ), s.h), seqlenQ), qRow);
  }
  ops->store(lse, b.CreateInBoundsGEP(b.getFloatTy(), p.get(kLse), rowIndex), rows);
}

void ForwardEmitter::emitTile(const Sequence &s) {
  Value *rows = minI(i32(spec.bm), b.CreateSub(s.sq, s.i0));
  Band mask = band(s);
  Value *kvBegin = i32(0), *kvEnd = s.sk;
  if (mask.lower)
    kvBegin = maxI(i32(0), b.CreateSub(b.CreateAdd(s.i0, mask.offset), mask.left));
  if (mask.upper) {
    Value *lastRow = b.CreateAdd(s.i0, b.CreateSub(rows, i32(1)));
    kvEnd = minI(s.sk, b.CreateAdd(b.CreateAdd(lastRow, mask.offset), b.CreateAdd(mask.right, i32(1))));
  }

  Tile q = ops->makeTile(TileRole::Query, spec.bm, spec.d, "q");
  Tile kT = ops->makeTile(TileRole::KeyT, spec.d, spec.bn, "kT");
  Tile v = ops->makeTile(TileRole::Value, spec.bn, spec.dv, "v");
  Tile scores = ops->makeTile(TileRole::Scores, spec.bm, spec.bn, "s");
  Tile out = ops->makeTile(TileRole::Output, spec.bm, spec.dv, "o");
  RowVec m = ops->makeRowVec(spec.bm, "m"), l = ops->makeRowVec(spec.bm, "l");

  Value *scale = p.get(kScale);
  Value *qScale = spec.softcap ? scale : b.CreateFMul(scale, f32(kLog2e));
  Value *qRow = b.CreateAdd(s.qStart, b.CreateSExt(s.i0, b.getInt64Ty()));
  ops->load(q, {rowsOf(kQ, kQStrides, s.b, qRow, s.h, spec.dtype), p.stride(kQStrides, 1), spec.dtype},
            rows, qScale);
  ops->fill(m, -INFINITY);
  ops->fill(l, 0.0f);
  ops->fill(out, 0.0f);

  emitFor(b, kvBegin, kvEnd, i32(spec.bn), "kv", [&](Value *j0) {
    Value *valid = minI(i32(spec.bn), b.CreateSub(s.sk, j0));
    Value *kRow = b.CreateAdd(s.kStart, b.CreateSExt(j0, b.getInt64Ty()));
    // V is requested before it is needed so targets that copy asynchronously
    // overlap it with S = QK^T and the softmax.
    ops->load(kT, {rowsOf(kK, kKStrides, s.b, kRow, s.hk, spec.dtype), p.stride(kKStrides, 1), spec.dtype},
              valid, nullptr);
    ops->load(v, {rowsOf(kV, kVStrides, s.b, kRow, s.hk, spec.dtype), p.stride(kVStrides, 1), spec.dtype},
              valid, nullptr);
    ops->fill(scores, 0.0f);
    ops->mma(scores, q, kT);
    applyScoreMods(scores, s, mask, j0, rows);
    emitOnlineSoftmax(scores, out, m, l);
    ops->mma(out, scores, v);
  });
  emitEpilogue(s, out, m, l, rows);
}

void ForwardEmitter::emitWorkItem(Value *workItem) {
  Sequence s = locate(workItem);
  emitIf(b, b.CreateICmpSLT(s.i0, s.sq), "tile", [&] { emitTile(s); });
}

void fmhajit::emitForwardKernel(const KernelSpec &spec, TargetInfo &target,
                                Module &m) {
  target.emitKernel(m, encodeName(spec), fwdParamsType(m.getContext()),
                    [&](IRBuilderBase &b, Value *params, Value *workItem) {
                      ForwardEmitter(spec, target, b, params).emitWorkItem(workItem);
                    });
}
