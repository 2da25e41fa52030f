//===- BackwardWorkItems.cpp - bwd_dq_dk_dv's work items ------------------===//
//
// FlashAttention-2's backward in the tile vocabulary, split so that every
// gradient element has one writer (docs/design.md, "The backward"):
// bwd_dq_dk_dv's key items own dK and dV of one key tile and walk the query
// tiles that see it; its query items own dQ of one query tile and walk the
// key tiles it sees, keeping dQ in fp32 until the one store. Under
// head_items=1 a head item runs every key item of a (sequence, K/V head) in
// turn and adds each step's dS K into fp32 dQ sums of its own: 5 products a
// step, where a query item would recompute S and dP for dQ in 2 more.
//
//===----------------------------------------------------------------------===//
#include "ir/BackwardEmitter.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/ScoreMods.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"

using namespace fmhajit;
using namespace llvm;

void BackwardEmitter::emitDqDkDv(Value *w) {
  GradTiles t = makeGradTiles();
  if (spec.dropout)
    dropout.emplace(b, p);
  if (spec.head_items) // no query items
    return emitHeadItem(t, w);
  // bwdKeyItems (KernelAbi.h): batch * headsKv * ceil(seqlenK / bn)
  Value *keyTiles = b.CreateSDiv(b.CreateAdd(p.get(kSeqlenK), i32(spec.bn - 1)),
                                 i32(spec.bn));
  Value *keyItems =
      b.CreateMul(b.CreateMul(sext(p.get(kBatch)), sext(p.get(kHeadsKv))),
                  sext(keyTiles), "key.items");
  if (bwdKeyItemsAddDq(spec)) { // no query items
    emitKeyItem(t, w);
    return;
  }
  emitIfElse(
      b, b.CreateICmpSLT(w, keyItems), "item", [&] { emitKeyItem(t, w); },
      [&] { emitQueryItem(t, b.CreateSub(w, keyItems)); });
}

// Key item w = (b * headsKv + hk) * keyTiles + t, keyTiles counted over
// the longest sequence: dK and dV of key tile t of sequence b, if it has
// one, summed over the query heads of hk's group.
void BackwardEmitter::emitKeyItem(GradTiles &t, Value *w) {
  Value *keyTiles = sext(b.CreateSDiv(
      b.CreateAdd(p.get(kSeqlenK), i32(spec.bn - 1)), i32(spec.bn)));
  Value *headsKv = sext(p.get(kHeadsKv));
  Value *bhk = b.CreateSDiv(w, keyTiles);
  WorkItem s{};
  s.b = b.CreateSDiv(bhk, headsKv, "b");
  s.hk = b.CreateSRem(bhk, headsKv, "hk");
  locateSequence(b, p, spec, {}, s);
  s.rows = s.sq;
  // Items run from the last: the last key tile of a head comes first, and
  // under a causal mask the first tiles, which the most queries see.
  Value *tile = b.CreateSub(b.CreateSub(keyTiles, b.getInt64(1)),
                            b.CreateSRem(w, keyTiles));
  Value *j0 =
      b.CreateMul(b.CreateTrunc(tile, b.getInt32Ty()), i32(spec.bn), "j0");
  emitIf(b, b.CreateICmpSLT(j0, s.sk), "keys", [&] {
    Value *group = b.CreateSDiv(sext(p.get(kHeadsQ)), headsKv, "group");
    emitKeyTile(t, s, group, j0);
  });
}

