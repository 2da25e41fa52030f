//===- SplitPlanner.cpp - Whether a decode-shaped problem runs split-KV ---===//
#include "runtime/api/SplitPlanner.h"
#include "ir/KernelAbi.h"
#include "runtime/api/SplitHeuristic.h"
#include "runtime/device/SplitKv.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Validate.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/bit.h"
#include <algorithm>
#include <cassert>
#include <cmath>

using namespace fmhajit;

// The dispatcher's pick for \p query as a split-KV \p family, with the
// table's split tile where \p splitTile.
static llvm::Expected<Dispatch> dispatchSplit(const DispatchQuery &query,
                                              Family family, bool splitTile,
                                              const Registry &registry,
                                              const DispatchTable &table) {
  DispatchQuery splitQuery = query;
  splitQuery.features.family = family;
  splitQuery.tunedWinner.reset(); // autotuning measures the single pass
  splitQuery.splitTile = splitTile;
  return dispatch(splitQuery, registry, table);
}

// fwd_paged cuts its key ranges itself (numSplits at run time), so its own
// pick is the split kernel; fwd asks the dispatcher for fwd_splitkv.
static llvm::Expected<Dispatch> splitDispatch(const Dispatch &single,
                                              const DispatchQuery &query,
                                              const Registry &registry,
                                              const DispatchTable &table) {
  if (single.chosen.family == Family::FwdPaged)
    return single;
  return dispatchSplit(query, Family::FwdSplitKv, /*splitTile=*/false, registry,
                       table);
}

// The key tiles of \p spec in \p a's longest key range.
static int64_t keyTiles(const KernelSpec &spec, const AttentionProblem &a) {
  return (a.maxSeqlenK() + spec.bn - 1) / spec.bn;
}

// When \p n parts of \p split's tile would hold one key tile each (its key
// tiles cap the count), the table's narrower split tile for the problem,
// which has twice the key tiles to cut: more parts where the wide tile left
// SMs short of blocks, or two tiles a part where it did not. None when the
// table has no narrower tile for it.
static llvm::Expected<std::optional<Dispatch>>
narrowSplit(const LoweredProblem &l, const Dispatch &split, unsigned n,
            const DispatchQuery &query, const Registry &registry,
            const DispatchTable &table) {
  if (table.splitTiles.empty() || n < keyTiles(split.chosen, l.problem))
    return std::nullopt;
  auto narrow = dispatchSplit(query, split.chosen.family, /*splitTile=*/true,
                              registry, table);
  if (!narrow)
    return narrow.takeError();
  if (narrow->chosen.bn >= split.chosen.bn)
    return std::nullopt;
  return std::optional<Dispatch>(std::move(*narrow));
}

// The most parts the narrowed tile takes on a GPU whose wide tile has a TMA
// ring twin. Past them its combine folds more partials than the half-width
// tile saves, and the twin at its own count (half a block an SM) reads
// faster: one 8:1 group with 8k keys, 128 narrowed parts against the
// twin's 64, took 9.3-10.1 µs against 8.7-9.1, contiguous and paged, in two
// H100 runs of issue 13's grid (sessions 25 and 26).
static constexpr unsigned kMostNarrowedParts = 64;

// Why the parts are counted on \p narrow's tile, for the plan's note.
static std::string describeNarrowing(const KernelSpec &wide,
                                     const KernelSpec &narrow, unsigned n,
                                     const AttentionProblem &a) {
  return " (the " + tileOf(wide).str() + " tile's " +
         std::to_string(keyTiles(wide, a)) + " key tiles capped it at " +
         std::to_string(n) + ": its split tile " + tileOf(narrow).str() + ")";
}

// A packed decode's blocks: its items times \p parts.
static int64_t splitBlocks(const KernelSpec &spec, const AttentionProblem &a,
                           unsigned parts) {
  int64_t rows = itemQueryRows(spec, a.maxSeqlenQ(), a.headsQ, a.headsKv);
  return a.batch * itemHeads(spec, a.headsQ, a.headsKv) *
         ((rows + spec.bm - 1) / spec.bm) * parts;
}

