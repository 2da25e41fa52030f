//===- ForwardKeyLoops.cpp - The forward's walk over key tiles ------------===//
//
// The key loop of one query tile, in two orders (a target's products run
// at once, or start and finish: TileOps::overlapsProducts), and the online
// softmax each step takes (ForwardKernel.cpp's comment: the folded scale,
// the lazy rescale, fp8's shift).
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardEmitter.h"
#include "ir/Loops.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

RowVec ForwardEmitter::emitOnlineSoftmax(KeyWalk &w) {
  bool fp8 = isFp8(spec.dtype);
  Value *scale = w.scoreScale;
  double threshold = fp8 ? kFp8RescaleThreshold : kRescaleThreshold;
  RowVec alpha = ops->makeRowVec(spec.bm, "alpha");
  RowVec sum = ops->makeRowVec(spec.bm, "rowsum");
  auto scaled = [&](IRBuilderBase &b, Value *tileMax) {
    return scale ? b.CreateFMul(tileMax, splatLike(b, scale, tileMax))
                 : tileMax;
  };
  // Whether the max grew past the threshold (false while both are -inf).
  auto grown = [&](IRBuilderBase &b, Value *m, Value *mNew) {
    return b.CreateFCmpOGT(b.CreateFSub(mNew, m),
                           splatLike(b, f32(threshold), m));
  };
  auto rescaleGrownRows = [&] {
    RowVec mNew = ops->makeRowVec(spec.bm, "m.new");
    ops->rowMax(w.scores, mNew);
    ops->mapRows(mNew, {&w.m, &mNew},
                 [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                   return b.CreateMaxNum(v[0], scaled(b, v[1]));
                 });
    ops->mapRows(alpha, {&w.m, &mNew},
                 [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                   return b.CreateSelect(
                       grown(b, v[0], v[1]),
                       target.exp2(b, b.CreateFSub(v[0], finiteOrZero(v[1]))),
                       splatLike(b, f32(1), v[0]));
                 });
    ops->mapRows(w.m, {&w.m, &mNew},
                 [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                   return b.CreateSelect(grown(b, v[0], v[1]), v[1], v[0]);
                 });
  };
  // The test grows with the part's max, so it holds for some part exactly
  // where it holds for some row's max: where none grew, m stays and
  // alpha is 1, the same values rescaleGrownRows() would give.
  Value *someRowGrew = ops->anyRowPartMax(
      w.scores, w.m, [&](IRBuilderBase &b, Value *partMax, Value *m) {
        return grown(b, m, b.CreateMaxNum(m, scaled(b, partMax)));
      });
  if (someRowGrew)
    emitIfElse(b, someRowGrew, "max.grew", rescaleGrownRows,
               [&] { ops->fill(alpha, 1.0f); });
  else
    rescaleGrownRows();
  RowVec pivot = w.m; // P = 2^(s - pivot)
  if (fp8) {
    pivot = ops->makeRowVec(spec.bm, "m.fp8");
    ops->mapRows(pivot, {&w.m}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      return b.CreateFSub(v[0], splatLike(b, f32(kFp8ProbabilityShift), v[0]));
    });
  }
  ops->mapWithRowThenSum(
      w.scores, pivot,
      [&](IRBuilderBase &b, Value *x, Value *row) { // P
        Value *m = finiteOrZero(row);
        if (!scale)
          return target.exp2(b, b.CreateFSub(x, m));
        return target.exp2(
            b, b.CreateIntrinsic(Intrinsic::fmuladd, {x->getType()},
                                 {x, splatLike(b, scale, x), b.CreateFNeg(m)}));
      },
      sum);
  ops->mapRows(w.l, {&w.l, &alpha, &sum},
               [](IRBuilderBase &b, ArrayRef<Value *> v) {
                 return b.CreateFAdd(b.CreateFMul(v[0], v[1]), v[2]);
               });
  return alpha;
}

