//===- NvptxFp8Transpose.cpp - V to V^T in shared memory, for fp8 wgmma ---===//
#include "ir/targets/NvptxFp8Transpose.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxTma.h"
#include <algorithm>

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

/// out[j] = byte j of in[0], in[1], in[2], in[3], in that order.
SmallVector<Value *, 4> transposeBytes(IRBuilderBase &b, ArrayRef<Value *> in) {
  auto *bytes = FixedVectorType::get(b.getInt8Ty(), 4);
  auto asBytes = [&](Value *w) { return b.CreateBitCast(w, bytes); };
  auto shuffle = [&](Value *x, Value *y, ArrayRef<int> mask) {
    return b.CreateShuffleVector(x, y, mask);
  };
  // Interleave pairs of words (0,1) and (2,3) byte by byte, then take
  // halves: two byte permutes (prmt) per output word.
  Value *lo01 = shuffle(asBytes(in[0]), asBytes(in[1]), {0, 4, 1, 5});
  Value *hi01 = shuffle(asBytes(in[0]), asBytes(in[1]), {2, 6, 3, 7});
  Value *lo23 = shuffle(asBytes(in[2]), asBytes(in[3]), {0, 4, 1, 5});
  Value *hi23 = shuffle(asBytes(in[2]), asBytes(in[3]), {2, 6, 3, 7});
  SmallVector<Value *, 4> out;
  for (auto [x, y] : {std::pair(lo01, lo23), std::pair(hi01, hi23)}) {
    out.push_back(b.CreateBitCast(shuffle(x, y, {0, 1, 4, 5}), b.getInt32Ty()));
    out.push_back(b.CreateBitCast(shuffle(x, y, {2, 3, 6, 7}), b.getInt32Ty()));
  }
  return out;
}
} // namespace

void fmhajit::emitFp8TransposeValues(IRBuilderBase &b,
                                     const WgmmaLayout &layout, Value *src,
                                     Value *dst, Value *thread) {
  const SharedTile &from = layout.stagedValues, &to = layout.values;
  unsigned keys = from.rows, columns = from.pitch;
  // A pass's lanes take `spread` key groups (8, or all of them when fewer).
  unsigned groups = keys / 16, spread = std::min(8u, groups);
  assert(groups % spread == 0 && columns % 32 == 0 && "WgmmaLayout::checkFp8");
  auto c = [&](unsigned v) { return b.getInt32(v); };
  Value *lane = b.CreateAnd(thread, c(31));
  Value *h = b.CreateLShr(lane, 2), *t = b.CreateAnd(lane, c(3));
  unsigned words = columns / 32, passes = groups * words;
  unsigned warps = kTransposerThreads / 32;
  emitFor(b, b.CreateLShr(thread, 5), c(passes), c(warps), "vt", [&](Value *p) {
    Value *u = b.CreateURem(p, c(spread));
    Value *rest = b.CreateUDiv(p, c(spread));
    Value *v = b.CreateURem(rest, c(words));
    Value *group =
        b.CreateAdd(b.CreateMul(b.CreateUDiv(rest, c(words)), c(spread)),
                    b.CreateURem(b.CreateAdd(h, u), c(spread)));
    Value *word = b.CreateAdd(b.CreateMul(v, c(8)), h);
    // Keys pi(4t..4t+3) of the group: 2t, 2t+1, 2t+8, 2t+9.
    Value *firstKey = b.CreateAdd(b.CreateMul(group, c(16)), b.CreateShl(t, 1));
    SmallVector<Value *, 4> rows;
    for (unsigned key : {0u, 1u, 8u, 9u})
      rows.push_back(b.CreateAlignedLoad(
          b.getInt32Ty(),
          swizzledByte(b, layout, from, src, b.CreateAdd(firstKey, c(key)),
                       b.CreateShl(word, 2)),
          Align(4)));
    SmallVector<Value *, 4> columnsOut = transposeBytes(b, rows);
    Value *slotByte = b.CreateAdd(b.CreateMul(group, c(16)), b.CreateShl(t, 2));
    for (unsigned j = 0; j < 4; ++j) {
      Value *row = b.CreateAdd(b.CreateShl(word, 2), c(j));
      b.CreateAlignedStore(columnsOut[j],
                           swizzledByte(b, layout, to, dst, row, slotByte),
                           Align(4));
    }
  });
}
