//===- NvptxMmaTileOps.cpp - Tensor-core tiles: mma.sync m16n8k16 ---------===//
//
// pipeline=mma on sm_80+ (FlashAttention-2's data flow):
//  - Each warp owns bm / warps query rows, 16 per m-tile (at most
//    MmaLayout::kMaxQueryTilesPerWarp of them: validation checks the
//    layout in specs/pipelines/MmaLayout.h, which also places the shared
//    tiles below). Scores and
//    Output tiles live in registers in the mma fragment layouts (lane l:
//    g = l / 4, t = l % 4; an accumulator m16n8 holds rows g, g+8 and columns
//    2t, 2t+1). Row vectors hold, per thread, the rows g and g+8 of each
//    m-tile; row reductions finish with two quad shuffles.
//  - Query, KeyT and Value tiles are rows in shared memory, each row padded
//    by 16 bytes so the eight rows ldmatrix reads fall in distinct banks,
//    filled with cp.async (16 bytes a copy, zero-filled past the last row).
//    load() only issues and commits the copies; sync() (or the first mma
//    that reads the tile) waits for its group and makes it visible with a
//    barrier. A load skips its own barrier when no thread can still be
//    reading the tile: none of its reads was emitted since the last barrier.
//    With two m-tiles per warp, Q fragments come from shared memory each
//    step (registers would spill at d=128) and K/V fragments feed both.
//  - S = Q K^T:  A fragments of Q by ldmatrix.x4, B fragments of K^T by
//                ldmatrix.x4 (K rows are K^T columns)
//    O += P V:   A fragments of P converted in registers from S's
//                accumulators (the layouts line up), B by ldmatrix.x4.trans
//  - Q keeps its softmax scale aside and S gets it in fp32 after the product,
//    so no precision is lost rounding scaled Q back to 16 bits.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/MmaLayout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxMmaTileOps : public TileOps {
public:
  NvptxMmaTileOps(IRBuilderBase &b, GpuTargetInfo &target)
      : b(b), target(target), spec(target.kernelSpec()),
        layout(spec, *findArch(spec.target)), mTiles(layout.queryTilesPerWarp),
        elem(elementType(b.getContext(), spec.dtype)) {
    smem = target.sharedMemory(b, layout.bytes());
    Value *tid = target.threadId(b);
    lane = b.CreateAnd(tid, b.getInt32(31));
    g = b.CreateLShr(lane, b.getInt32(2));
    t = b.CreateAnd(lane, b.getInt32(3));
    warpRow0 =
        b.CreateMul(b.CreateLShr(tid, b.getInt32(5)), b.getInt32(16 * mTiles));
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override {
    switch (role) {
    case TileRole::Query:
      return {role, rows, cols, shared(layout.query)};
    case TileRole::Scores:
    case TileRole::Output: // accumulators: mTiles x (cols/8) x 4 floats
      return {role, rows, cols,
              entryAlloca(b, b.getFloatTy(), name, 4, mTiles * (cols / 8) * 4)};
    case TileRole::KeyT:
      return {role, rows, cols, shared(layout.keys)};
    case TileRole::Value:
      return {role, rows, cols, shared(layout.values)};
    }
    llvm_unreachable("unknown tile role");
  }
  RowVec makeRowVec(unsigned rows, const Twine &name) override {
    return {rows, entryAlloca(b, b.getFloatTy(), name, 4, mTiles * 2)};
  }

  void fill(Tile &tile, float value) override {
    assert((tile.role == TileRole::Scores || tile.role == TileRole::Output) &&
           "fill accumulators");
    for (unsigned e = 0; e < accCount(tile); ++e)
      b.CreateStore(f32(value), slot(tile.storage, e));
  }
  void fill(RowVec &r, float value) override {
    for (unsigned s = 0; s < mTiles * 2; ++s)
      b.CreateStore(f32(value), slot(r.storage, s));
  }

  void load(Tile &tile, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  void map(Tile &tile, ElementFn fn) override;
  void mapWithRow(Tile &tile, const RowVec &row, WithRowFn fn) override;
  void reduceRows(const Tile &tile, RowVec &out, bool isMax) override;
  void mapRows(RowVec &out, ArrayRef<const RowVec *> in, RowFn fn) override;
  void store(const Tile &tile, const GlobalRows &dst, Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst, Value *valid) override;
  void sync(Tile &tile) override { waitFor(tile); }
  void drain() override {
    if (!pending.empty())
      b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(0)});
    pending.clear();
  }

