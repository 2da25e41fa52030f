//===- BackwardKernel.cpp - The flash-attention backward recipes ----------===//
//
// FlashAttention-2's backward in the tile vocabulary, split so that every
// gradient element has one writer (docs/design.md, "The backward"):
// bwd_dq_dk_dv's key items own dK and dV of one key tile and walk the query
// tiles that see it; its query items own dQ of one query tile and walk the
// key tiles it sees, keeping dQ in fp32 until the one store. Both recompute
// P from the forward's LSE, and the score modifiers are ScoreMods', the
// forward's own. Scores stay in log2 units (Q carries scale*log2e, or
// scale before a soft-cap) so that P = exp2(S - LSE*log2e). Under
// head_items=1 a head item runs every key item of a (sequence, K/V head) in
// turn and adds each step's dS K into fp32 dQ sums of its own: 5 products a
// step, where a query item would recompute S and dP for dQ in 2 more.
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
#include "ir/BackwardKernel.h"
#include "ir/Dropout.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/ScoreMods.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"
#include <cmath>
#include <optional>

using namespace fmhajit;
using namespace llvm;

namespace {
/// The tiles one (query tile, key tile) step reads and writes. Both kinds
/// of item share them, so the kernel's frame holds one set.
struct GradTiles {
  Tile q;      ///< Query: Q * scale (* log2e), for S
  Tile dO;     ///< Query [bm][dv]: dO, for dP = dO V^T
  Tile qRows;  ///< QueryRows: Q, for dK += dS^T Q (key items)
  Tile dORows; ///< QueryRows [bm][dv]: dO, for dV += P^T dO (key items)
  Tile kT;     ///< KeyT: K^T
  Tile vT;     ///< KeyT [dv][bn]: V^T
  Tile scores; ///< S, then P
  Tile dP;     ///< dP, then dS
  Tile dTanh;  ///< 1 - tanh^2 of the soft-cap (softcap=1 only)
  Tile dQ;     ///< Output [bm][d], fp32 (query items)
  Tile dK, dV; ///< KeyGrad [bn][d], [bn][dv] (key items)
  RowVec lse;  ///< LSE * log2e of each query row; +inf: the row sees nothing
  RowVec dsum; ///< D = rowsum(dO * O)
};

class BackwardEmitter {
public:
  BackwardEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                  Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)), mods(spec, target, b, p, *ops) {}

  void emitDotDoO(Value *workItem);
  void emitDqDkDv(Value *workItem);
  void emitConvertDq(Value *workItem);

private:
  GradTiles makeGradTiles();
  void emitKeyItem(GradTiles &t, Value *workItem);
  /// dK and dV of key tile \p j0 of \p s's sequence and K/V head.
  void emitKeyTile(GradTiles &t, WorkItem &s, Value *group, Value *j0);
  void emitQueryItem(GradTiles &t, Value *workItem);
  void emitHeadItem(GradTiles &t, Value *workItem);
  /// Runs \p body(valid rows) for each query tile of each query head of
  /// \p s's K/V head's group, with s.h and s.i0 set to the tile's.
  void forEachGroupQueryTile(WorkItem &s, Value *group, const Twine &name,
                             function_ref<void(Value *rows)> body);
  /// The query tiles that may see keys [j0, j0 + keys): [begin, end).
  std::pair<Value *, Value *> queryRange(const WorkItem &s, const Band &band,
                                         Value *j0, Value *keys);
  /// Where Q, dO, the LSE and D of \p s's query tile come from.
  struct QuerySources {
    GlobalRows q, dO, lse, dsum;
  };
  QuerySources querySources(const WorkItem &s);
  /// Loads Q, dO, LSE and D of the item's tile (\p rows valid), and the
  /// row-major copies key items multiply by.
  void loadQueryTile(GradTiles &t, const WorkItem &s, Value *rows,
                     bool forKeys);
  /// Announces the next loadQueryTile's rows (TileOps::prefetch).
  void prefetchQueryTile(GradTiles &t, const WorkItem &s, Value *rows);
  void loadKeyTile(GradTiles &t, const WorkItem &s, Value *j0, Value *keys);
  /// S = Q K^T and its modifiers, then P in t.scores and dS in t.dP;
  /// \p whileProductsRun (if set) is emitted once S's product (and where
  /// products overlap, dP's) has started.
  void emitScoreGrads(GradTiles &t, const WorkItem &s, const Band &band,
                      Value *j0, const TileTokens &tokens,
                      function_ref<void()> whileProductsRun = nullptr);
  /// \p tensor's rows from row \p row (i64) of the item's sequence, head
  /// \p head.
  GlobalRows rowsOf(KernelArgsField tensor, KernelArgsField strides,
                    const WorkItem &s, Value *row, Value *head, DType dtype) {
    return {
        tensorRow(b, p, spec.varlen, tensor, strides, s.b, row, head, dtype),
        p.stride(strides, 1), dtype};
  }
  /// dQAccum's fp32 rows from row \p row (i64) of the item's head.
  GlobalRows dqAccumRows(const WorkItem &s, Value *row) {
    return rowsOf(kDQAccum, kDQAccumStrides, s, row, s.h, DType::F32);
  }
  /// Where a head item sums dQ of \p s's query tile in fp32: dQ itself
  /// when it is fp32, else its dQAccum rows (bwdSumsDqInWorkspace).
  GlobalRows dqSumRows(const WorkItem &s) {
    Value *row = tileQueryRow(b, s);
    if (bwdSumsDqInWorkspace(spec))
      return dqAccumRows(s, row);
    return rowsOf(kDQ, kDQStrides, s, row, s.h, DType::F32);
  }
  /// LSE-shaped rows (the LSE, D) of the item's query tile.
  GlobalRows lseRows(KernelArgsField tensor, const WorkItem &s) {
    Value *index = lseRowIndex(b, p, spec, s, tileQueryRow(b, s));
    return {b.CreateInBoundsGEP(b.getFloatTy(), p.get(tensor), index),
            b.getInt64(1), DType::F32};
  }
  Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  Value *f32(double v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *minI(Value *x, Value *y) {
    return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
  }
  Value *maxI(Value *x, Value *y) {
    return b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
  }
  Value *sext(Value *x) { return b.CreateSExt(x, b.getInt64Ty()); }

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ArgsReader p;
  std::unique_ptr<TileOps> ops;
  ScoreMods mods;
  std::optional<TileDropout> dropout; ///< dropout=1, made by emitDqDkDv
};
} // namespace

