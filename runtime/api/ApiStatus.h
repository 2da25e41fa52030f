//===- ApiStatus.h - Where library errors become public Statuses ----------===//
//
// Inside fmhajit every recoverable failure is an llvm::Error carrying
// FmhaErrors (specs/Errors.h). The public API returns Status / Result<T>.
// toStatus() is the one place that converts: every public entry point ends
// in it, so codes and message formatting are decided once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Status.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// Consumes \p err: success, or a Status whose code follows the error's kind
/// and whose message has one line per problem.
api::Status toStatus(llvm::Error err);

/// \p value, or its error through toStatus().
template <typename T, typename U = T> api::Result<U> toResult(llvm::Expected<T> value) {
  if (!value)
    return toStatus(value.takeError());
  return U(std::move(*value));
}

} // namespace fmhajit
