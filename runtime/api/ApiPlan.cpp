//===- ApiPlan.cpp - api::plan: problem -> dispatch -> launches -> loaded -===//
//
//   resolveTarget -> lowerProblem -> dispatch (registry + dispatch table,
//   with a stored or freshly measured autotune winner) -> layoutPlan ->
//   loadStep per launch (Options::load)
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCompiler.h"
#include "runtime/api/ApiContext.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/Autotune.h"
#include "runtime/api/Dispatcher.h"
#include "runtime/api/PinnedKernel.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/api/PlanDescribe.h"
#include "runtime/api/PlanState.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/SplitHeuristic.h"
#include "runtime/api/SplitPlanner.h"
#include "runtime/api/TuningStore.h"
#include "runtime/device/SplitKv.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "llvm/Support/Threading.h"

using namespace fmhajit;
using namespace fmhajit::api;
using detail::PlanAccess;
using detail::PlanState;

namespace {
/// Everything plan() has decided or loaded so far.
struct Planning {
  const Options &options;
  LoweredProblem lowered;
  KernelCache *cache = nullptr;
  unsigned threads = 1; ///< resolved host worker count
  DispatchQuery query = {};
  std::shared_ptr<PlanState> state = std::make_shared<PlanState>();
};
} // namespace

static std::optional<TuningStore> tuningStoreFor(const Planning &p) {
  if (!p.cache->diskEnabled())
    return std::nullopt;
  const ArchInfo &arch = *findArch(p.lowered.features.target);
  return TuningStore(p.cache->directory(), kernelFingerprint(arch));
}

// Measures rule 1's candidates and stores the winner, unless a winner is
// stored already; either way the winner goes into the query so that the
// dispatcher's trace says where it came from.
static llvm::Error applyTuning(Planning &p, const Dispatch &untuned) {
  std::string bucket = tuningBucket(p.lowered, p.threads);
  std::optional<TuningStore> store = tuningStoreFor(p);
  if (store)
    if (std::optional<TuningRecord> record = store->load(bucket)) {
      p.query.tunedWinner = record->winner;
      p.state->decisions.push_back("autotune: reused " +
                                   store->pathFor(bucket));
      return llvm::Error::success();
    }
  if (!p.options.load) {
    p.state->decisions.push_back(
        "autotune: nothing stored for this bucket, and measuring "
        "needs Options::load");
    return llvm::Error::success();
  }
  auto timings =
      timeCandidates(untuned.featureMatches, p.lowered, *p.cache, p.threads);
  if (!timings)
    return timings.takeError();
  for (const TunedTiming &t : *timings)
    p.state->timings.push_back({t.kernel, t.ms});
  p.query.tunedWinner = timings->front().kernel;
  if (!store) {
    p.state->decisions.push_back(
        "autotune: measured; not stored (the kernel cache's disk is off)");
    return llvm::Error::success();
  }
  if (llvm::Error err =
          store->save(bucket, {timings->front().kernel, *timings}))
    return err;
  p.state->decisions.push_back("autotune: measured, stored in " +
                               store->pathFor(bucket));
  return llvm::Error::success();
}

static llvm::Expected<Dispatch> chooseSingle(Planning &p,
                                             const Registry &registry,
                                             const DispatchTable &table) {
  auto chosen = dispatch(p.query, registry, table);
  if (!chosen || !p.options.autotune)
    return chosen;
  if (p.lowered.pagedCache) {
    p.state->decisions.push_back(
        "autotune: not for paged K/V (scratch tensors have no block "
        "table to time against): the dispatcher's pick");
    return chosen;
  }
  if (llvm::Error err = applyTuning(p, *chosen))
    return std::move(err);
  return dispatch(p.query, registry, table);
}

static void recordRules(PlanState &s, const Dispatch &d, const char *prefix) {
  for (const RuleOutcome &r : d.rules)
    s.decisions.push_back(prefix + r.rule + ": " + r.outcome);
}

// Options::numSplits, else the machine's rule (one part where the workers
// are unknown: a GPU plan made without its driver).
static unsigned pinnedSplits(Planning &p, const KernelSpec &pinned) {
  if (p.options.numSplits) {
    p.state->decisions.push_back(
        "plan: " + std::to_string(p.options.numSplits) +
        " key splits (Options::numSplits)");
    return p.options.numSplits;
  }
  unsigned workers = splitWorkers(p.lowered.device, p.threads);
  unsigned n =
      workers ? chooseNumSplits(pinned, p.lowered.problem, workers) : 1;
  std::string unit = p.lowered.device != Device::Host ? " SMs"
                     : workers == 1                   ? " thread"
                                                      : " threads";
  p.state->decisions.push_back("plan: " + std::to_string(n) +
                               " key splits (chooseNumSplits for " +
                               std::to_string(workers) + unit + ")");
  return n;
}

