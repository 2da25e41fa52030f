//===- CacheCommand.cpp - fmhajit cache path|stats|clear ------------------===//
//
// Shows and empties the on-disk kernel cache of this environment (the same
// directory the JIT would use: FMHAJIT_CACHE_DIR, XDG_CACHE_HOME, HOME).
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCache.h"
#include "specs/Errors.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

static constexpr llvm::StringLiteral kCacheUsage =
    "use 'fmhajit cache path', 'fmhajit cache stats' or 'fmhajit cache clear'";

static void printStats(const KernelCache &cache, const DiskStats &disk) {
  llvm::outs() << "directory: " << cache.directory() << "\n"
               << "disk cache: "
               << (cache.diskEnabled() ? "on" : "off (FMHAJIT_CACHE)") << "\n"
               << "files: " << disk.files << "\n"
               << "bytes: " << disk.bytes << "\n"
               << "max bytes: " << cache.maxBytes() << "\n";
}

static llvm::Error runCacheCommand(llvm::StringRef sub) {
  if (sub != "path" && sub != "stats" && sub != "clear")
    return makeError(ErrorKind::Usage,
                     "unknown cache command '" + sub + "': " + kCacheUsage);
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
  llvm::Expected<Args> args = Args::parse(argv, {});
  if (!args)
    return reportErrors(args.takeError());
  if (args->positional().size() != 1)
    return reportErrors(makeError(
        ErrorKind::Usage, "expected one cache command: " + kCacheUsage));
  if (llvm::Error err = runCacheCommand(args->positional()[0]))
    return reportErrors(std::move(err));
  return 0;
}
