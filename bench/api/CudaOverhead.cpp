//===- CudaOverhead.cpp - What api::run costs on CUDA beyond the launch ---===//
//
// ApiOverhead.h describes the problems, paths and samples.
//
//===----------------------------------------------------------------------===//
#include "bench/api/ApiOverhead.h"
#include "compiler/KernelCache.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/CudaDriver.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuModule.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/GpuTensorMaps.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

using namespace fmhajit;
using namespace fmhajit::bench;
using Clock = std::chrono::steady_clock;

namespace {
struct CudaProblem {
  const char *name;
  int64_t seqlenQ, seqlenK;
};
constexpr CudaProblem kProblems[] = {{"tiny", 1, 16}, {"tma", 128, 128}};
constexpr int64_t kHeadDim = 64;

/// One way to queue the kernel on the stream.
struct Path {
  std::string name;
  std::function<llvm::Error()> call;
};

/// The plan, and its kernel loaded beside it (the same module and function).
struct Loaded {
  api::Plan plan;
  KernelSpec spec;
  GpuKernel kernel;
  GpuFunctionHandle fn;
};

/// Q, K, V (normal samples) and O in device memory.
struct DeviceData {
  GpuBuffer q, k, v, o;
};
} // namespace

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static api::Problem problemOf(const CudaProblem &c) {
  api::Problem p;
  p.seqlenQ = c.seqlenQ;
  p.seqlenK = c.seqlenK;
  p.headDim = kHeadDim;
  p.dtype = api::DType::BF16;
  p.device = api::Device::Cuda;
  return p;
}

static llvm::Expected<Loaded> loadBoth(GpuDriver &driver, const CudaProblem &c,
                                       const std::string &target) {
  api::Options options;
  options.target = target;
  api::Result<api::Plan> plan = api::plan(problemOf(c), options);
  if (!plan)
    return makeError(ErrorKind::Driver, plan.status().toString());
  if (plan->steps().size() != 1)
    return makeError(ErrorKind::Jit, llvm::Twine("the ") + c.name +
                                         " problem planned more than one "
                                         "kernel; expected one");
  auto spec = decodeName(plan->steps().front().kernel);
  if (!spec)
    return spec.takeError();
  auto cache = KernelCache::global();
  if (!cache)
    return cache.takeError();
  auto kernel = GpuKernel::load(driver, *spec, *cache);
  if (!kernel)
    return kernel.takeError();
  std::string name = encodeName(*spec);
  std::shared_ptr<const GpuModule> module = LoadedModules::get().find(name);
  if (!module)
    return makeError(ErrorKind::Jit,
                     "the module of " + name + " is not loaded");
  auto fn = module->function(name);
  if (!fn)
    return fn.takeError();
  return Loaded{*plan, *spec, std::move(*kernel), *fn};
}

static llvm::Expected<DeviceData> upload(GpuDriver &driver,
                                         const CudaProblem &c) {
  HostTensor q(DType::BF16, size_t(c.seqlenQ * kHeadDim)),
      k(DType::BF16, size_t(c.seqlenK * kHeadDim)),
      v(DType::BF16, size_t(c.seqlenK * kHeadDim));
  q.fillNormal(1), k.fillNormal(2), v.fillNormal(3);
  auto qb = GpuBuffer::upload(driver, q.data(), q.sizeInBytes(), "q");
  auto kb = GpuBuffer::upload(driver, k.data(), k.sizeInBytes(), "k");
  auto vb = GpuBuffer::upload(driver, v.data(), v.sizeInBytes(), "v");
  auto ob = GpuBuffer::create(driver, q.sizeInBytes(), "o");
  if (!qb || !kb || !vb || !ob)
    return llvm::joinErrors(llvm::joinErrors(qb.takeError(), kb.takeError()),
                            llvm::joinErrors(vb.takeError(), ob.takeError()));
  return DeviceData{std::move(*qb), std::move(*kb), std::move(*vb),
                    std::move(*ob)};
}