private:
  Value *f32(float v) { return ConstantFP::get(b.getFloatTy(), v); }
  /// Element \p i of a register array (an alloca SROA turns into registers).
  Value *slot(Value *base, unsigned i) {
    return b.CreateConstInBoundsGEP1_32(
        cast<AllocaInst>(base)->getAllocatedType(), base, i);
  }
  Value *shared(const SharedTile &tile) {
    return b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, tile.offset);
  }
  /// Elements from one row of a shared tile to the next (row and padding).
  unsigned pitchOf(const Tile &tile) const {
    switch (tile.role) {
    case TileRole::Query:
      return layout.query.pitch;
    case TileRole::KeyT:
      return layout.keys.pitch;
    case TileRole::Value:
      return layout.values.pitch;
    default:
      llvm_unreachable("accumulators are not in shared memory");
    }
  }
  /// A block barrier; no tile read before it can still be in use after.
  void barrier() {
    target.barrier(b);
    readSinceBarrier.clear();
  }
  unsigned accCount(const Tile &tile) const {
    return mTiles * (tile.cols / 8) * 4;
  }
  /// Accumulator element (m-tile i, n-tile j, register e) -> flat index.
  unsigned accIndex(const Tile &tile, unsigned i, unsigned j,
                    unsigned e) const {
    return (i * (tile.cols / 8) + j) * 4 + e;
  }
  Value *rowOf(unsigned i, unsigned e) { // e: accumulator register or 2*half
    return b.CreateAdd(warpRow0,
                       b.CreateAdd(g, b.getInt32(i * 16 + (e >= 2 ? 8 : 0))));
  }
  Value *colOf(unsigned j, unsigned e) {
    return b.CreateAdd(b.CreateShl(t, 1), b.getInt32(j * 8 + (e & 1)));
  }
  /// Address of element (row, col) of a shared tile (for KeyT, a K row).
  Value *sharedAt(const Tile &tile, Value *key, Value *col) {
    Value *index =
        b.CreateAdd(b.CreateMul(key, b.getInt32(pitchOf(tile))), col);
    return b.CreateInBoundsGEP(b.getInt16Ty(), tile.storage, index);
  }
  /// This lane's ldmatrix address in \p tile, at (\p key, \p col) of the
  /// fragment at the tile's origin, hidden from LICM (see fragmentBase).
  Value *fragmentBase(const Tile &tile, Value *key, Value *col);
  /// \p base moved by a constant (\p keys, \p cols) of \p tile.
  Value *fragmentAt(const Tile &tile, Value *base, unsigned keys,
                    unsigned cols) {
    return b.CreateConstInBoundsGEP1_32(b.getInt16Ty(), base,
                                        keys * pitchOf(tile) + cols);
  }
  void ldmatrix(Value *address, bool transposed, Value *out[4]);
  void waitFor(const Tile &tile);
  SmallVector<Value *, 4> queryFragments(const Tile &q, Value *base, unsigned i,
                                         unsigned kk);
  SmallVector<Value *, 4> probabilityFragments(const Tile &s, unsigned i,
                                               unsigned kk);
  void mmaStep(Value *const a[4], Value *b0, Value *b1, Value *const c[4],
               Value *out[4]);
  Value *packPair(Value *lo, Value *hi);

  IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  MmaLayout layout;
  unsigned mTiles;
  Type *elem;
  Value *smem = nullptr, *lane, *g, *t, *warpRow0;
  SmallVector<Value *, 4>
      pending; ///< shared tiles with copies in flight, oldest first
  DenseMap<Value *, Value *>
      queryScale; ///< Query storage -> its deferred scale
  SmallPtrSet<Value *, 4>
      readSinceBarrier; ///< shared tiles read since the last barrier
};
} // namespace

void NvptxMmaTileOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                           Value *scale) {
  if (scale)
    queryScale[tile.storage] = scale;
  unsigned keys = tile.role == TileRole::KeyT ? tile.cols : tile.rows;
  unsigned width = tile.role == TileRole::KeyT ? tile.rows : tile.cols;
  unsigned chunksPerRow = width / 8;
  if (readSinceBarrier.count(tile.storage))
    barrier(); // a warp may still be reading the previous contents
  Value *tid = target.threadId(b);
  Type *globalPtr = PointerType::get(b.getContext(), 1);
  emitFor(b, tid, b.getInt32(keys * chunksPerRow),
          b.getInt32(target.numThreads()), "cp", [&](Value *c) {
            Value *key = b.CreateUDiv(c, b.getInt32(chunksPerRow));
            Value *col = b.CreateMul(b.CreateURem(c, b.getInt32(chunksPerRow)),
                                     b.getInt32(8));
            Value *inside = b.CreateICmpSLT(key, valid);
            Value *safeKey = b.CreateSelect(inside, key, b.getInt32(0));
            // Per-chunk row addresses, so paged K/V rows copy like contiguous
            // ones.
            Value *rowPtr =
                src.rowPointer(b, b.CreateZExt(safeKey, b.getInt64Ty()));
            Value *from = b.CreateAddrSpaceCast(
                b.CreateInBoundsGEP(elem, rowPtr,
                                    b.CreateZExt(col, b.getInt64Ty())),
                globalPtr);
            Value *bytes = b.CreateSelect(inside, b.getInt32(16),
                                          b.getInt32(0)); // 0: zero-fill
            b.CreateIntrinsic(Intrinsic::nvvm_cp_async_cg_shared_global_16_s,
                              {}, {sharedAt(tile, key, col), from, bytes});
          });
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {});
  pending.push_back(tile.storage);
}

// Waits for the copy group of \p tile (later groups may stay in flight),
// then makes every thread's copies visible to the block.
void NvptxMmaTileOps::waitFor(const Tile &tile) {
  auto it = llvm::find(pending, tile.storage);
  if (it == pending.end())
    return;
  unsigned younger = static_cast<unsigned>(pending.end() - it - 1);
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(younger)});
  pending.erase(pending.begin(), it + 1);
  barrier();
}

void NvptxMmaTileOps::mmaStep(Value *const a[4], Value *b0, Value *b1,
                              Value *const c[4], Value *out[4]) {
  SmallVector<Value *, 10> args;
  bool half = spec.dtype == DType::F16;
  auto *halfPair = FixedVectorType::get(b.getHalfTy(), 2);
  auto operand = [&](Value *bits) {
    return half ? b.CreateBitCast(bits, halfPair) : bits;
  };
  for (unsigned i = 0; i < 4; ++i)
    args.push_back(operand(a[i]));
  args.push_back(operand(b0));
  args.push_back(operand(b1));
  for (unsigned i = 0; i < 4; ++i)
    args.push_back(c[i]);
  Value *d =
      b.CreateIntrinsic(half ? Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                             : Intrinsic::nvvm_mma_m16n8k16_row_col_bf16,
                        {}, args);
  for (unsigned i = 0; i < 4; ++i)
    out[i] = b.CreateExtractValue(d, i);
}

Value *NvptxMmaTileOps::packPair(Value *lo, Value *hi) {
  Value *pair = b.CreateInsertElement(
      b.CreateInsertElement(
          PoisonValue::get(FixedVectorType::get(b.getFloatTy(), 2)), lo,
          uint64_t(0)),
      hi, uint64_t(1));
  return b.CreateBitCast(b.CreateFPTrunc(pair, FixedVectorType::get(elem, 2)),
                         b.getInt32Ty());
}

// Every fragment of a tile is one lane-dependent address plus a constant.
// Computed once, LICM would hoist each of the dozens of sums out of the
// loop, and each would hold a register for the whole loop (ptxas spilled at
// d=128). An opaque copy made where the tile is read keeps one base live
// instead, and the constants fold into ldmatrix's [reg+imm] addressing.
Value *NvptxMmaTileOps::fragmentBase(const Tile &tile, Value *key, Value *col) {
  Value *address = sharedAt(tile, key, col);
  unsigned bits = b.GetInsertBlock()->getDataLayout().getPointerSizeInBits(3);
  Type *ptrTy = address->getType();
  auto *copy =
      InlineAsm::get(FunctionType::get(ptrTy, {ptrTy}, false),
                     bits == 32 ? "mov.b32 $0, $1;" : "mov.b64 $0, $1;",
                     bits == 32 ? "=r,r" : "=l,l", /*hasSideEffects=*/true);
  return b.CreateCall(copy, {address});
}

void NvptxMmaTileOps::ldmatrix(Value *address, bool transposed, Value *out[4]) {
  Value *frags = b.CreateIntrinsic(
      transposed ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                 : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16,
      {PointerType::get(b.getContext(), 3)}, {address});
  for (unsigned r = 0; r < 4; ++r)
    out[r] = b.CreateExtractValue(frags, r);
}

