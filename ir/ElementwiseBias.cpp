//===- ElementwiseBias.cpp - bias=elementwise on a tile of scores ---------===//
#include "ir/ElementwiseBias.h"
#include "ir/TargetInfo.h"

using namespace fmhajit;
using namespace llvm;

namespace {
/// What every element's address needs, read once per tile.
struct BiasArgs {
  Value *sequence;               ///< bias + b * batch stride
  Value *rowStride, *headStride; ///< i64 elements
  Value *keyStride;              ///< i64 elements
  Value *lastQ;                  ///< i32, the sequence's last query
};
} // namespace

static Value *wide(IRBuilderBase &b, Value *v) {
  return b.CreateZExt(v, v->getType()->getWithNewType(b.getInt64Ty()));
}

static Value *smaller(IRBuilderBase &b, Value *v, Value *limit) {
  Value *l = splatLike(b, limit, v);
  return b.CreateSelect(b.CreateICmpSLT(v, l), v, l);
}

// max(n - 1, 0): a length of 0 would otherwise clamp to -1.
static Value *lastOf(IRBuilderBase &b, Value *n) {
  Value *last = b.CreateSub(n, b.getInt32(1));
  return b.CreateSelect(b.CreateICmpSLT(last, b.getInt32(0)), b.getInt32(0),
                        last);
}

// The address of key 0 of tile row \p row's bias row: its query clamped to
// the sequence, its head the item's (plus the row's offset under pack_gqa).
static Value *rowAddress(IRBuilderBase &b, const BiasArgs &a, const WorkItem &s,
                         Value *row) {
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Value *q = smaller(b, queryToken(b, s, packed), a.lastQ);
  Value *h = splatLike(b, s.h, wide(b, row));
  if (s.group)
    h = b.CreateAdd(h, wide(b, queryHeadOffset(b, s, packed)));
  Value *offset =
      b.CreateAdd(b.CreateMul(wide(b, q), splatLike(b, a.rowStride, h)),
                  b.CreateMul(h, splatLike(b, a.headStride, h)));
  return b.CreateInBoundsGEP(b.getFloatTy(), a.sequence, offset, "bias.row");
}

// bias[address]: a gather where lanes are rows.
static Value *loadBias(IRBuilderBase &b, Value *address, Type *type) {
  if (address->getType()->isVectorTy())
    return b.CreateMaskedGather(type, address, Align(4));
  return b.CreateLoad(type, address);
}

static Value *addScaled(IRBuilderBase &b, Value *x, Value *bias) {
  Value *log2e = ConstantFP::get(x->getType(), kLog2e);
  return b.CreateFAdd(x, b.CreateFMul(bias, log2e));
}

void fmhajit::addElementwiseBias(IRBuilderBase &b, ArgsReader &p,
                                 TargetInfo &target, TileOps &ops, Tile &scores,
                                 const WorkItem &s, Value *j0) {
  BiasArgs a{b.CreateInBoundsGEP(b.getFloatTy(), p.get(kBiasTensor),
                                 b.CreateMul(s.b, p.stride(kBiasStrides, 0)),
                                 "bias.b"),
             p.stride(kBiasStrides, 1), p.stride(kBiasStrides, 2),
             p.get(kBiasKeyStride), lastOf(b, s.sq)};
  // The tile's last column that is a key: sk - 1 - j0 >= 0 for every tile
  // the key loop visits.
  Value *lastColumn = b.CreateSub(b.CreateSub(s.sk, j0), b.getInt32(1));
  Value *j0Strided = b.CreateMul(b.CreateSExt(j0, b.getInt64Ty()), a.keyStride);
  Value *keyStride = target.opaqueBase(b, a.keyStride);
  ops.map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
    Value *tile = target.opaqueBase(
        b, b.CreateInBoundsGEP(b.getFloatTy(), rowAddress(b, a, s, row),
                               splatLike(b, j0Strided, wide(b, row))));
    Value *k = wide(b, smaller(b, col, lastColumn));
    Value *at = b.CreateInBoundsGEP(b.getFloatTy(), tile,
                                    b.CreateMul(k, splatLike(b, keyStride, k)));
    return addScaled(b, x, loadBias(b, at, x->getType()));
  });
}
