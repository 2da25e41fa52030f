//===- ApiStatus.cpp - Status, and the one llvm::Error conversion ---------===//
#include "runtime/api/ApiStatus.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringExtras.h"

using namespace fmhajit;
using api::Status;
using api::StatusCode;

const char *api::statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "ok";
  case StatusCode::InvalidArgument:
    return "invalid argument";
  case StatusCode::Unsupported:
    return "unsupported";
  case StatusCode::CompileError:
    return "compile error";
  case StatusCode::DeviceError:
    return "device error";
  case StatusCode::IoError:
    return "I/O error";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (ok())
    return "ok";
  return std::string(statusCodeName(statusCode)) + ": " + text;
}

// A spec error here comes from a spec the API built from the user's problem
// (an unsupported head dim, dtype or tile): the problem is what to change.
static StatusCode codeFor(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Spec:
  case ErrorKind::Usage:
    return StatusCode::InvalidArgument;
  case ErrorKind::Unsupported:
    return StatusCode::Unsupported;
  case ErrorKind::Jit:
    return StatusCode::CompileError;
  case ErrorKind::Driver:
    return StatusCode::DeviceError;
  case ErrorKind::Io:
    return StatusCode::IoError;
  }
  return StatusCode::CompileError;
}

Status fmhajit::toStatus(llvm::Error err) {
  if (!err)
    return Status();
  Problems problems = takeProblems(std::move(err));
  std::string message = llvm::join(problems.messages, "\n");
  if (message.empty())
    message = "an unknown error occurred";
  return Status(codeFor(problems.kind), std::move(message));
}

// InvalidArgument goes back as a spec error: the problem is what to change.
static ErrorKind kindFor(StatusCode code) {
  switch (code) {
  case StatusCode::Unsupported:
    return ErrorKind::Unsupported;
  case StatusCode::CompileError:
    return ErrorKind::Jit;
  case StatusCode::DeviceError:
    return ErrorKind::Driver;
  case StatusCode::IoError:
    return ErrorKind::Io;
  default:
    return ErrorKind::Spec;
  }
}

llvm::Error fmhajit::toError(const Status &status) {
  if (status.ok())
    return llvm::Error::success();
  ErrorList errors;
  llvm::SmallVector<llvm::StringRef, 8> lines;
  llvm::StringRef(status.message()).split(lines, '\n');
  for (llvm::StringRef line : lines)
    errors.add(kindFor(status.code()), line);
  return errors.take();
}
