//===- ApiBackward.cpp - api::planBackward and api::backward --------------===//
//
//   resolveTarget -> lowerProblem (the forward's checks, shapes, layouts)
//   -> the bwd_dq_dk_dv spec of the problem's features (or Options::kernel;
//   Options::deterministic sets deterministic=1; on the host head_items=1
//   where BackwardSchedule.h's rule says so) and its bwd_dot_do_o, and
//   bwd_convert_dq where the grad kernel adds dQ atomically (a GPU without
//   deterministic=1) -> two or three launches, D (and the fp32 dQ) in the
//   workspace -> load (Options::load): the kernels and the host executor,
//   or the GPU's module loads.
//
// The gradients take the layouts of the tensors they belong to, so they
// must not overlap themselves; that is checked as for O.
//
//===----------------------------------------------------------------------===//
#include "ir/targets/HostTarget.h"
#include "runtime/api/ApiContext.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/BackwardKernels.h"
#include "runtime/api/BackwardSchedule.h"
#include "runtime/api/GpuBackwardStep.h"
#include "runtime/api/HostBackwardStep.h"
#include "runtime/api/PinnedKernel.h"
#include "runtime/api/PlanDescribe.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/TensorLayouts.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/Support/Threading.h"
#include <chrono>
#include <optional>

using namespace fmhajit;
using namespace fmhajit::api;
using detail::PlanAccess;
using detail::PlanState;

// What lowerProblem takes but the backward does not.
static llvm::Error checkBackward(const Problem &p, const LoweredProblem &l,
                                 const Options &options) {
  ErrorList errors;
  if (p.device == Device::Hip)
    errors.add(
        ErrorKind::Usage,
        "Problem::device: the backward runs on the host and CUDA "
        "(NVPTX pipelines mma and wgmma), not on hip; use Device::Host or "
        "Device::Cuda");
  if (l.pagedCache)
    errors.add(ErrorKind::Usage,
               "Problem::pagesKv: the backward reads dense K and V; leave "
               "pagesKv unset");
  if (options.numSplits)
    errors.add(ErrorKind::Usage,
               "Options::numSplits has no meaning for the backward");
  if (p.bias)
    errors.add(ErrorKind::Unsupported,
               "Problem::bias: the backward has no gradient for the bias "
               "yet; leave bias false for a backward plan");
  if (p.sink)
    errors.add(ErrorKind::Unsupported,
               "Problem::sink: the backward has no gradient for the sinks "
               "yet; leave sink false for a backward plan");
  checkLayout("dq (laid out like q)", p.q, l.qShape, true, errors);
  checkLayout("dk (laid out like k)", p.k, l.kShape, true, errors);
  checkLayout("dv (laid out like v)", p.v, l.vShape, true, errors);
  return errors.take();
}

/// The host threads Options::threads asks for.
static unsigned hostThreads(const Options &options) {
  return options.threads ? options.threads
                         : llvm::hardware_concurrency().compute_thread_count();
}

/// bf16 on a host with AMX tiles: the key tile of 256 rather than the
/// target's 128 halves, per key, the packing of Q and dO that every product
/// step pays (1.5x on one Sapphire Rapids core, bf16 d=128 S=2048, head
/// items; docs/results.md). Kept only where it validates.
static void amxBackwardTile(KernelSpec &wanted) {
  if (wanted.dtype != fmhajit::DType::BF16 || wanted.bm || wanted.bn)
    return;
  const ArchInfo *arch = findArch(wanted.target);
  if (!arch || arch->backend != Backend::Host || !hostHasAmxBf16(*arch))
    return;
  KernelSpec tiled = wanted;
  tiled.bm = 64, tiled.bn = 256;
  llvm::Expected<KernelSpec> valid = validateSpec(tiled);
  if (!valid) {
    llvm::consumeError(valid.takeError());
    return;
  }
  wanted = tiled;
}

