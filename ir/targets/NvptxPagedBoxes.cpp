//===- NvptxPagedBoxes.cpp - A paged cache's K/V tiles in TMA boxes ------===//
#include "ir/targets/NvptxPagedBoxes.h"
#include "ir/Loops.h"
#include "ir/PagedRows.h"
#include "ir/targets/NvptxTma.h"
#include "llvm/ADT/bit.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

// log2 of the rows a box holds: gcd(page size, bn) = min(P, bn's lowest
// set bit) for a power-of-two P (runtime/device/TensorMapBoxes.h's
// pagedBoxRows, which sized the maps' boxes).
static Value *log2BoxRows(IRBuilderBase &b, const PagedRows &pages,
                          unsigned bn) {
  return b.CreateBinaryIntrinsic(Intrinsic::umin, pages.log2Page,
                                 b.getInt32(countr_zero(bn)), {},
                                 "log2.box.rows");
}

Value *fmhajit::lookUpBoxPage(IRBuilderBase &b, const TensorBox &box,
                              unsigned bn, Value *valid, Value *lane) {
  const PagedRows &pages = *box.pages;
  Value *offset = b.CreateShl(lane, log2BoxRows(b, pages, bn), "box.first");
  Value *inTile = b.CreateICmpSLT(offset, valid, "box.in.tile");
  Value *key = b.CreateAdd(b.CreateTrunc(box.row, b.getInt32Ty()), offset);
  Value *slot =
      b.CreateSelect(inTile, b.CreateLShr(key, pages.log2Page), b.getInt32(0));
  Value *page =
      b.CreateLoad(b.getInt32Ty(),
                   b.CreateInBoundsGEP(b.getInt32Ty(), pages.table,
                                       b.CreateZExt(slot, b.getInt64Ty())),
                   "box.page");
  return b.CreateSelect(inTile, page, pages.numPages);
}

void fmhajit::issuePagedBoxes(IRBuilderBase &b, const WgmmaLayout &layout,
                              const SharedTile &shape, const TensorBox &box,
                              Value *map, Value *dst, Value *bar, Value *page,
                              Value *lane) {
  const PagedRows &pages = *box.pages;
  unsigned slabBytes = layout.slabBytes(shape.pitch);
  unsigned slabElements = slabBytes / shape.elementBytes;
  emitIf(b, b.CreateICmpEQ(lane, b.getInt32(0)), "tma.arm",
         [&] { emitMbarrierExpectBytes(b, bar, shape.bytes()); });
  b.CreateIntrinsic(Intrinsic::nvvm_bar_warp_sync, {b.getInt32(-1)});
  Value *offset = b.CreateShl(lane, log2BoxRows(b, pages, shape.rows));
  Value *pageRows =
      b.CreateSub(b.CreateShl(b.getInt32(1), pages.log2Page), b.getInt32(1));
  Value *row = b.CreateAnd(
      b.CreateAdd(b.CreateTrunc(box.row, b.getInt32Ty()), offset), pageRows);
  Value *head = b.CreateTrunc(box.head, b.getInt32Ty());
  Value *boxBytes = b.CreateMul(offset, b.getInt32(slabBytes));
  emitIf(b, b.CreateICmpULT(offset, b.getInt32(shape.rows)), "tma.box", [&] {
    for (unsigned slab = 0; slab < shape.pitch / slabElements; ++slab) {
      Value *at =
          b.CreateAdd(boxBytes, b.getInt32(slab * shape.rows * slabBytes));
      emitTmaLoad(b, b.CreateInBoundsGEP(b.getInt8Ty(), dst, at), map,
                  {b.getInt32(slab * slabElements), row, head, page}, bar);
    }
  });
}

void fmhajit::zeroRowsPast(IRBuilderBase &b, const WgmmaLayout &layout,
                           const SharedTile &shape, Value *dst, Value *valid,
                           Value *thread, unsigned threads) {
  unsigned slabBytes = layout.slabBytes(shape.pitch);
  unsigned slabs = shape.pitch * shape.elementBytes / slabBytes;
  constexpr unsigned kChunkBytes = 16;
  // Each slab's rows valid.. are one run of bytes: the swizzle permutes
  // chunks only within a row.
  Value *perSlab = b.CreateMul(b.CreateSub(b.getInt32(shape.rows), valid),
                               b.getInt32(slabBytes / kChunkBytes));
  Value *skipped = b.CreateMul(valid, b.getInt32(slabBytes));
  Value *zero =
      ConstantAggregateZero::get(FixedVectorType::get(b.getInt32Ty(), 4));
  emitFor(
      b, thread, b.CreateMul(perSlab, b.getInt32(slabs)), b.getInt32(threads),
      "zero.tail", [&](Value *chunk) {
        Value *slab = b.CreateUDiv(chunk, perSlab);
        Value *at = b.CreateAdd(
            b.CreateAdd(b.CreateMul(slab, b.getInt32(shape.rows * slabBytes)),
                        skipped),
            b.CreateMul(b.CreateURem(chunk, perSlab), b.getInt32(kChunkBytes)));
        b.CreateAlignedStore(zero, b.CreateInBoundsGEP(b.getInt8Ty(), dst, at),
                             Align(kChunkBytes));
      });
}
