//===- WorkItem.h - Which query tile a work item owns, and where it lives -===//
//
// Every family's kernel is entered once per work item (ir/KernelAbi.h):
//   w = ((split * batch + b) * headsQ + h) * numQTiles + t
// The part of the key range is the slowest index, so the query heads of one
// GQA group, whose items follow each other, read the same part of K/V in
// turn while it is still in cache (a host thread's L2, a GPU's L2).
// and each needs the same answers: which sequence and head, its lengths
// (dense, varlen through cu_seqlens, or paged through cacheSeqlens), where
// its rows start in the packed tensors, and where its LSE rows go. They live
// here once, for ForwardKernel, SplitKvCombine and AppendKvKernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Where one work item's query tile lives.
struct WorkItem {
  llvm::Value *b, *h, *hk;      ///< batch, query head, key/value head (i64)
  llvm::Value *split = nullptr; ///< part of the key range (i32), if split
  llvm::Value *sq, *sk;         ///< this sequence's lengths (i32)
  llvm::Value *qStart, *kStart; ///< first packed row under varlen, else 0 (i64)
  llvm::Value *i0;              ///< first query row of the tile (i32)
};

/// How a family's work items and lengths are laid out.
struct WorkItemShape {
  bool split = false;        ///< items carry a split index (numSplits)
  bool cacheLengths = false; ///< sk = cacheSeqlens[b] (paged, append_kv)
};

/// Decomposes work item \p w (i64) of \p spec's kernel:
///   split = w / (batch * headsQ * numQTiles); w %= that (when shape.split)
///   t = w % numQTiles; h = (w / numQTiles) % headsQ; b = w / numQTiles /
///   headsQ hk = h / (headsQ / headsKv); i0 = t * bm sq, sk = seqlenQ, seqlenK
///   | cu[b+1] - cu[b] (varlen) | cacheSeqlens[b]
WorkItem locateWorkItem(llvm::IRBuilderBase &b, ArgsReader &p,
                        const KernelSpec &spec, llvm::Value *w,
                        WorkItemShape shape);

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

/// Rows of one split's partial LSE (and of its partial O, times dv):
/// batch * headsQ * seqlenQ, or headsQ * totalQ under varlen (i64).
llvm::Value *lsePlaneSize(llvm::IRBuilderBase &b, ArgsReader &p,
                          const KernelSpec &spec);

} // namespace fmhajit
