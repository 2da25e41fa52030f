//===- NvptxPartialMarks.h - Split-KV parts marked as they land -*- C++ -*-===//
//
// On sm_90a a split-KV call's combine launches while its split kernel runs
// (programmatic launch: NvptxTarget.cpp), once every split block has
// started. Rather than wait for the whole split kernel to finish
// (griddepcontrol.wait), it may wait for just the parts it folds: each
// consumer warpgroup of a split block, once it has stored its rows'
// partials, marks each row with the call's tag (KernelArgs::partialsTag),
// and the combine reads the marks of a step's parts until all of them hold
// the tag.
//   split:   the warpgroup meets (bar.sync); st.release.gpu.b64 [mark], tag
//   combine: ld.relaxed.gpu.b64 of the step's marks, issued together, until
//            every one is the tag; then fence.acq_rel.gpu before the loads
//            of the partials
// Spinning cannot deadlock: every split block has started before the
// combine's first block runs, so each mark it waits for is on its way.
// The tag is unique to the launch because the workspace is the caller's
// memory, never cleared, and may hold an earlier call's marks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Stores \p tag (i64) at \p mark with release semantics at the GPU's
/// scope: the calling thread's earlier stores, and those it has met at a
/// barrier, are visible to a thread that reads the tag there.
void emitPublishMark(llvm::IRBuilderBase &b, llvm::Value *mark,
                     llvm::Value *tag);

/// Spins until every i64 at \p marks holds \p tag, then fences so that
/// what each mark's writer published is visible to the later loads.
/// \p bounded (EmitOptions::boundedWaits): gives up after
/// kBoundedWaitSeconds with a message and a trap.
void emitWaitForMarks(llvm::IRBuilderBase &b,
                      llvm::ArrayRef<llvm::Value *> marks, llvm::Value *tag,
                      bool bounded);

} // namespace fmhajit
