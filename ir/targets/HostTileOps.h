//===- HostTileOps.h - Tiles as stack buffers with vector loops -----------===//
#pragma once

#include "ir/TargetInfo.h"
#include "ir/TileOps.h"

namespace fmhajit {

/// Host tiles: fp32 buffers in the kernel's frame. Query and Scores tiles are
/// stored transposed (and KeyT as the K rows it came from) so that both
/// products broadcast one operand and stream the other along contiguous
/// vectors, and the softmax's row reductions become element-wise vector ops.
/// With \p amx, products run on AMX tiles in bf16 (HostAmx.h); with
/// \p packsAtLoad too, whole K and V tiles are copied from memory straight
/// into the packed operands of the one product each feeds (the forward).
std::unique_ptr<TileOps> createHostTileOps(llvm::IRBuilderBase &b,
                                           unsigned lanes, bool amx,
                                           bool packsAtLoad);

} // namespace fmhajit
