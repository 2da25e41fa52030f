//===- NvptxWgmmaBackwardTileOps.cpp - The backward on wgmma --------------===//
//
// The words of the backward recipe (ir/BackwardKernel.cpp) on sm_90a's
// warpgroup MMA, with FlashAttention-3's data flow
// (specs/pipelines/WgmmaBackwardLayout.h). Warpgroup w owns keys
// 64w..64w+63 of the block's key tile; each of its warps 16 of them.
//  - Scores tiles (S, P, dP, dS) are held transposed: wgmma accumulators
//    of m64nN with N = bm, keys as rows, queries as columns. Elementwise
//    words hand their callbacks (query, key) coordinates all the same, and
//    the row vectors (LSE, D) sit in shared memory, where each lane reads
//    the queries of its columns.
//      S^T = K Q^T, dP^T = V dO^T   A: the warpgroup's K (V) rows, B: Q
//                                   (dO), both K-major descriptors
//  - P^T and dS^T in 16 bits are the A fragments of the key-major products,
//    straight from the accumulators (as the forward's P for O += P V):
//      dV += P^T dO, dK += dS^T Q   A: registers, B: dO (Q) rows, MN-major
//    These two are issued and left running: they are waited for before
//    anything rewrites what they read (the next Q and dO) or before dK and
//    dV are stored.
//  - dQ = dS K: the warpgroups write dS^T into shared memory, [bn][bm] in
//    swizzled slabs, and each computes its rows and columns of dQ from it:
//      A: dS^T read as MN-major dS, B: K's rows as MN-major K
//    then adds them to the fp32 workspace (red.global.add.v2.f32).
//  - Q, dO, K and V are copied with cp.async by every thread into
//    WgmmaLayout's swizzled slabs (NvptxFragmentTileOps::load); a product
//    waits for its operands' copies. The next step's Q and dO are copied
//    into second buffers (and its LSE and D rows loaded) while this step's
//    products run (prefetch, prefetchRows); its load() then flips buffers.
//
//===----------------------------------------------------------------------===//
#include "ir/Loops.h"
#include "ir/targets/NvptxFragmentTileOps.h"
#include "ir/targets/NvptxWgmma.h"
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxWgmmaBackwardTileOps : public NvptxFragmentTileOps {
public:
  NvptxWgmmaBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target);

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override;
  RowVec makeRowVec(unsigned rows, const Twine &name) override;
  void fill(Tile &tile, float value) override {
    forget(tile.storage);
    Tile acc = accumulator(tile);
    NvptxFragmentTileOps::fill(acc, value);
  }
  void fill(RowVec &r, float value) override;
  void load(Tile &tile, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override {
    multiply(acc, a, bt, /*accumulate=*/true);
  }
  void matmul(Tile &acc, const Tile &a, const Tile &bt) override {
    multiply(acc, a, bt, /*accumulate=*/false);
  }
  /// S^T and dP^T may run together (BackwardKernel.cpp issues both, then
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
  void mapRows(RowVec &out, ArrayRef<const RowVec *> in, RowFn fn) override;
  void store(const Tile &tile, const GlobalRows &dst, Value *valid) override;
  void store(const RowVec &, const GlobalRows &, Value *) override {
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
  void loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                float fill) override;
  void prefetch(Tile &tile, const GlobalRows &src, Value *valid) override;
  void prefetchRows(RowVec &r, const GlobalRows &src, Value *valid,
                    float fill) override;
  std::optional<Tile> rowsView(const Tile &query) override {
    return Tile{TileRole::QueryRows, query.rows, query.cols, query.storage};
  }
  bool addsToMemory() const override { return true; }
  void storeAdd(const Tile &t, const GlobalRows &dst, Value *valid) override;

private:
  const SharedTile &sharedTile(TileRole) const override {
    llvm_unreachable("makeTile places the shared tiles");
  }
  Value *chunkAddress(const Tile &tile, Value *key, Value *col) override;

  /// The accumulator behind a register tile, as NvptxFragmentTileOps lays
  /// out Output tiles: Scores transposed (rows keys, columns queries),
  /// KeyGrad as is, dQ (Output) the warpgroup's columns.
  Tile accumulator(const Tile &t) const;
  /// Runs \p body with rowOf and colOf counting from \p tile's origin: dQ's
  /// rows and columns of this warpgroup, else the warp's keys.
  template <typename Fn> void withOrigin(const Tile &tile, Fn body) {
    bool dq = tile.role == TileRole::Output;
    Value *row = warpRow0, *col = warpCol0;
    warpRow0 = dq ? queryRow0 : keyRow0;
    warpCol0 = dq ? gradCol0 : nullptr;
    body();
    warpRow0 = row, warpCol0 = col;
  }
  /// Row \p row (i32) of \p src where it is below \p valid, else \p fill.
  Value *loadRow(const GlobalRows &src, Value *row, Value *valid, float fill);
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
  SmallVector<Value *, 128> keysTimesRows(const Tile &keys, const Tile &rows,
                                          unsigned n);
  /// dV += P^T dO or dK += dS^T Q: \p scoresT's registers as A.
  SmallVector<Value *, 128> scoresTTimesRows(const Tile &scoresT,
                                             const Tile &rows,
                                             ArrayRef<Value *> acc);
  /// dQ (+)= dS K from dS^T in shared memory.
  SmallVector<Value *, 128>
  gradsTimesKeys(const Tile &keys, ArrayRef<Value *> acc, bool accumulate);
  /// P^T's (dS^T's) A fragments from Scores tile \p scores: one set of four
  /// packed words per 16 queries. Built once per value of the tile: dK's
  /// product and dS^T's copy share them, so dS's fp32 registers need not
  /// outlive them.
  ArrayRef<SmallVector<Value *, 4>> packedFragments(const Tile &scores);
  /// \p storage is rewritten: fragments made from it are stale.
  void forget(Value *storage) {
    if (fragmentsOf == storage)
      fragmentsOf = nullptr;
  }
  /// Writes Scores tile \p dS into the shared dS^T tile and publishes it.
  void writeGrads(const Tile &dS);

  /// Where \p tile's current contents are: its storage, or for Q and dO
  /// (two buffers) the buffer the latest load() took.
  Value *currentAddress(const Tile &tile);
  /// Buffer \p index (i32) of Q's or dO's two.
  Value *bufferAddress(const Tile &tile, Value *index) {
    unsigned bytes = WgmmaBackwardLayout::bufferBytes(
        tile.storage == queryStorage ? layout.query : layout.dO);
    return b.CreateInBoundsGEP(b.getInt8Ty(), tile.storage,
                               b.CreateMul(index, b.getInt32(bytes)));
  }

  /// A product issued and committed, not yet waited for.
  struct InFlight {
    Tile acc;                       ///< the accumulator view it writes
    SmallVector<Value *, 128> sums; ///< its accumulators, until the wait
    Value *scale;                   ///< S's deferred softmax scale, or null
  };
  void issue(const Tile &acc, SmallVector<Value *, 128> sums, Value *scale) {
    inFlight.push_back({acc, std::move(sums), scale});
  }
  /// Waits for the product into \p storage (and every older one).
  void finish(Value *storage);
  void finishAll() {
    while (!inFlight.empty())
      finish(inFlight.back().acc.storage);
  }
  /// The accumulators of \p acc, or poison where a product starts them.
  SmallVector<Value *, 128> accumulators(const Tile &acc, bool accumulate);

  WgmmaBackwardLayout layout;
  /// This thread's warpgroup, its first key (S, dK, dV rows: the base
  /// class's warp row), its first dQ row and column (null: column 0).
  Value *group, *keyRow0, *queryRow0, *gradCol0 = nullptr;
  unsigned queryTiles = 0, keyTiles = 0, rowVecs = 0;
  /// Row vectors written since the last barrier.
  bool rowsUnpublished = false;
  SmallVector<InFlight, 4> inFlight;
  /// Q's storage (its first buffer), and for Q and dO the buffer their
  /// latest load() took (an i32 in registers, 0 or 1), once prefetched.
  Value *queryStorage = nullptr;
  DenseMap<Value *, Value *> bufferIndex;
  /// Prefetched tiles loaded but not yet waited for.
  SmallPtrSet<Value *, 2> awaiting;
  /// Row vector storage -> the buffer its latest loadRows() took (i32 in
  /// registers), once prefetched.
  DenseMap<Value *, Value *> rowBuffer;
  /// Rows prefetched into registers, stored into the other buffer at the
  /// next product's wait (the loads have landed by then).
  struct PendingRow {
    RowVec rows;
    Value *value;
  };
  SmallVector<PendingRow, 2> pendingRows;
  void storePendingRows();
  /// \p r's current buffer, or the other one (\p other).
  Value *rowAddress(const RowVec &r, bool other = false);
  /// The tile the fragments were made from (null: none), and where.
  Value *fragmentsOf = nullptr;
  BasicBlock *fragmentsBlock = nullptr;
  SmallVector<SmallVector<Value *, 4>, 16> fragments;
};
} // namespace

