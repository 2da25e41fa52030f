//===- ForwardTail.cpp - The parts of a split tail item, folded in place --===//
//
// A walking kernel whose items all cost the same (splitsTail) gives each
// block the same number of items but the last round's: with N items on G
// blocks, the last round holds N mod G items and the other blocks idle
// through it. The launch may cut those items' key ranges into tailParts
// parts (WorkItem.h), so that the round's work spreads over every block.
// Each part ends here instead of storing O:
//  - it stores its partials, O divided by its own sum and its LSE, as
//    splitkv_combine's are but packed by slot: slot part * tailItems + item
//    holds the tile's bm rows (KernelArgs::oAccum, lseAccum);
//  - it counts its arrival (TileOps::arrivesLast: per group of threads that
//    shares the tile's rows, an acquire-release atomic at the device's
//    scope);
//  - the part that arrives last folds the others' partials into its own,
//    still in registers, and stores O and the LSE as a whole item would.
// No part waits for another, and no kernel runs after: the fold costs the
// last part (parts - 1) reads of its rows' partials, from L2.
//
// The fold is the online softmax's over parts: with each part's O already
// divided by its sum, part k weighs exp(lse_k - M), M the largest LSE so
// far, and O = sum_k w_k O_k / sum_k w_k, LSE = M + log(sum_k w_k). A part
// that saw no key (LSE -inf) weighs 0.
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardEmitter.h"
#include "ir/KernelAbi.h"
#include "ir/Loops.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

GlobalRows ForwardEmitter::tailPartials(Value *slot, bool lse) {
  unsigned width = lse ? 1 : spec.headDimV();
  Value *first = b.CreateMul(slot, b.getInt64(int64_t(spec.bm) * width));
  Value *base = b.CreateInBoundsGEP(b.getFloatTy(),
                                    p.get(lse ? kLseAccum : kOAccum), first);
  return {base, b.getInt64(width), DType::F32};
}

Value *ForwardEmitter::finishTailPart(const WorkItem &s, Tile &out, RowVec &lse,
                                      Value *rows, Value *partial) {
  AllocaInst *finishes = entryAlloca(b, b.getInt1Ty(), "tail.finishes");
  b.CreateStore(b.getTrue(), finishes);
  emitIf(b, partial, "tail.part", [&] {
    ops->store(out, tailPartials(s.slot, false), rows);
    ops->store(lse, tailPartials(s.slot, true), rows);
    // Slots are part * tailItems + item, below 2^31 as the items are.
    Value *slot = b.CreateTrunc(s.slot, b.getInt32Ty());
    Value *items = p.get(kTailItems);
    Value *item = b.CreateURem(slot, items, "tail.item");
    Value *counters = b.CreateInBoundsGEP(
        b.getInt32Ty(), p.get(kTailCounters),
        b.CreateZExt(b.CreateMul(item, b.getInt32(kTailGroups)),
                     b.getInt64Ty()));
    Value *last = ops->arrivesLast(counters, s.parts);
    assert(last && "a target that splits tails counts their parts");
    b.CreateStore(last, finishes);
    // A role that stores nothing (the producer) folds nothing.
    if (auto *known = dyn_cast<ConstantInt>(last); known && known->isZero())
      return;
    emitIf(b, last, "tail.last", [&] {
      foldOtherParts(b.CreateUDiv(slot, items, "tail.split"), item, out, lse,
                     rows);
    });
  });
  return b.CreateLoad(b.getInt1Ty(), finishes, "finishes");
}

void ForwardEmitter::foldOtherParts(Value *split, Value *item, Tile &out,
                                    RowVec &lse, Value *rows) {
  auto exp = [&](IRBuilderBase &b, Value *x) {
    return target.exp2(b, b.CreateFMul(x, splatLike(b, f32(1 / kLn2), x)));
  };
  auto isNegInf = [&](IRBuilderBase &b, Value *x) {
    return b.CreateFCmpOEQ(x, splatLike(b, f32(-INFINITY), x));
  };
  // (M, S, O): the largest LSE, the sum of the weights and O's weighted sum.
  RowVec sum = ops->makeRowVec(spec.bm, "tail.sum");
  ops->mapRows(sum, {&lse}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    return b.CreateSelect(isNegInf(b, v[0]), splatLike(b, f32(0), v[0]),
                          splatLike(b, f32(1), v[0]));
  });
  RowVec theirs = ops->makeRowVec(spec.bm, "tail.theirs");
  RowVec max = ops->makeRowVec(spec.bm, "tail.max");
  Value *items = p.get(kTailItems);
  auto times = [](IRBuilderBase &b, Value *x, Value *w) {
    return b.CreateFMul(x, w);
  };
  // lse holds M between parts, and this step's weight of what is folded so
  // far within it; theirs the part's LSE, then its weight.
  auto weigh = [&](RowVec &x) {
    ops->mapRows(x, {&x, &max}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      return b.CreateSelect(isNegInf(b, v[0]), splatLike(b, f32(0), v[0]),
                            exp(b, b.CreateFSub(v[0], v[1])));
    });
  };
  Value *parts = p.get(kTailParts);
  emitFor(b, i32(0), parts, i32(1), "tail.fold", [&](Value *k) {
    emitIf(b, b.CreateICmpNE(k, split), "tail.other", [&] {
      Value *slot = b.CreateZExt(b.CreateAdd(b.CreateMul(k, items), item),
                                 b.getInt64Ty());
      ops->loadRows(theirs, tailPartials(slot, true), rows, -INFINITY);
      ops->mapRows(max, {&lse, &theirs},
                   [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                     return b.CreateMaxNum(v[0], v[1]);
                   });
      weigh(lse);
      weigh(theirs);
      ops->mapWithRow(out, lse, times);
      ops->mapRows(sum, {&sum, &lse, &theirs},
                   [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                     return b.CreateFAdd(b.CreateFMul(v[0], v[1]), v[2]);
                   });
      // The part's O last: it adds into O as it lands.
      ops->addScaledRows(out, tailPartials(slot, false), rows, theirs);
      ops->mapRows(lse, {&max},
                   [](IRBuilderBase &, ArrayRef<Value *> v) { return v[0]; });
    });
  });
  // O /= S and LSE = M + log(S); a row no part saw keeps O = 0, LSE = -inf.
  RowVec inv = ops->makeRowVec(spec.bm, "tail.inv");
  ops->mapRows(inv, {&sum}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[0], splatLike(b, f32(0), v[0]));
    return b.CreateSelect(seen, b.CreateFDiv(splatLike(b, f32(1), v[0]), v[0]),
                          splatLike(b, f32(0), v[0]));
  });
  ops->mapWithRow(out, inv, times);
  ops->mapRows(lse, {&lse, &sum}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[1], splatLike(b, f32(0), v[1]));
    Value *log =
        b.CreateFMul(target.log2(b, v[1]), splatLike(b, f32(kLn2), v[1]));
    return b.CreateSelect(seen, b.CreateFAdd(v[0], log),
                          splatLike(b, f32(-INFINITY), v[0]));
  });
}