// Q's A fragments (16 x 16 at the rows of m-tile i, the columns of step kk):
// matrix m of ldmatrix.x4 covers rows (m & 1) * 8 and columns (m >> 1) * 8,
// so lane l names row l & 15 and column (l >> 4) * 8 (\p base, at i = kk = 0).
SmallVector<Value *, 4> NvptxMmaTileOps::queryFragments(const Tile &q,
                                                        Value *base, unsigned i,
                                                        unsigned kk) {
  Value *out[4];
  ldmatrix(fragmentAt(q, base, i * 16, kk * 16), /*transposed=*/false, out);
  return {out[0], out[1], out[2], out[3]};
}

// P's A fragments come from S's accumulators: step kk covers n-tiles 2kk and
// 2kk+1; a0/a1 are rows g/g+8 of the first, a2/a3 of the second.
SmallVector<Value *, 4>
NvptxMmaTileOps::probabilityFragments(const Tile &s, unsigned i, unsigned kk) {
  SmallVector<Value *, 4> out;
  for (unsigned r = 0; r < 4; ++r) {
    unsigned j = 2 * kk + (r >= 2 ? 1 : 0), e0 = (r & 1) ? 2 : 0;
    auto at = [&](unsigned e) {
      return b.CreateLoad(b.getFloatTy(),
                          slot(s.storage, accIndex(s, i, j, e)));
    };
    out.push_back(packPair(at(e0), at(e0 + 1)));
  }
  return out;
}

void NvptxMmaTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  waitFor(a);
  waitFor(bt);
  readSinceBarrier.insert(bt.storage);
  if (acc.role == TileRole::Scores)
    readSinceBarrier.insert(a.storage);
  bool scores = acc.role == TileRole::Scores; // S = Q K^T, else O += P V
  unsigned kSteps = a.cols / 16, nPairs = acc.cols / 16;
  SmallVector<Value *, 128> sums(accCount(acc));
  for (unsigned e = 0; e < sums.size(); ++e)
    sums[e] =
        scores ? f32(0) : b.CreateLoad(b.getFloatTy(), slot(acc.storage, e));
  Value *queryBase = nullptr;
  if (scores) {
    Value *row = b.CreateAdd(warpRow0, b.CreateAnd(lane, b.getInt32(15)));
    queryBase =
        fragmentBase(a, row, b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), 3));
  }
  // B fragments, 16 keys x 16 columns per ldmatrix.x4: lane l names key
  // (l & 7) + 8 * ((l >> 4) for K, (l >> 3) & 1 for V) and column 8 times
  // the other bit.
  Value *sub8 = b.CreateAnd(lane, b.getInt32(7));
  Value *which = b.CreateShl(
      b.CreateAnd(b.CreateLShr(lane, b.getInt32(3)), b.getInt32(1)), 3);
  Value *upper = b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), 3);
  Value *keyBase = scores ? fragmentBase(bt, b.CreateAdd(upper, sub8),
                                         which) // K rows: key n, col k
                          : fragmentBase(bt, b.CreateAdd(which, sub8),
                                         upper); // V rows: key k, col n
  for (unsigned kk = 0; kk < kSteps; ++kk) {
    SmallVector<Value *, 4> aFrag[MmaLayout::kMaxQueryTilesPerWarp];
    for (unsigned i = 0; i < mTiles; ++i)
      aFrag[i] = scores ? queryFragments(a, queryBase, i, kk)
                        : probabilityFragments(a, i, kk);
    for (unsigned np = 0; np < nPairs; ++np) {
      Value *bReg[4];
      ldmatrix(scores ? fragmentAt(bt, keyBase, np * 16, kk * 16)
                      : fragmentAt(bt, keyBase, kk * 16, np * 16),
               /*transposed=*/!scores, bReg);
      for (unsigned i = 0; i < mTiles; ++i)
        for (unsigned half = 0; half < 2; ++half) {
          unsigned j = 2 * np + half;
          Value *c[4], *out[4];
          for (unsigned e = 0; e < 4; ++e)
            c[e] = sums[accIndex(acc, i, j, e)];
          mmaStep(aFrag[i].data(), bReg[2 * half], bReg[2 * half + 1], c, out);
          for (unsigned e = 0; e < 4; ++e)
            sums[accIndex(acc, i, j, e)] = out[e];
        }
    }
  }
  Value *scale = scores ? queryScale.lookup(a.storage) : nullptr;
  for (unsigned e = 0; e < sums.size(); ++e) {
    Value *v = sums[e];
    if (scores) { // acc += scale * (Q K^T)
      Value *old = b.CreateLoad(b.getFloatTy(), slot(acc.storage, e));
      v = scale ? b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                                    {v, scale, old})
                : b.CreateFAdd(v, old);
    }
    b.CreateStore(v, slot(acc.storage, e));
  }
}

