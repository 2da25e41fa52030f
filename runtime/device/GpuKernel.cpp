//===- GpuKernel.cpp - A compiled, loaded GPU kernel ----------------------===//
#include "runtime/device/GpuKernel.h"
#include "compiler/Concurrently.h"
#include "runtime/device/CausalSections.h"
#include "runtime/device/GpuModule.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/GpuTensorMaps.h"
#include "runtime/device/HostKernel.h"
#include "runtime/device/TuningKnobs.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <algorithm>
#include <chrono>
#include <limits>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

/// Compiles (or finds) the artifact of \p spec, checks it and loads it,
/// unless this process has loaded it already; fills \p stats and what the
/// artifact says of \p res.
static llvm::Expected<std::shared_ptr<const GpuModule>>
loadModule(GpuDriver &driver, const KernelSpec &spec, KernelCache &cache,
           GpuLoadStats &stats, GpuKernelResources &res) {
  std::string name = encodeName(spec);
  Clock::time_point start = Clock::now();
  auto artifact = compileKernel(spec, cache, driver.compileOptions());
  if (!artifact)
    return artifact.takeError();
  stats.codegenMs = msSince(start);
  stats.origin = (*artifact)->origin;
  if (llvm::Error err = driver.checkArtifact((*artifact)->bytes(), name, res))
    return std::move(err);
  if (auto module = LoadedModules::get().find(name)) {
    stats.moduleReused = true;
    return module;
  }
  Clock::time_point loadStart = Clock::now(); // the driver's JIT included
  auto module =
      GpuModule::load(driver, *(*artifact)->storage, *findArch(spec.target));
  if (!module)
    return module.takeError();
  stats.loadMs = msSince(loadStart);
  return LoadedModules::get().insert(name, std::move(*module));
}

llvm::Expected<GpuKernel>
GpuKernel::load(GpuDriver &driver, const KernelSpec &spec, KernelCache &cache) {
  if (llvm::Error err = driver.checkTarget(*findArch(spec.target)))
    return std::move(err);
  GpuLoadStats stats;
  GpuKernelResources res;
  auto module = loadModule(driver, spec, cache, stats, res);
  if (!module)
    return module.takeError();
  auto fn = (*module)->function(encodeName(spec));
  if (!fn)
    return fn.takeError();
  GpuKernel kernel(driver, spec, std::move(*module), *fn);
  if (spec.v_pretranspose) {
    auto pass = kernel.module->function(pretransposeSymbol(encodeName(spec)));
    if (!pass)
      return pass.takeError();
    kernel.pretranspose = *pass;
  }
  kernel.stats = stats;
  auto shape = driver.configureKernel(*fn, spec, res);
  if (!shape)
    return shape.takeError();
  kernel.res = std::move(res);
  kernel.shape = *shape;
  return std::move(kernel);
}

llvm::Expected<std::vector<GpuKernel>>
GpuKernel::loadAll(Backend backend, llvm::ArrayRef<KernelSpec> specs,
                   KernelCache &cache) {
  // One error, on this thread, when there is no driver at all.
  if (auto driver = gpuDriverFor(backend); !driver)
    return driver.takeError();
  // Threads only pay for two or more kernels this process has not loaded.
  size_t toLoad = llvm::count_if(specs, [](const KernelSpec &spec) {
    return !LoadedModules::get().find(encodeName(spec));
  });
  return valuesOrFirstError(runConcurrently<GpuKernel>(
      specs.size(), toLoad > 1 ? compileThreads() : 1,
      [&](size_t i) -> llvm::Expected<GpuKernel> {
        // Per thread: CUDA's current context is set by the driver's get().
        auto driver = gpuDriverFor(backend);
        if (!driver)
          return driver.takeError();
        return load(*driver, specs[i], cache);
      }));
}

const std::string &GpuKernel::jitLog() const { return module->infoLog(); }

