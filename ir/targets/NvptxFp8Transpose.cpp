//===- NvptxFp8Transpose.cpp - V to V^T in shared memory, for fp8 wgmma ---===//
#include "ir/targets/NvptxFp8Transpose.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxTma.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
/// Byte \p byte (i32) of row \p row (i32) of a swizzled tile of \p shape:
/// slabs of W-byte rows, each 16-byte chunk XOR-ed with the address bits
/// above the row's 128 bytes, as WgmmaLayout lays tiles out.
Value *swizzledByte(IRBuilderBase &b, const WgmmaLayout &layout,
                    const SharedTile &shape, Value *base, Value *row,
                    Value *byte) {
  unsigned slabBytes = layout.slabBytes(shape.pitch);
  auto c = [&](unsigned v) { return b.getInt32(v); };
  Value *slab = b.CreateUDiv(byte, c(slabBytes));
  Value *within = b.CreateURem(byte, c(slabBytes));
  Value *rowBytes = b.CreateMul(row, c(slabBytes));
  Value *pattern =
      b.CreateAnd(b.CreateLShr(rowBytes, 7), c(slabBytes / 16 - 1));
  Value *chunk = b.CreateXor(b.CreateLShr(within, 4), pattern);
  Value *offset = b.CreateAdd(
      b.CreateAdd(b.CreateMul(slab, c(shape.rows * slabBytes)), rowBytes),
      b.CreateOr(b.CreateShl(chunk, 4), b.CreateAnd(within, c(15))));
  return b.CreateInBoundsGEP(b.getInt8Ty(), base, offset);
}

/// The bytes \p pick (indices into x's then y's four bytes) of two words.
Value *pickBytes(IRBuilderBase &b, Value *x, Value *y, ArrayRef<int> pick) {
  auto *bytes = FixedVectorType::get(b.getInt8Ty(), 4);
  return b.CreateBitCast(b.CreateShuffleVector(b.CreateBitCast(x, bytes),
                                               b.CreateBitCast(y, bytes), pick),
                         b.getInt32Ty());
}
} // namespace

// A unit is 16 keys (one group) by 32 columns: one ldmatrix.x4.trans, four
// byte permutes, one stmatrix.x4. Matrix m of the load is keys 8 (m & 1)..
// of the group at columns 16 (m >> 1).. of the unit; .trans hands lane
// (j = lane / 4, i = lane % 4) the column pair 2j, 2j+1 of keys 2i, 2i+1
// (and 8 + those from the odd matrix), which are exactly the keys
// pi(4i..4i+3). So byte permutes make the lane's 4-byte word i of V^T rows
// 2j and 2j+1, which matrix m of stmatrix (rows 16 (m >> 1) + 2r + (m & 1))
// stores. The loads hit 8 distinct 16-byte chunks per matrix (the swizzle
// spreads 8 consecutive rows); the stores of even (or odd) rows, 2 ways.
void fmhajit::emitFp8TransposeValues(IRBuilderBase &b,
                                     const WgmmaLayout &layout, Value *src,
                                     Value *dst, Value *thread) {
  const SharedTile &from = layout.stagedValues, &to = layout.values;
  unsigned groups = from.rows / 16, columnPairs = from.pitch / 32;
  assert(from.rows % 16 == 0 && from.pitch % 32 == 0 &&
         "WgmmaLayout::checkFp8");
  auto c = [&](unsigned v) { return b.getInt32(v); };
  Value *lane = b.CreateAnd(thread, c(31));
  Value *matrix = b.CreateLShr(lane, 3), *row = b.CreateAnd(lane, c(7));
  Value *half = b.CreateAnd(matrix, c(1)), *chunk = b.CreateLShr(matrix, 1);
  // This lane's row of the load (a key) and of the store (a column of V).
  Value *keyInGroup = b.CreateAdd(b.CreateShl(half, 3), row);
  Value *columnInUnit = b.CreateAdd(b.CreateShl(chunk, 4),
                                    b.CreateAdd(b.CreateShl(row, 1), half));
  Type *shared = PointerType::get(b.getContext(), 3);
  // A unit's first key (its group's) and first column.
  struct Origin {
    Value *key, *column;
  };
  auto originOf = [&](Value *unit) {
    return Origin{b.CreateShl(b.CreateUDiv(unit, c(columnPairs)), 4),
                  b.CreateShl(b.CreateURem(unit, c(columnPairs)), 5)};
  };
  auto loadUnit = [&](Origin o) {
    Value *loaded = b.CreateIntrinsic(
        Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16, {shared},
        {swizzledByte(b, layout, from, src, b.CreateAdd(o.key, keyInGroup),
                      b.CreateAdd(o.column, b.CreateShl(chunk, 4)))});
    SmallVector<Value *, 4> r;
    for (unsigned m = 0; m < 4; ++m)
      r.push_back(b.CreateExtractValue(loaded, m));
    return r;
  };
  auto storeUnit = [&](Origin o, ArrayRef<Value *> r) {
    b.CreateIntrinsic(Intrinsic::nvvm_stmatrix_sync_aligned_m8n8_x4_b16,
                      {shared},
                      {swizzledByte(b, layout, to, dst,
                                    b.CreateAdd(o.column, columnInUnit), o.key),
                       pickBytes(b, r[0], r[1], {0, 2, 4, 6}),
                       pickBytes(b, r[0], r[1], {1, 3, 5, 7}),
                       pickBytes(b, r[2], r[3], {0, 2, 4, 6}),
                       pickBytes(b, r[2], r[3], {1, 3, 5, 7})});
  };
  // Each warp takes a contiguous run of units, two at a time so that the
  // second load is in flight with the first (a lone last unit is done
  // twice: the same bytes to the same place).
  unsigned units = groups * columnPairs, warps = kTransposerThreads / 32;
  Value *warp = b.CreateLShr(thread, 5);
  Value *begin = b.CreateUDiv(b.CreateMul(warp, c(units)), c(warps));
  Value *end =
      b.CreateUDiv(b.CreateMul(b.CreateAdd(warp, c(1)), c(units)), c(warps));
  emitFor(b, begin, end, c(2), "vt", [&](Value *first) {
    Value *second = b.CreateBinaryIntrinsic(
        Intrinsic::umin, b.CreateAdd(first, c(1)), b.CreateSub(end, c(1)));
    Origin one = originOf(first), two = originOf(second);
    SmallVector<Value *, 4> a = loadUnit(one), z = loadUnit(two);
    storeUnit(one, a);
    storeUnit(two, z);
  });
}
