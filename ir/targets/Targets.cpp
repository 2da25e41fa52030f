//===- Targets.cpp - Pick the TargetInfo for a spec -----------------------===//
#include "ir/TargetInfo.h"
#include "ir/targets/HostTarget.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<std::unique_ptr<TargetInfo>>
fmhajit::createTargetInfo(const KernelSpec &spec, const ArchInfo &arch) {
  switch (arch.backend) {
  case Backend::Host:
    return createHostTargetInfo(hostVectorLanes(arch));
  case Backend::Nvptx:
  case Backend::Amdgpu:
    break;
  }
  return makeError(ErrorKind::Unsupported,
                   "code generation for target " + arch.name + " is not implemented yet");
}
