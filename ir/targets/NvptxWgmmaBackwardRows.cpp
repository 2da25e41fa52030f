//===- NvptxWgmmaBackwardRows.cpp - The wgmma backward's row vectors ------===//
//
// The LSE and D of a query tile, one float a query row, sit in shared memory
// (two buffers each where prefetched): thread r writes row r, and every lane
// reads the queries of its accumulator columns (NvptxWgmmaBackwardTileOps.h).
//
//===----------------------------------------------------------------------===//
#include "ir/Loops.h"
#include "ir/targets/NvptxWgmmaBackwardTileOps.h"

using namespace fmhajit;
using namespace llvm;

RowVec NvptxWgmmaBackwardTileOps::makeRowVec(unsigned rows, const Twine &) {
  assert(rowVecs < 2 && "the LSE and D");
  const SharedTile &place = rowVecs++ ? layout.dsum : layout.lse;
  return {rows,
          b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, place.offset)};
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
  Value *x =
      b.CreateLoad(b.getFloatTy(), src.rowPointerOrFirst(b, row, inside));
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
