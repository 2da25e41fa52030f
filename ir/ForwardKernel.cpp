//===- ForwardKernel.cpp - The flash-attention forward recipe -------------===//
//
// Written once in the tile vocabulary; the target decides what a tile is.
// Scores are kept in log2 units (Q carries scale*log2e) so the softmax uses
// exp2; softcap and alibi are applied in those units too.
//
// Without score modifiers (soft-cap, ALiBi, a bias, a score_mod) the
// scale never touches S: Q is loaded as stored, the row max is taken of the
// raw products, and P = 2^(s * scale - m) is one fma before the exp2
// (FlashAttention-3's), where a scaled S cost a multiply per score more.
//
// The running max m moves only when a tile raises it by more than
// kRescaleThreshold (log2 units; FlashAttention-4's lazy rescale). Otherwise
// the tile's P is taken against the old m, at most 2^threshold, and the
// factor O and l are rescaled by is exactly 1, which a target may skip
// (TileOps::scaleRows): past the first tiles a row's max rarely grows that
// much, so most tiles skip O's rescale, a multiply per output element.
//
// fp8: the products see the stored 8-bit values; Q's and K's descale
// factors come folded into the scale and V's multiplies O at the end. P is
// rounded to e4m3 for O += P V, so it is taken as 2^(s - m + 6), in
// [0, 2^(6 + threshold)] rather than [0, 1]: small probabilities keep
// e4m3's normal range (FlashAttention-3's Max_offset, 8 there without a
// lazy rescale). l carries the same 2^6, which O / l cancels and the LSE
// subtracts.
//
// fwd_splitkv and fwd_paged are this recipe with two small additions: a
// work item may own one of numSplits parts of its key range (and then
// writes fp32 partials for splitkv_combine), and fwd_paged reads K/V rows
// through a block table (GlobalRows::rowAddress).
//
// sink=1 starts m and l at the head's sink logit (AttentionSink.h), in
// part 0 only: the partials stay exact for the combine, which adds parts'
// sums and so counts the sink once.
//
// dropout=1 zeroes dropped probabilities after the online softmax has
// summed them (the LSE is the softmax's before dropout, as FlashAttention's)
// and folds 1 / (1 - p) into the epilogue's 1 / l (Dropout.h).
//
// Under pack_gqa a tile row is a (token, head) pair of the item's GQA group
// (WorkItem.h): Q, O, LSE and partial rows go through per-row addresses
// (QueryTileRows), and the mask and ALiBi read each row's own token and
// head; the key range of a tile is that of its first and last tokens.
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardKernel.h"
#include "ir/AttentionSink.h"
#include "ir/Dropout.h"
#include "ir/KernelAbiIR.h"
#include "ir/KeyTiles.h"
#include "ir/Loops.h"
#include "ir/PagedRows.h"
#include "ir/ScoreMods.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"
#include <cmath>
#include <limits>
#include <optional>

using namespace fmhajit;
using namespace llvm;

/// fp8's P = 2^(s - m + kFp8ProbabilityShift): see the file comment.
static constexpr double kFp8ProbabilityShift = 6;
/// How far (log2 units) a tile must raise a row's max before m moves and O
/// is rescaled: P stays below 2^threshold. fp8's P also carries
/// 2^kFp8ProbabilityShift and must stay below e4m3's largest value, 448.
static constexpr double kRescaleThreshold = 8;
static constexpr double kFp8RescaleThreshold = 2;
static_assert(kFp8ProbabilityShift + kFp8RescaleThreshold <= 8,
              "fp8's P would pass e4m3's 448");

