//===- NvptxFragmentTileOps.cpp - Tensor-core tiles of mma and wgmma ----===//
//
// The register fragments' arithmetic and stores; their copies from global
// memory into shared tiles are in NvptxFragmentCopies.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/targets/NvptxFragmentTileOps.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

NvptxFragmentTileOps::NvptxFragmentTileOps(IRBuilderBase &b,
                                           GpuTargetInfo &target,
                                           unsigned mTiles,
                                           unsigned sharedBytes)
    : b(b), target(target), spec(target.kernelSpec()), mTiles(mTiles),
      elem(elementType(b.getContext(), spec.dtype)) {
  smem = target.sharedMemory(b, sharedBytes);
  Value *tid = target.threadId(b);
  lane = b.CreateAnd(tid, b.getInt32(31));
  g = b.CreateLShr(lane, b.getInt32(2));
  t = b.CreateAnd(lane, b.getInt32(3));
  warpRow0 =
      b.CreateMul(b.CreateLShr(tid, b.getInt32(5)), b.getInt32(16 * mTiles));
}

Value *NvptxFragmentTileOps::f32(float v) {
  return ConstantFP::get(b.getFloatTy(), v);
}

Value *NvptxFragmentTileOps::slot(Value *base, unsigned i) {
  return b.CreateConstInBoundsGEP1_32(
      cast<AllocaInst>(base)->getAllocatedType(), base, i);
}

Tile NvptxFragmentTileOps::makeTile(TileRole role, unsigned rows, unsigned cols,
                                    const Twine &name) {
  if (role == TileRole::Scores || role == TileRole::Output)
    return {role, rows, cols,
            entryAlloca(b, b.getFloatTy(), name, 4, mTiles * (cols / 8) * 4)};
  if (role == TileRole::Probabilities)
    return {role, rows, cols,
            entryAlloca(b, b.getInt32Ty(), name, 4,
                        mTiles * (cols / fragmentKeys()) * 4)};
  return {role, rows, cols,
          b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem,
                                       sharedTile(role).offset)};
}

RowVec NvptxFragmentTileOps::makeRowVec(unsigned rows, const Twine &name) {
  RowVec r{rows, entryAlloca(b, b.getFloatTy(), name, 4, rowSlots(rows))};
  // Where the softmax may skip rows, a skipped row's values stay defined
  // (branches on them, the rescale's vote, are then not on poison).
  if (skipsDeadRows())
    fill(r, 0.0f);
  return r;
}

void NvptxFragmentTileOps::fill(Tile &tile, float value) {
  assert((tile.role == TileRole::Scores || tile.role == TileRole::Output) &&
         "fill accumulators");
  for (unsigned e = 0; e < accCount(tile); ++e)
    b.CreateStore(f32(value), slot(tile.storage, e));
}

void NvptxFragmentTileOps::fill(RowVec &r, float value) {
  for (unsigned s = 0; s < rowSlots(r.rows); ++s)
    b.CreateStore(f32(value), slot(r.storage, s));
}

Value *NvptxFragmentTileOps::rowOf(unsigned i, unsigned e) {
  return b.CreateAdd(warpRow0,
                     b.CreateAdd(g, b.getInt32(i * 16 + (e >= 2 ? 8 : 0))));
}

// A lane-dependent base plus a constant, which ScoreMods' subtractColumn
// relies on.
Value *NvptxFragmentTileOps::colOf(unsigned j, unsigned e) {
  Value *base = b.CreateShl(t, 1);
  if (warpCol0)
    base = b.CreateAdd(warpCol0, base);
  return b.CreateAdd(base, b.getInt32(j * 8 + (e & 1)));
}

void NvptxFragmentTileOps::barrier() {
  target.barrier(b);
  readSinceBarrier.clear();
}

Value *NvptxFragmentTileOps::packPair(Value *lo, Value *hi) {
  Value *pair = b.CreateInsertElement(
      b.CreateInsertElement(
          PoisonValue::get(FixedVectorType::get(b.getFloatTy(), 2)), lo,
          uint64_t(0)),
      hi, uint64_t(1));
  return b.CreateBitCast(b.CreateFPTrunc(pair, FixedVectorType::get(elem, 2)),
                         b.getInt32Ty());
}

