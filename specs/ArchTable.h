//===- ArchTable.h - Per-target capabilities, read from specs/arch/*.json -===//
//
// Everything fmhajit knows about a target (wave size, shared memory/LDS,
// dtypes, pipelines and their matrix shapes, default tiles per head dim) is
// data in specs/arch/<target>.json, embedded in the binary at build time.
// C++ holds rules (how a tile's footprint is computed); the JSON holds facts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llvm::json {
class Array;
} // namespace llvm::json

namespace fmhajit {

enum class Backend : uint8_t { Host, Nvptx, Amdgpu };

/// Whether a tile row that names \p dtypes (none: every dtype) serves
/// \p dtype; the arch tables' rows and the dispatch tables' share the rule.
inline bool rowServesDType(llvm::ArrayRef<DType> dtypes, DType dtype) {
  return dtypes.empty() || llvm::is_contained(dtypes, dtype);
}

/// A JSON list of dtype names ("bf16", ...), or none if one is unknown; a
/// missing list is empty.
std::optional<std::vector<DType>> parseDTypeList(const llvm::json::Array *list);

struct TileConfig {
  unsigned maxD = 0; ///< this row applies to head dims up to maxD
  unsigned bm = 0, bn = 0, warps = 0, stages = 0;
  /// ... and to these dtypes; empty: to every dtype of the pipeline.
  std::vector<DType> dtypes;
  bool serves(unsigned d, DType dtype) const {
    return d <= maxD && rowServesDType(dtypes, dtype);
  }
};

struct PipelineInfo {
  std::vector<DType> dtypes;
  std::string shape;             ///< matrix instruction shape, "" for none
  unsigned bmMultiple = 1;       ///< bm must be a multiple of this
  unsigned bnMultiple = 1;       ///< bn must be a multiple of this
  std::vector<TileConfig> tiles; ///< ascending maxD
};

struct ArchInfo {
  std::string name;
  Backend backend = Backend::Host;
  std::string triple;      ///< empty for host: the process triple
  std::string cpu;         ///< "native" for host: the machine's CPU
  unsigned vectorBits = 0; ///< host: vector width; 0 = the CPU's widest
  unsigned minPtx = 0;     ///< NVPTX: the oldest PTX ISA the target needs
  /// NVPTX (sm_90+): griddepcontrol, so a kernel may launch while the one
  /// before it on the stream still runs and wait for it in place
  /// (programmatic dependent launch; the split-KV combine uses it).
  bool gridDependency = false;
  unsigned waveSize = 1;
  unsigned sharedBytes = 0;
  unsigned maxWarps = 1, maxStages = 1;
  unsigned registersPerThread = 0, registerFileBytes = 0;
  std::vector<DType> dtypes;
  std::vector<unsigned> headDims;
  std::map<Pipeline, PipelineInfo> pipelines;
  std::vector<Pipeline> autoOrder; ///< what pipeline=auto tries, in order

  const PipelineInfo *pipeline(Pipeline p) const;
  bool hasDType(DType t) const;
  bool hasHeadDim(unsigned d) const;
  /// The default tile for head dim \p d and \p dtype on pipeline \p p
  /// (null if none).
  const TileConfig *defaultTile(Pipeline p, unsigned d, DType dtype) const;
  /// Every default row for head dim \p d and \p dtype, in table order: the
  /// rows that share the first match's max_d. Later rows serve specs the
  /// first row's tile rules refuse (sm_90a: wgmma's TMA ring takes no
  /// varlen).
  std::vector<const TileConfig *> defaultTiles(Pipeline p, unsigned d,
                                               DType dtype) const;
};

/// Every known target, in the order of specs/arch (sorted by name).
llvm::ArrayRef<ArchInfo> allArchs();
/// The target named \p name, or null.
const ArchInfo *findArch(llvm::StringRef name);
/// "host, sm_80, ...": every target name, for error messages.
std::string allArchNames();

} // namespace fmhajit
