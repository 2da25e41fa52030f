//===- NvptxWgmmaKeyRowsTileOps.cpp - wgmma with keys as the rows ---------===//
//
// A decode tile packs one GQA group's few query rows (8 of an 8:1 group's
// token) into the 64 rows a wgmma computes, so its products do eight times
// the work they need. With keys as the rows (keysAsRows: pipeline=wgmma,
// bm under 64) one warpgroup computes the transposes instead, the bm query
// rows as wgmma's N:
//   S^T = K Q^T    A: 64 keys of the K slot a product, K-major; B: Q, K-major
//   O^T = V^T P^T  A: 64 columns of the V slot a product, read MN-major (the
//                  transpose bit); B: P from shared memory, K-major
// Lane (g, t) of warp w then holds keys (or columns of O) 64i + 16w + g and
// + 8 of each product i, and queries 8j + 2t and + 1: a query's values are
// spread over the 8 lanes of its t and the 4 warps. So a row's max or sum
// ends with three shuffles and an exchange through shared memory, where
// each warp leaves its part and, after the warpgroup's barrier, every lane
// reads the four parts of its queries (one 16-byte load each). The
// exchange alternates between two buffers, chosen at run time: every
// exchange passes a barrier, so a buffer is rewritten only after every
// thread has read it. P is written as bf16/fp16 into [bm][bn] slabs, in
// the one of two buffers the last tile's P V does not read, right after
// its exp2s; fenced into the async proxy, it is published by the row sum's
// barrier, so a key tile takes two barriers. Elementwise words hand their
// callbacks (query, key) as the other tiles do, so the recipe does not
// change.
//
// Everything else (the ring, the loads, Q's rows, the products' issue,
// waits and releases) is NvptxWgmmaTileOps'.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxWgmma.h"
#include "ir/targets/NvptxWgmmaTileOps.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxWgmmaKeyRowsTileOps : public NvptxWgmmaTileOps {
public:
  NvptxWgmmaKeyRowsTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                           const WgmmaLayout &layout)
      : NvptxWgmmaTileOps(b, target, layout) {
    skipsUnitRescale = false;
    votesOnRowParts = false;
    Value *warp = b.CreateLShr(target.threadId(b), b.getInt32(5));
    warpInGroup = b.CreateAnd(warp, b.getInt32(3), "warp.in.group");
    keyRow0 = b.CreateMul(warpInGroup, b.getInt32(16), "key.row0");
    buffer = entryAlloca(b, b.getInt32Ty(), "exchange.buffer");
    b.CreateStore(b.getInt32(0), buffer);
    nextProbabilities = entryAlloca(b, b.getInt32Ty(), "p.next");
    b.CreateStore(b.getInt32(0), nextProbabilities);
    probabilities = entryAlloca(b, b.getInt32Ty(), "p.current");
    b.CreateStore(b.getInt32(0), probabilities);
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override;
  void map(Tile &tile, ElementFn fn) override;
  void mapWithRow(Tile &tile, const RowVec &row, WithRowFn fn) override;
  /// The softmax's P, then its row sums: P goes into the next buffer
  /// before the sums' exchange, whose barrier publishes both.
  void mapWithRowThenSum(Tile &tile, const RowVec &row, WithRowFn fn,
                         RowVec &sum) override;
  void scaleRows(Tile &tile, const RowVec &factor) override {
    TileOps::scaleRows(tile, factor);
  }
  void finishProductScaled(Tile &acc, const RowVec &factor) override {
    finishProduct(acc);
    scaleRows(acc, factor);
  }
  void reduceRows(const Tile &tile, RowVec &out, bool isMax) override;
  void loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                float fill) override;
  void store(const Tile &tile, const GlobalRows &dst, Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst, Value *valid) override;
  /// P for the products: the buffer mapWithRowThenSum wrote it into, or
  /// written and published here if S changed since.
  void copy(Tile &dst, const Tile &src) override;
  void addScaledRows(Tile &, const GlobalRows &, Value *,
                     const RowVec &) override {
    llvm_unreachable("keys as rows do not split tails (splitsTail)");
  }

