//===- BackwardScoreGrads.cpp - One backward step's tiles and gradients ---===//
//
// The tiles of one (query tile, key tile) step, their loads, and the
// gradients of its scores. Every kind of item recomputes P from the
// forward's LSE, and the score modifiers are ScoreMods', the forward's own.
// Scores stay in log2 units (Q carries scale*log2e, or scale before a
// soft-cap) so that P = exp2(S - LSE*log2e).
//
// dropout=1 (Dropout.h): with z = keep / (1 - p), the forward's
// O = (P * z) V, so dV = (P * z)^T dO and dP = z * (dO V^T); D = rowsum(dO
// O) is sum_j P dP as before, so dS = P * (dP - D) keeps its form. Each
// step draws the mask twice (for dP, then for dV's P), from the same
// counters: where the tiles are registers LLVM computes it once.
//
// Rows past the end of the queries load as zeros with LSE = -inf, and a row
// whose LSE is -inf (it saw no key) gets P = 0: its gradients are exactly 0
// and it adds nothing to dK and dV.
//
//===----------------------------------------------------------------------===//
#include "ir/BackwardEmitter.h"
#include "ir/Dropout.h"
#include "ir/ScoreMods.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include <cmath>
#include <optional>

using namespace fmhajit;
using namespace llvm;

GradTiles BackwardEmitter::makeGradTiles() {
  unsigned bm = spec.bm, bn = spec.bn, d = spec.d, dv = spec.headDimV();
  auto tile = [&](TileRole role, unsigned rows, unsigned cols,
                  const char *name) {
    return ops->makeTile(role, rows, cols, name);
  };
  Tile q = tile(TileRole::Query, bm, d, "q");
  Tile dO = tile(TileRole::Query, bm, dv, "do");
  std::optional<Tile> qRows = ops->rowsView(q), dORows = ops->rowsView(dO);
  return {q,
          dO,
          qRows ? *qRows : tile(TileRole::QueryRows, bm, d, "q.rows"),
          dORows ? *dORows : tile(TileRole::QueryRows, bm, dv, "do.rows"),
          tile(TileRole::KeyT, d, bn, "kT"),
          tile(TileRole::KeyT, dv, bn, "vT"),
          tile(TileRole::Scores, bm, bn, "s"),
          tile(TileRole::Scores, bm, bn, "dp"),
          tile(TileRole::Scores, spec.softcap ? bm : 16, spec.softcap ? bn : 16,
               "dtanh"),
          tile(TileRole::Output, bm, d, "dq"),
          tile(TileRole::KeyGrad, bn, d, "dk"),
          tile(TileRole::KeyGrad, bn, dv, "dv"),
          ops->makeRowVec(bm, "lse"),
          ops->makeRowVec(bm, "dsum")};
}

BackwardEmitter::QuerySources BackwardEmitter::querySources(const WorkItem &s) {
  Value *row = tileQueryRow(b, s);
  return {rowsOf(kQ, kQStrides, s, row, s.h, spec.dtype),
          rowsOf(kDO, kDOStrides, s, row, s.h, spec.outType()),
          lseRows(kLse, s), lseRows(kDPsum, s)};
}

void BackwardEmitter::prefetchQueryTile(GradTiles &t, const WorkItem &s,
                                        Value *rows) {
  QuerySources from = querySources(s);
  ops->prefetch(t.q, from.q, rows);
  ops->prefetch(t.dO, from.dO, rows);
  ops->prefetchRows(t.lse, from.lse, rows, -INFINITY);
  ops->prefetchRows(t.dsum, from.dsum, rows, 0.0f);
}

