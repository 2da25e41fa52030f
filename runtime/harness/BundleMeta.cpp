//===- BundleMeta.cpp - The meta.json entries every run bundle starts with ===//
#include "runtime/harness/BundleMeta.h"
#include "specs/EncodedName.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"

using namespace fmhajit;

harness::BundleMeta harness::familyMetadata(const KernelSpec &kernel,
                                            int64_t batch, int64_t headsQ,
                                            int64_t headsKv, uint64_t seed) {
  return {{"spec", printSpec(kernel)},
          {"name", encodeName(kernel)},
          {"family", keyOf(kernel.family)},
          {"dtype", keyOf(kernel.dtype)},
          {"batch", batch},
          {"heads_q", headsQ},
          {"heads_kv", headsKv},
          {"seed", static_cast<int64_t>(seed)}};
}

llvm::json::Array harness::tableJson(const std::vector<int32_t> &table,
                                     int64_t rowLength) {
  llvm::json::Array rows;
  for (size_t start = 0; rowLength > 0 && start < table.size();
       start += size_t(rowLength)) {
    llvm::json::Array row;
    for (int64_t slot = 0; slot < rowLength; ++slot)
      row.push_back(table[start + size_t(slot)]);
    rows.push_back(std::move(row));
  }
  return rows;
}