// Options::kernel: that kernel, with its combine when it cuts key ranges.
static llvm::Expected<PlanLayout> choosePinned(Planning &p) {
  auto pinned =
      resolvePinnedKernel(p.options.kernel, p.lowered.features.target);
  if (!pinned)
    return pinned.takeError();
  auto chosen = dispatchPinned(*pinned, p.query);
  if (!chosen)
    return chosen.takeError();
  recordRules(*p.state, *chosen, "");
  bool cutsKeys = hasSplitWorkItems(pinned->family);
  if (!cutsKeys && p.options.numSplits > 1)
    return makeError(ErrorKind::Spec,
                     "Options::numSplits needs a fwd_splitkv or fwd_paged "
                     "kernel; " +
                         encodeName(*pinned) + " has family " +
                         keyOf(pinned->family).str());
  if (cutsKeys && !p.options.numSplits)
    if (auto schedule = scheduleFor(
            p.lowered, *pinned, splitWorkers(p.lowered.device, p.threads))) {
      auto combine = combineSpecFor(*pinned);
      if (!combine)
        return combine.takeError();
      p.state->decisions.push_back("plan: " +
                                   describeSchedule(*schedule, pinned->bn));
      unsigned parts = unsigned(schedule->parts);
      return layoutPlan(
          p.lowered, *chosen,
          SplitChoice{*chosen, *combine, parts, std::move(schedule)});
    }
  unsigned n = cutsKeys ? pinnedSplits(p, *pinned) : 1;
  if (pinned->family != Family::FwdSplitKv && n <= 1)
    return layoutPlan(p.lowered, *chosen, std::nullopt);
  auto combine = combineSpecFor(*pinned);
  if (!combine)
    return combine.takeError();
  return layoutPlan(p.lowered, *chosen, SplitChoice{*chosen, *combine, n});
}

// The single-pass choice, then split-KV when the problem is decode-shaped
// and SplitPlanner says it pays.
static llvm::Expected<PlanLayout> choose(Planning &p) {
  if (!p.options.kernel.empty())
    return choosePinned(p);
  if (p.options.numSplits)
    return makeError(ErrorKind::Spec,
                     "Options::numSplits applies to a pinned kernel: set "
                     "Options::kernel to a fwd_splitkv or fwd_paged kernel");
  const std::string &target = p.lowered.features.target;
  auto registry = Registry::forTarget(target);
  if (!registry)
    return registry.takeError();
  const DispatchTable &table = DispatchTable::forTarget(target);
  auto single = chooseSingle(p, *registry, table);
  if (!single)
    return single.takeError();
  recordRules(*p.state, *single, "");
  std::vector<std::string> notes;
  auto split = chooseSplit(p.lowered, *single, p.query, *registry, table,
                           splitWorkers(p.lowered.device, p.threads), notes);
  if (!split)
    return split.takeError();
  // A paged plan's split kernel is its single pick, its rules above, unless
  // SplitPlanner narrowed its tile.
  if (*split && !((*split)->split.chosen == single->chosen))
    recordRules(*p.state, (*split)->split, "split-KV ");
  for (const std::string &note : notes)
    p.state->decisions.push_back("plan: " + note);
  return layoutPlan(p.lowered, *single, std::move(*split));
}

