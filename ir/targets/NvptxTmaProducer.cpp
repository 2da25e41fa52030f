//===- NvptxTmaProducer.cpp - The producer warpgroup's tile ops -----------===//
//
// Under pipeline=wgmma with stages=2 the producer warpgroup's first warp
// runs the same recipe as the consumers with these ops: a load waits until
// its ring slot is empty, arms the slot's full barrier with the tile's
// bytes and issues one TMA box per swizzled slab (fp8 V: into the slot's
// staging tile, for the transposers); the tensor map zero-fills rows past
// the tensor's end. Loads with no valid rows (the recipe's request past the
// last key tile) issue nothing: no consumer waits for them. Under pack_gqa
// Q's rows are no box, and the consumers copy them (NvptxWgmmaTileOps.cpp):
// its load is nothing here. Under fwd_paged a K/V tile is boxes of pages,
// which the warp's lanes look up and issue side by side
// (NvptxPagedBoxes.h). Every other
// word does nothing, and the recipe's arithmetic around them is dead code.
//
// v_pretranspose (fp8) loads V^T, which a pass wrote before the kernel, by
// TMA like K: its boxes step along the keys.
//
// Otherwise under fp8 the warpgroup's other three warps (the transposers) run
// it too, with the same ops in their other role: a V load waits for the staged
// tile and for the slot's release, writes the slot as V^T
// (NvptxFp8Transpose.h), fences it into the async proxy, meets the other
// transposers at a named barrier, and one thread then marks the slot full
// and the staged tile empty.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxFp8Transpose.h"
#include "ir/targets/NvptxPagedBoxes.h"
#include "ir/targets/NvptxTma.h"
#include "specs/ArchTable.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxTmaProducerOps : public TileOps {
public:
  /// \p transposer: the ops of the fp8 transposers, not of the TMA warp.
  NvptxTmaProducerOps(IRBuilderBase &b, GpuTargetInfo &target, bool transposer)
      : b(b), target(target), spec(target.kernelSpec()),
        layout(spec, *findArch(spec.target)),
        smem(target.sharedMemory(b, layout.bytes())),
        ring(b, target, layout, smem), transposer(transposer) {}

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &) override {
    Value *storage = nullptr;
    if (role == TileRole::Query || role == TileRole::KeyT ||
        role == TileRole::Value)
      storage = b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem,
                                             sharedTile(role).offset);
    return {role, rows, cols, storage};
  }
  RowVec makeRowVec(unsigned rows, const Twine &) override {
    return {rows, nullptr};
  }
  void fill(Tile &, float) override {}
  void fill(RowVec &, float) override {}
  void load(Tile &tile, const GlobalRows &src, Value *valid, Value *) override;
  void mma(Tile &, const Tile &, const Tile &) override {}
  void matmul(Tile &, const Tile &, const Tile &) override {}
  void mmaRescaled(Tile &, const RowVec &, const Tile &,
                   const Tile &) override {}
  void map(Tile &, ElementFn) override {}
  void mapWithRow(Tile &, const RowVec &, WithRowFn) override {}
  void mapWithRowThenSum(Tile &, const RowVec &, WithRowFn, RowVec &) override {
  }
  void reduceRows(const Tile &, RowVec &, bool) override {}
  void mapRows(RowVec &, ArrayRef<const RowVec *>, RowFn) override {}
  void store(const Tile &, const GlobalRows &, Value *) override {}
  void store(const RowVec &, const GlobalRows &, Value *) override {}
  /// The consumers overlap their products, so the recipe's loads come in
  /// that loop's order: the producer must walk the same one.
  bool overlapsProducts() const override { return true; }
  void copy(Tile &, const Tile &) override {}
  /// A split tail item's parts are the consumers' to count and fold.
  Value *arrivesLast(Value *, Value *) override { return b.getFalse(); }

