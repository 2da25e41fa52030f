//===- TileOps.h - The tile vocabulary recipes are written in -------------===//
//
// A Tile is a 2-D fp32 block (scores, accumulators, operands); where its
// elements live and which lanes own them is the target's business. The words
// follow ThunderKittens': load, mma, rowMax, rowSum, subRow+exp2 (via
// mapWithRow), mulRow, store. Element callbacks receive the logical (row,
// col) coordinates as i32 values that may be vectors: the callback's IR must
// work for scalars and vectors alike (use splatLike()).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"
#include <optional>

namespace fmhajit {

struct PagedRows;

/// What a tile is for; targets pick layouts from it.
enum class TileRole {
  Query,  ///< [bm][d], loaded from Q rows
  KeyT,   ///< [d][bn], K^T: its columns are K rows
  Value,  ///< [bn][dv], loaded from V rows
  Scores, ///< [bm][bn]
  Output, ///< [bm][dv] accumulator
  /// [bm][bn], P kept for a product that starts after the next S is
  /// computed: made only where TileOps::overlapsProducts().
  Probabilities,
  // The backward's operands (ir/BackwardKernel.cpp); only targets that run
  // the backward make them.
  Keys,      ///< [bn][d], K rows: transposed() of a KeyT tile
  ScoresT,   ///< [bn][bm]: transposed() of a Scores tile (P^T, dS^T)
  QueryRows, ///< [bm][d], Q or dO rows read as a right operand
  KeyGrad,   ///< [bn][d] accumulator: dK or dV
};

struct Tile {
  TileRole role;
  unsigned rows, cols;
  llvm::Value *storage;
};

/// One fp32 value per tile row (running max, running sum, rescale factor).
struct RowVec {
  unsigned rows;
  llvm::Value *storage;
};

/// Where a row of a tile starts, for rows that are not evenly spaced: the
/// address of source row \p row (i64, 0 = the tile's first row). A
/// function_ref: the callable must outlive the load that uses it.
using RowAddressFn =
    llvm::function_ref<llvm::Value *(llvm::IRBuilderBase &b, llvm::Value *row)>;

/// The same rows as a box of a tensor with fixed extents, for targets that
/// load whole tiles by TMA: which of the kernel's tensor maps (TensorMapIndex
/// in ir/KernelAbi.h) and the box's first row, head and batch (i64) in it.
/// Under varlen the maps view the packed rows as one sequence: row is the
/// packed row and batch 0. Under fwd_paged the K/V maps view the pools as
/// pages of rows: row is the tile's first key, batch null, and pages the
/// block table each box's page is looked up in. map < 0 where rows are only
/// addressed one by one (pack_gqa's (token, head) rows).
struct TensorBox {
  int map = -1;
  llvm::Value *row = nullptr, *head = nullptr, *batch = nullptr;
  const PagedRows *pages = nullptr;
};

/// Rows of a tensor in global memory: row r starts at base + r * rowStride
/// elements, or at rowAddress(r) when that is set (a paged K/V cache, the
/// rows of packed GQA heads), and its elements are contiguous. Targets ask
/// rowPointer() rather than doing the arithmetic, so both kinds load alike; the
/// evenly spaced one stays a multiply-add.
struct GlobalRows {
  llvm::Value *base;      ///< ptr; unused with rowAddress
  llvm::Value *rowStride; ///< i64, in elements; unused with rowAddress
  DType dtype;
  RowAddressFn rowAddress = nullptr;
  /// rowAddress loads from memory (a paged cache's block table): targets that
  /// copy asynchronously look up all of a thread's rows before its first
  /// copy, so the copies do not wait for the lookups one at a time.
  bool rowsLookedUp = false;
  TensorBox box = {};

  /// The address of row \p row's first element (\p row: i64).
  llvm::Value *rowPointer(llvm::IRBuilderBase &b, llvm::Value *row) const;
  /// Row \p row's (i32) where \p inside (i1), else row 0's: row 0 is valid
  /// in every item, so a row past the end reads it, and the caller drops
  /// what it read.
  llvm::Value *rowPointerOrFirst(llvm::IRBuilderBase &b, llvm::Value *row,
                                 llvm::Value *inside) const;
};

using ElementFn =
    llvm::function_ref<llvm::Value *(llvm::IRBuilderBase &b, llvm::Value *row,
                                     llvm::Value *col, llvm::Value *x)>;
using RowFn = llvm::function_ref<llvm::Value *(
    llvm::IRBuilderBase &b, llvm::ArrayRef<llvm::Value *> in)>;
using WithRowFn = llvm::function_ref<llvm::Value *(
    llvm::IRBuilderBase &b, llvm::Value *x, llvm::Value *rowValue)>;
using ZipFn = llvm::function_ref<llvm::Value *(llvm::IRBuilderBase &b,
                                               llvm::Value *x, llvm::Value *y)>;

class TileOps {
public:
  virtual ~TileOps();