private:
  /// No halves of a warp's rows to skip: a query's values lie in every warp.
  bool skipsDeadRows() const override { return false; }
  unsigned accCount(const Tile &tile) const override {
    return productsOf(tile) * tile.rows / 8 * 4;
  }
  /// 64-row products a register tile takes: over its keys (S) or its
  /// columns (O).
  static unsigned productsOf(const Tile &tile) {
    return tile.cols / (WgmmaLayout::kWarpsPerGroup * 16);
  }
  /// Queries 8j + 2t and + 1 of each j.
  unsigned rowSlots(unsigned rows) const override { return rows / 8 * 2; }
  /// Accumulator (product i, query block j, register e).
  static unsigned index(const Tile &tile, unsigned i, unsigned j, unsigned e) {
    return (i * (tile.rows / 8) + j) * 4 + e;
  }
  /// The row vector slot of register e of query block j.
  static unsigned rowSlot(unsigned j, unsigned e) { return 2 * j + (e & 1); }
  /// The key (S) or column (O) of register e of product i.
  Value *keyOf(unsigned i, unsigned e) {
    return b.CreateAdd(keyRow0,
                       b.CreateAdd(g, b.getInt32(64 * i + 8 * (e >> 1))));
  }
  /// The query row of register e of query block j.
  Value *queryOf(unsigned j, unsigned e) {
    return b.CreateAdd(b.CreateShl(t, 1), b.getInt32(8 * j + (e & 1)));
  }
  Value *at(const Tile &tile, unsigned i, unsigned j, unsigned e) {
    return slot(tile.storage, index(tile, i, j, e));
  }
  /// bar.sync kKeyRowsBarrier, 128: the warpgroup's warps meet.
  void meet() {
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                      {b.getInt32(kKeyRowsBarrier),
                       b.getInt32(WgmmaLayout::kWarpsPerGroup * 32)});
  }
  Value *sharedAt(unsigned offset, Value *bytes) {
    return b.CreateInBoundsGEP(
        b.getInt8Ty(),
        b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, offset), bytes);
  }

  SmallVector<Value *, 128> queryTimesKeys(const Tile &q, const Tile &kT,
                                           unsigned n) override;
  SmallVector<Value *, 128> probabilitiesTimesValues(const Tile &p,
                                                     const Tile &v,
                                                     ArrayRef<Value *> acc,
                                                     bool accumulate) override;

  /// Writes S's values as P into the next P buffer and fences them into the
  /// async proxy (a barrier must publish them).
  void writeProbabilities(const Tile &scores);
  /// The shared address of P buffer \p index (i32).
  Value *probabilitiesAt(const Tile &p, Value *index);

  Value *warpInGroup, *keyRow0;
  /// The exchange buffer the next reduction writes (0 or 1).
  Value *buffer;
  /// The P buffer the next write takes, and the one the products read.
  Value *nextProbabilities, *probabilities;
  /// The Scores tile whose P the next buffer holds, published, as emitted:
  /// cleared by any word that changes it.
  Value *writtenScores = nullptr;
};
} // namespace

Tile NvptxWgmmaKeyRowsTileOps::makeTile(TileRole role, unsigned rows,
                                        unsigned cols, const Twine &name) {
  switch (role) {
  case TileRole::Scores:
  case TileRole::Output: {
    Tile tile{role, rows, cols, nullptr};
    tile.storage = entryAlloca(b, b.getFloatTy(), name, 4, accCount(tile));
    return tile;
  }
  case TileRole::Probabilities:
    return {role, rows, cols,
            b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem,
                                         layout.probabilities.offset)};
  default:
    return NvptxWgmmaTileOps::makeTile(role, rows, cols, name);
  }
}

void NvptxWgmmaKeyRowsTileOps::map(Tile &tile, ElementFn fn) {
  if (tile.storage == writtenScores)
    writtenScores = nullptr;
  for (unsigned i = 0; i < productsOf(tile); ++i)
    for (unsigned j = 0; j < tile.rows / 8; ++j)
      for (unsigned e = 0; e < 4; ++e) {
        Value *p = at(tile, i, j, e);
        b.CreateStore(
            fn(b, queryOf(j, e), keyOf(i, e), b.CreateLoad(b.getFloatTy(), p)),
            p);
      }
}

