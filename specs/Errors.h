//===- Errors.h - fmhajit's error kinds -----------------------------------===//
//
// Every recoverable failure is an llvm::Error carrying a FmhaError: a kind
// (what went wrong, which decides the exit code) and a message that tells the
// user what to do. Several problems found at once (validation reports every
// violated rule) are several FmhaErrors joined with llvm::joinErrors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit {

enum class ErrorKind {
  Spec,        ///< an invalid spec, name or profile
  Usage,       ///< bad command-line or run-time arguments
  Unsupported, ///< valid, but not implemented (yet) for this target
  Jit,         ///< code generation or JIT linking failed
  Driver,      ///< GPU driver missing or failing
  Io,          ///< files, cache, disk
};

class FmhaError : public llvm::ErrorInfo<FmhaError> {
public:
  static char ID;
  FmhaError(ErrorKind kind, std::string message)
      : kind(kind), message(std::move(message)) {}

  ErrorKind getKind() const { return kind; }
  const std::string &getMessage() const { return message; }
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  ErrorKind kind;
  std::string message;
};

/// Builds an Error of \p kind from \p message.
llvm::Error makeError(ErrorKind kind, const llvm::Twine &message);

/// Collects problems and turns them into one joined Error (or success).
class ErrorList {
public:
  void add(ErrorKind kind, const llvm::Twine &message);
  void add(llvm::Error err);
  bool empty() const { return count == 0; }
  llvm::Error take() {
    count = 0;
    return std::move(pending);
  }

private:
  llvm::Error pending = llvm::Error::success();
  unsigned count = 0;
};

/// What an Error said: one message per problem, and the kind that decides
/// the exit code (the first kind other than Spec, else Spec).
struct Problems {
  ErrorKind kind = ErrorKind::Spec;
  std::vector<std::string> messages;
};

/// \p err with every problem's kind set to \p kind (messages unchanged).
llvm::Error withKind(llvm::Error err, ErrorKind kind);

/// Consumes \p err and returns its problems.
Problems takeProblems(llvm::Error err);

} // namespace fmhajit
