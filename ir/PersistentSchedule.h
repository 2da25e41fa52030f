//===- PersistentSchedule.h - The order persistent blocks take work items -===//
//
// A persistent kernel (walksWorkItems) runs a grid of G blocks that take
// work items in rounds of G positions of the schedule's order; every role
// of a block computes the same positions, so they agree without talking.
//
// Without a causal mask every item costs the same: round r gives block c
// position r * G + c, and position p is item total-1-p (WorkItem.h's
// numbering from the end), so the blocks of one round hold neighbouring
// query tiles of a few heads, which share K and V in L2.
//
// Under causal and causal_br a query tile's cost grows with its index. The
// items are cut into sections of heads (over batch and head), as many as
// the launch says (KernelArgs::sectionHeads: heads whose K and V stay in
// L2 while the section runs), and each section runs in rounds of its own.
// Inside a section the order lists tiles from the last (dearest) to the
// first, each over the section's heads, and odd rounds run backwards
// (block c takes position r * G + G - 1 - c): the "snake" pairs each
// block's dear item with a cheap one, so the blocks of a section finish
// together. A section's positions start afresh: a snake that ran on across
// sections would pair a dear tail with the next section's dear head
// (measured on the H100: up to 36% slower than a block per item at
// d = 256, S = 16384). The direction alternates with the walk's round, not
// the section's, so sections of one round alternate too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

class PersistentSchedule {
public:
  /// The schedule of \p total (i32) work items over a grid of \p grid
  /// (i32) blocks.
  PersistentSchedule(const KernelSpec &spec, llvm::IRBuilderBase &b,
                     ArgsReader &p, llvm::Value *total, llvm::Value *grid);

  /// A block's walk carries one i32 cursor from round to round: the
  /// round, or without sections the block's position in it (which keeps
  /// the 160-register d = 64 consumers from spilling). Its first value for
  /// block \p block, the next one, and whether the walk goes on.
  llvm::Value *firstCursor(llvm::Value *block);
  llvm::Value *nextCursor(llvm::Value *cursor);
  llvm::Value *walks(llvm::Value *cursor);

  /// Block \p block's item at \p cursor (both i32): whether it has one
  /// (i1), and which (i64, WorkItem.h's numbering).
  std::pair<llvm::Value *, llvm::Value *> workItem(llvm::Value *cursor,
                                                   llvm::Value *block);

private:
  llvm::Value *divideUp(llvm::Value *x, llvm::Value *y);

  const KernelSpec &spec;
  llvm::IRBuilderBase &b;
  ArgsReader &p;
  llvm::Value *total, *grid;
  llvm::Value *tiles = nullptr, *heads = nullptr, *perSection = nullptr;
  llvm::Value *sectionRounds = nullptr;
};

} // namespace fmhajit
