//===- Targets.cpp - Pick the TargetInfo for a spec -----------------------===//
#include "ir/TargetInfo.h"
#include "ir/targets/AmdgpuTarget.h"
#include "ir/targets/GpuTarget.h"
#include "ir/targets/HostTarget.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/pipelines/BackwardMmaLayout.h"

using namespace fmhajit;

llvm::Expected<std::unique_ptr<TargetInfo>>
fmhajit::createTargetInfo(const KernelSpec &spec, const ArchInfo &arch) {
  switch (arch.backend) {
  case Backend::Host: {
    // bf16 products on AMX tiles where the CPU has them (AVX-512 with it).
    unsigned lanes = hostVectorLanes(arch);
    bool amx = spec.dtype == DType::BF16 && lanes == 16 && hostHasAmxBf16(arch);
    // The backward reads its K and V tiles in more than one product.
    bool packsAtLoad = amx && !isBackwardFamily(spec.family);
    return createHostTargetInfo(lanes, amx, packsAtLoad);
  }
  case Backend::Nvptx:
    if (spec.pipeline == Pipeline::Simt || spec.pipeline == Pipeline::Mma ||
        spec.pipeline == Pipeline::Wgmma)
      return createNvptxTargetInfo(spec, arch);
    break;
  case Backend::Amdgpu:
    if (spec.pipeline == Pipeline::Simt || spec.pipeline == Pipeline::Mfma ||
        spec.pipeline == Pipeline::Wmma)
      return createAmdgpuTargetInfo(spec, arch);
    break;
  }
  return makeError(ErrorKind::Unsupported,
                   "code generation for pipeline=" + keyOf(spec.pipeline) +
                       " on " + arch.name + " is not implemented yet");
}
