//===- BlockSparsity.h - A plan's block map, built and cached -------------===//
//
// A plan whose forward kernel walks a block map (ir/KeyTiles.h:
// walksBlockMap, and a variant with mask_mod) gets the map of its problem's
// shapes and its kernel's tiles when it is loaded: the variant's mask_mod,
// compiled for this CPU (HostVariant), is evaluated over every block
// (runtime/numerics/BlockMask.h). Building costs up to Sq x Sk calls of
// mask_mod per distinct (b, h), so maps are cached in the process, keyed by
// everything the map depends on (variant, mask, window, tile, batch,
// heads, lengths): re-planning the same shape (each C++ plan() call, the
// Python module's first call per shape, autotuning's candidates of one tile)
// finds it. The plan holds the map (and a GPU plan its device copy) for as
// long as it lives.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/ProblemLowering.h"
#include "runtime/numerics/BlockMask.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

/// The block map \p spec's kernel walks for \p problem, from the process's
/// cache or built now; null where the kernel walks none (no mask_mod, a
/// family or feature without maps, a mask_mod that reads run-time tensors)
/// or \p enabled is false (the kernel then evaluates mask_mod on every tile
/// of the mask's range).
llvm::Expected<std::shared_ptr<const BlockMap>>
planBlockMap(const KernelSpec &spec, const LoweredProblem &problem,
             bool enabled);

/// Points \p params at \p map, whose entries live at \p entries (the
/// host's vector, or its device copy).
void bindBlockMap(KernelArgs &params, const BlockMap &map,
                  const int32_t *entries);

/// One line for the plan's decisions: the blocks of each kind and which
/// maps the plan keeps.
std::string describeBlockMap(const BlockMap &map);

/// The decisions' line where a kernel that could walk a map walks none
/// because its mask_mod reads run-time tensors; empty otherwise.
std::string describeNoBlockMap(const KernelSpec &spec,
                               const LoweredProblem &problem, bool enabled);

} // namespace fmhajit