void NvptxWgmmaKeyRowsTileOps::mapWithRow(Tile &tile, const RowVec &row,
                                          WithRowFn fn) {
  if (tile.storage == writtenScores)
    writtenScores = nullptr;
  for (unsigned j = 0; j < tile.rows / 8; ++j)
    for (unsigned c = 0; c < 2; ++c) {
      Value *r = b.CreateLoad(b.getFloatTy(), slot(row.storage, rowSlot(j, c)));
      for (unsigned i = 0; i < productsOf(tile); ++i)
        for (unsigned e = c; e < 4; e += 2) {
          Value *p = at(tile, i, j, e);
          b.CreateStore(fn(b, b.CreateLoad(b.getFloatTy(), p), r), p);
        }
    }
}

// A query's values: this lane's (two a product), then the 8 lanes of its t
// (shuffles across g), then the 4 warps (the exchange): lanes with g = 0
// leave their warp's part at [buffer][query][warp], and after the barrier
// every lane reads the four parts of each of its queries at once.
void NvptxWgmmaKeyRowsTileOps::reduceRows(const Tile &tile, RowVec &out,
                                          bool isMax) {
  unsigned slots = rowSlots(tile.rows);
  SmallVector<Value *, 16> parts;
  for (unsigned j = 0; j < tile.rows / 8; ++j)
    for (unsigned c = 0; c < 2; ++c) {
      SmallVector<Value *, 16> mine;
      for (unsigned i = 0; i < productsOf(tile); ++i)
        for (unsigned e = c; e < 4; e += 2)
          mine.push_back(b.CreateLoad(b.getFloatTy(), at(tile, i, j, e)));
      Value *v = combineTree(mine, isMax);
      for (unsigned mask : {4u, 8u, 16u}) { // the lanes of this t
        Value *other = b.CreateIntrinsic(
            Intrinsic::nvvm_shfl_sync_bfly_f32, {},
            {b.getInt32(~0u), v, b.getInt32(mask), b.getInt32(31)});
        v = combineRows(v, other, isMax);
      }
      parts.push_back(v);
    }
  const SharedTile &exchange = layout.exchange;
  Value *current = b.CreateLoad(b.getInt32Ty(), buffer);
  b.CreateStore(b.CreateXor(current, b.getInt32(1)), buffer);
  Value *bufferRow0 = b.CreateMul(current, b.getInt32(tile.rows));
  auto rowBytes = [&](Value *query) { // [buffer][query][warp]
    return b.CreateMul(b.CreateAdd(bufferRow0, query),
                       b.getInt32(WgmmaLayout::kWarpsPerGroup * 4));
  };
  emitIf(b, b.CreateICmpEQ(g, b.getInt32(0)), "leave.part", [&] {
    for (unsigned s = 0; s < slots; ++s) {
      Value *bytes =
          b.CreateAdd(rowBytes(queryOf(s / 2, s)), b.CreateShl(warpInGroup, 2));
      b.CreateStore(parts[s], sharedAt(exchange.offset, bytes));
    }
  });
  meet();
  auto *four = FixedVectorType::get(b.getFloatTy(), 4);
  for (unsigned s = 0; s < slots; ++s) {
    Value *all = b.CreateAlignedLoad(
        four, sharedAt(exchange.offset, rowBytes(queryOf(s / 2, s))),
        Align(16));
    SmallVector<Value *, 4> warps;
    for (unsigned w = 0; w < WgmmaLayout::kWarpsPerGroup; ++w)
      warps.push_back(b.CreateExtractElement(all, uint64_t(w)));
    b.CreateStore(combineTree(warps, isMax), slot(out.storage, s));
  }
}

void NvptxWgmmaKeyRowsTileOps::loadRows(RowVec &r, const GlobalRows &src,
                                        Value *valid, float fill) {
  for (unsigned s = 0; s < rowSlots(r.rows); ++s) {
    Value *row = queryOf(s / 2, s);
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *at = src.rowPointerOrFirst(b, row, inside);
    Value *v = b.CreateLoad(b.getFloatTy(), at);
    b.CreateStore(b.CreateSelect(inside, v, f32(fill)), slot(r.storage, s));
  }
}

