//===- NvptxFragmentCopies.cpp - cp.async copies into shared tiles --------===//
//
// NvptxFragmentTileOps's loads: each 16-byte chunk of a tile copied from
// global memory by cp.async (rows found through GlobalRows, so paged and
// packed rows copy like contiguous ones), committed as a group per tile and
// waited for at the tile's first use.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxFragmentTileOps.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

void NvptxFragmentTileOps::drain() {
  if (!pending.empty())
    b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(0)});
  pending.clear();
}

void NvptxFragmentTileOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                                Value *scale) {
  deferScale(tile, scale);
  unsigned keys = tile.role == TileRole::KeyT ? tile.cols : tile.rows;
  unsigned width = tile.role == TileRole::KeyT ? tile.rows : tile.cols;
  if (readSinceBarrier.count(tile.storage))
    barrier(); // a warp may still be reading the previous contents
  unsigned chunks = keys * (width / chunkElements()),
           threads = target.numThreads();
  if (src.rowsLookedUp && chunks % threads == 0 &&
      chunks / threads <= kMaxLookupsAhead) {
    copyLookedUpRows(tile, src, valid, chunks / threads);
    return;
  }
  copyRows(tile, src, valid, target.threadId(b), threads, nullptr, keys);
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {});
  pending.push_back(tile.storage);
}

// Chunk c of a tile whose rows hold chunksPerRow 16-byte chunks: its row
// (key) and first element (col).
std::pair<Value *, Value *>
NvptxFragmentTileOps::chunkOf(Value *c, unsigned chunksPerRow) {
  return {b.CreateUDiv(c, b.getInt32(chunksPerRow)),
          b.CreateMul(b.CreateURem(c, b.getInt32(chunksPerRow)),
                      b.getInt32(chunkElements()))};
}

// Row key's address, or row 0's past \p valid (whose copy reads nothing):
// per row, so paged K/V rows (and packed GQA rows) copy like contiguous ones.
Value *NvptxFragmentTileOps::rowOrFirst(const GlobalRows &src, Value *key,
                                        Value *valid) {
  Value *safeKey =
      b.CreateSelect(b.CreateICmpSLT(key, valid), key, b.getInt32(0));
  return src.rowPointer(b, b.CreateZExt(safeKey, b.getInt64Ty()));
}

// cp.async.cg of 16 bytes from rowPtr + col, or of zeros from row valid on.
void NvptxFragmentTileOps::copyChunk(const Tile &tile, Value *key, Value *col,
                                     Value *rowPtr, Value *valid) {
  Type *globalPtr = PointerType::get(b.getContext(), 1);
  Value *from = b.CreateAddrSpaceCast(
      b.CreateInBoundsGEP(elem, rowPtr, b.CreateZExt(col, b.getInt64Ty())),
      globalPtr);
  Value *bytes = b.CreateSelect(b.CreateICmpSLT(key, valid), b.getInt32(16),
                                b.getInt32(0)); // 0: zero-fill
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {},
                    {chunkAddress(tile, key, col), from, bytes});
}

void NvptxFragmentTileOps::copyRows(const Tile &tile, const GlobalRows &src,
                                    Value *valid, Value *thread,
                                    unsigned threads, Value *firstKey,
                                    unsigned keys) {
  unsigned width = tile.role == TileRole::KeyT ? tile.rows : tile.cols;
  unsigned chunksPerRow = width / chunkElements();
  emitFor(b, thread, b.getInt32(keys * chunksPerRow), b.getInt32(threads), "cp",
          [&](Value *c) {
            auto [key, col] = chunkOf(c, chunksPerRow);
            if (firstKey)
              key = b.CreateAdd(firstKey, key);
            copyChunk(tile, key, col, rowOrFirst(src, key, valid), valid);
          });
}

// Paged rows: each chunk's row comes from a block-table load. In the copy
// loop each copy waits for its own lookup, so a thread's lookups run one
// after another (16 a tile for bn = d = 128); here all of them are issued
// first (the recipe has prefetched their lines), then every copy:
//   for i < n: %row.i = rowPointer(key(tid + i * threads))   ; table loads
//   for i < n: cp.async.cg [tile chunk], [%row.i + col], 16 or 0 bytes
void NvptxFragmentTileOps::copyLookedUpRows(Tile &tile, const GlobalRows &src,
                                            Value *valid, unsigned n) {
  unsigned width = tile.role == TileRole::KeyT ? tile.rows : tile.cols;
  unsigned chunksPerRow = width / chunkElements();
  Value *tid = target.threadId(b);
  SmallVector<Value *, kMaxLookupsAhead> key, col, rowPtr;
  for (unsigned i = 0; i < n; ++i) {
    auto [k, c] = chunkOf(b.CreateAdd(tid, b.getInt32(i * target.numThreads())),
                          chunksPerRow);
    key.push_back(k);
    col.push_back(c);
    rowPtr.push_back(rowOrFirst(src, k, valid));
  }
  for (unsigned i = 0; i < n; ++i)
    copyChunk(tile, key[i], col[i], rowPtr[i], valid);
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {});
  pending.push_back(tile.storage);
}