NvptxWgmmaBackwardTileOps::NvptxWgmmaBackwardTileOps(IRBuilderBase &b,
                                                     GpuTargetInfo &target)
    : NvptxFragmentTileOps(b, target, /*mTiles=*/1,
                           WgmmaBackwardLayout(target.kernelSpec()).bytes()),
      layout(target.kernelSpec()) {
  tensorCoresReadShared = true;
  storesWholeBlocks = true;
  auto *global = cast<GlobalVariable>(smem);
  global->setAlignment(std::max(global->getAlign().valueOrOne(),
                                Align(WgmmaLayout::kTileAlignment)));
  Value *warp = b.CreateLShr(target.threadId(b), b.getInt32(5));
  group = b.CreateLShr(warp, b.getInt32(2), "group");
  keyRow0 = warpRow0;
  Value *rowGroup = b.CreateURem(group, b.getInt32(layout.dqRowGroups));
  queryRow0 = b.CreateAdd(
      b.CreateMul(rowGroup, b.getInt32(WgmmaBackwardLayout::kKeysPerGroup)),
      b.CreateMul(b.CreateAnd(warp, b.getInt32(3)), b.getInt32(16)),
      "query.row0");
  if (layout.dqColGroups > 1)
    gradCol0 = b.CreateMul(b.CreateUDiv(group, b.getInt32(layout.dqRowGroups)),
                           b.getInt32(spec.d / layout.dqColGroups), "dq.col0");
}

