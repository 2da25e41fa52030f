//===- PlanBuilder.cpp - From the dispatcher's choice to launches ---------===//
#include "runtime/api/PlanBuilder.h"
#include "runtime/api/ApiContext.h"
#include "runtime/api/BlockSparsity.h"
#include "runtime/api/GpuForwardStep.h"
#include "runtime/api/HostForwardStep.h"
#include "runtime/api/HostPagedStep.h"
#include "runtime/device/HostKernel.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include <chrono>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

int64_t fmhajit::alignWorkspace(int64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
         kWorkspaceAlignment;
}

void fmhajit::addStep(PlanLayout &layout, StepLayout step) {
  int64_t offset = alignWorkspace(layout.workspaceBytes);
  step.workspaceOffset = step.workspaceBytes ? offset : 0;
  if (step.workspaceBytes)
    layout.workspaceBytes = offset + step.workspaceBytes;
  layout.steps.push_back(std::move(step));
}

static int64_t queryTiles(const AttentionProblem &a, const KernelSpec &spec) {
  int64_t rows = itemQueryRows(spec, a.maxSeqlenQ(), a.headsQ, a.headsKv);
  return (rows + spec.bm - 1) / spec.bm;
}

// The work items of one pass (ir/KernelAbi.h).
static int64_t passItems(const AttentionProblem &a, const KernelSpec &spec) {
  return a.batch * itemHeads(spec, a.headsQ, a.headsKv) * queryTiles(a, spec);
}

// Slowest index first, as the work items are numbered (ir/WorkItem.h).
static std::string gridText(const AttentionProblem &a, const KernelSpec &spec,
                            unsigned splits, bool scheduled = false) {
  std::string text = std::to_string(a.batch) + " x " +
                     std::to_string(itemHeads(spec, a.headsQ, a.headsKv)) +
                     " x " + std::to_string(queryTiles(a, spec));
  std::string what =
      spec.pack_gqa
          ? "batch x heads_kv x query tiles of " + std::to_string(spec.bm) +
                " rows, " + std::to_string(a.headsQ / a.headsKv) +
                " query heads per token"
          : "batch x heads_q x query tiles of " + std::to_string(spec.bm);
  if (scheduled) { // the parts replace the batch (ir/WorkItem.h)
    text = std::to_string(splits) + text.substr(text.find(" x "));
    what =
        "parts of the sequences' keys x " + what.substr(what.find(" x ") + 3);
  } else if (splits > 1) {
    text = std::to_string(splits) + " x " + text;
    what = "key splits x " + what;
  }
  return text + " (" + what + ")";
}

static const char *forwardRole(const LoweredProblem &l, bool split) {
  if (l.pagedCache)
    return split ? "paged split-KV forward" : "paged forward";
  return split ? "split-KV forward" : "forward";
}

// v_pretranspose: the step's workspace holds V^T, which its pass writes
// (ir/targets/NvptxValuePretranspose.h).
static void layoutSingle(const LoweredProblem &l, const Dispatch &d,
                         PlanLayout &layout) {
  const AttentionProblem &a = l.problem;
  const KernelSpec &spec = d.chosen;
  int64_t valuesT =
      spec.v_pretranspose
          ? pretransposedValuesBytes(spec, a.batch, a.headsKv, a.maxSeqlenK())
          : 0;
  std::string why = whyChosen(d);
  if (valuesT)
    why += "; a pass before it writes V^T (fp8) into the workspace";
  int64_t items = passItems(a, spec);
  if (l.device != api::Device::Host)
    layout.tail =
        chooseTailSplit(spec, items, a.maxSeqlenK(), splitWorkers(l.device, 0));
  int64_t tailBytes = tailWorkspaceBytes(spec, layout.tail);
  layout.tailOffset = alignWorkspace(valuesT);
  int64_t extra = int64_t(layout.tail.items) * (layout.tail.parts - 1);
  std::string grid = gridText(a, spec, 1);
  if (extra)
    grid += " + " + std::to_string(extra) + " (the last " +
            std::to_string(layout.tail.items) + " in " +
            std::to_string(layout.tail.parts) + " parts by keys)";
  addStep(layout, {spec, forwardRole(l, false), items + extra, 1, grid, 0,
                   tailBytes ? layout.tailOffset + tailBytes : valuesT, why});
}