/// The bwd_dq_dk_dv kernel: Options::kernel's, which must compute the
/// problem's features (with the schedule it names), or the target's default
/// for them, with head items on the host where they keep up.
static llvm::Expected<KernelSpec> gradSpecFor(const LoweredProblem &l,
                                              const Options &options) {
  KernelSpec wanted = l.features;
  wanted.family = Family::BwdDqDkDv;
  wanted.lse = false;
  wanted.pack_gqa = false;
  wanted.deterministic = options.deterministic;
  wanted.head_items =
      l.device == Device::Host &&
      hostBackwardTakesHeadItems(l.problem, hostThreads(options));
  if (options.kernel.empty()) {
    if (l.device == Device::Host)
      amxBackwardTile(wanted);
    return validateSpec(wanted);
  }
  auto pinned = resolvePinnedKernel(options.kernel, l.features.target);
  if (!pinned)
    return pinned.takeError();
  wanted.deterministic |= pinned->deterministic;
  wanted.head_items = pinned->head_items;
  KernelSpec same = *pinned;
#define SPEC_TILE(Name, Letter, Help) same.Name = wanted.Name;
#include "specs/SpecKeys.def"
  same.pipeline = wanted.pipeline;
  if (!(same == wanted))
    return makeError(ErrorKind::Usage,
                     "Options::kernel " + options.kernel +
                         " does not compute this backward: use a spec of "
                         "family bwd_dq_dk_dv with the problem's features (" +
                         printSpec(wanted) + ")");
  return pinned;
}

static PlanStep stepOf(const KernelSpec &spec, const std::string &role,
                       int64_t items, const std::string &grid,
                       int64_t workspaceBytes, const std::string &why) {
  return {encodeName(spec), role, items, 1, grid, 0, workspaceBytes, why};
}

// Head items' one launch: dQ's sums in the workspace, or in dQ itself.
static PlanStep headItemsStep(const AttentionProblem &a,
                              const KernelSpec &grad) {
  BackwardWorkspace w = BackwardWorkspace::of(a, grad);
  std::string sums = w.dqBytes ? "summed in fp32 in the workspace, then "
                                 "stored in dQ"
                               : "summed in dQ (fp32)";
  PlanStep step = stepOf(
      grad, "bwd_dq_dk_dv", bwdKeyItems(grad, a.batch, a.headsKv, 0),
      std::to_string(a.batch) + " x " + std::to_string(a.headsKv) +
          " (batch x heads_kv) head items (dK, dV of each key tile of " +
          std::to_string(grad.bn) + ", in order; dQ of the group's " +
          std::to_string(a.headsQ / a.headsKv) + " query heads " + sums + ")",
      w.dqBytes,
      "each item sums its head's gradients alone, in order: deterministic, "
      "5 products a tile pair (key and query items take 7)");
  step.workspaceOffset = w.dqBytes ? w.dqOffset : 0;
  return step;
}

// The two launches, as `fmhajit plan` prints them.
static void addSteps(PlanState &s, const LoweredProblem &l,
                     const KernelSpec &dot, const KernelSpec &grad,
                     const std::optional<KernelSpec> &convert) {
  const AttentionProblem &a = l.problem;
  int64_t sq = a.maxSeqlenQ(), sk = a.maxSeqlenK();
  auto queryTiles = [&](const KernelSpec &k) { return (sq + k.bm - 1) / k.bm; };
  auto grid = [&](const char *heads, int64_t h, int64_t tiles, const char *what,
                  unsigned edge) {
    return std::to_string(a.batch) + " x " + std::to_string(h) + " x " +
           std::to_string(tiles) + " (batch x " + heads + " x " + what +
           " tiles of " + std::to_string(edge) + ")";
  };
  int64_t keyItems = bwdKeyItems(grad, a.batch, a.headsKv, sk);
  int64_t queryItems = a.batch * a.headsQ * queryTiles(grad);
  std::string keyGrid = grid("heads_kv", a.headsKv,
                             keyItems / (a.batch * a.headsKv), "key", grad.bn) +
                        " key items (dK, dV";
  // Where key items add dQ atomically, bwd_dot_do_o zeroes their sums too.
  s.steps.push_back(stepOf(
      dot, "bwd_dot_do_o", a.batch * a.headsQ * queryTiles(dot),
      grid("heads_q", a.headsQ, queryTiles(dot), "query", dot.bm),
      convert ? s.workspaceBytes : BackwardWorkspace::of(a, grad).dsumBytes,
      "D = rowsum(dO * O), fp32, into the workspace"));
  if (grad.head_items) {
    s.steps.push_back(headItemsStep(a, grad));
    return;
  }
  if (!convert) {
    s.steps.push_back(stepOf(
        grad, "bwd_dq_dk_dv", keyItems + queryItems,
        keyGrid + "), then " +
            grid("heads_q", a.headsQ, queryTiles(grad), "query", grad.bm) +
            " query items (dQ)",
        0, "each gradient element written once: deterministic"));
    return;
  }
  s.steps.push_back(stepOf(grad, "bwd_dq_dk_dv", keyItems,
                           keyGrid + ", and dQ added into the workspace)", 0,
                           "dQ summed by fp32 atomic adds: not bitwise "
                           "reproducible (Options::deterministic)"));
  s.steps.push_back(stepOf(
      *convert, "bwd_convert_dq", a.batch * a.headsQ * queryTiles(*convert),
      grid("heads_q", a.headsQ, queryTiles(*convert), "query", convert->bm), 0,
      "dQ = the workspace's fp32 dQ, in the out dtype"));
}

