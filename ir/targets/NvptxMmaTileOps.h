//===- NvptxMmaTileOps.h - Tensor-core tiles: mma.sync m16n8k16 -*- C++ -*-===//
//
// pipeline=mma's tile ops (NvptxMmaTileOps.cpp says how they work), declared
// here so that the backward's (NvptxBackwardTileOps) can build on them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/NvptxFragmentTileOps.h"
#include "specs/pipelines/MmaLayout.h"

namespace fmhajit {

class NvptxMmaTileOps : public NvptxFragmentTileOps {
public:
  NvptxMmaTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                  const MmaLayout &layout)
      : NvptxFragmentTileOps(b, target, layout.queryTilesPerWarp,
                             layout.bytes()),
        layout(layout) {}

  void mma(Tile &acc, const Tile &a, const Tile &bt) override;

protected:
  const SharedTile &sharedTile(TileRole role) const override {
    return sharedTileOf(layout, role);
  }
  /// Elements from one row of a shared tile to the next (row and padding).
  virtual unsigned pitchOf(const Tile &tile) const {
    return sharedTile(tile.role).pitch;
  }
  /// Address of element (row, col) of a shared tile (for KeyT, a K row).
  llvm::Value *chunkAddress(const Tile &tile, llvm::Value *key,
                            llvm::Value *col) override {
    llvm::Value *index =
        b.CreateAdd(b.CreateMul(key, b.getInt32(pitchOf(tile))), col);
    return b.CreateInBoundsGEP(b.getInt16Ty(), tile.storage, index);
  }
  /// This lane's ldmatrix address in \p tile, at (\p key, \p col) of the
  /// fragment at the tile's origin, hidden from LICM (see fragmentBase).
  llvm::Value *fragmentBase(const Tile &tile, llvm::Value *key,
                            llvm::Value *col);
  /// \p base moved by a constant (\p keys, \p cols) of \p tile.
  llvm::Value *fragmentAt(const Tile &tile, llvm::Value *base, unsigned keys,
                          unsigned cols) {
    return b.CreateConstInBoundsGEP1_32(b.getInt16Ty(), base,
                                        keys * pitchOf(tile) + cols);
  }
  void ldmatrix(llvm::Value *address, bool transposed, llvm::Value *out[4]);
  llvm::SmallVector<llvm::Value *, 4>
  queryFragments(const Tile &q, llvm::Value *base, unsigned i, unsigned kk);
  void mmaStep(llvm::Value *const a[4], llvm::Value *b0, llvm::Value *b1,
               llvm::Value *const c[4], llvm::Value *out[4]);

private:
  MmaLayout layout;
};

} // namespace fmhajit
