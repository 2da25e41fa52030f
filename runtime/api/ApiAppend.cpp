//===- ApiAppend.cpp - api::plan(AppendProblem) and api::append -----------===//
//
//   resolveTarget -> lowerAppend -> dispatch (family append_kv, the same
//   three rules) -> one launch -> load (Options::load): the kernel, the
//   rotary tables for every row the cache holds, the host executor.
//
// An append plan is a Plan like any other (describe(), steps(), loaded()),
// so that a decode step's two plans read alike; append() runs it.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/ApiContext.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/AppendLowering.h"
#include "runtime/api/DispatchTable.h"
#include "runtime/api/Dispatcher.h"
#include "runtime/api/GpuAppendStep.h"
#include "runtime/api/HostAppendStep.h"
#include "runtime/api/HostForwardStep.h"
#include "runtime/api/PinnedKernel.h"
#include "runtime/api/TensorLayouts.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "llvm/Support/Threading.h"
#include <chrono>

using namespace fmhajit;
using namespace fmhajit::api;
using detail::PlanAccess;
using detail::PlanState;

static PlanStep appendStep(const LoweredAppend &l, const Dispatch &d) {
  const AppendKvProblem &a = l.problem;
  const KernelSpec &spec = d.chosen;
  // Without Q to rotate only the K/V heads have work (makeAppendKvParams).
  int64_t heads = a.rotateQ ? a.headsQ : a.headsKv;
  int64_t tiles = (a.newTokens + spec.bm - 1) / spec.bm;
  std::string grid = std::to_string(a.batch) + " x " + std::to_string(heads) +
                     " x " + std::to_string(tiles) +
                     " (batch x heads x new-row tiles of " +
                     std::to_string(spec.bm) + ")";
  return {encodeName(spec), "append", a.batch * heads * tiles, 1, grid, 0, 0,
          whyChosen(d)};
}

// The dispatcher's pick, or Options::kernel's when it can serve the append.
static llvm::Expected<Dispatch> chooseAppend(const LoweredAppend &l,
                                             const Options &options) {
  // The caches are packed, so a row starts every headsKv * dim elements.
  unsigned bytes = dtypeBytes(l.features.dtype);
  TensorStrides cache{
      l.problem.cache.blockStride(l.problem.headsKv, l.problem.d),
      l.problem.headsKv * l.problem.d, l.problem.d};
  DispatchQuery query{l.features, l.problem.newTokens, 1, std::nullopt,
                      rowAlignment(cache, bytes, false)};
  if (options.numSplits)
    return makeError(ErrorKind::Spec,
                     "Options::numSplits has no meaning for an append");
  if (!options.kernel.empty()) {
    auto pinned = resolvePinnedKernel(options.kernel, l.features.target);
    if (!pinned)
      return pinned.takeError();
    return dispatchPinned(*pinned, query);
  }
  auto registry = Registry::forTarget(l.features.target);
  if (!registry)
    return registry.takeError();
  return dispatch(query, *registry,
                  DispatchTable::forTarget(l.features.target));
}

static llvm::Error loadAppend(PlanState &s, const LoweredAppend &l,
                              const KernelSpec &spec, const Options &options,
                              void *stream) {
  auto cache = kernelCacheFor(options.cacheDir);
  if (!cache)
    return cache.takeError();
  s.loadText = "loaded through the kernel cache in " + cache->directory();
  if (Backend backend = findArch(spec.target)->backend;
      backend != Backend::Host) {
    auto driver = gpuDriverFor(backend);
    if (!driver)
      return driver.takeError();
    auto step = GpuAppendStep::load(*driver, spec, l, *cache, stream);
    if (!step)
      return step.takeError();
    s.appender = std::move(*step);
    return llvm::Error::success();
  }
  auto start = std::chrono::steady_clock::now();
  auto kernel = HostKernel::load(spec, *cache);
  if (!kernel)
    return kernel.takeError();
  s.steps.front().load.origin = originName(kernel->origin()).str();
  s.steps.front().load.codegenMs = std::chrono::duration<double, std::milli>(
                                       std::chrono::steady_clock::now() - start)
                                       .count();
  RotaryTables tables;
  if (l.problem.rotary != RotaryForm::None)
    tables = makeRotaryTables(l.problem.cache.rowsPerSequence(),
                              l.problem.resolvedRotaryDim(), l.rotaryBase);
  s.appender = std::make_unique<const HostAppendStep>(
      std::move(*kernel), l.problem, l.seqlens, std::move(tables),
      sharedHostExecutor(options.threads));
  return llvm::Error::success();
}