/// \p spec if it validates, else none.
static std::optional<KernelSpec> validOrNone(const KernelSpec &spec) {
  llvm::Expected<KernelSpec> valid = validateSpec(spec);
  if (!valid) {
    llvm::consumeError(valid.takeError());
    return std::nullopt;
  }
  return *valid;
}

// The TMA ring's twin of \p split's cp.async tile (stages=2) for a packed
// decode, or none where it does not apply.
static std::optional<KernelSpec> ringOf(const KernelSpec &split) {
  if (split.pipeline != Pipeline::Wgmma || split.stages != 1 || !split.pack_gqa)
    return std::nullopt;
  KernelSpec ring = split;
  ring.stages = 2;
  return validOrNone(ring);
}

// ringOf(\p split), or none where its kernel would not read the problem
// (pages of fewer rows than its boxes take).
static std::optional<KernelSpec> ringTwin(const KernelSpec &split,
                                          const DispatchQuery &query) {
  std::optional<KernelSpec> ring = ringOf(split);
  if (ring && query.log2PageSize >= 0 &&
      !readsPagesOf(*ring, unsigned(query.log2PageSize)))
    return std::nullopt;
  return ring;
}

// The ring twin's parts: about half a block an SM, at most \p parts (the
// cp.async tile's count, for 1.5 blocks an SM). A ring block keeps two K
// and two V tiles in flight, so fewer, longer parts read as fast and leave
// the combine less to merge. Issue 13's grid on an H100 (docs/results.md,
// session 25), against the cp.async tile at its own count: 4-22% faster
// where 64 packed items (8 sequences of 8 K/V heads, 64 of one) have 1k-8k
// keys (one part each, no combine), -0.3% to 5% on the other rows. Paged rows
// of thin items (kMostThinPackedRows) round up instead of down (16-row pages
// are 8 TMA boxes a tile): rounded down they lost 10-19% on 4k-128k keys.
// Fatter items (2-8 tokens of an 8:1 group, whose parts each hand the
// combine that many rows) round up paged only to kMostRoundedUpParts, and
// only where each part keeps kLeastKeyTilesARoundedUpPart key tiles: one
// 8:1 group of 4 or 8 tokens took 64 parts 9-30% faster than 128 (session
// 24), while 8 tokens of 8 sequences of one K/V head, or of one sequence of
// 8 K/V heads, took 16 parts 14-27% faster than 8 from 32k keys (session 26).
static constexpr uint64_t kMostRoundedUpParts = 16;

// Packed rows an item may have and still round its paged parts up past
// kMostRoundedUpParts: each part hands the combine that many rows, and one
// 8:1 group took 128 parts 10% faster than 64 at one token (8 rows) and 128k
// keys, but 64 parts 10-16% faster than 128 at two tokens (16 rows) and 32k
// (session 37's grids, docs/results.md).
static constexpr int64_t kMostThinPackedRows = 8;

// The fewest key tiles a part keeps where a paged count of fatter rows
// rounds up: at 4k keys (32 ring tiles), 8 sequences of 4 or 8 tokens of an
// 8:1 group, or 8 tokens of a 32/8 sequence, took 8 parts 7-17% faster than
// 16 of two tiles each (session 37,
// bench/results-decode-gpu-h100-s37d-spec.txt), where from 32k keys 16 parts
// won (session 26).
static constexpr int64_t kLeastKeyTilesARoundedUpPart = 4;

// A paged range shorter than this many of the ring's key tiles stays in one
// part where two were rounded up from about one: at 1k keys (8 tiles) and 64
// packed items one part ran 3-8% faster than two of 4 tiles, whose combine
// costs more than the idle SMs they fill; from 4k keys two parts won by
// 12-32% (session 28, docs/results.md).
static constexpr int64_t kLeastKeyTilesForTwoPagedParts = 16;

