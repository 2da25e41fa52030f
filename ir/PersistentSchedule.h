//===- PersistentSchedule.h - The order persistent blocks take work items -===//
//
// A persistent kernel (walksWorkItems) runs a grid of G blocks that take
// work items in rounds: in round r, block c takes the item at position
//   r * G + c                  (r even, or items that all cost the same)
//   r * G + (G - 1 - c)        (r odd, where items differ in cost)
// of the schedule's order, and skips positions past the last item. Every
// role of a block computes the same positions, so they agree without
// talking.
//
// The order. Without a causal mask every item costs the same, and position
// p is item total-1-p (WorkItem.h's numbering from the end): the blocks of
// one round hold neighbouring query tiles of a few heads, which share K
// and V in L2. Under causal and causal_br a query tile's cost grows with
// its index, so the order sorts items by cost within sections of heads:
// section s holds heads [s * H, (s + 1) * H) (over batch and head), H as
// many as keep K and V within kSectionBytes of L2, and lists their tiles
// from the last (dearest) to the first, each tile over the section's
// heads. Reversing every other round then pairs a dear item with a cheap
// one for each block (the LPT-like "snake"), so the blocks finish together.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

class PersistentSchedule {
public:
  /// K and V bytes of the heads one section of the causal order holds:
  /// about two thirds of an H100's 50 MB L2.
  static constexpr int64_t kSectionBytes = 32ll << 20;

  PersistentSchedule(const KernelSpec &spec, llvm::IRBuilderBase &b,
                     ArgsReader &p)
      : spec(spec), b(b), p(p) {}

  /// Whether items differ in cost (causal masks): then rounds alternate
  /// direction and the order sorts by cost.
  bool balancesCost() const;
  /// The position (i32) block \p block (i32) of \p grid takes in the round
  /// starting at position \p roundStart (i32).
  llvm::Value *position(llvm::Value *roundStart, llvm::Value *block,
                        llvm::Value *grid);
  /// The work item (i64, WorkItem.h's numbering) at \p position (i32),
  /// of \p total (i32).
  llvm::Value *workItem(llvm::Value *position, llvm::Value *total);

private:
  /// Heads (batch x head pairs) per section of the causal order (i32).
  llvm::Value *sectionHeads(llvm::Value *heads);

  const KernelSpec &spec;
  llvm::IRBuilderBase &b;
  ArgsReader &p;
};

} // namespace fmhajit
