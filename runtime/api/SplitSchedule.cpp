//===- SplitSchedule.cpp - Split-KV parts per sequence for mixed lengths --===//
#include "runtime/api/SplitSchedule.h"
#include "runtime/api/SplitHeuristic.h"
#include <algorithm>
#include <numeric>

using namespace fmhajit;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

SplitSchedule fmhajit::makeSplitSchedule(llvm::ArrayRef<int64_t> keyTiles,
                                         int64_t splitTiles) {
  struct Part {
    int32_t seq, index, parts;
    int64_t tiles;
  };
  std::vector<Part> list;
  SplitSchedule s;
  s.splitTiles = int32_t(splitTiles);
  std::vector<int32_t> firstSlot;
  for (size_t b = 0; b < keyTiles.size(); ++b) {
    int64_t n = std::max<int64_t>(1, ceilDiv(keyTiles[b], splitTiles));
    firstSlot.push_back(int32_t(list.size()));
    s.mostParts = std::max(s.mostParts, int32_t(n));
    for (int64_t j = 0; j < n; ++j)
      list.push_back({int32_t(b), int32_t(j), int32_t(n),
                      std::min(splitTiles, keyTiles[b] - j * splitTiles)});
  }
  s.parts = int32_t(list.size());
  firstSlot.push_back(s.parts);
  // Slots follow the sequences (firstSlot + index); the order of the list
  // is the order of sizes, the largest last: taken first (SplitSchedule.h).
  std::vector<size_t> order(list.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return list[x].tiles < list[y].tiles;
  });
  for (size_t slot : order) {
    const Part &p = list[slot];
    s.entries.insert(s.entries.end(), {p.seq, p.index, p.parts, int32_t(slot)});
  }
  s.entries.insert(s.entries.end(), firstSlot.begin(), firstSlot.end());
  return s;
}

int64_t fmhajit::chooseSplitTiles(llvm::ArrayRef<int64_t> keyTiles, int64_t bn,
                                  int64_t items, unsigned workers,
                                  Backend backend) {
  bool host = backend == Backend::Host;
  int64_t work = std::accumulate(keyTiles.begin(), keyTiles.end(), int64_t(0));
  int64_t longest = *std::max_element(keyTiles.begin(), keyTiles.end());
  int64_t aim = (host ? kHostSchedulePartsPerWorker : kGpuSchedulePartsPerSm) *
                std::max<int64_t>(1, workers);
  int64_t cap = host ? kMaxSplits : kGpuMaxSplits;
  int64_t least =
      host ? ceilDiv(kHostScheduleMinPartKeys, bn) : kGpuScheduleMinPartTiles;
  return std::max({ceilDiv(work * std::max<int64_t>(1, items), aim),
                   ceilDiv(longest, cap), least, int64_t(1)});
}

std::optional<SplitSchedule>
fmhajit::planSplitSchedule(llvm::ArrayRef<int64_t> keys, int64_t bn,
                           int64_t items, unsigned workers, Backend backend) {
  if (keys.size() < 2 || workers == 0 ||
      std::all_of(keys.begin(), keys.end(),
                  [&](int64_t k) { return k == keys.front(); }))
    return std::nullopt;
  std::vector<int64_t> tiles;
  for (int64_t k : keys)
    tiles.push_back(ceilDiv(std::max<int64_t>(k, 0), bn));
  SplitSchedule s = makeSplitSchedule(
      tiles, chooseSplitTiles(tiles, bn, items, workers, backend));
  if (s.mostParts <= 1)
    return std::nullopt;
  return s;
}
