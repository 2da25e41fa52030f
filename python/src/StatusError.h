//===- StatusError.h - A failed api::Status as a Python exception ---------===//
//
// The one place where the public API's failures become exceptions, with the
// Status message unchanged:
//   InvalidArgument -> ValueError       Unsupported -> NotImplementedError
//   CompileError, DeviceError -> RuntimeError    IoError -> OSError
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Status.h"

namespace fmhajit::python {

/// Raises the exception for \p status, which must have failed.
[[noreturn]] void raiseStatus(const api::Status &status);

/// \p result's value, or raises its status.
template <typename T> T valueOrRaise(api::Result<T> result) {
  if (!result)
    raiseStatus(result.status());
  return std::move(*result);
}

/// Raises unless \p status is ok.
inline void checkStatus(const api::Status &status) {
  if (!status.ok())
    raiseStatus(status);
}

} // namespace fmhajit::python
