//===- CausalSections.cpp - How many heads a causal section holds --------===//
//
// Measured on the H100 against the L2 rule alone (docs/results.md, session
// 19): +6-20% at S = 512, where the L2 rule's 128 heads a section overflowed
// L2 (Nsight Compute counted 1.34x cuDNN's DRAM bytes), +4-7% at 1024, 0-3%
// longer. One head a section at d = 64, S = 16384 (86 query tiles on 132
// blocks) left 46 blocks idle each round: 30% slower, hence the sixteenth.
//
// One-round sections pair a block's dear item with a cheap one only across
// two rounds, so an odd last round (a partial last section, or an odd count
// of them) gives the first blocks the dearest tiles alone. fp8 d = 128's
// three-warpgroup tile at S = 8192 (43 tiles, 3 heads a round, 32 heads)
// ended with 86 items of 2-86 key tiles: the slowest block took 518 tiles
// where the average is 459 (session 33). So the rule above is a candidate
// that the schedule's own arithmetic may overrule.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CausalSections.h"
#include "ir/KernelAbi.h"
#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

using namespace fmhajit;

namespace {

/// A section may end a block's walk 3% later than the best candidate's
/// before the one-round rule (or fewer heads: more L2 locality) gives way.
constexpr int64_t kSpanTolerancePercent = 3;

/// Spans are weighed only where the dearest item takes this many key tiles.
/// Shorter items are bound by their loads and by L2's reuse of K and V,
/// which one-round sections keep: fp8 d = 256 at S = 512 (6 key tiles)
/// ran 10% slower on 128-head sections whose spans promised 6% sooner.
constexpr int64_t kMinWeighedKeyTiles = 16;

/// The section sizes tried per launch, at most.
constexpr int64_t kMaxCandidates = 32;

/// An item costs its key tiles plus about a quarter of one for moving to
/// the next item (block 0's timeline, design.md "Persistent blocks"), in
/// quarter tiles.
std::vector<int64_t> itemCosts(const KernelSpec &spec, const KernelArgs &p,
                               int64_t tiles) {
  int64_t rows = itemQueryRows(spec, p.seqlenQ, p.headsQ, p.headsKv);
  int64_t ratio = spec.pack_gqa && p.headsKv > 0 ? p.headsQ / p.headsKv : 1;
  int64_t offset = spec.mask == Mask::CausalBr ? p.seqlenK - p.seqlenQ : 0;
  std::vector<int64_t> costs(size_t(tiles), 0);
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t lastRow =
        std::min((tile + 1) * spec.bm, std::max<int64_t>(rows, 1));
    int64_t keys = std::clamp<int64_t>(
        (lastRow - 1) / std::max<int64_t>(ratio, 1) + offset + 1, 0, p.seqlenK);
    costs[size_t(tile)] = 4 * ((keys + spec.bn - 1) / spec.bn) + 1;
  }
  return costs;
}

/// Adds one section of `here` heads to each block's load, its rounds
/// starting at parity `firstOdd` (ir/PersistentSchedule.cpp's order).
void addSection(std::vector<int64_t> &loads, const std::vector<int64_t> &costs,
                int64_t here, bool firstOdd, int64_t times) {
  int64_t grid = int64_t(loads.size()), tiles = int64_t(costs.size());
  int64_t items = here * tiles;
  for (int64_t round = 0; round * grid < items; ++round) {
    bool odd = ((round & 1) != 0) != firstOdd;
    for (int64_t block = 0; block < grid; ++block) {
      int64_t q = round * grid + (odd ? grid - 1 - block : block);
      if (q < items)
        loads[size_t(block)] += times * costs[size_t(tiles - 1 - q / here)];
    }
  }
}

/// The longest walk of \p grid blocks over \p heads heads of the tiles
/// \p costs (causalScheduleSpan), in sections of \p sectionHeads.
int64_t spanOf(const std::vector<int64_t> &costs, int64_t heads, int64_t grid,
               int64_t sectionHeads) {
  int64_t tiles = int64_t(costs.size());
  int64_t perSection = std::clamp<int64_t>(sectionHeads, 1, heads);
  // Whole sections repeat: each starts on the parity its predecessors'
  // rounds leave, so there are at most two kinds of them, then the rest.
  int64_t whole = heads / perSection, rest = heads - whole * perSection;
  int64_t roundsEach = (perSection * tiles + grid - 1) / grid;
  int64_t oddStarts = roundsEach % 2 ? whole / 2 : 0;
  std::vector<int64_t> loads(size_t(grid), 0);
  addSection(loads, costs, perSection, false, whole - oddStarts);
  addSection(loads, costs, perSection, true, oddStarts);
  if (rest > 0)
    addSection(loads, costs, rest, (whole * roundsEach) % 2 != 0, 1);
  return *std::max_element(loads.begin(), loads.end());
}

} // namespace

