//===- WorkItem.h - Which query tile a work item owns, and where it lives -===//
//
// Every family's kernel is entered once per work item (ir/KernelAbi.h):
//   w = ((split * batch + b) * headsQ + h) * numQTiles + t
// The part of the key range is the slowest index, so the query heads of one
// GQA group, whose items follow each other, read the same part of K/V in
// turn while it is still in cache (a host thread's L2, a GPU's L2).
// Under pack_gqa the items run over K/V heads instead (headsKv for headsQ):
// one tile holds the query rows of every head of the group, packed token
// by token (packed row R is token R / group of head h + R % group), so the
// group reads each K/V tile once.
// With a split schedule (KernelArgs::splitSchedule: batches of mixed
// lengths) the part index is an entry of the schedule, which names the
// part's sequence, its index among that sequence's parts, their count and
// the slot its partials go to; items are ((part * heads) + h) * numQTiles
// + t, the same order, with part * batch + b replaced by the entry.
// A kernel that splits its tail (splitsTail, KernelArgs::tailParts) has
// tailItems * (tailParts - 1) more items: w < tailItems * tailParts is part
// w / tailItems of item w % tailItems, the items of the last round, and
// w >= that is item w - tailItems * (tailParts - 1), whole.
// Every item needs the same answers: which sequence and head, its lengths
// (dense, varlen through cu_seqlens, or paged through cacheSeqlens), where
// its rows start in the packed tensors, and where its LSE rows go. They live
// here once, for ForwardKernel, SplitKvCombine and AppendKvKernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/TileOps.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/IRBuilder.h"
#include <utility>

namespace fmhajit {

/// Where one work item's query tile lives.
struct WorkItem {
  /// Batch, query head (the group's first under pack_gqa), K/V head (i64).
  llvm::Value *b, *h, *hk;
  llvm::Value *split = nullptr; ///< part of the key range (i32), if split
  /// If split: the parts of this sequence's key range (i32), whether the
  /// call has a split schedule (i1), and the slot of this part's partials
  /// (i64): part * batch + b without a schedule, the entry's slot with one;
  /// of a split tail, part * tailItems + item (w itself).
  llvm::Value *parts = nullptr, *scheduled = nullptr, *slot = nullptr;
  llvm::Value *sq, *sk;         ///< this sequence's lengths (i32)
  llvm::Value *qStart, *kStart; ///< first packed row under varlen, else 0 (i64)
  llvm::Value *i0;              ///< first query row of the tile (i32)
  /// Under pack_gqa: query heads per K/V head, the rows of one token (i32).
  llvm::Value *group = nullptr;
  /// The item's query rows: sq, or sq * group under pack_gqa (i32).
  llvm::Value *rows;
};

/// The query token of tile row \p row (i32, scalar or vector) counted from
/// the item's first row 0: row itself, or row / group under pack_gqa.
llvm::Value *queryToken(llvm::IRBuilderBase &b, const WorkItem &item,
                        llvm::Value *row);

/// The query head of that row, past item.h: 0, or row % group under
/// pack_gqa (i32, shaped like \p row).
llvm::Value *queryHeadOffset(llvm::IRBuilderBase &b, const WorkItem &item,
                             llvm::Value *row);

/// The row of the tile's first query in tensors of (token, head) rows, as
/// \p qStart counts them (i64): qStart + i0; under pack_gqa qStart, token
/// 0 of head item.h, from which QueryTileRows finds each row.
llvm::Value *tileQueryRow(llvm::IRBuilderBase &b, const WorkItem &item);

/// Where the rows of an item's query tile live in a tensor whose rows are
/// (token, head) pairs: Q, O, the LSE and the split partials. base is the
/// address of tileQueryRow. Without pack_gqa, row r is at
///   base + r * tokenStride
/// (headStride unused); under it, row r is the item's row R = i0 + r, at
///   base + queryToken(R) * tokenStride + queryHeadOffset(R) * headStride
/// elements, and rows() hands the targets this object as a RowAddressFn,
/// so it must outlive the load or store.
///   %R = add i32 %i0, %r;  %t = udiv %R, %group;  %hh = urem %R, %group
///   ptr = gep elem, %base, zext(%t) * tokenStride + zext(%hh) * headStride
struct QueryTileRows {
  const WorkItem &item;
  llvm::Value *base;
  llvm::Value *tokenStride, *headStride; ///< i64 elements
  DType dtype;

