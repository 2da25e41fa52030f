//===- BackwardEmitter.h - The backward recipes' emitter ------------------===//
//
// The emitter behind the backward's three kernels (ir/BackwardKernel.h),
// declared once for the files that define it: BackwardKernel.cpp (the
// kernels and the two small ones' bodies), BackwardWorkItems.cpp
// (bwd_dq_dk_dv's work items and the tiles they walk) and
// BackwardScoreGrads.cpp (one step's tiles: made, loaded, and S, P, dP, dS).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Dropout.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/ScoreMods.h"
#include "ir/TargetInfo.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/IR/IRBuilder.h"
#include <memory>
#include <optional>
#include <utility>

namespace fmhajit {

/// The tiles one (query tile, key tile) step reads and writes. Both kinds
/// of item share them, so the kernel's frame holds one set.
struct GradTiles {
  Tile q;      ///< Query: Q * scale (* log2e), for S
  Tile dO;     ///< Query [bm][dv]: dO, for dP = dO V^T
  Tile qRows;  ///< QueryRows: Q, for dK += dS^T Q (key items)
  Tile dORows; ///< QueryRows [bm][dv]: dO, for dV += P^T dO (key items)
  Tile kT;     ///< KeyT: K^T
  Tile vT;     ///< KeyT [dv][bn]: V^T
  Tile scores; ///< S, then P
  Tile dP;     ///< dP, then dS
  Tile dTanh;  ///< 1 - tanh^2 of the soft-cap (softcap=1 only)
  Tile dQ;     ///< Output [bm][d], fp32 (query items)
  Tile dK, dV; ///< KeyGrad [bn][d], [bn][dv] (key items)
  RowVec lse;  ///< LSE * log2e of each query row; +inf: the row sees nothing
  RowVec dsum; ///< D = rowsum(dO * O)
};

/// Emits one backward kernel's body for its work item: made per kernel by
/// BackwardKernel.h's emitters, which sketch the IR of each.
class BackwardEmitter {
public:
  BackwardEmitter(const KernelSpec &spec, TargetInfo &target,
                  llvm::IRBuilderBase &b, llvm::Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)), mods(spec, target, b, p, *ops) {}

  void emitDotDoO(llvm::Value *workItem);
  void emitDqDkDv(llvm::Value *workItem);
  void emitConvertDq(llvm::Value *workItem);

private:
  // bwd_dq_dk_dv's work items (BackwardWorkItems.cpp).
  void emitKeyItem(GradTiles &t, llvm::Value *workItem);
  /// dK and dV of key tile \p j0 of \p s's sequence and K/V head.
  void emitKeyTile(GradTiles &t, WorkItem &s, llvm::Value *group,
                   llvm::Value *j0);
  void emitQueryItem(GradTiles &t, llvm::Value *workItem);
  void emitHeadItem(GradTiles &t, llvm::Value *workItem);
  /// Runs \p body(valid rows) for each query tile of each query head of
  /// \p s's K/V head's group, with s.h and s.i0 set to the tile's.
  void forEachGroupQueryTile(WorkItem &s, llvm::Value *group,
                             const llvm::Twine &name,
                             llvm::function_ref<void(llvm::Value *rows)> body);
  /// The query tiles that may see keys [j0, j0 + keys): [begin, end).
  std::pair<llvm::Value *, llvm::Value *> queryRange(const WorkItem &s,
                                                     const Band &band,
                                                     llvm::Value *j0,
                                                     llvm::Value *keys);

  // One step's tiles and gradients (BackwardScoreGrads.cpp).
  GradTiles makeGradTiles();
  /// Where Q, dO, the LSE and D of \p s's query tile come from.
  struct QuerySources {
    GlobalRows q, dO, lse, dsum;
  };
  QuerySources querySources(const WorkItem &s);
  /// Loads Q, dO, LSE and D of the item's tile (\p rows valid), and the
  /// row-major copies key items multiply by.
  void loadQueryTile(GradTiles &t, const WorkItem &s, llvm::Value *rows,
                     bool forKeys);
  /// Announces the next loadQueryTile's rows (TileOps::prefetch).
  void prefetchQueryTile(GradTiles &t, const WorkItem &s, llvm::Value *rows);
  void loadKeyTile(GradTiles &t, const WorkItem &s, llvm::Value *j0,
                   llvm::Value *keys);
  /// S = Q K^T and its modifiers, then P in t.scores and dS in t.dP;
  /// \p whileProductsRun (if set) is emitted once S's product (and where
  /// products overlap, dP's) has started.
  void emitScoreGrads(GradTiles &t, const WorkItem &s, const Band &band,
                      llvm::Value *j0, const TileTokens &tokens,
                      llvm::function_ref<void()> whileProductsRun = nullptr);

  // Where the tensors' rows are, and the scalars the recipe names.
  /// \p tensor's rows from row \p row (i64) of the item's sequence, head
  /// \p head.
  GlobalRows rowsOf(KernelArgsField tensor, KernelArgsField strides,
                    const WorkItem &s, llvm::Value *row, llvm::Value *head,
                    DType dtype) {
    return {
        tensorRow(b, p, spec.varlen, tensor, strides, s.b, row, head, dtype),
        p.stride(strides, 1), dtype};
  }
  /// dQAccum's fp32 rows from row \p row (i64) of the item's head.
  GlobalRows dqAccumRows(const WorkItem &s, llvm::Value *row) {
    return rowsOf(kDQAccum, kDQAccumStrides, s, row, s.h, DType::F32);
  }
  /// Where a head item sums dQ of \p s's query tile in fp32: dQ itself
  /// when it is fp32, else its dQAccum rows (bwdSumsDqInWorkspace).
  GlobalRows dqSumRows(const WorkItem &s) {
    llvm::Value *row = tileQueryRow(b, s);
    if (bwdSumsDqInWorkspace(spec))
      return dqAccumRows(s, row);
    return rowsOf(kDQ, kDQStrides, s, row, s.h, DType::F32);
  }
  /// LSE-shaped rows (the LSE, D) of the item's query tile.
  GlobalRows lseRows(KernelArgsField tensor, const WorkItem &s) {
    llvm::Value *index = lseRowIndex(b, p, spec, s, tileQueryRow(b, s));
    return {b.CreateInBoundsGEP(b.getFloatTy(), p.get(tensor), index),
            b.getInt64(1), DType::F32};
  }
  llvm::Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value *f32(double v) {
    return llvm::ConstantFP::get(b.getFloatTy(), v);
  }
  llvm::Value *sext(llvm::Value *x) { return b.CreateSExt(x, b.getInt64Ty()); }

  const KernelSpec &spec;
  TargetInfo &target;
  llvm::IRBuilderBase &b;
  ArgsReader p;
  std::unique_ptr<TileOps> ops;
  ScoreMods mods;
  std::optional<TileDropout> dropout; ///< dropout=1, made by emitDqDkDv
};

} // namespace fmhajit