// Where dQ is summed by atomic adds
// (bwdKeyItemsAddDq), this kernel also zeroes the item's dQAccum rows, as
// FlashAttention-2's does, sparing the caller a memset.
void BackwardEmitter::emitDotDoO(Value *workItem) {
  WorkItem s = locateWorkItem(b, p, spec, workItem, {});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] {
    Value *rows = minI(i32(spec.bm), b.CreateSub(s.rows, s.i0));
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
    Value *rows = minI(i32(spec.bm), b.CreateSub(s.rows, s.i0));
    Value *row = tileQueryRow(b, s);
    Tile dQ = ops->makeTile(TileRole::Output, spec.bm, spec.d, "dq");
    ops->load(dQ, dqAccumRows(s, row), rows, nullptr);
    ops->store(dQ, rowsOf(kDQ, kDQStrides, s, row, s.h, spec.outType()), rows);
  });
}

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

// Query i sees key j iff j <= i + offset + right (upper) and
// j >= i + offset - left (lower): the tile's keys j0..jLast are seen by
// queries from j0 - offset - right to jLast - offset + left.
std::pair<Value *, Value *> BackwardEmitter::queryRange(const WorkItem &s,
                                                        const Band &band,
                                                        Value *j0,
                                                        Value *keys) {
  Value *begin = i32(0), *end = s.sq;
  if (band.upper)
    begin = maxI(begin, b.CreateSub(j0, b.CreateAdd(band.offset, band.right)));
  if (band.lower) {
    Value *jLast = b.CreateSub(b.CreateAdd(j0, keys), i32(1));
    end = minI(end, b.CreateAdd(b.CreateSub(jLast, band.offset),
                                b.CreateAdd(band.left, i32(1))));
  }
  return {begin, end};
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
  Value *keys = minI(i32(spec.bn), b.CreateSub(s.sk, j0));
  loadKeyTile(t, s, j0, keys);
  ops->fill(t.dK, 0.0f);
  ops->fill(t.dV, 0.0f);
  Band band = mods.band(s);
  std::pair<Value *, Value *> queries = queryRange(s, band, j0, keys);
  Value *qBegin = queries.first;
  Value *qTiles =
      maxI(i32(0), b.CreateSDiv(b.CreateAdd(b.CreateSub(queries.second, qBegin),
                                            i32(spec.bm - 1)),
                                i32(spec.bm)));
  Value *steps = b.CreateMul(b.CreateTrunc(group, b.getInt32Ty()), qTiles);
  Value *tilesPerHead = maxI(qTiles, i32(1)); // no step divides by 0
  Value *firstHead = b.CreateMul(s.hk, group);
  // Sets s.h and s.i0 to step n's; returns its valid rows (0 past the last).
  auto enterStep = [&](Value *n) {
    s.h = b.CreateAdd(firstHead, sext(b.CreateSDiv(n, tilesPerHead)));
    s.i0 = b.CreateAdd(
        qBegin, b.CreateMul(b.CreateSRem(n, tilesPerHead), i32(spec.bm)));
    Value *rows = minI(i32(spec.bm), b.CreateSub(s.sq, s.i0));
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

// Query item: the forward's work item w (b, h, query tile), its dQ.
void BackwardEmitter::emitQueryItem(GradTiles &t, Value *w) {
  WorkItem s = locateWorkItem(b, p, spec, w, {});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] {
    Value *rows = minI(i32(spec.bm), b.CreateSub(s.rows, s.i0));
    TileTokens tokens{s.i0, b.CreateSub(b.CreateAdd(s.i0, rows), i32(1))};
    Band band = mods.band(s);
    auto [kvBegin, kvEnd] = mods.keyRange(s, band, tokens);
    loadQueryTile(t, s, rows, /*forKeys=*/false);
    ops->fill(t.dQ, 0.0f);
    emitFor(b, kvBegin, kvEnd, i32(spec.bn), "kv", [&](Value *j0) {
      loadKeyTile(t, s, j0, minI(i32(spec.bn), b.CreateSub(s.sk, j0)));
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
                      body(minI(i32(spec.bm), b.CreateSub(s.sq, i0)));
                    });
          });
}

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