SmallVector<Value *, 4>
NvptxFragmentTileOps::probabilityFragments(const Tile &s, unsigned i,
                                           unsigned kk) {
  SmallVector<Value *, 4> out;
  if (s.role == TileRole::Probabilities) { // already packed by copy()
    for (unsigned r = 0; r < 4; ++r)
      out.push_back(b.CreateLoad(
          b.getInt32Ty(),
          slot(s.storage, (i * (s.cols / fragmentKeys()) + kk) * 4 + r)));
    return out;
  }
  auto at = [&](unsigned j, unsigned e) {
    return b.CreateLoad(b.getFloatTy(), slot(s.storage, accIndex(s, i, j, e)));
  };
  for (unsigned r = 0; r < 4; ++r) {
    unsigned e0 = (r & 1) ? 2 : 0; // rows g, g+8
    if (!isFp8(spec.dtype)) {
      unsigned j = 2 * kk + (r >= 2 ? 1 : 0);
      out.push_back(packPair(at(j, e0), at(j, e0 + 1)));
      continue;
    }
    // Keys 32kk..: register r holds n-tiles j and j+1 (j = 4kk, or 4kk+2
    // for r >= 2), columns 2t and 2t+1 of each, as its four k slots. The
    // k slots of the m16n8k32 fragment are 4t..4t+3, so P's keys arrive
    // permuted within each 16, and the transposers permute V's rows alike.
    unsigned j = 4 * kk + (r >= 2 ? 2 : 0);
    Value *low = packFp8Pair(at(j, e0), at(j, e0 + 1));
    Value *high = packFp8Pair(at(j + 1, e0), at(j + 1, e0 + 1));
    // Packed as a vector (mov.b32 {lo, hi}), ptxas folds the second
    // conversion into the register of the first (F2FP ... MERGE_C), one
    // instruction a pair; or(zext, shl) cost one more (session 27).
    Value *pair = PoisonValue::get(FixedVectorType::get(b.getInt16Ty(), 2));
    pair = b.CreateInsertElement(pair, low, uint64_t(0));
    pair = b.CreateInsertElement(pair, high, uint64_t(1));
    out.push_back(b.CreateBitCast(pair, b.getInt32Ty()));
  }
  return out;
}

// P is e4m3 whatever the inputs' fp8 type: a probability needs the
// mantissa more than the range.
Value *NvptxFragmentTileOps::packFp8Pair(Value *lo, Value *hi) {
  return b.CreateIntrinsic(Intrinsic::nvvm_ff_to_e4m3x2_rn, {}, {hi, lo});
}

// P as the products read it: packed 16-bit pairs, half of S's registers
// (fp8: four 8-bit values a register, a quarter).
void NvptxFragmentTileOps::copy(Tile &dst, const Tile &src) {
  assert(dst.role == TileRole::Probabilities && src.role == TileRole::Scores);
  unsigned steps = src.cols / fragmentKeys();
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned kk = 0; kk < steps; ++kk) {
      SmallVector<Value *, 4> fragment = probabilityFragments(src, i, kk);
      for (unsigned r = 0; r < 4; ++r)
        b.CreateStore(fragment[r], slot(dst.storage, (i * steps + kk) * 4 + r));
    }
}

// Up to dv = 128: at 256 the branches cost the wgmma tile of 64 rows 8 bytes
// of spills (255 registers).
bool NvptxFragmentTileOps::skipsDeadRows() const {
  return target.options.skipDeadRows && spec.pack_gqa && spec.headDimV() <= 128;
}

void NvptxFragmentTileOps::limitQueryRows(Value *rows) {
  if (skipsDeadRows())
    liveRows = rows;
}

void NvptxFragmentTileOps::forEachLiveHalf(
    function_ref<void(unsigned i, unsigned half)> body) {
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      if (!liveRows) {
        body(i, half);
        continue;
      }
      Value *first = b.CreateAdd(warpRow0, b.getInt32(i * 16 + half * 8));
      emitIf(b, b.CreateICmpSLT(first, liveRows), "live.rows",
             [&] { body(i, half); });
    }
}

void NvptxFragmentTileOps::map(Tile &tile, ElementFn fn) {
  auto mapElement = [&](unsigned i, unsigned j, unsigned e) {
    Value *p = slot(tile.storage, accIndex(tile, i, j, e));
    b.CreateStore(
        fn(b, rowOf(i, e), colOf(j, e), b.CreateLoad(b.getFloatTy(), p)), p);
  };
  // Without a limit the elements go column by column, as they always have.
  if (!liveRows) {
    for (unsigned i = 0; i < mTiles; ++i)
      for (unsigned j = 0; j < tile.cols / 8; ++j)
        for (unsigned e = 0; e < 4; ++e)
          mapElement(i, j, e);
    return;
  }
  forEachLiveHalf([&](unsigned i, unsigned half) {
    for (unsigned j = 0; j < tile.cols / 8; ++j)
      for (unsigned e = 2 * half; e < 2 * half + 2; ++e)
        mapElement(i, j, e);
  });
}