private:
  const SharedTile &sharedTile(TileRole role) const {
    return role == TileRole::Query  ? layout.query
           : role == TileRole::KeyT ? layout.keys
                                    : layout.values;
  }
  /// fwd_paged's K or V tile (NvptxPagedBoxes.h) into \p dst, completing
  /// on \p full: lane \p lane's box at its \p page, and a partial V tile
  /// zeroed past the sequence's end before \p full is marked.
  void issuePagedTile(TileRole role, const SharedTile &shape,
                      const TensorBox &box, Value *dst, Value *full,
                      Value *page, Value *lane, Value *valid, bool staged);
  /// The kernel parameter's tensor map that \p box is a box of.
  Value *tensorMap(const TensorBox &box);
  /// The transposers' load: V^T into the ring slot from its staged tile.
  void transposeValues(Tile &tile, Value *valid);
  /// One TMA box per slab of a tile of \p shape, at \p dst, completing on
  /// \p bar. \p keysAlongRows: the tile is V^T, whose box.row (the tile's
  /// first key) is the map's innermost coordinate.
  void issueBoxes(const SharedTile &shape, const TensorBox &box, Value *dst,
                  Value *bar, bool keysAlongRows = false);

  IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  WgmmaLayout layout;
  Value *smem;
  TmaRing ring;
  bool transposer;
};
} // namespace

void NvptxTmaProducerOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                               Value *) {
  // pack_gqa's Q rows are no box: the consumers copy them.
  if (tile.role == TileRole::Query && layout.copiesQueryRows())
    return;
  assert(src.box.map >= 0 && "stages=2 loads only tensor-map boxes");
  if (transposer)
    return transposeValues(tile, valid);
  bool query = tile.role == TileRole::Query;
  // fp8 V lands in the staging tile; the transposers fill the slot.
  bool staged = tile.role == TileRole::Value && layout.transposesValues();
  TmaRing::Use use = ring.next(tile.role);
  Value *lane =
      b.CreateAnd(target.threadId(b), b.getInt32(target.waveSize() - 1));
  emitIf(b, b.CreateICmpSGT(valid, b.getInt32(0)), "tma", [&] {
    // A paged tile's lookups go before the wait, which their latency then
    // overlaps.
    Value *page = src.box.pages
                      ? lookUpBoxPage(b, src.box, spec.bn, valid, lane)
                      : nullptr;
    // The release of this slot's previous tile.
    Value *released =
        staged ? ring.stagedEmpty(use.slot) : ring.empty(tile.role, use.slot);
    emitMbarrierWait(b, released, b.CreateXor(use.parity, b.getInt32(1)),
                     target.options.boundedWaits);
    Value *bar =
        staged ? ring.stagedFull(use.slot) : ring.full(tile.role, use.slot);
    Value *dst = staged ? ring.stagedAddress(use.slot)
                        : ring.slotAddress(tile, query ? nullptr : use.slot);
    const SharedTile &shape =
        staged ? layout.stagedValues : sharedTile(tile.role);
    if (page)
      return issuePagedTile(tile.role, shape, src.box, dst, bar, page, lane,
                            valid, staged);
    // v_pretranspose: the V^T slot's rows are V's columns, its slabs runs
    // of keys (TensorMapBoxes.h).
    bool keysAlongRows =
        tile.role == TileRole::Value && !staged && layout.valuesKMajor();
    emitIf(b, b.CreateICmpEQ(lane, b.getInt32(0)), "tma.issue",
           [&] { issueBoxes(shape, src.box, dst, bar, keysAlongRows); });
  });
}

Value *NvptxTmaProducerOps::tensorMap(const TensorBox &box) {
  return b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), target.tensorMaps,
                                      box.map * sizeof(TensorMaps) /
                                          kNumTensorMaps);
}

void NvptxTmaProducerOps::issueBoxes(const SharedTile &shape,
                                     const TensorBox &box, Value *dst,
                                     Value *bar, bool keysAlongRows) {
  unsigned width = shape.pitch, rows = shape.rows;
  unsigned slabBytes = layout.slabBytes(width);
  unsigned slabElements = slabBytes / shape.elementBytes;
  emitMbarrierExpectBytes(b, bar, shape.bytes());
  Value *map = tensorMap(box);
  auto i32 = [&](Value *v) { return b.CreateTrunc(v, b.getInt32Ty()); };
  for (unsigned slab = 0; slab < width / slabElements; ++slab) {
    Value *column = b.getInt32(slab * slabElements), *row = i32(box.row);
    if (keysAlongRows) // the box's first key moves along the slabs
      std::tie(column, row) =
          std::pair<Value *, Value *>(b.CreateAdd(row, column), b.getInt32(0));
    emitTmaLoad(b,
                b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), dst,
                                             slab * rows * slabBytes),
                map, {column, row, i32(box.head), i32(box.batch)}, bar);
  }
}

