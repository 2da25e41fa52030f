//===- AmdgpuLinker.h - ELF object to HSA code object, with lld -----------===//
//
// The AMDGPU backend emits a relocatable ELF object; the HIP runtime loads
// a shared object (the .hsaco code object). linkCodeObject runs lld's ELF
// driver in-process (`ld.lld -shared`) on a copy of the object in a private
// temporary directory, which is removed afterwards, and returns the linked
// bytes. lld keeps global state, so calls are serialized.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit {

/// Links the AMDGPU relocatable object \p object into a code object. Fails
/// with an ErrorKind::Jit error carrying lld's messages, or ErrorKind::Io
/// when the temporary files cannot be written or read.
llvm::Expected<std::string> linkCodeObject(llvm::StringRef object);

} // namespace fmhajit
