//===- SpecTesting.cpp - Helpers shared by the tests of specs/ ------------===//
#include "tests/unit/SpecTesting.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"

using namespace fmhajit;

llvm::Expected<KernelSpec> fmhajit::resolveText(llvm::StringRef text) {
  llvm::Expected<KernelSpec> spec = parseSpec(text);
  if (!spec)
    return spec.takeError();
  return validateSpec(*spec);
}

KernelSpec fmhajit::resolvedSpec(llvm::StringRef text) {
  llvm::Expected<KernelSpec> spec = resolveText(text);
  if (!spec) {
    ADD_FAILURE() << text.str() << ": " << llvm::toString(spec.takeError());
    return KernelSpec();
  }
  return *spec;
}

std::vector<std::string> fmhajit::specProblems(llvm::Error err,
                                               llvm::StringRef input) {
  std::vector<std::string> messages;
  bool onlySpecErrors = true;
  llvm::handleAllErrors(
      std::move(err),
      [&](const FmhaError &e) {
        onlySpecErrors &=
            e.getKind() == ErrorKind::Spec && !e.getMessage().empty();
        messages.push_back(e.getMessage());
      },
      [&](const llvm::ErrorInfoBase &e) {
        onlySpecErrors = false;
        messages.push_back(e.message());
      });
  EXPECT_TRUE(onlySpecErrors)
      << "input: " << escapeBytes(input) << "\nnot (only) spec errors: "
      << escapeBytes(llvm::join(messages, " | "));
  return messages;
}

std::string fmhajit::escapeBytes(llvm::StringRef bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else
      out += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, /*Width=*/2);
  }
  return out;
}

void fmhajit::PrintTo(const KernelSpec &spec, std::ostream *os) {
  *os << printSpec(spec);
}