namespace {

/// One query tile's walk over its key tiles (a range, or the block map's
/// list: KeyTiles.h): its tiles and the online softmax's running max m and
/// sum l.
struct KeyWalk {
  const WorkItem &s;
  Band mask;
  TileTokens tokens;
  KeyTiles keys;
  Tile q, kT, v, scores, out;
  RowVec m, l;
  /// The scale P = 2^(s * scoreScale - m) applies, or null where S is
  /// scaled already (score modifiers need it so).
  Value *scoreScale;
  /// Under fwd_paged: K's and V's rows through the block table; kvRows()
  /// hands them to the loads by reference.
  PagedRows pagedK{}, pagedV{};
  /// Under dropout=1: the keep-mask applied to each tile's P.
  std::optional<TileDropout> dropout{};
};

class ForwardEmitter {
public:
  ForwardEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                 Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)), mods(spec, target, b, p, *ops),
        splits(spec.family == Family::FwdSplitKv ||
               spec.family == Family::FwdPaged),
        paged(spec.family == Family::FwdPaged) {}

  void emitWorkItem(Value *workItem);

private:
  PagedRows pagedRows(const WorkItem &s, KernelArgsField pool,
                      KernelArgsField strides);
  Value *rowsOf(KernelArgsField tensor, KernelArgsField strides, Value *batch,
                Value *row, Value *head, DType dtype) {
    return tensorRow(b, p, spec.varlen, tensor, strides, batch, row, head,
                     dtype);
  }
  void emitTile(const WorkItem &s);
  void restrictToSplit(const WorkItem &s, KeyTiles &keys);
  /// The keys of the tile at \p j0: bn, or fewer at the end of the keys.
  Value *keysAt(const WorkItem &s, Value *j0) {
    return minI(i32(spec.bn), b.CreateSub(s.sk, j0));
  }
  /// The rows of K (\p tensor = kK) or V from key \p j0 on.
  GlobalRows kvRows(KeyWalk &w, KernelArgsField tensor, Value *j0);
  void emitKeyLoop(KeyWalk &w);
  void emitOverlappedKeyLoop(KeyWalk &w);
  /// Turns \p scores into P and updates m and l; returns the factor O's
  /// rows must be rescaled by before P V is added.
  RowVec emitOnlineSoftmax(KeyWalk &w);
  void emitEpilogue(const WorkItem &s, Tile &out, RowVec &m, RowVec &l,
                    Value *rows);
  void storeOutputs(const WorkItem &s, Tile &out, RowVec &lse, Value *rows);
  void storePartials(const WorkItem &s, Tile &out, RowVec &lse, Value *rows);
  /// \p tensor's rows of the item's query tile ([batch, token, head] with
  /// \p strides).
  QueryTileRows queryRows(const WorkItem &s, KernelArgsField tensor,
                          KernelArgsField strides, DType dtype);
  /// LSE-shaped rows (the LSE, the partials) of the tile in \p base, each
  /// \p width floats, the tile's first at row \p rowIndex.
  QueryTileRows lseRows(const WorkItem &s, Value *base, Value *rowIndex,
                        unsigned width, Value *headStride = nullptr);

  Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  Value *f32(double v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *minI(Value *x, Value *y) {
    return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
  }
  Value *maxI(Value *x, Value *y) {
    return b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
  }
  /// v, or 0 where v is -inf: keeps exp2(x - m) finite for rows that have
  /// seen no key yet.
  Value *finiteOrZero(Value *v) {
    Value *isNegInf = b.CreateFCmpOEQ(v, splatLike(b, f32(-INFINITY), v));
    return b.CreateSelect(isNegInf, splatLike(b, f32(0), v), v);
  }

  const KernelSpec &spec;
  TargetInfo &target;
  IRBuilderBase &b;
  ArgsReader p;
  std::unique_ptr<TileOps> ops;
  ScoreMods mods;
  bool splits; ///< the key range may be cut into parts (numSplits)
  bool paged;  ///< K/V rows come through a block table
};
} // namespace

PagedRows ForwardEmitter::pagedRows(const WorkItem &s, KernelArgsField pool,
                                    KernelArgsField strides) {
  Value *tableRow =
      b.CreateMul(s.b, b.CreateSExt(p.get(kMaxPagesPerSeq), b.getInt64Ty()));
  Type *elem = elementType(b.getContext(), spec.dtype);
  return {b.CreateInBoundsGEP(b.getInt32Ty(), p.get(kBlockTable), tableRow),
          p.get(kLog2PageSize, "log2.page"),
          b.CreateInBoundsGEP(elem, p.get(pool),
                              b.CreateMul(s.hk, p.stride(strides, 2))),
          p.stride(strides, 0, "page.stride"),
          p.stride(strides, 1),
          nullptr,
          elem};
}

