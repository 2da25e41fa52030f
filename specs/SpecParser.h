//===- SpecParser.h - Reading and printing specs --------------------------===//
//
// A spec is written as `key=value` pairs separated by commas
// (`family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a`) or as a JSON
// object with the same keys. Missing keys keep KernelSpec's defaults.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// Every spec key, in the order specs are printed (SpecKeys.def).
llvm::ArrayRef<llvm::StringRef> specKeys();

/// Sets \p key to \p value in \p spec; the error names the key and what it
/// accepts.
llvm::Error setSpecKey(KernelSpec &spec, llvm::StringRef key,
                       llvm::StringRef value);

/// Parses text or JSON (the first non-blank character decides); reports
/// every bad key at once.
llvm::Expected<KernelSpec> parseSpec(llvm::StringRef text);

/// `key=value,...` with every key, defaults included ("0" for unset tiles).
std::string printSpec(const KernelSpec &spec);
/// A JSON object with every key.
std::string printSpecJson(const KernelSpec &spec);

} // namespace fmhajit