// Lane (g, t) holds columns 64i + 16w + g (+ 8) of queries 8j + 2t (+ 1):
// element stores, a query's row looked up once. O is a few kilobytes.
void NvptxWgmmaKeyRowsTileOps::store(const Tile &tile, const GlobalRows &dst,
                                     Value *valid) {
  Type *outElem = elementType(b.getContext(), dst.dtype);
  for (unsigned j = 0; j < tile.rows / 8; ++j)
    for (unsigned c = 0; c < 2; ++c) {
      Value *row = queryOf(j, c);
      emitIf(b, b.CreateICmpSLT(row, valid), "store", [&] {
        Value *rowPtr = dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
        for (unsigned i = 0; i < productsOf(tile); ++i)
          for (unsigned e = c; e < 4; e += 2) {
            Value *x = b.CreateLoad(b.getFloatTy(), at(tile, i, j, e));
            if (!outElem->isFloatTy())
              x = b.CreateFPTrunc(x, outElem);
            Value *col = b.CreateZExt(keyOf(i, e), b.getInt64Ty());
            b.CreateStore(x, b.CreateInBoundsGEP(outElem, rowPtr, col));
          }
      });
    }
}

// Every lane holds its queries' values whole; warp 0's lanes with g = 0
// store them.
void NvptxWgmmaKeyRowsTileOps::store(const RowVec &r, const GlobalRows &dst,
                                     Value *valid) {
  Value *storer = b.CreateAnd(b.CreateICmpEQ(warpInGroup, b.getInt32(0)),
                              b.CreateICmpEQ(g, b.getInt32(0)));
  for (unsigned s = 0; s < rowSlots(r.rows); ++s) {
    Value *row = queryOf(s / 2, s);
    emitIf(
        b, b.CreateAnd(storer, b.CreateICmpSLT(row, valid)), "store.row", [&] {
          b.CreateStore(b.CreateLoad(b.getFloatTy(), slot(r.storage, s)),
                        dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty())));
        });
  }
}

// P (query, key) in [bm][bn] slabs of the next buffer. The product that
// read that buffer (two key tiles ago) has completed: the last tile's
// finishProductScaled waited for it.
void NvptxWgmmaKeyRowsTileOps::writeProbabilities(const Tile &scores) {
  Tile p = makeTile(TileRole::Probabilities, scores.rows, scores.cols, "p");
  Value *base =
      probabilitiesAt(p, b.CreateLoad(b.getInt32Ty(), nextProbabilities));
  unsigned slabBytes = layout.slabBytes(p.cols);
  for (unsigned i = 0; i < productsOf(scores); ++i)
    for (unsigned j = 0; j < scores.rows / 8; ++j)
      for (unsigned e = 0; e < 4; ++e) {
        Value *offset = swizzledOffset(b, queryOf(j, e), keyOf(i, e), p.rows,
                                       slabBytes, dtypeBytes(spec.dtype));
        Value *x = b.CreateFPTrunc(
            b.CreateLoad(b.getFloatTy(), at(scores, i, j, e)), elem);
        b.CreateStore(x, b.CreateInBoundsGEP(b.getInt8Ty(), base, offset));
      }
  b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
}

Value *NvptxWgmmaKeyRowsTileOps::probabilitiesAt(const Tile &p, Value *index) {
  return b.CreateInBoundsGEP(
      b.getInt8Ty(), p.storage,
      b.CreateMul(index, b.getInt32(layout.probabilities.bytes())));
}

void NvptxWgmmaKeyRowsTileOps::mapWithRowThenSum(Tile &tile, const RowVec &row,
                                                 WithRowFn fn, RowVec &sum) {
  mapWithRow(tile, row, fn);
  writeProbabilities(tile);
  reduceRows(tile, sum, /*isMax=*/false);
  writtenScores = tile.storage;
}

