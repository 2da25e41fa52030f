//===- NvptxWgmmaTileOps.h - Tensor-core tiles: wgmma m64nNk16 ------------===//
//
// The forward's tile ops on pipeline wgmma, declared here so that the tile
// with keys as the products' rows (NvptxWgmmaKeyRowsTileOps.cpp) can share
// its ring, loads and product bookkeeping. NvptxWgmmaTileOps.cpp's header
// says how they work.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/NvptxFragmentTileOps.h"
#include "ir/targets/NvptxTimeline.h"
#include "ir/targets/NvptxTma.h"
#include "ir/targets/NvptxWgmma.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <optional>

namespace fmhajit {

class NvptxWgmmaTileOps : public NvptxFragmentTileOps {
public:
  NvptxWgmmaTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                    const WgmmaLayout &layout);

  void mma(Tile &acc, const Tile &a, const Tile &bt) override {
    startProduct(acc, a, bt, /*accumulate=*/true);
    finishProduct(acc);
  }
  void matmul(Tile &acc, const Tile &a, const Tile &bt) override {
    startProduct(acc, a, bt, /*accumulate=*/false);
    finishProduct(acc);
  }
  /// Under stages=2: the producer loads ahead, so products may overlap.
  bool overlapsProducts() const override { return ring.has_value(); }
  void startProduct(Tile &acc, const Tile &a, const Tile &bt,
                    bool accumulate) override;
  void beginProducts() override;
  void endProducts() override;
  void finishProduct(Tile &acc) override;
  /// Under the ring, 16-bit inputs, dv >= 128: the wait on both sides of
  /// an always-taken, warpgroup-uniform branch (ptxas otherwise hoists it
  /// above the softmax, defeating the overlap with O's product), then the
  /// rescale.
  void finishProductScaled(Tile &acc, const RowVec &factor) override;
  void load(Tile &tile, const GlobalRows &src, llvm::Value *valid,
            llvm::Value *scale) override;
  void sync(Tile &tile) override {
    if (ring)
      return acquire(tile);
    waitFor(tile);
  }
  void drain() override {
    if (!ring)
      NvptxFragmentTileOps::drain();
  }
  /// Under the ring: hands Q's slot back to the producer (waiting for Q
  /// first if no product read it, so no copy into it is still in flight).
  void retire(Tile &tile) override;
  /// Under the ring: a warpgroup's count of a split tail item's parts.
  llvm::Value *arrivesLast(llvm::Value *counters, llvm::Value *parts) override;

protected:
  const SharedTile &sharedTile(TileRole role) const override {
    return sharedTileOf(layout, role);
  }
  /// Rows of a shared tile as stored (K^T is stored as K rows), and their
  /// elements.
  unsigned storedRows(const Tile &tile) const {
    return tile.role == TileRole::KeyT ? tile.cols : tile.rows;
  }
  unsigned storedWidth(const Tile &tile) const {
    return tile.role == TileRole::KeyT ? tile.rows : tile.cols;
  }
  /// The address of 16-byte chunk (key, col) in the swizzled slabs.
  llvm::Value *chunkAddress(const Tile &tile, llvm::Value *key,
                            llvm::Value *col) override;
  /// wgmmaDescriptorBase of \p tile's latest load.
  llvm::Value *descriptorBase(const Tile &tile, llvm::Value *extra,
                              const WgmmaOperand &op);
  /// Waits until \p tile's latest load has landed (once per load).
  void acquire(const Tile &tile);
  /// Hands \p tile's ring slot back to the producer (K and V under
  /// stages=2).
  void release(const Tile &tile);
  /// Under the ring and pack_gqa: this warpgroup's rows of Q, copied,
  /// waited for and published to its four warps before load() returns.
  void copyQueryRows(Tile &tile, const GlobalRows &src, llvm::Value *valid);
  /// Where \p tile's latest load sits: its ring slot under stages=2.
  llvm::Value *tileAddress(const Tile &tile);
  /// Consumer warpgroups that take turns issuing products: all of them
  /// under stages=2, where each owns its own rows of every key tile.
  unsigned turnTakers() const { return ring ? spec.warps / 4 : 1; }
  /// EmitOptions::timeline: this thread's count of stamps, else null.
  llvm::Value *stamps = nullptr;
  void stamp(TimelineEvent event) {
    if (stamps)
      emitTimelineStamp(b, stamps, warpgroup(), event);
  }
  /// This thread's warpgroup (i32).
  llvm::Value *warpgroup() {
    return b.CreateLShr(target.threadId(b), b.getInt32(7));
  }
  /// Named barrier 1 + w: warpgroup w's turn (0 is the block barrier).
  llvm::Value *turnBarrier(llvm::Value *group) {
    return b.CreateAdd(group, b.getInt32(1));
  }
  /// Issue (fence, products, commit) without the wait: the accumulators
  /// as the products define them.
  virtual llvm::SmallVector<llvm::Value *, 128>
  queryTimesKeys(const Tile &q, const Tile &kT, unsigned n);
  virtual llvm::SmallVector<llvm::Value *, 128>
  probabilitiesTimesValues(const Tile &s, const Tile &v,
                           llvm::ArrayRef<llvm::Value *> acc, bool accumulate);

  /// A product issued and committed, not yet waited for.
  struct InFlight {
    /// b's ring slot is released once done.
    Tile acc, b;
    /// Its accumulators, until the wait.
    llvm::SmallVector<llvm::Value *, 128> sums;
    /// S's previous values when accumulating.
    llvm::SmallVector<llvm::Value *, 128> old;
    /// S's deferred softmax scale, or null.
    llvm::Value *scale;
    /// Products issued after it (set by takeProduct).
    unsigned younger;
  };
  /// Removes acc's product from those in flight.
  InFlight takeProduct(const Tile &acc);
  /// Waits for \p product, releases its shared operand and stores its
  /// accumulators; may be emitted on several paths.
  void emitFinish(const InFlight &product);

  WgmmaLayout layout;
  /// stages=2: the ring the producer warp fills.
  std::optional<TmaRing> ring;
  /// Tiles acquired since their latest load.
  llvm::SmallPtrSet<llvm::Value *, 4> acquired;
  /// Committed products, oldest first: wgmma groups complete in order.
  llvm::SmallVector<InFlight, 2> inFlight;
};

/// The tile ops of a keysAsRows spec (NvptxWgmmaKeyRowsTileOps.cpp).
std::unique_ptr<TileOps>
createNvptxWgmmaKeyRowsTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                               const WgmmaLayout &layout);

} // namespace fmhajit