void NvptxFragmentTileOps::mapWithRow(Tile &tile, const RowVec &row,
                                      WithRowFn fn) {
  forEachLiveHalf([&](unsigned i, unsigned half) {
    Value *r = b.CreateLoad(b.getFloatTy(), slot(row.storage, i * 2 + half));
    for (unsigned j = 0; j < tile.cols / 8; ++j)
      for (unsigned e = 2 * half; e < 2 * half + 2; ++e) {
        Value *p = slot(tile.storage, accIndex(tile, i, j, e));
        b.CreateStore(fn(b, b.CreateLoad(b.getFloatTy(), p), r), p);
      }
  });
}

// Each lane asks whether any of its rows has a factor other than 1, and
// the warp skips the pass when none has: the branch is uniform, so the
// warp stays converged for the products that follow.
void NvptxFragmentTileOps::scaleRows(Tile &tile, const RowVec &factor) {
  if (!skipsUnitRescale)
    return TileOps::scaleRows(tile, factor);
  emitIf(b, anyFactorOtherThanOne(factor), "rescale",
         [&] { TileOps::scaleRows(tile, factor); });
}

Value *NvptxFragmentTileOps::anyFactorOtherThanOne(const RowVec &factor) {
  Value *any = b.getFalse();
  for (unsigned s = 0; s < rowSlots(factor.rows); ++s)
    any = b.CreateOr(any, b.CreateFCmpUNE(b.CreateLoad(b.getFloatTy(),
                                                       slot(factor.storage, s)),
                                          f32(1.0f)));
  return b.CreateIntrinsic(Intrinsic::nvvm_vote_any_sync, {},
                           {b.getInt32(~0u), any});
}

Value *NvptxFragmentTileOps::combineRows(Value *x, Value *y, bool isMax) {
  return isMax ? b.CreateMaxNum(x, y) : b.CreateFAdd(x, y);
}

Value *NvptxFragmentTileOps::combineTree(ArrayRef<Value *> values, bool isMax) {
  SmallVector<Value *, 64> level(values);
  while (level.size() > 1) {
    SmallVector<Value *, 64> next;
    for (unsigned k = 0; k + 1 < level.size(); k += 2)
      next.push_back(combineRows(level[k], level[k + 1], isMax));
    if (level.size() % 2)
      next.push_back(level.back());
    level = std::move(next);
  }
  return level.front();
}

Value *NvptxFragmentTileOps::reduceLaneRow(const Tile &tile, unsigned i,
                                           unsigned half, bool isMax) {
  SmallVector<Value *, 64> row;
  for (unsigned j = 0; j < tile.cols / 8; ++j)
    for (unsigned e = 2 * half; e < 2 * half + 2; ++e)
      row.push_back(b.CreateLoad(b.getFloatTy(),
                                 slot(tile.storage, accIndex(tile, i, j, e))));
  if (reducesInTree && !row.empty())
    row = {combineTree(row, isMax)};
  for (unsigned k = 1; k < row.size(); ++k) // the chain
    row[0] = combineRows(row[0], row[k], isMax);
  return row.empty() ? f32(isMax ? -INFINITY : 0.0f) : row.front();
}

void NvptxFragmentTileOps::reduceRows(const Tile &tile, RowVec &out,
                                      bool isMax) {
  forEachLiveHalf([&](unsigned i, unsigned half) {
    Value *v = reduceLaneRow(tile, i, half, isMax);
    for (unsigned mask : {1u, 2u}) { // the four lanes of a quad share a row
      Value *other = b.CreateIntrinsic(
          Intrinsic::nvvm_shfl_sync_bfly_f32, {},
          {b.getInt32(~0u), v, b.getInt32(mask), b.getInt32(31)});
      v = combineRows(v, other, isMax);
    }
    b.CreateStore(v, slot(out.storage, i * 2 + half));
  });
}

// Each lane tests its own part of its rows and the warp votes: no shuffles
// across a quad, which on the common path (no row's max grew) are the
// longest wait between S and the first exp2.
Value *NvptxFragmentTileOps::anyRowPartMax(const Tile &tile, const RowVec &row,
                                           WithRowFn test) {
  if (!votesOnRowParts)
    return nullptr;
  // Halves forEachLiveHalf skips vote no. The flag lives in memory across
  // their branches; without a limit SROA makes it the chain of ors it was.
  Value *any = entryAlloca(b, b.getInt1Ty(), "any.part", 1, 1);
  b.CreateStore(b.getFalse(), any);
  forEachLiveHalf([&](unsigned i, unsigned half) {
    Value *part = reduceLaneRow(tile, i, half, /*isMax=*/true);
    Value *r = b.CreateLoad(b.getFloatTy(), slot(row.storage, i * 2 + half));
    b.CreateStore(
        b.CreateOr(b.CreateLoad(b.getInt1Ty(), any), test(b, part, r)), any);
  });
  return b.CreateIntrinsic(Intrinsic::nvvm_vote_any_sync, {},
                           {b.getInt32(~0u), b.CreateLoad(b.getInt1Ty(), any)});
}