  virtual Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                        const llvm::Twine &name) = 0;
  virtual RowVec makeRowVec(unsigned rows, const llvm::Twine &name) = 0;
  virtual void fill(Tile &t, float value) = 0;
  virtual void fill(RowVec &r, float value) = 0;

  /// Loads the first \p valid (i32) source rows into \p t (its rows, or its
  /// columns for KeyT), converted to fp32 and multiplied by \p scale (a float
  /// or null); the rest become 0.
  virtual void load(Tile &t, const GlobalRows &src, llvm::Value *valid,
                    llvm::Value *scale) = 0;
  /// acc += a * b.
  virtual void mma(Tile &acc, const Tile &a, const Tile &b) = 0;
  /// acc = a * b, ignoring what acc held. Here as a fill and an mma; a
  /// target whose accumulators live in memory starts them at zero in
  /// registers instead, sparing a pass that writes the tile and reads it back.
  virtual void matmul(Tile &acc, const Tile &a, const Tile &b);
  /// acc = acc * accScale[r] (row by row) + a * b: the online softmax's
  /// rescale of O and its product. Here as scaleRows and an mma; a target
  /// whose accumulators live in memory folds the scale into the product's
  /// loads.
  virtual void mmaRescaled(Tile &acc, const RowVec &accScale, const Tile &a,
                           const Tile &b);
  /// t[r][c] = fn(r, c, t[r][c]).
  virtual void map(Tile &t, ElementFn fn) = 0;
  /// t[r][c] = fn(t[r][c], row[r]).
  virtual void mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) = 0;
  /// t[r][c] *= factor[r]: the online softmax's rescale of O. Rows whose
  /// factor is exactly 1 do not change, and a target may skip them (the
  /// recipe's lazy rescale makes that the common case). Here a mapWithRow.
  virtual void scaleRows(Tile &t, const RowVec &factor);
  /// mapWithRow, then sum[r] = the sum of t's new row r: the softmax's exp2
  /// and rowSum. Here as two passes; a target that keeps tiles in memory
  /// sums as it maps.
  virtual void mapWithRowThenSum(Tile &t, const RowVec &row, WithRowFn fn,
                                 RowVec &sum);
  void rowMax(const Tile &t, RowVec &out) {
    reduceRows(t, out, /*isMax=*/true);
  }
  void rowSum(const Tile &t, RowVec &out) {
    reduceRows(t, out, /*isMax=*/false);
  }
  /// out[r] = max (isMax) or sum of t[r][c] over c: rowMax and rowSum.
  virtual void reduceRows(const Tile &t, RowVec &out, bool isMax) = 0;
  /// Whether test(part, row[r]) holds for some part of some row of \p t,
  /// a part being the max of the columns of row r that one thread holds:
  /// an i1 that is the same in every thread that shares rows with this one,
  /// so the recipe may branch on it. For a test that grows with its first
  /// argument, that is whether it holds for some row's max, found without
  /// reducing rows across threads (the lazy rescale's common case: no row's
  /// max grew). Null where a target does not offer it (here).
  virtual llvm::Value *anyRowPartMax(const Tile &t, const RowVec &row,
                                     WithRowFn test) {
    return nullptr;
  }
  /// out[r] = fn(in[0][r], in[1][r], ...); out may be one of in.
  virtual void mapRows(RowVec &out, llvm::ArrayRef<const RowVec *> in,
                       RowFn fn) = 0;
  /// Stores the first \p valid rows of \p t, converted to dst.dtype.
  virtual void store(const Tile &t, const GlobalRows &dst,
                     llvm::Value *valid) = 0;
  /// Stores the first \p valid values of \p r as floats, value i at
  /// dst.rowPointer(i): consecutive floats with a row stride of 1, or
  /// wherever dst.rowAddress puts them (the LSE rows of packed GQA heads).
  virtual void store(const RowVec &r, const GlobalRows &dst,
                     llvm::Value *valid) = 0;
  /// Makes \p t's last load visible to every thread; targets that copy
  /// asynchronously wait here rather than at the tile's first use.
  virtual void sync(Tile &t) {}
  /// Completes loads still in flight (targets that copy asynchronously).
  virtual void drain() {}
  /// \p t's next load() will read the first \p valid (i32) rows of \p src:
  /// a target that copies asynchronously may start now, into storage \p t is
  /// not read from until that load(), which then takes the copy (the
  /// backward's next query tile, loaded while this one's products run).
  /// Here nothing: load() copies.
  virtual void prefetch(Tile &t, const GlobalRows &src, llvm::Value *valid) {}
  /// The same for \p r's next loadRows().
  virtual void prefetchRows(RowVec &r, const GlobalRows &src,
                            llvm::Value *valid, float fill) {}
  /// Whether warmRows() does anything: targets whose loads copy at once
  /// and so wait on memory (the host) ask their caches for rows ahead.
  virtual bool warmsRows() const { return false; }
  /// The first \p valid (i32) rows of \p src, \p cols elements each, will be
  /// loaded soon: a target whose loads wait on memory asks its caches for
  /// them now. Nothing is copied, and no storage changes. Here nothing.
  virtual void warmRows(const GlobalRows &src, llvm::Value *valid,
                        unsigned cols) {}
  /// The recipe reads \p t no more in this work item: a target that loads
  /// ahead may refill its storage (a persistent block's next Q).
  virtual void retire(Tile &t) {}
  /// Only the first \p rows (i32) query rows of the tiles that follow are
  /// ever stored: a target may skip work on the rest (whose values are then
  /// unspecified). The host does, so a short query costs little in a tall tile.
  virtual void limitQueryRows(llvm::Value *rows) {}

  /// Whether startProduct() returns while the product still runs. The
  /// forward recipe then orders its key loop so that one key tile's softmax
  /// overlaps the previous tile's P V (ForwardKernel.cpp).
  virtual bool overlapsProducts() const { return false; }
  /// Starts acc (+)= a * b, waiting for the operands' loads. Until
  /// finishProduct(acc) nothing may read or change acc, nor change a or b.
  /// Here the product runs at once.
  virtual void startProduct(Tile &acc, const Tile &a, const Tile &b,
                            bool accumulate);
  /// Waits for acc's product; shared tiles it read may then be reloaded.
  virtual void finishProduct(Tile &acc) {}
  /// finishProduct(acc), then scaleRows(acc, factor): one word, so that a
  /// target may decide whether to scale before it waits (wgmma: ptxas
  /// hoists a lone wait for O's product above the softmax that was to
  /// overlap it; behind the decision's branch it stays put).
  virtual void finishProductScaled(Tile &acc, const RowVec &factor) {
    finishProduct(acc);
    scaleRows(acc, factor);
  }
  /// Bracket the products one group of threads issues together. Where
  /// several groups share the tensor cores they take turns here (ping-pong),
  /// so that one group's softmax runs while another's products do.
  virtual void beginProducts() {}
  virtual void endProducts() {}
  /// dst = src: a Probabilities tile from the Scores tile, converted to
  /// what the product reads. Only targets that overlap products have it.
  virtual void copy(Tile &dst, const Tile &src);

  // Words of the backward (ir/BackwardKernel.cpp). Only targets that run
  // it have them; the others refuse backward specs before emitting.
  /// A view of \p t's transpose in \p t's own storage: a Scores tile's
  /// ScoresT, a KeyT tile's Keys. Products then read it as any operand.
  virtual Tile transposed(const Tile &t);
  /// t[r][c] = fn(t[r][c], other[r][c]) for two tiles of one role and shape.
  virtual void zip(Tile &t, const Tile &other, ZipFn fn);
  /// Loads the first \p valid (i32) floats at src.rowPointer(i) into \p r
  /// (an LSE, D = rowsum(dO * O)); the rest become \p fill.
  virtual void loadRows(RowVec &r, const GlobalRows &src, llvm::Value *valid,
                        float fill);
  /// \p query (a Query tile) read as QueryRows, in its own storage, where
  /// the target keeps Query tiles as rows with their scale set aside (the
  /// GPU); else none, and the recipe loads a QueryRows tile itself.
  virtual std::optional<Tile> rowsView(const Tile &query) {
    return std::nullopt;
  }
  /// t[r][c] += factor[r] * src[r][c] for the first \p valid (i32) rows of
  /// \p src's fp32 rows (a split tail's fold of another part's O). Only
  /// targets that split tails have it.
  virtual void addScaledRows(Tile &t, const GlobalRows &src, llvm::Value *valid,
                             const RowVec &factor);
  /// A part of a split tail item (KernelArgs::tailParts) has stored its
  /// partials: counts this group of threads' arrival at \p counters (the
  /// item's kTailGroups i32s, one for each group of threads that shares the
  /// tile's rows) and answers whether it was the last of \p parts (i32):
  /// an i1, the same in every thread of the group. After a true answer the
  /// group may read every other part's partials of its rows (an acquire of
  /// the others' release). Null where a target does not split tails (here).
  virtual llvm::Value *arrivesLast(llvm::Value *counters, llvm::Value *parts) {
    return nullptr;
  }
  /// Whether storeAdd() exists: targets with floating-point atomics.
  virtual bool addsToMemory() const { return false; }
  /// dst[r][c] += t[r][c] for the first \p valid (i32) rows, atomically,
  /// into fp32 rows (FlashAttention-2's dQ accumulation).
  virtual void storeAdd(const Tile &t, const GlobalRows &dst,
                        llvm::Value *valid);
};

/// \p scalar broadcast to \p like's vector width (or \p scalar if \p like is
/// scalar).
llvm::Value *splatLike(llvm::IRBuilderBase &b, llvm::Value *scalar,
                       llvm::Value *like);

} // namespace fmhajit