// The kernels through the cache on the plan's GPU: dot, grad[, convert].
static llvm::Error loadGpuBackward(PlanState &s, const LoweredProblem &l,
                                   llvm::ArrayRef<KernelSpec> specs,
                                   KernelCache &cache) {
  KernelArgs params = makeKernelArgs(specs[1], l.problem, {}, l.strides);
  params.dOStrides = params.oStrides, params.dQStrides = params.qStrides;
  params.dKStrides = params.kStrides, params.dVStrides = params.vStrides;
  std::vector<api::StepLoad> loads;
  auto step = GpuBackwardStep::load(specs, params,
                                    BackwardWorkspace::of(l.problem, specs[1]),
                                    l.stream, cache, loads);
  if (!step)
    return step.takeError();
  for (size_t i = 0; i < loads.size(); ++i)
    s.steps[i].load = loads[i];
  s.backwarder = std::move(*step);
  return llvm::Error::success();
}

static llvm::Error loadBackward(PlanState &s, const LoweredProblem &l,
                                llvm::ArrayRef<KernelSpec> specs,
                                const Options &options) {
  auto cache = kernelCacheFor(options.cacheDir);
  if (!cache)
    return cache.takeError();
  s.loadText = "loaded through the kernel cache in " + cache->directory();
  if (l.device != Device::Host)
    return loadGpuBackward(s, l, specs, *cache);
  std::optional<HostKernel> kernels[2];
  for (int i = 0; i < 2; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto kernel = HostKernel::load(specs[i], *cache);
    if (!kernel)
      return kernel.takeError();
    s.steps[i].load.origin = originName(kernel->origin()).str();
    s.steps[i].load.codegenMs = std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
    kernels[i] = std::move(*kernel);
  }
  auto binding = [&](const KernelSpec &spec) {
    KernelArgs params = makeKernelArgs(spec, l.problem, {}, l.strides);
    return HostBinding(params, l.cuSeqlensQ, l.cuSeqlensK, l.alibiSlopes, {});
  };
  s.backwarder = std::make_unique<const HostBackwardStep>(
      *kernels[0], binding(specs[0]), *kernels[1], binding(specs[1]),
      BackwardWorkspace::of(l.problem, specs[1]),
      sharedHostExecutor(options.threads));
  return llvm::Error::success();
}

/// The plan's kernels: bwd_dot_do_o, bwd_dq_dk_dv, and bwd_convert_dq where
/// the grad kernel adds dQ atomically (BackwardKernels.h).
static llvm::Expected<std::vector<KernelSpec>>
backwardSpecs(const LoweredProblem &l, const Options &options) {
  auto grad = gradSpecFor(l, options);
  if (!grad)
    return grad.takeError();
  return backwardKernels(*grad);
}

// Why the host runs head items or key and query items (BackwardSchedule.h).
static std::string scheduleDecision(const LoweredProblem &l,
                                    const KernelSpec &grad,
                                    const Options &options) {
  const AttentionProblem &a = l.problem;
  unsigned threads = hostThreads(options);
  std::string items =
      std::to_string(a.batch * a.headsKv) + " (sequence, K/V head) items on " +
      std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  std::string which =
      grad.head_items ? "head items (head_items=1)" : "key and query items";
  if (!options.kernel.empty())
    return "schedule: " + which + " (Options::kernel)";
  if (grad.head_items)
    return "schedule: " + which + ": " + items +
           " finish no later than key and query items, whose query items "
           "recompute S and dP (7 products a tile pair, not 5; "
           "BackwardSchedule.h)";
  return "schedule: " + which + ": as head items, " + items +
         " would finish later, threads idle while the last run "
         "(BackwardSchedule.h)";
}

