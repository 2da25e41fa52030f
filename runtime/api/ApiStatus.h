//===- ApiStatus.h - Where library errors become public Statuses ----------===//
//
// Inside fmhajit every recoverable failure is an llvm::Error carrying
// FmhaErrors (specs/Errors.h). The public API returns Status / Result<T>.
// toStatus() is the one place that converts: every public entry point ends
// in it, so codes and message formatting are decided once; toError() is
// its inverse for the API's own clients inside fmhajit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Status.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// Consumes \p err: success, or a Status whose code follows the error's kind
/// and whose message has one line per problem.
api::Status toStatus(llvm::Error err);

/// The way back, for code on top of the API (the harness, the CLI): an
/// error of the kind \p status's code stands for, one problem per line of
/// its message; success for an ok status.
llvm::Error toError(const api::Status &status);

/// \p value, or its error through toStatus().
template <typename T, typename U = T>
api::Result<U> toResult(llvm::Expected<T> value) {
  if (!value)
    return toStatus(value.takeError());
  return U(std::move(*value));
}

} // namespace fmhajit