static unsigned ringParts(const KernelSpec &ring, const LoweredProblem &l,
                          unsigned parts, unsigned sms) {
  assert(parts > 1 && "chooseSplit asks only where the cp.async tile splits");
  const AttentionProblem &a = l.problem;
  // Paged K/V keeps two parts unless its range is short; one part is the
  // split kernel writing O itself, as a pinned fwd_paged of one part does.
  int64_t keyTiles = (a.maxSeqlenK() + ring.bn - 1) / ring.bn;
  bool shortPaged = l.pagedCache && keyTiles < kLeastKeyTilesForTwoPagedParts;
  uint64_t least = l.pagedCache && !shortPaged ? 2 : 1;
  double wanted = double(sms) / (2.0 * double(splitBlocks(ring, a, 1)));
  int64_t rows = itemQueryRows(ring, a.maxSeqlenQ(), a.headsQ, a.headsKv);
  uint64_t up = llvm::bit_ceil(uint64_t(std::ceil(wanted)));
  bool thin = rows <= kMostThinPackedRows;
  bool longParts = keyTiles >= kLeastKeyTilesARoundedUpPart * int64_t(up);
  bool roundUp = l.pagedCache &&
                 (thin || (up <= kMostRoundedUpParts && longParts)) &&
                 !(shortPaged && up <= 2);
  uint64_t n = wanted <= 1 ? 1
               : roundUp   ? up
                           : llvm::bit_floor(uint64_t(wanted));
  return unsigned(std::clamp<uint64_t>(n, least, parts));
}

// The most packed rows an item may have for the ring twin to run with keys
// as the products' rows (keysAsRows, specs/pipelines/WgmmaLayout.h): an m8
// tile up to 8 rows, m16 up to 16, the same bn and ring. Issue 13's grids on
// an H100 (session 37, docs/results.md), at the plan's own part counts
// against the m64n128 ring: -8% to +1.6% on the 16 rows of 8:1 and 32/8
// groups at one token with 8k-128k keys, or 1k keys at batch 8 (one part
// each), contiguous and paged (32/8 batch 8 at 1k keys 17.1 -> 15.7 µs, 8:1
// batch 1 at 128k 28.8 -> 28.2); -6% to +0.5% on the 10 speculative-decode
// rows of 16 (32/8 at 4 tokens, 8:1 at 2; 32/8 batch 8 at 4k keys 51.1 ->
// 48.1). At 32 rows the m32 tile was 0-3% slower than m64, and two m16 tiles
// read K and V twice.
static constexpr int64_t kMostKeyRowsTileRows = 16;

static int64_t packedRows(const KernelSpec &spec, const LoweredProblem &l) {
  const AttentionProblem &a = l.problem;
  return itemQueryRows(spec, a.maxSeqlenQ(), a.headsQ, a.headsKv);
}

// \p ring on an m\p bm tile of one warpgroup, which puts the keys in the
// products' rows, if it validates.
static std::optional<KernelSpec> keyRowsTile(const KernelSpec &ring,
                                             unsigned bm) {
  KernelSpec twin = ring;
  twin.bm = bm;
  twin.warps = WgmmaLayout::kWarpsPerGroup;
  return validOrNone(twin);
}

// \p ring with keys as the rows, where its items have that few packed rows
// and the tile takes the spec; else none. bm is 8 up to 8 rows, and 16 past
// them unless \p parts parts of m16 items would leave more than half of
// \p sms SMs without a block: then m8, two items a group, twice the blocks
// (the second read of K and V mostly from L2). One 8:1 group of two tokens
// (16 rows) on m8 against m16 at the same parts, session 37's speculative grid
// (bench/results-decode-gpu-h100-s37d-spec.txt): 4k keys 7.4 against 8.0 µs
// (paged 7.7, 8.4), 32k 13.0 against 13.5 (14.3, 15.0); 32/8 at four tokens,
// 4k keys, 14.3 against 15.0 (15.8, 16.5). Where m16 blocks fill the SMs it
// was as fast or faster (to 1.19x, paged at 32k keys).
static std::optional<KernelSpec> keyRowsTwin(const KernelSpec &ring,
                                             const LoweredProblem &l,
                                             unsigned parts, unsigned sms) {
  int64_t rows = packedRows(ring, l);
  if (rows > kMostKeyRowsTileRows)
    return std::nullopt;
  KernelSpec m16 = ring;
  m16.bm = 16;
  bool fewBlocks = 2 * splitBlocks(m16, l.problem, parts) <= int64_t(sms);
  return keyRowsTile(ring, rows <= 8 || fewBlocks ? 8 : 16);
}