// Software-pipelined like FlashAttention-2: once K_j is ready, V_j is
// requested and copies while S = Q K_j^T is computed; once V_j is ready,
// K_j+1 is requested and copies during the softmax and O += P V_j. Past the
// last tile the request names the current tile with no valid rows: it reads
// nothing, and every iteration issues the same copies. Under fwd_paged each
// iteration first prefetches K_j+1's block-table lines, so its lookups hit
// the cache (docs/design.md, "Paged decode").
void ForwardEmitter::emitKeyLoop(KeyWalk &w) {
  const WorkItem &s = w.s;
  const KeyTiles &keys = w.keys;
  Value *any = b.CreateICmpSLT(keys.begin, keys.end);
  Value *first = keys.at(keys.begin).j0;
  Value *firstKeys = b.CreateSelect(any, keysAt(s, first), i32(0));
  if (ops->warmsRows()) // V_0 arrives while K_0 is copied
    ops->warmRows(kvRows(w, kV, first), firstKeys, spec.headDimV());
  ops->load(w.kT, kvRows(w, kK, first), firstKeys, nullptr);
  emitFor(b, keys.begin, keys.end, i32(keys.step), "kv", [&](Value *pos) {
    KeyTile tile = keys.at(pos);
    Value *j0 = tile.j0;
    Value *nextPos = nullptr, *more = nullptr, *next = nullptr;
    auto findNext = [&] {
      nextPos = b.CreateAdd(pos, i32(keys.step));
      more = b.CreateICmpSLT(nextPos, keys.end);
      next = keys.at(b.CreateSelect(more, nextPos, pos)).j0;
    };
    if (paged) { // K_j+1's page numbers are on their way during S_j
      findNext();
      w.pagedK.prefetch(b, target, next, keysAt(s, next), spec.bn);
    }
    if (ops->warmsRows()) { // K_j+1 and V_j+1 arrive during this step
      if (!next)
        findNext();
      Value *nextKeys = b.CreateSelect(more, keysAt(s, next), i32(0));
      ops->warmRows(kvRows(w, kK, next), nextKeys, spec.d);
      ops->warmRows(kvRows(w, kV, next), nextKeys, spec.headDimV());
    }
    ops->sync(w.kT);
    ops->load(w.v, kvRows(w, kV, j0), keysAt(s, j0), nullptr);
    ops->matmul(w.scores, w.q, w.kT);
    mods.apply(w.scores, s, w.mask, j0, w.tokens, tile.full);
    ops->sync(w.v);
    if (!next)
      findNext();
    ops->load(w.kT, kvRows(w, kK, next),
              b.CreateSelect(more, keysAt(s, next), i32(0)), nullptr);
    RowVec alpha = emitOnlineSoftmax(w);
    if (w.dropout)
      w.dropout->apply(*ops, w.scores, s, j0, /*scaleKept=*/false);
    ops->mmaRescaled(w.out, alpha, w.scores, w.v);
  });
  ops->retire(w.q);
}

// FlashAttention-3's overlap inside a warpgroup, for targets whose products
// run asynchronously: P V of the previous key tile runs while this tile's
// softmax does, so the tensor cores and the exp2 units work at once.
//   S_0 = Q K_0^T; P_0 = softmax(S_0)
//   for j = 1..: start S_j = Q K_j^T; start O += P_j-1 V_j-1
//                finish S_j; P_j, alpha_j = softmax(S_j)
//                finish O and O *= alpha_j (one word: finishProductScaled)
//   retire Q; O += P_last V_last
// P is a tile of its own, so S_j can land while P_j-1 is still being read.
// Each K and V tile is requested just before the one use that first needs
// it: a target that overlaps products loads ahead on its own (a producer).
// beginProducts/endProducts mark each group of products issued together,
// where warpgroups take turns on the tensor cores; the waits for results
// come after the turn is passed on.
void ForwardEmitter::emitOverlappedKeyLoop(KeyWalk &w) {
  const WorkItem &s = w.s;
  Tile probs = ops->makeTile(TileRole::Probabilities, spec.bm, spec.bn, "p");
  const KeyTiles &keys = w.keys;
  Value *any = b.CreateICmpSLT(keys.begin, keys.end);
  emitIf(b, any, "first.keys", [&] {
    KeyTile first = keys.at(keys.begin);
    ops->load(w.kT, kvRows(w, kK, first.j0), keysAt(s, first.j0), nullptr);
    ops->load(w.v, kvRows(w, kV, first.j0), keysAt(s, first.j0), nullptr);
    ops->beginProducts();
    ops->startProduct(w.scores, w.q, w.kT, /*accumulate=*/false);
    ops->endProducts();
    ops->finishProduct(w.scores);
    mods.apply(w.scores, s, w.mask, first.j0, w.tokens, first.full);
    emitOnlineSoftmax(w); // O is still 0: no rescale
    if (w.dropout)
      w.dropout->apply(*ops, w.scores, s, first.j0, /*scaleKept=*/false);
    ops->copy(probs, w.scores);
  });
  Value *second = b.CreateAdd(keys.begin, i32(keys.step));
  emitFor(b, second, keys.end, i32(keys.step), "kv", [&](Value *pos) {
    KeyTile tile = keys.at(pos);
    Value *j0 = tile.j0;
    ops->load(w.kT, kvRows(w, kK, j0), keysAt(s, j0), nullptr);
    ops->beginProducts();
    ops->startProduct(w.scores, w.q, w.kT, /*accumulate=*/false);
    ops->startProduct(w.out, probs, w.v, /*accumulate=*/true);
    ops->endProducts();
    ops->finishProduct(w.scores);
    mods.apply(w.scores, s, w.mask, j0, w.tokens, tile.full);
    RowVec alpha = emitOnlineSoftmax(w);
    if (w.dropout)
      w.dropout->apply(*ops, w.scores, s, j0, /*scaleKept=*/false);
    ops->finishProductScaled(w.out, alpha);
    ops->load(w.v, kvRows(w, kV, j0), keysAt(s, j0), nullptr);
    ops->copy(probs, w.scores);
  });
  ops->retire(w.q); // the next work item's Q may load during the last P V
  emitIf(b, any, "last.values", [&] {
    ops->beginProducts();
    ops->startProduct(w.out, probs, w.v, /*accumulate=*/true);
    ops->endProducts();
    ops->finishProduct(w.out);
  });
}
