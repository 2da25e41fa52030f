//===- EmbeddedData.h - The JSON files of specs/, built into the binary ---===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include <vector>

namespace fmhajit {

struct EmbeddedFile {
  llvm::StringRef path; ///< relative to specs/: "arch/sm_80.json"
  llvm::StringRef text;
};

/// The embedded files whose path starts with \p prefix.
std::vector<EmbeddedFile> embeddedFiles(llvm::StringRef prefix);

} // namespace fmhajit