// The recipe makes Q before dO and K^T before V^T (makeGradTiles), and the
// LSE before D.
Tile NvptxWgmmaBackwardTileOps::makeTile(TileRole role, unsigned rows,
                                         unsigned cols, const Twine &name) {
  auto shared = [&](const SharedTile &place) {
    return Tile{
        role, rows, cols,
        b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, place.offset)};
  };
  auto registers = [&](unsigned count) {
    return Tile{role, rows, cols,
                entryAlloca(b, b.getFloatTy(), name, 4, count)};
  };
  switch (role) {
  case TileRole::Query: {
    assert(queryTiles < 2 && "Q and dO");
    Tile tile = shared(queryTiles++ ? layout.dO : layout.query);
    if (queryTiles == 1)
      queryStorage = tile.storage;
    return tile;
  }
  case TileRole::KeyT:
    assert(keyTiles < 2 && "K^T and V^T");
    return shared(keyTiles++ ? layout.values : layout.keys);
  case TileRole::Scores: // transposed: N = rows (an unused dtanh may be 16)
    return registers(rows / 2);
  case TileRole::KeyGrad:
    return registers(cols / 2);
  case TileRole::Output:
    return registers(cols / layout.dqColGroups / 2);
  default:
    llvm_unreachable("QueryRows, Keys and ScoresT are views");
  }
}

RowVec NvptxWgmmaBackwardTileOps::makeRowVec(unsigned rows, const Twine &) {
  assert(rowVecs < 2 && "the LSE and D");
  const SharedTile &place = rowVecs++ ? layout.dsum : layout.lse;
  return {rows,
          b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, place.offset)};
}

Tile NvptxWgmmaBackwardTileOps::accumulator(const Tile &t) const {
  switch (t.role) {
  case TileRole::Scores:
  case TileRole::ScoresT:
    return {TileRole::Output, spec.bn,
            t.role == TileRole::Scores ? t.rows : t.cols, t.storage};
  case TileRole::KeyGrad:
    return {TileRole::Output, t.rows, t.cols, t.storage};
  case TileRole::Output:
    return {TileRole::Output, t.rows, t.cols / layout.dqColGroups, t.storage};
  default:
    llvm_unreachable("not a register tile");
  }
}