// The fewest key tiles (of the ring's bn keys, 128 at d = 128) an item
// needs before a decode the cp.async tile runs in one part takes the ring
// with keys as rows instead, contiguous and paged. Issue 13's grids on an H100
// (sessions 37, 38 and 40, docs/results.md), 32/8 and 64/8 at batch 64 (512
// items of 4 or 8 packed rows), m8n128w4s2 against the plan's m64n128w4s1, both
// in one part: contiguous 1k keys 90.3-91.3 against 93.2-93.8 µs, 4k a tie
// (341.7-343.2 against 342.1-343.2); 16-token pages at 4k keys 343.2-345.7
// against 349.5-350.5, but at 1k 96.1-96.8 against 95.1-95.6.
static constexpr int64_t kLeastKeyTilesForOneThinRingPart = 8;
static constexpr int64_t kLeastPagedKeyTilesForOneThinRingPart = 32;

// The ring twin of \p split with keys as the products' rows, in one part,
// for a decode whose cp.async tile already fills the SMs in one part: where
// its items have at most kMostThinPackedRows packed rows and enough key
// tiles; else none.
static std::optional<KernelSpec> oneThinRingPart(const KernelSpec &split,
                                                 const LoweredProblem &l,
                                                 const DispatchQuery &query,
                                                 unsigned sms) {
  std::optional<KernelSpec> ring = ringTwin(split, query);
  if (!ring || packedRows(*ring, l) > kMostThinPackedRows)
    return std::nullopt;
  int64_t keyTiles = (l.problem.maxSeqlenK() + ring->bn - 1) / ring->bn;
  if (keyTiles < (l.pagedCache ? kLeastPagedKeyTilesForOneThinRingPart
                               : kLeastKeyTilesForOneThinRingPart))
    return std::nullopt;
  return keyRowsTwin(*ring, l, 1, sms);
}

// Why a GPU plan keeps \p wide (its TMA ring twin) rather than narrowing to
// \p narrow in \p narrowParts parts, for the plan's note; none where it
// narrows. \p n is the wide tile's count.
static std::optional<std::string>
whyTheWideTileStays(const LoweredProblem &l, const KernelSpec &wide,
                    const KernelSpec &narrow, unsigned n, unsigned narrowParts,
                    const DispatchQuery &query, unsigned sms) {
  std::optional<KernelSpec> ring = ringTwin(wide, query);
  if (!ring)
    return std::nullopt;
  std::string tile = tileOf(narrow).str();
  if (narrowParts > kMostNarrowedParts)
    return " (its split tile " + tile + " would take " +
           std::to_string(narrowParts) + " parts, more than " +
           std::to_string(kMostNarrowedParts) + ": the wide tile stays)";
  if (!l.pagedCache)
    return std::nullopt;
  // Paged, the wide tile's ring twin reads the pages faster than the
  // narrowed tile's twin where an item has few packed rows (keys as rows),
  // or where the narrowed count, made for the cp.async tile's 1.5 blocks an
  // SM, gives the ring more blocks than SMs. Issue 13's grids on an H100
  // (session 37, docs/results.md), 16-token pages at 4k keys: one token of
  // 32/8 and 64/8 at batch 1 and 8:1 at batch 8 15.6-15.9 -> 12.5-12.9 µs
  // (16 parts against 32), at 1k keys within 4%; 16 packed rows (2-4 tokens)
  // 18.0-20.6 on the narrowed twin, 1.21 to 1.28 times the best; 32 and 64
  // rows of 8 items (256 narrowed blocks) 20.6-24.9 against 16.9-20.4 on the
  // wide ring in 8 parts. One item of 32 rows keeps the narrowed twin (64
  // blocks: 9.6 against 10.3 µs).
  if (keyRowsTwin(*ring, l, n, sms))
    return " (paged with " + std::to_string(packedRows(*ring, l)) +
           " packed rows an item: the wide tile stays, not its split tile " +
           tile + ")";
  int64_t blocks = splitBlocks(narrow, l.problem, narrowParts);
  if (blocks > int64_t(sms))
    return " (paged: its split tile " + tile + " would run " +
           std::to_string(blocks) + " blocks on " + std::to_string(sms) +
           " SMs: the wide tile stays)";
  return std::nullopt;
}