// The partials sit in one slice that the split launch writes and the
// combine reads: oAccum, then lseAccum at the next boundary.
static void layoutSplit(const LoweredProblem &l, const SplitChoice &s,
                        PlanLayout &layout) {
  const AttentionProblem &a = l.problem;
  const KernelSpec &spec = s.split.chosen;
  bool scheduled = s.schedule != nullptr;
  SplitKvWorkspaceSize floats =
      scheduled ? scheduledWorkspaceSize(spec, a, s.numSplits)
                : splitKvWorkspaceSize(spec, a, s.numSplits);
  int64_t lseOffset = alignWorkspace(floats.oAccum * int64_t(sizeof(float)));
  int64_t bytes = lseOffset + floats.lseAccum * int64_t(sizeof(float));
  int64_t items = passItems(a, spec) * s.numSplits;
  if (scheduled) // the parts stand for batch x splits
    items = items / a.batch;
  std::string what =
      scheduled ? std::to_string(s.numSplits) +
                      " parts of the sequences' key ranges (a split "
                      "schedule: 1 to " +
                      std::to_string(s.schedule->mostParts) + " a sequence)"
                : std::to_string(s.numSplits) + " key ranges";
  std::string writes = scheduled || s.numSplits > 1
                           ? "; writes fp32 partial O and LSE of " + what
                           : "; one key range: writes O and LSE itself, no "
                             "combine";
  addStep(layout, {spec, forwardRole(l, true), items,
                   scheduled ? s.schedule->mostParts : s.numSplits,
                   gridText(a, spec, s.numSplits, scheduled), 0, bytes,
                   whyChosen(s.split) + writes});
  const StepLayout &first = layout.steps.back();
  layout.splitWorkspace = {first.workspaceOffset,
                           first.workspaceOffset + lseOffset,
                           layout.workspaceBytes};
  if (s.numSplits <= 1) // one part: the split kernel writes O and LSE itself
    return;
  addStep(layout, {s.combine, "combine", passItems(a, s.combine), 1,
                   gridText(a, s.combine, 1), 0, 0,
                   "merges the partials of step " +
                       std::to_string(layout.steps.size())});
}