/// A persistent kernel (walksWorkItems) runs any grid. A block per
/// multiprocessor hides each item's start and end behind the next one's
/// loads. Measured on an H100 (docs/results.md, "Persistent blocks"):
/// without a causal mask 2-16% faster up to 2048 keys and up to 5% slower
/// at 16384, where a block per item lets the hardware's scheduler balance
/// the multiprocessors. Session 22 (same binary, the knob below, dispatched
/// tiles): 1-3.5% faster at 4096 keys on all five rows timed (fp8 d = 128
/// and 256, bf16 d = 64, 128, 256), 1-2% at 8192 (fp8), and -3% to +2%
/// at 16384, so the limit is 8192. Under causal masks, whose schedule sorts
/// items by cost (ir/PersistentSchedule.h), 2-25% faster at every length but
/// one tie. Varlen sequences of unequal lengths without a mask take a block
/// per item: the walk's fixed stride hands some blocks the long sequences'
/// items and others the short ones' (session 23, bf16 on an H100, 16 heads:
/// a block per item 12-25% faster on 16k tokens of 256-4096, 12-30% on 64
/// sequences of 64-512; 2-4% slower where the lengths are equal, which
/// keep the rule above; under causal masks the sorted walk stays 1-40%
/// faster). FMHAJIT_PERSISTENT_MAX_KEYS, where set, replaces these rules
/// with one limit (a tuning knob for bench/gpu: 0 never runs the persistent
/// grid, a large value always does).
bool fmhajit::runsPersistent(const KernelSpec &spec, const KernelArgs &params) {
  static constexpr int64_t kUnmaskedMaxKeys = 8192;
  static const int64_t override =
      knobFromEnvironment("FMHAJIT_PERSISTENT_MAX_KEYS");
  if (!walksWorkItems(spec))
    return false;
  if (override >= 0)
    return params.seqlenK <= override;
  if (sortsWorkItemsByCost(spec))
    return true;
  bool unequalLengths =
      spec.varlen &&
      int64_t(params.totalQ) < int64_t(params.batch) * params.seqlenQ;
  return !unequalLengths && params.seqlenK <= kUnmaskedMaxKeys;
}

// v_pretranspose's pass: one block per 64 keys of each (sequence, K/V
// head), before the kernel on the same stream.
llvm::Error GpuKernel::launchPretranspose(const KernelArgs &params,
                                          GpuStreamHandle stream) const {
  if (!params.valuesT)
    return makeError(ErrorKind::Usage,
                     "kernel " + encodeName(kernelSpec) +
                         " (v_pretranspose=1) writes V^T into its plan's "
                         "workspace, but KernelArgs::valuesT is null");
  int64_t blocks = pretransposedKeys(params.seqlenK) / kPretransposeKeys *
                   params.headsKv * params.batch;
  if (blocks < 1 || blocks > std::numeric_limits<int32_t>::max())
    return makeError(ErrorKind::Usage,
                     "V^T's pass needs " + llvm::Twine(blocks) + " " +
                         gpu->blockNoun() + "; the GPU launches 1 to 2^31-1");
  GpuLaunchShape passShape{kPretransposeThreads,
                           pretransposeSharedBytes(kernelSpec.headDimV())};
  return gpu->launch(*pretranspose, unsigned(blocks), passShape, stream,
                     &params, sizeof(params));
}

// A split tail (TailSplit.h) needs a kernel that splits its tail and the
// workspace the parts write to.
llvm::Error GpuKernel::checkTailSplit(const KernelArgs &params) const {
  if (params.tailParts <= 1)
    return llvm::Error::success();
  if (!splitsTail(kernelSpec))
    return makeError(ErrorKind::Usage,
                     "kernel " + encodeName(kernelSpec) +
                         " does not split its last round's items "
                         "(KernelArgs::tailParts must be 0 or 1)");
  if (params.tailItems < 1 || !params.tailCounters || !params.oAccum ||
      !params.lseAccum)
    return makeError(ErrorKind::Usage,
                     "kernel " + encodeName(kernelSpec) + " splits " +
                         llvm::Twine(params.tailItems) +
                         " items in parts, but its workspace is not set "
                         "(KernelArgs::tailItems, tailCounters, oAccum, "
                         "lseAccum)");
  return llvm::Error::success();
}

