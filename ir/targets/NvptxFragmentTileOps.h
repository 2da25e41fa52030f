//===- NvptxFragmentTileOps.h - Tensor-core tiles shared by mma and wgmma -===//
//
// pipeline=mma (mma.sync m16n8k16) and pipeline=wgmma (wgmma m64nNk16) keep
// S and O in the same register layout: each warp owns 16-row m-tiles, and an
// m16n8 accumulator block gives lane l (g = l / 4, t = l % 4) rows g, g+8
// and columns 2t, 2t+1. A wgmma m64nN accumulator is four such warps' blocks
// side by side, and the A fragment of P that both read from registers
// (16 rows x 16 keys, four packed pairs) comes from S's accumulators the same
// way. So everything but the products and where Q, K and V sit in shared
// memory is written once, here:
//  - Scores and Output tiles are arrays of fp32 registers (allocas SROA
//    promotes); row vectors hold rows g and g+8 of each m-tile, and row
//    reductions finish with two quad shuffles.
//  - Query, KeyT and Value tiles are copied into shared memory by cp.async,
//    16 bytes a copy (zero-filled past the last valid row), to the address
//    the subclass's layout gives each 16-byte chunk. load() only issues and
//    commits; sync() (or the first product that reads the tile) waits for
//    its group and makes it visible with a barrier. A load skips its own
//    barrier when no thread can still be reading the tile.
//  - Q keeps its softmax scale aside; S gets it in fp32 after the product.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "specs/pipelines/TileRules.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/ErrorHandling.h"

namespace fmhajit {

/// The shared tile of \p role (Query, KeyT or Value) in a layout with
/// query, keys and values tiles.
template <typename Layout>
const SharedTile &sharedTileOf(const Layout &layout, TileRole role) {
  switch (role) {
  case TileRole::Query:
    return layout.query;
  case TileRole::KeyT:
    return layout.keys;
  case TileRole::Value:
    return layout.values;
  default:
    llvm_unreachable("accumulators are not in shared memory");
  }
}

class NvptxFragmentTileOps : public TileOps {
public:
  /// \p mTiles 16-row m-tiles per warp; \p sharedBytes of shared memory.
  NvptxFragmentTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                       unsigned mTiles, unsigned sharedBytes);

  /// Q, K^T and V in shared memory where the layout places them (K^T as K
  /// rows); S and O as register accumulators.
  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const llvm::Twine &name) override;
  RowVec makeRowVec(unsigned rows, const llvm::Twine &name) override;
  void fill(Tile &tile, float value) override;
  void fill(RowVec &r, float value) override;
  void load(Tile &tile, const GlobalRows &src, llvm::Value *valid,
            llvm::Value *scale) override;
  /// Rows g and g+8 of each m-tile, as the accumulators hold them.
  void loadRows(RowVec &r, const GlobalRows &src, llvm::Value *valid,
                float fill) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  /// Each pair added as it lands (no scratch tile).
  void addScaledRows(Tile &t, const GlobalRows &src, llvm::Value *valid,
                     const RowVec &factor) override;
  void map(Tile &tile, ElementFn fn) override;
  void mapWithRow(Tile &tile, const RowVec &row, WithRowFn fn) override;
  /// Where skipsDeadRows(): map, mapWithRow, reduceRows and anyRowPartMax
  /// skip the halves of a warp's rows that lie past \p rows, each behind a
  /// warp-uniform branch. Rows past an item's query rows are never stored,
  /// and products keep each row's values to itself, so what those halves
  /// hold does not reach a stored row.
  void limitQueryRows(llvm::Value *rows) override;
  /// Skipped by a warp whose rows' factors are all 1 (a uniform branch)
  /// where skipsUnitRescale.
  void scaleRows(Tile &tile, const RowVec &factor) override;
  void reduceRows(const Tile &tile, RowVec &out, bool isMax) override;
  /// A vote of the warp (whose quads hold whole rows) where
  /// votesOnRowParts; else null.
  llvm::Value *anyRowPartMax(const Tile &tile, const RowVec &row,
                             WithRowFn test) override;
  void mapRows(RowVec &out, llvm::ArrayRef<const RowVec *> in,
               RowFn fn) override;
  void store(const Tile &tile, const GlobalRows &dst,
             llvm::Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst,
             llvm::Value *valid) override;
  /// P from S, as packed 16-bit pairs of A fragments.
  void copy(Tile &dst, const Tile &src) override;
  void sync(Tile &tile) override { waitFor(tile); }
  void drain() override;

