//===- GpuForwardStep.cpp - A plan's launches on a GPU --------------------===//
#include "runtime/api/GpuForwardStep.h"
#include "runtime/api/TensorLayouts.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include <cstdint>

using namespace fmhajit;

llvm::Error GpuForwardStep::run(const api::Tensors &t) const {
  auto misaligned = [&](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % kvAlignment;
  };
  if (misaligned(t.k) || misaligned(t.v))
    return makeError(
        ErrorKind::Usage,
        "Tensors::k and Tensors::v must start on " + llvm::Twine(kvAlignment) +
            "-byte boundaries for kernel " + encodeName(kernels.kernel.spec()) +
            " (it copies K/V rows in 16-byte pieces)");
  KernelArgs p = withTensorPointers(params, t);
  p.cuSeqlensQ = t.cuSeqlensQ;
  p.cuSeqlensK = t.cuSeqlensK;
  p.alibiSlopes = t.alibiSlopes;
  p.sinks = t.sinks;
  p.blockTable = t.blockTable; // read by fwd_paged only
  p.cacheSeqlens = t.seqlensK;
  if (valuesTOffset)
    p.valuesT = static_cast<char *>(t.workspace) + *valuesTOffset;
  if (tail)
    setTailSplit(p, kernels.kernel.spec(), tail->split,
                 static_cast<char *>(t.workspace) + tail->offset);
  if (kernels.combine)
    setSplits(p, unsigned(p.numSplits),
              splitWorkspaceAt(t.workspace, workspace));
  return kernels.launch(p, t.stream ? t.stream : stream,
                        maps ? &*maps : nullptr);
}
