//===- ForwardKernel.cpp - The flash-attention forward recipe -------------===//
//
// Written once in the tile vocabulary; the target decides what a tile is.
// Scores are kept in log2 units (Q carries scale*log2e) so the softmax uses
// exp2; softcap and alibi are applied in those units too.
//
// fwd_splitkv and fwd_paged are this recipe with two small additions: a
// work item may own one of numSplits parts of its key range (and then
// writes fp32 partials for splitkv_combine), and fwd_paged reads K/V rows
// through a block table (GlobalRows::rowAddress).
//
// Under pack_gqa a tile row is a (token, head) pair of the item's GQA group
// (WorkItem.h): Q, O, LSE and partial rows go through per-row addresses
// (QueryTileRows), and the mask and ALiBi read each row's own token and
// head; the key range of a tile is that of its first and last tokens.
//
//===----------------------------------------------------------------------===//
#include "ir/ForwardKernel.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include "specs/EncodedName.h"
#include <cmath>
#include <limits>

using namespace fmhajit;
using namespace llvm;

namespace {
/// The mask's visible band around the diagonal: key j is visible to query i
/// iff j < sk, j <= i + offset + right (if upper) and j >= i + offset - left
/// (if lower).
struct Band {
  bool upper = false, lower = false;
  Value *offset = nullptr, *right = nullptr, *left = nullptr; ///< i32
};

/// Row r of a K/V tile starting at key j0 of a paged cache: key j = j0 + r
/// lives in page table[j >> log2PageSize], row j & (pageSize - 1) of it.
///   %page = load i32, table + (j >> log2P); %off = j & (P - 1)
///   ptr = head + sext(%page) * pageStride + zext(%off) * rowStride
struct PagedRows {
  Value *table;    ///< ptr to sequence b's block table row
  Value *log2Page; ///< i32
  Value *head;     ///< ptr to the pool's first page, at this K/V head
  Value *pageStride, *rowStride; ///< i64 elements
  Value *j0;                     ///< i32 first key of the tile
  Type *elem;

  Value *operator()(IRBuilderBase &b, Value *r) const {
    Value *j = b.CreateAdd(j0, b.CreateTrunc(r, b.getInt32Ty()));
    Value *slot = b.CreateZExt(b.CreateLShr(j, log2Page), b.getInt64Ty());
    Value *page = b.CreateLoad(
        b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), table, slot));
    Value *mask =
        b.CreateSub(b.CreateShl(b.getInt32(1), log2Page), b.getInt32(1));
    Value *offset = b.CreateZExt(b.CreateAnd(j, mask), b.getInt64Ty());
    Value *elements =
        b.CreateAdd(b.CreateMul(b.CreateSExt(page, b.getInt64Ty()), pageStride),
                    b.CreateMul(offset, rowStride));
    return b.CreateInBoundsGEP(elem, head, elements);
  }
};

/// The query tokens of a tile's first and last valid rows (i32): the key
/// range and the mask's edge tests follow them.
struct TileTokens {
  Value *first, *last;
};

class ForwardEmitter {
public:
  ForwardEmitter(const KernelSpec &spec, TargetInfo &target, IRBuilderBase &b,
                 Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)),
        splits(spec.family == Family::FwdSplitKv ||
               spec.family == Family::FwdPaged),
        paged(spec.family == Family::FwdPaged) {}

  void emitWorkItem(Value *workItem);

private:
  Band band(const WorkItem &s);
  PagedRows pagedRows(const WorkItem &s, KernelArgsField pool,
                      KernelArgsField strides);
  Value *rowsOf(KernelArgsField tensor, KernelArgsField strides, Value *batch,
                Value *row, Value *head, DType dtype) {
    return tensorRow(b, p, spec.varlen, tensor, strides, batch, row, head,
                     dtype);
  }
  Value *numSplits() { return fmhajit::numSplits(b, p); }
  void emitTile(const WorkItem &s);
  void restrictToSplit(const WorkItem &s, Value *&kvBegin, Value *&kvEnd);
  void applyScoreMods(Tile &scores, const WorkItem &s, const Band &band,
                      Value *j0, const TileTokens &tokens);
  void applyAlibi(Tile &scores, const WorkItem &s, Value *j0);
  void applyMask(Tile &scores, const WorkItem &s, const Band &band, Value *j0,
                 const TileTokens &tokens);
  /// Under pack_gqa: the ALiBi slope of tile row \p row's head (\p row: i32,
  /// scalar or vector), times log2e.
  Value *alibiSlopeLog2(const WorkItem &s, Value *slopes, Value *row);
  /// Turns \p scores into P and updates m and l; returns the factor O's
  /// rows must be rescaled by before P V is added.
  RowVec emitOnlineSoftmax(Tile &scores, RowVec &m, RowVec &l);
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
                        unsigned width);

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
  bool splits; ///< the key range may be cut into parts (numSplits)
  bool paged;  ///< K/V rows come through a block table
};
} // namespace

