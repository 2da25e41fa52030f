//===- AmdgpuCodeObject.h - What an HSA code object declares --------------===//
//
// A code object's NT_AMDGPU_METADATA note (msgpack, the "amdhsa.kernels"
// list) is what the HIP runtime trusts: the kernarg layout it copies
// arguments into, the LDS it reserves, the wave size and register counts it
// schedules by. readCodeObjectKernels reads it back, so that the runtime
// can check a cached code object against this build's KernelArgs before
// launching it, and tests can check what the backend declared.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fmhajit {

/// One entry of a kernel's .args.
struct KernelArgument {
  uint64_t offset = 0, size = 0;
  std::string valueKind; ///< "by_value", "global_buffer", "hidden_..."
};

/// One entry of amdhsa.kernels.
struct CodeObjectKernel {
  std::string name, symbol;
  std::vector<KernelArgument> args;
  uint64_t kernargSegmentSize = 0, kernargSegmentAlign = 0;
  uint64_t groupSegmentFixedSize = 0;   ///< static LDS bytes
  uint64_t privateSegmentFixedSize = 0; ///< scratch bytes per work item
  uint64_t wavefrontSize = 0, maxFlatWorkgroupSize = 0;
  uint64_t vgprCount = 0, agprCount = 0, sgprCount = 0;
  uint64_t vgprSpillCount = 0, sgprSpillCount = 0;
};

/// The kernels \p codeObject (a linked .hsaco or a relocatable object)
/// declares; an ErrorKind::Jit error when it is not an AMDGPU ELF or its
/// metadata is missing or malformed.
llvm::Expected<std::vector<CodeObjectKernel>>
readCodeObjectKernels(llvm::StringRef codeObject);

} // namespace fmhajit
