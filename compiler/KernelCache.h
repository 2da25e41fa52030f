//===- KernelCache.h - Compiled kernels, kept in memory and on disk -------===//
//
// Compiling a kernel takes tens of milliseconds; finding it again must not.
// KernelCache keeps each compiled artifact (a host object file, PTX text or
// an AMDGPU .hsaco: opaque bytes here) under a key of the kernel's encoded
// name plus a fingerprint of everything that changes the code. Lookups go
// memory, then disk (one file per key, see CacheFile.h), then the caller's
// compile function, whose result is stored in both layers.
//
// Guarantees: threads asking for the same missing key compile it once (the
// others wait); processes sharing a directory need no locks (files appear
// by atomic rename); a corrupt file and a failed write are each reported as
// one `warning:` line and never fail a lookup. Errors from the compile
// function propagate and are not cached. The directory is kept under a size
// cap: after a write, least recently used files are pruned (CachePruner.h),
// and a disk hit counts as a use. See docs/cache.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/CachePruner.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace fmhajit {

/// Where the cache lives and whether it uses the disk.
struct CacheConfig {
  /// The directory of cache files; absolute once the cache is created.
  std::string dir;
  /// Whether lookups read and write files in dir (memory is always used).
  bool disk = true;
  /// Receives each warning's text (no "warning: " prefix, no newline),
  /// possibly from several threads at once; unset means one
  /// `warning: ...` line on stderr.
  std::function<void(llvm::StringRef)> onWarning;
  /// The most bytes of artifact files the directory may hold; pruning
  /// removes the least recently used files beyond it.
  uint64_t maxBytes = kDefaultCacheMaxBytes;
  /// The shortest time between two pruning scans of the directory, by any
  /// process; 0 scans after every write.
  std::chrono::seconds pruneInterval = kDefaultPruneInterval;

  /// dir = $FMHAJIT_CACHE_DIR, else $XDG_CACHE_HOME/fmhajit, else
  /// ~/.cache/fmhajit; FMHAJIT_CACHE=0|off|false|no turns the disk off;
  /// maxBytes = $FMHAJIT_CACHE_MAX_SIZE (such as 512M or 2G). Fails only on
  /// a FMHAJIT_CACHE_MAX_SIZE that is not a size.
  static llvm::Expected<CacheConfig> fromEnvironment();
};

/// Where a lookup found its artifact.
enum class ArtifactOrigin { Memory, Disk, Compiled };

/// "memory", "disk" or "compiled", for tools that print hits and misses.
llvm::StringRef originName(ArtifactOrigin origin);

/// A compiled kernel: its bytes, and where this lookup found them.
struct Artifact {
  /// Shared by every lookup of the same key: hits copy no bytes.
  std::shared_ptr<const std::string> storage;
  ArtifactOrigin origin;

  llvm::StringRef bytes() const { return *storage; }
};

/// What lookups have done since the cache was created.
struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  uint64_t compiles = 0;     ///< successful calls of a compile function
  uint64_t corruptFiles = 0; ///< unreadable or damaged files, recompiled
  uint64_t failedWrites = 0; ///< artifacts that could not be stored on disk
  uint64_t prunedFiles = 0;  ///< files this cache removed to keep its cap
};

/// What the cache directory holds.
struct DiskStats {
  uint64_t files = 0; ///< artifact files (`<name>-<hash>.bin`)
  uint64_t bytes = 0; ///< their total size
};

class KernelCache {
public:
  /// The function that produces an artifact's bytes on a miss.
  using CompileFn = llvm::function_ref<llvm::Expected<std::string>()>;

  /// Creates a cache over \p config. Fails only when the disk is on and no
  /// directory is named; the directory itself is created on the first write.
  static llvm::Expected<std::unique_ptr<KernelCache>>
  create(CacheConfig config);

  /// The process-wide cache, created once from the environment.
  static llvm::Expected<KernelCache &> global();

  /// Returns the artifact for (\p name, \p fingerprint), calling \p compile
  /// only when neither memory nor disk holds it. \p name must be a C
  /// identifier. \p compile must not look up the same key (it would wait
  /// for itself); other keys are fine.
  llvm::Expected<std::shared_ptr<const Artifact>>
  getOrCompile(llvm::StringRef name, llvm::StringRef fingerprint,
               CompileFn compile);

  /// Counts of hits, compiles and problems so far.
  CacheStats stats() const;

  /// Empties memory and removes this cache's files (artifacts, stray
  /// temporary files and the prune stamp, nothing else) from the directory.
  llvm::Error clear();

  /// Counts the artifact files in the directory and their bytes (none when
  /// the directory does not exist yet).
  llvm::Expected<DiskStats> diskStats() const;

  /// The cache directory (absolute; may not exist yet).
  const std::string &directory() const { return config.dir; }

  /// Whether lookups use the disk.
  bool diskEnabled() const { return config.disk; }

  /// The cap on the directory's artifact bytes.
  uint64_t maxBytes() const { return config.maxBytes; }

private:
  explicit KernelCache(CacheConfig config) : config(std::move(config)) {}

  /// The bytes of \p key if memory holds them (a hit); otherwise claims
  /// \p key for this thread and returns null, after waiting for any thread
  /// that holds the claim.
  std::shared_ptr<const std::string> findOrClaim(llvm::StringRef key);
  /// Releases the claim on \p key, storing \p storage (when set) for all.
  void publish(llvm::StringRef key, std::shared_ptr<const std::string> storage,
               ArtifactOrigin origin);
  std::shared_ptr<const std::string> loadFromDisk(llvm::StringRef name,
                                                  llvm::StringRef fingerprint);
  /// Writes the file; false (after a warning) when that failed.
  bool storeOnDisk(llvm::StringRef name, llvm::StringRef fingerprint,
                   llvm::StringRef bytes);
  /// Prunes the directory down to the cap, when the interval has passed.
  void pruneIfDue();
  void countCorrupt();
  void warn(const llvm::Twine &message);

  CacheConfig config;
  mutable std::mutex mutex;         ///< guards everything below
  std::condition_variable finished; ///< a key left `compiling`
  llvm::StringMap<std::shared_ptr<const std::string>> ready;
  llvm::StringSet<> compiling; ///< keys some thread is producing
  CacheStats counters;
  bool writeFailureReported = false; ///< later failures are only counted
  bool pruneFailureReported = false; ///< likewise for pruning
};

} // namespace fmhajit