RowVec ForwardEmitter::emitOnlineSoftmax(KeyWalk &w) {
  bool fp8 = isFp8(spec.dtype);
  Value *scale = w.scoreScale;
  double threshold = fp8 ? kFp8RescaleThreshold : kRescaleThreshold;
  RowVec mNew = ops->makeRowVec(spec.bm, "m.new");
  RowVec alpha = ops->makeRowVec(spec.bm, "alpha");
  RowVec sum = ops->makeRowVec(spec.bm, "rowsum");
  ops->rowMax(w.scores, mNew);
  ops->mapRows(mNew, {&w.m, &mNew}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *tileMax =
        scale ? b.CreateFMul(v[1], splatLike(b, scale, v[1])) : v[1];
    return b.CreateMaxNum(v[0], tileMax);
  });
  // Whether the max grew past the threshold (false while both are -inf).
  auto grown = [&](IRBuilderBase &b, Value *m, Value *mNew) {
    return b.CreateFCmpOGT(b.CreateFSub(mNew, m),
                           splatLike(b, f32(threshold), m));
  };
  ops->mapRows(alpha, {&w.m, &mNew},
               [&](IRBuilderBase &b, ArrayRef<Value *> v) {
                 return b.CreateSelect(
                     grown(b, v[0], v[1]),
                     target.exp2(b, b.CreateFSub(v[0], finiteOrZero(v[1]))),
                     splatLike(b, f32(1), v[0]));
               });
  ops->mapRows(w.m, {&w.m, &mNew}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    return b.CreateSelect(grown(b, v[0], v[1]), v[1], v[0]);
  });
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

void ForwardEmitter::emitEpilogue(const WorkItem &s, Tile &out, RowVec &m,
                                  RowVec &l, Value *rows) {
  bool fp8 = isFp8(spec.dtype);
  Value *numerator = fp8 ? p.get(kVScale) : f32(1);
  if (spec.dropout) // O = sum (P * keep / (1 - p)) V / l
    numerator = b.CreateFMul(numerator, p.get(kDropoutScale));
  RowVec inv = ops->makeRowVec(spec.bm, "inv.l");
  ops->mapRows(inv, {&l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
    Value *seen = b.CreateFCmpOGT(v[0], splatLike(b, f32(0), v[0]));
    return b.CreateSelect(seen,
                          b.CreateFDiv(splatLike(b, numerator, v[0]), v[0]),
                          splatLike(b, f32(0), v[0]));
  });
  ops->mapWithRow(out, inv, [](IRBuilderBase &b, Value *x, Value *row) {
    return b.CreateFMul(x, row);
  });
  RowVec lse = ops->makeRowVec(spec.bm, "lse");
  if (spec.lse || splits)
    ops->mapRows(lse, {&m, &l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      Value *seen = b.CreateFCmpOGT(v[1], splatLike(b, f32(0), v[1]));
      Value *logSum = b.CreateFAdd(v[0], target.log2(b, v[1]));
      if (fp8)
        logSum = b.CreateFSub(logSum,
                              splatLike(b, f32(kFp8ProbabilityShift), logSum));
      return b.CreateSelect(
          seen, b.CreateFMul(logSum, splatLike(b, f32(kLn2), logSum)),
          splatLike(b, f32(-INFINITY), v[0]));
    });
  if (!splits) {
    storeOutputs(s, out, lse, rows);
    return;
  }
  // One part is the whole range: finish here, no combine needed.
  emitIfElse(
      b, b.CreateICmpSGT(s.parts, i32(1)), "partial",
      [&] { storePartials(s, out, lse, rows); },
      [&] { storeOutputs(s, out, lse, rows); });
}