/// Poisons O, queues one call of \p path, waits and reads O back.
static llvm::Expected<std::vector<float>>
outputOf(const Path &path, GpuBuffer &o, const GpuStream &stream) {
  if (llvm::Error err = o.poison(DType::BF16))
    return std::move(err);
  if (llvm::Error err = path.call())
    return std::move(err);
  if (llvm::Error err = stream.synchronize())
    return std::move(err);
  HostTensor host(DType::BF16, o.size() / 2);
  if (llvm::Error err = o.copyTo(host.data(), o.size()))
    return std::move(err);
  return host.toFloat();
}

// Every path must write the output the raw launch writes (the same kernel
// on the same inputs): the largest difference, or an error.
static llvm::Expected<double> checkPaths(const std::vector<Path> &paths,
                                         GpuBuffer &o,
                                         const GpuStream &stream) {
  auto raw = outputOf(paths.front(), o, stream);
  if (!raw)
    return raw.takeError();
  double worst = 0;
  for (const Path &path : paths) {
    auto out = outputOf(path, o, stream);
    if (!out)
      return out.takeError();
    for (size_t i = 0; i < out->size(); ++i) {
      double diff = std::fabs(double((*out)[i]) - double((*raw)[i]));
      if (!std::isfinite((*out)[i]) || !(diff <= 1e-2))
        return makeError(ErrorKind::Jit,
                         path.name + " wrote " + std::to_string((*out)[i]) +
                             " at element " + std::to_string(i) + " where " +
                             paths.front().name + " wrote " +
                             std::to_string((*raw)[i]));
      worst = std::max(worst, diff);
    }
  }
  return worst;
}

// Host ns per call of \p batch calls of \p path queued back to back.
static llvm::Expected<double> timeBatch(const Path &path, unsigned batch) {
  Clock::time_point start = Clock::now();
  for (unsigned c = 0; c < batch; ++c)
    if (llvm::Error err = path.call())
      return std::move(err);
  return std::chrono::duration<double, std::nano>(Clock::now() - start)
             .count() /
         batch;
}

// Samples in rounds, the paths taking turns in a rotating order, the stream
// drained after each sample (untimed); see ApiOverhead.h.
static llvm::Error timePaths(const std::vector<Path> &paths,
                             const GpuStream &stream,
                             const CudaOverheadConfig &config,
                             OverheadResult &result) {
  std::vector<std::vector<double>> samples(paths.size());
  std::vector<double> overheads, ns(paths.size());
  for (unsigned r = 0; r < config.rounds; ++r)
    for (unsigned s = 0; s < config.samples; ++s) {
      for (size_t i = 0; i < paths.size(); ++i) {
        size_t path = (i + s) % paths.size();
        auto sample = timeBatch(paths[path], config.batch);
        if (!sample)
          return sample.takeError();
        ns[path] = *sample;
        if (llvm::Error err = stream.synchronize())
          return err;
      }
      for (size_t i = 0; i < paths.size(); ++i)
        samples[i].push_back(ns[i]);
      overheads.push_back(ns.back() - ns.front());
    }
  for (size_t i = 0; i < paths.size(); ++i)
    result.paths.push_back({paths[i].name, median(samples[i])});
  result.overheadNs = median(overheads);
  result.calls = config.samples * config.batch;
  result.rounds = config.rounds;
  return llvm::Error::success();
}

namespace {
/// Everything one problem's paths launch with, built once.
struct Launches {
  Launches(CudaDriver &driver, const Loaded &loaded, const KernelArgs &args)
      : driver(driver), loaded(loaded), args(args) {}
  Launches(const Launches &) = delete; // params points into it

  CudaDriver &driver;
  const Loaded &loaded;
  KernelArgs args;
  TensorMaps maps{};                  ///< encoded once, for cuLaunchKernel
  std::optional<TensorMaps> prepared; ///< GpuKernel::prepareTensorMaps
  api::Tensors tensors;
  GpuStreamHandle stream;
  void *params[2] = {&args, &maps};
  unsigned blocks = 0;