Value *NvptxWgmmaBackwardTileOps::chunkAddress(const Tile &tile, Value *key,
                                               Value *col) {
  bool keysT = tile.role == TileRole::KeyT; // stored as K (V) rows
  unsigned rows = keysT ? tile.cols : tile.rows;
  unsigned width = keysT ? tile.rows : tile.cols;
  return b.CreateInBoundsGEP(
      b.getInt8Ty(), tile.storage,
      swizzledOffset(b, key, col, rows, WgmmaBackwardLayout::slabBytes(width),
                     dtypeBytes(spec.dtype)));
}

// Loads rewrite what the products still running read (Q and dO for dK and
// dV): those finish first. A prefetched tile's load takes the buffer its
// prefetch filled.
void NvptxWgmmaBackwardTileOps::load(Tile &tile, const GlobalRows &src,
                                     Value *valid, Value *scale) {
  assert((tile.role == TileRole::Query || tile.role == TileRole::KeyT) &&
         "bwd_dq_dk_dv loads Q, dO, K and V");
  storePendingRows();
  finishAll();
  Value *index = bufferIndex.lookup(tile.storage);
  if (!index)
    return NvptxFragmentTileOps::load(tile, src, valid, scale);
  b.CreateStore(b.CreateXor(b.CreateLoad(b.getInt32Ty(), index), b.getInt32(1)),
                index);
  deferScale(tile, scale);
  awaiting.insert(tile.storage);
}

// The prefetch goes into the buffer the current step does not read. The
// last step to read it (two loads ago) finished its products at the last
// load(), and every thread has passed a barrier since (the acquire that
// follows each load): no thread reads it any more.
void NvptxWgmmaBackwardTileOps::prefetch(Tile &tile, const GlobalRows &src,
                                         Value *valid) {
  assert(tile.role == TileRole::Query && "prefetches of Q and dO");
  Value *&index = bufferIndex[tile.storage];
  if (!index) {
    index = entryAlloca(b, b.getInt32Ty(), "buffer");
    b.CreateStore(b.getInt32(0), index);
  }
  Value *other =
      b.CreateXor(b.CreateLoad(b.getInt32Ty(), index), b.getInt32(1));
  Tile target = tile;
  target.storage = bufferAddress(tile, other);
  NvptxFragmentTileOps::load(target, src, valid, nullptr);
}

// Each step's prefetched Q and dO are its only copies in flight when it
// first reads either (the next step's are issued after): one wait for both.
void NvptxWgmmaBackwardTileOps::acquire(const Tile &tile) {
  storePendingRows();
  if (awaiting.count(tile.storage)) {
    b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(0)});
    b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
    barrier();
    awaiting.clear();
    rowsUnpublished = false;
    return;
  }
  if (waitFor(tile))
    rowsUnpublished = false;
  markRead(tile);
}

Value *NvptxWgmmaBackwardTileOps::currentAddress(const Tile &tile) {
  Value *index = bufferIndex.lookup(tile.storage);
  if (!index)
    return tile.storage;
  return bufferAddress(tile, b.CreateLoad(b.getInt32Ty(), index));
}

// Thread r holds row r of each vector: it loads it (or takes the buffer
// its prefetch filled), maps it and (after the next barrier) every thread
// reads it.
void NvptxWgmmaBackwardTileOps::loadRows(RowVec &r, const GlobalRows &src,
                                         Value *valid, float fill) {
  storePendingRows();
  if (Value *index = rowBuffer.lookup(r.storage)) {
    b.CreateStore(
        b.CreateXor(b.CreateLoad(b.getInt32Ty(), index), b.getInt32(1)), index);
    rowsUnpublished = true;
    return;
  }
  barrierIfRead(rowTile(r));
  Value *row = target.threadId(b);
  emitIf(b, b.CreateICmpULT(row, b.getInt32(r.rows)), "row", [&] {
    b.CreateStore(loadRow(src, row, valid, fill),
                  b.CreateInBoundsGEP(b.getFloatTy(), r.storage, row));
  });
  rowsUnpublished = true;
}