int64_t fmhajit::causalScheduleSpan(const KernelSpec &spec, const KernelArgs &p,
                                    int64_t items, int64_t blocks,
                                    int64_t sectionHeads) {
  int64_t tiles = std::max<int64_t>(p.numQTiles, 1);
  return spanOf(itemCosts(spec, p, tiles), std::max<int64_t>(items / tiles, 1),
                std::max<int64_t>(blocks, 1), sectionHeads);
}

static int32_t chooseSectionHeads(const KernelSpec &spec, const KernelArgs &p,
                                  int64_t items, int64_t blocks,
                                  int64_t sectionBytes, bool weighSpans) {
  int64_t headBytes = std::max<int64_t>(p.seqlenK, 1) *
                      (spec.d + spec.headDimV()) * dtypeBytes(spec.dtype);
  int64_t budget = sectionBytes > 0 ? sectionBytes : kSectionBytes;
  int64_t inL2 = std::max<int64_t>(budget / headBytes, 1);
  auto clamp32 = [](int64_t heads) {
    return int32_t(
        std::min<int64_t>(heads, std::numeric_limits<int32_t>::max()));
  };
  if (sectionBytes > 0)
    return clamp32(inL2);
  int64_t tiles = std::max<int32_t>(p.numQTiles, 1);
  int64_t oneRound = blocks / tiles;
  bool fillsRound = oneRound >= 1 && blocks - oneRound * tiles <= blocks / 16;
  int64_t rule = fillsRound && oneRound < inL2 ? oneRound : inL2;
  if (!weighSpans)
    return clamp32(rule);
  std::vector<int64_t> costs = itemCosts(spec, p, tiles);
  if (*std::max_element(costs.begin(), costs.end()) < 4 * kMinWeighedKeyTiles)
    return clamp32(rule);

  // Candidates: the rule's, whole rounds of heads up to the L2 budget, and
  // the budget itself; the fewest heads within the tolerance of the best.
  int64_t heads = std::max<int64_t>(items / tiles, 1);
  int64_t cap = std::min(inL2, heads);
  int64_t step = std::max<int64_t>(oneRound, 1);
  step = std::max(step, (cap + kMaxCandidates - 1) / kMaxCandidates);
  std::vector<int64_t> candidates{std::min(rule, heads), cap};
  for (int64_t h = step; h < cap; h += step)
    candidates.push_back(h);
  std::vector<int64_t> spans;
  for (int64_t h : candidates)
    spans.push_back(spanOf(costs, heads, std::max<int64_t>(blocks, 1), h));
  int64_t best = *std::min_element(spans.begin(), spans.end());
  auto within = [&](size_t i) {
    return spans[i] * 100 <= best * (100 + kSpanTolerancePercent);
  };
  if (within(0))
    return clamp32(rule);
  int64_t chosen = cap;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (within(i))
      chosen = std::min(chosen, candidates[i]);
  return clamp32(chosen);
}

// The spans cost up to ~80 us of host time for short sequences of many
// heads, and a plan launches the same problem call after call.
int32_t fmhajit::causalSectionHeads(const KernelSpec &spec, const KernelArgs &p,
                                    int64_t items, int64_t blocks,
                                    int64_t sectionBytes, bool weighSpans) {
  auto key = std::make_tuple(spec.bm, spec.bn, spec.d, spec.headDimV(),
                             spec.dtype, spec.mask, spec.pack_gqa, p.seqlenQ,
                             p.seqlenK, p.headsQ, p.headsKv, p.numQTiles, items,
                             blocks, sectionBytes, weighSpans);
  thread_local std::optional<std::pair<decltype(key), int32_t>> last;
  if (!last || last->first != key)
    last.emplace(key, chooseSectionHeads(spec, p, items, blocks, sectionBytes,
                                         weighSpans));
  return last->second;
}
