//===- PagedRows.h - K/V rows of a paged cache, through its block table ---===//
#ifndef FMHAJIT_IR_PAGEDROWS_H
#define FMHAJIT_IR_PAGEDROWS_H

#include "ir/TargetInfo.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Row r of a K/V tile starting at key j0 of a paged cache: key j = j0 + r
/// lives in page table[j >> log2PageSize], row j & (pageSize - 1) of it.
///   %page = load i32, table + (j >> log2P); %off = j & (P - 1)
///   ptr = head + sext(%page) * pageStride + zext(%off) * rowStride
struct PagedRows {
  llvm::Value *table;    ///< ptr to sequence b's block table row
  llvm::Value *log2Page; ///< i32
  llvm::Value *head;     ///< ptr to the pool's first page, at this K/V head
  llvm::Value *pageStride, *rowStride; ///< i64 elements
  llvm::Value *j0;                     ///< i32 first key of the tile
  llvm::Type *elem;
  /// i32 pages in the pool: the first page past it, which TMA boxes of keys
  /// past the sequence name so that TMA fills them with zeros.
  llvm::Value *numPages = nullptr;

  /// The address of row \p r (i64) of the tile.
  llvm::Value *operator()(llvm::IRBuilderBase &b, llvm::Value *r) const;

  /// Asks \p target to bring the table entries of keys [j, j + keys) toward
  /// its cache (TargetInfo::prefetch): one hint per 128-byte line of entries
  /// the at most \p bn keys span, the slots past the range's last clamped to
  /// it, so no hint leaves the sequence's row of the table.
  ///   %first = j >> log2P; %last = (j + keys - 1) >> log2P
  ///   prefetch table + %first, table + umin(%first + 32k, %last) ...
  void prefetch(llvm::IRBuilderBase &b, TargetInfo &target, llvm::Value *j,
                llvm::Value *keys, unsigned bn) const;
};

} // namespace fmhajit

#endif
