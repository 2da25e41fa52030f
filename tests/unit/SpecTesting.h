//===- SpecTesting.h - Helpers shared by the tests of specs/ --------------===//
//
// Resolving spec text the way the CLI does, reading the problems out of an
// Error (and failing the test when one is not a spec error), and printing
// specs and arbitrary bytes readably in failure messages.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <ostream>
#include <string>
#include <vector>

namespace fmhajit {

/// Parses then validates \p text, as `fmhajit validate` does.
llvm::Expected<KernelSpec> resolveText(llvm::StringRef text);

/// resolveText(\p text), or a default spec after adding a test failure
/// that names \p text and the problems.
KernelSpec resolvedSpec(llvm::StringRef text);

/// The messages in \p err. Adds a test failure (naming \p input) unless
/// every problem is a FmhaError of kind Spec with a non-empty message.
std::vector<std::string> specProblems(llvm::Error err, llvm::StringRef input);

/// \p bytes with everything but printable ASCII written as \xNN.
std::string escapeBytes(llvm::StringRef bytes);

/// Lets GoogleTest print a KernelSpec as its key=value text.
void PrintTo(const KernelSpec &spec, std::ostream *os);

} // namespace fmhajit