// Every thread loads (rows past the vector's repeat its last); the stores
// wait for the next product's wait, so that the loads' latency passes
// under the product rather than stalling the prefetch. With bm = 128 the
// two values held through the product spilled (12-56 bytes at d = 64):
// there loadRows loads them.
void NvptxWgmmaBackwardTileOps::prefetchRows(RowVec &r, const GlobalRows &src,
                                             Value *valid, float fill) {
  if (spec.bm > WgmmaBackwardLayout::kKeysPerGroup)
    return;
  Value *&index = rowBuffer[r.storage];
  if (!index) {
    index = entryAlloca(b, b.getInt32Ty(), "row.buffer");
    b.CreateStore(b.getInt32(0), index);
  }
  Value *tid = target.threadId(b);
  Value *row = b.CreateSelect(b.CreateICmpULT(tid, b.getInt32(r.rows)), tid,
                              b.getInt32(r.rows - 1));
  pendingRows.push_back({r, loadRow(src, row, valid, fill)});
}

// The other buffer was last read before the barrier that follows the
// current step's loads.
void NvptxWgmmaBackwardTileOps::storePendingRows() {
  Value *row = target.threadId(b);
  for (PendingRow &pending : pendingRows)
    emitIf(b, b.CreateICmpULT(row, b.getInt32(pending.rows.rows)), "row.next",
           [&] {
             Value *other = rowAddress(pending.rows, /*other=*/true);
             b.CreateStore(pending.value,
                           b.CreateInBoundsGEP(b.getFloatTy(), other, row));
           });
  pendingRows.clear();
}

Value *NvptxWgmmaBackwardTileOps::rowAddress(const RowVec &r, bool other) {
  Value *index = rowBuffer.lookup(r.storage);
  if (!index)
    return r.storage;
  Value *buffer = b.CreateLoad(b.getInt32Ty(), index);
  if (other)
    buffer = b.CreateXor(buffer, b.getInt32(1));
  return b.CreateInBoundsGEP(b.getInt8Ty(), r.storage,
                             b.CreateMul(buffer, b.getInt32(4 * r.rows)));
}

Value *NvptxWgmmaBackwardTileOps::loadRow(const GlobalRows &src, Value *row,
                                          Value *valid, float fill) {
  Value *inside = b.CreateICmpSLT(row, valid);
  Value *safeRow = b.CreateSelect(inside, row, b.getInt32(0));
  Value *x = b.CreateLoad(
      b.getFloatTy(), src.rowPointer(b, b.CreateZExt(safeRow, b.getInt64Ty())));
  return b.CreateSelect(inside, x, f32(fill));
}

void NvptxWgmmaBackwardTileOps::fill(RowVec &r, float value) {
  barrierIfRead(rowTile(r));
  Value *row = target.threadId(b);
  emitIf(b, b.CreateICmpULT(row, b.getInt32(r.rows)), "row", [&] {
    b.CreateStore(f32(value),
                  b.CreateInBoundsGEP(b.getFloatTy(), rowAddress(r), row));
  });
  rowsUnpublished = true;
}

void NvptxWgmmaBackwardTileOps::mapRows(RowVec &out,
                                        ArrayRef<const RowVec *> in, RowFn fn) {
  storePendingRows();
  barrierIfRead(rowTile(out));
  Value *row = target.threadId(b);
  emitIf(b, b.CreateICmpULT(row, b.getInt32(out.rows)), "row", [&] {
    SmallVector<Value *, 4> values;
    for (const RowVec *r : in)
      values.push_back(b.CreateLoad(
          b.getFloatTy(),
          b.CreateInBoundsGEP(b.getFloatTy(), rowAddress(*r), row)));
    b.CreateStore(fn(b, values),
                  b.CreateInBoundsGEP(b.getFloatTy(), rowAddress(out), row));
  });
  rowsUnpublished = true;
}

// The callbacks take (query, key): the accumulator's column and row.
void NvptxWgmmaBackwardTileOps::map(Tile &tile, ElementFn fn) {
  assert(tile.role == TileRole::Scores && "map of S, P, dP or dS");
  forget(tile.storage);
  Tile acc = accumulator(tile);
  auto swapped = [&](IRBuilderBase &b, Value *key, Value *query, Value *x) {
    return fn(b, query, key, x);
  };
  withOrigin(tile, [&] { NvptxFragmentTileOps::map(acc, swapped); });
}

