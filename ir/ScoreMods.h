//===- ScoreMods.h - Soft-cap, ALiBi and the mask on a tile of scores -----===//
//
// What happens to S = Q K^T between the product and the softmax, written once
// in the tile vocabulary for every family that recomputes scores. Scores are
// in log2 units (Q carries scale*log2e) so the softmax can use exp2; soft-cap,
// ALiBi and the elementwise bias are applied in those units too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/TargetInfo.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include <utility>

namespace fmhajit {

/// The mask's visible band around the diagonal: key j is visible to query i
/// iff j < sk, j <= i + offset + right (if upper) and j >= i + offset - left
/// (if lower).
struct Band {
  bool upper = false, lower = false;
  llvm::Value *offset = nullptr, *right = nullptr, *left = nullptr; ///< i32
};

/// The query tokens of a tile's first and last valid rows (i32): the key
/// range and the mask's edge tests follow them.
struct TileTokens {
  llvm::Value *first, *last;
};

class ScoreMods {
public:
  ScoreMods(const KernelSpec &spec, TargetInfo &target, llvm::IRBuilderBase &b,
            ArgsReader &p, TileOps &ops);

  /// The band of \p item's mask (none: no edges).
  Band band(const WorkItem &item);
  /// The keys the rows of \p tokens may see under \p band: [begin, end)
  /// (i32), within the item's keys.
  std::pair<llvm::Value *, llvm::Value *>
  keyRange(const WorkItem &item, const Band &band, const TileTokens &tokens);
  /// Soft-cap, then ALiBi or the elementwise bias (one key, bias), then the
  /// variant's score_mod, then the mask
  /// (the spec's and the variant's mask_mod), on the scores of keys j0.. of
  /// \p item's query tile. \p maskModFull (i1, or null: unknown) says the
  /// block map found mask_mod true on all of the tile: then only the
  /// spec's mask and the end of the keys may need the per-element pass.
  void apply(Tile &scores, const WorkItem &item, const Band &band,
             llvm::Value *j0, const TileTokens &tokens,
             llvm::Value *maskModFull = nullptr);
  /// Whether the kernel's module has the variant's mask_mod.
  bool hasMaskMod() const { return maskMod != nullptr; }
  /// Whether apply() changes scores other than by masking them (soft-cap,
  /// ALiBi, a bias, a score_mod): those need S already scaled, so the
  /// softmax cannot apply the scale itself.
  bool changesScores() const {
    return spec.softcap || spec.bias != Bias::None || scoreMod != nullptr;
  }
  /// apply() in two halves, for the backward, which takes the soft-cap's
  /// derivative between them: the soft-cap, x -> c * log2e * tanh(x / c)
  /// (only under softcap=1), then ALiBi or the elementwise bias and the mask.
  void applySoftcap(Tile &scores);
  void applyBiasAndMask(Tile &scores, const WorkItem &item, const Band &band,
                        llvm::Value *j0, const TileTokens &tokens,
                        llvm::Value *maskModFull = nullptr);

private:
  /// The user's score_mod on every score (docs/variants.md): in natural
  /// units, so x -> score_mod(x ln 2, b, h, q, k) log2 e.
  void applyScoreMod(Tile &scores, const WorkItem &item, llvm::Value *j0);
  /// The last argument of the variant's functions: the address of
  /// KernelArgs::variantTensors (ir/VariantTensorReads.h).
  llvm::Value *variantTensors();
  /// The (b, h, q, k) arguments of the variant's functions for the element
  /// at (\p row, \p col) of the tile of keys j0.. (i32, shaped like row).
  struct Position {
    llvm::Value *b, *h, *q, *k;
  };
  Position position(llvm::IRBuilderBase &b, const WorkItem &item,
                    llvm::Value *row, llvm::Value *col, llvm::Value *j0);
  void applyAlibi(Tile &scores, const WorkItem &item, llvm::Value *j0);
  void applyMask(Tile &scores, const WorkItem &item, const Band &band,
                 llvm::Value *j0, const TileTokens &tokens,
                 llvm::Value *maskModFull);
  /// Under pack_gqa: the ALiBi slope of tile row \p row's head (\p row: i32,
  /// scalar or vector), times log2e.
  llvm::Value *alibiSlopeLog2(const WorkItem &item, llvm::Value *slopes,
                              llvm::Value *row);
  llvm::Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value *f32(double v) {
    return llvm::ConstantFP::get(b.getFloatTy(), v);
  }

  const KernelSpec &spec;
  TargetInfo &target;
  llvm::IRBuilderBase &b;
  ArgsReader &p;
  TileOps &ops;
  /// The variant's functions, linked into the kernel's module (ir/Variant.h).
  llvm::Function *scoreMod = nullptr, *maskMod = nullptr;
};

} // namespace fmhajit
