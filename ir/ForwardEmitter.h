//===- ForwardEmitter.h - The forward recipes' emitter -------------------===//
//
// The emitter behind the forward families (ir/ForwardKernel.h), declared
// once for the files that define it: ForwardKernel.cpp (the work item, its
// tile and the rows it reads), ForwardKeyLoops.cpp (the walk over key tiles
// and the online softmax) and ForwardEpilogue.cpp (O, the LSE and the
// split-KV partials). ForwardKernel.cpp's comment tells the recipe.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Dropout.h"
#include "ir/KernelAbiIR.h"
#include "ir/KeyTiles.h"
#include "ir/Loops.h"
#include "ir/PagedRows.h"
#include "ir/ScoreMods.h"
#include "ir/TargetInfo.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include "specs/KernelSpec.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IRBuilder.h"
#include <cmath>
#include <memory>
#include <optional>

namespace fmhajit {

/// fp8's P = 2^(s - m + kFp8ProbabilityShift): see the file comment.
inline constexpr double kFp8ProbabilityShift = 6;
/// How far (log2 units) a tile must raise a row's max before m moves and O
/// is rescaled: P stays below 2^threshold. fp8's P also carries
/// 2^kFp8ProbabilityShift and must stay below e4m3's largest value, 448.
inline constexpr double kRescaleThreshold = 8;
inline constexpr double kFp8RescaleThreshold = 2;
static_assert(kFp8ProbabilityShift + kFp8RescaleThreshold <= 8,
              "fp8's P would pass e4m3's 448");

/// One query tile's walk over its key tiles (a range, or the block map's
/// list: KeyTiles.h): its tiles and the online softmax's running max m and
/// sum l.
struct KeyWalk {
  const WorkItem &s;
  Band mask;
  TileTokens tokens;
  KeyTiles keys;
  Tile q, kT, v, scores, out;
  RowVec m, l;
  /// The scale P = 2^(s * scoreScale - m) applies, or null where S is
  /// scaled already (score modifiers need it so).
  llvm::Value *scoreScale;
  /// Under fwd_paged: K's and V's rows through the block table; kvRows()
  /// hands them to the loads by reference.
  PagedRows pagedK{}, pagedV{};
  /// Under dropout=1: the keep-mask applied to each tile's P.
  std::optional<TileDropout> dropout{};
};

class ForwardEmitter {
public:
  ForwardEmitter(const KernelSpec &spec, TargetInfo &target,
                 llvm::IRBuilderBase &b, llvm::Value *params)
      : spec(spec), target(target), b(b), p(b, params),
        ops(target.createTileOps(b)), mods(spec, target, b, p, *ops),
        splits(spec.family == Family::FwdSplitKv ||
               spec.family == Family::FwdPaged),
        paged(spec.family == Family::FwdPaged), tail(splitsTail(spec)) {}

  void emitWorkItem(llvm::Value *workItem);

private:
  PagedRows pagedRows(const WorkItem &s, KernelArgsField pool,
                      KernelArgsField strides);
  llvm::Value *rowsOf(KernelArgsField tensor, KernelArgsField strides,
                      llvm::Value *batch, llvm::Value *row, llvm::Value *head,
                      DType dtype) {
    return tensorRow(b, p, spec.varlen, tensor, strides, batch, row, head,
                     dtype);
  }
  void emitTile(const WorkItem &s);
  void restrictToSplit(const WorkItem &s, KeyTiles &keys);
  /// The keys of the tile at \p j0: bn, or fewer at the end of the keys.
  llvm::Value *keysAt(const WorkItem &s, llvm::Value *j0) {
    return signedMin(b, i32(spec.bn), b.CreateSub(s.sk, j0));
  }
  /// The batch coordinate of \p s's tensor-map boxes (0 under varlen).
  llvm::Value *boxBatch(const WorkItem &s);
  /// The rows of K (\p tensor = kK) or V from key \p j0 on.
  GlobalRows kvRows(KeyWalk &w, KernelArgsField tensor, llvm::Value *j0);
  void emitKeyLoop(KeyWalk &w);
  void emitOverlappedKeyLoop(KeyWalk &w);
  /// Turns \p scores into P and updates m and l; returns the factor O's
  /// rows must be rescaled by before P V is added.
  RowVec emitOnlineSoftmax(KeyWalk &w);
  void emitEpilogue(const WorkItem &s, Tile &out, RowVec &m, RowVec &l,
                    llvm::Value *rows);
  void storeOutputs(const WorkItem &s, Tile &out, RowVec &lse,
                    llvm::Value *rows);
  void storePartials(const WorkItem &s, Tile &out, RowVec &lse,
                     llvm::Value *rows);
  /// Where \p partial, a part of a split tail item (ForwardTail.cpp):
  /// stores its partials, and where it is the item's last part to finish,
  /// folds the others' in. Returns whether the outputs are to be stored
  /// (i1): a whole item's, or the last part's.
  llvm::Value *finishTailPart(const WorkItem &s, Tile &out, RowVec &lse,
                              llvm::Value *rows, llvm::Value *partial);
  /// Folds the other parts of tail item \p item (i32) into \p out and
  /// \p lse (each part's O divided by its own sum, and its LSE), which hold
  /// part \p split's. The part's index comes from its slot again: the
  /// WorkItem's would stay live in a register through the key loop.
  void foldOtherParts(llvm::Value *split, llvm::Value *item, Tile &out,
                      RowVec &lse, llvm::Value *rows);
  /// Part \p slot's partial rows of the tile: O (dv floats a row) or the
  /// LSE.
  GlobalRows tailPartials(llvm::Value *slot, bool lse);
  /// \p tensor's rows of the item's query tile ([batch, token, head] with
  /// \p strides).
  QueryTileRows queryRows(const WorkItem &s, KernelArgsField tensor,
                          KernelArgsField strides, DType dtype);
  /// LSE-shaped rows (the LSE, the partials) of the tile in \p base, each
  /// \p width floats, the tile's first at row \p rowIndex.
  QueryTileRows lseRows(const WorkItem &s, llvm::Value *base,
                        llvm::Value *rowIndex, unsigned width,
                        llvm::Value *headStride = nullptr);

  llvm::Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value *f32(double v) {
    return llvm::ConstantFP::get(b.getFloatTy(), v);
  }
  /// v, or 0 where v is -inf: keeps exp2(x - m) finite for rows that have
  /// seen no key yet.
  llvm::Value *finiteOrZero(llvm::Value *v) {
    llvm::Value *isNegInf = b.CreateFCmpOEQ(v, splatLike(b, f32(-INFINITY), v));
    return b.CreateSelect(isNegInf, splatLike(b, f32(0), v), v);
  }

  const KernelSpec &spec;
  TargetInfo &target;
  llvm::IRBuilderBase &b;
  ArgsReader p;
  std::unique_ptr<TileOps> ops;
  ScoreMods mods;
  bool splits; ///< the key range may be cut into parts (numSplits)
  bool paged;  ///< K/V rows come through a block table
  bool tail;   ///< the last round's items may be split (KernelArgs::tailParts)
};

} // namespace fmhajit