std::vector<int64_t> fmhajit::sequenceKeys(const LoweredProblem &l) {
  std::vector<int64_t> keys;
  if (l.pagedCache)
    keys.assign(l.seqlensK.begin(), l.seqlensK.end());
  else
    for (size_t b = 1; b < l.cuSeqlensK.size(); ++b)
      keys.push_back(int64_t(l.cuSeqlensK[b]) - l.cuSeqlensK[b - 1]);
  return keys;
}

std::shared_ptr<const SplitSchedule>
fmhajit::scheduleFor(const LoweredProblem &l, const KernelSpec &split,
                     unsigned workers) {
  const AttentionProblem &a = l.problem;
  int64_t rows = itemQueryRows(split, a.maxSeqlenQ(), a.headsQ, a.headsKv);
  int64_t items = itemHeads(split, a.headsQ, a.headsKv) *
                  ((rows + split.bm - 1) / split.bm);
  std::optional<SplitSchedule> s =
      planSplitSchedule(sequenceKeys(l), split.bn, items, workers,
                        findArch(split.target)->backend);
  if (!s)
    return nullptr;
  return std::make_shared<const SplitSchedule>(std::move(*s));
}

std::string fmhajit::describeSchedule(const SplitSchedule &s, int64_t bn) {
  return "sequences of mixed key lengths: a split schedule of " +
         std::to_string(s.parts) + " parts of " +
         std::to_string(int64_t(s.splitTiles) * bn) +
         " keys (a sequence's last part takes the rest), 1 to " +
         std::to_string(s.mostParts) + " per sequence";
}