QueryTileRows ForwardEmitter::queryRows(const WorkItem &s,
                                        KernelArgsField tensor,
                                        KernelArgsField strides, DType dtype) {
  return {s, rowsOf(tensor, strides, s.b, tileQueryRow(b, s), s.h, dtype),
          p.stride(strides, 1), s.group ? p.stride(strides, 2) : nullptr,
          dtype};
}

QueryTileRows ForwardEmitter::lseRows(const WorkItem &s, Value *base,
                                      Value *rowIndex, unsigned width,
                                      Value *headStride) {
  Value *w = b.getInt64(width);
  auto times = [&](Value *x) { return width == 1 ? x : b.CreateMul(x, w); };
  if (!headStride)
    headStride = lseHeadStride(b, p, spec);
  headStride = s.group ? times(headStride) : nullptr;
  return {s, b.CreateInBoundsGEP(b.getFloatTy(), base, times(rowIndex)), w,
          headStride, DType::F32};
}

void ForwardEmitter::storeOutputs(const WorkItem &s, Tile &out, RowVec &lse,
                                  Value *rows) {
  QueryTileRows oRows = queryRows(s, kO, kOStrides, spec.outType());
  ops->store(out, oRows.rows(b), rows);
  if (!spec.lse)
    return;
  QueryTileRows lseOut = lseRows(
      s, p.get(kLse), lseRowIndex(b, p, spec, s, tileQueryRow(b, s)), 1);
  ops->store(lse, lseOut.rows(b), rows);
}

// Partials sit split-major, each split laid out like the LSE with dv floats
// per row: row index = split * plane + lseRowIndex; under a split schedule
// slot-major over the part's own sequence (partialRow, WorkItem.h).
void ForwardEmitter::storePartials(const WorkItem &s, Tile &out, RowVec &lse,
                                   Value *rows) {
  auto [row, headStride] = partialRow(b, p, spec, s, tileQueryRow(b, s));
  QueryTileRows oRows =
      lseRows(s, p.get(kOAccum), row, spec.headDimV(), headStride);
  ops->store(out, oRows.rows(b), rows);
  QueryTileRows lseOut = lseRows(s, p.get(kLseAccum), row, 1, headStride);
  ops->store(lse, lseOut.rows(b), rows);
}

// The part of the walk's positions this split owns: whole tiles, as even as
// possible (under a split schedule splitTiles each); parts past the end are
// empty and leave m = -inf, l = 0. A sequence's last part runs to the end:
// under a schedule made for other lengths (a cache that grew since plan())
// it takes the keys the schedule did not count.
void ForwardEmitter::restrictToSplit(const WorkItem &s, KeyTiles &keys) {
  Value *step = i32(keys.step);
  Value *tiles =
      maxI(i32(0), b.CreateSDiv(b.CreateAdd(b.CreateSub(keys.end, keys.begin),
                                            i32(keys.step - 1)),
                                step));
  Value *n = s.parts;
  Value *even = b.CreateSDiv(b.CreateAdd(tiles, b.CreateSub(n, i32(1))), n);
  Value *perSplit =
      b.CreateSelect(s.scheduled, p.get(kSplitTiles), even, "tiles.per.split");
  Value *span = b.CreateMul(perSplit, step);
  Value *begin =
      b.CreateAdd(keys.begin, b.CreateMul(s.split, span), "split.begin");
  Value *last = b.CreateICmpSGE(s.split, b.CreateSub(n, i32(1)), "last.part");
  keys.end =
      b.CreateSelect(last, keys.end, minI(keys.end, b.CreateAdd(begin, span)));
  keys.begin = begin;
}