Band ForwardEmitter::band(const WorkItem &s) {
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

void ForwardEmitter::applyScoreMods(Tile &scores, const WorkItem &s,
                                    const Band &band, Value *j0,
                                    const TileTokens &tokens) {
  if (spec.softcap) { // s = c * tanh(s / c), then into log2 units
    Value *c = p.get(kSoftcap);
    Value *invC = b.CreateFDiv(f32(1), c);
    Value *cLog2e = b.CreateFMul(c, f32(kLog2e));
    ops->map(scores, [&](IRBuilderBase &b, Value *, Value *, Value *x) {
      Value *t = target.tanh(b, b.CreateFMul(x, splatLike(b, invC, x)));
      return b.CreateFMul(t, splatLike(b, cLog2e, x));
    });
  }
  if (spec.bias == Bias::Alibi)
    applyAlibi(scores, s, j0);
  applyMask(scores, s, band, j0, tokens);
}

// Under pack_gqa each row's head has its own slope: a gather, which the
// loop-invariant row index lets LLVM hoist out of the key loop.
Value *ForwardEmitter::alibiSlopeLog2(const WorkItem &s, Value *slopes,
                                      Value *row) {
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Value *head =
      b.CreateAdd(b.CreateZExt(queryHeadOffset(b, s, packed),
                               row->getType()->getWithNewType(b.getInt64Ty())),
                  splatLike(b, s.h, row));
  Value *at = b.CreateInBoundsGEP(b.getFloatTy(), slopes, head);
  Value *slope = nullptr;
  if (at->getType()->isVectorTy())
    slope = b.CreateMaskedGather(row->getType()->getWithNewType(b.getFloatTy()),
                                 at, Align(4));
  else
    slope = b.CreateLoad(b.getFloatTy(), at);
  return b.CreateFMul(slope, splatLike(b, f32(kLog2e), slope));
}

// s -= slope_h * |i + sk - sq - j|, i the row's token and h its head
void ForwardEmitter::applyAlibi(Tile &scores, const WorkItem &s, Value *j0) {
  Value *slopes = p.get(kAlibiSlopes);
  Value *itemSlope = nullptr; // one head per tile unless packed
  if (!s.group)
    itemSlope = b.CreateFMul(
        b.CreateLoad(b.getFloatTy(),
                     b.CreateInBoundsGEP(b.getFloatTy(), slopes, s.h)),
        f32(kLog2e));
  Value *origin = b.CreateSub(s.sk, s.sq);
  Value *rowOrigin = s.group ? origin : b.CreateAdd(s.i0, origin);
  ops->map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
    Value *i = s.group
                   ? queryToken(b, s, b.CreateAdd(row, splatLike(b, s.i0, row)))
                   : row;
    Value *dist = b.CreateSub(b.CreateAdd(i, splatLike(b, rowOrigin, i)),
                              b.CreateAdd(col, splatLike(b, j0, col)));
    Value *absDist =
        b.CreateBinaryIntrinsic(Intrinsic::abs, dist, b.getFalse());
    Value *fdist = b.CreateSIToFP(absDist, x->getType());
    Value *slope =
        itemSlope ? splatLike(b, itemSlope, x) : alibiSlopeLog2(s, slopes, row);
    return b.CreateFSub(x, b.CreateFMul(fdist, slope));
  });
}

void ForwardEmitter::applyMask(Tile &scores, const WorkItem &s,
                               const Band &band, Value *j0,
                               const TileTokens &tokens) {
  // Only tiles that cross the band's edges or the end of the keys pay for
  // the per-element mask.
  Value *jLast = b.CreateAdd(j0, i32(spec.bn - 1));
  Value *needsMask = b.CreateICmpSGE(jLast, s.sk);
  if (band.upper)
    needsMask = b.CreateOr(
        needsMask,
        b.CreateICmpSGT(
            jLast,
            b.CreateAdd(tokens.first, b.CreateAdd(band.offset, band.right))));
  if (band.lower)
    needsMask = b.CreateOr(
        needsMask,
        b.CreateICmpSLT(
            j0, b.CreateSub(b.CreateAdd(tokens.last, band.offset), band.left)));
  emitIf(b, needsMask, "mask", [&] {
    ops->map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
      Value *i = queryToken(b, s, b.CreateAdd(row, splatLike(b, s.i0, row)));
      Value *j = b.CreateAdd(col, splatLike(b, j0, col));
      Value *visible = b.CreateICmpSLT(j, splatLike(b, s.sk, j));
      if (band.upper) {
        Value *limit = b.CreateAdd(
            i, splatLike(b, b.CreateAdd(band.offset, band.right), i));
        visible = b.CreateAnd(visible, b.CreateICmpSLE(j, limit));
      }
      if (band.lower) {
        Value *limit = b.CreateAdd(
            i, splatLike(b, b.CreateSub(band.offset, band.left), i));
        visible = b.CreateAnd(visible, b.CreateICmpSGE(j, limit));
      }
      return b.CreateSelect(visible, x, splatLike(b, f32(-INFINITY), x));
    });
  });
}

