//===- NvptxTmaProducer.cpp - The producer warp's tile ops ----------------===//
//
// Under pipeline=wgmma with stages=2 the block's last warp runs the same
// recipe as the consumers with these ops: a load waits until its ring slot
// is empty, arms the slot's full barrier with the tile's bytes and issues
// one TMA box per swizzled slab; the tensor map zero-fills rows past the
// tensor's end. Loads with no valid rows (the recipe's request past the
// last key tile) issue nothing: no consumer waits for them. Every other
// word does nothing, and the recipe's arithmetic around them is dead code.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxTma.h"
#include "specs/ArchTable.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxTmaProducerOps : public TileOps {
public:
  NvptxTmaProducerOps(IRBuilderBase &b, GpuTargetInfo &target)
      : b(b), target(target), spec(target.kernelSpec()),
        layout(spec, *findArch(spec.target)),
        smem(target.sharedMemory(b, layout.bytes())),
        ring(b, target, layout, smem) {}

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

private:
  const SharedTile &sharedTile(TileRole role) const {
    return role == TileRole::Query  ? layout.query
           : role == TileRole::KeyT ? layout.keys
                                    : layout.values;
  }
  /// One TMA box per slab of \p tile's rows, at \p dst, completing on
  /// \p bar.
  void issueBoxes(const Tile &tile, const TensorBox &box, Value *dst,
                  Value *bar);

  IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  WgmmaLayout layout;
  Value *smem;
  TmaRing ring;
};
} // namespace

void NvptxTmaProducerOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                               Value *) {
  assert(src.box.map >= 0 && "stages=2 loads only tensor-map boxes");
  bool query = tile.role == TileRole::Query;
  TmaRing::Use use{};
  if (!query)
    use = ring.next(tile.role);
  Value *lane =
      b.CreateAnd(target.threadId(b), b.getInt32(target.waveSize() - 1));
  emitIf(b, b.CreateICmpSGT(valid, b.getInt32(0)), "tma", [&] {
    if (!query) // the consumers' release of this slot's previous tile
      emitMbarrierWait(b, ring.empty(tile.role, use.slot),
                       b.CreateXor(use.parity, b.getInt32(1)),
                       target.options.boundedWaits);
    Value *bar = query ? ring.queryFull() : ring.full(tile.role, use.slot);
    Value *dst = ring.slotAddress(tile, query ? nullptr : use.slot);
    emitIf(b, b.CreateICmpEQ(lane, b.getInt32(0)), "tma.issue",
           [&] { issueBoxes(tile, src.box, dst, bar); });
  });
}

void NvptxTmaProducerOps::issueBoxes(const Tile &tile, const TensorBox &box,
                                     Value *dst, Value *bar) {
  const SharedTile &shape = sharedTile(tile.role);
  unsigned width = shape.pitch, rows = shape.rows;
  unsigned slabBytes = layout.slabBytes(width);
  unsigned slabElements = slabBytes / shape.elementBytes;
  emitMbarrierExpectBytes(b, bar, shape.bytes());
  Value *map = b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), target.tensorMaps,
                                            box.map * sizeof(TensorMaps) /
                                                kNumTensorMaps);
  auto i32 = [&](Value *v) { return b.CreateTrunc(v, b.getInt32Ty()); };
  for (unsigned slab = 0; slab < width / slabElements; ++slab)
    emitTmaLoad(b,
                b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), dst,
                                             slab * rows * slabBytes),
                map,
                {b.getInt32(slab * slabElements), i32(box.row), i32(box.head),
                 i32(box.batch)},
                bar);
}

std::unique_ptr<TileOps>
fmhajit::createNvptxTmaProducerOps(IRBuilderBase &b, GpuTargetInfo &target) {
  return std::make_unique<NvptxTmaProducerOps>(b, target);
}
