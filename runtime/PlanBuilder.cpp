//===- PlanBuilder.cpp - From the dispatcher's choice to launches ---------===//
#include "runtime/PlanBuilder.h"
#include "runtime/CudaForwardStep.h"
#include "runtime/HostForwardStep.h"
#include "runtime/HostKernel.h"
#include "runtime/HostPagedStep.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"

using namespace fmhajit;

int64_t fmhajit::alignWorkspace(int64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

void fmhajit::addStep(PlanLayout &layout, StepLayout step) {
  int64_t offset = alignWorkspace(layout.workspaceBytes);
  step.workspaceOffset = step.workspaceBytes ? offset : 0;
  if (step.workspaceBytes)
    layout.workspaceBytes = offset + step.workspaceBytes;
  layout.steps.push_back(std::move(step));
}

static int64_t queryTiles(const AttentionProblem &a, const KernelSpec &spec) {
  return (a.maxSeqlenQ() + spec.bm - 1) / spec.bm;
}

// Slowest index first, as the work items are numbered (ir/WorkItem.h).
static std::string gridText(const AttentionProblem &a, const KernelSpec &spec, unsigned splits) {
  std::string text = std::to_string(a.batch) + " x " + std::to_string(a.headsQ) + " x " +
                     std::to_string(queryTiles(a, spec));
  std::string what = "batch x heads_q x query tiles of " + std::to_string(spec.bm);
  if (splits > 1) {
    text = std::to_string(splits) + " x " + text;
    what = "key splits x " + what;
  }
  return text + " (" + what + ")";
}

static std::string whyText(const Dispatch &d) {
  return d.fromRegistry ? "the dispatcher's pick from the registry"
                        : "made for this problem (no registry kernel has its features)";
}

static const char *forwardRole(const LoweredProblem &l, bool split) {
  if (l.pagedCache)
    return split ? "paged split-KV forward" : "paged forward";
  return split ? "split-KV forward" : "forward";
}

static void layoutSingle(const LoweredProblem &l, const Dispatch &d, PlanLayout &layout) {
  const AttentionProblem &a = l.problem;
  addStep(layout, {d.chosen, forwardRole(l, false), a.batch * a.headsQ * queryTiles(a, d.chosen),
                   1, gridText(a, d.chosen, 1), 0, 0, whyText(d)});
}

// The partials sit in one slice that the split launch writes and the
// combine reads: oAccum, then lseAccum at the next boundary.
static void layoutSplit(const LoweredProblem &l, const SplitChoice &s, PlanLayout &layout) {
  const AttentionProblem &a = l.problem;
  SplitKvWorkspaceSize floats = splitKvWorkspaceSize(s.split.chosen, a, s.numSplits);
  int64_t lseOffset = alignWorkspace(floats.oAccum * int64_t(sizeof(float)));
  int64_t bytes = lseOffset + floats.lseAccum * int64_t(sizeof(float));
  addStep(layout, {s.split.chosen, forwardRole(l, true),
                   a.batch * a.headsQ * queryTiles(a, s.split.chosen) * s.numSplits, s.numSplits,
                   gridText(a, s.split.chosen, s.numSplits), 0, bytes,
                   whyText(s.split) + "; writes fp32 partial O and LSE of " +
                       std::to_string(s.numSplits) + " key ranges"});
  const StepLayout &first = layout.steps.back();
  layout.splitWorkspace = {first.workspaceOffset, first.workspaceOffset + lseOffset,
                           layout.workspaceBytes};
  addStep(layout, {s.combine, "combine", a.batch * a.headsQ * queryTiles(a, s.combine), 1,
                   gridText(a, s.combine, 1), 0, 0,
                   "merges the partials of step " + std::to_string(layout.steps.size())});
}

PlanLayout fmhajit::layoutPlan(const LoweredProblem &problem, const Dispatch &single,
                               std::optional<SplitChoice> split) {
  PlanLayout layout;
  if (split)
    layoutSplit(problem, *split, layout);
  else
    layoutSingle(problem, single, layout);
  layout.split = std::move(split);
  return layout;
}

// The launch's KernelArgs but the caller's pointers: a split or paged
// kernel's part count (one when the plan does not cut key ranges) and a
// paged plan's page fields.
static KernelArgs planParams(const PlanLayout &layout, const LoweredProblem &l) {
  const KernelSpec &spec = layout.steps.front().spec;
  KernelArgs params = makeKernelArgs(spec, l.problem, ForwardBuffers{}, l.strides);
  if (hasSplitWorkItems(spec.family))
    setSplits(params, layout.split ? layout.split->numSplits : 1, {});
  if (l.pagedCache) {
    params.maxPagesPerSeq = int32_t(l.pagedCache->maxPagesPerSeq);
    params.log2PageSize = int32_t(l.pagedCache->log2PageSize());
  }
  return params;
}

static HostBinding hostBinding(const KernelArgs &params, const LoweredProblem &l) {
  return HostBinding(params, l.cuSeqlensQ, l.cuSeqlensK, l.alibiSlopes);
}

static llvm::Expected<std::unique_ptr<const StepRunner>> loadHostSingle(const PlanLayout &layout,
                                                                        const LoweredProblem &l,
                                                                        KernelCache &cache,
                                                                        unsigned threads) {
  auto kernel = HostKernel::load(layout.steps.front().spec, cache);
  if (!kernel)
    return kernel.takeError();
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostForwardStep>(kernel->entry(), hostBinding(params, l),
                                                 sharedHostExecutor(threads), workItems(params));
}

static llvm::Expected<std::unique_ptr<const StepRunner>> loadHostSplit(const PlanLayout &layout,
                                                                       const LoweredProblem &l,
                                                                       KernelCache &cache,
                                                                       unsigned threads) {
  const SplitChoice &s = *layout.split;
  auto kernels = HostSplitKv::load(s.split.chosen, cache);
  if (!kernels)
    return kernels.takeError();
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostSplitStep>(std::move(*kernels), hostBinding(params, l),
                                               layout.splitWorkspace, sharedHostExecutor(threads));
}

// fwd_paged with the plan's part count (one: no combine runs), the pools'
// strides from the lowering and the paged fields; the block table, the
// lengths and the partials are bound per run.
static llvm::Expected<std::unique_ptr<const StepRunner>> loadHostPaged(const PlanLayout &layout,
                                                                       const LoweredProblem &l,
                                                                       KernelCache &cache,
                                                                       unsigned threads) {
  const KernelSpec &spec = layout.steps.front().spec;
  auto kernels = HostSplitKv::load(spec, cache);
  if (!kernels)
    return kernels.takeError();
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostPagedStep>(std::move(*kernels), hostBinding(params, l),
                                               layout.splitWorkspace, sharedHostExecutor(threads),
                                               *l.pagedCache, l.seqlensK);
}

// The forward kernel, with the combine when the plan cuts key ranges.
static llvm::Expected<std::unique_ptr<const StepRunner>> loadCuda(const PlanLayout &layout,
                                                                  const LoweredProblem &l,
                                                                  KernelCache &cache) {
  const KernelSpec &spec = layout.steps.front().spec;
  auto kernel = CudaKernel::load(spec, cache);
  if (!kernel)
    return kernel.takeError();
  std::optional<CudaKernel> combine;
  if (layout.split) {
    auto loaded = CudaKernel::load(layout.split->combine, cache);
    if (!loaded)
      return loaded.takeError();
    combine = std::move(*loaded);
  }
  return std::make_unique<const CudaForwardStep>(CudaForwardLaunch{std::move(*kernel),
                                                                   std::move(combine)},
                                                 planParams(layout, l), l.stream,
                                                 kvRowAlignmentNeeded(spec), layout.splitWorkspace);
}

static llvm::Expected<std::unique_ptr<const StepRunner>> loadRunner(const PlanLayout &layout,
                                                                    const LoweredProblem &l,
                                                                    KernelCache &cache,
                                                                    unsigned threads) {
  const KernelSpec &spec = layout.steps.front().spec;
  const ArchInfo &arch = *findArch(spec.target);
  if (arch.backend == Backend::Nvptx)
    return loadCuda(layout, l, cache);
  if (l.pagedCache && arch.backend == Backend::Host)
    return loadHostPaged(layout, l, cache, threads);
  if (layout.split && arch.backend == Backend::Host)
    return loadHostSplit(layout, l, cache, threads);
  if (arch.backend == Backend::Host)
    return loadHostSingle(layout, l, cache, threads);
  return makeError(ErrorKind::Unsupported, "kernel " + encodeName(spec) + " (family " +
                                               keyOf(spec.family) + " on " + arch.name +
                                               ") cannot be launched by this build yet");
}

llvm::Expected<std::vector<std::unique_ptr<const StepRunner>>>
fmhajit::loadPlan(const PlanLayout &layout, const LoweredProblem &problem, KernelCache &cache,
                  unsigned threads) {
  auto runner = loadRunner(layout, problem, cache, threads);
  if (!runner)
    return runner.takeError();
  std::vector<std::unique_ptr<const StepRunner>> runners;
  runners.push_back(std::move(*runner));
  return std::move(runners);
}
