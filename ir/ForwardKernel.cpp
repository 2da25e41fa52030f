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
// through a block table (GlobalRows::rowAddress). A walking fwd kernel whose
// items cost the same may split the items of its last round the same way
// (splitsTail), the last part of an item to finish folding the others' in
// (ForwardTail.cpp), so that the blocks of that round end together.
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
#include "ir/ForwardEmitter.h"
#include "ir/Loops.h"
#include "specs/EncodedName.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

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
          elem,
          p.get(kNumPages)};
}

// The part of the walk's positions this split owns: whole tiles, as even as
// possible (under a split schedule splitTiles each); parts past the end are
// empty and leave m = -inf, l = 0. A sequence's last part runs to the end:
// under a schedule made for other lengths (a cache that grew since plan())
// it takes the keys the schedule did not count.
void ForwardEmitter::restrictToSplit(const WorkItem &s, KeyTiles &keys) {
  Value *step = i32(keys.step);
  Value *tiles =
      signedMax(b, i32(0),
                b.CreateSDiv(b.CreateAdd(b.CreateSub(keys.end, keys.begin),
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
  keys.end = b.CreateSelect(last, keys.end,
                            signedMin(b, keys.end, b.CreateAdd(begin, span)));
  keys.begin = begin;
}

void ForwardEmitter::emitTile(const WorkItem &s) {
  Value *rows = signedMin(b, i32(spec.bm), b.CreateSub(s.rows, s.i0));
  TileTokens tokens{
      queryToken(b, s, s.i0),
      queryToken(b, s, b.CreateAdd(s.i0, b.CreateSub(rows, i32(1))))};
  Band mask = mods.band(s);
  auto [kvBegin, kvEnd] = mods.keyRange(s, mask, tokens);
  KeyTiles keys = mods.hasMaskMod() && walksBlockMap(spec)
                      ? blockMapTiles(b, p, spec, s, kvBegin, kvEnd)
                      : keyTileRange(b, spec, kvBegin, kvEnd);
  if (splits || tail)
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
  if (!s.group)
    qSource.box = {kQMap, tileQueryRow(b, s), s.h, boxBatch(s)};
  ops->load(w.q, qSource, rows, w.scoreScale ? nullptr : qScale);
  ops->limitQueryRows(rows);
  ops->fill(w.m, -INFINITY);
  ops->fill(w.l, 0.0f);
  if (spec.sink)
    startAtSink(
        b, p, *ops, s,
        splits || tail ? b.CreateICmpEQ(s.split, i32(0), "part0") : nullptr,
        w.scores, w.m, w.l, isFp8(spec.dtype) ? kFp8ProbabilityShift : 0);
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

// The tensor maps view varlen's packed rows as one sequence
// (runtime/device/TensorMapBoxes.h): a box's row is the packed row.
Value *ForwardEmitter::boxBatch(const WorkItem &s) {
  return spec.varlen ? b.getInt64(0) : s.b;
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
    rows.box = {int(keys ? kKMap : kVMap), b.CreateSExt(j0, b.getInt64Ty()),
                w.s.hk, nullptr, &paging};
    return rows;
  }
  KernelArgsField strides = keys ? kKStrides : kVStrides;
  Value *row = b.CreateAdd(w.s.kStart, b.CreateSExt(j0, b.getInt64Ty()));
  rows = {rowsOf(tensor, strides, w.s.b, row, w.s.hk, spec.dtype),
          p.stride(strides, 1), spec.dtype};
  rows.box = {int(keys ? kKMap : kVMap), row, w.s.hk, boxBatch(w.s)};
  return rows;
}

void ForwardEmitter::emitWorkItem(Value *workItem) {
  WorkItem s = locateWorkItem(b, p, spec, workItem, {splits, paged, tail});
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
