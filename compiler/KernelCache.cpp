//===- KernelCache.cpp - Compiled kernels, kept in memory and on disk -----===//
#include "compiler/KernelCache.h"
#include "compiler/CacheFile.h"
#include "specs/Errors.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <cassert>
#include <vector>

using namespace fmhajit;

llvm::StringRef fmhajit::originName(ArtifactOrigin origin) {
  switch (origin) {
  case ArtifactOrigin::Memory:
    return "memory";
  case ArtifactOrigin::Disk:
    return "disk";
  case ArtifactOrigin::Compiled:
    return "compiled";
  }
  llvm_unreachable("unknown ArtifactOrigin");
}

static bool isOffSwitch(llvm::StringRef value) {
  std::string v = value.trim().lower();
  return v == "0" || v == "off" || v == "false" || v == "no";
}

/// Sets \p config's cap from FMHAJIT_CACHE_MAX_SIZE, when set and not
/// empty (empty means unset, as for FMHAJIT_CACHE_DIR).
static llvm::Error readMaxSize(CacheConfig &config) {
  std::optional<std::string> v =
      llvm::sys::Process::GetEnv("FMHAJIT_CACHE_MAX_SIZE");
  if (!v || v->empty())
    return llvm::Error::success();
  llvm::Expected<uint64_t> bytes = parseCacheSize(*v);
  if (!bytes)
    return makeError(ErrorKind::Usage, "FMHAJIT_CACHE_MAX_SIZE: " +
                                           llvm::toString(bytes.takeError()));
  config.maxBytes = *bytes;
  return llvm::Error::success();
}

llvm::Expected<CacheConfig> CacheConfig::fromEnvironment() {
  CacheConfig config;
  if (std::optional<std::string> v =
          llvm::sys::Process::GetEnv("FMHAJIT_CACHE"))
    config.disk = !isOffSwitch(*v);
  llvm::SmallString<256> dir;
  std::optional<std::string> explicitDir =
      llvm::sys::Process::GetEnv("FMHAJIT_CACHE_DIR");
  std::optional<std::string> xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
  if (explicitDir && !explicitDir->empty()) {
    dir = *explicitDir;
  } else if (xdg && llvm::sys::path::is_absolute(*xdg)) {
    // The XDG spec says a relative XDG_CACHE_HOME is invalid and ignored.
    llvm::sys::path::append(dir, *xdg, "fmhajit");
  } else if (llvm::sys::path::home_directory(dir)) {
    llvm::sys::path::append(dir, ".cache", "fmhajit");
  }
  config.dir = std::string(dir);
  if (llvm::Error err = readMaxSize(config))
    return std::move(err);
  return config;
}

llvm::Expected<std::unique_ptr<KernelCache>>
KernelCache::create(CacheConfig config) {
  if (config.disk && config.dir.empty())
    return makeError(ErrorKind::Io,
                     "no kernel cache directory: set FMHAJIT_CACHE_DIR (or "
                     "HOME), or FMHAJIT_CACHE=off to keep kernels in memory");
  if (!config.dir.empty()) {
    // Absolute, so a later chdir cannot move the cache.
    llvm::SmallString<256> dir(config.dir);
    if (std::error_code ec = llvm::sys::fs::make_absolute(dir))
      return makeError(ErrorKind::Io, "cannot resolve the cache directory '" +
                                          config.dir + "': " + ec.message());
    llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    config.dir = std::string(dir);
  }
  return std::unique_ptr<KernelCache>(new KernelCache(std::move(config)));
}

llvm::Expected<KernelCache &> KernelCache::global() {
  struct Global {
    std::unique_ptr<KernelCache> cache;
    Problems failure;
  };
  // Created once; a failure is remembered as its kind and messages because
  // an Error can be taken only once, and every caller deserves it (a bad
  // FMHAJIT_CACHE_MAX_SIZE stays a usage error).
  static const Global global = [] {
    Global g;
    llvm::Expected<CacheConfig> config = CacheConfig::fromEnvironment();
    llvm::Expected<std::unique_ptr<KernelCache>> cache =
        config ? create(std::move(*config)) : config.takeError();
    if (cache)
      g.cache = std::move(*cache);
    else
      g.failure = takeProblems(cache.takeError());
    return g;
  }();
  if (!global.cache) {
    ErrorList errors;
    for (const std::string &message : global.failure.messages)
      errors.add(global.failure.kind, message);
    return errors.take();
  }
  return *global.cache;
}

