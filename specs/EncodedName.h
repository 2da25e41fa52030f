//===- EncodedName.h - The canonical, reversible name of a resolved spec --===//
//
// Grammar (docs/names.md):
//   fmha_<family>_<dtype>[o<out>]_d<d>[v<dv>][_<mask>][_<bias>][_sc][_lse]
//        [_do][_sk][_vl][_pgqa][_det][_var<hash>]
//        _m<bm>n<bn>w<warps>s<stages>_<pipeline>_<target>
// e.g. fmha_fwd_bf16_d128_causal_m128n64w4s2_mma_sm90a. Optional fields are
// written only when they differ from the default, so each resolved spec has
// one name, and decodeName(encodeName(s)) == s. The name is a C identifier
// and the symbol of the kernel in every emitted object.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// The name of \p spec, which must be resolved (validateSpec's result).
std::string encodeName(const KernelSpec &spec);

/// The resolved spec named \p name; rejects names that are malformed, name an
/// invalid spec, or are not canonical (a name with a default written out).
llvm::Expected<KernelSpec> decodeName(llvm::StringRef name);

/// The name token of a target: its name without '_' and '-' ("sm90a").
std::string targetToken(llvm::StringRef target);

} // namespace fmhajit