void BackwardEmitter::loadQueryTile(GradTiles &t, const WorkItem &s,
                                    Value *rows, bool forKeys) {
  Value *scale = p.get(kScale);
  Value *qScale = spec.softcap ? scale : b.CreateFMul(scale, f32(kLog2e));
  QuerySources from = querySources(s);
  ops->load(t.q, from.q, rows, qScale);
  ops->load(t.dO, from.dO, rows, nullptr);
  if (forKeys && t.qRows.storage != t.q.storage) {
    ops->load(t.qRows, from.q, rows, nullptr);
    ops->load(t.dORows, from.dO, rows, nullptr);
  }
  ops->loadRows(t.lse, from.lse, rows, -INFINITY);
  ops->mapRows(t.lse, {&t.lse}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *none = b.CreateFCmpOEQ(v[0], splatLike(b, f32(-INFINITY), v[0]));
    return b.CreateSelect(none, splatLike(b, f32(INFINITY), v[0]),
                          b.CreateFMul(v[0], splatLike(b, f32(kLog2e), v[0])));
  });
  ops->loadRows(t.dsum, from.dsum, rows, 0.0f);
}

void BackwardEmitter::loadKeyTile(GradTiles &t, const WorkItem &s, Value *j0,
                                  Value *keys) {
  Value *row = b.CreateAdd(s.kStart, sext(j0));
  ops->load(t.kT, rowsOf(kK, kKStrides, s, row, s.hk, spec.dtype), keys,
            nullptr);
  ops->load(t.vT, rowsOf(kV, kVStrides, s, row, s.hk, spec.dtype), keys,
            nullptr);
}

// dS = dL/ds for the scores s before the soft-cap's tanh is undone: with
// s = c tanh(u / c), dL/du = dS * (1 - tanh^2), and u = scale * q.k, so the
// softmax scale is folded in here too.
void BackwardEmitter::emitScoreGrads(GradTiles &t, const WorkItem &s,
                                     const Band &band, Value *j0,
                                     const TileTokens &tokens,
                                     function_ref<void()> whileProductsRun) {
  // Where products run asynchronously, dP's runs while the scores' modifiers
  // and exp2 do (elsewhere S's accumulators stay few while they run).
  bool overlap = ops->overlapsProducts();
  ops->startProduct(t.scores, t.q, t.kT, /*accumulate=*/false);
  if (overlap)
    ops->startProduct(t.dP, t.dO, t.vT, /*accumulate=*/false);
  if (whileProductsRun)
    whileProductsRun();
  ops->finishProduct(t.scores);
  mods.applySoftcap(t.scores);
  if (spec.softcap) { // the scores are c * log2e * tanh now
    Value *inv =
        b.CreateFDiv(f32(1), b.CreateFMul(p.get(kSoftcap), f32(kLog2e)));
    ops->zip(t.dTanh, t.scores, [&](IRBuilderBase &b, Value *, Value *x) {
      Value *tanh = b.CreateFMul(x, splatLike(b, inv, x));
      return b.CreateFSub(splatLike(b, f32(1), x), b.CreateFMul(tanh, tanh));
    });
  }
  mods.applyBiasAndMask(t.scores, s, band, j0, tokens);
  ops->mapWithRow(t.scores, t.lse, [&](IRBuilderBase &b, Value *x, Value *l) {
    return target.exp2(b, b.CreateFSub(x, l)); // P
  });
  if (!overlap)
    ops->startProduct(t.dP, t.dO, t.vT, /*accumulate=*/false);
  ops->finishProduct(t.dP);
  if (dropout) // dP = z * (dO V^T)
    dropout->apply(*ops, t.dP, s, j0, /*scaleKept=*/true);
  ops->mapWithRow(t.dP, t.dsum, [](IRBuilderBase &b, Value *x, Value *d) {
    return b.CreateFSub(x, d);
  });
  Value *scale = p.get(kScale);
  ops->zip(t.dP, t.scores, [&](IRBuilderBase &b, Value *x, Value *prob) {
    return b.CreateFMul(b.CreateFMul(x, prob), splatLike(b, scale, x));
  });
  if (spec.softcap)
    ops->zip(t.dP, t.dTanh, [](IRBuilderBase &b, Value *x, Value *y) {
      return b.CreateFMul(x, y);
    });
}
