//===- CacheCommand.cpp - fmhajit cache path|stats|clear|warm -------------===//
//
// Shows, empties and fills the on-disk kernel cache of this environment (the
// same directory the JIT would use: FMHAJIT_CACHE_DIR, XDG_CACHE_HOME, HOME).
//
//===----------------------------------------------------------------------===//
#include "compiler/Concurrently.h"
#include "compiler/KernelCache.h"
#include "runtime/api/ProfileWarmup.h"
#include "runtime/device/GpuKernel.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>

using namespace fmhajit;

static constexpr llvm::StringLiteral kCacheUsage =
    "use 'fmhajit cache path', 'fmhajit cache stats', 'fmhajit cache clear' "
    "or 'fmhajit cache warm --profile P --target T [--load]'";

static const OptionSpec kCacheFlags[] = {
    {"profile", true,
     "warm: the profile whose kernels to compile (fmhajit list), or several: "
     "decode,training"},
    {"target", true, "warm: the target to compile them for"},
    {"load", false,
     "warm: also load each into this machine's GPU driver, which keeps its "
     "machine code in its own cache"},
    {"part", true,
     "warm --load: load only part I of N (I/N, from 0) of the kernels; "
     "--load runs its parts in processes of their own"},
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

/// The I and N of --part I/N, with 0 <= I < N.
static llvm::Expected<std::pair<size_t, size_t>>
parsePart(llvm::StringRef text) {
  auto [index, count] = text.split('/');
  size_t i = 0, n = 0;
  if (index.getAsInteger(10, i) || count.getAsInteger(10, n) || n == 0 ||
      i >= n)
    return makeError(ErrorKind::Usage,
                     "--part " + text + ": use I/N with 0 <= I < N");
  return std::make_pair(i, n);
}

// The driver compiles each kernel's PTX to machine code on its first load
// and keeps the result (~/.nv/ComputeCache, or CUDA_CACHE_PATH), so first
// plans then skip that step as well. Loads part I of N: every N-th kernel
// from the I-th, so that each part gets heavy and light kernels alike. Its
// kernels come through the cache, where the parent compiled them.
static llvm::Error loadPart(const std::string &profile,
                            const std::string &target,
                            std::pair<size_t, size_t> part,
                            KernelCache &cache) {
  auto specs = warmupSpecs(profile, target); // refuses an unknown target
  if (!specs)
    return specs.takeError();
  std::vector<KernelSpec> mine;
  for (size_t i = part.first; i < specs->size(); i += part.second)
    mine.push_back((*specs)[i]);
  auto loaded = GpuKernel::loadAll(findArch(target)->backend, mine, cache);
  return loaded ? llvm::Error::success() : loaded.takeError();
}

// A process's driver compiles one module at a time, whatever its threads,
// while processes compile side by side (session 43: 8 processes loaded 8
// kernels each in about the time one took). So the loads run in up to
// \p threads child processes of this binary, `cache warm ... --part I/N`,
// sharing both caches (their own compiles are disk hits). Returns how many
// processes ran.
static llvm::Expected<size_t> loadInProcesses(const std::string &profile,
                                              const ArchInfo &arch,
                                              size_t kernels,
                                              unsigned threads) {
  size_t processes = std::max<size_t>(1, std::min<size_t>(kernels, threads));
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&loadInProcesses));
  std::vector<llvm::sys::ProcessInfo> children;
  ErrorList errors;
  for (size_t i = 0; i < processes; ++i) {
    std::string part = std::to_string(i) + "/" + std::to_string(processes);
    llvm::StringRef argv[] = {self,     "cache",    "warm",    "--profile",
                              profile,  "--target", arch.name, "--load",
                              "--part", part};
    // A part prints nothing; its errors reach stderr.
    std::string message;
    bool failed = false;
    children.push_back(llvm::sys::ExecuteNoWait(self, argv, std::nullopt, {}, 0,
                                                &message, &failed));
    if (failed)
      errors.add(ErrorKind::Io, "could not start " + self + " to load part " +
                                    part + ": " + message);
  }
  size_t failedParts = 0;
  for (llvm::sys::ProcessInfo &child : children)
    if (child.Pid != llvm::sys::ProcessInfo::InvalidPid &&
        llvm::sys::Wait(child, std::nullopt).ReturnCode != 0)
      ++failedParts;
  if (failedParts)
    errors.add(ErrorKind::Driver,
               std::to_string(failedParts) + " of " +
                   std::to_string(processes) +
                   " loading processes failed (their errors are above)");
  if (llvm::Error err = errors.take())
    return std::move(err);
  return processes;
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
  if (args.has("part") && !args.has("load"))
    return makeError(ErrorKind::Usage, "--part goes with --load");
  std::optional<std::pair<size_t, size_t>> part;
  if (args.has("part")) {
    auto parsed = parsePart(*args.get("part"));
    if (!parsed)
      return parsed.takeError();
    part = *parsed;
  }
  if (args.has("load") && arch && arch->backend == Backend::Host)
    return makeError(ErrorKind::Usage,
                     "--load is for GPU targets: host kernels have no "
                     "driver step");
  // Before compiling for nothing, and once here rather than in each child.
  if (args.has("load") && arch) {
    auto driver = gpuDriverFor(arch->backend);
    if (!driver)
      return driver.takeError();
    if (llvm::Error err = driver->checkTarget(*arch))
      return err;
  }
  if (part) // a child of loadInProcesses: its parent compiled the profile
    return loadPart(*profile, *target, *part, cache);
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
  start = std::chrono::steady_clock::now();
  auto loaded = loadInProcesses(*profile, *arch, *compiled, threads);
  if (!loaded)
    return loaded.takeError();
  llvm::outs() << "loaded " << *compiled << " kernels into the "
               << (arch->backend == Backend::Nvptx ? "CUDA" : "HIP")
               << " driver in " << llvm::format("%.2f", secondsSince(start))
               << " s, " << *loaded << " process" << (*loaded == 1 ? "" : "es")
               << " at once\n";
  return llvm::Error::success();
}

static llvm::Error runCacheCommand(llvm::StringRef sub, const Args &args) {
  if (sub != "path" && sub != "stats" && sub != "clear" && sub != "warm")
    return makeError(ErrorKind::Usage,
                     "unknown cache command '" + sub + "': " + kCacheUsage);
  if (sub != "warm" && (args.has("profile") || args.has("target") ||
                        args.has("load") || args.has("part")))
    return makeError(ErrorKind::Usage, "--profile, --target, --load and --part "
                                       "are flags of 'fmhajit cache warm'");
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