// The steps walk (query head, query tile) pairs flattened into one count,
// so that each step can name the next: its Q, dO, LSE and D are prefetched
// while this step's first products run (TileOps::prefetch; a no-op where
// loads are not asynchronous).
void BackwardEmitter::emitKeyTile(GradTiles &t, WorkItem &s, Value *group,
                                  Value *j0) {
  Value *keys = signedMin(b, i32(spec.bn), b.CreateSub(s.sk, j0));
  loadKeyTile(t, s, j0, keys);
  ops->fill(t.dK, 0.0f);
  ops->fill(t.dV, 0.0f);
  Band band = mods.band(s);
  std::pair<Value *, Value *> queries = queryRange(s, band, j0, keys);
  Value *qBegin = queries.first;
  Value *qTiles =
      signedMax(b, i32(0),
                b.CreateSDiv(b.CreateAdd(b.CreateSub(queries.second, qBegin),
                                         i32(spec.bm - 1)),
                             i32(spec.bm)));
  Value *steps = b.CreateMul(b.CreateTrunc(group, b.getInt32Ty()), qTiles);
  Value *tilesPerHead = signedMax(b, qTiles, i32(1)); // no step divides by 0
  Value *firstHead = b.CreateMul(s.hk, group);
  // Sets s.h and s.i0 to step n's; returns its valid rows (0 past the last).
  auto enterStep = [&](Value *n) {
    s.h = b.CreateAdd(firstHead, sext(b.CreateSDiv(n, tilesPerHead)));
    s.i0 = b.CreateAdd(
        qBegin, b.CreateMul(b.CreateSRem(n, tilesPerHead), i32(spec.bm)));
    Value *rows = signedMin(b, i32(spec.bm), b.CreateSub(s.sq, s.i0));
    return b.CreateSelect(b.CreateICmpSLT(n, steps), rows, i32(0));
  };
  prefetchQueryTile(t, s, enterStep(i32(0)));
  // K and V are read by every step: waited for once, here.
  ops->sync(t.kT);
  ops->sync(t.vT);
  emitFor(b, i32(0), steps, i32(1), "step", [&](Value *n) {
    Value *rows = enterStep(n);
    TileTokens tokens{s.i0, b.CreateSub(b.CreateAdd(s.i0, rows), i32(1))};
    loadQueryTile(t, s, rows, /*forKeys=*/true);
    emitScoreGrads(t, s, band, j0, tokens, [&] {
      Value *h = s.h, *i0 = s.i0;
      prefetchQueryTile(t, s, enterStep(b.CreateAdd(n, i32(1))));
      s.h = h, s.i0 = i0;
    });
    if (dropout) // P * z, for dV
      dropout->apply(*ops, t.scores, s, j0, /*scaleKept=*/true);
    // Both views before either product: a target that copies them through
    // shared memory publishes both at one barrier.
    Tile pT = ops->transposed(t.scores), dST = ops->transposed(t.dP);
    ops->mma(t.dV, pT, t.dORows);
    ops->mma(t.dK, dST, t.qRows);
    if (bwdKeyItemsAddDq(spec)) { // dQAccum += dS K
      ops->matmul(t.dQ, t.dP, ops->transposed(t.kT));
      ops->storeAdd(t.dQ, dqAccumRows(s, tileQueryRow(b, s)), rows);
    }
    if (spec.head_items) { // the item's own fp32 sums: dQ += dS K, in order
      GlobalRows sums = dqSumRows(s);
      ops->load(t.dQ, sums, rows, nullptr);
      ops->mma(t.dQ, t.dP, ops->transposed(t.kT));
      ops->store(t.dQ, sums, rows);
    }
  });
  Value *row = b.CreateAdd(s.kStart, sext(j0));
  ops->store(t.dK, rowsOf(kDK, kDKStrides, s, row, s.hk, spec.outType()), keys);
  ops->store(t.dV, rowsOf(kDV, kDVStrides, s, row, s.hk, spec.outType()), keys);
}

// Query i sees key j iff j <= i + offset + right (upper) and
// j >= i + offset - left (lower): the tile's keys j0..jLast are seen by
// queries from j0 - offset - right to jLast - offset + left.
std::pair<Value *, Value *> BackwardEmitter::queryRange(const WorkItem &s,
                                                        const Band &band,
                                                        Value *j0,
                                                        Value *keys) {
  Value *begin = i32(0), *end = s.sq;
  if (band.upper)
    begin = signedMax(b, begin,
                      b.CreateSub(j0, b.CreateAdd(band.offset, band.right)));
  if (band.lower) {
    Value *jLast = b.CreateSub(b.CreateAdd(j0, keys), i32(1));
    end = signedMin(b, end,
                    b.CreateAdd(b.CreateSub(jLast, band.offset),
                                b.CreateAdd(band.left, i32(1))));
  }
  return {begin, end};
}