void NvptxWgmmaKeyRowsTileOps::copy(Tile &dst, const Tile &src) {
  assert(dst.role == TileRole::Probabilities && src.role == TileRole::Scores);
  if (src.storage != writtenScores) {
    writeProbabilities(src);
    meet();
  }
  writtenScores = nullptr;
  Value *next = b.CreateLoad(b.getInt32Ty(), nextProbabilities);
  b.CreateStore(next, probabilities);
  b.CreateStore(b.CreateXor(next, b.getInt32(1)), nextProbabilities);
}

// S^T for product i: keys 64i.. of the K slot; step kk covers 32 bytes of d
// in both operands.
SmallVector<Value *, 128>
NvptxWgmmaKeyRowsTileOps::queryTimesKeys(const Tile &q, const Tile &kT,
                                         unsigned) {
  WgmmaOperand kMajor;
  kMajor.swizzleBytes = layout.slabBytes(q.cols);
  Value *qBase = descriptorBase(q, nullptr, kMajor);
  Value *kBase = descriptorBase(kT, nullptr, kMajor);
  unsigned keys = kT.cols, outs = q.rows / 2;
  SmallVector<Value *, 128> sums;
  emitWgmmaFence(b);
  for (unsigned i = 0; i < keys / 64; ++i) {
    SmallVector<Value *, 128> part(outs, PoisonValue::get(b.getFloatTy()));
    for (unsigned kk = 0; kk < q.cols / layout.stepElements(); ++kk)
      part = emitWgmmaShared(
          b, spec.dtype, part, /*accumulate=*/kk > 0,
          wgmmaDescriptorAt(b, kBase,
                            64 * i * kMajor.swizzleBytes +
                                kMajorStepOffset(kMajor, keys, kk),
                            kMajor),
          wgmmaDescriptorAt(b, qBase, kMajorStepOffset(kMajor, q.rows, kk),
                            kMajor),
          /*transposeB=*/false);
    sums.append(part.begin(), part.end());
  }
  emitWgmmaCommit(b);
  return sums;
}

// O^T for product i: columns 64i.. of V, one 128-byte slab of its rows,
// read MN-major; step kk covers keys 16kk.., two swizzle atoms of V and
// 32 bytes of P's rows.
SmallVector<Value *, 128> NvptxWgmmaKeyRowsTileOps::probabilitiesTimesValues(
    const Tile &p, const Tile &v, ArrayRef<Value *> acc, bool accumulate) {
  WgmmaOperand values, probs;
  values.swizzleBytes = layout.slabBytes(v.cols);
  values.leadingBytes = v.rows * values.swizzleBytes;
  probs.swizzleBytes = layout.slabBytes(p.cols);
  Value *vBase = descriptorBase(v, nullptr, values);
  Value *pBase = wgmmaDescriptorBase(
      b, probabilitiesAt(p, b.CreateLoad(b.getInt32Ty(), probabilities)),
      nullptr, probs);
  unsigned outs = p.rows / 2, columnsPerSlab = values.swizzleBytes / 2;
  SmallVector<Value *, 128> sums;
  emitWgmmaFence(b);
  for (unsigned i = 0; i < v.cols / 64; ++i) {
    SmallVector<Value *, 128> part(acc.slice(i * outs, outs));
    unsigned slab = 64 * i / columnsPerSlab * values.leadingBytes;
    for (unsigned kk = 0; kk < p.cols / 16; ++kk)
      part = emitWgmmaShared(
          b, spec.dtype, part, accumulate || kk > 0,
          wgmmaDescriptorAt(b, vBase, slab + kk * 16 * values.swizzleBytes,
                            values),
          wgmmaDescriptorAt(b, pBase, kMajorStepOffset(probs, p.rows, kk),
                            probs),
          /*transposeB=*/false, /*transposeA=*/true);
    sums.append(part.begin(), part.end());
  }
  emitWgmmaCommit(b);
  return sums;
}

std::unique_ptr<TileOps>
fmhajit::createNvptxWgmmaKeyRowsTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                                        const WgmmaLayout &layout) {
  return std::make_unique<NvptxWgmmaKeyRowsTileOps>(b, target, layout);
}