void NvptxFragmentTileOps::mapRows(RowVec &out, ArrayRef<const RowVec *> in,
                                   RowFn fn) {
  for (unsigned s = 0; s < rowSlots(out.rows); ++s) {
    SmallVector<Value *, 4> values;
    for (const RowVec *r : in)
      values.push_back(b.CreateLoad(b.getFloatTy(), slot(r->storage, s)));
    b.CreateStore(fn(b, values), slot(out.storage, s));
  }
}

// A quad's four lanes hold a row's columns in 4-byte pairs: lane t the pair
// 2t of every 8-column block, so storing block by block fills half a
// 32-byte sector per store. Transposed across the quad, lane t holds the
// four pairs of block 4G + t of each group G of four blocks: one 16-byte
// store a lane, a whole sector per two lanes (ncu counted half the forward's
// global store sectors as excess before). words[k] is this lane's pair of
// block 4G + k; the result, lane m's pair of block 4G + t for m = 0..3.
SmallVector<Value *, 4>
NvptxFragmentTileOps::quadTransposed(ArrayRef<Value *> words) {
  auto pick = [&](auto valueFor) { // valueFor(t) for this lane's t
    Value *v = valueFor(3u);
    for (unsigned k = 3; k-- > 0;)
      v = b.CreateSelect(b.CreateICmpEQ(t, b.getInt32(k)), valueFor(k), v);
    return v;
  };
  Value *own = pick([&](unsigned k) { return words[k]; });
  SmallVector<Value *, 4> received(4); // received[r]: lane t ^ r's pair
  for (unsigned r = 1; r < 4; ++r) {
    Value *send = pick([&](unsigned k) { return words[k ^ r]; });
    received[r] = b.CreateIntrinsic(
        Intrinsic::nvvm_shfl_sync_bfly_i32, {},
        {b.getInt32(~0u), send, b.getInt32(r), b.getInt32(31)});
  }
  SmallVector<Value *, 4> out(4);
  for (unsigned m = 0; m < 4; ++m) // lane m is lane t ^ (t ^ m)
    out[m] = pick([&](unsigned k) { return k == m ? own : received[k ^ m]; });
  return out;
}

void NvptxFragmentTileOps::store(const Tile &tile, const GlobalRows &dst,
                                 Value *valid) {
  Type *outElem = elementType(b.getContext(), dst.dtype);
  auto *pairType = FixedVectorType::get(outElem, 2);
  bool halves = outElem->getPrimitiveSizeInBits() == 16;
  unsigned groups = halves && storesWholeBlocks ? tile.cols / 32 : 0;
  auto pairOf = [&](unsigned i, unsigned j, unsigned half) {
    Value *pair = PoisonValue::get(FixedVectorType::get(b.getFloatTy(), 2));
    for (unsigned e = 0; e < 2; ++e)
      pair = b.CreateInsertElement(
          pair,
          b.CreateLoad(b.getFloatTy(),
                       slot(tile.storage, accIndex(tile, i, j, 2 * half + e))),
          uint64_t(e));
    return outElem->isFloatTy() ? pair : b.CreateFPTrunc(pair, pairType);
  };
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      Value *inside = b.CreateICmpSLT(row, valid);
      auto rowPointer = [&] {
        return dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
      };
      // Group by group, so that few transposed words are live at once;
      // every lane takes part in the shuffles, before the row's guard.
      for (unsigned group = 0; group < groups; ++group) {
        SmallVector<Value *, 4> words;
        for (unsigned k = 0; k < 4; ++k)
          words.push_back(
              b.CreateBitCast(pairOf(i, 4 * group + k, half), b.getInt32Ty()));
        SmallVector<Value *, 4> transposed = quadTransposed(words);
        emitIf(b, inside, "store.group",
               [&] { storeBlock(rowPointer(), outElem, group, transposed); });
      }
      if (groups * 4 == tile.cols / 8)
        continue;
      emitIf(b, inside, "store", [&] {
        Value *rowPtr = rowPointer();
        for (unsigned j = groups * 4; j < tile.cols / 8; ++j) {
          Value *offset = b.CreateZExt(colOf(j, 0), b.getInt64Ty());
          b.CreateAlignedStore(
              pairOf(i, j, half), b.CreateInBoundsGEP(outElem, rowPtr, offset),
              Align(2 * outElem->getPrimitiveSizeInBits() / 8));
        }
      });
    }
}