std::shared_ptr<const std::string>
KernelCache::findOrClaim(llvm::StringRef key) {
  std::unique_lock<std::mutex> lock(mutex);
  // Wait while another thread produces this key; if it fails, this thread
  // tries in turn, so an error is never handed to a caller who did not see
  // it happen.
  while (true) {
    auto it = ready.find(key);
    if (it != ready.end()) {
      ++counters.memoryHits;
      return it->second;
    }
    if (compiling.insert(key).second)
      return nullptr;
    finished.wait(lock);
  }
}

void KernelCache::publish(llvm::StringRef key,
                          std::shared_ptr<const std::string> storage,
                          ArtifactOrigin origin) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    compiling.erase(key);
    if (storage) {
      ready[key] = std::move(storage);
      if (origin == ArtifactOrigin::Disk)
        ++counters.diskHits;
      else
        ++counters.compiles;
    }
  }
  finished.notify_all();
}

llvm::Expected<std::shared_ptr<const Artifact>>
KernelCache::getOrCompile(llvm::StringRef name, llvm::StringRef fingerprint,
                          CompileFn compile) {
  // The name becomes a file name: a '/' or '\n' in it is a caller's bug.
  assert(classifyCacheFileName(cacheFileName(name, fingerprint)) ==
             CacheFileKind::Artifact &&
         "kernel names must be C identifiers");
  // Names are C identifiers, so '\n' separates name and fingerprint.
  llvm::SmallString<256> key(name);
  key.push_back('\n');
  key += fingerprint;

  if (std::shared_ptr<const std::string> hit = findOrClaim(key))
    return std::make_shared<const Artifact>(
        Artifact{std::move(hit), ArtifactOrigin::Memory});

  ArtifactOrigin origin = ArtifactOrigin::Disk;
  std::shared_ptr<const std::string> storage;
  if (config.disk)
    storage = loadFromDisk(name, fingerprint);
  llvm::Error failure = llvm::Error::success();
  if (!storage) {
    origin = ArtifactOrigin::Compiled;
    llvm::Expected<std::string> bytes = compile();
    if (bytes)
      storage = std::make_shared<const std::string>(std::move(*bytes));
    else
      failure = bytes.takeError();
  }
  // Publish before writing the file, so waiting threads need not wait for
  // the disk.
  publish(key, storage, origin);
  if (failure)
    return std::move(failure);
  // Pruning follows a write, the only thing that grows the directory.
  if (origin == ArtifactOrigin::Compiled && config.disk &&
      storeOnDisk(name, fingerprint, *storage))
    pruneIfDue();
  return std::make_shared<const Artifact>(Artifact{std::move(storage), origin});
}

/// The whole of the open file \p fd, read (not mapped: a file truncated
/// under us must not SIGBUS) into one buffer, the only copy a hit makes;
/// \p status is the file's, which a hit's use stamp keeps its mtime from.
static llvm::Expected<std::string>
readWholeFile(llvm::sys::fs::file_t fd, llvm::sys::fs::file_status &status) {
  if (std::error_code ec = llvm::sys::fs::status(fd, status))
    return llvm::errorCodeToError(ec);
  std::string bytes(status.getSize(), '\0');
  size_t filled = 0;
  while (filled < bytes.size()) {
    llvm::Expected<size_t> got = llvm::sys::fs::readNativeFile(
        fd, llvm::MutableArrayRef<char>(bytes.data() + filled,
                                        bytes.size() - filled));
    if (!got)
      return got.takeError();
    if (*got == 0) // shrunk since the stat: decodeCacheFile sees the size
      break;
    filled += *got;
  }
  bytes.resize(filled);
  return bytes;
}

std::shared_ptr<const std::string>
KernelCache::loadFromDisk(llvm::StringRef name, llvm::StringRef fingerprint) {
  llvm::SmallString<256> path(config.dir);
  llvm::sys::path::append(path, cacheFileName(name, fingerprint));
  // Opened here, to stamp the file as used on a hit.
  llvm::Expected<llvm::sys::fs::file_t> fd =
      llvm::sys::fs::openNativeFileForRead(path);
  llvm::sys::fs::file_status status;
  llvm::Expected<std::string> file =
      fd ? readWholeFile(*fd, status)
         : llvm::Expected<std::string>(fd.takeError());
  llvm::scope_exit closeFile([&] {
    if (fd)
      llvm::sys::fs::closeFile(*fd);
  });
  if (!file) {
    // Absent (never written, or pruned a moment ago), also when a
    // component of the directory is a file: the write will report that
    // problem, once.
    std::error_code ec = llvm::errorToErrorCode(file.takeError());
    if (ec == std::errc::no_such_file_or_directory ||
        ec == std::errc::not_a_directory)
      return nullptr;
    countCorrupt();
    warn("cannot read cache file '" + path + "': " + ec.message() +
         "; recompiling " + name);
    return nullptr;
  }
  llvm::Expected<llvm::StringRef> payload =
      decodeCacheFile(*file, cacheKeyText(name, fingerprint));
  if (!payload) {
    countCorrupt();
    warn("cache file '" + path + "' is corrupt (" +
         llvm::toString(payload.takeError()) + "); recompiling " + name +
         " and rewriting it");
    return nullptr;
  }
  // A hit is a use: pruning keeps recently used files.
  markCacheFileUsed(*fd, status.getLastModificationTime());
  // The payload is the file's tail: drop the header in place rather than
  // copy 100-200 KB of PTX into fresh pages (in a new process each page
  // is a fault, together about a tenth of a millisecond).
  size_t payloadSize = payload->size();
  file->erase(0, file->size() - payloadSize);
  return std::make_shared<const std::string>(std::move(*file));
}

