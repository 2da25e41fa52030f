//===- HostTileOpsAmx.cpp - Host tile products on AMX tiles ---------------===//
//
// The host's products on the tile unit (HostAmx.h says how they run): each
// operand is packed into a bf16 copy that the tile keeps until it is next
// written (HostTileOpsImpl.h), and a Query tile's scale, left pending by
// load(), multiplies the product's result.
//
//===----------------------------------------------------------------------===//
#include "ir/Loops.h"
#include "ir/targets/HostAmx.h"
#include "ir/targets/HostTileOpsImpl.h"

using namespace fmhajit;
using namespace llvm;

void HostTileOps::productOnAmx(Tile &acc, const Tile &a, const Tile &bt,
                               AccStart start) {
  assert(start != AccStart::LoadScaled && "mmaRescaled scales O first");
  Layout layout = layoutOf(acc);
  unsigned M = layout.physRows, N = layout.physCols;
  const Tile &aSrc = layout.transposed ? bt : a;
  bool aT = isTransposed(aSrc.role);
  bool kContiguous = layout.transposed == aT;
  unsigned aStride = aT ? aSrc.rows : aSrc.cols;
  wrote(acc);
  AmxProduct p{acc.storage,
               M,
               N,
               a.cols,
               aSrc.storage,
               kContiguous ? aStride : 1,
               kContiguous ? 1 : aStride,
               layout.transposed ? a.storage : bt.storage,
               liveExtent(acc, !layout.transposed, M, amxBlockRows(M)),
               liveExtent(acc, layout.transposed, N, amxBlockCols(N)),
               start != AccStart::Zero};
  Value *left = packedOperand(aSrc, /*left=*/true, p);
  Value *right = packedOperand(layout.transposed ? a : bt, /*left=*/false, p);
  emitAmxMultiply(b, p, left, right);
  Value *scale = pendingScale.lookup(a.storage);
  if (!scale)
    scale = pendingScale.lookup(bt.storage);
  if (!scale)
    return;
  assert(start == AccStart::Zero &&
         "a pending scale on an accumulated product");
  map(acc, [&](IRBuilderBase &b, Value *, Value *, Value *x) {
    return b.CreateFMul(x, b.CreateVectorSplat(lanes, scale));
  });
}

// A copy packed at a product of the item's first step serves the products
// of its later steps: it is packed whole (not only to the live extent),
// since the live query rows change only with the item, whose loads make it
// stale.
Value *HostTileOps::packedOperand(const Tile &t, bool left,
                                  const AmxProduct &p) {
  auto it = packs.find(t.storage);
  assert(it != packs.end() && "an operand not made by makeTile");
  Packs &cached = it->second;
  PackForm form = !left ? Right : p.strideK == 1 ? LeftAlongK : LeftAlongM;
  std::pair<unsigned, unsigned> shape{left ? p.M : p.K, left ? p.K : p.N};
  auto pack = [&](Value *buffer, const AmxProduct &q) {
    left ? emitAmxPackLeft(b, q, buffer) : emitAmxPackRight(b, q, buffer);
  };
  if (cached.buffer[form] && cached.shape[form] != shape) {
    Value *buffer = left ? amxLeftBuffer(b, p) : amxRightBuffer(b, p);
    pack(buffer, p); // another shape of this form: not kept
    return buffer;
  }
  Value *&buffer = cached.buffer[form];
  if (!buffer) {
    buffer = left ? amxLeftBuffer(b, p) : amxRightBuffer(b, p);
    cached.shape[form] = shape;
  }
  AmxProduct whole = p;
  whole.mEnd = b.getInt64(p.M);
  whole.nEnd = b.getInt64(p.N);
  Value *fresh = cached.fresh[form];
  emitIf(b, b.CreateNot(b.CreateLoad(b.getInt1Ty(), fresh)), "amx.pack", [&] {
    pack(buffer, whole);
    b.CreateStore(b.getTrue(), fresh);
  });
  return buffer;
}

// The forward's K feeds only S^T = K Q^T, as A' read along k, and V only
// O += P V, as B' (productOnAmx). Before, each went bf16 -> the fp32 tile
// -> bf16 in the packed copy, two passes over every element of every step.
void HostTileOps::loadIntoPack(Tile &t, const GlobalRows &src, Value *valid) {
  bool keys = t.role == TileRole::KeyT;
  unsigned rows = keys ? t.cols : t.rows, width = keys ? t.rows : t.cols;
  AmxProduct p{};
  if (keys) {
    p.M = rows;
    p.K = width;
  } else {
    p.K = rows;
    p.N = width;
  }
  PackForm form = keys ? LeftAlongK : Right;
  Packs &cached = packs.find(t.storage)->second;
  Value *&buffer = cached.buffer[form];
  if (!buffer) {
    buffer = keys ? amxLeftBuffer(b, p) : amxRightBuffer(b, p);
    cached.shape[form] = {rows, width};
  }
  assert(cached.shape[form] == std::make_pair(rows, width) &&
         "a K or V tile packed in two shapes");
  emitIfElse(
      b, b.CreateICmpSGE(valid, b.getInt32(rows)), "packed.load",
      [&] {
        auto rowAt = [&](Value *r) { return src.rowPointer(b, r); };
        if (keys)
          emitAmxPackLeftFromRows(b, p, buffer, rowAt);
        else
          emitAmxPackRightFromRows(b, p, buffer, rowAt);
        b.CreateStore(b.getTrue(), cached.fresh[form]);
      },
      [&] { loadEachRow(t, src, valid, nullptr); });
}

Value *HostTileOps::packFlag() {
  AllocaInst *flag = entryAlloca(b, b.getInt1Ty(), "amx.fresh");
  (new StoreInst(b.getFalse(), flag, false, Align(1)))->insertAfter(flag);
  return flag;
}

void HostTileOps::wrote(const Tile &t) {
  auto it = packs.find(t.storage);
  if (it == packs.end())
    return;
  for (Value *fresh : it->second.fresh)
    b.CreateStore(b.getFalse(), fresh);
}