void NvptxMmaTileOps::map(Tile &tile, ElementFn fn) {
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned j = 0; j < tile.cols / 8; ++j)
      for (unsigned e = 0; e < 4; ++e) {
        Value *p = slot(tile.storage, accIndex(tile, i, j, e));
        b.CreateStore(
            fn(b, rowOf(i, e), colOf(j, e), b.CreateLoad(b.getFloatTy(), p)),
            p);
      }
}

void NvptxMmaTileOps::mapWithRow(Tile &tile, const RowVec &row, WithRowFn fn) {
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *r = b.CreateLoad(b.getFloatTy(), slot(row.storage, i * 2 + half));
      for (unsigned j = 0; j < tile.cols / 8; ++j)
        for (unsigned e = 2 * half; e < 2 * half + 2; ++e) {
          Value *p = slot(tile.storage, accIndex(tile, i, j, e));
          b.CreateStore(fn(b, b.CreateLoad(b.getFloatTy(), p), r), p);
        }
    }
}

void NvptxMmaTileOps::reduceRows(const Tile &tile, RowVec &out, bool isMax) {
  auto combine = [&](Value *x, Value *y) {
    return isMax ? b.CreateMaxNum(x, y) : b.CreateFAdd(x, y);
  };
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *v = f32(isMax ? -INFINITY : 0.0f);
      for (unsigned j = 0; j < tile.cols / 8; ++j)
        for (unsigned e = 2 * half; e < 2 * half + 2; ++e)
          v = combine(
              v, b.CreateLoad(b.getFloatTy(),
                              slot(tile.storage, accIndex(tile, i, j, e))));
      for (unsigned mask : {1u, 2u}) // the four threads of a quad share a row
        v = combine(v, b.CreateIntrinsic(Intrinsic::nvvm_shfl_sync_bfly_f32, {},
                                         {b.getInt32(~0u), v, b.getInt32(mask),
                                          b.getInt32(31)}));
      b.CreateStore(v, slot(out.storage, i * 2 + half));
    }
}

void NvptxMmaTileOps::mapRows(RowVec &out, ArrayRef<const RowVec *> in,
                              RowFn fn) {
  for (unsigned s = 0; s < mTiles * 2; ++s) {
    SmallVector<Value *, 4> values;
    for (const RowVec *r : in)
      values.push_back(b.CreateLoad(b.getFloatTy(), slot(r->storage, s)));
    b.CreateStore(fn(b, values), slot(out.storage, s));
  }
}

void NvptxMmaTileOps::store(const Tile &tile, const GlobalRows &dst,
                            Value *valid) {
  Type *outElem = elementType(b.getContext(), dst.dtype);
  auto *pairType = FixedVectorType::get(outElem, 2);
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      emitIf(b, b.CreateICmpSLT(row, valid), "store", [&] {
        Value *rowPtr = dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
        for (unsigned j = 0; j < tile.cols / 8; ++j) {
          Value *pair =
              PoisonValue::get(FixedVectorType::get(b.getFloatTy(), 2));
          for (unsigned e = 0; e < 2; ++e)
            pair = b.CreateInsertElement(
                pair,
                b.CreateLoad(
                    b.getFloatTy(),
                    slot(tile.storage, accIndex(tile, i, j, 2 * half + e))),
                uint64_t(e));
          if (!outElem->isFloatTy())
            pair = b.CreateFPTrunc(pair, pairType);
          Value *offset = b.CreateZExt(colOf(j, 0), b.getInt64Ty());
          b.CreateAlignedStore(
              pair, b.CreateInBoundsGEP(outElem, rowPtr, offset),
              Align(2 * outElem->getPrimitiveSizeInBits() / 8));
        }
      });
    }
}

void NvptxMmaTileOps::store(const RowVec &r, const GlobalRows &dst,
                            Value *valid) {
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      Value *mine = b.CreateAnd(b.CreateICmpEQ(t, b.getInt32(0)),
                                b.CreateICmpSLT(row, valid));
      emitIf(b, mine, "store.row", [&] {
        b.CreateStore(
            b.CreateLoad(b.getFloatTy(), slot(r.storage, i * 2 + half)),
            dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty())));
      });
    }
}

std::unique_ptr<TileOps> fmhajit::createNvptxMmaTileOps(IRBuilderBase &b,
                                                        GpuTargetInfo &target) {
  return std::make_unique<NvptxMmaTileOps>(b, target);
}
