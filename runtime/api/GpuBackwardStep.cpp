//===- GpuBackwardStep.cpp - A backward plan's launches on a GPU ----------===//
#include "runtime/api/GpuBackwardStep.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/api/TensorLayouts.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include <cstdint>

using namespace fmhajit;

// The gradients are laid out like the tensors they belong to: dO, dQ, dK
// and dV take the bound strides of O, Q, K and V.
llvm::Error GpuBackwardStep::run(const api::BackwardTensors &t) const {
  auto misaligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16;
  };
  if (misaligned(t.q) || misaligned(t.k) || misaligned(t.v) || misaligned(t.dO))
    return makeError(ErrorKind::Usage,
                     "BackwardTensors q, k, v and dO must start on 16-byte "
                     "boundaries for kernel " +
                         encodeName(grad.spec()) +
                         " (it copies rows in 16-byte pieces)");
  KernelArgs p = params;
  p.q = t.q, p.k = t.k, p.v = t.v;
  p.o = const_cast<void *>(t.o); // read only: the kernels never write O
  p.lse = const_cast<float *>(t.lse);
  p.cuSeqlensQ = t.cuSeqlensQ, p.cuSeqlensK = t.cuSeqlensK;
  p.alibiSlopes = t.alibiSlopes;
  setDropout(p, t.dropout);
  p.dO = t.dO, p.dQ = t.dQ, p.dK = t.dK, p.dV = t.dV;
  workspace.bind(p, t.workspace);
  GpuStreamHandle on = t.stream ? t.stream : stream;
  // Each kernel counts query tiles of its own bm (a pinned grad kernel's
  // may differ from the helpers').
  auto launch = [&](const GpuKernel &kernel) {
    p.numQTiles = (p.seqlenQ + kernel.spec().bm - 1) / kernel.spec().bm;
    return kernel.launch(p, on);
  };
  if (llvm::Error err = launch(dot))
    return err;
  if (llvm::Error err = launch(grad))
    return err;
  return convert ? launch(*convert) : llvm::Error::success();
}

llvm::Expected<std::unique_ptr<const GpuBackwardStep>>
GpuBackwardStep::load(llvm::ArrayRef<KernelSpec> specs,
                      const KernelArgs &params, BackwardWorkspace workspace,
                      void *stream, KernelCache &cache,
                      std::vector<api::StepLoad> &loads) {
  assert((specs.size() == 2 || specs.size() == 3) && "dot, grad[, convert]");
  auto loaded =
      GpuKernel::loadAll(findArch(specs.front().target)->backend, specs, cache);
  if (!loaded)
    return loaded.takeError();
  std::vector<GpuKernel> &kernels = *loaded;
  for (const GpuKernel &kernel : kernels)
    loads.push_back(gpuStepLoad(kernel));
  std::optional<GpuKernel> convert;
  if (kernels.size() == 3)
    convert = std::move(kernels[2]);
  return std::make_unique<const GpuBackwardStep>(
      std::move(kernels[0]), std::move(kernels[1]), std::move(convert), params,
      workspace, stream);
}
