//===- VariantFlag.h - --variant FILE, for compile, run and plan ----------===//
//
// A variant reaches a kernel two ways at once: its source (the problem's
// variant field, or the compiler's registry) and its hash (the spec's
// variant key, and so the kernel's name). --variant FILE gives the source;
// these helpers give the spec the matching hash. `run` also takes the
// run-time tensors the variant reads, --variant-tensor FILE.npy once per
// slot, in slot order; `plan` and `compile` only say which slots it reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "specs/Errors.h"
#include "specs/KernelSpec.h"
#include "tools/fmhajit/Args.h"
#include <string>
#include <vector>

namespace fmhajit {

/// The flag's help, in the flag tables of compile, run and plan.
inline constexpr const char *kVariantFlagHelp =
    "a C++ file defining score_mod and/or mask_mod (docs/variants.md)";

/// The help of --variant-tensor, in run's flag table.
inline constexpr const char *kVariantTensorFlagHelp =
    "a float32 .npy array the variant reads with fmhajit_tensor (flat); "
    "repeat it in slot order (docs/variants.md#run-time-tensors)";

/// One --variant-tensor: the file and its values, flat in C order.
struct VariantTensorFlag {
  std::string file;
  std::vector<float> values;
};

/// Reads every --variant-tensor FILE.npy in the order given (slot order);
/// refuses one without --variant, an unreadable file, an empty array.
llvm::Expected<std::vector<VariantTensorFlag>>
readVariantTensorFlags(const Args &args, const api::Problem &p);

/// The note `compile` prints where the variant \p spec names reads tensor
/// slots ("" where it reads none): which, and how a run gives them.
std::string variantTensorNote(const KernelSpec &spec);

/// Reads --variant FILE (if given) into \p p's variant and variantName.
void readVariantFlag(const Args &args, api::Problem &p, ErrorList &errors);

/// Checks the variant \p p carries (clang's messages on failure) and gives
/// \p spec its hash; refuses a spec that names another variant, or one that
/// names a variant when no --variant was given.
llvm::Error pinVariant(KernelSpec &spec, const api::Problem &p);

} // namespace fmhajit