PlanLayout fmhajit::layoutPlan(const LoweredProblem &problem,
                               const Dispatch &single,
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
static KernelArgs planParams(const PlanLayout &layout,
                             const LoweredProblem &l) {
  const KernelSpec &spec = layout.steps.front().spec;
  KernelArgs params =
      makeKernelArgs(spec, l.problem, ForwardBuffers{}, l.strides);
  if (hasSplitWorkItems(spec.family))
    setSplits(params, layout.split ? layout.split->numSplits : 1, {});
  if (layout.split && layout.split->schedule) // the pointer is bound later
    params.splitTiles = layout.split->schedule->splitTiles;
  if (l.pagedCache) {
    params.maxPagesPerSeq = int32_t(l.pagedCache->maxPagesPerSeq);
    params.log2PageSize = int32_t(l.pagedCache->log2PageSize());
    params.numPages = int32_t(l.pagedCache->numPages);
  }
  return params;
}

static HostBinding hostBinding(const KernelArgs &params,
                               const LoweredProblem &l,
                               std::shared_ptr<const BlockMap> blockMap,
                               const PlanLayout &layout) {
  HostBinding binding(params, l.cuSeqlensQ, l.cuSeqlensK, l.alibiSlopes,
                      l.sinks, std::move(blockMap));
  if (layout.split && layout.split->schedule)
    binding.bindSchedule(layout.split->schedule);
  return binding;
}

static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

static api::StepLoad hostLoad(const HostKernel &kernel, double ms) {
  api::StepLoad load;
  load.origin = originName(kernel.origin()).str();
  load.codegenMs = ms;
  return load;
}

api::StepLoad fmhajit::gpuStepLoad(const GpuKernel &kernel) {
  const GpuLoadStats &stats = kernel.loadStats();
  const GpuKernelResources &res = kernel.resources();
  return {originName(stats.origin).str(),
          stats.codegenMs,
          stats.loadMs,
          res.registers,
          res.localBytes,
          int(kernel.sharedBytes()),
          int(kernel.blockThreads())};
}

static llvm::Expected<std::unique_ptr<const StepRunner>>
loadHostSingle(const PlanLayout &layout, const LoweredProblem &l,
               KernelCache &cache, unsigned threads,
               std::shared_ptr<const BlockMap> blockMap,
               std::vector<api::StepLoad> &loads) {
  Clock::time_point start = Clock::now();
  auto kernel = HostKernel::load(layout.steps.front().spec, cache);
  if (!kernel)
    return kernel.takeError();
  loads.push_back(hostLoad(*kernel, msSince(start)));
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostForwardStep>(
      kernel->entry(), hostBinding(params, l, std::move(blockMap), layout),
      sharedHostExecutor(threads),
      workItems(layout.steps.front().spec, params));
}

// Both kernels of a split pair load in one timed call; the split kernel
// gets the time.
static void addHostLoads(const HostSplitKv &kernels, double ms, bool combines,
                         std::vector<api::StepLoad> &loads) {
  loads.push_back(hostLoad(kernels.splitKernel(), ms));
  if (combines)
    loads.push_back(hostLoad(kernels.combineKernel(), 0));
}

static llvm::Expected<std::unique_ptr<const StepRunner>>
loadHostSplit(const PlanLayout &layout, const LoweredProblem &l,
              KernelCache &cache, unsigned threads,
              std::shared_ptr<const BlockMap> blockMap,
              std::vector<api::StepLoad> &loads) {
  const SplitChoice &s = *layout.split;
  Clock::time_point start = Clock::now();
  auto kernels = HostSplitKv::load(s.split.chosen, cache);
  if (!kernels)
    return kernels.takeError();
  addHostLoads(*kernels, msSince(start), layout.steps.size() > 1, loads);
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostSplitStep>(
      std::move(*kernels), hostBinding(params, l, std::move(blockMap), layout),
      layout.splitWorkspace, sharedHostExecutor(threads));
}

// fwd_paged with the plan's part count (one: no combine runs), the pools'
// strides from the lowering and the paged fields; the block table, the
// lengths and the partials are bound per run.
static llvm::Expected<std::unique_ptr<const StepRunner>>
loadHostPaged(const PlanLayout &layout, const LoweredProblem &l,
              KernelCache &cache, unsigned threads,
              std::vector<api::StepLoad> &loads) {
  const KernelSpec &spec = layout.steps.front().spec;
  Clock::time_point start = Clock::now();
  auto kernels = HostSplitKv::load(spec, cache);
  if (!kernels)
    return kernels.takeError();
  addHostLoads(*kernels, msSince(start), layout.steps.size() > 1, loads);
  KernelArgs params = planParams(layout, l);
  return std::make_unique<const HostPagedStep>(
      std::move(*kernels), hostBinding(params, l, nullptr, layout),
      layout.splitWorkspace, sharedHostExecutor(threads), *l.pagedCache,
      l.seqlensK);
}

// The forward kernel, with the combine when the plan cuts key ranges, on
// the GPU of the target's backend (CUDA or HIP).
static llvm::Expected<std::unique_ptr<const StepRunner>>
loadGpu(const PlanLayout &layout, const LoweredProblem &l, KernelCache &cache,
        const BlockMap *blockMap, std::vector<api::StepLoad> &loads) {
  const KernelSpec &spec = layout.steps.front().spec;
  Backend backend = findArch(spec.target)->backend;
  auto driver = gpuDriverFor(backend);
  if (!driver)
    return driver.takeError();
  std::vector<KernelSpec> specs{spec};
  if (layout.split && layout.split->numSplits > 1)
    specs.push_back(layout.split->combine);
  auto kernels = GpuKernel::loadAll(backend, specs, cache);
  if (!kernels)
    return kernels.takeError();
  for (const GpuKernel &kernel : *kernels)
    loads.push_back(gpuStepLoad(kernel));
  GpuKernel &kernel = kernels->front();
  std::optional<GpuKernel> combine;
  if (kernels->size() > 1)
    combine = std::move(kernels->back());
  KernelArgs params = planParams(layout, l);
  std::shared_ptr<const GpuBuffer> mapCopy;
  if (blockMap) {
    auto uploaded = GpuBuffer::upload(
        *driver, blockMap->entries.data(),
        blockMap->entries.size() * sizeof(int32_t), "block map");
    if (!uploaded)
      return uploaded.takeError();
    mapCopy = std::make_shared<const GpuBuffer>(std::move(*uploaded));
    bindBlockMap(params, *blockMap,
                 static_cast<const int32_t *>(mapCopy->pointer()));
  }
  std::shared_ptr<const GpuBuffer> scheduleCopy;
  if (layout.split && layout.split->schedule) {
    const std::vector<int32_t> &entries = layout.split->schedule->entries;
    auto uploaded =
        GpuBuffer::upload(*driver, entries.data(),
                          entries.size() * sizeof(int32_t), "split schedule");
    if (!uploaded)
      return uploaded.takeError();
    scheduleCopy = std::make_shared<const GpuBuffer>(std::move(*uploaded));
    params.splitSchedule =
        static_cast<const int32_t *>(scheduleCopy->pointer());
  }
  std::optional<int64_t> valuesTOffset;
  if (spec.v_pretranspose)
    valuesTOffset = layout.steps.front().workspaceOffset;
  std::optional<GpuTailSlice> tail;
  if (layout.tail.splits())
    tail = GpuTailSlice{layout.tail, layout.steps.front().workspaceOffset +
                                         layout.tailOffset};
  return std::make_unique<const GpuForwardStep>(
      GpuForwardLaunch{std::move(kernel), std::move(combine)}, params, l.stream,
      kvRowAlignmentNeeded(spec), layout.splitWorkspace, valuesTOffset,
      std::move(mapCopy), std::move(scheduleCopy), tail);
}

static llvm::Expected<std::unique_ptr<const StepRunner>>
loadRunner(const PlanLayout &layout, const LoweredProblem &l,
           KernelCache &cache, unsigned threads,
           std::shared_ptr<const BlockMap> blockMap,
           std::vector<api::StepLoad> &loads) {
  if (findArch(layout.steps.front().spec.target)->backend != Backend::Host)
    return loadGpu(layout, l, cache, blockMap.get(), loads);
  if (l.pagedCache)
    return loadHostPaged(layout, l, cache, threads, loads);
  if (layout.split)
    return loadHostSplit(layout, l, cache, threads, std::move(blockMap), loads);
  return loadHostSingle(layout, l, cache, threads, std::move(blockMap), loads);
}

llvm::Expected<std::vector<std::unique_ptr<const StepRunner>>>
fmhajit::loadPlan(const PlanLayout &layout, const LoweredProblem &problem,
                  KernelCache &cache, LoadChoices choices,
                  std::vector<api::StepLoad> &loads,
                  std::vector<std::string> &decisions) {
  auto blockMap =
      planBlockMap(layout.steps.front().spec, problem, choices.blockSparsity);
  if (!blockMap)
    return blockMap.takeError();
  if (*blockMap)
    decisions.push_back(describeBlockMap(**blockMap));
  std::string noMap = describeNoBlockMap(layout.steps.front().spec, problem,
                                         choices.blockSparsity);
  if (!noMap.empty())
    decisions.push_back(noMap);
  auto runner = loadRunner(layout, problem, cache, choices.threads,
                           std::move(*blockMap), loads);
  if (!runner)
    return runner.takeError();
  std::vector<std::unique_ptr<const StepRunner>> runners;
  runners.push_back(std::move(*runner));
  return std::move(runners);
}
