//===- PersistentSchedule.cpp - The order persistent blocks take items ----===//
#include "ir/PersistentSchedule.h"
#include "specs/KernelSpec.h"

using namespace fmhajit;
using namespace llvm;

bool PersistentSchedule::balancesCost() const {
  return spec.mask == Mask::Causal || spec.mask == Mask::CausalBr;
}

Value *PersistentSchedule::position(Value *roundStart, Value *block,
                                    Value *grid) {
  if (!balancesCost())
    return b.CreateAdd(roundStart, block);
  Value *odd =
      b.CreateAnd(b.CreateUDiv(roundStart, grid), b.getInt32(1), "round.odd");
  Value *reversed = b.CreateSub(b.CreateSub(grid, b.getInt32(1)), block);
  return b.CreateAdd(roundStart,
                     b.CreateSelect(b.CreateICmpNE(odd, b.getInt32(0)),
                                    reversed, block));
}

Value *PersistentSchedule::sectionHeads(Value *heads) {
  int64_t rowBytes = int64_t(spec.d + spec.headDimV()) * dtypeBytes(spec.dtype);
  Value *headBytes = b.CreateMul(b.CreateSExt(p.get(kSeqlenK), b.getInt64Ty()),
                                 b.getInt64(rowBytes));
  Value *fit = b.CreateUDiv(
      b.getInt64(kSectionBytes),
      b.CreateSelect(b.CreateICmpUGT(headBytes, b.getInt64(0)), headBytes,
                     b.getInt64(1)));
  Value *clamped = b.CreateSelect(b.CreateICmpULT(fit, b.getInt64(1)),
                                  b.getInt64(1), fit);
  Value *all = b.CreateSExt(heads, b.getInt64Ty());
  return b.CreateTrunc(
      b.CreateSelect(b.CreateICmpULT(clamped, all), clamped, all),
      b.getInt32Ty(), "section.heads");
}

// Position p of section s (its first position s * H * tiles): the section's
// t-th dearest tile of its h-th head, for p - first = t * h' + h, with h'
// the section's heads (H, or fewer in the last section).
Value *PersistentSchedule::workItem(Value *position, Value *total) {
  if (!balancesCost())
    return b.CreateZExt(
        b.CreateSub(b.CreateSub(total, b.getInt32(1)), position),
        b.getInt64Ty(), "work");
  Value *tiles = p.get(kNumQTiles);
  Value *heads = b.CreateUDiv(total, tiles, "heads");
  Value *perSection = sectionHeads(heads);
  Value *sectionItems = b.CreateMul(perSection, tiles);
  Value *section = b.CreateUDiv(position, sectionItems);
  Value *firstHead = b.CreateMul(section, perSection);
  Value *left = b.CreateSub(heads, firstHead);
  Value *here = b.CreateSelect(b.CreateICmpULT(left, perSection), left,
                               perSection, "heads.here");
  Value *offset = b.CreateURem(position, sectionItems);
  Value *tile = b.CreateSub(b.CreateSub(tiles, b.getInt32(1)),
                            b.CreateUDiv(offset, here), "tile");
  Value *head = b.CreateAdd(firstHead, b.CreateURem(offset, here), "head");
  return b.CreateZExt(b.CreateAdd(b.CreateMul(head, tiles), tile),
                      b.getInt64Ty(), "work");
}