RowVec ForwardEmitter::emitOnlineSoftmax(Tile &scores, RowVec &m, RowVec &l) {
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
  ops->mapRows(m, {&mNew},
               [](IRBuilderBase &, ArrayRef<Value *> v) { return v[0]; });
  ops->mapWithRowThenSum(
      scores, m,
      [&](IRBuilderBase &b, Value *x, Value *row) { // P
        return target.exp2(b, b.CreateFSub(x, finiteOrZero(row)));
      },
      sum);
  ops->mapRows(l, {&l, &alpha, &sum},
               [](IRBuilderBase &b, ArrayRef<Value *> v) {
                 return b.CreateFAdd(b.CreateFMul(v[0], v[1]), v[2]);
               });
  return alpha;
}

void ForwardEmitter::emitEpilogue(const WorkItem &s, Tile &out, RowVec &m,
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
  RowVec lse = ops->makeRowVec(spec.bm, "lse");
  if (spec.lse || splits)
    ops->mapRows(lse, {&m, &l}, [&](IRBuilderBase &b, ArrayRef<Value *> v) {
      Value *seen = b.CreateFCmpOGT(v[1], splatLike(b, f32(0), v[1]));
      Value *logSum = b.CreateFAdd(v[0], target.log2(b, v[1]));
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
      b, b.CreateICmpSGT(numSplits(), i32(1)), "partial",
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
                                      Value *rowIndex, unsigned width) {
  Value *w = b.getInt64(width);
  auto times = [&](Value *x) { return width == 1 ? x : b.CreateMul(x, w); };
  Value *headStride = s.group ? times(lseHeadStride(b, p, spec)) : nullptr;
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
// per row: row index = split * plane + lseRowIndex.
void ForwardEmitter::storePartials(const WorkItem &s, Tile &out, RowVec &lse,
                                   Value *rows) {
  Value *split = b.CreateSExt(s.split, b.getInt64Ty());
  Value *row = b.CreateAdd(b.CreateMul(split, lsePlaneSize(b, p, spec)),
                           lseRowIndex(b, p, spec, s, tileQueryRow(b, s)),
                           "partial.row");
  QueryTileRows oRows = lseRows(s, p.get(kOAccum), row, spec.headDimV());
  ops->store(out, oRows.rows(b), rows);
  QueryTileRows lseOut = lseRows(s, p.get(kLseAccum), row, 1);
  ops->store(lse, lseOut.rows(b), rows);
}

// The part of [kvBegin, kvEnd) this split owns: whole bn-tiles, as even as
// possible; parts past the end are empty and leave m = -inf, l = 0.
void ForwardEmitter::restrictToSplit(const WorkItem &s, Value *&kvBegin,
                                     Value *&kvEnd) {
  Value *bn = i32(spec.bn);
  Value *tiles =
      maxI(i32(0),
           b.CreateSDiv(
               b.CreateAdd(b.CreateSub(kvEnd, kvBegin), i32(spec.bn - 1)), bn));
  Value *n = numSplits();
  Value *perSplit = b.CreateSDiv(b.CreateAdd(tiles, b.CreateSub(n, i32(1))), n,
                                 "tiles.per.split");
  Value *span = b.CreateMul(perSplit, bn);
  Value *begin =
      b.CreateAdd(kvBegin, b.CreateMul(s.split, span), "split.begin");
  kvEnd = minI(kvEnd, b.CreateAdd(begin, span));
  kvBegin = begin;
}

void ForwardEmitter::emitTile(const WorkItem &s) {
  Value *rows = minI(i32(spec.bm), b.CreateSub(s.rows, s.i0));
  TileTokens tokens{
      queryToken(b, s, s.i0),
      queryToken(b, s, b.CreateAdd(s.i0, b.CreateSub(rows, i32(1))))};
  Band mask = band(s);
  Value *kvBegin = i32(0), *kvEnd = s.sk;
  if (mask.lower)
    kvBegin = maxI(
        i32(0), b.CreateSub(b.CreateAdd(tokens.first, mask.offset), mask.left));
  if (mask.upper)
    kvEnd = minI(s.sk, b.CreateAdd(b.CreateAdd(tokens.last, mask.offset),
                                   b.CreateAdd(mask.right, i32(1))));
  if (splits)
    restrictToSplit(s, kvBegin, kvEnd);

  Tile q = ops->makeTile(TileRole::Query, spec.bm, spec.d, "q");
  Tile kT = ops->makeTile(TileRole::KeyT, spec.d, spec.bn, "kT");
  Tile v = ops->makeTile(TileRole::Value, spec.bn, spec.dv, "v");
  Tile scores = ops->makeTile(TileRole::Scores, spec.bm, spec.bn, "s");
  Tile out = ops->makeTile(TileRole::Output, spec.bm, spec.dv, "o");
  RowVec m = ops->makeRowVec(spec.bm, "m"), l = ops->makeRowVec(spec.bm, "l");

  Value *scale = p.get(kScale);
  Value *qScale = spec.softcap ? scale : b.CreateFMul(scale, f32(kLog2e));
  QueryTileRows qRows = queryRows(s, kQ, kQStrides, spec.dtype);
  GlobalRows qSource = qRows.rows(b);
  if (!spec.varlen && !s.group)
    qSource.box = {kQMap, tileQueryRow(b, s), s.h, s.b};
  ops->load(q, qSource, rows, qScale);
  ops->limitQueryRows(rows);
  ops->fill(m, -INFINITY);
  ops->fill(l, 0.0f);
  ops->fill(out, 0.0f);

  PagedRows pagedK{}, pagedV{};
  if (paged) {
    pagedK = pagedRows(s, kK, kKStrides);
    pagedV = pagedRows(s, kV, kVStrides);
  }
  // Software-pipelined like FlashAttention-2: once K_j is ready, V_j is
  // requested and copies while S = Q K_j^T is computed; once V_j is ready,
  // K_j+1 is requested and copies during the softmax and O += P V_j. Past
  // the last tile the request names the current tile with no valid rows: it
  // reads nothing, and every iteration issues the same copies.
  auto keysAt = [&](Value *j0) {
    return minI(i32(spec.bn), b.CreateSub(s.sk, j0));
  };
  // `paging` by reference: the GlobalRows returned keeps a function_ref to
  // it, which must outlive the load that uses it.
  auto kvRows = [&](KernelArgsField tensor, KernelArgsField strides,
                    PagedRows &paging, Value *j0) -> GlobalRows {
    GlobalRows rows{nullptr, nullptr, spec.dtype};
    if (paged) {
      paging.j0 = j0;
      rows.rowAddress = paging;
      return rows;
    }
    Value *row = b.CreateAdd(s.kStart, b.CreateSExt(j0, b.getInt64Ty()));
    rows = {rowsOf(tensor, strides, s.b, row, s.hk, spec.dtype),
            p.stride(strides, 1), spec.dtype};
    if (!spec.varlen)
      rows.box = {int(tensor == kK ? kKMap : kVMap), row, s.hk, s.b};
    return rows;
  };
  Value *any = b.CreateICmpSLT(kvBegin, kvEnd);
  ops->load(kT, kvRows(kK, kKStrides, pagedK, kvBegin),
            b.CreateSelect(any, keysAt(kvBegin), i32(0)), nullptr);
  emitFor(b, kvBegin, kvEnd, i32(spec.bn), "kv", [&](Value *j0) {
    ops->sync(kT);
    ops->load(v, kvRows(kV, kVStrides, pagedV, j0), keysAt(j0), nullptr);
    ops->matmul(scores, q, kT);
    applyScoreMods(scores, s, mask, j0, tokens);
    ops->sync(v);
    Value *next = b.CreateAdd(j0, i32(spec.bn));
    Value *more = b.CreateICmpSLT(next, kvEnd);
    ops->load(kT, kvRows(kK, kKStrides, pagedK, b.CreateSelect(more, next, j0)),
              b.CreateSelect(more, keysAt(next), i32(0)), nullptr);
    RowVec alpha = emitOnlineSoftmax(scores, m, l);
    ops->mmaRescaled(out, alpha, scores, v);
  });
  ops->drain();
  emitEpilogue(s, out, m, l, rows);
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
