//===- VariantRegistry.h - The variants this process knows, by hash -------===//
//
// A spec, and so a kernel name, names its variant by content hash only
// (specs/ knows nothing of C++). The sources live here: the CLI's --variant
// and the API's Problem::variant add theirs, and the compiler finds a
// kernel's variant by the hash in its spec. Adding compiles the variant for
// the host once, so a bad variant is refused where it is given, with clang's
// messages, before any kernel is planned.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantCompiler.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// Checks \p source (compiling it for the host) and remembers it; returns
/// its hash. Adding the same text again is cheap and returns the same hash.
llvm::Expected<VariantHash> addVariant(const VariantSource &source);

/// The source of the variant \p hash, or a Usage error saying how to give
/// it.
llvm::Expected<VariantSource> findVariant(const VariantHash &hash);

/// The tensor slots the variant \p hash reads (as findVariant, a Usage
/// error when it was not given).
llvm::Expected<VariantTensorUse> findVariantTensors(const VariantHash &hash);

} // namespace fmhajit