void NvptxTmaProducerOps::issuePagedTile(TileRole role, const SharedTile &shape,
                                         const TensorBox &box, Value *dst,
                                         Value *full, Value *page, Value *lane,
                                         Value *valid, bool staged) {
  Value *map = tensorMap(box);
  auto issue = [&](Value *bar) {
    issuePagedBoxes(b, layout, shape, box, map, dst, bar, page, lane);
  };
  // K's rows past the end reach only scores the mask replaces; fp8's
  // staged V is zeroed by the transposers (transposeValues).
  if (role != TileRole::Value || staged)
    return issue(full);
  emitIfElse(
      b, b.CreateICmpSLT(valid, b.getInt32(spec.bn)), "tma.partial",
      [&] {
        Value *parity = ring.nextTailParity();
        issue(ring.tail());
        emitMbarrierWait(b, ring.tail(), parity, target.options.boundedWaits);
        zeroRowsPast(b, layout, shape, dst, valid, lane, target.waveSize());
        // The products read the slot through the async proxy.
        b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
        b.CreateIntrinsic(Intrinsic::nvvm_bar_warp_sync, {b.getInt32(-1)});
        emitIf(b, b.CreateICmpEQ(lane, b.getInt32(0)), "tma.tail.done",
               [&] { emitMbarrierArrive(b, full); });
      },
      [&] { issue(full); });
}

// The transposers are threads 32..127 of the producer warpgroup.
void NvptxTmaProducerOps::transposeValues(Tile &tile, Value *valid) {
  if (tile.role != TileRole::Value)
    return;
  TmaRing::Use use = ring.next(tile.role);
  Value *thread = b.CreateSub(target.threadId(b),
                              b.getInt32(32 * (spec.warps + 1)), "transposer");
  bool bounded = target.options.boundedWaits;
  emitIf(b, b.CreateICmpSGT(valid, b.getInt32(0)), "vt", [&] {
    emitMbarrierWait(b, ring.stagedFull(use.slot), use.parity, bounded);
    emitMbarrierWait(b, ring.empty(tile.role, use.slot),
                     b.CreateXor(use.parity, b.getInt32(1)), bounded);
    if (loadsPagedBoxes(spec)) // a page's rows past the end may hold NaN
      emitIf(b, b.CreateICmpSLT(valid, b.getInt32(spec.bn)), "vt.tail", [&] {
        zeroRowsPast(b, layout, layout.stagedValues,
                     ring.stagedAddress(use.slot), valid, thread,
                     kTransposerThreads);
        b.CreateIntrinsic(
            Intrinsic::nvvm_barrier_cta_sync_aligned_count,
            {b.getInt32(kTransposeBarrier), b.getInt32(kTransposerThreads)});
      });
    emitFp8TransposeValues(b, layout, ring.stagedAddress(use.slot),
                           ring.slotAddress(tile, use.slot), thread);
    // The products read V^T through the async proxy.
    b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
    b.CreateIntrinsic(
        Intrinsic::nvvm_barrier_cta_sync_aligned_count,
        {b.getInt32(kTransposeBarrier), b.getInt32(kTransposerThreads)});
    emitIf(b, b.CreateICmpEQ(thread, b.getInt32(0)), "vt.done", [&] {
      emitMbarrierArrive(b, ring.full(tile.role, use.slot));
      emitMbarrierArrive(b, ring.stagedEmpty(use.slot));
    });
    // The leader's warp meets again before its next aligned instruction
    // (ldmatrix, stmatrix, bar.sync count whole warps): without this, the
    // other lanes could run on to them while the leader is still here.
    b.CreateIntrinsic(Intrinsic::nvvm_bar_warp_sync, {b.getInt32(-1)});
  });
}

std::unique_ptr<TileOps>
fmhajit::createNvptxTmaProducerOps(IRBuilderBase &b, GpuTargetInfo &target) {
  return std::make_unique<NvptxTmaProducerOps>(b, target,
                                               /*transposer=*/false);
}

std::unique_ptr<TileOps>
fmhajit::createNvptxFp8TransposerOps(IRBuilderBase &b, GpuTargetInfo &target) {
  return std::make_unique<NvptxTmaProducerOps>(b, target,
                                               /*transposer=*/true);
}
