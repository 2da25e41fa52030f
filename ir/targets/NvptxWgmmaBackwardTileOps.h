//===- NvptxWgmmaBackwardTileOps.h - The backward on wgmma ----------------===//
//
// The tile ops of the backward on pipeline wgmma (sm_90a), declared here so
// that their words are defined in two files: NvptxWgmmaBackwardTileOps.cpp
// (tiles, products, loads, stores; its header says how they work) and
// NvptxWgmmaBackwardRows.cpp (the row vectors: the LSE and D in shared
// memory, and their prefetch).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/NvptxFragmentTileOps.h"
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <optional>

namespace fmhajit {

class NvptxWgmmaBackwardTileOps : public NvptxFragmentTileOps {
public:
  NvptxWgmmaBackwardTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target);

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const llvm::Twine &name) override;
  RowVec makeRowVec(unsigned rows, const llvm::Twine &name) override;
  void fill(Tile &tile, float value) override {
    forget(tile.storage);
    Tile acc = accumulator(tile);
    NvptxFragmentTileOps::fill(acc, value);
  }
  void fill(RowVec &r, float value) override;
  void load(Tile &tile, const GlobalRows &src, llvm::Value *valid,
            llvm::Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override {
    multiply(acc, a, bt, /*accumulate=*/true);
  }
  void matmul(Tile &acc, const Tile &a, const Tile &bt) override {
    multiply(acc, a, bt, /*accumulate=*/false);
  }
  /// S^T and dP^T may run together (BackwardScoreGrads.cpp issues both, then
  /// waits for each where it reads it): with 64 queries, 32 accumulators a
  /// thread each. dP's accumulators beside S's elementwise work spilled
  /// with 128 queries (64 each; 12 bytes at d = 64) and beside ALiBi's
  /// distances (4-52 bytes at d = 128).
  bool overlapsProducts() const override {
    return spec.bm <= WgmmaBackwardLayout::kKeysPerGroup &&
           spec.bias != Bias::Alibi;
  }
  void startProduct(Tile &acc, const Tile &a, const Tile &bt,
                    bool accumulate) override;
  void finishProduct(Tile &acc) override { finish(acc.storage); }
  void map(Tile &tile, ElementFn fn) override;
  void mapWithRow(Tile &tile, const RowVec &row, WithRowFn fn) override;
  void reduceRows(const Tile &, RowVec &, bool) override {
    llvm_unreachable("bwd_dq_dk_dv sums no rows");
  }
  void mapRows(RowVec &out, llvm::ArrayRef<const RowVec *> in,
               RowFn fn) override;
  void store(const Tile &tile, const GlobalRows &dst,
             llvm::Value *valid) override;
  void store(const RowVec &, const GlobalRows &, llvm::Value *) override {
    llvm_unreachable("bwd_dq_dk_dv stores no rows");
  }
  /// Waits for K (V) before the steps, and stores the rows prefetched
  /// before them: stores left to a later word would be emitted inside the
  /// steps' loop.
  void sync(Tile &tile) override {
    storePendingRows();
    acquire(tile);
  }
  void drain() override {
    storePendingRows();
    finishAll();
    NvptxFragmentTileOps::drain();
  }
  Tile transposed(const Tile &t) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  void loadRows(RowVec &r, const GlobalRows &src, llvm::Value *valid,
                float fill) override;
  void prefetch(Tile &tile, const GlobalRows &src, llvm::Value *valid) override;
  void prefetchRows(RowVec &r, const GlobalRows &src, llvm::Value *valid,
                    float fill) override;
  std::optional<Tile> rowsView(const Tile &query) override {
    return Tile{TileRole::QueryRows, query.rows, query.cols, query.storage};
  }
  bool addsToMemory() const override { return true; }
  void storeAdd(const Tile &t, const GlobalRows &dst,
                llvm::Value *valid) override;

private:
  const SharedTile &sharedTile(TileRole) const override {
    llvm_unreachable("makeTile places the shared tiles");
  }
  llvm::Value *chunkAddress(const Tile &tile, llvm::Value *key,
                            llvm::Value *col) override;

  /// The accumulator behind a register tile, as NvptxFragmentTileOps lays
  /// out Output tiles: Scores transposed (rows keys, columns queries),
  /// KeyGrad as is, dQ (Output) the warpgroup's columns.
  Tile accumulator(const Tile &t) const;
  /// Runs \p body with rowOf and colOf counting from \p tile's origin: dQ's
  /// rows and columns of this warpgroup, else the warp's keys.
  template <typename Fn> void withOrigin(const Tile &tile, Fn body) {
    bool dq = tile.role == TileRole::Output;
    llvm::Value *row = warpRow0, *col = warpCol0;
    warpRow0 = dq ? queryRow0 : keyRow0;
    warpCol0 = dq ? gradCol0 : nullptr;
    body();
    warpRow0 = row, warpCol0 = col;
  }
  /// Row \p row (i32) of \p src where it is below \p valid, else \p fill.
  llvm::Value *loadRow(const GlobalRows &src, llvm::Value *row,
                       llvm::Value *valid, float fill);
  /// A Tile naming row vector \p r's shared floats, for the barrier
  /// bookkeeping of shared tiles.
  static Tile rowTile(const RowVec &r) {
    return {TileRole::Query, 1, r.rows, r.storage};
  }

  /// acc (+)= a * b for every product of the recipe.
  void multiply(Tile &acc, const Tile &a, const Tile &bt, bool accumulate);
  /// Waits for \p tile's copies if they are in flight (its first product
  /// since its load): the barrier also publishes the row vectors.
  void acquire(const Tile &tile);
  /// S^T = K Q^T or dP^T = V dO^T: \p keys (K or V) the A rows of this
  /// warpgroup, \p rows (Q or dO) B.
  llvm::SmallVector<llvm::Value *, 128>
  keysTimesRows(const Tile &keys, const Tile &rows, unsigned n);
  /// dV += P^T dO or dK += dS^T Q: \p scoresT's registers as A.
  llvm::SmallVector<llvm::Value *, 128>
  scoresTTimesRows(const Tile &scoresT, const Tile &rows,
                   llvm::ArrayRef<llvm::Value *> acc);
  /// dQ (+)= dS K from dS^T in shared memory.
  llvm::SmallVector<llvm::Value *, 128>
  gradsTimesKeys(const Tile &keys, llvm::ArrayRef<llvm::Value *> acc,
                 bool accumulate);
  /// P^T's (dS^T's) A fragments from Scores tile \p scores: one set of four
  /// packed words per 16 queries. Built once per value of the tile: dK's
  /// product and dS^T's copy share them, so dS's fp32 registers need not
  /// outlive them.
  llvm::ArrayRef<llvm::SmallVector<llvm::Value *, 4>>
  packedFragments(const Tile &scores);
  /// \p storage is rewritten: fragments made from it are stale.
  void forget(llvm::Value *storage) {
    if (fragmentsOf == storage)
      fragmentsOf = nullptr;
  }
  /// Writes Scores tile \p dS into the shared dS^T tile and publishes it.
  void writeGrads(const Tile &dS);

  /// Where \p tile's current contents are: its storage, or for Q and dO
  /// (two buffers) the buffer the latest load() took.
  llvm::Value *currentAddress(const Tile &tile);
  /// Buffer \p index (i32) of Q's or dO's two.
  llvm::Value *bufferAddress(const Tile &tile, llvm::Value *index) {
    unsigned bytes = WgmmaBackwardLayout::bufferBytes(
        tile.storage == queryStorage ? layout.query : layout.dO);
    return b.CreateInBoundsGEP(b.getInt8Ty(), tile.storage,
                               b.CreateMul(index, b.getInt32(bytes)));
  }

  /// A product issued and committed, not yet waited for.
  struct InFlight {
    Tile acc; ///< the accumulator view it writes
    llvm::SmallVector<llvm::Value *, 128>
        sums;           ///< its accumulators, until the wait
    llvm::Value *scale; ///< S's deferred softmax scale, or null
  };
  void issue(const Tile &acc, llvm::SmallVector<llvm::Value *, 128> sums,
             llvm::Value *scale) {
    inFlight.push_back({acc, std::move(sums), scale});
  }
  /// Waits for the product into \p storage (and every older one).
  void finish(llvm::Value *storage);
  void finishAll() {
    while (!inFlight.empty())
      finish(inFlight.back().acc.storage);
  }
  /// The accumulators of \p acc, or poison where a product starts them.
  llvm::SmallVector<llvm::Value *, 128> accumulators(const Tile &acc,
                                                     bool accumulate);

  WgmmaBackwardLayout layout;
  /// This thread's warpgroup, its first key (S, dK, dV rows: the base
  /// class's warp row), its first dQ row and column (null: column 0).
  llvm::Value *group, *keyRow0, *queryRow0, *gradCol0 = nullptr;
  unsigned queryTiles = 0, keyTiles = 0, rowVecs = 0;
  /// Row vectors written since the last barrier.
  bool rowsUnpublished = false;
  llvm::SmallVector<InFlight, 4> inFlight;
  /// Q's storage (its first buffer), and for Q and dO the buffer their
  /// latest load() took (an i32 in registers, 0 or 1), once prefetched.
  llvm::Value *queryStorage = nullptr;
  llvm::DenseMap<llvm::Value *, llvm::Value *> bufferIndex;
  /// Prefetched tiles loaded but not yet waited for.
  llvm::SmallPtrSet<llvm::Value *, 2> awaiting;
  /// Row vector storage -> the buffer its latest loadRows() took (i32 in
  /// registers), once prefetched.
  llvm::DenseMap<llvm::Value *, llvm::Value *> rowBuffer;
  /// Rows prefetched into registers, stored into the other buffer at the
  /// next product's wait (the loads have landed by then).
  struct PendingRow {
    RowVec rows;
    llvm::Value *value;
  };
  llvm::SmallVector<PendingRow, 2> pendingRows;
  void storePendingRows();
  /// \p r's current buffer, or the other one (\p other).
  llvm::Value *rowAddress(const RowVec &r, bool other = false);
  /// The tile the fragments were made from (null: none), and where.
  llvm::Value *fragmentsOf = nullptr;
  llvm::BasicBlock *fragmentsBlock = nullptr;
  llvm::SmallVector<llvm::SmallVector<llvm::Value *, 4>, 16> fragments;
};

} // namespace fmhajit