static void recordLayout(Planning &p, const PlanLayout &layout) {
  PlanState &s = *p.state;
  for (const StepLayout &step : layout.steps)
    s.steps.push_back({encodeName(step.spec), step.role, step.workItems,
                       step.keySplits, step.grid, step.workspaceOffset,
                       step.workspaceBytes, step.why});
  s.workspaceBytes = layout.workspaceBytes;
  s.target = p.lowered.features.target;
  s.device = p.lowered.device;
  s.problemText = describeProblem(p.lowered);
  bool gpu = p.lowered.device != Device::Host;
  s.needsLse = p.lowered.features.lse;
  s.needsWorkspace = gpu && layout.workspaceBytes > 0;
  s.needsCuSeqlens = gpu && p.lowered.features.varlen;
  s.needsSlopes = gpu && p.lowered.features.bias == Bias::Alibi;
  s.needsBias = p.lowered.features.bias == Bias::Elementwise;
  s.dropout = p.lowered.features.dropout;
  s.needsSinks = p.lowered.features.sink && (gpu || p.lowered.sinks.empty());
  s.needsBlockTable = p.lowered.pagedCache.has_value();
  s.needsDeviceLengths = gpu && s.needsBlockTable;
  s.fp8Inputs = isFp8(p.lowered.features.dtype);
  s.variantTensors = p.lowered.variantTensors.count();
  if (s.variantTensors)
    s.decisions.push_back("variant: reads tensor " +
                          p.lowered.variantTensors.describe() +
                          "; run() takes " + std::to_string(s.variantTensors) +
                          " Tensors::variantTensors");
}

static llvm::Error loadSteps(Planning &p, const PlanLayout &layout) {
  if (!p.options.load) {
    p.state->loadText =
        "not loaded (Options::load = false): run() refuses this plan";
    return llvm::Error::success();
  }
  std::vector<StepLoad> loads;
  auto runners = loadPlan(layout, p.lowered, *p.cache,
                          {p.options.threads, p.options.blockSparsity}, loads,
                          p.state->decisions);
  if (!runners)
    return runners.takeError();
  for (size_t i = 0; i < loads.size() && i < p.state->steps.size(); ++i)
    p.state->steps[i].load = loads[i];
  p.state->runners = std::move(*runners);
  p.state->loadText =
      "loaded through the kernel cache in " + p.cache->directory();
  return llvm::Error::success();
}

static llvm::Expected<Plan> buildPlan(const Problem &problem,
                                      const Options &options) {
  auto target = resolveTarget(problem.device, options.target);
  if (!target)
    return target.takeError();
  auto lowered = lowerProblem(problem, *target);
  if (!lowered)
    return lowered.takeError();
  auto cache = kernelCacheFor(options.cacheDir);
  if (!cache)
    return cache.takeError();
  Planning p{options, std::move(*lowered)};
  p.cache = &*cache;
  p.threads = options.threads
                  ? options.threads
                  : llvm::hardware_concurrency().compute_thread_count();
  const AttentionProblem &a = p.lowered.problem;
  p.query = {
      p.lowered.features,       a.maxSeqlenQ(),
      a.maxSeqlenK(),           std::nullopt,
      p.lowered.kvRowAlignment, a.headsQ / std::max<int64_t>(1, a.headsKv)};
  if (p.lowered.pagedCache)
    p.query.log2PageSize = int(p.lowered.pagedCache->log2PageSize());
  auto layout = choose(p);
  if (!layout)
    return layout.takeError();
  recordLayout(p, *layout);
  if (llvm::Error err = loadSteps(p, *layout))
    return std::move(err);
  return PlanAccess::make(std::move(p.state));
}

Result<Plan> api::plan(const Problem &problem, const Options &options) {
  return toResult(buildPlan(problem, options));
}

//===-- Plan --------------------------------------------------------------===//

static const PlanState &emptyState() {
  static const PlanState empty;
  return empty;
}

static const PlanState &stateOf(const Plan &plan) {
  const PlanState *s = PlanAccess::state(plan);
  return s ? *s : emptyState();
}

Plan::Plan() = default;
Plan::~Plan() = default;
Plan::Plan(const Plan &) = default;
Plan &Plan::operator=(const Plan &) = default;

const std::vector<PlanStep> &Plan::steps() const {
  return stateOf(*this).steps;
}
int64_t Plan::workspaceBytes() const { return stateOf(*this).workspaceBytes; }
const std::string &Plan::target() const { return stateOf(*this).target; }
Device Plan::device() const { return stateOf(*this).device; }
bool Plan::loaded() const {
  const PlanState &s = stateOf(*this);
  return !s.runners.empty() || s.appender || s.backwarder;
}
const std::vector<std::string> &Plan::decisions() const {
  return stateOf(*this).decisions;
}
const std::vector<CandidateTiming> &Plan::timings() const {
  return stateOf(*this).timings;
}
int Plan::variantTensorCount() const {
  return int(stateOf(*this).variantTensors);
}
std::string Plan::describe() const {
  const PlanState *s = PlanAccess::state(*this);
  return s ? describePlan(*s)
           : "an empty plan: make one with fmhajit::api::plan()\n";
}
