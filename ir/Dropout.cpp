//===- Dropout.cpp - dropout=1: Philox keep-masks on tiles of probabilities
//===//
#include "ir/Dropout.h"

using namespace fmhajit;
using namespace llvm;

// Random123's constants (philox.h), as runtime/numerics/Dropout.cpp.
static constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
static constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;

static Value *splatTo(IRBuilderBase &b, Value *x, Type *type) {
  if (x->getType() == type)
    return x;
  return b.CreateVectorSplat(cast<VectorType>(type)->getElementCount(), x);
}

std::array<Value *, 4> fmhajit::emitPhilox(IRBuilderBase &b,
                                           std::array<Value *, 4> c,
                                           std::array<Value *, 2> key) {
  Type *i32 = c[0]->getType();
  Type *i64 = i32->getWithNewType(b.getInt64Ty());
  auto constant = [&](uint32_t v) { return ConstantInt::get(i32, v); };
  // hi:lo of a 32 x 32 -> 64-bit product (mul.wide / v_mul_hi / vpmuludq).
  auto mulHiLo = [&](uint32_t m, Value *x) -> std::pair<Value *, Value *> {
    Value *wide = b.CreateMul(b.CreateZExt(x, i64), ConstantInt::get(i64, m));
    return {b.CreateTrunc(b.CreateLShr(wide, 32), i32),
            b.CreateMul(x, constant(m))};
  };
  for (int round = 0; round < 10; ++round) {
    auto [hi0, lo0] = mulHiLo(kPhiloxM0, c[0]);
    auto [hi1, lo1] = mulHiLo(kPhiloxM1, c[2]);
    c = {b.CreateXor(b.CreateXor(hi1, c[1]), key[0]), lo1,
         b.CreateXor(b.CreateXor(hi0, c[3]), key[1]), lo0};
    if (round < 9)
      key = {b.CreateAdd(key[0], constant(kPhiloxW0)),
             b.CreateAdd(key[1], constant(kPhiloxW1))};
  }
  return c;
}

TileDropout::TileDropout(IRBuilderBase &b, ArgsReader &p) : b(b) {
  Value *seed = p.get(kDropoutSeed, "dropout.seed");
  seedLo = b.CreateTrunc(seed, b.getInt32Ty());
  seedHi = b.CreateTrunc(b.CreateLShr(seed, 32), b.getInt32Ty());
  offset = p.get(kDropoutOffset, "dropout.offset");
  threshold = p.get(kDropoutThreshold, "dropout.threshold");
  headsQ = p.get(kHeadsQ);
  scale = p.get(kDropoutScale, "dropout.scale");
}

Value *TileDropout::keeps(IRBuilderBase &b, const WorkItem &s, Value *plane,
                          Value *row, Value *col, Value *j0) {
  // Row and column may differ in shape (a scalar column of vector rows).
  Type *shape = row->getType()->isVectorTy() ? row->getType() : col->getType();
  row = splatTo(b, row, shape);
  col = splatTo(b, col, shape);
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Value *q = queryToken(b, s, packed);
  Value *head = splatLike(b, plane, row);
  if (s.group)
    head = b.CreateAdd(head, queryHeadOffset(b, s, packed));
  Value *k = b.CreateAdd(col, splatLike(b, j0, col));
  auto splat = [&](Value *x) { return splatLike(b, x, row); };
  std::array<Value *, 4> r = emitPhilox(
      b, {b.CreateLShr(k, splat(b.getInt32(2))), q, head, splat(offset)},
      {splat(seedLo), splat(seedHi)});
  Value *word = b.CreateAnd(k, splat(b.getInt32(3)));
  Value *draw = r[3];
  for (int w = 2; w >= 0; --w)
    draw =
        b.CreateSelect(b.CreateICmpEQ(word, splat(b.getInt32(w))), r[w], draw);
  return b.CreateICmpUGE(draw, splat(threshold), "dropout.keep");
}

void TileDropout::apply(TileOps &ops, Tile &probs, const WorkItem &s, Value *j0,
                        bool scaleKept) {
  Value *plane =
      b.CreateAdd(b.CreateMul(b.CreateTrunc(s.b, b.getInt32Ty()), headsQ),
                  b.CreateTrunc(s.h, b.getInt32Ty()), "dropout.plane");
  ops.map(probs, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
    Value *keep = keeps(b, s, plane, row, col, j0);
    if (keep->getType() != x->getType()->getWithNewType(b.getInt1Ty()))
      keep = b.CreateVectorSplat(
          cast<VectorType>(x->getType())->getElementCount(), keep);
    Value *kept = scaleKept ? b.CreateFMul(x, splatLike(b, scale, x)) : x;
    return b.CreateSelect(
        keep, kept, splatLike(b, ConstantFP::get(b.getFloatTy(), 0.0), x));
  });
}
