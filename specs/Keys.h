//===- Keys.h - The spellings of spec keys and values ---------------------===//
//
// One table per enum gives each value its spec spelling (`causal_br`) and its
// encoded-name token (`causalbr`). Tokens never contain '_' so that names
// split cleanly into fields.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace fmhajit {

template <typename E> struct Spelling {
  E value;
  const char *key;   ///< as written in specs: "causal_br"
  const char *token; ///< as written in names: "causalbr"
};

llvm::ArrayRef<Spelling<Family>> familySpellings();
llvm::ArrayRef<Spelling<DType>> dtypeSpellings();
llvm::ArrayRef<Spelling<Mask>> maskSpellings();
llvm::ArrayRef<Spelling<Bias>> biasSpellings();
llvm::ArrayRef<Spelling<Pipeline>> pipelineSpellings();

/// The spec spelling of \p v.
template <typename E> llvm::StringRef keyOf(E v);
/// The name token of \p v.
template <typename E> llvm::StringRef tokenOf(E v);
/// The value spelled \p s in specs, if any.
template <typename E> std::optional<E> parseKey(llvm::StringRef s);
/// The value whose name token is \p s, if any.
template <typename E> std::optional<E> parseToken(llvm::StringRef s);
/// "a, b, c": every spec spelling of E, for error messages.
template <typename E> std::string allKeys();

} // namespace fmhajit
