//===- TailSplit.cpp - How a launch cuts its last round's items by keys ---===//
#include "runtime/device/TailSplit.h"
#include "runtime/device/TuningKnobs.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <algorithm>
#include <cstdint>

using namespace fmhajit;

static int64_t divideUp(int64_t x, int64_t y) { return (x + y - 1) / y; }

TailSplit fmhajit::chooseTailSplit(int64_t items, int64_t keyTiles,
                                   int64_t grid, int32_t forcedParts) {
  if (items < 1 || keyTiles < 2 || grid < 1 || forcedParts == 1)
    return {};
  int64_t rounds = divideUp(items, grid);
  int64_t last = items - (rounds - 1) * grid;
  // The last round's time in items: ceil(r p / G) rounds of parts of
  // 1/p of the keys, each with its start, then the last part's fold.
  auto tailTime = [&](int64_t parts) {
    double tiles = double(keyTiles);
    double part = 1.0 / double(parts) + kTailPartCostTiles / tiles;
    return double(divideUp(last * parts, grid)) * part +
           double(parts - 1) * kTailFoldCostTiles / tiles;
  };
  int64_t most =
      std::min<int64_t>(kMaxTailParts, keyTiles / kMinTilesPerTailPart);
  if (forcedParts > 1)
    return {
        int32_t(std::min<int64_t>(forcedParts, std::max<int64_t>(2, keyTiles))),
        int32_t(last)};
  int64_t best = 1;
  double bestTime = 1.0;
  for (int64_t parts = 2; parts <= most; ++parts)
    if (double time = tailTime(parts); time < bestTime) {
      best = parts;
      bestTime = time;
    }
  // Worth it only if it saves 1% of the call's rounds.
  if (best == 1 || (1.0 - bestTime) < 0.01 * double(rounds))
    return {};
  return {int32_t(best), int32_t(last)};
}

TailSplit fmhajit::chooseTailSplit(const KernelSpec &spec, int64_t items,
                                   int64_t seqlenK, int64_t grid) {
  if (!splitsTail(spec))
    return {};
  int64_t forced = knobFromEnvironment("FMHAJIT_TAIL_PARTS");
  return chooseTailSplit(items, divideUp(seqlenK, spec.bn), grid,
                         forced > INT32_MAX ? 0 : int32_t(forced));
}

static int64_t aligned(int64_t bytes) { return (bytes + 255) / 256 * 256; }

namespace {
struct TailOffsets {
  int64_t lse, o, end;
};
} // namespace

static TailOffsets tailOffsets(const KernelSpec &spec, TailSplit split) {
  int64_t rows = int64_t(split.parts) * split.items * spec.bm;
  int64_t counters =
      int64_t(split.items) * kTailGroups * int64_t(sizeof(int32_t));
  TailOffsets at;
  at.lse = aligned(counters);
  at.o = at.lse + aligned(rows * int64_t(sizeof(float)));
  at.end = at.o + aligned(rows * spec.headDimV() * int64_t(sizeof(float)));
  return at;
}

int64_t fmhajit::tailWorkspaceBytes(const KernelSpec &spec, TailSplit split) {
  return split.splits() ? tailOffsets(spec, split).end : 0;
}

void fmhajit::setTailSplit(KernelArgs &params, const KernelSpec &spec,
                           TailSplit split, void *workspace) {
  if (!split.splits()) {
    params.tailParts = 0;
    params.tailItems = 0;
    params.tailCounters = nullptr;
    return;
  }
  TailOffsets at = tailOffsets(spec, split);
  char *base = static_cast<char *>(workspace);
  params.tailParts = split.parts;
  params.tailItems = split.items;
  params.tailCounters = reinterpret_cast<int32_t *>(base);
  params.lseAccum = reinterpret_cast<float *>(base + at.lse);
  params.oAccum = reinterpret_cast<float *>(base + at.o);
}
