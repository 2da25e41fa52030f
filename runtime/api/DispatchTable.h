//===- DispatchTable.h - The dispatcher's data: specs/dispatch/*.json -----===//
//
// Each file covers some targets and says (a) which profiles fill their
// registry, (b) the tile table: per pipeline, rows of (max_seqlen_q, max_d,
// optional dtypes and masks) -> tile, the first row that fits a problem wins
// (composable_kernel's seqlen-aware tables), (c) when a problem is
// decode-shaped, (d) when a forward problem packs its GQA groups into tiles
// (pack_gqa), (e) the narrower tiles a split-KV decode takes when the key
// tiles of its table tile cap its part count ("split_tiles", same rows as
// (b); SplitPlanner.h says when). The numbers are data beside the
// measurements that chose them ("notes"), never C++. A target no file names
// gets no rows (the arch defaults) and the "dispatch" profile.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

/// One row of a tile table. warps/stages of 0 take the arch default tile's.
struct TileRow {
  int64_t maxSeqlenQ = INT64_MAX; ///< the row applies up to this query length
  unsigned maxD = 0; ///< ... and up to this head dim (max of d, dv)
  unsigned bm = 0, bn = 0, warps = 0, stages = 0;
  bool vPretranspose = false; ///< "v_pretranspose": true (fp8 forward)
  std::vector<DType> dtypes;  ///< ... and to these dtypes (empty: all)
  std::vector<Mask> masks;    ///< ... and to these masks (empty: all)
  bool serves(int64_t seqlenQ, unsigned d, DType dtype, Mask mask) const;
};

/// When a problem counts as decode: few queries against a long key range.
struct DecodeRule {
  int64_t maxSeqlenQ = 0;
  int64_t minSeqlenK = 0;
};

/// When a forward problem runs pack_gqa kernels: few query tokens per
/// sequence and several query heads per K/V head, so that one tile holds a
/// whole group and the group reads K/V once.
struct PackGqaRule {
  int64_t maxSeqlenQ = 0; ///< the longest query sequence that packs
  int64_t minRatio = 2;   ///< fewest query heads per K/V head that pack
};

/// A tile, fully given.
struct Tile {
  unsigned bm = 0, bn = 0, warps = 0, stages = 0;
  /// The spec's v_pretranspose: fp8's V^T written by a pass (a choice of
  /// the tile table, like the tile's edges).
  bool vPretranspose = false;
  friend bool operator==(const Tile &a, const Tile &b) {
    return a.bm == b.bm && a.bn == b.bn && a.warps == b.warps &&
           a.stages == b.stages && a.vPretranspose == b.vPretranspose;
  }
  /// "m64n64w1s1", or "vpt_m192n96w12s2", as in encoded names.
  std::string str() const;
};

/// The tile of a resolved spec.
Tile tileOf(const KernelSpec &spec);

/// What the table chose for one pipeline and problem, and which row did.
struct TileChoice {
  Tile tile;
  /// The row: "seqlen_q <= 16, d <= 256 (dispatch/host.json)", with the
  /// dtypes and masks it is limited to; or "the arch default for d <= 256".
  std::string row;
};

struct DispatchTable {
  std::string file; ///< "dispatch/host.json", or "" for the built-in default
  std::vector<std::string> profiles;
  std::map<Pipeline, std::vector<TileRow>> tiles;
  /// Rows a split-KV decode (fwd_splitkv, fwd_paged) takes instead of
  /// tiles' when that tile's key tiles cap the part count.
  std::map<Pipeline, std::vector<TileRow>> splitTiles;
  std::optional<DecodeRule> decode;
  std::optional<PackGqaRule> packGqa;

  /// The table of \p target.
  static const DispatchTable &forTarget(llvm::StringRef target);

  /// The tile for pipeline \p p on \p arch for head dim \p d (max of d, dv),
  /// \p dtype, \p mask and query length \p seqlenQ; none when the arch has
  /// no tile for d.
  std::optional<TileChoice> choose(const ArchInfo &arch, Pipeline p, unsigned d,
                                   DType dtype, Mask mask,
                                   int64_t seqlenQ) const;
  /// The split_tiles row for the same arguments as choose(); none when no
  /// row serves them (then the split-KV decode keeps choose()'s tile).
  std::optional<TileChoice> chooseSplitTile(const ArchInfo &arch, Pipeline p,
                                            unsigned d, DType dtype, Mask mask,
                                            int64_t seqlenQ) const;
  /// Every tile choose() can return for \p p, \p d, \p dtype and \p mask,
  /// shortest queries first, then with \p withSplitTiles those of
  /// chooseSplitTile(): the tiles the registry holds.
  std::vector<Tile> tilesFor(const ArchInfo &arch, Pipeline p, unsigned d,
                             DType dtype, Mask mask,
                             bool withSplitTiles = false) const;
};

} // namespace fmhajit
