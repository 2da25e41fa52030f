//===- CompileLatency.cpp - How long a spec takes to become callable ------===//
#include "bench/host/CompileLatency.h"
#include "bench/host/BenchTimer.h"
#include "compiler/KernelCache.h"
#include "runtime/device/HostKernel.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

extern char **environ;

using namespace fmhajit;
using namespace fmhajit::bench;

static double msSince(Clock::time_point start) {
  return secondsSince(start) * 1e3;
}

static llvm::Expected<HostKernel> loadSpecText(llvm::StringRef text,
                                               KernelCache &cache) {
  auto parsed = parseSpec(text);
  if (!parsed)
    return parsed.takeError();
  auto spec = validateSpec(*parsed);
  if (!spec)
    return spec.takeError();
  return HostKernel::load(*spec, cache);
}

// spec text -> callable through a new cache over \p dir; fails unless it
// really compiled (the directory must not hold the kernel).
static llvm::Expected<double> coldLoad(llvm::StringRef text,
                                       llvm::StringRef dir) {
  Clock::time_point start = Clock::now();
  CacheConfig config;
  config.dir = dir.str();
  auto cache = KernelCache::create(config);
  if (!cache)
    return cache.takeError();
  auto kernel = loadSpecText(text, **cache);
  if (!kernel)
    return kernel.takeError();
  double ms = msSince(start);
  if (kernel->origin() != ArtifactOrigin::Compiled)
    return makeError(ErrorKind::Io,
                     "cold load of " + text + " found a cached kernel");
  return ms;
}

/// Medians, in microseconds, of reloading a spec the cache holds.
struct MemoryHit {
  double totalUs, validateUs, loadUs;
};

// validateSpec + HostKernel::load of a kernel \p cache holds, timed one by
// one, each part on its own too.
static llvm::Expected<MemoryHit> memoryHit(llvm::StringRef text,
                                           KernelCache &cache, unsigned runs) {
  auto parsed = parseSpec(text);
  if (!parsed)
    return parsed.takeError();
  std::vector<double> total, validate, load;
  for (unsigned i = 0; i < runs; ++i) {
    Clock::time_point start = Clock::now();
    auto spec = validateSpec(*parsed);
    if (!spec)
      return spec.takeError();
    Clock::time_point validated = Clock::now();
    auto kernel = HostKernel::load(*spec, cache);
    if (!kernel)
      return kernel.takeError();
    total.push_back(secondsSince(start) * 1e6);
    validate.push_back(
        std::chrono::duration<double, std::micro>(validated - start).count());
    load.push_back(secondsSince(validated) * 1e6);
    if (kernel->origin() != ArtifactOrigin::Memory)
      return makeError(ErrorKind::Io,
                       "reload of " + text + " missed the memory cache");
  }
  return MemoryHit{median(total), median(validate), median(load)};
}

// This process's environment with FMHAJIT_CACHE_DIR=\p dir and the disk on.
static std::vector<std::string> environmentWithCache(llvm::StringRef dir) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef entry(*e);
    if (!entry.starts_with("FMHAJIT_CACHE_DIR=") &&
        !entry.starts_with("FMHAJIT_CACHE="))
      env.push_back(entry.str());
  }
  env.push_back("FMHAJIT_CACHE_DIR=" + dir.str());
  return env;
}

/// One fresh process's `load X ms (disk)` figure and its whole run time.
struct DiskHit {
  double loadMs, processMs;
};

static llvm::Expected<DiskHit> diskHit(const CompileLatencyOptions &options,
                                       llvm::StringRef dir,
                                       llvm::StringRef outPath) {
  std::string spec = options.specs.front();
  llvm::SmallVector<llvm::StringRef, 10> args = {
      options.fmhajitBinary, "run", spec, "--seqlen-q", "1", "--iters", "1",
      "--threads",           "1"};
  std::vector<std::string> envStrings = environmentWithCache(dir);
  std::vector<llvm::StringRef> env(envStrings.begin(), envStrings.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, outPath, outPath};
  std::string message;
  Clock::time_point start = Clock::now();
  int rc = llvm::sys::ExecuteAndWait(options.fmhajitBinary, args, env,
                                     redirects, 0, 0, &message);
  double processMs = msSince(start);
  auto output = llvm::MemoryBuffer::getFile(outPath);
  std::string text = output ? (*output)->getBuffer().str() : std::string();
  if (rc != 0)
    return makeError(ErrorKind::Io, options.fmhajitBinary + " exited with " +
                                        std::to_string(rc) + ": " + message +
                                        text);
  llvm::SmallVector<llvm::StringRef, 3> match;
  if (!llvm::Regex("load +([0-9.]+) ms \\(([a-z]+)\\)").match(text, &match))
    return makeError(ErrorKind::Io, "no `load X ms (origin)` line in: " + text);
  if (match[2] != "disk")
    return makeError(ErrorKind::Io, "fresh process loaded " + spec + " from " +
                                        match[2] + ", not disk");
  double loadMs = 0;
  llvm::to_float(match[1], loadMs);
  return DiskHit{loadMs, processMs};
}

static llvm::Error measureInDirectory(const CompileLatencyOptions &options,
                                      llvm::StringRef dir,
                                      CompileLatency &result) {
  for (const std::string &spec : options.specs) {
    auto ms = coldLoad(spec, dir);
    if (!ms)
      return ms.takeError();
    result.specs.push_back(spec);
    result.coldMs.push_back(*ms);
  }
  result.coldMedianMs = median(result.coldMs);
  CacheConfig config;
  config.dir = dir.str();
  auto cache = KernelCache::create(config);
  if (!cache)
    return cache.takeError();
  // The first load of a new cache object reads the disk; the rest hit memory.
  if (auto first = loadSpecText(options.specs.front(), **cache); !first)
    return first.takeError();
  auto hit = memoryHit(options.specs.front(), **cache, options.memoryHitRuns);
  if (!hit)
    return hit.takeError();
  result.memoryHitRuns = options.memoryHitRuns;
  result.memoryHitMedianUs = hit->totalUs;
  result.memoryHitValidateUs = hit->validateUs;
  result.memoryHitLoadUs = hit->loadUs;
  std::string outPath = (dir + "/fmhajit-run.out").str();
  result.diskSpec = options.specs.front();
  for (unsigned i = 0; i < options.diskHitRuns; ++i) {
    auto hit = diskHit(options, dir, outPath);
    if (!hit)
      return hit.takeError();
    result.diskHitMs.push_back(hit->loadMs);
    result.diskProcessMs.push_back(hit->processMs);
  }
  result.diskHitMedianMs = median(result.diskHitMs);
  return llvm::Error::success();
}

llvm::Expected<CompileLatency>
fmhajit::bench::measureCompileLatency(const CompileLatencyOptions &options) {
  if (options.specs.empty())
    return makeError(ErrorKind::Usage,
                     "compile latency needs at least one spec");
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("fmhajit-bench-cache", dir))
    return makeError(ErrorKind::Io,
                     "cannot create a temporary cache directory: " +
                         ec.message());
  CompileLatency result;
  llvm::Error err = measureInDirectory(options, dir, result);
  llvm::sys::fs::remove_directories(dir);
  if (err)
    return std::move(err);
  return result;
}
