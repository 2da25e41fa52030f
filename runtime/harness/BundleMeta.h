//===- BundleMeta.h - The meta.json entries every run bundle starts with --===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/Support/JSON.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fmhajit::harness {

using BundleMeta = std::vector<std::pair<std::string, llvm::json::Value>>;

/// spec, name, family, dtype, batch, heads and seed: the entries the
/// multi-stage families' bundles start with (docs/families.md).
BundleMeta familyMetadata(const KernelSpec &kernel, int64_t batch,
                          int64_t headsQ, int64_t headsKv, uint64_t seed);

/// \p table's [rows, \p rowLength] entries as nested JSON arrays.
llvm::json::Array tableJson(const std::vector<int32_t> &table,
                            int64_t rowLength);

} // namespace fmhajit::harness