// Block 4 * group + t of the row at rowPtr: 16 bytes in one store where the
// row is 16-byte aligned (strides need not be), else in four.
void NvptxFragmentTileOps::storeBlock(Value *rowPtr, Type *outElem,
                                      unsigned group, ArrayRef<Value *> words) {
  Value *col = b.CreateAdd(b.CreateShl(t, 3), b.getInt32(32 * group));
  if (warpCol0)
    col = b.CreateAdd(warpCol0, col);
  Value *at =
      b.CreateInBoundsGEP(outElem, rowPtr, b.CreateZExt(col, b.getInt64Ty()));
  Value *aligned = b.CreateICmpEQ(
      b.CreateAnd(b.CreatePtrToInt(rowPtr, b.getInt64Ty()), b.getInt64(15)),
      b.getInt64(0));
  emitIfElse(
      b, aligned, "store.block",
      [&] {
        Value *vec = PoisonValue::get(FixedVectorType::get(b.getInt32Ty(), 4));
        for (unsigned m = 0; m < 4; ++m)
          vec = b.CreateInsertElement(vec, words[m], uint64_t(m));
        b.CreateAlignedStore(vec, at, Align(16));
      },
      [&] {
        for (unsigned m = 0; m < 4; ++m)
          b.CreateAlignedStore(words[m],
                               b.CreateConstInBoundsGEP1_32(outElem, at, 2 * m),
                               Align(4));
      });
}

void NvptxFragmentTileOps::store(const RowVec &r, const GlobalRows &dst,
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

// red.global.add of 1 float, or 2 adjacent ones, at a generic pointer: no
// result is awaited.
static void emitGlobalAdd(IRBuilderBase &b, Value *address,
                          ArrayRef<Value *> values) {
  Type *globalPtr = PointerType::get(b.getContext(), 1);
  SmallVector<Type *, 3> types = {globalPtr};
  SmallVector<Value *, 3> args = {b.CreateAddrSpaceCast(address, globalPtr)};
  for (Value *v : values) {
    types.push_back(b.getFloatTy());
    args.push_back(v);
  }
  bool pair = values.size() == 2;
  auto *red = InlineAsm::get(FunctionType::get(b.getVoidTy(), types, false),
                             pair ? "red.global.add.v2.f32 [$0], {$1, $2};"
                                  : "red.global.add.f32 [$0], $1;",
                             pair ? "l,f,f,~{memory}" : "l,f,~{memory}",
                             /*hasSideEffects=*/true);
  b.CreateCall(red, args);
}

// A lane holds columns 2t and 2t+1 of each n-tile: one red.v2 adds both
// where the target has it (a warp's instruction then covers 32 whole bytes
// of each of 8 rows).
void NvptxFragmentTileOps::addToGlobal(const Tile &t, const GlobalRows &dst,
                                       Value *valid, bool pairAdds) {
  assert(dst.dtype == DType::F32 && "atomic adds into fp32");
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      emitIf(b, b.CreateICmpSLT(row, valid), "add", [&] {
        Value *rowPtr = dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
        for (unsigned j = 0; j < t.cols / 8; ++j) {
          Value *x[2];
          for (unsigned e = 0; e < 2; ++e)
            x[e] =
                b.CreateLoad(b.getFloatTy(),
                             slot(t.storage, accIndex(t, i, j, 2 * half + e)));
          for (unsigned e = 0; e < 2; e += pairAdds ? 2 : 1) {
            Value *at =
                b.CreateInBoundsGEP(b.getFloatTy(), rowPtr,
                                    b.CreateZExt(colOf(j, e), b.getInt64Ty()));
            emitGlobalAdd(b, at,
                          pairAdds ? ArrayRef<Value *>(x)
                                   : ArrayRef<Value *>(x[e]));
          }
        }
      });
    }
}

void NvptxFragmentTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  assert(t.rows == other.rows && t.cols == other.cols && "zip same shapes");
  for (unsigned e = 0; e < accCount(t); ++e) {
    Value *p = slot(t.storage, e);
    Value *x = b.CreateLoad(b.getFloatTy(), p);
    Value *y = b.CreateLoad(b.getFloatTy(), slot(other.storage, e));
    b.CreateStore(fn(b, x, y), p);
  }
}