// Lane (g, t) holds queries 8j + 2t and 8j + 2t + 1 of every n-tile j: one
// 8-byte shared load of the row vector for each.
void NvptxWgmmaBackwardTileOps::mapWithRow(Tile &tile, const RowVec &row,
                                           WithRowFn fn) {
  assert(tile.role == TileRole::Scores && "mapWithRow of S or dP");
  forget(tile.storage);
  if (rowsUnpublished)
    barrier();
  rowsUnpublished = false;
  markRead(rowTile(row));
  Tile acc = accumulator(tile);
  auto *pairType = FixedVectorType::get(b.getFloatTy(), 2);
  for (unsigned j = 0; j < acc.cols / 8; ++j) {
    Value *at =
        b.CreateInBoundsGEP(b.getFloatTy(), rowAddress(row), colOf(j, 0));
    Value *pair = b.CreateAlignedLoad(pairType, at, Align(8));
    for (unsigned e = 0; e < 4; ++e) {
      Value *p = slot(acc.storage, accIndex(acc, 0, j, e));
      Value *r = b.CreateExtractElement(pair, uint64_t(e & 1));
      b.CreateStore(fn(b, b.CreateLoad(b.getFloatTy(), p), r), p);
    }
  }
}

void NvptxWgmmaBackwardTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  assert(t.role == other.role && t.rows == other.rows && t.cols == other.cols &&
         "zip same shapes");
  forget(t.storage);
  Tile acc = accumulator(t);
  for (unsigned e = 0; e < accCount(acc); ++e) {
    Value *p = slot(t.storage, e);
    Value *x = b.CreateLoad(b.getFloatTy(), p);
    Value *y = b.CreateLoad(b.getFloatTy(), slot(other.storage, e));
    b.CreateStore(fn(b, x, y), p);
  }
}

Tile NvptxWgmmaBackwardTileOps::transposed(const Tile &t) {
  if (t.role == TileRole::KeyT) // K's rows in shared memory are K^T's columns
    return {TileRole::Keys, t.cols, t.rows, t.storage};
  assert(t.role == TileRole::Scores && "transposed() of S^T or K^T");
  return {TileRole::ScoresT, t.cols, t.rows, t.storage};
}

SmallVector<Value *, 128>
NvptxWgmmaBackwardTileOps::accumulators(const Tile &acc, bool accumulate) {
  SmallVector<Value *, 128> sums;
  for (unsigned e = 0; e < accCount(acc); ++e)
    sums.push_back(accumulate ? static_cast<Value *>(b.CreateLoad(
                                    b.getFloatTy(), slot(acc.storage, e)))
                              : PoisonValue::get(b.getFloatTy()));
  return sums;
}

// S^T and dP^T are read at once; dV and dK run on until something rewrites
// their operands; dQ's adds follow at once.
void NvptxWgmmaBackwardTileOps::multiply(Tile &acc, const Tile &a,
                                         const Tile &bt, bool accumulate) {
  forget(acc.storage);
  Tile view = accumulator(acc);
  if (acc.role == TileRole::Scores) {
    startProduct(acc, a, bt, accumulate);
    return finish(acc.storage);
  }
  if (acc.role == TileRole::KeyGrad) { // a: P^T (dS^T), bt: dO (Q) rows
    assert(a.role == TileRole::ScoresT && "dV and dK read P^T or dS^T");
    acquire(bt);
    return issue(view, scoresTTimesRows(a, bt, accumulators(view, true)),
                 nullptr);
  }
  assert(acc.role == TileRole::Output && a.role == TileRole::Scores &&
         bt.role == TileRole::Keys && "dQ = dS K");
  writeGrads(a);
  acquire(bt);
  issue(view, gradsTimesKeys(bt, accumulators(view, accumulate), accumulate),
        nullptr);
  finish(acc.storage);
}

// S^T = K Q^T or dP^T = V dO^T (a: Q or dO, bt: K^T or V^T); the other
// products run at once (multiply).
void NvptxWgmmaBackwardTileOps::startProduct(Tile &acc, const Tile &a,
                                             const Tile &bt, bool accumulate) {
  if (acc.role != TileRole::Scores)
    return multiply(acc, a, bt, accumulate);
  assert(!accumulate && "S and dP start at zero");
  storePendingRows();
  forget(acc.storage);
  acquire(bt);
  acquire(a);
  Tile view = accumulator(acc);
  issue(view, keysTimesRows(bt, a, view.cols), deferredScale(a));
}