llvm::Expected<std::optional<SplitChoice>>
fmhajit::chooseSplit(const LoweredProblem &l, const Dispatch &single,
                     const DispatchQuery &query, const Registry &registry,
                     const DispatchTable &table, unsigned workers,
                     std::vector<std::string> &notes) {
  if (!single.decodeShaped)
    return std::nullopt;
  if (l.features.dropout) {
    notes.push_back("decode-shaped, but split-KV is an inference kernel and "
                    "takes no dropout: single pass");
    return std::nullopt;
  }
  bool host = findArch(l.features.target)->backend == Backend::Host;
  if (workers == 0) {
    notes.push_back("decode-shaped, but split-KV is sized by the GPU's SM "
                    "count, which needs "
                    "its driver: single pass");
    return std::nullopt;
  }
  auto split = splitDispatch(single, query, registry, table);
  if (!split)
    return split.takeError();
  auto combine = combineSpecFor(split->chosen);
  if (!combine)
    return combine.takeError();
  if (auto schedule = scheduleFor(l, split->chosen, workers)) {
    notes.push_back("decode-shaped, " +
                    describeSchedule(*schedule, split->chosen.bn) +
                    ", combined by " + encodeName(*combine));
    unsigned parts = unsigned(schedule->parts);
    return SplitChoice{std::move(*split), *combine, parts, std::move(schedule)};
  }
  unsigned n = chooseNumSplits(split->chosen, l.problem, workers);
  auto narrow = narrowSplit(l, *split, n, query, registry, table);
  if (!narrow)
    return narrow.takeError();
  std::string narrowed;
  if (*narrow) {
    unsigned narrowParts =
        chooseNumSplits((*narrow)->chosen, l.problem, workers);
    std::optional<std::string> wideStays =
        host ? std::nullopt
             : whyTheWideTileStays(l, split->chosen, (*narrow)->chosen, n,
                                   narrowParts, query, workers);
    if (wideStays) {
      narrowed = *wideStays;
      narrow->reset();
    } else {
      narrowed =
          describeNarrowing(split->chosen, (*narrow)->chosen, n, l.problem);
      *split = std::move(**narrow);
      n = narrowParts;
      // Paged K/V runs the narrowed tile as its TMA ring twin, in as many
      // parts. Issue 13's grid on an H100 (session 36, docs/results.md),
      // 16-token pages at 1k keys: 32/8 and 64/8 at batch 1 8.6 -> 7.7 µs,
      // 8:1 at batch 1 and 8 6.9 -> 6.5 and 7.9 -> 7.5 µs. Contiguous rows
      // keep the cp.async tile (the twin -4% to +5% there).
      if (!host && l.pagedCache)
        if (std::optional<KernelSpec> ring = ringTwin(split->chosen, query)) {
          narrowed += "; paged, its TMA ring twin " + tileOf(*ring).str() +
                      " in as many parts";
          split->chosen = *ring;
        }
    }
  }
  std::string counts = "chooseNumSplits gives " + std::to_string(n) + " for " +
                       std::to_string(workers) + (host ? " worker" : " SM") +
                       (workers == 1 ? "" : "s") + narrowed;
  if (!host && !*narrow && n > 1)
    if (std::optional<KernelSpec> ring = ringTwin(split->chosen, query)) {
      n = ringParts(*ring, l, n, workers);
      counts += "; its TMA ring twin " + tileOf(*ring).str() + " in " +
                std::to_string(n) + " part" + (n == 1 ? "" : "s") +
                " (about half a block an SM: a ring block keeps two K/V "
                "tiles in flight)";
      split->chosen = *ring;
      if (std::optional<KernelSpec> rows = keyRowsTwin(*ring, l, n, workers)) {
        counts += ", with keys as the products' rows (" + tileOf(*rows).str() +
                  ": " + std::to_string(packedRows(*ring, l)) +
                  " packed rows an item)";
        split->chosen = *rows;
      }
      if (n == 1) {
        notes.push_back("decode-shaped: split-KV kernel, " + counts +
                        ": one part, which writes O itself");
        return SplitChoice{std::move(*split), *combine, 1,
                           /*schedule=*/nullptr};
      }
    }
  if (!host && !*narrow && n == 1)
    if (std::optional<KernelSpec> rows =
            oneThinRingPart(split->chosen, l, query, workers)) {
      notes.push_back("decode-shaped: split-KV kernel, " + counts +
                      "; its TMA ring twin with keys as the products' rows (" +
                      tileOf(*rows).str() + ": " +
                      std::to_string(packedRows(*rows, l)) +
                      " packed rows an item) in 1 part, which writes O itself");
      split->chosen = *rows;
      return SplitChoice{std::move(*split), *combine, 1, /*schedule=*/nullptr};
    }
  if (n <= 1) {
    notes.push_back(
        "decode-shaped, but " + counts +
        " (the work items already fill them, or the key range is too short to "
        "cut): single pass");
    return std::nullopt;
  }
  notes.push_back("decode-shaped: split-KV, " + counts + ", combined by " +
                  encodeName(*combine));
  return SplitChoice{std::move(*split), *combine, n, /*schedule=*/nullptr};
}

std::vector<KernelSpec> fmhajit::splitTwins(const KernelSpec &split,
                                            bool splitTile) {
  std::optional<KernelSpec> ring = ringOf(split);
  if (!ring)
    return {};
  std::vector<KernelSpec> twins = {*ring};
  if (splitTile) // chooseSplit puts keys in the rows of the wide tile only
    return twins;
  for (unsigned bm : {8u, 16u})
    if (std::optional<KernelSpec> rows = keyRowsTile(*ring, bm))
      twins.push_back(*rows);
  return twins;
}
