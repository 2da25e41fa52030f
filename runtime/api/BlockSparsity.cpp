//===- BlockSparsity.cpp - A plan's block map, built and cached -----------===//
#include "runtime/api/BlockSparsity.h"
#include "compiler/variants/HostVariant.h"
#include "compiler/variants/VariantRegistry.h"
#include "ir/KeyTiles.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include <mutex>

using namespace fmhajit;

namespace {
/// The process's maps. Bounded: a long-lived process that plans many
/// shapes starts afresh past kMaxMaps (plans keep their own maps alive).
struct MapCache {
  static constexpr unsigned kMaxMaps = 64;
  std::mutex mutex;
  llvm::StringMap<std::shared_ptr<const BlockMap>> maps;
};
MapCache &mapCache() {
  static MapCache cache;
  return cache;
}
} // namespace

// Everything buildBlockMap reads: the variant, the mask and its window, the
// tile, and the problem's batch, heads and lengths.
static std::string cacheKey(const KernelSpec &spec, const AttentionProblem &a) {
  std::string key = spec.variant.hex + " " + std::to_string(int(spec.mask)) +
                    " " + std::to_string(spec.bm) + "x" +
                    std::to_string(spec.bn);
  for (int64_t v :
       {a.batch, a.headsQ, a.seqlenQ, a.seqlenK, a.windowLeft, a.windowRight})
    key += " " + std::to_string(v);
  for (const std::vector<int64_t> *lengths : {&a.seqlensQ, &a.seqlensK}) {
    key += " |";
    for (int64_t v : *lengths)
      key += " " + std::to_string(v);
  }
  return key;
}

// Null for a variant without mask_mod: its kernel reads no map
// (ScoreMods::hasMaskMod).
static llvm::Expected<std::shared_ptr<const BlockMap>>
buildMap(const KernelSpec &spec, const AttentionProblem &a) {
  llvm::Expected<VariantSource> source = findVariant(spec.variant);
  if (!source)
    return source.takeError();
  auto host = HostVariant::create(*source);
  if (!host)
    return host.takeError();
  const HostVariant &variant = **host;
  if (!variant.hasMaskMod())
    return nullptr;
  BlockMapDependence depends{variant.maskReads(0), variant.maskReads(1)};
  // planBlockMap builds no map for a mask_mod that reads tensors: the table
  // is never read.
  static const VariantTensors kNoTensors{};
  return std::make_shared<const BlockMap>(buildBlockMap(
      spec, a,
      [&variant](int b, int h, int q, int k) {
        return variant.maskMod(b, h, q, k, &kNoTensors);
      },
      depends));
}

// A mask_mod that reads run-time tensors depends on values plan() does not
// have (on a GPU, not even in host memory): its kernel walks no map.
static bool maskReadsTensors(const KernelSpec &spec, const LoweredProblem &l,
                             bool enabled) {
  return enabled && !spec.variant.empty() && walksBlockMap(spec) &&
         l.variantTensors.maskMod != 0;
}

std::string fmhajit::describeNoBlockMap(const KernelSpec &spec,
                                        const LoweredProblem &l, bool enabled) {
  if (!maskReadsTensors(spec, l, enabled))
    return "";
  return "block map: none, mask_mod reads tensor " +
         l.variantTensors.describe() +
         ", which plan() does not have: every key tile of the mask's range, "
         "mask_mod on each element";
}

llvm::Expected<std::shared_ptr<const BlockMap>>
fmhajit::planBlockMap(const KernelSpec &spec, const LoweredProblem &l,
                      bool enabled) {
  if (!enabled || spec.variant.empty() || !walksBlockMap(spec) ||
      l.variantTensors.maskMod)
    return nullptr;
  std::string key = cacheKey(spec, l.problem);
  MapCache &cache = mapCache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.maps.find(key);
    if (it != cache.maps.end())
      return it->second;
  }
  auto map = buildMap(spec, l.problem);
  if (!map)
    return map.takeError();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.maps.size() >= MapCache::kMaxMaps)
    cache.maps.clear();
  cache.maps[key] = *map;
  return *map;
}

void fmhajit::bindBlockMap(KernelArgs &params, const BlockMap &map,
                           const int32_t *entries) {
  params.blockMap = entries;
  params.blockMapStrides = {map.batchStride, map.tileStride, map.headStride};
}

std::string fmhajit::describeBlockMap(const BlockMap &map) {
  int64_t blocks = map.hidden + map.partial + map.full;
  std::string shared = map.batchStride == 0 && map.headStride == 0
                           ? "one map for every sequence and head"
                       : map.headStride == 0 ? "a map per sequence"
                       : map.batchStride == 0
                           ? "a map per query head"
                           : "a map per sequence and query head";
  return "block map: " + std::to_string(map.hidden) + " of " +
         std::to_string(blocks) + " blocks hidden (skipped), " +
         std::to_string(map.full) + " fully visible (no mask_mod), " +
         std::to_string(map.partial) + " partial; " + shared;
}