bool NvptxFragmentTileOps::waitFor(const Tile &tile) {
  auto it = llvm::find(pending, tile.storage);
  if (it == pending.end())
    return false;
  unsigned younger = static_cast<unsigned>(pending.end() - it - 1);
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(younger)});
  pending.erase(pending.begin(), it + 1);
  // wgmma reads shared memory through the async proxy: each thread's copies
  // must be fenced into it before the barrier publishes them.
  if (tensorCoresReadShared)
    b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
  barrier();
  return true;
}

// The column pairs of \p src's rows that this lane's accumulators of
// \p tile hold (rowOf, colOf), loaded one pair at a time: a row past
// \p valid reads row 0 (valid in every item) and \p inside says so.
void NvptxFragmentTileOps::forEachLanePair(const Tile &tile,
                                           const GlobalRows &src, Value *valid,
                                           LanePairFn fn) {
  Type *srcElem = elementType(b.getContext(), src.dtype);
  auto *pairType = FixedVectorType::get(srcElem, 2);
  Align align(2 * srcElem->getPrimitiveSizeInBits() / 8);
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      Value *inside = b.CreateICmpSLT(row, valid);
      Value *rowPtr = src.rowPointerOrFirst(b, row, inside);
      for (unsigned j = 0; j < tile.cols / 8; ++j) {
        Value *at = b.CreateInBoundsGEP(
            srcElem, rowPtr, b.CreateZExt(colOf(j, 0), b.getInt64Ty()));
        Value *pair = b.CreateAlignedLoad(pairType, at, align);
        if (!srcElem->isFloatTy())
          pair = b.CreateFPExt(pair, FixedVectorType::get(b.getFloatTy(), 2));
        fn(i, j, half, inside, pair);
      }
    }
}

void NvptxFragmentTileOps::loadAccumulator(Tile &tile, const GlobalRows &src,
                                           Value *valid, Value *scale) {
  forEachLanePair(
      tile, src, valid,
      [&](unsigned i, unsigned j, unsigned half, Value *inside, Value *pair) {
        for (unsigned e = 0; e < 2; ++e) {
          Value *x = b.CreateExtractElement(pair, uint64_t(e));
          if (scale)
            x = b.CreateFMul(x, scale);
          b.CreateStore(b.CreateSelect(inside, x, f32(0)),
                        slot(tile.storage, accIndex(tile, i, j, 2 * half + e)));
        }
      });
}

void NvptxFragmentTileOps::loadRows(RowVec &r, const GlobalRows &src,
                                    Value *valid, float fill) {
  for (unsigned s = 0; s < mTiles * 2; ++s) {
    Value *row = rowOf(s / 2, 2 * (s % 2));
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *x =
        b.CreateLoad(b.getFloatTy(), src.rowPointerOrFirst(b, row, inside));
    b.CreateStore(b.CreateSelect(inside, x, f32(fill)), slot(r.storage, s));
  }
}

// Each pair is added as it lands: loaded into a scratch tile first and then
// added (TileOps' form), the 64 loaded registers a thread stayed live beside
// O's, which cost the 160-register fp8 consumers a spill.
void NvptxFragmentTileOps::addScaledRows(Tile &tile, const GlobalRows &src,
                                         Value *valid, const RowVec &factor) {
  forEachLanePair(
      tile, src, valid,
      [&](unsigned i, unsigned j, unsigned half, Value *inside, Value *pair) {
        Value *w = b.CreateSelect(
            inside,
            b.CreateLoad(b.getFloatTy(), slot(factor.storage, i * 2 + half)),
            f32(0));
        for (unsigned e = 0; e < 2; ++e) {
          Value *p = slot(tile.storage, accIndex(tile, i, j, 2 * half + e));
          Value *x = b.CreateExtractElement(pair, uint64_t(e));
          b.CreateStore(
              b.CreateFAdd(b.CreateLoad(b.getFloatTy(), p), b.CreateFMul(x, w)),
              p);
        }
      });
}
