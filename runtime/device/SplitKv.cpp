//===- SplitKv.cpp - Split-KV attention: workspace, parameters, host runs -===//
#include "runtime/device/SplitKv.h"
#include "runtime/device/HostExecutor.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"

using namespace fmhajit;

SplitKvWorkspaceSize
fmhajit::splitKvWorkspaceSize(const KernelSpec &spec,
                              const AttentionProblem &problem,
                              unsigned numSplits) {
  if (numSplits <= 1)
    return {};
  int64_t rows = problem.headsQ * problem.totalQ();
  return {int64_t(numSplits) * rows * spec.headDimV(),
          int64_t(numSplits) * rows};
}

SplitKvWorkspaceSize fmhajit::scheduledWorkspaceSize(
    const KernelSpec &spec, const AttentionProblem &problem, int64_t parts) {
  int64_t rows = parts * problem.headsQ * problem.maxSeqlenQ();
  return {rows * spec.headDimV(), rows};
}

llvm::Expected<KernelSpec> fmhajit::combineSpecFor(const KernelSpec &split) {
  if (!hasSplitWorkItems(split.family))
    return makeError(
        ErrorKind::Usage,
        "family " + keyOf(split.family) +
            " writes no split-KV partials; use fwd_splitkv or fwd_paged");
  KernelSpec combine;
  combine.family = Family::SplitKvCombine;
  // The combine reads fp32 partials: fp8 inputs never reach it.
  combine.dtype = isFp8(split.dtype) ? split.outType() : split.dtype;
  combine.out = split.outType();
  combine.d = split.d;
  combine.dv = split.headDimV();
  combine.lse = split.lse;
  combine.varlen = split.varlen;
  combine.target = split.target;
  if (split.pipeline == Pipeline::Simt || split.pipeline == Pipeline::Vector)
    combine.pipeline = split.pipeline;
  return validateSpec(combine);
}

void fmhajit::setSplits(KernelArgs &params, unsigned numSplits,
                        const SplitKvWorkspace &workspace) {
  params.numSplits = static_cast<int32_t>(numSplits);
  params.oAccum = workspace.oAccum;
  params.lseAccum = workspace.lseAccum;
}

KernelArgs fmhajit::makeSplitKvParams(const KernelSpec &spec,
                                      const AttentionProblem &problem,
                                      const ForwardBuffers &buffers,
                                      unsigned numSplits,
                                      const SplitKvWorkspace &workspace) {
  KernelArgs params = makeKernelArgs(spec, problem, buffers);
  setSplits(params, numSplits, workspace);
  return params;
}

KernelArgs fmhajit::makeCombineParams(const KernelSpec &combine,
                                      const KernelArgs &split) {
  KernelArgs params = split;
  params.numQTiles = static_cast<int32_t>(
      (int64_t(split.seqlenQ) + combine.bm - 1) / combine.bm);
  return params;
}

llvm::Expected<HostSplitKv> HostSplitKv::load(const KernelSpec &split,
                                              KernelCache &cache) {
  llvm::Expected<KernelSpec> combineSpec = combineSpecFor(split);
  if (!combineSpec)
    return combineSpec.takeError();
  llvm::Expected<HostKernel> splitKernel = HostKernel::load(split, cache);
  if (!splitKernel)
    return splitKernel.takeError();
  llvm::Expected<HostKernel> combineKernel =
      HostKernel::load(*combineSpec, cache);
  if (!combineKernel)
    return combineKernel.takeError();
  return HostSplitKv(std::move(*splitKernel), std::move(*combineKernel));
}

void HostSplitKv::run(const KernelArgs &params, HostExecutor &executor) const {
  split.run(params, executor);
  if (params.numSplits > 1)
    combine.run(makeCombineParams(combine.spec(), params), executor);
}

SplitKvWorkspace fmhajit::splitWorkspaceAt(void *base,
                                           const SplitWorkspaceLayout &layout) {
  auto *bytes = static_cast<uint8_t *>(base);
  return {reinterpret_cast<float *>(bytes + layout.oAccumOffset),
          reinterpret_cast<float *>(bytes + layout.lseAccumOffset)};
}