// Query item: the forward's work item w (b, h, query tile), its dQ.
void BackwardEmitter::emitQueryItem(GradTiles &t, Value *w) {
  WorkItem s = locateWorkItem(b, p, spec, w, {});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] {
    Value *rows = signedMin(b, i32(spec.bm), b.CreateSub(s.rows, s.i0));
    TileTokens tokens{s.i0, b.CreateSub(b.CreateAdd(s.i0, rows), i32(1))};
    Band band = mods.band(s);
    auto [kvBegin, kvEnd] = mods.keyRange(s, band, tokens);
    loadQueryTile(t, s, rows, /*forKeys=*/false);
    ops->fill(t.dQ, 0.0f);
    emitFor(b, kvBegin, kvEnd, i32(spec.bn), "kv", [&](Value *j0) {
      loadKeyTile(t, s, j0, signedMin(b, i32(spec.bn), b.CreateSub(s.sk, j0)));
      emitScoreGrads(t, s, band, j0, tokens);
      ops->mma(t.dQ, t.dP, ops->transposed(t.kT));
    });
    ops->store(
        t.dQ,
        rowsOf(kDQ, kDQStrides, s, tileQueryRow(b, s), s.h, spec.outType()),
        rows);
  });
}

// Head item w = b * headsKv + hk: every key tile of the sequence's K/V
// head, first to last, each as a key item's (emitKeyTile), which also adds
// dS K into the fp32 dQ sums of the group's query heads. No other item
// writes those rows, so they are summed in one order whatever the threads:
// zeroed here first and, where they are not dQ itself, converted at the end.
void BackwardEmitter::emitHeadItem(GradTiles &t, Value *w) {
  Value *headsKv = sext(p.get(kHeadsKv));
  WorkItem s{};
  s.b = b.CreateSDiv(w, headsKv, "b");
  s.hk = b.CreateSRem(w, headsKv, "hk");
  locateSequence(b, p, spec, {}, s);
  s.rows = s.sq;
  Value *group = b.CreateSDiv(sext(p.get(kHeadsQ)), headsKv, "group");
  ops->fill(t.dQ, 0.0f);
  forEachGroupQueryTile(s, group, "dq.zero", [&](Value *rows) {
    ops->store(t.dQ, dqSumRows(s), rows);
  });
  emitFor(b, i32(0), s.sk, i32(spec.bn), "key.tile",
          [&](Value *j0) { emitKeyTile(t, s, group, j0); });
  if (!bwdSumsDqInWorkspace(spec))
    return;
  forEachGroupQueryTile(s, group, "dq.convert", [&](Value *rows) {
    Value *row = tileQueryRow(b, s);
    ops->load(t.dQ, dqAccumRows(s, row), rows, nullptr);
    ops->store(t.dQ, rowsOf(kDQ, kDQStrides, s, row, s.h, spec.outType()),
               rows);
  });
}

void BackwardEmitter::forEachGroupQueryTile(
    WorkItem &s, Value *group, const Twine &name,
    function_ref<void(Value *rows)> body) {
  Value *firstHead = b.CreateMul(s.hk, group);
  emitFor(b, firstHead, b.CreateAdd(firstHead, group), b.getInt64(1),
          name + ".head", [&](Value *h) {
            emitFor(b, i32(0), s.sq, i32(spec.bm), name + ".tile",
                    [&](Value *i0) {
                      s.h = h, s.i0 = i0;
                      body(signedMin(b, i32(spec.bm), b.CreateSub(s.sq, i0)));
                    });
          });
}