void ForwardEmitter::emitTile(const WorkItem &s) {
  Value *rows = minI(i32(spec.bm), b.CreateSub(s.rows, s.i0));
  TileTokens tokens{
      queryToken(b, s, s.i0),
      queryToken(b, s, b.CreateAdd(s.i0, b.CreateSub(rows, i32(1))))};
  Band mask = mods.band(s);
  auto [kvBegin, kvEnd] = mods.keyRange(s, mask, tokens);
  KeyTiles keys = mods.hasMaskMod() && walksBlockMap(spec)
                      ? blockMapTiles(b, p, spec, s, kvBegin, kvEnd)
                      : keyTileRange(b, spec, kvBegin, kvEnd);
  if (splits)
    restrictToSplit(s, keys);

  KeyWalk w{s,
            mask,
            tokens,
            keys,
            ops->makeTile(TileRole::Query, spec.bm, spec.d, "q"),
            ops->makeTile(TileRole::KeyT, spec.d, spec.bn, "kT"),
            ops->makeTile(TileRole::Value, spec.bn, spec.dv, "v"),
            ops->makeTile(TileRole::Scores, spec.bm, spec.bn, "s"),
            ops->makeTile(TileRole::Output, spec.bm, spec.dv, "o"),
            ops->makeRowVec(spec.bm, "m"),
            ops->makeRowVec(spec.bm, "l"),
            nullptr};

  Value *scale = p.get(kScale);
  Value *qScale = spec.softcap ? scale : b.CreateFMul(scale, f32(kLog2e));
  w.scoreScale = mods.changesScores() ? nullptr : qScale;
  QueryTileRows qRows = queryRows(s, kQ, kQStrides, spec.dtype);
  GlobalRows qSource = qRows.rows(b);
  if (!spec.varlen && !s.group)
    qSource.box = {kQMap, tileQueryRow(b, s), s.h, s.b};
  ops->load(w.q, qSource, rows, w.scoreScale ? nullptr : qScale);
  ops->limitQueryRows(rows);
  ops->fill(w.m, -INFINITY);
  ops->fill(w.l, 0.0f);
  if (spec.sink)
    startAtSink(b, p, *ops, s,
                splits ? b.CreateICmpEQ(s.split, i32(0), "part0") : nullptr,
                w.scores, w.m, w.l,
                isFp8(spec.dtype) ? kFp8ProbabilityShift : 0);
  ops->fill(w.out, 0.0f);
  if (spec.dropout)
    w.dropout.emplace(b, p);
  if (paged) {
    w.pagedK = pagedRows(s, kK, kKStrides);
    w.pagedV = pagedRows(s, kV, kVStrides);
  }
  if (ops->overlapsProducts())
    emitOverlappedKeyLoop(w);
  else
    emitKeyLoop(w);
  ops->drain();
  emitEpilogue(s, w.out, w.m, w.l, rows);
}

GlobalRows ForwardEmitter::kvRows(KeyWalk &w, KernelArgsField tensor,
                                  Value *j0) {
  bool keys = tensor == kK;
  GlobalRows rows{nullptr, nullptr, spec.dtype};
  if (paged) {
    PagedRows &paging = keys ? w.pagedK : w.pagedV;
    paging.j0 = j0;
    rows.rowAddress = paging;
    rows.rowsLookedUp = true;
    return rows;
  }
  KernelArgsField strides = keys ? kKStrides : kVStrides;
  Value *row = b.CreateAdd(w.s.kStart, b.CreateSExt(j0, b.getInt64Ty()));
  rows = {rowsOf(tensor, strides, w.s.b, row, w.s.hk, spec.dtype),
          p.stride(strides, 1), spec.dtype};
  if (!spec.varlen)
    rows.box = {int(keys ? kKMap : kVMap), row, w.s.hk, w.s.b};
  return rows;
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
  ops->load(w.kT, kvRows(w, kK, first),
            b.CreateSelect(any, keysAt(s, first), i32(0)), nullptr);
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

void ForwardEmitter::emitWorkItem(Value *workItem) {
  WorkItem s = locateWorkItem(b, p, spec, workItem, {splits, paged});
  emitIf(b, b.CreateICmpSLT(s.i0, s.rows), "tile", [&] { emitTile(s); });
}

void fmhajit::emitForwardKernel(const KernelSpec &spec, TargetInfo &target,
                                Module &m) {
  target.emitKernel(
      m, encodeName(spec), kernelArgsType(m.getContext()),
      [&](IRBuilderBase &b, Value *params, Value *workItem) {
        ForwardEmitter(spec, target, b, params).emitWorkItem(workItem);
      });
}
