//===- EmbeddedData.cpp - The JSON files of specs/, built into the binary -===//
#include "specs/EmbeddedData.h"

using namespace fmhajit;

static const EmbeddedFile kFiles[] = {
#include "specs/EmbeddedData.inc"
};

std::vector<EmbeddedFile> fmhajit::embeddedFiles(llvm::StringRef prefix) {
  std::vector<EmbeddedFile> out;
  for (const EmbeddedFile &f : kFiles)
    if (f.path.starts_with(prefix))
      out.push_back(f);
  return out;
}
