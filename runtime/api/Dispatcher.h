//===- Dispatcher.h - Choosing the kernel for a problem, by rules ---------===//
//
// The dispatcher picks one spec from a target's registry in three rules,
// each narrowing the candidates and saying why (docs/api.md):
//
//   0 pack      a forward problem with few query tokens per sequence and
//               several query heads per K/V head (the dispatch table's
//               pack_gqa row) asks for pack_gqa kernels: one tile holds
//               a GQA group's rows, so the group reads K/V once. Rule 2
//               then sizes tiles by the packed rows (seqlen_q x ratio).
//   1 features  keep the candidates whose features (family, dtype, out, d,
//               dv, mask, bias, softcap, lse, varlen) equal the problem's.
//               None: the feature spec in each pipeline x table tile is made
//               up on the spot (JIT-compiled on first use). Then drop the
//               pipelines the K/V layout cannot feed: mma copies K/V rows
//               16 bytes at a time (cp.async), so its rows must start on
//               16-byte boundaries; and the kernels that load a paged
//               cache in TMA boxes, where its pages are under 8 rows.
//   2 tiles     per pipeline, keep the tile the dispatch table gives for the
//               head dim and the (longest) query length (a query with
//               splitTile set: its split_tiles row, where one serves); a
//               pipeline with no candidate in that tile keeps all of its
//               candidates.
//   3 priority  order by the target's pipeline preference (auto_order, as
//               PyTorch's sort_index orders backends), then by distance
//               from the table's tile, then by name; the first wins.
//
// Then an autotuned winner stored for this problem bucket, when it is
// still a rule-1 candidate, replaces rule 3's pick; and a forward problem
// (fwd or fwd_paged) with few queries and many keys is marked decode-shaped
// (the plan builder decides what to do with that).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/DispatchTable.h"
#include "runtime/api/Registry.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct DispatchQuery {
  KernelSpec features;                    ///< family, feature fields and target
  int64_t seqlenQ = 1;                    ///< the longest query sequence
  int64_t seqlenK = 1;                    ///< the longest key sequence
  std::optional<std::string> tunedWinner; ///< a stored autotune winner
  /// The alignment of K/V row starts, in bytes (TensorLayouts.h's
  /// rowAlignment); rule 1 drops pipelines that need more.
  unsigned kvRowAlignment = 16;
  /// Query heads per K/V head (headsQ / headsKv): rule 0 packs GQA groups.
  int64_t gqaRatio = 1;
  /// Rule 2 takes the table's split_tiles row: set by SplitPlanner when the
  /// key tiles of the table's tile cap a split-KV decode's parts.
  bool splitTile = false;
  /// Paged K/V: log2 of the rows per page; rule 1 drops kernels that
  /// cannot box such pages (readsPagesOf). -1: not paged.
  int log2PageSize = -1;
};

/// What one rule did, in words.
struct RuleOutcome {
  std::string rule; ///< "1 features", "2 tiles", "3 priority", ...
  std::string outcome;
};

struct Dispatch {
  KernelSpec chosen;
  /// Rule 1's candidates: what autotuning times.
  std::vector<KernelSpec> featureMatches;
  std::vector<RuleOutcome> rules;
  bool fromRegistry = true; ///< false: made up by rule 1
  bool pinned = false; ///< Options::kernel's, not the rules' (PinnedKernel.h)
  bool decodeShaped = false;
};

/// Why \p d's kernel runs, in one line (Plan::steps()' why).
std::string whyChosen(const Dispatch &d);

/// Bytes to which a kernel of \p spec needs K/V row starts (and the K/V
/// pointers) aligned: 16 for pipeline mma, else one element.
unsigned kvRowAlignmentNeeded(const KernelSpec &spec);

/// Chooses the kernel for \p query from \p registry by \p table's data.
llvm::Expected<Dispatch> dispatch(const DispatchQuery &query,
                                  const Registry &registry,
                                  const DispatchTable &table);

} // namespace fmhajit
