//===- NoPollyPlugin.cpp - The static binary's answer for Polly -----------===//
//
// Linked only into FMHAJIT_STATIC builds. Debian's LLVM lists Polly in
// llvm/Support/Extension.def, so clang's backend (clangCodeGen's
// BackendUtil) asks for getPollyPluginInfo() by name, but ships Polly only
// as a shared plugin. Variants never run Polly's passes, so the static
// binary registers a plugin that adds none.
//
//===----------------------------------------------------------------------===//
#include "llvm/Config/llvm-config.h"
#include "llvm/Plugins/PassPlugin.h"

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly (not linked)", LLVM_VERSION_STRING,
          [](llvm::PassBuilder &) {}};
}
