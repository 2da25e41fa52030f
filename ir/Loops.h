//===- Loops.h - Counted loops, guarded regions and their bounds ---------===//
//
// emitFor sketch:
//   pre:    br header
//   header: %iv = phi [begin, pre], [%next, latch]; br (%iv < end), body, exit
//   body:   <body(%iv)>; br latch
//   latch:  %next = add nsw %iv, step; br header
//   exit:   (the builder continues here)
// Loop-carried state lives in allocas that SROA promotes to phis at -O3.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// for (iv = begin; iv < end; iv += step) body(iv), signed compare.
void emitFor(llvm::IRBuilderBase &b, llvm::Value *begin, llvm::Value *end,
             llvm::Value *step, const llvm::Twine &name,
             llvm::function_ref<void(llvm::Value *iv)> body);

/// Asks LLVM not to hoist code out of the loop whose latch branch is
/// \p latch (llvm.licm.disable): values computed once per iteration stay
/// there rather than in registers live across the whole loop.
void disableHoisting(llvm::BranchInst *latch);

/// emitFor whose body threads values through the iterations as phis (for
/// accumulators that must stay in registers): body(iv, current) returns the
/// next values; the result is the values after the last iteration.
llvm::SmallVector<llvm::Value *, 16>
emitForCarried(llvm::IRBuilderBase &b, llvm::Value *begin, llvm::Value *end,
               llvm::Value *step, const llvm::Twine &name,
               llvm::ArrayRef<llvm::Value *> initial,
               llvm::function_ref<llvm::SmallVector<llvm::Value *, 16>(
                   llvm::Value *iv, llvm::ArrayRef<llvm::Value *> current)>
                   body);

/// for (iv = 0; iv < count; ++iv) over constants, emitted as a loop.
void emitFor(llvm::IRBuilderBase &b, unsigned count, const llvm::Twine &name,
             llvm::function_ref<void(llvm::Value *iv)> body);

/// if (cond) then(); the builder continues after the region.
void emitIf(llvm::IRBuilderBase &b, llvm::Value *cond, const llvm::Twine &name,
            llvm::function_ref<void()> then);

/// if (cond) then(); else otherwise(); the builder continues after.
void emitIfElse(llvm::IRBuilderBase &b, llvm::Value *cond,
                const llvm::Twine &name, llvm::function_ref<void()> then,
                llvm::function_ref<void()> otherwise);

/// The smaller (larger) of two signed integers: clamps a tile's rows or
/// keys to what is left of the sequence, and a loop's range to a band.
inline llvm::Value *signedMin(llvm::IRBuilderBase &b, llvm::Value *x,
                              llvm::Value *y) {
  return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
}
inline llvm::Value *signedMax(llvm::IRBuilderBase &b, llvm::Value *x,
                              llvm::Value *y) {
  return b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
}

/// An alloca in the function's entry block, so that SROA can promote it.
llvm::AllocaInst *entryAlloca(llvm::IRBuilderBase &b, llvm::Type *type,
                              const llvm::Twine &name, unsigned align = 0,
                              unsigned count = 1);

} // namespace fmhajit
