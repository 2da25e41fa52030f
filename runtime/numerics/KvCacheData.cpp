//===- KvCacheData.cpp - Seeded cache contents for runs and tests ---------===//
#include "runtime/numerics/KvCacheData.h"
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace fmhajit;

std::vector<int32_t>
fmhajit::shuffledBlockTable(const KvCacheLayout &layout,
                            llvm::ArrayRef<int64_t> lengths, uint64_t seed) {
  std::vector<int32_t> pool(layout.numPages);
  std::iota(pool.begin(), pool.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(pool.begin(), pool.end(), rng);
  int64_t batch = static_cast<int64_t>(lengths.size());
  std::vector<int32_t> table(batch * layout.maxPagesPerSeq, -1);
  size_t next = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t slot = 0; slot * layout.pageSize < lengths[b]; ++slot)
      table[b * layout.maxPagesPerSeq + slot] = pool[next++];
  int32_t unusedPage = next < pool.size() ? pool.back() : 0;
  std::replace(table.begin(), table.end(), -1, unusedPage);
  return table;
}

void fmhajit::fillCache(HostTensor &cache, const KvCacheLayout &layout,
                        llvm::ArrayRef<int32_t> blockTable,
                        llvm::ArrayRef<int64_t> filled, int64_t headsKv,
                        int64_t dim, uint64_t seed) {
  cache.fillNormal(seed);
  int64_t rowElements = headsKv * dim;
  std::vector<bool> used(cache.size() / rowElements, false);
  for (int64_t b = 0; b < static_cast<int64_t>(filled.size()); ++b)
    for (int64_t j = 0; j < filled[b]; ++j)
      used[layout.cacheRow(blockTable, b, j)] = true;
  for (size_t row = 0; row < used.size(); ++row)
    if (!used[row])
      for (int64_t e = 0; e < rowElements; ++e)
        cache.set(row * rowElements + e, NAN);
}
