//===- NvptxTimeline.h - Clock stamps of block 0's warpgroups -------------===//
//
// A profiling aid for the wgmma forward (EmitOptions::timeline, set by
// FMHAJIT_TIMELINE): the first thread of each consumer warpgroup of block 0
// writes a word per event into the module global fmhajit_timeline,
// kTimelineEvents a warpgroup, each (warpgroup << 56) | (event << 48) |
// (%clock64 & 2^48 - 1). Every launch starts again at its first slot, so
// after a run the global holds the last launch's events; `fmhajit run`
// writes them out (docs/bench.md). A stamp is a clock read, a compare and
// a store: block 0's schedule moves little.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// The events stamped, in the order a key tile meets them.
enum class TimelineEvent : unsigned {
  TurnWait = 1,    ///< before waiting for the warpgroup's turn
  Issue = 2,       ///< the turn taken: the products start issuing
  Issued = 3,      ///< the products issued
  ScoresReady = 4, ///< S = Q K^T complete (the softmax can start)
  OutputReady = 5, ///< O += P V complete
};

/// The global's name and its words per warpgroup.
inline constexpr const char *kTimelineGlobal = "fmhajit_timeline";
inline constexpr unsigned kTimelineEvents = 2048;
inline constexpr unsigned kTimelineGroups = 4;

/// Writes \p event for warpgroup \p group (i32) when this thread is the
/// first of its warpgroup in block 0; \p counter is an i32 alloca in the
/// kernel's entry block, set to 0 there (timelineCounter).
void emitTimelineStamp(llvm::IRBuilderBase &b, llvm::Value *counter,
                       llvm::Value *group, TimelineEvent event);

/// The per-thread event counter: an i32 alloca at the start of \p fn's
/// entry block, stored 0 there (SROA makes it a register).
llvm::Value *timelineCounter(llvm::Function &fn);

/// Split-KV's kernels under EmitOptions::timeline also stamp every block's
/// start (past its wait for the kernel before it) and end, by
/// %globaltimer (ns, one clock for all multiprocessors), into the module
/// global fmhajit_block_times: words 2b and 2b + 1 for block b, for the
/// first kBlockTimesBlocks blocks. A decode call's time beside its bytes is
/// in its ramp and tail, which block 0's cycles cannot show.
inline constexpr const char *kBlockTimesGlobal = "fmhajit_block_times";
inline constexpr unsigned kBlockTimesBlocks = 4096;
enum class BlockEvent : unsigned { Start = 0, End = 1 };

/// Writes \p event's %globaltimer for this block from its thread 0.
void emitBlockTimeStamp(llvm::IRBuilderBase &b, BlockEvent event);

} // namespace fmhajit