static llvm::Expected<Plan> buildAppendPlan(const AppendProblem &problem,
                                            const Options &options) {
  auto target = resolveTarget(problem.device, options.target);
  if (!target)
    return target.takeError();
  auto lowered = lowerAppend(problem, *target);
  if (!lowered)
    return lowered.takeError();
  auto chosen = chooseAppend(*lowered, options);
  if (!chosen)
    return chosen.takeError();
  auto s = std::make_shared<PlanState>();
  s->isAppend = true;
  s->steps.push_back(appendStep(*lowered, *chosen));
  s->target = *target;
  s->device = problem.device;
  s->problemText = describeAppend(*lowered);
  s->needsBlockTable = lowered->problem.cache.isPaged();
  s->needsDeviceLengths = problem.device != Device::Host;
  s->needsQ = lowered->problem.rotateQ;
  for (const RuleOutcome &r : chosen->rules)
    s->decisions.push_back(r.rule + ": " + r.outcome);
  s->loadText =
      "not loaded (Options::load = false): append() refuses this plan";
  if (options.load)
    if (llvm::Error err =
            loadAppend(*s, *lowered, chosen->chosen, options, problem.stream))
      return std::move(err);
  return PlanAccess::make(std::move(s));
}

Result<Plan> api::plan(const AppendProblem &problem, const Options &options) {
  return toResult(buildAppendPlan(problem, options));
}

static Status invalid(const char *message) {
  return Status(StatusCode::InvalidArgument, message);
}

static Status checkTensors(const PlanState &s, const AppendTensors &t) {
  if (!t.kNew || !t.vNew || !t.kCache || !t.vCache)
    return invalid(
        "AppendTensors kNew, vNew, kCache and vCache must all point to the "
        "caller's memory");
  if (s.needsBlockTable && !t.blockTable)
    return invalid("a paged append writes through the block table: set "
                   "AppendTensors::blockTable to the [batch, maxPagesPerSeq] "
                   "int32 page indices");
  if (s.needsQ && (!t.q || !t.qOut))
    return invalid("the problem rotates Q: set AppendTensors::q and qOut "
                   "([batch, newTokens, "
                   "headsQ, headDim]; qOut may be q)");
  if (s.needsDeviceLengths && !t.seqlens)
    return invalid(
        "an append on a GPU reads each sequence's current length from device "
        "memory: set AppendTensors::seqlens to [batch] int32 on the device");
  if (bool(t.rotaryCos) != bool(t.rotarySin))
    return invalid("give both AppendTensors::rotaryCos and rotarySin, or "
                   "neither (the plan's "
                   "tables)");
  return Status();
}

Status api::append(const Plan &plan, const AppendTensors &tensors) {
  const PlanState *s = PlanAccess::state(plan);
  if (!s)
    return invalid(
        "the plan is empty: make one with fmhajit::api::plan(AppendProblem)");
  if (s->isBackward)
    return invalid("this plan is a backward pass: call "
                   "fmhajit::api::backward(plan, BackwardTensors) to run it");
  if (!s->isAppend)
    return invalid("this plan computes attention, not an append: call "
                   "fmhajit::api::run(plan, "
                   "Tensors) to run it");
  if (!s->appender)
    return invalid(
        "the plan was made with Options::load = false, so no kernel is loaded: "
        "plan again with Options::load = true");
  if (Status status = checkTensors(*s, tensors); !status.ok())
    return status;
  return toStatus(s->appender->run(tensors));
}
