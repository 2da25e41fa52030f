//===- KernelAbiCheck.h - An AMDGPU code object against this build's ABI --===//
//
// HIP trusts the code object's metadata; a code object from a cache
// written by another build could declare another kernarg segment, and the
// kernel would read garbage pointers. HipRuntime::checkArtifact refuses it
// with this check (HipKernelChecks.cpp), which tests call directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/AmdgpuCodeObject.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// Checks that \p codeObject declares kernel \p name with one kernarg
/// segment of exactly sizeof(KernelArgs) bytes, and returns its metadata.
llvm::Expected<CodeObjectKernel> checkKernelAbi(llvm::StringRef codeObject,
                                                llvm::StringRef name);

} // namespace fmhajit
