//===- CachePruner.h - Keeping the disk cache under its size cap ----------===//
//
// Without a cap the disk cache only grows: every fmhajit or LLVM upgrade
// changes the fingerprint, and files for old fingerprints are never read
// again. The pruner removes the least recently used artifact files until
// the directory holds at most the cap. "Used" is a file's access time: a
// write sets it, and every disk hit sets it again (markCacheFileUsed), so
// recency does not depend on the mount's atime options (relatime, noatime).
// Scans are rate-limited across processes by the modification time of a
// stamp file in the directory (kPruneStampName).
//
// This is the policy of llvm::pruneCache (llvm/Support/CachePruning.h):
// least recently accessed first, an interval kept by a stamp file. We do
// not call it because in LLVM 22 it ends the process with
// report_fatal_error("Can't get available size") when it cannot read the
// free space of the disk (for example when the directory is removed while
// it scans), and it only considers files named llvmcache-* or Thin-*. A
// cache must never abort the program that uses it.
//
// Safe with concurrent processes, without locks. Only complete artifacts
// (already renamed into place) are candidates; temporary files, which a
// writer may still hold, never are. A reader that opened a file before it
// was removed still reads it whole (POSIX unlink); a reader that comes
// later finds no file and recompiles, as for any miss.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include <chrono>
#include <cstdint>

namespace fmhajit {

/// The cap when FMHAJIT_CACHE_MAX_SIZE is unset: 2 GiB (docs/cache.md says
/// why).
inline constexpr uint64_t kDefaultCacheMaxBytes = uint64_t(2) << 30;

/// The shortest time between two scans of one directory, by any process.
inline constexpr std::chrono::seconds kDefaultPruneInterval{60};

/// Parses a cache size: a number of bytes, or a number followed by K, M, G
/// or T (powers of 1024; case and a trailing "B" or "iB" do not matter), such
/// as "512M" or "2G". Zero, fractions, signs and values past 2^64 are
/// errors that say what to write instead.
llvm::Expected<uint64_t> parseCacheSize(llvm::StringRef text);

/// What one call of pruneCacheDirectory did.
struct PruneResult {
  bool scanned = false;      ///< false: the interval had not passed
  uint64_t removedFiles = 0; ///< artifacts removed by this call
  uint64_t removedBytes = 0;
  uint64_t files = 0; ///< artifacts left (as far as this scan saw)
  uint64_t bytes = 0;
};

/// When more than \p interval has passed since the last scan of \p dir (or
/// always, for an interval of 0), removes the least recently used artifact
/// files of \p dir until they total at most \p maxBytes. Files that are not
/// artifacts (temporary files, other people's files) are never touched. A
/// missing directory holds nothing. Fails only when the directory cannot be
/// listed or a file cannot be removed (a file already gone is fine).
llvm::Expected<PruneResult> pruneCacheDirectory(llvm::StringRef dir,
                                                uint64_t maxBytes,
                                                std::chrono::seconds interval);

/// Records that the open cache file \p fd was just used: sets its access
/// time to now, which is what pruning orders by, and keeps \p modified,
/// its modification time (it still says when the kernel was written).
/// Best effort: a file owned by another user cannot be stamped, and then
/// only its recency is lost.
void markCacheFileUsed(llvm::sys::fs::file_t fd,
                       llvm::sys::TimePoint<> modified);

} // namespace fmhajit
