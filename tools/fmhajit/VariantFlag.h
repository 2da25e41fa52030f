//===- VariantFlag.h - --variant FILE, for compile, run and plan ----------===//
//
// A variant reaches a kernel two ways at once: its source (the problem's
// variant field, or the compiler's registry) and its hash (the spec's
// variant key, and so the kernel's name). --variant FILE gives the source;
// these helpers give the spec the matching hash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "specs/Errors.h"
#include "specs/KernelSpec.h"
#include "tools/fmhajit/Args.h"

namespace fmhajit {

/// The flag's help, in the flag tables of compile, run and plan.
inline constexpr const char *kVariantFlagHelp =
    "a C++ file defining score_mod and/or mask_mod (docs/variants.md)";

/// Reads --variant FILE (if given) into \p p's variant and variantName.
void readVariantFlag(const Args &args, api::Problem &p, ErrorList &errors);

/// Checks the variant \p p carries (clang's messages on failure) and gives
/// \p spec its hash; refuses a spec that names another variant, or one that
/// names a variant when no --variant was given.
llvm::Error pinVariant(KernelSpec &spec, const api::Problem &p);

} // namespace fmhajit
