//===- Dispatcher.cpp - Choosing the kernel for a problem, by rules -------===//
#include "runtime/api/Dispatcher.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>
#include <map>

using namespace fmhajit;

namespace {
/// The dispatcher's state while rules narrow the candidates.
struct Narrowing {
  const DispatchQuery &query;
  const ArchInfo &arch;
  const DispatchTable &table;
  KernelSpec features; ///< the query's, with rule 0's pack_gqa
  int64_t tileRows;    ///< query rows a tile covers, for rule 2
  std::vector<KernelSpec> candidates;
  std::map<Pipeline, Tile> wanted; ///< rule 2's tile per pipeline
  Dispatch result;

  unsigned headDim() const { return std::max(features.d, features.headDimV()); }
  void note(const char *rule, std::string outcome) {
    result.rules.push_back({rule, std::move(outcome)});
  }
};
} // namespace

static std::string count(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string fmhajit::whyChosen(const Dispatch &d) {
  if (d.pinned)
    return "named by Options::kernel";
  return d.fromRegistry
             ? "the dispatcher's pick from the registry"
             : "made for this problem (no registry kernel has its features)";
}

unsigned fmhajit::kvRowAlignmentNeeded(const KernelSpec &spec) {
  bool copiesChunks =
      spec.pipeline == Pipeline::Mma || spec.pipeline == Pipeline::Wgmma;
  return copiesChunks ? 16 : dtypeBytes(spec.dtype);
}

static void dropMisaligned(Narrowing &n) {
  size_t before = n.candidates.size();
  llvm::erase_if(n.candidates, [&](const KernelSpec &c) {
    return kvRowAlignmentNeeded(c) > n.query.kvRowAlignment;
  });
  if (n.candidates.size() != before)
    n.note("1 layout",
           "K/V rows start only " + std::to_string(n.query.kvRowAlignment) +
               "-byte aligned: dropped " +
               count(before - n.candidates.size(), "candidate") +
               " of pipelines mma and wgmma (16-byte cp.async copies)");
}

static void dropUnboxablePages(Narrowing &n) {
  int log2Page = n.query.log2PageSize;
  if (log2Page < 0)
    return;
  size_t before = n.candidates.size();
  llvm::erase_if(n.candidates, [&](const KernelSpec &c) {
    return !readsPagesOf(c, unsigned(log2Page));
  });
  if (n.candidates.size() != before)
    n.note("1 pages", "pages of " + std::to_string(1 << log2Page) +
                          " rows: dropped " +
                          count(before - n.candidates.size(), "candidate") +
                          " loading TMA boxes of at least " +
                          std::to_string(kMinPagedBoxRows) + " page rows");
}

static bool isForward(Family f) {
  return f == Family::Fwd || f == Family::FwdSplitKv || f == Family::FwdPaged;
}

static void rulePackGqa(Narrowing &n) {
  const std::optional<PackGqaRule> &rule = n.table.packGqa;
  if (!rule || !isForward(n.features.family))
    return;
  const DispatchQuery &q = n.query;
  bool grouped = q.gqaRatio >= rule->minRatio;
  bool fewQueries = q.seqlenQ <= rule->maxSeqlenQ;
  KernelSpec packed = n.features;
  packed.pack_gqa = true;
  // fp8 runs only on wgmma's TMA ring, where default tiles do not put
  // packed rows yet (defaultTileServes): no candidate packs fp8.
  bool packable = !candidateVariants(packed, n.arch, n.table).empty();
  n.features.pack_gqa = grouped && fewQueries && packable;
  if (n.features.pack_gqa)
    n.tileRows = q.seqlenQ * q.gqaRatio;
  n.note("0 pack",
         "heads per K/V head " + std::to_string(q.gqaRatio) +
             (grouped ? " >= " : " < ") + std::to_string(rule->minRatio) +
             ", seqlen_q " + std::to_string(q.seqlenQ) +
             (fewQueries ? " <= " : " > ") + std::to_string(rule->maxSeqlenQ) +
             (n.features.pack_gqa ? ": pack_gqa, one tile per GQA group"
              : packable ? ": one query head per tile"
                         : ": one query head per tile (no kernel packs these "
                           "features)"));
}

static llvm::Error ruleFeatures(Narrowing &n, const Registry &registry) {
  std::string key = featureKey(n.features);
  n.candidates = registry.matching(key);
  if (!n.candidates.empty()) {
    n.note("1 features", count(n.candidates.size(), "candidate") +
                             " of the registry (profiles " +
                             llvm::join(registry.profiles(), ", ") +
                             ") match " + key);
  } else {
    n.result.fromRegistry = false;
    n.candidates = candidateVariants(n.features, n.arch, n.table);
    n.note("1 features", "no registry kernel matches " + key + "; " +
                             count(n.candidates.size(), "kernel") +
                             " made for it (compiled on first use)");
  }
  dropMisaligned(n);
  std::optional<KernelSpec> boxesPages; // a candidate dropped for its pages
  if (!n.candidates.empty())
    boxesPages = n.candidates.front();
  dropUnboxablePages(n);
  if (!n.candidates.empty()) {
    n.result.featureMatches = n.candidates;
    return llvm::Error::success();
  }
  if (boxesPages) // fp8: every kernel boxes pages
    return makeError(
        ErrorKind::Usage,
        "kernel " + encodeName(*boxesPages) + " " +
            pagesTooSmall(*boxesPages, unsigned(n.query.log2PageSize)));
  llvm::Expected<KernelSpec> why = validateSpec(n.features);
  if (!why)
    return why.takeError();
  return makeError(ErrorKind::Unsupported,
                   "no kernel of " + n.arch.name + " computes " + key +
                       ": no pipeline and tile of it are valid");
}

// The table's tile for pipeline \p p: its split tile when the query asks for
// one and a row serves, else its tile.
static std::optional<TileChoice> tableTile(const Narrowing &n, Pipeline p) {
  unsigned d = n.headDim();
  DType dtype = n.features.dtype;
  Mask mask = n.features.mask;
  if (n.query.splitTile)
    if (auto split =
            n.table.chooseSplitTile(n.arch, p, d, dtype, mask, n.tileRows))
      return split;
  return n.table.choose(n.arch, p, d, dtype, mask, n.tileRows);
}

static void ruleTiles(Narrowing &n) {
  std::vector<std::string> parts;
  std::vector<KernelSpec> kept;
  std::vector<Pipeline> pipelines;
  for (const KernelSpec &c : n.candidates)
    if (!llvm::is_contained(pipelines, c.pipeline))
      pipelines.push_back(c.pipeline);
  for (Pipeline p : pipelines) {
    std::optional<TileChoice> choice = tableTile(n, p);
    auto ofPipeline = [&](const KernelSpec &c) { return c.pipeline == p; };
    auto inTile = [&](const KernelSpec &c) {
      return ofPipeline(c) && choice && tileOf(c) == choice->tile;
    };
    bool found = llvm::any_of(n.candidates, inTile);
    for (const KernelSpec &c : n.candidates)
      if (found ? inTile(c) : ofPipeline(c))
        kept.push_back(c);
    if (choice)
      n.wanted[p] = choice->tile;
    parts.push_back(keyOf(p).str() + " " + (choice ? choice->tile.str() : "-") +
                    " (" + (choice ? choice->row : "no row") + ")" +
                    (found ? "" : ": no candidate has it, all kept"));
  }
  std::string rows = n.features.pack_gqa
                         ? "packed rows " + std::to_string(n.tileRows) +
                               " (seqlen_q x heads per K/V head)"
                         : "seqlen_q " + std::to_string(n.tileRows);
  n.note("2 tiles", rows + ", d " + std::to_string(n.headDim()) + ": " +
                        llvm::join(parts, "; ") + "; " +
                        std::to_string(kept.size()) + " of " +
                        std::to_string(n.candidates.size()) + " kept");
  n.candidates = std::move(kept);
}

static int pipelineRank(const ArchInfo &arch, Pipeline p) {
  auto it = llvm::find(arch.autoOrder, p);
  return int(it - arch.autoOrder.begin()); // outside the order: last
}

static double tileDistance(const Narrowing &n, const KernelSpec &c) {
  auto it = n.wanted.find(c.pipeline);
  if (it == n.wanted.end())
    return 0;
  const Tile &w = it->second;
  auto logRatio = [](unsigned a, unsigned b) {
    return std::fabs(std::log2(double(a) / b));
  };
  return logRatio(c.bm, w.bm) + logRatio(c.bn, w.bn) +
         logRatio(c.warps, w.warps) + std::abs(int(c.stages) - int(w.stages)) +
         (c.v_pretranspose != w.vPretranspose);
}

static void rulePriority(Narrowing &n) {
  std::vector<std::pair<KernelSpec, std::string>> ranked;
  for (const KernelSpec &c : n.candidates)
    ranked.push_back({c, encodeName(c)});
  // Names are unique, so this is a total order.
  llvm::sort(ranked, [&](const auto &a, const auto &b) {
    int ra = pipelineRank(n.arch, a.first.pipeline),
        rb = pipelineRank(n.arch, b.first.pipeline);
    if (ra != rb)
      return ra < rb;
    double da = tileDistance(n, a.first), db = tileDistance(n, b.first);
    if (da != db)
      return da < db;
    return a.second < b.second;
  });
  std::vector<std::string> order;
  for (Pipeline p : n.arch.autoOrder)
    order.push_back(keyOf(p).str());
  n.result.chosen = ranked.front().first;
  n.note("3 priority", "pipelines in " + n.arch.name + "'s auto_order (" +
                           llvm::join(order, " > ") +
                           "), then nearest tile: " + ranked.front().second +
                           " first of " + std::to_string(ranked.size()));
}

static void ruleTuned(Narrowing &n) {
  if (!n.query.tunedWinner)
    return;
  const std::string &name = *n.query.tunedWinner;
  auto it = llvm::find_if(n.result.featureMatches, [&](const KernelSpec &c) {
    return encodeName(c) == name;
  });
  if (it == n.result.featureMatches.end()) {
    n.note("autotune",
           "the stored winner " + name + " is no longer a candidate; ignored");
    return;
  }
  bool same = *it == n.result.chosen;
  n.note("autotune",
         "the stored winner " + name +
             (same ? " agrees with rule 3" : " replaces rule 3's pick"));
  n.result.chosen = *it;
}

static void ruleDecode(Narrowing &n) {
  const std::optional<DecodeRule> &rule = n.table.decode;
  Family family = n.features.family;
  if (!rule || (family != Family::Fwd && family != Family::FwdPaged))
    return;
  const DispatchQuery &q = n.query;
  n.result.decodeShaped =
      q.seqlenQ <= rule->maxSeqlenQ && q.seqlenK >= rule->minSeqlenK;
  n.note("decode",
         "seqlen_q " + std::to_string(q.seqlenQ) +
             (q.seqlenQ <= rule->maxSeqlenQ ? " <= " : " > ") +
             std::to_string(rule->maxSeqlenQ) + ", seqlen_k " +
             std::to_string(q.seqlenK) +
             (q.seqlenK >= rule->minSeqlenK ? " >= " : " < ") +
             std::to_string(rule->minSeqlenK) + ": " +
             (n.result.decodeShaped ? "decode-shaped" : "not decode-shaped"));
}

llvm::Expected<Dispatch> fmhajit::dispatch(const DispatchQuery &query,
                                           const Registry &registry,
                                           const DispatchTable &table) {
  const ArchInfo *arch = findArch(query.features.target);
  if (!arch)
    return makeError(ErrorKind::Spec, "target=" + query.features.target +
                                          ": unknown target; use one of " +
                                          allArchNames());
  Narrowing n{query, *arch, table, query.features, query.seqlenQ, {}, {}, {}};
  rulePackGqa(n);
  if (llvm::Error err = ruleFeatures(n, registry))
    return std::move(err);
  ruleTiles(n);
  rulePriority(n);
  ruleTuned(n);
  ruleDecode(n);
  return std::move(n.result);
}
