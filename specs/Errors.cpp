//===- Errors.cpp - fmhajit's error kinds ---------------------------------===//
#include "specs/Errors.h"

using namespace fmhajit;

char FmhaError::ID = 0;

llvm::Error fmhajit::makeError(ErrorKind kind, const llvm::Twine &message) {
  return llvm::make_error<FmhaError>(kind, message.str());
}

void ErrorList::add(ErrorKind kind, const llvm::Twine &message) {
  add(makeError(kind, message));
}

void ErrorList::add(llvm::Error err) {
  if (!err)
    return;
  ++count;
  pending = llvm::joinErrors(std::move(pending), std::move(err));
}

Problems fmhajit::takeProblems(llvm::Error err) {
  Problems out;
  auto note = [&](ErrorKind kind, std::string message) {
    if (out.kind == ErrorKind::Spec)
      out.kind = kind;
    out.messages.push_back(std::move(message));
  };
  llvm::handleAllErrors(
      std::move(err),
      [&](const FmhaError &e) { note(e.getKind(), e.getMessage()); },
      [&](const llvm::ErrorInfoBase &e) { note(ErrorKind::Io, e.message()); });
  return out;
}

llvm::Error fmhajit::withKind(llvm::Error err, ErrorKind kind) {
  ErrorList out;
  for (std::string &m : takeProblems(std::move(err)).messages)
    out.add(kind, m);
  return out.take();
}
