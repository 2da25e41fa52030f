//===- PersistentSchedule.cpp - The order persistent blocks take items ----===//
#include "ir/PersistentSchedule.h"
#include "specs/KernelSpec.h"
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;
using namespace llvm;

PersistentSchedule::PersistentSchedule(const KernelSpec &spec, IRBuilderBase &b,
                                       ArgsReader &p, Value *total, Value *grid)
    : spec(spec), b(b), p(p), total(total), grid(grid) {
  if (!sortsWorkItemsByCost(spec))
    return;
  tiles = p.get(kNumQTiles);
  heads = b.CreateUDiv(total, tiles, "heads");
  // At least 1 and at most all of them: 32-bit arithmetic only, as the
  // producer walks with 32 registers.
  Value *asked = p.get(kSectionHeads);
  Value *atLeastOne = b.CreateSelect(b.CreateICmpSLT(asked, b.getInt32(1)),
                                     b.getInt32(1), asked);
  perSection = b.CreateSelect(b.CreateICmpULT(atLeastOne, heads), atLeastOne,
                              heads, "section.heads");
  sectionRounds = divideUp(b.CreateMul(perSection, tiles), grid);
}

Value *PersistentSchedule::firstCursor(Value *block) {
  return sortsWorkItemsByCost(spec) ? b.getInt32(0) : block;
}

Value *PersistentSchedule::nextCursor(Value *cursor) {
  return b.CreateNSWAdd(cursor,
                        sortsWorkItemsByCost(spec) ? b.getInt32(1) : grid);
}

Value *PersistentSchedule::walks(Value *cursor) {
  if (!sortsWorkItemsByCost(spec))
    return b.CreateICmpSLT(cursor, total);
  Value *rounds = b.CreateMul(divideUp(heads, perSection), sectionRounds);
  return b.CreateICmpSLT(cursor, rounds);
}

Value *PersistentSchedule::divideUp(Value *x, Value *y) {
  return b.CreateUDiv(b.CreateAdd(x, b.CreateSub(y, b.getInt32(1))), y);
}

// Section s = round / R holds heads [s * H, s * H + h') (h' = H, or fewer
// in the last section); its round r = round % R gives block c position
//   q = r * G + c  (round even)   or   r * G + G - 1 - c  (round odd)
// which is the section's tile tiles-1 - q / h' of head s * H + q % h'.
std::pair<Value *, Value *> PersistentSchedule::workItem(Value *cursor,
                                                         Value *block) {
  if (!sortsWorkItemsByCost(
          spec)) { // the cursor is the position, and walks() held
    Value *work = b.CreateSub(b.CreateSub(total, b.getInt32(1)), cursor);
    return {b.getTrue(), b.CreateZExt(work, b.getInt64Ty(), "work")};
  }
  Value *round = cursor;
  Value *section = b.CreateUDiv(round, sectionRounds);
  Value *r = b.CreateURem(round, sectionRounds);
  Value *odd = b.CreateICmpNE(b.CreateAnd(round, b.getInt32(1)), b.getInt32(0),
                              "round.odd");
  Value *reversed = b.CreateSub(b.CreateSub(grid, b.getInt32(1)), block);
  Value *q = b.CreateAdd(b.CreateMul(r, grid),
                         b.CreateSelect(odd, reversed, block), "position");
  Value *firstHead = b.CreateMul(section, perSection);
  Value *left = b.CreateSub(heads, firstHead);
  Value *here = b.CreateSelect(b.CreateICmpULT(left, perSection), left,
                               perSection, "heads.here");
  Value *valid = b.CreateICmpULT(q, b.CreateMul(here, tiles));
  Value *tile = b.CreateSub(b.CreateSub(tiles, b.getInt32(1)),
                            b.CreateUDiv(q, here), "tile");
  Value *head = b.CreateAdd(firstHead, b.CreateURem(q, here), "head");
  return {valid, b.CreateZExt(b.CreateAdd(b.CreateMul(head, tiles), tile),
                              b.getInt64Ty(), "work")};
}
