//===- KeyTiles.h - The key tiles one query tile walks -----*- C++ -*-===//
//
// The forward's key loop walks positions [begin, end) in steps of `step`;
// at(pos) says which key tile a position is. Two walks:
//
//   a range (keyTileRange): positions are the keys kvBegin, kvBegin + bn,
//     ... themselves (step bn), and any tile may need mask_mod;
//   a block map (blockMapTiles, for kernels with a variant's mask_mod):
//     positions are indices 0, 1, ... (step 1) into the query tile's row of
//     KernelArgs::blockMap, which lists the tiles the plan found not hidden
//     (runtime/numerics/BlockMask.h); a null map walks the range instead,
//     one index per tile. The row is found and read as
//       %row = gep i32, %args.blockMap, b*batch + h*head + (i0/bm)*row
//       %n   = hasMap ? load %row[0] : ceil((kvEnd - kvBegin) / bn)
//       at(pos): %e = load %row[1 + pos]; j0 = (e >> 1) * bn; full = e & 1
//
// Every role of a kernel (TMA producer, fp8 transposers, consumers) emits
// the same walk from the same arguments, so they agree on the tiles without
// any message: the producer loads the tiles the consumers multiply.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/WorkItem.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/IRBuilder.h"
#include <functional>

namespace fmhajit {

/// One key tile of a walk.
struct KeyTile {
  llvm::Value *j0;   ///< its first key (i32)
  llvm::Value *full; ///< i1: mask_mod shows all of it; null: not known
};

struct KeyTiles {
  llvm::Value *begin, *end; ///< positions (i32)
  int64_t step;
  /// The tile at position \p pos (which may be past the last: then a tile
  /// that the caller reads with no rows).
  std::function<KeyTile(llvm::Value *pos)> at;
};

/// The keys [kvBegin, kvEnd) in tiles of spec.bn.
KeyTiles keyTileRange(llvm::IRBuilderBase &b, const KernelSpec &spec,
                      llvm::Value *kvBegin, llvm::Value *kvEnd);

/// The tiles \p item's query tile walks under its block map (the range
/// [kvBegin, kvEnd) where the call passed none).
KeyTiles blockMapTiles(llvm::IRBuilderBase &b, ArgsReader &p,
                       const KernelSpec &spec, const WorkItem &item,
                       llvm::Value *kvBegin, llvm::Value *kvEnd);

/// Whether \p spec's forward kernel walks a block map when its module has a
/// mask_mod: fwd and fwd_splitkv without pack_gqa. fwd_paged does not (a
/// cache's lengths may grow after plan()), nor does pack_gqa (a tile's rows
/// span heads); they evaluate mask_mod on every tile.
bool walksBlockMap(const KernelSpec &spec);

} // namespace fmhajit