// The parts count their arrivals from zero: the counters are cleared on the
// stream before each launch, since the workspace is the caller's and may
// hold anything.
llvm::Error GpuKernel::clearTailCounters(const KernelArgs &params,
                                         GpuStreamHandle stream) const {
  if (params.tailParts <= 1)
    return llvm::Error::success();
  return gpu->clear32Async(params.tailCounters,
                           size_t(params.tailItems) * kTailGroups, stream);
}

llvm::Error GpuKernel::launch(const KernelArgs &params, GpuStreamHandle stream,
                              const TensorMaps *prepared) const {
  if (llvm::Error err = checkTailSplit(params))
    return err;
  int64_t items = workItems(kernelSpec, params); // the family decides
  int64_t blocks = items;
  if (blocks < 1 || blocks > std::numeric_limits<int32_t>::max())
    return makeError(ErrorKind::Usage,
                     "the problem needs " + llvm::Twine(blocks) + " " +
                         gpu->blockNoun() + "; the GPU launches 1 to 2^31-1");
  if (runsPersistent(kernelSpec, params) && gpu->device().computeUnits > 0)
    blocks = std::min<int64_t>(blocks, gpu->device().computeUnits);
  // The driver copies the bytes at launch; a copy keeps the caller's const.
  KernelArgs copy = params;
  if (sortsWorkItemsByCost(kernelSpec)) {
    static const int64_t sectionBytes =
        knobFromEnvironment("FMHAJIT_SECTION_BYTES");
    static const bool weighSpans =
        knobFromEnvironment("FMHAJIT_SECTION_SPAN") != 0;
    copy.sectionHeads = causalSectionHeads(kernelSpec, params, items, blocks,
                                           sectionBytes, weighSpans);
  }
  if (!usesTensorMaps(kernelSpec))
    return gpu->launch(fn, unsigned(blocks), shape, stream, &copy,
                       sizeof(copy));
  TensorMaps maps;
  if (llvm::Error err =
          prepared ? bindTensorMaps(*gpu, kernelSpec, *prepared, params, maps)
                   : encodeTensorMaps(*gpu, kernelSpec, params, maps))
    return err;
  if (llvm::Error err = clearTailCounters(params, stream))
    return err;
  // v_pretranspose (always on the TMA ring): the pass writes the V^T the
  // maps read, once every check of the call has passed. The kernel then
  // launches as the pass drains (shape.overlapsPrevious) unless
  // FMHAJIT_PASS_OVERLAP=0, for measurement.
  GpuLaunchShape kernelShape = shape;
  if (pretranspose) {
    if (llvm::Error err = launchPretranspose(params, stream))
      return err;
    static const bool overlapPass =
        knobFromEnvironment("FMHAJIT_PASS_OVERLAP") != 0;
    kernelShape.overlapsPrevious &= overlapPass;
  }
  return gpu->launch(fn, unsigned(blocks), kernelShape, stream, &copy,
                     sizeof(copy), &maps);
}

std::optional<TensorMaps>
GpuKernel::prepareTensorMaps(const KernelArgs &params) const {
  return fmhajit::prepareTensorMaps(*gpu, kernelSpec, params);
}

llvm::Expected<float> GpuKernel::launchTimed(const KernelArgs &params,
                                             GpuStreamHandle stream) const {
  auto timer = GpuTimer::create(*gpu);
  if (!timer)
    return timer.takeError();
  return launchTimed(params, stream, *timer);
}

llvm::Expected<float> GpuKernel::launchTimed(const KernelArgs &params,
                                             GpuStreamHandle stream,
                                             GpuTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