// What run() requires of the caller's BackwardTensors on a GPU.
static void setGpuNeeds(PlanState &s, const LoweredProblem &l) {
  s.needsWorkspace = true;
  s.needsCuSeqlens = l.features.varlen;
  s.needsSlopes = l.features.bias == Bias::Alibi;
}

static llvm::Expected<Plan> buildBackwardPlan(const Problem &problem,
                                              const Options &options) {
  auto target = resolveTarget(problem.device, options.target);
  if (!target)
    return target.takeError();
  auto l = lowerProblem(problem, *target);
  if (!l)
    return l.takeError();
  if (llvm::Error err = checkBackward(problem, *l, options))
    return std::move(err);
  auto specs = backwardSpecs(*l, options);
  if (!specs)
    return specs.takeError();
  const KernelSpec &grad = (*specs)[1];
  std::optional<KernelSpec> convert;
  if (specs->size() == 3)
    convert = (*specs)[2];
  auto s = std::make_shared<PlanState>();
  s->isBackward = true;
  s->dropout = grad.dropout;
  s->target = *target;
  s->device = problem.device;
  BackwardWorkspace workspace = BackwardWorkspace::of(l->problem, grad);
  s->workspaceBytes =
      l->device == Device::Host ? workspace.hostBytes() : workspace.bytes();
  if (l->device != Device::Host)
    setGpuNeeds(*s, *l);
  s->problemText = describeProblem(*l);
  s->decisions.push_back(
      std::string("backward: bwd_dot_do_o, then bwd_dq_dk_dv") +
      (convert ? ", then bwd_convert_dq" : "") + " (" +
      (!options.kernel.empty() ? "Options::kernel"
       : grad.bn == 256 && l->features.bn == 0 && l->device == Device::Host
           ? "bm=64, bn=256: bf16 products on AMX tiles"
           : "the target's default tile") +
      ")");
  if (l->device == Device::Host)
    s->decisions.push_back(scheduleDecision(*l, grad, options));
  addSteps(*s, *l, (*specs)[0], grad, convert);
  s->loadText =
      "not loaded (Options::load = false): backward() refuses this plan";
  if (options.load)
    if (llvm::Error err = loadBackward(*s, *l, *specs, options))
      return std::move(err);
  return PlanAccess::make(std::move(s));
}

Result<Plan> api::planBackward(const Problem &problem, const Options &options) {
  return toResult(buildBackwardPlan(problem, options));
}

static Status invalid(const char *message) {
  return Status(StatusCode::InvalidArgument, message);
}

Status api::backward(const Plan &plan, const BackwardTensors &t) {
  const PlanState *s = PlanAccess::state(plan);
  if (!s)
    return invalid(
        "the plan is empty: make one with fmhajit::api::planBackward()");
  if (!s->isBackward)
    return invalid("this plan is not a backward pass: make one with "
                   "fmhajit::api::planBackward(problem)");
  if (!s->backwarder)
    return invalid(
        "the plan was made with Options::load = false, so no kernel is loaded: "
        "plan again with Options::load = true");
  if (!t.q || !t.k || !t.v || !t.o || !t.lse || !t.dO)
    return invalid("BackwardTensors q, k, v, o, lse (the forward's) and dO "
                   "must all point to the caller's memory");
  if (!t.dQ || !t.dK || !t.dV)
    return invalid("BackwardTensors dQ, dK and dV must point to the caller's "
                   "memory for the gradients");
  if (s->needsWorkspace && !t.workspace)
    return invalid("a GPU backward plan needs a workspace: set "
                   "BackwardTensors::workspace to Plan::workspaceBytes() "
                   "bytes of device memory");
  if (s->needsCuSeqlens && (!t.cuSeqlensQ || !t.cuSeqlensK))
    return invalid("a varlen backward plan on a GPU reads cu_seqlens from "
                   "device memory: set BackwardTensors::cuSeqlensQ and "
                   "cuSeqlensK to device copies of the problem's");
  if (const char *why = dropoutProblem(*s, t.dropout))
    return invalid(why);
  if (s->needsSlopes && !t.alibiSlopes)
    return invalid("an ALiBi backward plan on a GPU reads its slopes from "
                   "device memory: set BackwardTensors::alibiSlopes to "
                   "[headsQ] floats on the device");
  return toStatus(s->backwarder->run(t));
}