bool KernelCache::storeOnDisk(llvm::StringRef name, llvm::StringRef fingerprint,
                              llvm::StringRef bytes) {
  llvm::SmallString<256> path(config.dir);
  llvm::sys::path::append(path, cacheFileName(name, fingerprint));
  std::string header =
      encodeCacheHeader(cacheKeyText(name, fingerprint), bytes);
  llvm::Error err = writeCacheFile(path, header, bytes);
  if (!err)
    return true;
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.failedWrites;
    first = !writeFailureReported;
    writeFailureReported = true;
  }
  // One warning per cache: a read-only directory would otherwise repeat it
  // for every kernel.
  if (first)
    warn("cannot store " + name + " in the kernel cache (" +
         llvm::toString(std::move(err)) +
         "); using it uncached, and further write failures are not reported");
  else
    llvm::consumeError(std::move(err));
  return false;
}

void KernelCache::pruneIfDue() {
  llvm::Expected<PruneResult> pruned =
      pruneCacheDirectory(config.dir, config.maxBytes, config.pruneInterval);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (pruned) {
      counters.prunedFiles += pruned->removedFiles;
      return;
    }
    first = !pruneFailureReported;
    pruneFailureReported = true;
  }
  // Like write failures: one warning per cache, and lookups go on.
  if (first)
    warn("cannot keep the kernel cache under its cap of " +
         llvm::Twine(config.maxBytes) + " bytes (" +
         llvm::toString(pruned.takeError()) +
         "); further pruning failures are not reported");
  else
    llvm::consumeError(pruned.takeError());
}

void KernelCache::countCorrupt() {
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.corruptFiles;
}

void KernelCache::warn(const llvm::Twine &message) {
  if (config.onWarning) {
    config.onWarning(message.str());
    return;
  }
  // One write per line, so warnings from several threads do not interleave.
  llvm::errs() << ("warning: " + message + "\n").str();
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

/// The paths of the entries of \p dir that are ours: artifacts only, or
/// also temporary files and the prune stamp. A missing directory holds
/// nothing.
static llvm::Expected<std::vector<std::string>>
listCacheFiles(llvm::StringRef dir, bool allOurs) {
  std::vector<std::string> paths;
  if (dir.empty())
    return paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    CacheFileKind kind =
        classifyCacheFileName(llvm::sys::path::filename(it->path()));
    if (kind == CacheFileKind::Artifact ||
        (allOurs && kind != CacheFileKind::Foreign))
      paths.push_back(it->path());
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return makeError(ErrorKind::Io, "cannot list the cache directory '" + dir +
                                        "': " + ec.message());
  return paths;
}

llvm::Error KernelCache::clear() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready.clear();
  }
  // List first, then remove: removing while reading a directory may skip
  // entries.
  llvm::Expected<std::vector<std::string>> paths =
      listCacheFiles(config.dir, /*allOurs=*/true);
  if (!paths)
    return paths.takeError();
  ErrorList errors;
  for (const std::string &path : *paths)
    if (std::error_code ec = llvm::sys::fs::remove(path))
      errors.add(ErrorKind::Io,
                 "cannot remove '" + path + "': " + ec.message());
  return errors.take();
}

llvm::Expected<DiskStats> KernelCache::diskStats() const {
  llvm::Expected<std::vector<std::string>> paths =
      listCacheFiles(config.dir, /*allOurs=*/false);
  if (!paths)
    return paths.takeError();
  DiskStats out;
  for (const std::string &path : *paths) {
    uint64_t size = 0;
    // A file removed by another process since the listing is not counted.
    if (!llvm::sys::fs::file_size(path, size)) {
      ++out.files;
      out.bytes += size;
    }
  }
  return out;
}
