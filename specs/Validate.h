//===- Validate.h - Is a spec buildable, and what exactly does it mean ----===//
//
// validateSpec checks a spec against the rules and its target's capability
// table, reporting every violated rule at once (each names the key, the value
// and what is allowed), and returns the resolved spec: every default filled in
// (out dtype, dv, pipeline, tile), so that it has exactly one encoded name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "specs/pipelines/TileRules.h" // tileFootprintBytes, with the rules it serves
#include "llvm/Support/Error.h"

namespace fmhajit {

/// The resolved spec, or every problem found.
llvm::Expected<KernelSpec> validateSpec(const KernelSpec &spec);

/// True for families that run the attention loop (and so take masks,
/// scores modifiers and a matrix pipeline).
bool hasAttentionLoop(Family f);

} // namespace fmhajit