  // cuLaunchKernel as CudaDriver::launch calls it (a forward kernel never
  // overlaps its predecessor); both problems have fewer work items than a
  // GPU has SMs, so a persistent kernel's grid is the same.
  llvm::Error raw() {
    cuda::CUresult result = driver.api().launchKernel(
        static_cast<cuda::CUfunction>(loaded.fn), blocks, 1, 1,
        loaded.kernel.blockThreads(), 1, 1, loaded.kernel.sharedBytes(),
        static_cast<cuda::CUstream>(stream), params, nullptr);
    if (result == cuda::kSuccess)
      return llvm::Error::success();
    return driver.check(result, "cuLaunchKernel");
  }
};
} // namespace

static std::vector<Path> pathsOf(Launches &l) {
  std::vector<Path> paths;
  paths.push_back({"cuLaunchKernel", [&l] { return l.raw(); }});
  bool tma = usesTensorMaps(l.loaded.spec);
  paths.push_back({tma ? "GpuKernel, maps encoded" : "GpuKernel::launch",
                   [&l] { return l.loaded.kernel.launch(l.args, l.stream); }});
  if (tma && l.prepared)
    paths.push_back({"GpuKernel, maps bound", [&l] {
                       return l.loaded.kernel.launch(l.args, l.stream,
                                                     &*l.prepared);
                     }});
  paths.push_back({"api::run", [&l]() -> llvm::Error {
                     api::Status s = api::run(l.loaded.plan, l.tensors);
                     if (s.ok())
                       return llvm::Error::success();
                     return makeError(ErrorKind::Driver, s.toString());
                   }});
  return paths;
}

static llvm::Expected<OverheadResult>
measureProblem(CudaDriver &driver, const CudaProblem &c,
               const CudaOverheadConfig &config, const GpuStream &stream) {
  auto loaded = loadBoth(driver, c, config.target);
  if (!loaded)
    return loaded.takeError();
  auto data = upload(driver, c);
  if (!data)
    return data.takeError();
  AttentionProblem problem = AttentionProblem::forSpec(loaded->spec);
  problem.seqlenQ = c.seqlenQ, problem.seqlenK = c.seqlenK;
  Launches l{driver, *loaded,
             makeKernelArgs(loaded->spec, problem,
                            {data->q.pointer(), data->k.pointer(),
                             data->v.pointer(), data->o.pointer()})};
  l.tensors = {data->q.pointer(), data->k.pointer(), data->v.pointer(),
               data->o.pointer()};
  l.tensors.stream = l.stream = stream.get();
  l.blocks = unsigned(workItems(loaded->spec, l.args));
  OverheadResult result;
  result.tensorMaps = usesTensorMaps(loaded->spec);
  if (result.tensorMaps)
    if (llvm::Error err =
            encodeTensorMaps(driver, loaded->spec, l.args, l.maps))
      return std::move(err);
  l.prepared = loaded->kernel.prepareTensorMaps(l.args);
  std::vector<Path> paths = pathsOf(l);
  auto diff = checkPaths(paths, data->o, stream);
  if (!diff)
    return diff.takeError();
  CudaOverheadConfig warmup{config.batch, 1, 1, config.target};
  OverheadResult ignored;
  if (llvm::Error err = timePaths(paths, stream, warmup, ignored))
    return std::move(err);
  if (llvm::Error err = timePaths(paths, stream, config, result))
    return std::move(err);
  result.kernel = loaded->plan.steps().front().kernel;
  result.problem = c.name;
  result.shape = "Sq=" + std::to_string(c.seqlenQ) +
                 ", Sk=" + std::to_string(c.seqlenK) + ", 1 head, d=64, bf16";
  result.maxAbsDiff = *diff;
  return result;
}

llvm::Expected<CudaOverheadReport>
bench::measureCudaOverhead(const CudaOverheadConfig &config) {
  auto driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  if (config.target.empty() && !driver->device().target)
    return makeError(ErrorKind::Unsupported, driver->noTargetReason());
  auto stream = GpuStream::create(*driver);
  if (!stream)
    return stream.takeError();
  CudaOverheadReport report;
  report.gpu = driver->describe();
  report.batch = config.batch;
  for (const CudaProblem &c : kProblems) {
    auto result = measureProblem(*driver, c, config, *stream);
    if (!result)
      return result.takeError();
    report.problems.push_back(std::move(*result));
  }
  return report;
}
