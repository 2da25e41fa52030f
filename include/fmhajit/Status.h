//===- fmhajit/Status.h - How the public API reports failure --------------===//
//
// Every public call returns a Status or a Result<T>: no exceptions, no LLVM
// types. A failed Status carries a code (what kind of failure, for programs)
// and a message (what to change, for people); several problems found at
// once are one message, one problem per line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace fmhajit::api {

enum class StatusCode {
  Ok,
  InvalidArgument, ///< the problem, tensors or options are wrong: fix them
  Unsupported,     ///< valid, but not available for this target or build
  CompileError,    ///< code generation or JIT linking failed (a bug: report it)
  DeviceError,     ///< the GPU driver is missing or failed
  IoError,         ///< the kernel cache or tuning files could not be used
};

/// "ok", "invalid argument", "unsupported", ...
const char *statusCodeName(StatusCode code);

/// Success, or a failure with a code and a message saying what to change.
class Status {
public:
  /// Success.
  Status() = default;
  Status(StatusCode code, std::string message)
      : statusCode(code), text(std::move(message)) {}

  bool ok() const { return statusCode == StatusCode::Ok; }
  StatusCode code() const { return statusCode; }
  /// Empty on success.
  const std::string &message() const { return text; }
  /// "ok", or "<code name>: <message>".
  std::string toString() const;

private:
  StatusCode statusCode = StatusCode::Ok;
  std::string text;
};

/// A T, or the Status saying why there is none.
template <typename T> class Result {
public:
  Result(T value) : stored(std::move(value)) {}
  /// \p status must be a failure.
  Result(Status status) : failure(std::move(status)) {
    assert(!failure.ok() && "a Result without a value needs a failed Status");
  }

  bool ok() const { return stored.has_value(); }
  explicit operator bool() const { return ok(); }
  /// Success when a value is held.
  const Status &status() const { return failure; }

  T &value() & {
    assert(ok() && "no value: check ok() first");
    return *stored;
  }
  const T &value() const & {
    assert(ok() && "no value: check ok() first");
    return *stored;
  }
  T &&value() && {
    assert(ok() && "no value: check ok() first");
    return std::move(*stored);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  std::optional<T> stored;
  Status failure;
};

} // namespace fmhajit::api
