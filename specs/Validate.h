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
#include "llvm/Support/Error.h"

namespace fmhajit {

/// The resolved spec, or every problem found.
llvm::Expected<KernelSpec> validateSpec(const KernelSpec &spec);

/// True for families that run the attention loop (and so take masks,
/// scores modifiers and a matrix pipeline).
bool hasAttentionLoop(Family f);

/// Bytes of on-chip tile storage a resolved spec needs: GPU shared memory /
/// LDS, or the host's per-thread tile buffers. Code generation sizes its
/// buffers with this same function.
unsigned tileFootprintBytes(const KernelSpec &spec, const ArchInfo &arch);

} // namespace fmhajit