SmallVector<Value *, 128>
NvptxWgmmaBackwardTileOps::keysTimesRows(const Tile &keys, const Tile &rows,
                                         unsigned n) {
  WgmmaOperand kMajor;
  kMajor.swizzleBytes = WgmmaBackwardLayout::slabBytes(rows.cols);
  Value *groupRows =
      b.CreateMul(group, b.getInt32(WgmmaBackwardLayout::kKeysPerGroup *
                                    kMajor.swizzleBytes));
  Value *keysBase = wgmmaDescriptorBase(b, keys.storage, groupRows, kMajor);
  Value *rowsBase =
      wgmmaDescriptorBase(b, currentAddress(rows), nullptr, kMajor);
  return emitKMajorProducts(b, spec.dtype, kMajor, keysBase, spec.bn, rowsBase,
                            rows.rows, rows.cols / 16, n / 2);
}

// Step kk covers queries 16kk..: two swizzle atoms of the rows, whose
// slabs lie bm * (slab row bytes) apart along N.
SmallVector<Value *, 128> NvptxWgmmaBackwardTileOps::scoresTTimesRows(
    const Tile &scoresT, const Tile &rows, ArrayRef<Value *> acc) {
  // Every A fragment is built before the fence: registers wgmma reads must
  // be written before it.
  ArrayRef<SmallVector<Value *, 4>> fragments = packedFragments(scoresT);
  unsigned steps = fragments.size();
  WgmmaOperand mnMajor;
  mnMajor.swizzleBytes = WgmmaBackwardLayout::slabBytes(rows.cols);
  mnMajor.leadingBytes = rows.rows * mnMajor.swizzleBytes;
  Value *rowsBase =
      wgmmaDescriptorBase(b, currentAddress(rows), nullptr, mnMajor);
  SmallVector<Value *, 128> sums(acc);
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < steps; ++kk)
    sums = emitWgmmaRegisters(
        b, spec.dtype, spec.dtype, sums, /*accumulate=*/true, fragments[kk],
        wgmmaDescriptorAt(b, rowsBase, kk * 16 * mnMajor.swizzleBytes, mnMajor),
        /*transposeB=*/true);
  emitWgmmaCommit(b);
  return sums;
}

// dQ rows of this warpgroup from dS^T's slab of them (MN-major A), its
// columns from K's slabs of them (MN-major B); step kk covers keys 16kk..
SmallVector<Value *, 128> NvptxWgmmaBackwardTileOps::gradsTimesKeys(
    const Tile &keys, ArrayRef<Value *> acc, bool accumulate) {
  const SharedTile &grads = layout.grads;
  WgmmaOperand gradsOp, keysOp;
  gradsOp.swizzleBytes = WgmmaBackwardLayout::slabBytes(spec.bm);
  gradsOp.leadingBytes = spec.bn * gradsOp.swizzleBytes;
  keysOp.swizzleBytes = WgmmaBackwardLayout::slabBytes(spec.d);
  keysOp.leadingBytes = spec.bn * keysOp.swizzleBytes;
  // Byte offsets of the warpgroup's first query and column: whole slabs.
  auto slabStart = [&](Value *first, const WgmmaOperand &op) -> Value * {
    if (!first)
      return nullptr;
    Value *slab = b.CreateUDiv(first, b.getInt32(op.swizzleBytes / 2));
    return b.CreateMul(slab, b.getInt32(op.leadingBytes));
  };
  Value *firstQuery =
      b.CreateMul(b.CreateURem(group, b.getInt32(layout.dqRowGroups)),
                  b.getInt32(WgmmaBackwardLayout::kKeysPerGroup));
  Value *gradsBase = wgmmaDescriptorBase(
      b, b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, grads.offset),
      slabStart(firstQuery, gradsOp), gradsOp);
  Value *keysBase =
      wgmmaDescriptorBase(b, keys.storage, slabStart(gradCol0, keysOp), keysOp);
  SmallVector<Value *, 128> sums(acc);
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < spec.bn / 16; ++kk)
    sums = emitWgmmaShared(
        b, spec.dtype, sums, accumulate || kk > 0,
        wgmmaDescriptorAt(b, gradsBase, kk * 16 * gradsOp.swizzleBytes,
                          gradsOp),
        wgmmaDescriptorAt(b, keysBase, kk * 16 * keysOp.swizzleBytes, keysOp),
        /*transposeB=*/true, /*transposeA=*/true);
  emitWgmmaCommit(b);
  return sums;
}

