//===- CacheCommand.cpp - fmhajit cache path|stats|clear|warm -------------===//
//
// Shows, empties and fills the on-disk kernel cache of this environment (the
// same directory the JIT would use: FMHAJIT_CACHE_DIR, XDG_CACHE_HOME, HOME).
//
//===----------------------------------------------------------------------===//
#include "compiler/Concurrently.h"
#include "compiler/KernelCache.h"
#include "compiler/ProfileWarmup.h"
#include "runtime/device/GpuKernel.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>

using namespace fmhajit;

static constexpr llvm::StringLiteral kCacheUsage =
    "use 'fmhajit cache path', 'fmhajit cache stats', 'fmhajit cache clear' "
    "or 'fmhajit cache warm --profile P --target T [--load]'";

static const OptionSpec kCacheFlags[] = {
    {"profile", true,
     "warm: the profile whose kernels to compile (fmhajit list)"},
    {"target", true, "warm: the target to compile them for"},
    {"load", false,
     "warm: also load each into this machine's GPU driver, which keeps its "
     "machine code in its own cache"},
};

llvm::ArrayRef<OptionSpec> fmhajit::cacheFlags() { return kCacheFlags; }

static void printStats(const KernelCache &cache, const DiskStats &disk) {
  llvm::outs() << "directory: " << cache.directory() << "\n"
               << "disk cache: "
               << (cache.diskEnabled() ? "on" : "off (FMHAJIT_CACHE)") << "\n"
               << "files: " << disk.files << "\n"
               << "bytes: " << disk.bytes << "\n"
               << "max bytes: " << cache.maxBytes() << "\n";
}

static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// Compiles a profile's kernels into \p cache, as api::warmup does, and
// says how many and how long it took; with --load, loads them too.
static llvm::Error warm(KernelCache &cache, const Args &args) {
  std::optional<std::string> profile = args.get("profile"),
                             target = args.get("target");
  if (!profile || !target)
    return makeError(ErrorKind::Usage,
                     "cache warm needs --profile P and --target T (fmhajit "
                     "list shows the profiles)");
  const ArchInfo *arch = findArch(*target);
  if (args.has("load") && arch && arch->backend == Backend::Host)
    return makeError(ErrorKind::Usage,
                     "--load is for GPU targets: host kernels have no "
                     "driver step");
  if (args.has("load") && arch)
    if (auto driver = gpuDriverFor(arch->backend); !driver)
      return driver.takeError(); // before compiling for nothing
  auto start = std::chrono::steady_clock::now();
  auto compiled = compileProfile(*profile, *target, cache);
  if (!compiled)
    return compiled.takeError();
  unsigned threads =
      llvm::hardware_concurrency(compileThreads()).compute_thread_count();
  llvm::outs() << "warmed " << *compiled << " kernels of profile " << *profile
               << " for " << *target << " in "
               << llvm::format("%.2f", secondsSince(start)) << " s, up to "
               << threads << " at once, into " << cache.directory() << "\n";
  if (!args.has("load"))
    return llvm::Error::success();
  // The driver compiles each kernel's PTX to machine code on its first load
  // and keeps the result (~/.nv/ComputeCache, or CUDA_CACHE_PATH), so first
  // plans then skip that step as well.
  auto specs = expandProfile(*profile, llvm::StringRef(*target));
  if (!specs)
    return specs.takeError();
  start = std::chrono::steady_clock::now();
  auto loaded = GpuKernel::loadAll(arch->backend, *specs, cache);
  if (!loaded)
    return loaded.takeError();
  llvm::outs() << "loaded " << loaded->size() << " kernels into the "
               << (arch->backend == Backend::Nvptx ? "CUDA" : "HIP")
               << " driver in " << llvm::format("%.2f", secondsSince(start))
               << " s\n";
  return llvm::Error::success();
}

static llvm::Error runCacheCommand(llvm::StringRef sub, const Args &args) {
  if (sub != "path" && sub != "stats" && sub != "clear" && sub != "warm")
    return makeError(ErrorKind::Usage,
                     "unknown cache command '" + sub + "': " + kCacheUsage);
  if (sub != "warm" &&
      (args.has("profile") || args.has("target") || args.has("load")))
    return makeError(
        ErrorKind::Usage,
        "--profile, --target and --load are flags of 'fmhajit cache warm'");
  // The disk layer may be off for lookups; these commands still manage the
  // directory it would use.
  llvm::Expected<CacheConfig> config = CacheConfig::fromEnvironment();
  if (!config)
    return config.takeError();
  if (config->dir.empty())
    return makeError(ErrorKind::Io, "no kernel cache directory: set "
                                    "FMHAJIT_CACHE_DIR or HOME");
  llvm::Expected<std::unique_ptr<KernelCache>> cache =
      KernelCache::create(std::move(*config));
  if (!cache)
    return cache.takeError();
  if (sub == "warm")
    return warm(**cache, args);
  if (sub == "path") {
    llvm::outs() << (*cache)->directory() << "\n";
    return llvm::Error::success();
  }
  llvm::Expected<DiskStats> disk = (*cache)->diskStats();
  if (!disk)
    return disk.takeError();
  if (sub == "stats") {
    printStats(**cache, *disk);
    return llvm::Error::success();
  }
  if (llvm::Error err = (*cache)->clear())
    return err;
  llvm::outs() << "removed " << disk->files << " files (" << disk->bytes
               << " bytes) from " << (*cache)->directory() << "\n";
  return llvm::Error::success();
}

int fmhajit::cacheCommand(llvm::ArrayRef<const char *> argv) {
  llvm::Expected<Args> args = Args::parse(argv, cacheFlags());
  if (!args)
    return reportErrors(args.takeError());
  if (args->positional().size() != 1)
    return reportErrors(makeError(
        ErrorKind::Usage, "expected one cache command: " + kCacheUsage));
  if (llvm::Error err = runCacheCommand(args->positional()[0], *args))
    return reportErrors(std::move(err));
  return 0;
}
