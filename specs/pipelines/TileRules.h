//===- TileRules.h - Each pipeline's tile rules and on-chip layout --------===//
//
// A pipeline's emitter (ir/targets/*TileOps.cpp) decides where tiles live and
// which shapes it can build; those decisions are written down once, here, in
// one layout class per pipeline (specs/pipelines/<Pipeline>Layout.h). The
// layout computes the offsets and sizes of the tiles in shared memory / LDS
// and the per-warp counts the emitter indexes its register arrays with, and
// checks a spec's tile against them. Validation asks checkTileRules(); the
// emitter reads the same layout object, so the two cannot disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/Twine.h"

namespace fmhajit {

/// One tile in shared memory / LDS: \p rows rows of \p pitch elements (the
/// row's elements and its padding) of \p elementBytes, from byte \p offset
/// of the block's shared memory.
struct SharedTile {
  unsigned offset = 0, rows = 0, pitch = 0, elementBytes = 0;

  unsigned bytes() const { return rows * pitch * elementBytes; }
  /// The first byte past the tile.
  unsigned end() const { return offset + bytes(); }
};

/// Adds "key=value: why" (a Spec error) to \p errors.
void addTileError(ErrorList &errors, llvm::StringRef key,
                  const llvm::Twine &value, const llvm::Twine &why);
inline void addTileError(ErrorList &errors, llvm::StringRef key, unsigned value,
                         const llvm::Twine &why) {
  addTileError(errors, key, llvm::Twine(value), why);
}

/// Checks that \p spec.stages is 1 to the target's max_stages.
void checkStagesInRange(const KernelSpec &spec, const ArchInfo &arch,
                        ErrorList &errors);

/// Adds an error for each head dim (d, dv) of \p spec that is not a multiple
/// of \p multiple, which the pipeline needs because \p why.
void checkHeadDimMultiple(const KernelSpec &spec, unsigned multiple,
                          const llvm::Twine &why, ErrorList &errors);

/// Checks a resolved spec's tile against its pipeline's rules (stages, how
/// the tile divides among warps, register-array bounds, head-dim
/// granularity) and, when those hold, that its on-chip footprint fits the
/// target. Adds one error per broken rule, each naming key, value and what
/// is allowed. The table's rules (tile edges, warps) are validateSpec's.
void checkTileRules(const KernelSpec &spec, const ArchInfo &arch,
                    ErrorList &errors);

/// Warps a block of \p spec's kernel launches: spec.warps, which compute,
/// plus the producer warpgroup of pipeline=wgmma with stages=2.
unsigned blockWarps(const KernelSpec &spec);

/// Bytes of on-chip tile storage a resolved spec needs: GPU shared memory /
/// LDS, or the host's per-thread tile buffers. The pipeline's layout class
/// computes it; its emitter places its tiles with the same class.
unsigned tileFootprintBytes(const KernelSpec &spec, const ArchInfo &arch);

/// How splitkv_combine's threads share a row (ir/SplitKvCombine.cpp): a
/// group of `columnThreads` threads, each `width` adjacent columns, covers
/// the row's dv columns, and the `groups` groups take the parts in turn,
/// so a GPU row waits on memory for n / groups parts, not n.
struct CombineShape {
  unsigned width = 1, columnThreads = 1, groups = 1;
};

/// The shape for \p threads threads (1 on the host: one group, the whole
/// row one vector). columnThreads is the largest divisor of dv that is at
/// most \p threads and leaves 4 columns a thread when dv allows (16-byte
/// loads on a GPU); every column is owned, none twice.
CombineShape combineShape(unsigned dv, unsigned threads);

/// Shared memory the combine's groups merge through: each group's partial
/// row, running max and sum (fp32); 0 with one group.
unsigned combineScratchBytes(const CombineShape &shape, unsigned dv);

} // namespace fmhajit
