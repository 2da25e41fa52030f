//===- KeyTiles.cpp - The key tiles one query tile walks
//-------------------===//
#include "ir/KeyTiles.h"
#include "ir/Loops.h"

using namespace fmhajit;
using namespace llvm;

bool fmhajit::walksBlockMap(const KernelSpec &spec) {
  return (spec.family == Family::Fwd || spec.family == Family::FwdSplitKv) &&
         !spec.pack_gqa;
}

KeyTiles fmhajit::keyTileRange(IRBuilderBase &b, const KernelSpec &spec,
                               Value *kvBegin, Value *kvEnd) {
  return {kvBegin, kvEnd, int64_t(spec.bn),
          [](Value *pos) { return KeyTile{pos, nullptr}; }};
}

// The query tile's row of the map: the map's strides are 0 where mask_mod
// does not read b or h, so one row serves every sequence or head.
static Value *mapRow(IRBuilderBase &b, ArgsReader &p, const KernelSpec &spec,
                     const WorkItem &item) {
  Value *tile =
      b.CreateZExt(b.CreateUDiv(item.i0, b.getInt32(spec.bm)), b.getInt64Ty());
  Value *offset = b.CreateAdd(
      b.CreateAdd(b.CreateMul(item.b, p.stride(kBlockMapStrides, 0)),
                  b.CreateMul(item.h, p.stride(kBlockMapStrides, 2))),
      b.CreateMul(tile, p.stride(kBlockMapStrides, 1)), "block.row");
  // Not inbounds: with no map the address is computed but never read.
  return b.CreateGEP(b.getInt32Ty(), p.get(kBlockMap), offset);
}

KeyTiles fmhajit::blockMapTiles(IRBuilderBase &b, ArgsReader &p,
                                const KernelSpec &spec, const WorkItem &item,
                                Value *kvBegin, Value *kvEnd) {
  Value *map = p.get(kBlockMap, "block.map");
  Value *hasMap = b.CreateICmpNE(
      map, ConstantPointerNull::get(cast<PointerType>(map->getType())));
  Value *row = mapRow(b, p, spec, item);
  Value *bn = b.getInt32(spec.bn);
  Value *span = b.CreateSub(kvEnd, kvBegin);
  Value *rangeTiles =
      b.CreateSDiv(b.CreateAdd(span, b.getInt32(spec.bn - 1)), bn);
  AllocaInst *count = entryAlloca(b, b.getInt32Ty(), "block.count");
  b.CreateStore(b.CreateSelect(b.CreateICmpSGT(rangeTiles, b.getInt32(0)),
                               rangeTiles, b.getInt32(0)),
                count);
  emitIf(b, hasMap, "block.map", [&] {
    b.CreateStore(b.CreateLoad(b.getInt32Ty(), row, "block.n"), count);
  });
  Value *n = b.CreateLoad(b.getInt32Ty(), count);
  auto at = [&b, hasMap, row, kvBegin, bn, n](Value *pos) {
    AllocaInst *j0 = entryAlloca(b, b.getInt32Ty(), "block.j0");
    AllocaInst *full = entryAlloca(b, b.getInt1Ty(), "block.full");
    b.CreateStore(b.CreateAdd(kvBegin, b.CreateMul(pos, bn)), j0);
    b.CreateStore(b.getFalse(), full);
    // Positions past the last (the recipe's request after the last tile,
    // or a split's empty part) read nothing from the map.
    Value *listed = b.CreateAnd(hasMap, b.CreateICmpSLT(pos, n));
    emitIf(b, listed, "block.entry", [&] {
      Value *at = b.CreateGEP(
          b.getInt32Ty(), row,
          b.CreateAdd(b.CreateSExt(pos, b.getInt64Ty()), b.getInt64(1)));
      Value *entry = b.CreateLoad(b.getInt32Ty(), at, "block.entry");
      b.CreateStore(b.CreateMul(b.CreateAShr(entry, 1), bn), j0);
      b.CreateStore(b.CreateTrunc(entry, b.getInt1Ty()), full);
    });
    return KeyTile{b.CreateLoad(b.getInt32Ty(), j0, "j0"),
                   b.CreateLoad(b.getInt1Ty(), full, "full")};
  };
  return {b.getInt32(0), n, 1, at};
}