ArrayRef<SmallVector<Value *, 4>>
NvptxWgmmaBackwardTileOps::packedFragments(const Tile &scores) {
  if (fragmentsOf == scores.storage && fragmentsBlock == b.GetInsertBlock())
    return fragments;
  Tile acc = accumulator(scores);
  fragments.clear();
  for (unsigned kk = 0; kk < acc.cols / 16; ++kk)
    fragments.push_back(probabilityFragments(acc, 0, kk));
  fragmentsOf = scores.storage;
  fragmentsBlock = b.GetInsertBlock();
  return fragments;
}

// Lane (g, t) holds keys g and g + 8 of its warp's 16 and queries 2t and
// 2t + 1 of each 8, packed as the A fragments: word r of step kk holds key
// g + 8 (r & 1) at queries 16kk + 8 (r >> 1) + 2t. A 4-byte store each, at
// (key, query) of the [bn][bm] tile; the products read it through the
// async proxy.
void NvptxWgmmaBackwardTileOps::writeGrads(const Tile &dS) {
  Tile grads{
      TileRole::ScoresT, spec.bn, spec.bm,
      b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, layout.grads.offset)};
  barrierIfRead(grads);
  ArrayRef<SmallVector<Value *, 4>> words = packedFragments(dS);
  unsigned slabBytes = WgmmaBackwardLayout::slabBytes(spec.bm);
  withOrigin(dS, [&] {
    for (unsigned kk = 0; kk < words.size(); ++kk)
      for (unsigned r = 0; r < 4; ++r) {
        Value *key = rowOf(0, 2 * (r & 1));
        Value *query = colOf(2 * kk + (r >> 1), 0);
        Value *offset = swizzledOffset(b, key, query, spec.bn, slabBytes,
                                       dtypeBytes(spec.dtype));
        b.CreateAlignedStore(
            words[kk][r],
            b.CreateInBoundsGEP(b.getInt8Ty(), grads.storage, offset),
            Align(4));
      }
  });
  b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
  barrier();
  markRead(grads);
}

// wait_group N lets the N youngest groups run on: those issued after it.
void NvptxWgmmaBackwardTileOps::finish(Value *storage) {
  auto it = llvm::find_if(
      inFlight, [&](const InFlight &p) { return p.acc.storage == storage; });
  assert(it != inFlight.end() && "finish without a product");
  storePendingRows();
  unsigned younger = static_cast<unsigned>(inFlight.end() - it - 1);
  SmallVector<Value *, 128> sums = emitWgmmaWait(b, younger, it->sums);
  forget(storage);
  for (unsigned e = 0; e < sums.size(); ++e) {
    Value *v = it->scale ? b.CreateFMul(sums[e], it->scale) : sums[e];
    b.CreateStore(v, slot(it->acc.storage, e));
  }
  // Older products have completed too: the same wait, already satisfied,
  // defines their accumulators.
  SmallVector<InFlight, 4> older(inFlight.begin(), it);
  inFlight.erase(inFlight.begin(), it + 1);
  for (InFlight &p : older) {
    SmallVector<Value *, 128> done = emitWgmmaWait(b, younger, p.sums);
    for (unsigned e = 0; e < done.size(); ++e)
      b.CreateStore(done[e], slot(p.acc.storage, e));
  }
}

// dK and dV are stored once the steps are done. The last step's prefetch
// (of no rows: it zero-fills a buffer) is still in flight: it completes
// here, before the block can end with a copy into its shared memory.
void NvptxWgmmaBackwardTileOps::store(const Tile &tile, const GlobalRows &dst,
                                      Value *valid) {
  finishAll();
  NvptxFragmentTileOps::drain();
  Tile acc = accumulator(tile);
  withOrigin(tile, [&] { NvptxFragmentTileOps::store(acc, dst, valid); });
}

void NvptxWgmmaBackwardTileOps::storeAdd(const Tile &t, const GlobalRows &dst,
                                         Value *valid) {
  Tile acc = accumulator(t);
  // red.global.add.v2.f32 is PTX 8.1 (sm_90a's oldest is 8.0).
  bool pairAdds = target.options.ptxVersion >= 81;
  withOrigin(t, [&] { addToGlobal(acc, dst, valid, pairAdds); });
}
std::unique_ptr<TileOps>
fmhajit::createNvptxWgmmaBackwardTileOps(IRBuilderBase &b,
                                         GpuTargetInfo &target) {
  return std::make_unique<NvptxWgmmaBackwardTileOps>(b, target);
}