  GlobalRows rows(llvm::IRBuilderBase &b) const;
  llvm::Value *operator()(llvm::IRBuilderBase &b, llvm::Value *r) const;
};

/// How a family's work items and lengths are laid out.
struct WorkItemShape {
  bool split = false;        ///< items carry a split index (numSplits)
  bool cacheLengths = false; ///< sk = cacheSeqlens[b] (paged, append_kv)
  bool tail = false;         ///< the last round's items are split (fwd)
};

/// Decomposes work item \p w (i64) of \p spec's kernel:
///   t = w % numQTiles; h = (w / numQTiles) % headsQ; g = w / numQTiles /
///   headsQ; hk = h / (headsQ / headsKv); i0 = t * bm;
///   b = g, or when shape.split:
///     no schedule: b = g % batch; split = g / batch; parts = numSplits;
///                  slot = g
///     a schedule:  {b, split, parts, slot} = splitSchedule[g][0..3]
///                  (one branch; the four loads share a 16-byte entry)
///   sq, sk = seqlenQ, seqlenK | cu[b+1] - cu[b] (varlen) | cacheSeqlens[b]
/// Under shape.tail w is first mapped to its item and part (above); a
/// whole item has parts = 1.
/// Under pack_gqa headsKv stands for headsQ above, hk comes first and
/// h = hk * group, group = headsQ / headsKv, rows = sq * group.
WorkItem locateWorkItem(llvm::IRBuilderBase &b, ArgsReader &p,
                        const KernelSpec &spec, llvm::Value *w,
                        WorkItemShape shape);

/// Sets \p item's sq, sk, qStart and kStart for its sequence item.b: the
/// call's lengths, cacheSeqlens[b] for sk (shape.cacheLengths), or
/// cu_seqlens under varlen. locateWorkItem calls it; the backward's key
/// items, which are not query tiles, call it themselves.
void locateSequence(llvm::IRBuilderBase &b, ArgsReader &p,
                    const KernelSpec &spec, WorkItemShape shape,
                    WorkItem &item);

/// max(1, numSplits) as i32.
llvm::Value *numSplits(llvm::IRBuilderBase &b, ArgsReader &p);

/// The address of row \p row (i64, packed under varlen) of head \p head of
/// sequence \p batch in \p tensor with \p strides:
///   tensor + row*strides.row + head*strides.head (+ batch*strides.batch
///   unless \p varlen)
llvm::Value *tensorRow(llvm::IRBuilderBase &b, ArgsReader &p, bool varlen,
                       KernelArgsField tensor, KernelArgsField strides,
                       llvm::Value *batch, llvm::Value *row, llvm::Value *head,
                       DType dtype);

/// The index of query row \p qRow (i64, packed under varlen) of the item's
/// head in an LSE: (b * headsQ + h) * seqlenQ + qRow, or h * totalQ + qRow
/// under varlen (totalQ = cuSeqlensQ[batch]).
llvm::Value *lseRowIndex(llvm::IRBuilderBase &b, ArgsReader &p,
                         const KernelSpec &spec, const WorkItem &item,
                         llvm::Value *qRow);

/// Rows between two heads' LSE rows of one sequence: seqlenQ, or totalQ
/// under varlen (i64).
llvm::Value *lseHeadStride(llvm::IRBuilderBase &b, ArgsReader &p,
                           const KernelSpec &spec);

/// The partials row of the item's query row \p qRow (i64, packed under
/// varlen, as tileQueryRow counts it) and the rows between two of its
/// heads (i64), for a split item:
///   no schedule: split * lsePlaneSize + lseRowIndex(qRow); lseHeadStride
///   a schedule:  (slot * headsQ + h) * seqlenQ + (qRow - qStart); seqlenQ
/// (seqlenQ: the longest sequence's under varlen).
std::pair<llvm::Value *, llvm::Value *>
partialRow(llvm::IRBuilderBase &b, ArgsReader &p, const KernelSpec &spec,
           const WorkItem &item, llvm::Value *qRow);

/// Where splitkv_combine finds the partials of query row \p qRow (i64) of
/// the item's head, which has no split: part k of the row is partials row
/// first + k * stride, k < parts.
///   no schedule: parts = numSplits, first = lseRowIndex(qRow),
///                stride = lsePlaneSize
///   a schedule:  s0 = splitSchedule[4 * numSplits + b], parts =
///                splitSchedule[4 * numSplits + b + 1] - s0, first =
///                (s0 * headsQ + h) * seqlenQ + (qRow - qStart), stride =
///                headsQ * seqlenQ
struct PartialRows {
  llvm::Value *parts;          ///< i32
  llvm::Value *first, *stride; ///< i64 rows
};
PartialRows combinedPartials(llvm::IRBuilderBase &b, ArgsReader &p,
                             const KernelSpec &spec, const WorkItem &item,
                             llvm::Value *qRow);

/// Rows of one split's partial LSE (and of its partial O, times dv):
/// batch * headsQ * seqlenQ, or headsQ * totalQ under varlen (i64).
llvm::Value *lsePlaneSize(llvm::IRBuilderBase &b, ArgsReader &p,
                          const KernelSpec &spec);

} // namespace fmhajit