protected:
  /// Where the layout places the shared tile of \p role (Query, KeyT or
  /// Value).
  virtual const SharedTile &sharedTile(TileRole role) const = 0;
  /// The shared-memory address of the 16-byte chunk holding elements
  /// [col, col + 8) of source row \p key of \p tile (i32 values).
  virtual llvm::Value *chunkAddress(const Tile &tile, llvm::Value *key,
                                    llvm::Value *col) = 0;
  /// Waits for the copy group of \p tile (later groups may stay in flight)
  /// and makes every thread's copies visible to the block. Returns whether
  /// it waited (and so passed a barrier): false if no copy was in flight.
  bool waitFor(const Tile &tile);
  /// Issues cp.async copies of rows [firstKey, firstKey + keys) of \p tile
  /// (firstKey: i32, or null for 0), 16 bytes a copy and zero from row
  /// \p valid on, by \p threads threads of which this is \p thread (i32),
  /// without committing them:
  ///   for c = thread; c < keys * chunks a row; c += threads:
  ///     cp.async.cg [chunkAddress(key, col)], [rowPointer(key) + col], 16|0
  void copyRows(const Tile &tile, const GlobalRows &src, llvm::Value *valid,
                llvm::Value *thread, unsigned threads, llvm::Value *firstKey,
                unsigned keys);
  /// Each lane's accumulator elements of \p tile from \p src's rows (pairs
  /// of columns), times \p scale (or null); 0 from row \p valid on.
  void loadAccumulator(Tile &tile, const GlobalRows &src, llvm::Value *valid,
                       llvm::Value *scale);
  /// fn(m-tile, n-tile, half, inside, pair) for each pair of columns of
  /// \p src's rows this lane's accumulators of \p tile hold, loaded as two
  /// floats; inside: the row is below \p valid (else row 0 was read).
  using LanePairFn =
      llvm::function_ref<void(unsigned i, unsigned j, unsigned half,
                              llvm::Value *inside, llvm::Value *pair)>;
  void forEachLanePair(const Tile &tile, const GlobalRows &src,
                       llvm::Value *valid, LanePairFn fn);
  /// Elements in one 16-byte copy.
  unsigned chunkElements() const { return 16 / dtypeBytes(spec.dtype); }
  /// copyRows' and copyLookedUpRows' steps: chunk \p c's row and column,
  /// the row's address (row 0's past \p valid), and the chunk's copy.
  std::pair<llvm::Value *, llvm::Value *> chunkOf(llvm::Value *c,
                                                  unsigned chunksPerRow);
  llvm::Value *rowOrFirst(const GlobalRows &src, llvm::Value *key,
                          llvm::Value *valid);
  void copyChunk(const Tile &tile, llvm::Value *key, llvm::Value *col,
                 llvm::Value *rowPtr, llvm::Value *valid);
  /// load() of rows whose addresses are looked up (GlobalRows::rowsLookedUp),
  /// \p n whole passes of the block's threads over the tile's chunks: every
  /// lookup first, then every copy.
  void copyLookedUpRows(Tile &tile, const GlobalRows &src, llvm::Value *valid,
                        unsigned n);
  /// body(m-tile, half) for each half of this warp's rows (rows g or g + 8
  /// of its i-th 16): all of them, or behind a warp-uniform branch on the
  /// half's first row where limitQueryRows set liveRows.
  void
  forEachLiveHalf(llvm::function_ref<void(unsigned i, unsigned half)> body);
  /// Whether limitQueryRows takes the item's rows (EmitOptions::skipDeadRows,
  /// pack_gqa, dv <= 128).
  virtual bool skipsDeadRows() const;
  /// The item's query rows where the softmax skips the rest, else null.
  llvm::Value *liveRows = nullptr;
  /// The most lookups a thread holds at once in copyLookedUpRows (one row
  /// pointer each); a tile needing more copies as the unpaged loop does.
  static constexpr unsigned kMaxLookupsAhead = 16;
  /// A block barrier; no tile read before it can still be in use after.
  void barrier();
  /// A barrier if \p tile was read since the last one: before a write.
  void barrierIfRead(const Tile &tile) {
    if (readSinceBarrier.count(tile.storage))
      barrier();
  }
  /// Records that \p tile is read before the next barrier.
  void markRead(const Tile &tile) { readSinceBarrier.insert(tile.storage); }
  /// Sets \p scale aside for Query tile \p query (load() does).
  void deferScale(const Tile &query, llvm::Value *scale) {
    if (scale)
      queryScale[query.storage] = scale;
  }
  /// The softmax scale load() set aside for a Query tile, or null.
  llvm::Value *deferredScale(const Tile &query) const {
    return queryScale.lookup(query.storage);
  }

  /// Whether a lane of the warp holds a factor other than 1 in \p factor
  /// (i1, the same in every lane: a vote).
  llvm::Value *anyFactorOtherThanOne(const RowVec &factor);
  /// max(x, y) (isMax) or x + y: one step of a row reduction.
  llvm::Value *combineRows(llvm::Value *x, llvm::Value *y, bool isMax);
  /// \p values (not empty) combined pairwise, level by level: a tree, whose
  /// depth is the log of a chain's.
  llvm::Value *combineTree(llvm::ArrayRef<llvm::Value *> values, bool isMax);
  /// The max (isMax) or sum of the columns of fragment row (i, half) that
  /// this lane holds: a quad's four lanes hold a row.
  llvm::Value *reduceLaneRow(const Tile &tile, unsigned i, unsigned half,
                             bool isMax);
  llvm::Value *f32(float v);
  /// Element \p i of a register array (an alloca SROA turns into registers).
  llvm::Value *slot(llvm::Value *base, unsigned i);
  /// A row vector's values a thread, for \p rows rows: rows g and g + 8 of
  /// each m-tile.
  virtual unsigned rowSlots(unsigned rows) const { return mTiles * 2; }
  /// A register tile's accumulators a thread (S, O).
  virtual unsigned accCount(const Tile &tile) const {
    return mTiles * (tile.cols / 8) * 4;
  }
  /// Accumulator element (m-tile i, n-tile j, register e) -> flat index.
  unsigned accIndex(const Tile &tile, unsigned i, unsigned j,
                    unsigned e) const {
    return (i * (tile.cols / 8) + j) * 4 + e;
  }
  /// The tile row of m-tile \p i's register \p e (or 2 * half).
  llvm::Value *rowOf(unsigned i, unsigned e);
  llvm::Value *colOf(unsigned j, unsigned e);
  /// This lane's four 4-byte pairs of a group of four 8-column blocks
  /// exchanged across its quad (store()).
  llvm::SmallVector<llvm::Value *, 4>
  quadTransposed(llvm::ArrayRef<llvm::Value *> words);
  /// One lane's 16 bytes of a transposed group (store()).
  void storeBlock(llvm::Value *rowPtr, llvm::Type *outElem, unsigned group,
                  llvm::ArrayRef<llvm::Value *> words);
  /// t[r][c] is added into dst's fp32 rows for the first \p valid rows,
  /// by red.global.add (no result awaited): of column pairs where
  /// \p pairAdds (red.global.add.v2.f32, sm_90 and PTX 8.1), else one by
  /// one (FlashAttention-2's dQ accumulation).
  void addToGlobal(const Tile &t, const GlobalRows &dst, llvm::Value *valid,
                   bool pairAdds);
  /// Two floats as one register of packed 16-bit elements.
  llvm::Value *packPair(llvm::Value *lo, llvm::Value *hi);
  /// Two floats as two e4m3 bytes (i16), \p lo in the low byte.
  llvm::Value *packFp8Pair(llvm::Value *lo, llvm::Value *hi);
  /// Keys one A fragment of P covers: 16, or 32 for fp8 (k32).
  unsigned fragmentKeys() const { return isFp8(spec.dtype) ? 32 : 16; }
  /// P's A fragment (m-tile \p i, keys fragmentKeys() * kk on) from S's
  /// accumulators: a0/a1 are rows g/g+8 of n-tile 2kk, a2/a3 of n-tile
  /// 2kk+1 (fp8: of n-tiles 4kk, 4kk+1 and 4kk+2, 4kk+3, in a permuted key
  /// order). A Probabilities tile holds them packed already.
  virtual llvm::SmallVector<llvm::Value *, 4>
  probabilityFragments(const Tile &s, unsigned i, unsigned kk);

  llvm::IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  unsigned mTiles;
  llvm::Type *elem;
  llvm::Value *smem, *lane, *g, *t, *warpRow0;
  /// Where the warp's columns start (colOf adds it), or null for 0: the
  /// backward splits a tile's columns among warps too.
  llvm::Value *warpCol0 = nullptr;
  /// The products read shared tiles through the async proxy (wgmma).
  bool tensorCoresReadShared = false;
  /// Row maxima and sums reduce in a tree (wgmma: a consumer warp runs its
  /// softmax mostly alone on its scheduler, so a chain's latency shows)
  /// rather than a chain (mma on sm_80: the tree's extra live values made
  /// 255-register kernels spill).
  bool reducesInTree = false;
  /// O is stored 16 bytes a lane after a transpose across each quad
  /// (wgmma; on mma at 255 registers the transposed words spilled).
  bool storesWholeBlocks = false;
  /// scaleRows() skips warps whose factors are all 1 (wgmma; on mma the
  /// branch made a 255-register fp16 d = 64 dropout kernel spill 80 bytes).
  bool skipsUnitRescale = false;
  /// anyRowPartMax() votes (wgmma where skipsUnitRescale, but dropout at
  /// dv = 256: there the branch made a 168-register kernel spill 4 bytes).
  bool votesOnRowParts = false;

private:
  /// Shared tiles with copies in flight, oldest first.
  llvm::SmallVector<llvm::Value *, 4> pending;
  /// Query storage -> its deferred scale.
  llvm::DenseMap<llvm::Value *, llvm::Value *> queryScale;
  /// Shared tiles read since the last barrier.
  llvm::SmallPtrSet<llvm::Value *, 4> readSinceBarrier;
};

} // namespace fmhajit
