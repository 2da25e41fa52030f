//===- KvCache.h - The run-time shape of K/V caches and the calls on them -===//
//
// A K/V cache is either contiguous, [batch, capacity, headsKv, dim] with one
// block of rows per sequence, or paged: two pools [numPages, pageSize,
// headsKv, dim] (K with dim d, V with dv) and a block table [batch,
// maxPagesPerSeq] of int32 page indices, so that row j of sequence b lives
// in page blockTable[b][j / pageSize], row j % pageSize of it. Page sizes
// are powers of two. Each sequence uses the first cacheLens[b] rows.
//
// PagedProblem is one fwd_paged call, AppendKvProblem one append_kv call;
// validate() checks every run-time argument against the spec, as
// AttentionProblem::validate does (docs/families.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/Rotary.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace fmhajit {

struct KvCacheLayout {
  int64_t pageSize = 0;       ///< rows per page, a power of two; 0: contiguous
  int64_t numPages = 0;       ///< paged: pages in each pool
  int64_t maxPagesPerSeq = 0; ///< paged: the block table's row length
  int64_t capacity = 0;       ///< contiguous: rows of each sequence's cache

  static KvCacheLayout contiguous(int64_t capacity);
  static KvCacheLayout paged(int64_t pageSize, int64_t numPages,
                             int64_t maxPagesPerSeq);

  bool isPaged() const { return pageSize != 0; }
  /// The most rows one sequence can hold.
  int64_t rowsPerSequence() const;
  /// log2(pageSize) of a paged layout.
  int64_t log2PageSize() const;
  /// The shape of the K (\p dim = d) or V (dv) cache: [numPages, pageSize,
  /// headsKv, dim] or [batch, capacity, headsKv, dim].
  llvm::SmallVector<int64_t, 4> shape(int64_t batch, int64_t headsKv,
                                      int64_t dim) const;
  /// Elements between consecutive pages (paged) or sequences (contiguous).
  int64_t blockStride(int64_t headsKv, int64_t dim) const;
  /// Where row \p row of sequence \p b starts in the cache, in rows of
  /// headsKv * dim elements (reads \p blockTable when paged).
  int64_t cacheRow(llvm::ArrayRef<int32_t> blockTable, int64_t b,
                   int64_t row) const;
  /// Of the block-table slots that rows [firstRow, endRow) of sequence
  /// \p b use (paged), the first whose page is not in [0, numPages); none
  /// when every one is.
  std::optional<int64_t> badPageSlot(const int32_t *blockTable, int64_t b,
                                     int64_t firstRow, int64_t endRow) const;
};

/// Checks \p layout against \p batch sequences that must hold \p lengths
/// rows each, and a paged layout's \p blockTable entries (when not empty):
/// each page index the sequences use must be in [0, numPages).
llvm::Error validateKvCache(const KvCacheLayout &layout, int64_t batch,
                            llvm::ArrayRef<int64_t> lengths,
                            llvm::ArrayRef<int32_t> blockTable);

/// One fwd_paged call: the query side (batch, heads, seqlenQ, scale,
/// softcap, window, ALiBi) is an AttentionProblem whose seqlenK is the
/// longest cache length; keys come from a paged cache.
struct PagedProblem {
  AttentionProblem attention;
  KvCacheLayout cache;            ///< paged
  std::vector<int64_t> cacheLens; ///< keys of each sequence, >= 1

  /// A problem with \p spec's head dims, seqlenK taken from \p cacheLens.
  static PagedProblem make(const KernelSpec &spec, AttentionProblem attention,
                           KvCacheLayout cache, std::vector<int64_t> cacheLens);
  llvm::Error validate(const KernelSpec &spec) const;
};

/// One append_kv call: newTokens rows per sequence are written at rows
/// cacheLens[b] .. cacheLens[b] + newTokens - 1 of its cache; K (and Q when
/// rotateQ) is rotated first when rotary is not None.
struct AppendKvProblem {
  int64_t batch = 1, headsQ = 1, headsKv = 1;
  int64_t newTokens = 1;
  int64_t d = 0, dv = 0; ///< from the spec
  KvCacheLayout cache;
  std::vector<int64_t> cacheLens; ///< rows each cache holds before, >= 0
  RotaryForm rotary = RotaryForm::None;
  int64_t rotaryDim = 0; ///< rotated leading elements (even); 0: d
  bool rotateQ = false;  ///< also rotate Q [batch, newTokens, headsQ, d]

  static AppendKvProblem forSpec(const KernelSpec &spec);
  /// rotaryDim, or d when 0; 0 without rotary.
  int64_t resolvedRotaryDim() const;
  /// Rows the cos/sin tables need: the longest cache after the append.
  int64_t rotaryPositions() const;
  llvm::Error validate(const KernelSpec &spec) const;
  /// [batch, newTokens, heads, dim] shapes of the new rows and of Q.
  llvm::SmallVector<int64_t, 4> newShape(int64_t dim) const;
  llvm::SmallVector<int64_t, 4> qShape() const;
};

} // namespace fmhajit
