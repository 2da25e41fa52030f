//===- NvptxTma.h - TMA loads and mbarriers on sm_90a, as IR --------------===//
//
// pipeline=wgmma with stages=2 splits a block into consumer warps, which
// compute, and one producer warp, which loads Q, K and V by TMA
// (cp.async.bulk.tensor) straight into the swizzled slabs wgmma reads
// (specs/pipelines/WgmmaLayout.h). K and V each cycle through a ring of
// slots; each slot has two mbarriers:
//   full   the producer arms it with the bytes it will load (expect_tx);
//          the TMA engine completes it when they have landed.
//   empty  one thread of each consumer warpgroup arrives once the
//          warpgroup's product that read the slot has completed; then
//          the producer may reuse it.
// Producer and consumers run the same recipe and count the loads they see,
// so the n-th load of a ring sits in slot n % stages and waits for phase
// (n / stages) % 2 of its barrier on both sides. Q is a ring of one slot:
// the consumers release it after their last S = Q K^T of a work item, so a
// persistent block's producer loads the next item's Q while they finish
// (under pack_gqa the consumers copy Q themselves, and its barriers rest). A
// fresh barrier reports the phase before its first as complete, so the
// producer's first pass over the ring does not wait.
//
// The instructions are inline PTX: one each, no state but the barrier.
//   mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity;
//   cp.async.bulk.tensor.4d.shared::cluster.global.tile
//       .mbarrier::complete_tx::bytes [dst], [map, {c0, c1, c2, c3}], [bar];
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// The 32-bit shared-state-space address of \p ptr (address space 3).
llvm::Value *sharedAddress(llvm::IRBuilderBase &b, llvm::Value *ptr);

/// mbarrier.init with \p count arrivals per phase.
void emitMbarrierInit(llvm::IRBuilderBase &b, llvm::Value *bar, unsigned count);
/// Makes initialized mbarriers visible to the other threads (and the TMA
/// engine); a block barrier must follow.
void emitMbarrierInitFence(llvm::IRBuilderBase &b);
/// One arrival on \p bar.
void emitMbarrierArrive(llvm::IRBuilderBase &b, llvm::Value *bar);
/// One arrival that also expects \p bytes of transactions this phase.
void emitMbarrierExpectBytes(llvm::IRBuilderBase &b, llvm::Value *bar,
                             unsigned bytes);
/// Spins until phase parity \p parity (i32, 0 or 1) of \p bar completes;
/// \p bounded: for at most kBoundedWaitSeconds, then prints which block,
/// thread, phase and barrier gave up, and traps.
void emitMbarrierWait(llvm::IRBuilderBase &b, llvm::Value *bar,
                      llvm::Value *parity, bool bounded);
/// A TMA copy of one box of tensor map \p map (a generic pointer) at
/// \p coords (four i32s, innermost first) to shared \p dst, completing
/// its bytes on \p bar.
void emitTmaLoad(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *map,
                 llvm::ArrayRef<llvm::Value *> coords, llvm::Value *bar);

/// The barriers and ring bookkeeping of one role's tile ops. Counters live
/// in allocas (promoted to registers), so they follow the recipe's loops.
class TmaRing {
public:
  TmaRing(llvm::IRBuilderBase &b, GpuTargetInfo &target,
          const WgmmaLayout &layout, llvm::Value *smem);

  /// Initializes every barrier (thread 0) and publishes them to the block:
  /// called once, before the block splits into producer and consumers.
  static void emitInit(llvm::IRBuilderBase &b, GpuTargetInfo &target);

  /// Where the n-th load of a ring goes and which phase marks it.
  struct Use {
    llvm::Value *slot, *parity; ///< i32
  };
  /// The next load of \p role's ring (Query, KeyT or Value), counting it.
  /// Q's ring has one slot.
  Use next(TileRole role);
  /// The ring's latest load.
  Use latest(TileRole role);

  /// The full and empty barriers of \p role's ring slot \p slot (Q's one
  /// slot whatever \p slot says).
  llvm::Value *full(TileRole role, llvm::Value *slot);
  llvm::Value *empty(TileRole role, llvm::Value *slot);
  /// \p tile's storage in ring slot \p slot (Query has one slot: null).
  llvm::Value *slotAddress(const Tile &tile, llvm::Value *slot);
  /// fp8: where TMA lands V of ring slot \p slot, and the barriers that
  /// hand it from the TMA warp to the transposers and back.
  llvm::Value *stagedAddress(llvm::Value *slot);
  llvm::Value *stagedFull(llvm::Value *slot);
  llvm::Value *stagedEmpty(llvm::Value *slot);
  /// loadsPagedBoxes (16-bit): the producer's own barrier for a partial V
  /// tile, and the phase its next use completes, counting it.
  llvm::Value *tail();
  llvm::Value *nextTailParity();

  /// The loads each role has counted: one [4 x i32] per block (Q, K, V and
  /// the producer's tail waits), set to 0
  /// before the block splits into roles and walks its work items, so that
  /// the ring's phases run on from one item to the next.
  static llvm::Value *emitCounters(llvm::IRBuilderBase &b);

private:
  llvm::Value *counter(TileRole role);
  Use useOf(llvm::Value *n, unsigned slots);
  /// Barrier \p index of the area after the ring.
  llvm::Value *barrier(llvm::Value *index);

  llvm::IRBuilderBase &b;
  const WgmmaLayout &layout;
  unsigned stages;
  llvm::Value *smem, *counters;
};

/// The producer warp's tile ops: load() issues TMA boxes into the ring;
/// every other word is empty, so the recipe's loops and branches run with
/// nothing to compute.
std::unique_ptr<TileOps> createNvptxTmaProducerOps(llvm::IRBuilderBase &b,
                                                   GpuTargetInfo &target);
/// fp8: the tile ops of the producer warpgroup's other three warps, whose
/// load() of V writes the staged tile into the ring slot as V^T
/// (NvptxFp8Transposer.cpp); every other word is empty.
std::unique_ptr<TileOps> createNvptxFp8TransposerOps(llvm::IRBuilderBase &b,
                                                     GpuTargetInfo &target);
/// Named barriers of the ring's block, besides 0 (the block's): 1 + w is
/// consumer warpgroup w's turn on the tensor cores (ping-pong), 4 + w where
/// its warps meet over Q rows they copied (pack_gqa), and the transposers
/// meet at 8.
inline constexpr unsigned kQueryRowsBarrier = 4;
/// Threads of the transposers, and the named barrier they meet at.
inline constexpr unsigned kTransposerThreads = 96;
inline constexpr unsigned kTransposeBarrier = 8;
/// 9 + w: where consumer warpgroup w's warps meet when a part of a split
/// tail item arrives (arrivesLast).
inline constexpr unsigned kTailBarrier = 9;
/// Where the one consumer warpgroup of a tile with keys as rows meets over
/// its row maxima and sums, and over P (NvptxWgmmaKeyRowsTileOps.cpp).
inline constexpr unsigned kKeyRowsBarrier = 12;

/// TileOps::arrivesLast for the calling consumer warpgroup: counts its
/// arrival at counters[w] (i32) and answers whether it was the last of
/// \p parts (i1, the same in the warpgroup's 128 threads).
llvm::Value *emitWarpgroupArrival(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                                  llvm::Value *counters, llvm::Value *parts);

} // namespace fmhajit
